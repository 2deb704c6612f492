#!/bin/bash
# SPDX-License-Identifier: MIT
# rollback walks the journal back, one toolkit at a time; history shows it;
# a failed smoke test (wrong version, a library that does not load, one that
# hangs past CUDNNVM_SMOKE_TIMEOUT) rolls back by itself with exit 4.
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"
# shellcheck source-path=SCRIPTDIR source=lib_activate.sh
. "$TESTS_DIR/integration/lib_activate.sh"

act_root
inst 8.9.7.29 11.8
inst 8.9.6.50 11.8
inst 9.1.1.17 11.8
inst 9.1.1.17 12.4

# ------------------------------------------------------ A, B, C, then back
cvm rollback --cuda 11.8
assert_rc 1 "rollback with no history: exit 1"
assert_err_contains "nothing to roll back to" "rollback with no history: 'nothing to roll back to'"

use_ok 8.9.7 --cuda 11.8 --no-smoke
use_ok 8.9.6 --cuda 11.8 --no-smoke
ldconfig_counter
CUDNNVM_LDCONFIG=$LDCONFIG_PROG cvm use 9.1.1 --cuda 11.8 --no-smoke
must "use 9.1.1 --cuda 11.8"
use_ok 9.1.1 --cuda 12.4 --no-smoke
cp "$STORE/history/cuda-11.8.log" "$TEST_TMP/log.before"
check "three uses: three journal lines for 11.8" test "$(hist_lines 11.8)" = 3

: >"$LDCALLS"
CUDNNVM_LDCONFIG=$LDCONFIG_PROG cvm rollback --cuda 11.8
assert_rc 0 "rollback (C -> B) exits 0"
assert_uses "$TK11" 11.8 "$ID896" "rollback: 8.9.6 is active again, with exactly its links"
assert_no_dangling "$TK11" "rollback C -> B: no dangling link"
assert_output_contains "$ID896" "rollback says what is active now"
check "rollback 9.x -> 8.x (sonames change) ran ldconfig" test "$(ld_calls)" = 1
check "rollback C -> B: journal: rollback 9.1.1 -> 8.9.6" test "$(journal 11.8 | tail -n 1)" = "rollback $ID911_11 $ID896"
check "the journal is append-only: the first lines are unchanged" cmp -s "$TEST_TMP/log.before" <(head -n 3 "$STORE/history/cuda-11.8.log")
assert_uses "$TK12" 12.4 "$ID911" "rollback --cuda 11.8 left 12.4 alone"

cvm rollback
assert_rc 0 "rollback (B -> A; default toolkit) exits 0"
assert_uses "$TK11" 11.8 "$ID897" "rollback: 8.9.7 is active again"
check "rollback B -> A: journal: rollback 8.9.6 -> 8.9.7" test "$(journal 11.8 | tail -n 1)" = "rollback $ID896 $ID897"
cvm --json current --cuda 11.8
assert_json '[e["id"] for e in d["active"]] == ["'"$ID897"'"]' "current --json after two rollbacks: 8.9.7"

snapshot "$ROOT" >"$TEST_TMP/before.snap"
cvm rollback --cuda 11.8
assert_rc 1 "a third rollback: exit 1"
assert_err_contains "nothing to roll back to" "a third rollback: 'nothing to roll back to'"
snapshot "$ROOT" >"$TEST_TMP/after.snap"
assert_same_snapshot "$TEST_TMP/before.snap" "$TEST_TMP/after.snap" "a refused rollback changes nothing"

check "journal for 11.8: use, use, use, rollback, rollback" test \
	"$(journal 11.8 | cut -d' ' -f1 | tr '\n' ' ')" = "use use use rollback rollback "
check "five journal lines for 11.8, one for 12.4" test "$(hist_lines 11.8) $(hist_lines 12.4)" = "5 1"
assert_journal "the journal parses"
cvm --json history --cuda 12.4
assert_rc 0 "history --cuda 12.4 --json exits 0"
assert_json '[(e["cuda"], e["kind"], e["from"], e["to"]) for e in d["history"]] == [("12.4", "use", None, "'"$ID911"'")]' \
	"history --cuda 12.4: only 12.4's entry"
cvm history --cuda 11.8
assert_rc 0 "history (text) exits 0"
check "history (text): one line per switch" test "$(grep -c -e "$ID897" -e "$ID896" "$CVM_OUTF")" = 5
assert_out_contains "rollback" "history (text) shows the rollbacks"

cvm --user rollback
assert_rc 1 "--user rollback: exit 1"
assert_err_matches "env|exec" "--user rollback points to env/exec"

cvm rollback --cuda 12.4
assert_rc 1 "rollback --cuda 12.4 after one use: exit 1"
assert_uses "$TK12" 12.4 "$ID911" "rollback --cuda 12.4 refused: 9.1.1 still active"

# ------------------------------------------- smoke failures roll back (exit 4)
inst 9.1.0.70 12.4
V910=$STORE/versions/$ID910
lib910=$V910/lib/libcudnn.so.9.1.0
cp -p "$lib910" "$TEST_TMP/libcudnn.so.9.1.0.good"

smoke_fails() { # NAME  (after cvm use 9.1.0 --cuda 12.4 that must fail)
	assert_rc 4 "$1: use exits 4"
	assert_uses "$TK12" 12.4 "$ID911" "$1: the previous version (9.1.1) is active again, with its links"
	assert_no_dangling "$TK12" "$1: no dangling link"
	check "$1: journal ends with: rollback 9.1.0 -> 9.1.1" test "$(journal 12.4 | tail -n 1)" = "rollback $ID910 $ID911"
	assert_journal "$1: the journal parses"
	assert_store_clean "$1: work areas empty"
	assert_uses "$TK11" 11.8 "$ID897" "$1: 11.8 untouched"
}

make_stub "$lib910" libcudnn.so.9 90999
cvm use 9.1.0 --cuda 12.4
smoke_fails "a library that reports 90999 for 9.1.0"
assert_output_contains "90999" "the wrong version: the message gives the number the library reported"

: >"$lib910"
cvm use 9.1.0 --cuda 12.4
smoke_fails "an empty libcudnn.so.9.1.0 (dlopen fails)"

cp -p "$TEST_TMP/libcudnn.so.9.1.0.good" "$lib910"
truncate -s 100 "$lib910"
cvm use 9.1.0 --cuda 12.4
smoke_fails "a libcudnn.so.9.1.0 truncated to 100 bytes"

make_stub "$lib910" libcudnn.so.9 90100 abort
cvm use 9.1.0 --cuda 12.4
smoke_fails "a library that kills the process loading it (abort)"

make_stub "$lib910" libcudnn.so.9 90100 hang
# The library would hang for 600 s, then load: a failure says the timeout cut it.
CUDNNVM_SMOKE_TIMEOUT=2 cvm use 9.1.0 --cuda 12.4
smoke_fails "a library that hangs when loaded, CUDNNVM_SMOKE_TIMEOUT=2"
assert_err_contains "did not finish in 2 s: killed" "the message says the smoke test was cut at its timeout (2 s)"

# --no-smoke: the broken version is activated as asked, and rollback works
use_ok 9.1.0 --cuda 12.4 --no-smoke
assert_uses "$TK12" 12.4 "$ID910" "--no-smoke activates even a broken version"
cvm rollback --cuda 12.4
assert_rc 0 "rollback --cuda 12.4 from 9.1.0 exits 0"
assert_uses "$TK12" 12.4 "$ID911" "rollback --cuda 12.4: 9.1.1 again"

# a smoke failure on the first activation of a toolkit leaves it unmanaged
act_root
inst 8.9.7.29 11.8
make_stub "$STORE/versions/$ID897/lib/libcudnn.so.8.9.7" libcudnn.so.8 8000
cvm use 8.9.7 --cuda 11.8
assert_rc 4 "first use, smoke test fails: exit 4"
assert_unmanaged "$TK11" 11.8 "first use, smoke test fails: no active link, no toolkit links, no conf file"
assert_no_dangling "$TK11" "first use, smoke test fails: no dangling link"
assert_journal "first use, smoke test fails: the journal parses"
assert_store_clean "first use, smoke test fails: work areas empty"

finish
