# fuzz.mk: builds the fuzz targets with clang and libFuzzer, ASan and UBSan,
# into build/fuzz/ (run from the top of the tree; tests/fuzz/run does).
#   make -f tests/fuzz/fuzz.mk [FUZZ_CC=clang]
# Each target is tests/fuzz/fuzz_NAME.c linked with libcommon and, for the
# decoders that live in a tool, that tool's sources (never its main.c).

FUZZ_CC   ?= clang
FB        := build/fuzz
include pkgs.mk
SANS      := -fsanitize=address,undefined -fno-sanitize-recover=undefined
FCFLAGS   := -std=c11 -D_GNU_SOURCE -g -O1 -fno-omit-frame-pointer $(SANS) \
             -fsanitize=fuzzer-no-link -Ilibcommon $(shell pkg-config --cflags $(PKGS))
FLDLIBS   := $(shell pkg-config --libs $(PKGS)) -lpthread -lm

LIB_OBJ   := $(patsubst %.c,$(FB)/obj/%.o,$(wildcard libcommon/*.c))
SYNC_OBJ  := $(patsubst %.c,$(FB)/obj/%.o,$(filter-out bin/rs-sync/main.c,$(wildcard bin/rs-sync/*.c)))
TARGETS   := events intent queue_proto selector kubeconfig jscan pbpod

all: $(TARGETS:%=$(FB)/fuzz_%)

$(FB)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FCFLAGS) -MMD -MP -c -o $@ $<

$(FB)/obj/tests/fuzz/fuzz_events.o: FCFLAGS += -Ibin/rs-sync
$(FB)/obj/tests/fuzz/fuzz_intent.o: FCFLAGS += -Ibin/rs-apply
$(FB)/obj/tests/fuzz/fuzz_queue_proto.o: FCFLAGS += -Ibin/rs-queue
$(FB)/obj/tests/fuzz/fuzz_jscan.o: FCFLAGS += -Ibin/rs-watch
$(FB)/obj/tests/fuzz/fuzz_pbpod.o: FCFLAGS += -Ibin/rs-watch

define link
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(SANS) -fsanitize=fuzzer -o $@ $^ $(FLDLIBS)
endef

$(FB)/fuzz_events: $(FB)/obj/tests/fuzz/fuzz_events.o $(SYNC_OBJ) $(LIB_OBJ)
	$(link)
$(FB)/fuzz_intent: $(FB)/obj/tests/fuzz/fuzz_intent.o $(FB)/obj/bin/rs-apply/intent.o $(LIB_OBJ)
	$(link)
$(FB)/fuzz_queue_proto: $(FB)/obj/tests/fuzz/fuzz_queue_proto.o $(FB)/obj/bin/rs-queue/proto.o $(LIB_OBJ)
	$(link)
$(FB)/fuzz_selector: $(FB)/obj/tests/fuzz/fuzz_selector.o $(LIB_OBJ)
	$(link)
$(FB)/fuzz_kubeconfig: $(FB)/obj/tests/fuzz/fuzz_kubeconfig.o $(LIB_OBJ)
	$(link)
$(FB)/fuzz_jscan: $(FB)/obj/tests/fuzz/fuzz_jscan.o $(FB)/obj/bin/rs-watch/event.o $(FB)/obj/bin/rs-watch/linebuf.o $(FB)/obj/bin/rs-watch/seen.o $(LIB_OBJ)
	$(link)
$(FB)/fuzz_pbpod: $(FB)/obj/tests/fuzz/fuzz_pbpod.o $(FB)/obj/bin/rs-watch/pbpod.o $(FB)/obj/bin/rs-watch/linebuf.o $(LIB_OBJ)
	$(link)

-include $(shell find $(FB)/obj -name '*.d' 2>/dev/null)
