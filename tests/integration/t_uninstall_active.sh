#!/bin/bash
# SPDX-License-Identifier: MIT
# uninstall of an active version (refused; --force deactivates, restoring the
# previous version from the journal, or leaving the toolkit unmanaged) and of
# a version whose files a running process maps (refused, naming it; --force).
# No dangling link is ever left in a toolkit, .trash is emptied.
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"
# shellcheck source-path=SCRIPTDIR source=lib_activate.sh
. "$TESTS_DIR/integration/lib_activate.sh"

act_root
inst 8.9.7.29 11.8
inst 8.9.6.50 11.8
inst 9.1.1.17 11.8
inst 9.1.1.17 12.4
use_ok 8.9.7 --cuda 11.8 --no-smoke
use_ok 8.9.6 --cuda 11.8 --no-smoke
use_ok 9.1.1 --cuda 12.4 --no-smoke

after_uninstall() { # NAME ID
	assert_absent "$STORE/versions/$2" "$1: versions/$2 is gone"
	assert_no_dangling "$TK11" "$1: no dangling link in the 11.8 toolkit"
	assert_no_dangling "$TK12" "$1: no dangling link in the 12.4 toolkit"
	assert_empty_or_absent "$STORE/.trash" "$1: .trash is empty"
	assert_journal "$1: the journal parses"
}

# ------------------------------------------------ active: refused
snapshot "$ROOT" >"$TEST_TMP/before.snap"
cvm uninstall 8.9.6 --cuda 11.8
assert_rc 1 "uninstall of the version active for 11.8: exit 1"
assert_err_contains "11.8" "the refusal names the toolkit (11.8)"
assert_err_contains "--force" "the refusal mentions --force"
cvm uninstall 9.1.1 --cuda 12.4
assert_rc 1 "uninstall of the version active for 12.4: exit 1"
assert_err_contains "12.4" "the refusal names the toolkit (12.4)"
snapshot "$ROOT" >"$TEST_TMP/after.snap"
assert_same_snapshot "$TEST_TMP/before.snap" "$TEST_TMP/after.snap" "refused uninstalls change nothing"

# ----------------------- --force with a previous version in the journal
ldconfig_counter
n=$(hist_lines 11.8)
CUDNNVM_LDCONFIG=$LDCONFIG_PROG cvm uninstall 8.9.6 --cuda 11.8 --force
assert_rc 0 "uninstall 8.9.6 --force (active for 11.8) exits 0"
assert_output_contains "putting back $ID897, the version active before it" \
	"uninstall --force says which version it puts back"
after_uninstall "uninstall --force of the active 8.9.6" "$ID896"
assert_uses "$TK11" 11.8 "$ID897" "uninstall --force: the previous version (8.9.7) is active again, with its links"
check "uninstall --force: one journal line for the switch back" test "$(hist_lines 11.8)" = $((n + 1))
check "uninstall --force: the journal says 8.9.6 -> 8.9.7" ends_with "$(journal 11.8 | tail -n 1)" " $ID896 $ID897"
check "8.9.6 -> 8.9.7 (same sonames): ldconfig not run" test "$(ld_calls)" = 0
cvm --json list
assert_json '[e["active_for"] for e in d["installed"] if e["id"] == "'"$ID897"'"] == [["11.8"]]' "list: 8.9.7 is active for 11.8"

# ----------------------- --force with nothing to go back to
CUDNNVM_LDCONFIG=$LDCONFIG_PROG cvm uninstall 8.9.7 --cuda 11.8 --force
assert_rc 0 "uninstall 8.9.7 --force (active, nothing installed before it) exits 0"
after_uninstall "uninstall --force of the last active version" "$ID897"
assert_unmanaged "$TK11" 11.8 "nothing to go back to: no active link, no toolkit links, no conf file"
check "the loader configuration changed: ldconfig ran" test "$(ld_calls)" = 1
check "the journal records the deactivation (to none)" ends_with "$(journal 11.8 | tail -n 1)" " $ID897 -"
cvm --json current --cuda 11.8
assert_json '[(e["cuda"], e["id"], e["version"]) for e in d["active"]] == [("11.8", None, None)]' "current --cuda 11.8: its entry, with id and version null"
cvm --json current
assert_json '[e["cuda"] for e in d["active"] if e["id"]] == ["12.4"]' "current: only 12.4 has an active version"
assert_file "$LIB11/libcufft.so.10" "the toolkit's own files are still there"
assert_uses "$TK12" 12.4 "$ID911" "12.4 untouched"

cvm uninstall 9.1.1 --cuda 12.4 --force
assert_rc 0 "uninstall 9.1.1 --cuda 12.4 --force exits 0"
after_uninstall "uninstall --force of 12.4's version" "$ID911"
assert_unmanaged "$TK12" 12.4 "12.4 unmanaged afterwards (links in the lib64 target folder removed)"
assert_symlink "$TK12/lib64" targets/x86_64-linux/lib "12.4: lib64 is still the toolkit's link"
assert_versions "$ID911_11" "only 9.1.1 (cuda11) remains"

# ---------------------------------- a running process maps the version's files
inst 8.9.7.29 11.8
if hold_lib "$STORE/versions/$ID897/lib/libcudnn.so.8"; then
	ok "a process maps versions/$ID897/lib/libcudnn.so.8 (set-up)"
else
	not_ok "a process maps versions/$ID897/lib/libcudnn.so.8 (set-up)"
fi
snapshot "$ROOT" >"$TEST_TMP/before.snap"
cvm uninstall 8.9.7 --cuda 11.8
assert_rc 1 "uninstall of a mapped version: exit 1"
assert_err_contains "$HOLD_PID" "the refusal names the PID ($HOLD_PID)"
assert_err_contains "python3" "the refusal names the command (python3)"
snapshot "$ROOT" >"$TEST_TMP/after.snap"
assert_same_snapshot "$TEST_TMP/before.snap" "$TEST_TMP/after.snap" "the refused uninstall changes nothing"

# through the toolkit: the process maps the file by way of the toolkit's link
use_ok 8.9.7 --cuda 11.8 --no-smoke
use_ok 9.1.1 --cuda 11.8 --no-smoke
kill "$HOLD_PID" 2>/dev/null
wait "$HOLD_PID" 2>/dev/null
use_ok 8.9.7 --cuda 11.8 --no-smoke
hold_lib "$LIB11/libcudnn.so.8" || not_ok "a process maps the toolkit's lib64/libcudnn.so.8 (set-up)"
use_ok 9.1.1 --cuda 11.8 --no-smoke
cvm uninstall 8.9.7 --cuda 11.8
assert_rc 1 "uninstall of a version a process loaded through the toolkit: exit 1"
assert_err_contains "$HOLD_PID" "the refusal names the PID ($HOLD_PID)"

cvm uninstall 8.9.7 --cuda 11.8 --force
assert_rc 0 "uninstall --force of a mapped version exits 0"
after_uninstall "uninstall --force of a mapped version" "$ID897"
assert_uses "$TK11" 11.8 "$ID911_11" "9.1.1 stays active"
check "the process that mapped it still runs" kill -0 "$HOLD_PID"
kill "$HOLD_PID" 2>/dev/null
wait "$HOLD_PID" 2>/dev/null

# an inactive, unmapped version: plain uninstall
inst 8.9.6.50 11.8
cvm uninstall 8.9.6 --cuda 11.8
assert_rc 0 "uninstall of an inactive version exits 0"
after_uninstall "uninstall of an inactive version" "$ID896"
assert_uses "$TK11" 11.8 "$ID911_11" "9.1.1 still active"
# rollback to a version that is gone does not break the toolkit
cvm rollback --cuda 11.8
if [ "$RC" = 0 ]; then
	assert_one_version "$TK11" "rollback past an uninstalled version: the links resolve into one version"
else
	assert_uses "$TK11" 11.8 "$ID911_11" "rollback refused (exit $RC): 9.1.1 still active, links whole"
fi
assert_no_dangling "$TK11" "after that rollback: no dangling link"

finish
