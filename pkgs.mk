# pkgs.mk: the libraries every build of libcommon links (pkg-config
# names), one list for the Makefile and tests/fuzz/fuzz.mk.
PKGS = libcurl libnghttp2 openssl libcjson yaml-0.1 lmdb libmicrohttpd
