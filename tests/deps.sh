#!/bin/sh
# deps.sh check|install [image|node]: name the Debian packages the build and
# tests need that are missing, or install them with apt-get (as root).
# "image": instead, the ones `make image` and tests/shell/image.sh need
# (make deps-image), which the plain build does without; "node": those and
# the test node's (make deps-node, for make test-node).
set -u
# package:probe (a file, or cmd/NAME for a program on PATH)
base_need="
libcurl4-openssl-dev:/usr/include/x86_64-linux-gnu/curl/curl.h
libnghttp2-dev:/usr/include/nghttp2/nghttp2.h
libssl-dev:/usr/include/openssl/ssl.h
libcjson-dev:/usr/include/cjson/cJSON.h
libyaml-dev:/usr/include/yaml.h
liblmdb-dev:/usr/include/lmdb.h
lmdb-utils:cmd/mdb_dump
libmicrohttpd-dev:/usr/include/microhttpd.h
libcmocka-dev:/usr/include/cmocka.h
pkg-config:cmd/pkg-config
make:cmd/make
gcc:cmd/gcc
s6:cmd/s6-svscan
execline:cmd/execlineb
jq:cmd/jq
shunit2:/usr/bin/shunit2
openssl:cmd/openssl
curl:cmd/curl
gnuplot-nox:cmd/gnuplot
nghttp2-client:cmd/h2load
procps:cmd/ps
dpkg-dev:cmd/dpkg-buildpackage
debhelper:cmd/dh
lintian:cmd/lintian
systemd:cmd/systemd-analyze
systemd-container:cmd/systemd-nspawn
valgrind:cmd/valgrind
clang:cmd/clang
libclang-rt-14-dev:/usr/lib/llvm-14/lib/clang/14.0.6/lib/linux/libclang_rt.fuzzer-x86_64.a
"
# the image: podman with runc (crun refuses this machine's cgroup v1
# layout), mmdebstrap for the base; make deb's packages come from the above
image_need="
podman:cmd/podman
runc:cmd/runc
mmdebstrap:cmd/mmdebstrap
"
# the test node (tests/env/node, make test-node): the container runtime
# kubelet talks to, the OCI runtime it runs, a static libc for the sandbox
# image's pause program; and the image, which the node suites run
node_need="$image_need
containerd:cmd/containerd
libc6-dev:/usr/lib/x86_64-linux-gnu/libc.a
"
case ${2:-} in
"") need=$base_need ;;
image) need=$image_need ;;
node) need=$node_need ;;
*) echo "rs-controller: fatal: usage: deps.sh check|install [image|node]" >&2; exit 100 ;;
esac
missing=
for e in $need; do
  pkg=${e%%:*}; probe=${e#*:}
  case $probe in
    cmd/*) command -v "${probe#cmd/}" >/dev/null 2>&1 || missing="$missing $pkg" ;;
    *) [ -e "$probe" ] || [ -e "$(echo "$probe" | sed 's|/x86_64-linux-gnu||')" ] || missing="$missing $pkg" ;;
  esac
done
[ -z "$missing" ] && exit 0
case ${1:-check} in
  check)
    echo "rs-controller: fatal: missing Debian packages:$missing" >&2
    echo "rs-controller: run 'make deps' as root (or: apt-get install$missing)" >&2
    exit 100 ;;
  install)
    if [ "$(id -u)" -ne 0 ]; then
      if command -v sudo >/dev/null 2>&1; then SUDO=sudo; else
        echo "rs-controller: fatal: unable to install$missing: not root and no sudo" >&2; exit 111; fi
    else SUDO=; fi
    echo "rs-controller: installing$missing" >&2
    $SUDO env DEBIAN_FRONTEND=noninteractive apt-get update -qq &&
    $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $missing >&2 || {
      echo "rs-controller: fatal: unable to install$missing with apt-get" >&2; exit 111; }
    ;;
esac
