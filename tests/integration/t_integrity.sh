#!/bin/bash
# SPDX-License-Identifier: MIT
# Archives that fail their checks (flipped byte, truncated, size or SHA-256
# different from the manifest's, undecodable with a matching hash): exit 3,
# stderr names the archive, and the root is exactly as it was.
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"

MAN=$TEST_TMP/manifests
A8=$(mkcudnn 8.9.7.29 11 --manifest "$MAN")
ID8=$(id_of 8.9.7.29 11)
A19=$(mkcudnn 9.19.0.56 13)
ID19=$(id_of 9.19.0.56 13)

# A store that already holds one version (9.19.0), and an unrelated file in
# the root, so that "unchanged" covers both.
mkdir -p "$ROOT/etc" "$ROOT/usr/local"
echo "keep me" >"$ROOT/etc/marker"
cvm install 9.19.0 --cuda 13.0 --archive "$A19" --sha256 "$(sha256 "$A19")"
assert_rc 0 "set-up: 9.19.0 installed with --sha256"
assert_dir "$STORE/versions/$ID19" "set-up: versions/$ID19 exists"

# refused NAME ARCHIVE CVM-ARGS...: the install exits 3 and changes nothing.
refused() {
	local name=$1 archive=$2
	shift 2
	snapshot "$ROOT" >"$TEST_TMP/before.snap"
	cvm "$@"
	assert_rc 3 "$name: exit 3"
	assert_err_contains "$(basename "$archive")" "$name: stderr names the archive"
	assert_error_line "$name: one 'cudnnvm: error:' line"
	assert_absent "$STORE/versions/$ID8" "$name: no versions/$ID8"
	assert_store_clean "$name: .staging and .trash empty"
	snapshot "$ROOT" >"$TEST_TMP/after.snap"
	assert_same_snapshot "$TEST_TMP/before.snap" "$TEST_TMP/after.snap" "$name: the root is unchanged"
}

# --- against the manifest (size and sha256 from redistrib_8.9.7.json)
F=$(copy_archive "$A8" flipped)
flip_byte "$F"
refused "flipped byte (manifest)" "$F" --manifests "$MAN" install 8.9.7 --cuda 11.8 --archive "$F"
assert_err_matches 'sha-?256|checksum|hash|integrity' "flipped byte: the message says the hash differs"

F=$(copy_archive "$A8" flipped-first)
flip_byte "$F" 0
refused "flipped first byte (manifest)" "$F" --manifests "$MAN" install 8.9.7 --cuda 11.8 --archive "$F"

F=$(copy_archive "$A8" truncated)
truncate_half "$F"
refused "truncated (manifest)" "$F" --manifests "$MAN" install 8.9.7 --cuda 11.8 --archive "$F"

F=$(copy_archive "$A8" longer)
printf 'x' >>"$F"
refused "one byte longer (manifest)" "$F" --manifests "$MAN" install 8.9.7 --cuda 11.8 --archive "$F"
assert_err_matches "size|bytes" "one byte longer: the message says the size differs"

# a manifest whose size is wrong but whose sha256 is right: the size check alone
MANS=$TEST_TMP/manifests-size
mkdir -p "$MANS"
python3 - "$MAN/redistrib_8.9.7.json" "$MANS/redistrib_8.9.7.json" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
e = d["cudnn"]["linux-x86_64"]["cuda11"]
e["size"] = str(int(e["size"]) + 1)
json.dump(d, open(sys.argv[2], "w"), indent=4)
EOF
refused "size differs from the manifest's" "$A8" --manifests "$MANS" install 8.9.7 --cuda 11.8 --archive "$A8"
assert_err_matches "size|bytes" "manifest size differs: the message says the size differs"

# a manifest whose sha256 is wrong (the archive is intact)
MANH=$TEST_TMP/manifests-hash
mkdir -p "$MANH"
python3 - "$MAN/redistrib_8.9.7.json" "$MANH/redistrib_8.9.7.json" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
d["cudnn"]["linux-x86_64"]["cuda11"]["sha256"] = "ab" * 32
json.dump(d, open(sys.argv[2], "w"), indent=4)
EOF
refused "sha256 differs from the manifest's" "$A8" --manifests "$MANH" install 8.9.7 --cuda 11.8 --archive "$A8"

# the real 8.9.7 manifest (built-in): our small archive has neither its size nor its hash
refused "built-in manifest, fake archive" "$A8" install 8.9.7 --cuda 11.8 --archive "$A8"

# --- against --sha256, where the archive cannot be decoded although the hash matches
A9=$(mkcudnn 9.18.0.77 13)
ID9=$(id_of 9.18.0.77 13)
ID8=$ID9 # what `refused` checks is absent
F=$(copy_archive "$A9" sha-flipped)
refused "wrong --sha256" "$F" install 9.18.0 --cuda 13.0 --archive "$F" --sha256 "$(sha256 "$A9" | tr 0-9a-f 1-9a-f0)"
flip_byte "$F"
refused "flipped byte, --sha256 of the original" "$F" install 9.18.0 --cuda 13.0 --archive "$F" --sha256 "$(sha256 "$A9")"
refused "flipped byte, --sha256 of the damaged file (xz check fails)" "$F" install 9.18.0 --cuda 13.0 --archive "$F" --sha256 "$(sha256 "$F")"
F=$(copy_archive "$A9" sha-truncated)
truncate_half "$F"
refused "truncated, --sha256 of the truncated file" "$F" install 9.18.0 --cuda 13.0 --archive "$F" --sha256 "$(sha256 "$F")"
F=$(copy_archive "$A9" sha-garbage)
head -c 4096 /dev/urandom >"$F"
refused "random bytes named .tar.xz, matching --sha256" "$F" install 9.18.0 --cuda 13.0 --archive "$F" --sha256 "$(sha256 "$F")"
F=$(copy_archive "$A9" sha-empty)
: >"$F"
refused "empty file, matching --sha256" "$F" install 9.18.0 --cuda 13.0 --archive "$F" --sha256 "$(sha256 "$F")"

# the store still holds what it held, and it verifies
assert_versions "$ID19" "after all refusals versions/ holds only $ID19"
cvm verify
assert_rc 0 "after all refusals verify passes"

# and the intact archive still installs
cvm install 9.18.0 --cuda 13.0 --archive "$A9" --sha256 "$(sha256 "$A9")"
assert_rc 0 "the intact archive installs afterwards"
assert_sha256sum_c "$STORE/versions/$ID9" "the intact archive's files verify"

finish
