#!/bin/sh
# SPDX-License-Identifier: MIT
#
# usage: sh tests/fuzz/seeds.sh OUTDIR
#
# Writes the generated seed corpora of the fuzz targets: OUTDIR/manifest (a
# few of manifests/, as published), OUTDIR/archive (small cuDNN-shaped
# archives in every format and filter archive.c reads, well-formed and
# hostile) and OUTDIR/entry (entry sequences in fuzz_entry.c's binary
# format). Nothing binary is kept in the source tree: it is all made here,
# with tar, xz, gzip, zip (python3's zipfile when zip is missing) and python3.
set -eu

[ $# -eq 1 ] || { echo "usage: sh tests/fuzz/seeds.sh OUTDIR" >&2; exit 2; }
mkdir -p "$1"
out=$(cd "$1" && pwd)
top=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/cvm-seeds.XXXXXX")
trap 'rm -rf "$work"' EXIT
rm -rf "$out/manifest" "$out/archive" "$out/entry"
mkdir -p "$out/manifest" "$out/archive" "$out/entry"

# Manifests: both shapes (nested, flat windows-arm64), old and new, and the
# multi-release spack table.
for m in redistrib_8.9.7.json redistrib_9.1.0.json redistrib_9.27.0.json \
	spack-only-releases.json; do
	if [ -f "$top/manifests/$m" ]; then cat "$top/manifests/$m" >"$out/manifest/$m"; fi
done

# A small cuDNN tree, NVIDIA layout, and the legacy cuda/ one.
mk_tree() { # DIR TOPNAME LIBDIR
	d=$1/$2
	mkdir -p "$d/include" "$d/$3"
	cat >"$d/include/cudnn_version.h" <<'H'
#define CUDNN_MAJOR 9
#define CUDNN_MINOR 1
#define CUDNN_PATCHLEVEL 0
H
	printf 'stub\n' >"$d/$3/libcudnn.so.9.1.0"
	ln -s libcudnn.so.9.1.0 "$d/$3/libcudnn.so.9"
	ln -s ../include/cudnn_version.h "$d/$3/hdr"
	printf 'license\n' >"$d/LICENSE"
}
nv=cudnn-linux-x86_64-9.1.0.70_cuda12-archive
mk_tree "$work/nv" "$nv" lib
mk_tree "$work/legacy" cuda lib64

tar_seed() { # NAME DIR TOP TAROPTS...
	name=$1 dir=$2 t=$3
	shift 3
	(cd "$dir" && tar --owner=0 --group=0 --numeric-owner "$@" -f "$out/archive/$name" "$t")
}
tar_seed nv.tar "$work/nv" "$nv" -c
tar_seed nv-ustar.tar "$work/nv" "$nv" --format=ustar -c
tar_seed nv-pax.tar "$work/nv" "$nv" --format=pax -c
tar_seed nv-gnu.tar "$work/nv" "$nv" --format=gnu -c
XZ_OPT=-0 tar_seed nv.tar.xz "$work/nv" "$nv" -cJ
# xz.c decodes blocks in parallel: files of several blocks, each check type, two streams.
(cd "$work/nv" && tar --owner=0 --group=0 -cf "$work/nv.tar" "$nv")
xz -0 -T1 --block-size=2KiB -c "$work/nv.tar" >"$out/archive/blocks.tar.xz"
xz -0 -T1 --block-size=4KiB --check=sha256 -c "$work/nv.tar" >"$out/archive/sha256.tar.xz"
xz -0 --check=crc32 -c "$work/nv.tar" >"$out/archive/crc32.tar.xz"
xz -0 --check=none -c "$work/nv.tar" >"$out/archive/none.tar.xz"
xz -0 -T2 --block-size=3KiB -c "$work/nv.tar" >"$out/archive/mt.tar.xz"
head -c 5120 "$work/nv.tar" | xz -0 -c >"$work/a.xz"
tail -c +5121 "$work/nv.tar" | xz -0 -c >"$work/b.xz"
cat "$work/a.xz" "$work/b.xz" >"$out/archive/two-streams.tar.xz"
tar_seed nv.tar.gz "$work/nv" "$nv" -cz
tar_seed legacy.tgz "$work/legacy" cuda -cz
if command -v zip >/dev/null 2>&1; then
	(cd "$work/nv" && zip -qry "$out/archive/nv.zip" "$nv")
	(cd "$work/nv" && zip -qry0 "$out/archive/nv-stored.zip" "$nv")
fi

# Hostile entries, one small archive each, and a zip when zip was missing.
python3 - "$out/archive" "$nv" "$work/nv" <<'PY'
import io, os, sys, tarfile, zipfile

out, top, tree = sys.argv[1], sys.argv[2], sys.argv[3]

def entry(name, typ=tarfile.REGTYPE, link="", data=b"x\n", mode=0o644):
    ti = tarfile.TarInfo(name)
    ti.type, ti.linkname, ti.mode = typ, link, mode
    if typ == tarfile.REGTYPE:
        ti.size = len(data)
    return ti, (io.BytesIO(data) if typ == tarfile.REGTYPE else None)

def tar(name, members, fmt=tarfile.GNU_FORMAT, mode="w"):
    with tarfile.open(os.path.join(out, name), mode, format=fmt) as t:
        t.addfile(*entry(top + "/", tarfile.DIRTYPE, mode=0o755))
        for m in members:
            t.addfile(*m)

tar("dotdot.tar", [entry(top + "/../../evil")])
tar("absolute.tar", [entry("/tmp/evil-abs")])
tar("symlink-out.tar", [entry(top + "/lib/x", tarfile.SYMTYPE, "../../../../etc/passwd"),
                        entry(top + "/lib/x")])
tar("symlink-dir.tar", [entry(top + "/lnk", tarfile.SYMTYPE, "lib"), entry(top + "/lnk/evil")])
tar("hardlink.tar", [entry(top + "/lib/hl", tarfile.LNKTYPE, "/etc/passwd")])
tar("device.tar", [entry(top + "/lib/null", tarfile.CHRTYPE), entry(top + "/lib/fifo", tarfile.FIFOTYPE)])
tar("second-top.tar", [entry("other/file")])
tar("ctrl.tar", [entry(top + "/lib/evil\nname"), entry(top + "/include/\x1b[31mred.h")])
tar("setid.tar", [entry(top + "/lib/s", mode=0o4755), entry(top + "/lib/t", mode=0o2640)])
tar("longname-gnu.tar", [entry(top + "/lib/" + "n" * 300), entry(top + "/lib/l", tarfile.SYMTYPE, "a" * 200)])
tar("longname-pax.tar", [entry(top + "/include/" + "p" * 300)], fmt=tarfile.PAX_FORMAT)
tar("reserved.tar", [entry(top + "/.cudnnvm/record.json")], mode="w:gz")
tar("dotdot.tar.xz", [entry(top + "/lib/../../evil")], mode="w:xz")

def zipped(name, items):
    with zipfile.ZipFile(os.path.join(out, name), "w", zipfile.ZIP_DEFLATED) as z:
        for arc, data, attr in items:
            zi = zipfile.ZipInfo(arc)
            zi.create_system = 3
            zi.external_attr = attr << 16
            z.writestr(zi, data)

zipped("zip-hostile.zip", [(top + "/bin/", b"", 0o40755), (top + "/../../evil-zip", b"x", 0o100644),
                           (top + "/bin/x", b"../../../../victim", 0o120777)])
if not os.path.exists(os.path.join(out, "nv.zip")):
    items = []
    for root, dirs, files in os.walk(tree):
        for f in sorted(files):
            p = os.path.join(root, f)
            rel = os.path.relpath(p, tree)
            if os.path.islink(p):
                items.append((rel, os.readlink(p).encode(), 0o120777))
            else:
                items.append((rel, open(p, "rb").read(), 0o100644))
    zipped("nv.zip", items)
PY

# Entry sequences for fuzz_entry: byte 0 picks the rel buffer, then TYPE PATH \0 LINK \0
# with TYPE 0 file, 1 folder, 2 symlink, 3 hard link, 4 other.
ent() { # NAME RELBYTE then TYPE PATH LINK triples
	name=$1
	printf "$2" >"$out/entry/$name"
	shift 2
	while [ $# -ge 3 ]; do
		printf "$(printf '\\%03o' "$1")%s\\000%s\\000" "$2" "$3" >>"$out/entry/$name"
		shift 3
	done
}
ent nvidia '\000' 1 "$nv/" "" 0 "$nv/include/cudnn_version.h" "" \
	2 "$nv/lib/libcudnn.so.9" "libcudnn.so.9.1.0" 2 "$nv/lib/hdr" "../include/cudnn_version.h"
ent normalise '\000' 1 "./$nv//" "" 0 "./$nv/./lib//libcudnn.so.9.1.0" "" \
	2 "$nv/a/b/c" "./../../x"
ent legacy '\000' 1 "cuda/" "" 1 "cuda/lib64/" "" 0 "cuda/lib64/libcudnn.so.8" "" \
	2 "cuda/lib64/libcudnn.so" "libcudnn.so.8"
ent hostile '\000' 1 "$nv/" "" 0 "$nv/../evil" "" 2 "$nv/lib/out" "../../x" \
	2 "$nv/lib/abs" "/etc/passwd" 3 "$nv/lib/hl" "x" 4 "$nv/lib/dev" "" \
	0 "other/file" "" 0 "$nv/.cudnnvm/record.json" "" 2 "$nv/lib/d" "a/../.."
ent short-rel '\210' 1 "$nv/" "" 0 "$nv/include/cudnn_version.h" "" 0 "$nv/lib/x" ""

# ELF: small shared libraries like cuDNN's sub-libraries (a soname, a version
# check, a cudnn_version_ string, a .nv_fatbin section), built with the C compiler.
rm -rf "$out/elf"
mkdir -p "$out/elf"
cat >"$work/elf.c" <<'C'
#include <stddef.h>
int cudnnCnnVersionCheck(size_t v) { return v == 91900u ? 0 : 3001; }
const char tag[] = "cudnn_version_9_19_0_56_";
struct __attribute__((packed)) e { unsigned short kind, ver; unsigned ehs;
	unsigned long long size; unsigned a, b; unsigned short mi, ma; unsigned arch;
	unsigned char pad[32]; unsigned char payload[8]; };
struct __attribute__((packed)) fb { unsigned magic; unsigned short ver, hs;
	unsigned long long fs; struct e v[3]; };
__attribute__((section(".nv_fatbin"), used)) const struct fb fatbin = { 0xBA55ED50u, 1, 16,
	3 * sizeof(struct e), { { 2, 0x101, 64, 8, 0, 0, 0, 1, 80, {0}, {0} },
	{ 2, 0x101, 64, 8, 0, 0, 0, 1, 90, {0}, {0} }, { 1, 0x101, 64, 8, 0, 0, 9, 1, 90, {0}, {0} } } };
C
if ${CC:-cc} -O1 -shared -fPIC -Wl,-soname,libcudnn_cnn.so.9 -Wl,--strip-debug -o "$out/elf/cnn.so" "$work/elf.c" 2>/dev/null; then
	printf 'int f(void) { return 1; }\n' >"$work/plain.c"
	${CC:-cc} -O1 -shared -fPIC -Wl,-soname,libplain.so.1 -o "$out/elf/plain.so" "$work/plain.c"
else
	printf '\177ELF\002\001\001' >"$out/elf/header"
fi

# PE (fuzz_pe): DLLs built with mingw-w64 when it is here (an import,
# LoadLibrary names in ASCII and UTF-16), and always a PE32+ image made byte
# by byte (the one tests/unit/test_peinfo.c makes), which also has the
# delay-load table GNU ld leaves empty.
rm -rf "$out/pe"
mkdir -p "$out/pe"
wcc=${WIN_CC:-x86_64-w64-mingw32-gcc}
if command -v "$wcc" >/dev/null 2>&1; then
	printf '__declspec(dllexport) int dep_fn(void) { return 1; }\n' >"$work/dep.c"
	cat >"$work/top.c" <<'C'
#include <windows.h>
__declspec(dllimport) int dep_fn(void);
__declspec(dllexport) int top_fn(void)
{
	return dep_fn() + !!LoadLibraryA("zlibwapi.dll") + !!LoadLibraryW(L"nvrtc64_120_0.dll") +
	       !!LoadLibraryA("cublasLt64_12.dll");
}
C
	(cd "$work" && "$wcc" -shared -O1 -s -o dep.dll dep.c -Wl,--out-implib,libdep.a &&
		"$wcc" -shared -O1 -s -o "$out/pe/top.dll" top.c -L. -ldep) >/dev/null 2>&1 || :
	cp "$work/dep.dll" "$out/pe/dep.dll" 2>/dev/null || :
fi
python3 - "$out/pe/made.dll" <<'PY'
import struct, sys
b = bytearray(0x400)
b[0:2] = b"MZ"; struct.pack_into("<I", b, 0x3c, 0x40)
b[0x40:0x44] = b"PE\0\0"; struct.pack_into("<HHIIIHH", b, 0x44, 0x8664, 1, 0, 0, 0, 0xf0, 0x2022)
o = 0x58
struct.pack_into("<H", b, o, 0x20b); struct.pack_into("<Q", b, o + 24, 0x180000000)
struct.pack_into("<I", b, o + 60, 0x200); struct.pack_into("<I", b, o + 108, 16)
struct.pack_into("<II", b, o + 120, 0x1000, 60); struct.pack_into("<II", b, o + 216, 0x1080, 64)
s = 0x148
b[s:s + 6] = b".rdata"; struct.pack_into("<IIII", b, s + 8, 0x200, 0x1000, 0x200, 0x200)
at = lambda rva: 0x200 + rva - 0x1000
struct.pack_into("<I", b, at(0x1000) + 12, 0x1100); struct.pack_into("<I", b, at(0x1014) + 12, 0x1110)
struct.pack_into("<II", b, at(0x1080), 1, 0x1120)
for rva, name in ((0x1100, b"KERNEL32.dll"), (0x1110, b"cudart64_12.dll"), (0x1120, b"cublasLt64_12.dll"),
                  (0x1141, b"zlibwapi.dll")):
    b[at(rva):at(rva) + len(name)] = name
w = "nvrtc64_120_0.dll".encode("utf-16-le")
b[at(0x1160):at(0x1160) + len(w)] = w
open(sys.argv[1], "wb").write(b)
PY
