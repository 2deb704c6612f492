#!/bin/bash
# SPDX-License-Identifier: MIT
# mirror DIR: manifests and archives laid out as NVIDIA's server, verified,
# filtered by release, --cuda and --platform; a second run fetches nothing;
# an interrupted download resumes; a wrong file in DIR is refused, never
# replaced; another machine (another --root) updates and installs from DIR as
# file:// and over HTTP (python3 -m http.server on 127.0.0.1) with no other source.
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"

# The upstream: a release made after the build, for CUDA 12 and 13, and NVIDIA's 9.27.0 manifest.
SRC=$TEST_TMP/upstream
A12=$(mkcudnn 9.30.0.11 12 --manifest "$SRC")
A13=$(mkcudnn 9.30.0.11 13 --manifest "$SRC")
mkdir -p "$SRC/cudnn/linux-x86_64"
cp "$A12" "$A13" "$SRC/cudnn/linux-x86_64/"
N12=$(basename "$A12")
N13=$(basename "$A13")
ID=9.30.0.11-cuda12-linux-x86_64

serve() { # DIR LOG: URL of a python3 -m http.server of DIR (its requests logged in LOG)
	python3 -u -m http.server 0 --bind 127.0.0.1 --directory "$1" >"$2" 2>&1 &
	CVM_BG_PIDS+=("$!")
	wait_for "http.server of $1 started" grep -q "port [0-9]" "$2"
	printf 'http://127.0.0.1:%s/\n' "$(sed -n 's/.* port \([0-9]*\).*/\1/p' "$2" | head -n 1)"
}
UP=$(serve "$SRC" "$TEST_TMP/up.log")
gets() { grep -c "\"GET /$1 " "$TEST_TMP/up.log" || true; }

# 1. the connected machine: update, then mirror 9.30 for CUDA 12 only
cvm --mirror "$UP" update
assert_rc 0 "update from upstream"
M=$TEST_TMP/airgap-mirror
cvm --mirror "$UP" --json mirror "$M" 9.30 --cuda 12.4 --platform linux-x86_64
assert_rc 0 "mirror 9.30 --cuda 12.4"
assert_json 'd["manifests"] == 1 and d["archives"] == [{"relative_path": "cudnn/linux-x86_64/'"$N12"'", "status": "fetched"}]' \
	"JSON: one manifest, the CUDA 12 archive fetched"
cmp -s "$M/redistrib_9.30.0.json" "$SRC/redistrib_9.30.0.json" && ok "the manifest is upstream's, byte for byte" ||
	not_ok "the manifest is upstream's, byte for byte"
cmp -s "$M/cudnn/linux-x86_64/$N12" "$A12" && ok "the archive is at its relative_path" ||
	not_ok "the archive is at its relative_path" "$(find "$M" 2>&1)"
assert_absent "$M/cudnn/linux-x86_64/$N13" "--cuda 12.4 leaves the CUDA 13 archive out"
assert_absent "$M/redistrib_9.27.0.json" "releases not asked for are left out"
[ "$(find "$M" -name '*.part' | wc -l)" = 0 ] && ok "no .part is left" || not_ok "no .part is left"

# 2. a second run fetches nothing
before=$(gets "cudnn/linux-x86_64/$N12")
cvm --mirror "$UP" mirror "$M" 9.30 --cuda 12.4
assert_rc 0 "a second mirror run"
assert_out_contains "$M: 1 manifests, 0 archives downloaded, 1 already there (verified)" "the second run says nothing was downloaded"
[ "$(gets "cudnn/linux-x86_64/$N12")" = "$before" ] && ok "no request for an archive already there" ||
	not_ok "no request for an archive already there" "$(cat "$TEST_TMP/up.log")"

# 3. an interrupted download resumes from its .part
half=$(($(stat -c %s "$A13") / 2))
head -c "$half" "$A13" >"$M/cudnn/linux-x86_64/$N13.part"
cvm --mirror "$UP" mirror "$M" 9.30 --cuda 13.0
assert_rc 0 "mirror --cuda 13.0 with a .part there"
assert_out_contains "resuming the download of $N13 after $half bytes" "the download resumes"
cmp -s "$M/cudnn/linux-x86_64/$N13" "$A13" && ok "the resumed archive is whole" || not_ok "the resumed archive is whole"

# 4. another machine: --mirror file://DIR, nothing else
new_root
cvm --mirror "file://$M" update
assert_rc 0 "the air-gapped machine updates from file://DIR"
assert_out_contains "new: cuDNN 9.30.0 (redistrib_9.30.0.json, 2 builds)" "it learns of 9.30.0"
cvm --mirror "file://$M" install 9.30 --cuda 12.4
assert_rc 0 "it installs 9.30 from file://DIR"
assert_versions "$ID" "installed on the air-gapped machine"
assert_json 'd["archive_sha256"] == "'"$(sha256 "$A12")"'"' "the installed archive is upstream's" \
	"$STORE/versions/$ID/.cudnnvm/record.json"

# 5. and DIR served over HTTP
MURL=$(serve "$M" "$TEST_TMP/m.log")
new_root
cvm --mirror "$MURL" update
assert_rc 0 "update from DIR over HTTP"
cvm --mirror "$MURL" install 9.30 --cuda 13.0
assert_rc 0 "install from DIR over HTTP"
assert_versions "9.30.0.11-cuda13-linux-x86_64" "installed from the HTTP mirror"

# 6. a file in DIR that is not the catalogue's archive: refused, left alone
cp "$A12" "$TEST_TMP/keep12"
flip_byte "$M/cudnn/linux-x86_64/$N12"
sum=$(sha256 "$M/cudnn/linux-x86_64/$N12")
cvm --mirror "$UP" mirror "$M" 9.30 --cuda 12.4
assert_rc 3 "a wrong archive in DIR exits 3"
assert_err_contains "SHA-256" "the message says the hash differs"
assert_out_contains "'$M/cudnn/linux-x86_64/$N12' is left as it is: remove it and run again" "it says what to do"
[ "$(sha256 "$M/cudnn/linux-x86_64/$N12")" = "$sum" ] && ok "the file is not replaced" || not_ok "the file is not replaced"

# 7. usage
cvm mirror
assert_rc 2 "mirror without DIR is a usage error"
cvm mirror "$M" nine
assert_rc 2 "a bad VERSION is a usage error"
assert_err_contains "'nine': expected a version such as 9.27" "the message names the bad version"
cvm mirror "$M" 7.0
assert_rc 1 "a release the catalogue lacks exits 1"
assert_err_line "no cuDNN release in the catalogue matches '7.0'" "the message names the release"

finish
