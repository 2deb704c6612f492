#!/bin/bash
# SPDX-License-Identifier: MIT
# use that fails leaves the state it started from: a version whose
# record.json is missing or corrupt is refused before anything switches; a
# journal that cannot be written after the switch puts the previous version
# back (links, active link, journal unchanged). A crash between the switch
# and its journal line is repaired by the next locked command: the journal's
# last destination is the active version again, and rollback goes back to
# the version before it.
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"
# shellcheck source-path=SCRIPTDIR source=lib_activate.sh
. "$TESTS_DIR/integration/lib_activate.sh"

act_root
inst 8.9.7.29 11.8
inst 8.9.6.50 11.8
inst 9.1.1.17 11.8
use_ok 8.9.7 --cuda 11.8 --no-smoke
V911=$STORE/versions/$ID911_11

# unchanged NAME: 8.9.7 still active, links and journal as before.
unchanged() {
	assert_uses "$TK11" 11.8 "$ID897" "$1: 8.9.7 is still the one in use"
	assert_no_dangling "$TK11" "$1: no dangling link"
	check "$1: the journal is unchanged" test "$(journal 11.8)" = "$J_BEFORE"
	assert_absent "$STORE/history/cuda-11.8.pending" "$1: nothing pending"
}

# ------------------------------------------- record.json missing or corrupt
chmod u+w "$V911/.cudnnvm"
cp "$V911/.cudnnvm/record.json" "$TEST_TMP/record.json"
for how in missing corrupt empty other; do
	J_BEFORE=$(journal 11.8)
	case $how in
	missing) rm -f "$V911/.cudnnvm/record.json" ;;
	corrupt) printf '{"id": "%s", "vers' "$ID911_11" >"$V911/.cudnnvm/record.json" ;;
	empty) : >"$V911/.cudnnvm/record.json" ;;
	other) sed -e "s/$ID911_11/$ID896/" "$TEST_TMP/record.json" >"$V911/.cudnnvm/record.json" ;;
	esac
	for smoke in --no-smoke ""; do
		# shellcheck disable=SC2086  # "" is no argument
		cvm use 9.1.1 --cuda 11.8 $smoke
		assert_rc 1 "record.json $how, use ${smoke:-with the smoke test}: exit 1"
		assert_err_contains "record" "record.json $how: the record is named"
		unchanged "record.json $how${smoke:+ $smoke}"
	done
	cp "$TEST_TMP/record.json" "$V911/.cudnnvm/record.json"
done

# ------------------------------------------- the journal cannot be written
J_BEFORE=$(journal 11.8)
mv "$STORE/history/cuda-11.8.log" "$TEST_TMP/saved.log"
mkdir "$STORE/history/cuda-11.8.log"
J_BEFORE=
cvm use 9.1.1 --cuda 11.8
assert_rc 1 "journal not writable: exit 1"
assert_err_contains "cuda-11.8.log" "journal not writable: the journal is named"
assert_err_contains "putting $ID897 back" "journal not writable: the previous version is put back"
assert_uses "$TK11" 11.8 "$ID897" "journal not writable: 8.9.7 is in use again"
assert_no_dangling "$TK11" "journal not writable: no dangling link"
assert_absent "$STORE/history/cuda-11.8.pending" "journal not writable: nothing pending"
rmdir "$STORE/history/cuda-11.8.log"
mv "$TEST_TMP/saved.log" "$STORE/history/cuda-11.8.log"

# ----------------------- a crash just before the journal line is repaired
use_ok 8.9.6 --cuda 11.8 --no-smoke
use_ok 8.9.7 --cuda 11.8 --no-smoke
n=$(hist_lines 11.8)
CUDNNVM_FAULT=use-finished cvm use 9.1.1 --cuda 11.8 --no-smoke
assert_rc 137 "crash at use-finished: use dies"
check "crash at use-finished: no journal line yet" test "$(hist_lines 11.8)" = "$n"
assert_file "$STORE/history/cuda-11.8.pending" "crash at use-finished: the switch is pending"
cvm cache clean
assert_rc 0 "the next locked command (cache clean): exit 0"
check "after it the journal's last destination is the active version" \
	test "$(journal 11.8 | tail -n 1)" = "use $ID897 $ID911_11"
assert_absent "$STORE/history/cuda-11.8.pending" "nothing pending any more"
assert_journal "the repaired journal parses"
cvm cache clean
check "a second locked command adds nothing" test "$(hist_lines 11.8)" = "$((n + 1))"
cvm rollback --cuda 11.8 --no-smoke
assert_rc 0 "rollback after the repaired crash: exit 0"
assert_uses "$TK11" 11.8 "$ID897" "rollback goes to 8.9.7, the version before the crashed switch"
cvm rollback --cuda 11.8 --no-smoke
assert_uses "$TK11" 11.8 "$ID896" "a second rollback goes to 8.9.6"

# a crash before the switch (use-prepared): the pending line is dropped, not added
n=$(hist_lines 11.8)
CUDNNVM_FAULT=use-prepared cvm use 9.1.1 --cuda 11.8 --no-smoke
assert_rc 137 "crash at use-prepared: use dies"
cvm cache clean
check "a switch that did not happen gets no journal line" test "$(hist_lines 11.8)" = "$n"
assert_absent "$STORE/history/cuda-11.8.pending" "and is no longer pending"
finish
