#!/bin/bash
# SPDX-License-Identifier: MIT
# Messages that say what is true, and the same conventions in every command:
# an archive of another release than VERSION resolved to is named as such;
# an installed id with a different or missing --archive is not "already
# installed"; numbers are parsed strictly (exit 2 naming the option); exec of
# a missing command exits 127; a host that does not resolve is said and not
# retried; the smoke test names real paths; uninstall --force puts back the
# most recently active other version, saying so first; install --use; -q
# keeps results and drops chatter; --json prints one document; rollback's
# JSON has use's keys.
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"
# shellcheck source-path=SCRIPTDIR source=lib_activate.sh
. "$TESTS_DIR/integration/lib_activate.sh"

act_root
A911=$(archive 9.1.1.17 12)
A910=$(archive 9.1.0.70 12)

# ------------------------------------- an archive of another release than VERSION means
cvm cache clean
must "cache clean (makes the store)"
snapshot "$ROOT" >"$TEST_TMP/before.snap"
cvm --manifests "$MAN" install 9.1 --cuda 12.4 --archive "$A910"
assert_rc 3 "install 9.1 --archive <the 9.1.0.70 archive>: exit 3"
assert_err_contains "resolved to cuDNN 9.1.1.17" "the mismatch says which release 9.1 resolved to"
assert_err_contains "named for cuDNN 9.1.0.70" "the mismatch says which release the archive is"
assert_err_contains "cudnnvm install 9.1.0.70 --archive" "the mismatch says how to install that archive"
snapshot "$ROOT" >"$TEST_TMP/after.snap"
assert_same_snapshot "$TEST_TMP/before.snap" "$TEST_TMP/after.snap" "the refused install changed nothing"
cvm --manifests "$MAN" install 9.1.0.70 --cuda 12.4 --archive "$A910"
assert_rc 0 "install 9.1.0.70 --archive <that archive> (as the message says): exit 0"

# ------------------------------------ an installed id and an --archive that is not its own
cvm --manifests "$MAN" install 9.1.1.17 --cuda 12.4 --archive "$A911"
assert_rc 0 "install 9.1.1.17: exit 0"
cvm --manifests "$MAN" install 9.1.1.17 --cuda 12.4 --archive "$A911"
assert_rc 0 "install of an installed id with its own archive: exit 0"
assert_out_contains "already installed" "its own archive: 'already installed'"
BAD=$(copy_archive "$A911" bad)
flip_byte "$BAD"
cvm --manifests "$MAN" install 9.1.1.17 --cuda 12.4 --archive "$BAD"
assert_rc 3 "installed id, a damaged --archive: exit 3, not 'already installed'"
assert_versions "$ID910 $ID911" "installed id, a damaged --archive: the versions are as they were"
assert_err_contains "SHA-256 mismatch" "installed id, a damaged --archive: the mismatch is said"
assert_out_lacks "already installed" "installed id, a damaged --archive: not 'already installed'"
# an --archive of another size than the catalogue's: said by its size, before it is read
BIG=$(copy_archive "$A911" big)
truncate -s 20G "$BIG"
touch -a -d '2001-01-01 00:00:00' "$BIG"
cvm --manifests "$MAN" install 9.1.1.17 --cuda 12.4 --archive "$BIG"
assert_rc 3 "installed id, an --archive grown to 20 GB: exit 3"
assert_err_contains "cudnnvm: error: '$BIG' has 21474836480 bytes, but " "installed id, an --archive of another size: both sizes said"
assert_error_line "installed id, an --archive of another size: one error line"
check "installed id, an --archive of another size: never read (its access time is unchanged)" \
	test "$(stat -c %X "$BIG")" = "$(date -d '2001-01-01 00:00:00' +%s)"
rm -f "$BIG"
cvm --manifests "$MAN" install 9.1.1.17 --cuda 12.4 --archive "$TEST_TMP/no-such.tar.xz"
assert_rc 1 "installed id, a missing --archive: exit 1"
assert_err_contains "no-such.tar.xz" "installed id, a missing --archive: the file is named"
# installed from another archive than this one (as a record from an older manifest would say)
REC=$STORE/versions/$ID911/.cudnnvm/record.json
cp "$REC" "$TEST_TMP/record.json"
sed -i -e "s/$(sha256 "$A911")/$(printf '%064d' 0)/" "$REC"
snapshot "$ROOT" >"$TEST_TMP/before.snap"
cvm --manifests "$MAN" install 9.1.1.17 --cuda 12.4 --archive "$A911"
assert_rc 3 "installed from another archive: exit 3"
assert_err_contains "from another archive" "installed from another archive: said"
assert_err_contains "--force" "installed from another archive: --force is named"
snapshot "$ROOT" >"$TEST_TMP/after.snap"
assert_same_snapshot "$TEST_TMP/before.snap" "$TEST_TMP/after.snap" "the refusals changed nothing"
cvm --manifests "$MAN" install 9.1.1.17 --cuda 12.4 --archive "$A911" --force
assert_rc 0 "installed from another archive, --force: exit 0"
assert_json 'd["archive_sha256"] == "'"$(sha256 "$A911")"'"' "--force: the record names the archive now" "$REC"

# ------------------------------------------------------------- numbers, strictly
for a in "install 9.1 --cuda 12.4 --retries abc:--retries" "install 9.1 --cuda 12.4 --retries 3x:--retries" \
	"install 9.1 --cuda 12.4 --jobs -1:--jobs" "install 9.1 --cuda 12.4 --jobs 0:--jobs" \
	"install 9.1 --cuda 12.4 --connect-timeout 10s:--connect-timeout" \
	"install 9.1 --cuda 12.4 --low-speed-time ' 5':--low-speed-time" \
	"fetch 9.1 --cuda 12.4 --retries -2:--retries" "fetch 9.1 --cuda 12.4 --connect-timeout 0x10:--connect-timeout" \
	"smoke --cuda 12.4 --device 1x:--device" "--lock-timeout 5x list:--lock-timeout" \
	"--lock-timeout -1 list:--lock-timeout" "--lock-timeout inf list:--lock-timeout" \
	"--lock-timeout 0x10 list:--lock-timeout" "--lock-timeout 1e3 list:--lock-timeout"; do
	args=${a%:*}
	eval "set -- $args"
	cvm --manifests "$MAN" "$@"
	assert_rc 2 "$args: exit 2"
	assert_err_contains "${a##*:}" "$args: the message names ${a##*:}"
done
CUDNNVM_JOBS=many cvm --manifests "$MAN" install 9.1 --cuda 12.4
assert_rc 2 "CUDNNVM_JOBS=many: exit 2"
assert_err_contains "CUDNNVM_JOBS" "CUDNNVM_JOBS=many: the message names CUDNNVM_JOBS"
cvm --lock-timeout 0.5 list
assert_rc 0 "--lock-timeout 0.5 (a fraction) is a number of seconds"

# ------------------------------------------------------------- exec's exit codes
cvm exec 9.1.1 --cuda 12.4 -- no-such-command-here
assert_rc 127 "exec of a missing command: exit 127 (as env(1))"
assert_err_contains "no-such-command-here" "exec of a missing command names it"
cvm --json exec 9.1.1 --cuda 12.4 -- no-such-command-here
assert_rc 127 "exec --json of a missing command: exit 127"
printf 'not run\n' >"$TEST_TMP/not-executable"
cvm exec 9.1.1 --cuda 12.4 -- "$TEST_TMP/not-executable"
assert_rc 126 "exec of a file that cannot be run: exit 126"
# (the command's own failure is not cudnnvm's: no error line is wanted)
CVM_NO_AUTO=1 cvm exec 9.1.1 --cuda 12.4 -- sh -c 'exit 7'
assert_rc 7 "exec: the command's own status"

# ------------------------------------------ a host name that does not resolve
cvm --manifests "$MAN" --mirror "http://cudnnvm-test.invalid/" fetch 9.1.0 --cuda 12.4
assert_rc 1 "a mirror whose host does not resolve: exit 1"
assert_err_contains "does not resolve" "the message says the host name does not resolve"
if grep -q retrying "$CVM_ERRF"; then
	not_ok "a name that does not resolve is not retried" "$(head -n 3 "$CVM_ERRF")"
else
	ok "a name that does not resolve is not retried"
fi
assert_absent "$STORE/cache/$(basename "$A910").part" "nothing left in the cache"

# --------------------------------------------- the smoke test names real paths
use_ok 9.1.1 --cuda 12.4 --no-smoke
mv "$LIB12/libcudnn_ops.so.9" "$TEST_TMP/ops.link"
cvm smoke --cuda 12.4 --no-gpu
assert_rc 4 "smoke with libcudnn_ops.so.9 gone: exit 4"
assert_err_contains "/usr/local/cuda-12.4/targets/x86_64-linux/lib/libcudnn_ops.so.9" \
	"smoke: names the library where it looked (the folder behind lib64)"
check "smoke: the folder it names exists" test -d "$ROOT/usr/local/cuda-12.4/targets/x86_64-linux/lib"
mv "$TEST_TMP/ops.link" "$LIB12/libcudnn_ops.so.9"

# --------------------- uninstall --force: the most recently active other version
use_ok 9.1.0 --cuda 12.4 --no-smoke
cvm rollback --cuda 12.4 --no-smoke
assert_rc 0 "rollback 9.1.0 -> 9.1.1: exit 0"
cvm --json rollback --cuda 12.4 --no-smoke
assert_rc 1 "a second rollback (nothing before 9.1.1 is left in the journal's stack): exit 1"
use_ok 9.1.0 --cuda 12.4 --no-smoke
cvm --json rollback --cuda 12.4 --no-smoke
assert_rc 0 "rollback --json: exit 0"
assert_json 'sorted(d) == ["cuda", "id", "previous", "smoke", "toolkit"] and d["toolkit"] == "/usr/local/cuda-12.4"' \
	"rollback --json has use's keys, toolkit and smoke included"
cvm --json use 9.1.1 --cuda 12.4 --no-smoke
assert_json 'sorted(d) == ["cuda", "id", "previous", "smoke", "toolkit"] and d["smoke"] is None' "use --json --no-smoke: cuda, id, previous, smoke (null), toolkit"
# journal now: use 9.1.1, use 9.1.0, rollback -> 9.1.1, use 9.1.0, rollback -> 9.1.1, use 9.1.1
cvm uninstall 9.1.1 --cuda 12.4 --force
assert_rc 0 "uninstall --force of the active 9.1.1: exit 0"
assert_uses "$TK12" 12.4 "$ID910" "uninstall --force: 9.1.0, active before 9.1.1, is put back"
assert_out_contains "putting back $ID910" "uninstall --force says which version it puts back"
check "it says so before it removes" test "$(grep -n "putting back" "$CVM_OUTF" | cut -d: -f1)" -lt "$(grep -n "^removed" "$CVM_OUTF" | cut -d: -f1)"
inst 9.1.1.17 12.4

# ------------------------------------------------------------ install --use
cvm --manifests "$MAN" --json install 9.1.1.17 --cuda 12.4 --archive "$A911" --use
assert_rc 0 "install --use (installed already) --json: exit 0"
assert_uses "$TK12" 12.4 "$ID911" "install --use: the version is active, with its links"
assert_json 'd["id"] == "'"$ID911"'" and d["use"]["id"] == "'"$ID911"'" and d["use"]["previous"] == "'"$ID910"'" and d["use"]["toolkit"] == "/usr/local/cuda-12.4"' \
	"install --use --json: install's document, with use's under \"use\""
cvm --manifests "$MAN" uninstall 9.1.0 --cuda 12.4
cvm --manifests "$MAN" install 9.1.0.70 --cuda 12.4 --archive "$A910" --use
assert_rc 0 "install --use of a new version: exit 0"
assert_uses "$TK12" 12.4 "$ID910" "install --use of a new version: active"
assert_smoke 90100 "install --use runs the smoke test, as use does"
cvm use 9.1.1 --cuda 12.4 --no-smoke
cvm --manifests "$MAN" --json install 9.1.0.70 --cuda 12.4 --archive "$A910" --use
assert_rc 0 "install --use --json (installed, not active): exit 0"
assert_json 'd["already_installed"] is True and sorted(d["use"]) == ["cuda", "id", "previous", "smoke", "toolkit"] and d["use"]["id"] == "'"$ID910"'" and d["use"]["previous"] == "'"$ID911"'" and d["use"]["smoke"]["library"] == "/usr/local/cuda-12.4/targets/x86_64-linux/lib/libcudnn.so.9" and d["use"]["smoke"]["library_version"] == 90100' \
	"install --use --json: use's document under \"use\", its smoke test's included"
cvm --manifests "$MAN" --json install 9.1.0.70 --cuda 12.4 --archive "$A910"
assert_json 'd["use"] is None and d["already_installed"] is True' "install --json without --use: \"use\": null"
cvm --user --manifests "$MAN" install 9.1.0.70 --cuda 12.4 --archive "$A910" --use
assert_rc 1 "--user install --use: refused (nothing system-wide changes with --user)"

# ------------------------------------------------- -q: results stay, chatter goes
cvm -q list
assert_rc 0 "list -q: exit 0"
assert_out_contains "$ID910" "list -q still lists (it is what was asked)"
cvm current -q
assert_out_contains "$ID910" "current -q still shows the active version"
cvm -q use 9.1.1 --cuda 12.4 --no-smoke
assert_rc 0 "use -q: exit 0"
check "use -q: nothing on stdout" test ! -s "$CVM_OUTF"
cvm -q --manifests "$MAN" install 9.1.1.17 --cuda 12.4 --archive "$A911"
check "install -q: nothing on stdout" test ! -s "$CVM_OUTF"
# Commands whose output is only chatter: nothing at all with -q.
mkdir -p "$TEST_TMP/mods-q"
for c in "rollback --cuda 12.4 --no-smoke" "use 9.1.1 --cuda 12.4 --no-smoke" "verify" "cache clean" \
	"local 9.1" "modulefiles $TEST_TMP/mods-q" "--manifests $MAN install 9.1.1.17 --cuda 12.4 --archive $A911"; do
	eval "set -- $c"
	cvm -q "$@"
	assert_rc 0 "-q $c: exit 0"
	check "-q $c: nothing on stdout or stderr" test ! -s "$CVM_OUTF" -a ! -s "$CVM_ERRF"
done
rm -f .cudnn-version
cvm -q env 9.1.1 --cuda 12.4
assert_rc 0 "env -q: exit 0"
check "env -q: only the exports, no comment line" test -z "$(grep -v '^export ' "$CVM_OUTF")"
assert_out_contains "export CUDNN_PATH=" "env -q still prints the exports (they are what was asked)"

# ------------------------------------------------ --json: one document, always
# Each command's document has its documented top-level keys (docs/cli.md), whatever is known.
for c in "list:installed" "current:active" "history:history" "toolkits:toolkits" "verify:verified" \
	"cache list:cache" "env 9.1.1 --cuda 12.4:id path prepend set" \
	"doctor:copies driver frameworks not_checked problems processes toolkits" "local 9.1:file version" \
	"use 9.1.1 --cuda 12.4 --no-smoke:cuda id previous smoke toolkit" \
	"smoke --cuda 12.4 --no-gpu:cudart_version gpu header_version library library_version loaded"; do
	keys=${c#*:}
	eval "set -- ${c%%:*}"
	cvm --json "$@"
	assert_json 'sorted(d) == sorted("'"$keys"'".split())' "${c%%:*} --json: one object with the keys $keys"
done
cvm --json smoke --cuda 12.4 --no-gpu
assert_json 'sorted(d["gpu"]) == sorted("algo compute_capability cuda_driver_version devices max_abs_error ms name passed skipped".split()) and d["gpu"]["skipped"] and d["gpu"]["passed"] is None and d["gpu"]["devices"] == []' \
	"smoke --json, GPU part not run: gpu has every key, null where not known, and why it was skipped"
rm -f .cudnn-version
cvm --json list --available
assert_json 'len(d["available"]) > 50 and len({tuple(sorted(e)) for e in d["available"]}) == 1' \
	"list --available --json: every entry has the same keys (null where a value is unknown)"
new_root
cvm --json verify
assert_rc 0 "verify --json with no store: exit 0"
assert_json 'd == {"verified": []}' "verify --json with no store: the usual document, empty"

finish
