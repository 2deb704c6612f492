#!/bin/bash
# SPDX-License-Identifier: MIT
# Crash points of uninstall and adopt (test build: CUDNNVM_FAULT=<point>
# makes the process SIGKILL itself there): uninstall-trashed (an inactive
# version, --force of an active one), adopt-staged, adopt-replacing. After the
# kill the toolkit works (no dangling link; adopt: every path reads the
# original bytes) and the next command finishes the job.
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"
# shellcheck source-path=SCRIPTDIR source=lib_activate.sh
. "$TESTS_DIR/integration/lib_activate.sh"

# after_next NAME ID: the state after the command that follows a crash.
after_next() {
	assert_uses "$TK11" 11.8 "$2" "$1: the links are those of $2"
	assert_no_dangling "$TK11" "$1: no dangling link"
	assert_journal "$1: the journal parses"
	assert_store_clean "$1: .staging and .trash are empty"
}

# ----------------------------------------------------------- uninstall
act_root
inst 8.9.7.29 11.8
inst 8.9.6.50 11.8
use_ok 8.9.7 --cuda 11.8 --no-smoke
use_ok 8.9.6 --cuda 11.8 --no-smoke
CUDNNVM_FAULT=uninstall-trashed cvm uninstall 8.9.7 --cuda 11.8
assert_rc 137 "uninstall-trashed (inactive version): uninstall dies"
assert_absent "$STORE/versions/$ID897" "uninstall-trashed: the version is out of versions/"
assert_uses "$TK11" 11.8 "$ID896" "uninstall-trashed: the active 8.9.6 is untouched"
assert_no_dangling "$TK11" "uninstall-trashed: no dangling link"
cvm --json list
assert_json '[e["id"] for e in d["installed"]] == ["'"$ID896"'"]' "uninstall-trashed: list shows only 8.9.6"
cvm use 8.9.6 --cuda 11.8 --no-smoke
assert_rc 0 "uninstall-trashed: the next locked command exits 0"
after_next "uninstall-trashed, next command" "$ID896"
cvm verify
assert_rc 0 "uninstall-trashed: verify passes"

# --force of the active version: deactivated (back to the previous) before the trash
inst 8.9.7.29 11.8
use_ok 8.9.7 --cuda 11.8 --no-smoke
use_ok 8.9.6 --cuda 11.8 --no-smoke
CUDNNVM_FAULT=uninstall-trashed cvm uninstall 8.9.6 --cuda 11.8 --force
assert_rc 137 "uninstall-trashed, --force of the active 8.9.6: dies"
assert_absent "$STORE/versions/$ID896" "uninstall-trashed --force: 8.9.6 is out of versions/"
assert_uses "$TK11" 11.8 "$ID897" "uninstall-trashed --force: 8.9.7 is active again, whole"
assert_no_dangling "$TK11" "uninstall-trashed --force: no dangling link"
assert_journal "uninstall-trashed --force: the journal parses"
cvm use 8.9.7 --cuda 11.8 --no-smoke
assert_rc 0 "uninstall-trashed --force: the next command exits 0"
after_next "uninstall-trashed --force, next command" "$ID897"

# --force of the last active version: the toolkit is left unmanaged
CUDNNVM_FAULT=uninstall-trashed cvm uninstall 8.9.7 --cuda 11.8 --force
assert_rc 137 "uninstall-trashed, --force of the last version: dies"
assert_unmanaged "$TK11" 11.8 "uninstall-trashed --force, last version: no active link, no links, no conf"
assert_no_dangling "$TK11" "uninstall-trashed --force, last version: no dangling link"
inst 8.9.6.50 11.8
assert_store_clean "uninstall-trashed --force, last version: the next command (install) swept .trash"
assert_versions "$ID896" "uninstall-trashed --force, last version: only the new install is in versions/"

# ----------------------------------------------------------------- adopt
AID12=9.1.1-cuda12-linux-x86_64
for point in adopt-staged adopt-replacing; do
	act_root
	hand_copy "$(archive 9.1.1.17 12)" "$TK12"
	bytes "$TK12" >"$TEST_TMP/bytes.before"
	snapshot "$TK12" >"$TEST_TMP/tk.before"
	CUDNNVM_FAULT=$point cvm adopt --cuda 12.4
	assert_rc 137 "$point: adopt dies"
	bytes "$TK12" >"$TEST_TMP/bytes.after"
	assert_same_snapshot "$TEST_TMP/bytes.before" "$TEST_TMP/bytes.after" "$point: every path still reads the original bytes"
	assert_no_dangling "$TK12" "$point: no dangling link"
	case $point in
	adopt-staged)
		snapshot "$TK12" >"$TEST_TMP/tk.after"
		assert_same_snapshot "$TEST_TMP/tk.before" "$TEST_TMP/tk.after" "$point: the toolkit is untouched"
		assert_absent "$STORE/versions/$AID12" "$point: nothing committed to versions/"
		;;
	adopt-replacing)
		check "$point: the crash came after a file was replaced by a link (the point is reached)" \
			test -n "$(find "$TK12" -lname '*opt/cudnnvm/active/*' -print -quit)"
		;;
	esac
	cvm adopt --cuda 12.4
	assert_rc 0 "$point: adopt again exits 0"
	assert_uses "$TK12" 12.4 "$AID12" "$point: adopt again: every name is a managed link"
	bytes "$TK12" >"$TEST_TMP/bytes.after"
	assert_same_snapshot "$TEST_TMP/bytes.before" "$TEST_TMP/bytes.after" "$point: adopt again: the original bytes through every path"
	assert_no_dangling "$TK12" "$point: adopt again: no dangling link"
	assert_store_clean "$point: adopt again: .staging and .trash are empty"
	assert_journal "$point: adopt again: the journal parses"
	check "$point: one adopt line in the journal" test "$(journal 12.4)" = "adopt - $AID12"
	assert_sha256sum_c "$STORE/versions/$AID12" "$point: adopt again: the adopted files verify"
	cvm verify
	assert_rc 0 "$point: adopt again: verify passes"
done

finish
