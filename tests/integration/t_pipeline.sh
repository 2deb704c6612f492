#!/bin/bash
# SPDX-License-Identifier: MIT
# Pipelined install from the network: the confined child decodes the
# download while it arrives (shown by a server that holds back the end of the
# archive until the test has seen extracted files in staging), and still
# only verified bytes reach versions/: a corrupted byte at the end kills the
# decode and leaves nothing (no version, no staging, nothing cached), a cut
# connection resumes, a server that ignores Range restarts the decode after
# the download, a .part left by an earlier run is decoded from its start,
# and a damaged xz whose hash matches its catalogue entry is refused by the
# follow decoder with nothing left.
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"

MAN=$TEST_TMP/manifests
A8=$(mkcudnn 8.9.7.29 11 --manifest "$MAN")
ID8=$(id_of 8.9.7.29 11)
N8=$(basename "$A8")
MIR=$TEST_TMP/mirror
mkdir -p "$MIR/cudnn/linux-x86_64"
cp "$A8" "$MIR/cudnn/linux-x86_64/"
PORTFILE=$TEST_TMP/port
python3 "$FIXTURES/httpd.py" "$MIR" "$PORTFILE" 600 &
CVM_BG_PIDS+=("$!")
URL=
wait_until test -s "$PORTFILE" || { not_ok "the test mirror starts"; finish; }
URL=http://127.0.0.1:$(cat "$PORTFILE")
mode() { echo "$1" >"$MIR/.mode"; : >"$MIR/.log"; rm -f "$MIR/.go"; }
# shellcheck disable=SC2317  # called through wait_until
staged_files() { find "$STORE/.staging" -type f 2>/dev/null | grep -q .; }

new_root

# 1. the decode runs during the download
mode hold
cvm_bg hold -v --manifests "$MAN" --mirror "$URL" install 8.9.7 --cuda 11.8
if wait_until staged_files; then
	ok "files are extracted into staging while the end of the archive is still held back"
else
	not_ok "files are extracted into staging while the end of the archive is still held back"
fi
check "nothing is in versions/ before the download is complete" test -z "$(versions)"
touch "$MIR/.go"
wait "${CVM_BG_PIDS[-1]}"
bg_result hold
assert_rc 0 "the pipelined install exits 0"
assert_err_contains "decoding the download as it arrives" "-v says the download is decoded as it arrives"
assert_err_contains "xz: following the download as it arrives, 1 thread" \
	"the xz layer is decoded by our own decoder in a thread of its own, not libarchive's"
assert_versions "$ID8" "the version is installed"
cvm verify "$ID8"
assert_rc 0 "and verifies"
assert_file "$STORE/cache/$N8" "the archive is in the cache"
assert_store_clean "no staging is left"

# 2. a corrupted byte at the end: the decode is killed, nothing is left
new_root
cp "$A8" "$MIR/cudnn/linux-x86_64/$N8"
flip_byte "$MIR/cudnn/linux-x86_64/$N8" $(($(stat -c %s "$A8") - 3))
mode hold
cvm_bg bad -v --manifests "$MAN" --mirror "$URL" install 8.9.7 --cuda 11.8
wait_until staged_files && ok "corrupt end: the decode started before the end arrived" ||
	not_ok "corrupt end: the decode started before the end arrived"
touch "$MIR/.go"
wait "${CVM_BG_PIDS[-1]}"
bg_result bad
assert_rc 3 "corrupt end: exit 3"
assert_err_contains "SHA-256 mismatch" "corrupt end: the message says the hash differs"
assert_versions "" "corrupt end: no version"
assert_store_clean "corrupt end: no staging left"
assert_absent "$STORE/cache/$N8" "corrupt end: nothing cached"
assert_absent "$STORE/cache/$N8.part" "corrupt end: no .part kept"
cp "$A8" "$MIR/cudnn/linux-x86_64/$N8"

# 3. a cut connection: resumed with Range, the decode goes on
new_root
mode cut
cvm -v --manifests "$MAN" --mirror "$URL" install 8.9.7 --cuda 11.8
assert_rc 0 "a cut download resumes and installs"
assert_err_contains "decoding the download as it arrives" "cut: the download was decoded as it arrived"
assert_err_contains "xz: following the download" "cut: by the follow decoder"
check "cut: the second request asked for a Range" grep -q "Range\|bytes=" "$MIR/.log"
assert_versions "$ID8" "cut: the version is installed"
cvm verify "$ID8"
assert_rc 0 "cut: and verifies"

# 4. a server that ignores Range: the download starts over, so does the decode
new_root
mkdir -p "$STORE/cache"
head -c $(($(stat -c %s "$A8") / 2)) "$A8" >"$STORE/cache/$N8.part"
mode norange
cvm -v --manifests "$MAN" --mirror "$URL" install 8.9.7 --cuda 11.8
assert_rc 0 "a server that ignores Range: installs"
assert_err_contains "starts over" "norange: -v says the decode started over with the download"
assert_versions "$ID8" "norange: the version is installed"
cvm verify "$ID8"
assert_rc 0 "norange: and verifies"
assert_store_clean "norange: no staging left"

# 5. a .part left by an earlier run: resumed, decoded from its start
new_root
mkdir -p "$STORE/cache"
head -c $(($(stat -c %s "$A8") / 2)) "$A8" >"$STORE/cache/$N8.part"
mode range
cvm -v --manifests "$MAN" --mirror "$URL" install 8.9.7 --cuda 11.8
assert_rc 0 "a resumed .part installs"
assert_output_contains "resuming the download" "resumed: it says the download resumed"
assert_err_contains "decoding the download as it arrives" "resumed: decoded as it arrived"
check "resumed: the request asked for the rest only" grep -q "bytes=$(($(stat -c %s "$A8") / 2))-" "$MIR/.log"
cvm verify "$ID8"
assert_rc 0 "resumed: and verifies"

# matching MANIFEST PLATFORM CUDA FILE OUT: OUT, a copy of MANIFEST whose PLATFORM/cudaCUDA
# entry has FILE's hash and size, as if NVIDIA had shipped FILE so.
matching() {
	mkdir -p "$(dirname "$5")"
	python3 - "$1" "$5" "$2" "cuda$3" "$(sha256 "$4")" "$(stat -c %s "$4")" <<'EOF'
import json, sys
src, out, plat, cuda, sha, size = sys.argv[1:7]
m = json.load(open(src))
m["cudnn"][plat][cuda]["sha256"] = sha
m["cudnn"][plat][cuda]["size"] = size
json.dump(m, open(out, "w"))
EOF
}

# 7. an archive that matches its catalogue entry but whose xz is damaged (as
# if shipped so): the follow decoder itself refuses it, and nothing is left
new_root
MAN2=$TEST_TMP/manifests-damaged
cp "$A8" "$MIR/cudnn/linux-x86_64/$N8"
flip_byte "$MIR/cudnn/linux-x86_64/$N8"
matching "$MAN/redistrib_8.9.7.json" linux-x86_64 11 "$MIR/cudnn/linux-x86_64/$N8" "$MAN2/redistrib_8.9.7.json"
mode range
cvm -v --manifests "$MAN2" --mirror "$URL" install 8.9.7 --cuda 11.8
assert_rc 3 "damaged xz with a matching hash: exit 3"
assert_err_contains "decoding the download as it arrives" "damaged xz: it was decoded as it arrived"
assert_err_contains "corrupt archive" "damaged xz: the message says the archive is corrupt"
assert_err_contains "xz: compressed data is corrupt" "damaged xz: found by our xz decoder"
assert_versions "" "damaged xz: no version"
assert_store_clean "damaged xz: no staging left"

# 8. what follows the xz stream, decoded as it arrives, is judged as in a file
# (t_archive_damage): bytes appended are refused as such; padding in fours
# and a second whole stream are not.
# appended TAIL_CMD WANT_RC NAME: the archive with TAIL_CMD's output appended, from the mirror
appended() {
	local f=$MIR/cudnn/linux-x86_64/$N8
	cp "$A8" "$f"
	eval "$1" >>"$f"
	new_root
	matching "$MAN/redistrib_8.9.7.json" linux-x86_64 11 "$f" "$MAN2/redistrib_8.9.7.json"
	mode range
	cvm -v --manifests "$MAN2" --mirror "$URL" install 8.9.7 --cuda 11.8
	assert_rc "$2" "$3: exit $2"
	assert_err_contains "decoding the download as it arrives" "$3: decoded as it arrived"
}
appended "printf 'trailing garbage'" 3 "an .xz with bytes appended"
assert_err_line "corrupt archive '${STORE#"$ROOT"}/cache/$N8': data after the end of its xz stream (something was appended to the file)" \
	"bytes appended: said as in a file, naming the archive"
assert_versions "" "bytes appended: no version"
assert_store_clean "bytes appended: no staging left"
appended "printf '\\0\\0\\0'" 3 "an .xz with 3 zero bytes appended"
assert_err_contains "data after the end of its xz stream" "3 zeros: not stream padding, said as appended"
appended "printf '\\0\\0\\0\\0'" 0 "an .xz with 4 bytes of stream padding"
assert_versions "$ID8" "stream padding: installed"
appended "cat '$A8'" 0 "two whole .xz streams"
assert_versions "$ID8" "two streams: installed"
appended "head -c 100 '$A8'" 3 "a second stream cut short"
assert_err_contains "not a complete .xz file (truncated or damaged)" "a second stream cut short: said as such"
cp "$A8" "$MIR/cudnn/linux-x86_64/$N8"

# 9. a zip whose local header, which a reader of the download as it arrives
# takes, names another file than its central directory: refused once the zip
# is in, naming the entry, as a zip from a file is (t_archive_damage)
MANW=$TEST_TMP/manifests-win
ZA=$(mkcudnn 9.19.0.56 13.0 --layout windows --manifest "$MANW")
ZN=$(basename "$ZA")
mkdir -p "$MIR/cudnn/windows-x86_64"
ENTRY=$(python3 - "$ZA" "$MIR/cudnn/windows-x86_64/$ZN" <<'PY'
import struct, sys, zipfile
src, out = sys.argv[1:3]
data = bytearray(open(src, "rb").read())
info = next(i for i in zipfile.ZipFile(src).infolist() if i.filename.endswith("/include/cudnn.h"))
off, nlen = info.header_offset, struct.unpack_from("<H", data, info.header_offset + 26)[0]
data[off + 30 + nlen - 3] = ord("x")  # cudnn.h -> cudnx.h, in the local header alone
open(out, "wb").write(bytes(data))
print(info.filename)
PY
)
MANW2=$TEST_TMP/manifests-win2
matching "$MANW/redistrib_9.19.0.json" windows-x86_64 13 "$MIR/cudnn/windows-x86_64/$ZN" "$MANW2/redistrib_9.19.0.json"
new_root
mode range
cvm -v --manifests "$MANW2" --mirror "$URL" install 9.19.0.56 --cuda 13.0 --platform windows-x86_64
assert_rc 3 "a zip whose two directories disagree, from the mirror: exit 3"
assert_err_contains "decoding the download as it arrives" "disagreeing zip: decoded as it arrived"
assert_err_line "corrupt archive '${STORE#"$ROOT"}/cache/$ZN': entry '$ENTRY' is named '${ENTRY%n.h}x.h' in its local header" \
	"disagreeing zip: names the entry and what disagrees"
assert_versions "" "disagreeing zip: nothing installed"
assert_store_clean "disagreeing zip: nothing left in the store's work areas"
cp "$ZA" "$MIR/cudnn/windows-x86_64/$ZN"
matching "$MANW/redistrib_9.19.0.json" windows-x86_64 13 "$ZA" "$MANW2/redistrib_9.19.0.json"
new_root
cvm -v --manifests "$MANW2" --mirror "$URL" install 9.19.0.56 --cuda 13.0 --platform windows-x86_64
assert_rc 0 "the zip it was made from installs from the mirror"
assert_err_contains "decoding the download as it arrives" "the good zip: decoded as it arrived"

# 6. --verify-first keeps today's order: no decode before the download is verified
new_root
mode range
cvm -v --manifests "$MAN" --mirror "$URL" install 8.9.7 --cuda 11.8 --verify-first
assert_rc 0 "--verify-first installs"
assert_output_lacks() { if grep -qF "$1" "$CVM_ERRF" "$CVM_OUTF"; then not_ok "$2"; else ok "$2"; fi; }
assert_output_lacks "decoding the download as it arrives" "--verify-first: no decode during the download"
finish
