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
cvm install 9.1.1.17 --cuda 12.4 --archive "$DOT" --sha256 "$(sha256 "$DOT")"
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

finish
