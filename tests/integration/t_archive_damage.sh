#!/bin/bash
# SPDX-License-Identifier: MIT
# Archives as tools make them, and archives damaged in ways a reader could
# miss: a tar whose names start with "./" (GNU tar -C dir -cf x .) installs
# as the same tar without it; an .xz with bytes after its stream is damaged
# input, said so (exit 3, nothing left); a zip whose central directory and
# local headers disagree, or whose folder entry carries data, is refused as
# damaged (exit 3) naming the entry.
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"

A911=$(mkcudnn 9.1.1.17 12)
ID911=$(id_of 9.1.1.17 12)
NAME911=$(basename "$A911")

# ------------------------------------------------------ a "./"-prefixed tar
mkdir -p "$TEST_TMP/tree" "$TEST_TMP/dot"
tar -xJf "$A911" -C "$TEST_TMP/tree"
DOT=$TEST_TMP/dot/$NAME911
tar -C "$TEST_TMP/tree" -cJf "$DOT" .
check "set-up: the archive's names start with './'" sh -c "tar -tJf '$DOT' | grep -q '^\./cudnn-linux-x86_64-9.1.1.17_cuda12-archive/include/cudnn.h$'"
cvm install 9.1.1 --cuda 12.4 --archive "$DOT" --sha256 "$(sha256 "$DOT")"
assert_rc 0 "a './'-prefixed tar installs"
assert_versions "$ID911" "a './'-prefixed tar: its version is named by its folder"
assert_file "$STORE/versions/$ID911/include/cudnn.h" "a './'-prefixed tar: include/cudnn.h where it belongs"
assert_absent "$STORE/versions/$ID911/cudnn-linux-x86_64-9.1.1.17_cuda12-archive" "a './'-prefixed tar: no folder of the archive's name in the version"
cvm verify 9.1.1.17
assert_rc 0 "a './'-prefixed tar: the version verifies"
cvm uninstall 9.1.1.17
assert_rc 0 "set-up: 9.1.1.17 removed"
# the prefix goes, nothing after it: "./../x" is still '..'
python3 - "$DOT" "$TEST_TMP/dotdot.tar" <<'PY'
import io, sys, tarfile
src, dst = sys.argv[1], sys.argv[2]
with tarfile.open(src) as t, tarfile.open(dst, "w", format=tarfile.PAX_FORMAT) as o:
    for m in t.getmembers():
        o.addfile(m, t.extractfile(m) if m.isreg() else None)
    ti = tarfile.TarInfo("./../escaped")
    ti.size = 1
    o.addfile(ti, io.BytesIO(b"x"))
PY
cvm install 9.1.1.17 --cuda 12.4 --archive "$TEST_TMP/dotdot.tar" --sha256 "$(sha256 "$TEST_TMP/dotdot.tar")"
assert_rc 3 "'./../escaped' after './' names: exit 3"
assert_err_contains "'..' in the name" "'./../escaped': refused for its '..'"
assert_absent "$TEST_TMP/escaped" "'./../escaped': nothing written outside"
assert_versions "" "'./../escaped': nothing installed"

# ------------------------------------------------------ an .xz with data after its stream
GARB=$TEST_TMP/garbage/$NAME911
mkdir -p "$TEST_TMP/garbage"
cp "$A911" "$GARB"
printf 'this is not xz\n' >>"$GARB"
xz_refused() { # NAME FILE WHY
	cvm install 9.1.1.17 --cuda 12.4 --archive "$2" --sha256 "$(sha256 "$2")"
	assert_rc 3 "$1: exit 3 (damaged input)"
	assert_err_line "corrupt archive '$2': $3" "$1: says what is wrong"
	assert_versions "" "$1: nothing installed"
	assert_store_clean "$1: nothing left in the store's work areas"
}
xz_refused "an .xz with 15 bytes after its stream" "$GARB" \
	"data after the end of its xz stream (something was appended to the file)"
# appended zeros that are not stream padding (xz pads to a multiple of 4) are data too
cp "$A911" "$GARB"
printf '\0\0\0' >>"$GARB"
xz_refused "an .xz with 3 zero bytes after its stream" "$GARB" \
	"data after the end of its xz stream (something was appended to the file)"
# a second, whole archive appended is not garbage: xz reads both streams
cp "$A911" "$GARB"
cat "$A911" >>"$GARB"
cvm install 9.1.1.17 --cuda 12.4 --archive "$GARB" --sha256 "$(sha256 "$GARB")"
check "two whole .xz streams: not called data after the stream" test "$(grep -c 'after the end of its xz stream' "$CVM_ERRF")" = 0
cvm uninstall 9.1.1.17 >/dev/null 2>&1
# cut short is still said as such
cp "$A911" "$GARB"
truncate -s -20 "$GARB"
xz_refused "an .xz cut short" "$GARB" "not a complete .xz file (truncated or damaged)"

# ------------------------------------------------------ zips whose two directories disagree
ZBASE=$(mkcudnn 9.19.0.56 13.0 --layout windows)
ZNAME=$(basename "$ZBASE")
mkdir -p "$TEST_TMP/zips"
# zipmod KIND OUT: prints the entry it changed
zipmod() {
	python3 - "$ZBASE" "$1" "$2" <<'PY'
import struct, sys, zipfile
src, kind, out = sys.argv[1:4]
data = bytearray(open(src, "rb").read())
z = zipfile.ZipFile(src)
info = next(i for i in z.infolist() if i.filename.endswith("/include/cudnn.h"))
off = info.header_offset
nlen = struct.unpack_from("<H", data, off + 26)[0]
if kind == "name":
    name = bytearray(data[off + 30:off + 30 + nlen])
    name[-3] = ord("x")  # cudnn.h -> cudnx.h, in the local header alone
    data[off + 30:off + 30 + nlen] = name
elif kind == "size":
    usize = struct.unpack_from("<I", data, off + 22)[0]
    struct.pack_into("<I", data, off + 22, usize + 1)
elif kind == "crc":
    crc = struct.unpack_from("<I", data, off + 14)[0]
    struct.pack_into("<I", data, off + 14, crc ^ 1)
if kind == "folder":
    top = info.filename.split("/")[0]
    with zipfile.ZipFile(src) as zi, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as zo:
        for i in zi.infolist():
            zo.writestr(i, zi.read(i))
        d = zipfile.ZipInfo(top + "/include/extra/")
        d.external_attr = (0o40755 << 16) | 0x10
        zo.writestr(d, b"data a reader would drop")
    print(top + "/include/extra/")
else:
    open(out, "wb").write(bytes(data))
    print(info.filename)
PY
}
zip_refused() { # KIND WHAT NAME
	local z=$TEST_TMP/zips/$1/$ZNAME entry
	mkdir -p "$TEST_TMP/zips/$1"
	entry=$(zipmod "$1" "$z")
	cvm install 9.19.0.56 --cuda 13.0 --platform windows-x86_64 --archive "$z" --sha256 "$(sha256 "$z")"
	assert_rc 3 "$3: exit 3 (damaged)"
	assert_err_line "corrupt archive '$z': entry '$entry' $2" "$3: names the entry and what disagrees"
	assert_error_line "$3: one error line"
	assert_versions "" "$3: nothing installed"
	assert_store_clean "$3: nothing left in the store's work areas"
}
zip_refused name "is named '$(zipmod name /dev/null | sed 's/cudnn\.h$/cudnx.h/')' in its local header" \
	"a zip whose local header names another file than its central directory"
SZ=$(python3 -c 'import sys, zipfile; i = next(i for i in zipfile.ZipFile(sys.argv[1]).infolist() if i.filename.endswith("/include/cudnn.h")); print(i.file_size, i.compress_size)' "$ZBASE")
zip_refused size "has ${SZ% *} bytes (${SZ#* } compressed) in the central directory, $((${SZ% *} + 1)) (${SZ#* }) in its local header" \
	"a zip whose local header gives another size"
zip_refused folder "is a folder that carries 24 bytes of data" "a zip folder entry that carries data"
# the base zip installs (the check refuses only what disagrees)
cvm install 9.19.0.56 --cuda 13.0 --platform windows-x86_64 --archive "$ZBASE" --sha256 "$(sha256 "$ZBASE")"
assert_rc 0 "the zip the damaged ones were made from installs"

finish
