#!/bin/bash
# SPDX-License-Identifier: MIT
# Downloads: install by version alone from a mirror on 127.0.0.1 (and a
# file:// one), the cache, resumption of an interrupted download, a server
# that ignores Range, retries after 5xx, the low-speed timeout, corruption on
# the server, 404, --offline, fetch, cache list/clean. Nothing leaves 127.0.0.1.
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"

MAN=$TEST_TMP/manifests
A8=$(mkcudnn 8.9.7.29 11 --manifest "$MAN")
A6=$(mkcudnn 8.9.6.50 11 --manifest "$MAN")
ID8=$(id_of 8.9.7.29 11)
ID6=$(id_of 8.9.6.50 11)
N8=$(basename "$A8")
N6=$(basename "$A6")

# The mirror tree: MIRROR/cudnn/linux-x86_64/<archive>, as NVIDIA's redist folder.
MIR=$TEST_TMP/mirror
mkdir -p "$MIR/cudnn/linux-x86_64"
cp "$A8" "$A6" "$MIR/cudnn/linux-x86_64/"
echo range >"$MIR/.mode"

PORTFILE=$TEST_TMP/port
python3 "$FIXTURES/httpd.py" "$MIR" "$PORTFILE" 240 &
HTTPD=$!
CVM_BG_PIDS+=("$HTTPD")
wait_for "the test's http server started" test -s "$PORTFILE"
URL=http://127.0.0.1:$(cat "$PORTFILE")
mode() { echo "$1" >"$MIR/.mode"; : >"$MIR/.log"; }
requests() { grep -c "$1" "$MIR/.log" 2>/dev/null || true; }
CACHE=$STORE/cache

# 1. by version alone, from the HTTP mirror
mode range
cvm --manifests "$MAN" --mirror "$URL" install 8.9.7 --cuda 11.8
assert_rc 0 "install by version alone downloads from the mirror"
assert_versions "$ID8" "the downloaded version is installed"
assert_file "$CACHE/$N8" "the archive is kept in the cache"
assert_absent "$CACHE/$N8.part" "no .part is left"
[ "$(requests "GET /cudnn/linux-x86_64/$N8")" = 1 ] && ok "one request for the archive" ||
	not_ok "one request for the archive" "$(cat "$MIR/.log")"
cvm verify "$ID8"
assert_rc 0 "the downloaded version verifies"

# 2. again from the cache, with the server away
cvm uninstall 8.9.7 --cuda 11.8
mode range
cvm --manifests "$MAN" --mirror "http://127.0.0.1:9/" install 8.9.7 --cuda 11.8
assert_rc 0 "a second install comes from the cache with no server"
assert_versions "$ID8" "installed from the cache"

# 3. a corrupted file on the server: exit 3, nothing installed, nothing cached
new_root
CACHE=$STORE/cache
cp "$A6" "$TEST_TMP/good6"
flip_byte "$MIR/cudnn/linux-x86_64/$N6"
cvm --manifests "$MAN" --mirror "$URL" install 8.9.6 --cuda 11.8
assert_rc 3 "a corrupted download exits 3"
assert_err_contains "SHA-256" "the message says the hash differs"
assert_versions "" "nothing installed after a corrupted download"
assert_absent "$CACHE/$N6" "the bad archive is not cached"
assert_absent "$CACHE/$N6.part" "the bad download is removed"
cp "$TEST_TMP/good6" "$MIR/cudnn/linux-x86_64/$N6"

# 4. 404 names the URL
mv "$MIR/cudnn/linux-x86_64/$N6" "$TEST_TMP/away6"
cvm --manifests "$MAN" --mirror "$URL" install 8.9.6 --cuda 11.8
assert_rc 1 "404 exits 1"
assert_err_contains "$URL/cudnn/linux-x86_64/$N6" "the message names the URL"
assert_err_contains "HTTP 404" "the message says 404"
assert_absent "$CACHE/$N6.part" "nothing is left in the cache after a 404"
mv "$TEST_TMP/away6" "$MIR/cudnn/linux-x86_64/$N6"

# 5. cut half-way, no retries: the next run resumes from the .part
mode cut
cvm --manifests "$MAN" --mirror "$URL" install 8.9.6 --cuda 11.8 --retries 0
assert_rc 1 "a connection closed half-way fails (no retries)"
assert_file "$CACHE/$N6.part" "the partial download is kept"
half=$(stat -c %s "$CACHE/$N6.part" 2>/dev/null || echo 0)
[ "$half" -gt 0 ] && [ "$half" -lt "$(stat -c %s "$A6")" ] && ok "the .part holds part of the file" ||
	not_ok "the .part holds part of the file" "size $half"
mode range
cvm --manifests "$MAN" --mirror "$URL" install 8.9.6 --cuda 11.8
assert_rc 0 "the next run resumes and installs"
grep -q "bytes=$half-" "$MIR/.log" && ok "it asked for the rest with Range: bytes=$half-" ||
	not_ok "it asked for the rest with a Range request" "$(cat "$MIR/.log")"
assert_versions "$ID6" "the resumed download installed"
cvm verify "$ID6"
assert_rc 0 "the resumed download verifies"

# 6. a server that ignores Range: the .part is started over
new_root
CACHE=$STORE/cache
mode cut
cvm --manifests "$MAN" --mirror "$URL" fetch 8.9.6 --cuda 11.8 --retries 0
assert_file "$CACHE/$N6.part" "set-up: a partial download"
mode norange
cvm --manifests "$MAN" --mirror "$URL" fetch 8.9.6 --cuda 11.8
assert_rc 0 "a server that ignores Range still gives a verified file"
cmp -s "$CACHE/$N6" "$A6" && ok "the file is whole, not the old part plus the whole" ||
	not_ok "the file is whole"
assert_absent "$CACHE/$N6.part" "no .part left"

# 7. 5xx twice, then fine: retried
new_root
CACHE=$STORE/cache
mode flaky
cvm --manifests "$MAN" --mirror "$URL" fetch 8.9.7 --cuda 11.8
assert_rc 0 "503 twice, then the file: retried with backoff"
[ "$(requests GET)" -ge 3 ] && ok "three requests or more" || not_ok "three requests" "$(cat "$MIR/.log")"
assert_err_contains "retrying" "the retries are said"

# 8. a slow server hits the low-speed timeout
new_root
CACHE=$STORE/cache
mode slow
# The server would trickle for minutes: exit 1 (not cvm's own cap, 124) is the low-speed limit.
cvm --manifests "$MAN" --mirror "$URL" fetch 8.9.7 --cuda 11.8 --low-speed-time 2 --retries 0
assert_rc 1 "a server below the low-speed limit fails (the limit ended it)"
assert_err_contains "$URL" "the message names the URL"
mode range

# 9. a file:// mirror, and a mirror from /etc/cudnnvm.conf
new_root
CACHE=$STORE/cache
cvm --manifests "$MAN" --mirror "file://$MIR" install 8.9.7 --cuda 11.8
assert_rc 0 "a file:// mirror works"
assert_versions "$ID8" "installed from the file:// mirror"
new_root
mkdir -p "$ROOT/etc"
printf '# the cluster mirror\nmirror = %s\n' "$URL" >"$ROOT/etc/cudnnvm.conf"
mode range
CUDNNVM_MIRROR= cvm --manifests "$MAN" install 8.9.7 --cuda 11.8
assert_rc 0 "the mirror of /etc/cudnnvm.conf is used"
[ "$(requests "GET /cudnn")" -ge 1 ] && ok "it asked the configured mirror" || not_ok "it asked the configured mirror"

# 10. --offline
new_root
CACHE=$STORE/cache
cvm --manifests "$MAN" --mirror "$URL" install 8.9.7 --cuda 11.8 --offline
assert_rc 1 "--offline with an empty cache fails"
assert_err_contains "--offline" "the message says why"
assert_err_contains "cudnnvm fetch" "and what to do"
assert_versions "" "nothing installed offline"
mode range
cvm --manifests "$MAN" --mirror "$URL" fetch 8.9.7 --cuda 11.8
assert_rc 0 "fetch prepares the cache"
assert_versions "" "fetch installs nothing"
: >"$MIR/.log"
cvm --manifests "$MAN" --mirror "$URL" install 8.9.7 --cuda 11.8 --offline
assert_rc 0 "then --offline installs from the cache"
[ "$(requests GET)" = 0 ] && ok "--offline made no request" || not_ok "--offline made no request"

# 11. a bad cached archive is removed and downloaded again, never installed
new_root
CACHE=$STORE/cache
cvm --manifests "$MAN" --mirror "$URL" fetch 8.9.7 --cuda 11.8
flip_byte "$CACHE/$N8"
cvm --manifests "$MAN" --mirror "$URL" install 8.9.7 --cuda 11.8 --offline
assert_rc 3 "a corrupted cache file is refused offline"
assert_absent "$CACHE/$N8" "and removed"
assert_versions "" "and not installed"
cvm --manifests "$MAN" --mirror "$URL" fetch 8.9.7 --cuda 11.8
flip_byte "$CACHE/$N8"
cvm --manifests "$MAN" --mirror "$URL" install 8.9.7 --cuda 11.8
assert_rc 0 "online, a corrupted cache file is downloaded again"
cmp -s "$CACHE/$N8" "$A8" && ok "the cache holds the good file again" || not_ok "the cache holds the good file again"

# 12. killed while downloading (crash point): the next run resumes from the .part
new_root
CACHE=$STORE/cache
mode range
CUDNNVM_FAULT=fetch-receiving cvm --manifests "$MAN" --mirror "$URL" install 8.9.7 --cuda 11.8
assert_rc 137 "killed in the middle of a download"
assert_file "$CACHE/$N8.part" "the .part survives the kill"
assert_versions "" "nothing installed by the killed run"
cvm --manifests "$MAN" --mirror "$URL" install 8.9.7 --cuda 11.8
assert_rc 0 "the next run finishes the download and installs"
assert_store_clean "and leaves no staging or trash"
cvm verify "$ID8"
assert_rc 0 "what it installed verifies"

# 13. cache list and clean
cvm --manifests "$MAN" --mirror "$URL" fetch 8.9.6 --cuda 11.8
cvm cache list
assert_rc 0 "cache list"
assert_out_contains "$N8" "cache list names the archives"
cvm cache clean
assert_rc 0 "cache clean"
assert_absent "$CACHE/$N8" "clean removes the archive of an installed version"
assert_file "$CACHE/$N6" "and keeps one not installed"
cvm cache clean --all
assert_absent "$CACHE/$N6" "clean --all removes every archive"

# 14. a host name that does not resolve (.invalid never does, RFC 6761): said as
# such, once, not retried as "interrupted after 0 bytes"
new_root
cvm --manifests "$MAN" --mirror "http://cudnnvm-test.invalid/" fetch 8.9.7 --cuda 11.8 --retries 3
assert_rc 1 "a mirror whose host does not resolve: exit 1"
assert_err_contains "the host name does not resolve" "it says the host name does not resolve"
assert_err_contains "cudnnvm-test.invalid" "it names the host"
check "no retry and no 'interrupted ... after 0 bytes'" \
	eval '! grep -q -i -e "retrying" -e "interrupted" -e "after 0 bytes" "$CVM_ERRF"'
assert_empty_or_absent "$STORE/cache" "nothing left in the cache"

finish
