#!/bin/sh
# SPDX-License-Identifier: MIT
# Builds a cudnnvm that runs on a GPU machine without libarchive (Ubuntu 24.04
# with glibc >= 2.34): libarchive linked statically, everything else from the
# system. The result is tests/gpu/bin/cudnnvm (not committed).
set -eu
cd "$(dirname "$0")/../.."
O=build-portable
# archive.c calls libarchive directly (no dlopen): the GPU machine has no libarchive.so.
export CFLAGS="-O2 -g -DCVM_LINK_LIBARCHIVE"
make -s O=$O CVM_TEST=0 "$O/libcvm.a" "$O/main.o" >/dev/null
make -s O=$O $(for f in src/cmd_*.c; do b=${f##*/}; echo "$O/${b%.c}.o"; done) >/dev/null
L=$(pkg-config --variable=libdir libarchive)
mkdir -p tests/gpu/bin
# libarchive's readers pull in its zip codecs (bzip2, zstd) and its crypto (nettle): those
# are on the GPU machine. Its table of writers would pull in the xar writer and with it
# libxml2, which that machine may lack: cudnnvm writes pax only, so xar is left out.
printf '%s\n' 'struct archive;' 'int archive_write_set_format_xar(struct archive *a);' \
	'int archive_write_set_format_xar(struct archive *a) { (void)a; return -30; }' >"$O/noxar.c"
cc -c -o "$O/noxar.o" "$O/noxar.c"
cc -pie -Wl,-z,relro,-z,now -o tests/gpu/bin/cudnnvm "$O"/main.o "$O"/cmd_*.o "$O"/noxar.o "$O"/libcvm.a \
	-Wl,-Bstatic -larchive -Wl,-Bdynamic $(pkg-config --libs libcrypto jansson liblzma zlib libcurl) \
	"$L/libbz2.so.1.0" "$L/libzstd.so.1" "$L/libnettle.so.8" -lpthread -ldl -lm
echo tests/gpu/bin/cudnnvm
