# rs-controller build. Every folder under bin/ is one tool; libcommon/ is the
# library they share. Sources are discovered, so adding a file needs no edit.

PREFIX  ?= /usr/local
# make install: rs-svscan, rs-pipeline and the s6 service directories in
# LIBEXECDIR, the systemd units in UNITDIR (their paths made PREFIX's)
LIBEXECDIR ?= $(PREFIX)/libexec/rs-controller
UNITDIR ?= $(PREFIX)/lib/systemd/system
BUILD   ?= build
CC      ?= cc
include pkgs.mk
WARN     = -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Wno-unused-parameter
ifdef CI
WARN    += -Werror
endif
ifdef WERROR
WARN    += -Werror
endif
OPT     ?= -O2 -g
SAN     ?=
PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS   := $(shell pkg-config --libs $(PKGS) 2>/dev/null)
CFLAGS  += -std=c11 -D_GNU_SOURCE $(OPT) $(WARN) $(SAN) -Ilibcommon $(PKG_CFLAGS)
LDLIBS  += $(PKG_LIBS) -lpthread -lm
LDFLAGS += $(SAN) -Wl,--export-dynamic-symbol=_gnutls_global_init_skip

TOOLS    := $(notdir $(patsubst %/,%,$(wildcard bin/*/)))
LIB_SRC  := $(wildcard libcommon/*.c)
LIB_OBJ  := $(LIB_SRC:%.c=$(BUILD)/obj/%.o)
LIB      := $(BUILD)/libcommon.a
BINS     := $(TOOLS:%=$(BUILD)/bin/%)
UNIT_SRC := $(wildcard tests/unit/*.c)
UNITS    := $(UNIT_SRC:tests/unit/%.c=$(BUILD)/unit/%)
TTOOL_SRC:= $(wildcard tests/tools/*.c)
TTOOLS   := $(TTOOL_SRC:tests/tools/%.c=$(BUILD)/test/%)
BENCH_SRC:= $(wildcard bench/*/*.c)
BENCHES  := $(addprefix $(BUILD)/bench/,$(notdir $(BENCH_SRC:.c=)))
MANS     := $(wildcard doc/*.[1-8])

# Objects are kept: make would remove those it made on the way to a tool
# (tests/tools/*.o), after the last line of a test run.
.SECONDARY:

.PHONY: all tools deps deps-image deps-node check-deps image asan asan-unit units test test-unit test-shell test-slow test-node install deb clean demo bench soak fuzz
all: check-deps $(BINS) $(TTOOLS) $(BENCHES)

# The tools alone, for packages: no test programs, no check of the test
# suite's dependencies.
tools: $(BINS)

deps:
	@sh tests/deps.sh install

# The image's tools (podman, runc, mmdebstrap): only make image and
# tests/node/image.sh need them.
deps-image:
	@sh tests/deps.sh install image

# The test node's (containerd, runc, libc6-dev) and the image's: make test-node.
deps-node:
	@sh tests/deps.sh install node

check-deps:
	@sh tests/deps.sh check

$(BUILD)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -MMD -MP -c -o $@ $<

$(LIB): $(LIB_OBJ)
	@mkdir -p $(dir $@)
	$(AR) rcs $@ $^

define tool_rule
$(BUILD)/bin/$(1): $(patsubst %.c,$(BUILD)/obj/%.o,$(wildcard bin/$(1)/*.c)) $(LIB)
	@mkdir -p $$(dir $$@)
	$$(CC) $$(LDFLAGS) -o $$@ $$^ $$(LDLIBS)
endef
$(foreach t,$(TOOLS),$(eval $(call tool_rule,$(t))))

# The benchmarks' helpers (bench/NAME/TOOL.c -> build/bench/TOOL): built
# here, so that a benchmark runs where no compiler or headers are.
define bench_rule
$(BUILD)/bench/$(notdir $(1:.c=)): $(BUILD)/obj/$(1:.c=.o) $(LIB)
	@mkdir -p $$(dir $$@)
	$$(CC) $$(LDFLAGS) -o $$@ $$^ $$(LDLIBS)
endef
$(foreach s,$(BENCH_SRC),$(eval $(call bench_rule,$(s))))

$(BUILD)/unit/%: $(BUILD)/obj/tests/unit/%.o $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS) -lcmocka

$(BUILD)/test/%: $(BUILD)/obj/tests/tools/%.o $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

ASAN_MAKE = $(MAKE) BUILD=build-asan OPT="-O1 -g -fno-omit-frame-pointer" \
	SAN="-fsanitize=address,undefined,float-cast-overflow -fno-sanitize-recover=undefined,float-cast-overflow"
asan:
	$(ASAN_MAKE)

# The unit tests under ASan and UBSan, into build-asan/unit: make test runs
# them after the plain ones (tests/run-all.sh).
asan-unit:
	$(ASAN_MAKE) units

units: $(UNITS)

test: all $(UNITS)
	@sh tests/run-all.sh

test-unit: all $(UNITS)
	@sh tests/run-all.sh unit

test-shell: all
	@sh tests/run-all.sh shell

# The shell suites that take minutes each (# run-all: slow: the faults,
# sharding across instances, the end-to-end suites on 3 sharded
# instances): CI runs them.
test-slow: all
	@sh tests/run-all.sh slow

# The suites that need a real node (tests/node, tests/env/node): root,
# containerd, and the image (make image: 4 s when up to date); not in
# `make test`, one run per machine at a time.
test-node: all image
	@sh tests/run-all.sh node

bench: all
	@sh bench/run

# The units name /usr/local (as service/systemd/ documents a manual
# install): they get PREFIX's paths here, without a /usr/bin twice on PATH.
install: tools
	install -d $(DESTDIR)$(PREFIX)/bin
	install -m 0755 $(BINS) $(DESTDIR)$(PREFIX)/bin/
	for m in $(MANS); do s=$${m##*.}; install -d $(DESTDIR)$(PREFIX)/share/man/man$$s; install -m 0644 $$m $(DESTDIR)$(PREFIX)/share/man/man$$s/; done
	install -d $(DESTDIR)$(LIBEXECDIR) $(DESTDIR)$(UNITDIR)
	install -m 0755 service/rs-svscan service/rs-pipeline $(DESTDIR)$(LIBEXECDIR)/
	rm -rf $(DESTDIR)$(LIBEXECDIR)/s6
	cp -R service/s6 $(DESTDIR)$(LIBEXECDIR)/s6
	for u in service/systemd/*.service service/systemd/*.target; do \
		sed -e 's|/usr/local/libexec/rs-controller|$(LIBEXECDIR)|g' \
		    -e 's|/usr/local/bin|$(PREFIX)/bin|g' \
		    -e 's|:/usr/bin:/usr/bin:|:/usr/bin:|' $$u \
		    >$(DESTDIR)$(UNITDIR)/$${u##*/} && \
		chmod 0644 $(DESTDIR)$(UNITDIR)/$${u##*/} || exit 1; \
	done

# make deb: the Debian package (dpkg-buildpackage, debhelper), built in a
# copy of the tree, then lintian: $(BUILD)/deb/rs-controller_*.deb.
deb:
	@sh deploy/build-deb $(BUILD)/deb

# make image: the container image with podman, no registry (deploy/build-image):
# the package, a Debian base by mmdebstrap (cached), deploy/Containerfile;
# localhost/rs-controller:latest and build/image/rs-controller.tar.
image:
	@sh deploy/build-image

clean:
	rm -rf build build-asan

-include $(shell find $(BUILD)/obj -name '*.d' 2>/dev/null)

# make run: the README's run command. make demo: a ReplicaSet scaled
# 3 -> 10 -> 4 with a live table (demo/demo); it uses the controller that
# ./run started, or starts one itself and stops it at the end.
.PHONY: run
run:
	@./run
demo:
	@bash demo/demo

soak: all
	@sh tests/soak/run

fuzz:
	@sh tests/fuzz/run $(FUZZ_SECONDS)
