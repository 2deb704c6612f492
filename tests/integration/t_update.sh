#!/bin/bash
# SPDX-License-Identifier: MIT
# update: a release made after the build, from a mirror's folder listing
# (python3 -m http.server on 127.0.0.1, and a file:// folder), kept in
# STORE/catalogue and installed from; install never fetches manifests; a
# changed manifest of a known release, a manifest under another release's
# name, duplicate keys, hostile and huge listings are refused and nothing is
# kept; --dry-run, --json, --offline. Nothing leaves 127.0.0.1.
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"

MIR=$TEST_TMP/mirror
A=$(mkcudnn 9.30.0.11 12 --manifest "$MIR")
N=$(basename "$A")
ID=9.30.0.11-cuda12-linux-x86_64
mkdir -p "$MIR/cudnn/linux-x86_64"
cp "$A" "$MIR/cudnn/linux-x86_64/"
# NVIDIA's own 9.27.0 manifest, as built in: listed, unchanged.
cp "$TESTS_DIR/../manifests/redistrib_9.27.0.json" "$MIR/"
cp "$MIR/redistrib_9.30.0.json" "$TEST_TMP/good-9.30.0.json"

# python3 -m http.server's own listing of the folder; started once, waited for by its first line.
serve() { # DIR LOG: URL of a python3 -m http.server of DIR
	python3 -u -m http.server 0 --bind 127.0.0.1 --directory "$1" >"$2" 2>&1 &
	CVM_BG_PIDS+=("$!")
	wait_for "http.server of $1 started" grep -q "port [0-9]" "$2"
	printf 'http://127.0.0.1:%s/\n' "$(sed -n 's/.* port \([0-9]*\).*/\1/p' "$2" | head -n 1)"
}
URL=$(serve "$MIR" "$TEST_TMP/httpd.log")

# 1. install never fetches manifests: 9.30 is unknown before update
cvm --mirror "$URL" install 9.30 --cuda 12.4
assert_rc 1 "before update, 9.30 is not in the catalogue"
assert_err_contains "no cuDNN release matches '9.30'" "install says the release is unknown"
cvm --mirror "$URL" list --available --cuda 12.4
assert_out_lacks "9.30.0" "list --available does not show it before update"

# 2. --dry-run: says what is new, keeps nothing
cvm --mirror "$URL" update --dry-run
assert_rc 0 "update --dry-run"
assert_out_contains "new: cuDNN 9.30.0 (redistrib_9.30.0.json, 1 builds)" "the dry run says what is new"
assert_out_contains "would add /opt/cudnnvm/catalogue/redistrib_9.30.0.json (cuDNN 9.30.0)" "the dry run says what it would add"
assert_absent "$STORE/catalogue" "the dry run keeps nothing"
assert_empty_or_absent "$STORE/.staging" "the dry run leaves nothing in staging"

# 3. update --json: the release made after the build is kept in STORE/catalogue
cvm --mirror "$URL" --json update
assert_rc 0 "update from the HTTP mirror"
assert_json 'd["mirror"] == "'"$URL"'" and [(r["release"], r["status"], r["builds"]) for r in d["releases"]] == [("9.27.0", "unchanged", 0), ("9.30.0", "new", 1)]' \
	"JSON: 9.27.0 unchanged, 9.30.0 new"
cmp -s "$STORE/catalogue/redistrib_9.30.0.json" "$MIR/redistrib_9.30.0.json" &&
	ok "STORE/catalogue holds the mirror's manifest as it was" ||
	not_ok "STORE/catalogue holds the mirror's manifest as it was" "$(ls -la "$STORE/catalogue" 2>&1)"
assert_absent "$STORE/catalogue/redistrib_9.27.0.json" "an unchanged release is not copied"
assert_empty_or_absent "$STORE/.staging" "nothing is left in staging"
cvm --mirror "$URL" list --available --cuda 12.4
assert_out_contains "9.30.0   9.30.0.11    12" "list --available shows the new release"

# 4. install then fetches its archive from the mirror
cvm --mirror "$URL" install 9.30 --cuda 12.4
assert_rc 0 "install the release update brought"
assert_versions "$ID" "it is installed"
assert_json 'd["manifest"].endswith("/catalogue/redistrib_9.30.0.json")' "the record names the stored manifest" \
	"$STORE/versions/$ID/.cudnnvm/record.json"

# 5. again: nothing new
cvm --mirror "$URL" update
assert_rc 0 "a second update"
assert_out_contains "2 manifests at $URL: the catalogue is up to date" "the second update says it is up to date"

snapshot "$STORE/catalogue" >"$TEST_TMP/cat.before"
# 6. a changed manifest for a known release: refused, exit 3, nothing kept
sed -i "s/$(sha256 "$A")/$(printf '0%.0s' $(seq 64))/" "$MIR/redistrib_9.30.0.json"
cvm --mirror "$URL" update
assert_rc 3 "a manifest that changes a known archive's hash exits 3"
assert_err_line "'${URL}redistrib_9.30.0.json' changes cuDNN 9.30.0: cudnn/linux-x86_64/$N is SHA-256 $(printf '0%.0s' $(seq 64)) there but $(sha256 "$A") in the catalogue ($STORE/catalogue/redistrib_9.30.0.json): refused, nothing was changed" \
	"the message names the manifest, the archive and both hashes"
cp "$TEST_TMP/good-9.30.0.json" "$MIR/redistrib_9.30.0.json"
python3 - "$MIR/redistrib_9.27.0.json" <<'PY'
import json, sys
p = sys.argv[1]
d = json.load(open(p))
d["cudnn"]["linux-x86_64"]["cuda13"]["sha256"] = "ab" * 32
json.dump(d, open(p, "w"), indent=4)
PY
cvm --mirror "$URL" update
assert_rc 3 "a changed manifest of a built-in release exits 3"
assert_err_contains "changes cuDNN 9.27.0: cudnn/linux-x86_64/cudnn-linux-x86_64-9.27.0.42_cuda13-archive.tar.xz is SHA-256 $(printf 'ab%.0s' $(seq 32)) there but dd3245ba3aca8593934fc946d08649ad3a5ee8500e8da3870bc23bf7ddccd7f9 in the catalogue (redistrib_9.27.0.json)" \
	"the built-in manifest is named"
cp "$TESTS_DIR/../manifests/redistrib_9.27.0.json" "$MIR/"

# 7. a manifest under another release's name; duplicate keys
cp "$TEST_TMP/good-9.30.0.json" "$MIR/redistrib_9.31.0.json"
cvm --mirror "$URL" update
assert_rc 1 "a manifest named for another release is refused"
assert_err_line "'${URL}redistrib_9.31.0.json' holds 9.30.0, not release 9.31.0: refused, nothing was changed" \
	"the message says which release it holds"
printf '{"release_label": "9.31.0", "release_label": "9.31.0", "cudnn": {}}\n' >"$MIR/redistrib_9.31.0.json"
cvm --mirror "$URL" update
assert_rc 1 "a manifest with a duplicate key is refused"
assert_err_contains "duplicate" "the message says the key is duplicated"
rm -f "$MIR/redistrib_9.31.0.json"
snapshot "$STORE/catalogue" >"$TEST_TMP/cat.after"
assert_same_snapshot "$TEST_TMP/cat.before" "$TEST_TMP/cat.after" "no refused update changed STORE/catalogue"
assert_empty_or_absent "$STORE/.staging" "no refused update left anything in staging"

# 8. hostile listings: a folder whose index.html names manifests elsewhere, or is huge
HOST=$TEST_TMP/hostile
mkdir -p "$HOST"
HURL=$(serve "$HOST" "$TEST_TMP/httpd-hostile.log")
for bad in "../redistrib_9.31.0.json" "http://evil.example/cudnn/redistrib_9.31.0.json" \
	"/other/redistrib_9.31.0.json" "redistrib_9.31.0.json/../../x"; do
	printf '<html><body><a href="../">../</a>\n<a href="%s">x</a></body></html>\n' "$bad" >"$HOST/index.html"
	cvm --mirror "$HURL" update
	assert_rc 3 "a listing naming '$bad' exits 3"
	assert_err_line "listing of '$HURL': '$bad' is not a manifest of that folder (redistrib_X.Y.Z.json): refused, nothing was changed" \
		"the message names '$bad'"
done
python3 -c 'import sys; sys.stdout.write("<a href=\"x\">x</a>\n" * 120000)' >"$HOST/index.html"
cvm --mirror "$HURL" update
assert_rc 3 "a listing over 1 MiB exits 3"
assert_err_line "'$HURL' is larger than 1048576 bytes: refused" "the message says the listing is too large"
assert_same_snapshot "$TEST_TMP/cat.before" <(snapshot "$STORE/catalogue") "hostile listings changed nothing"
assert_empty_or_absent "$STORE/.staging" "hostile listings left nothing in staging"

# 9. --offline reads nothing from the mirror
cvm --mirror "file://$TEST_TMP/nowhere/" update --offline
assert_rc 0 "update --offline"
assert_out_contains "--offline: the mirror was not read; the catalogue has 48 releases (built in and /opt/cudnnvm/catalogue)" "--offline says the mirror was not read"

# 10. a dry run before there is a store: the manifests are read, nothing is written under the root
new_root
cvm --mirror "$URL" update --dry-run
assert_rc 0 "update --dry-run with no store yet"
assert_out_contains "new: cuDNN 9.30.0 (redistrib_9.30.0.json, 1 builds)" "the dry run with no store says what is new"
assert_empty_or_absent "$ROOT" "nothing is written under the root"

# 11. a file:// folder as the mirror, on another root
new_root
cvm --mirror "file://$MIR" update
assert_rc 0 "update from a file:// folder"
assert_out_contains "new: cuDNN 9.30.0 (redistrib_9.30.0.json, 1 builds)" "the folder's new release is said"
cvm --mirror "file://$MIR" install 9.30 --cuda 12.4
assert_rc 0 "install from the file:// mirror after update"
assert_versions "$ID" "installed on the second root"

finish
