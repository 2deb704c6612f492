#!/bin/bash
# SPDX-License-Identifier: MIT
# A damaged activation journal: a line is an entry only when it is whole (it
# ends with a newline and every field parses), any other line is ignored and
# named with its line number; the next write starts on a line of its own and
# leaves the torn line unreadable; rollback walks the whole lines right (a
# journal cut anywhere in its last line, garbage, a NUL byte, a lost line in
# the middle). A journal that is a symlink, a folder or a FIFO is refused,
# never followed, read through or waited on; an empty one is an empty history.
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"
# shellcheck source-path=SCRIPTDIR source=lib_activate.sh
. "$TESTS_DIR/integration/lib_activate.sh"

A=$ID897
B=$ID896
C=$ID911_11
LOG_IN=/opt/cudnnvm/history/cuda-11.8.log # as messages name it (inside --root)

# three_uses: a fresh root with A, B, C installed for 11.8 and used in that order.
three_uses() {
	act_root
	LOG=$STORE/history/cuda-11.8.log
	inst 8.9.7.29 11.8
	inst 8.9.6.50 11.8
	inst 9.1.1.17 11.8
	use_ok 8.9.7 --cuda 11.8 --no-smoke
	use_ok 8.9.6 --cuda 11.8 --no-smoke
	use_ok 9.1.1 --cuda 11.8 --no-smoke
}

# kinds: "kind from to" of every entry history --json gives for 11.8, one a line.
kinds() { journal 11.8; }

ends_with_newline() { [ "$(tail -c 1 "$1" | od -An -c | tr -d ' ')" = '\n' ]; }

# back_twice NAME: two rollbacks go C -> B -> A, each line whole, the third finds nothing.
back_twice() {
	cvm rollback --cuda 11.8
	assert_rc 0 "$1: the first rollback exits 0"
	assert_uses "$TK11" 11.8 "$B" "$1: the first rollback goes back to B"
	check "$1: the journal ends with a newline after the rollback" ends_with_newline "$LOG"
	check "$1: the rollback's line is whole: rollback C -> B" test "$(kinds | tail -n 1)" = "rollback $C $B"
	cvm rollback --cuda 11.8
	assert_rc 0 "$1: the second rollback exits 0"
	assert_uses "$TK11" 11.8 "$A" "$1: the second rollback goes back to A, not to C"
	check "$1: history ends: rollback C -> B, rollback B -> A" test \
		"$(kinds | tail -n 2 | tr '\n' ' ')" = "rollback $C $B rollback $B $A "
	cvm rollback --cuda 11.8
	assert_rc 1 "$1: a third rollback: exit 1"
	assert_err_contains "nothing to roll back to" "$1: a third rollback finds nothing"
}

# ------------------------------------------------- the issue's example: truncate -s -10
three_uses
truncate -s -10 "$LOG"
cvm --json history --cuda 11.8
assert_rc 0 "truncated journal: history exits 0"
assert_json '[(e["kind"], e["to"]) for e in d["history"]] == [("use", "'"$A"'"), ("use", "'"$B"'")]' \
	"truncated journal: history lists only the two whole lines"
check "truncated journal: history names the cut line" test "$(grep -c . "$CVM_ERRF")" = 1
assert_err_contains "cudnnvm: warning: '$LOG_IN': line 3 is damaged (cut short: no end of line): ignored" \
	"truncated journal: the warning gives the file, the line number and why"
cp "$LOG" "$TEST_TMP/cut.log"
back_twice "truncate -s -10"
check "truncate -s -10: history: use A, use B, rollback C -> B, rollback B -> A" test \
	"$(kinds | tr '\n' ' ')" = "use - $A use $A $B rollback $C $B rollback $B $A "
check "the cut line is kept as it was, ended by the marker" test \
	"$(sed -n 3p "$LOG")" = "$(cat "$TEST_TMP/cut.log" | sed -n 3p)$(printf '\t\t(cut short)')"
check "the journal is append-only: the first two lines are unchanged" cmp -s \
	<(head -n 2 "$TEST_TMP/cut.log") <(head -n 2 "$LOG")
cvm history --cuda 11.8
assert_rc 0 "history after the rollbacks exits 0"
assert_err_contains "line 3 is damaged (not a whole journal line): ignored" \
	"history: the ended torn line is still reported, now as not whole"

# ---------------------------------------- the last line cut at every kind of place
# The last line keeps only its first N characters (no newline): N given, or
# "Kf+M": the characters up to its Kth tab, and M more.
for spec in "in the time:4" "after the user:2f" "in the kind:2f+1" "in the from:3f+2" "after the from:4f" \
	"in the to:4f+5" "after the to:5f" "in the command:5f+3"; do
	name=${spec%%:*}
	where=${spec#*:}
	three_uses
	last=$(tail -n 1 "$LOG")
	case $where in
	*f*) # Nf[+K]: after the Nth tab (+K characters)
		nth=${where%%f*}
		extra=${where#*f}
		extra=${extra#+}
		keep=$(printf '%s' "$last" | awk -F'\t' -v n="$nth" '{ l = 0; for (i = 1; i <= n; i++) l += length($i) + 1; print l }')
		keep=$((keep + ${extra:-0}))
		;;
	*) keep=$where ;;
	esac
	truncate -s $(($(stat -c %s "$LOG") - ${#last} - 1 + keep)) "$LOG"
	back_twice "cut $name"
done

# -------------------------------------------------- garbage among whole lines
three_uses
{
	sed -n 1p "$LOG"
	printf 'garbage\n'
	printf '\n'
	printf '1700000000\tu\tuse\t-\t%s\tcmd\textra field\n' "$C"
	printf '1700000000\tu\tswitch\t-\t%s\tcmd\n' "$C"
	printf '17000x0000\tu\tuse\t-\t%s\tcmd\n' "$C"
	printf '1700000000\tu\tuse\t-\t\tcmd\n'
	printf '1700000000\tu\tuse\t-\t%s\t%3000s\n' "$C" x
	printf '1700000000\tu\tuse\t-\t%s\tc\001md\n' "$C"
	printf '1700000000\tu\tuse\t-\t%s\0tail\tcmd\n' "$C"
	sed -n '2,3p' "$LOG"
} >"$TEST_TMP/garbage.log"
cp "$TEST_TMP/garbage.log" "$LOG"
cvm --json history --cuda 11.8
assert_rc 0 "garbage lines: history exits 0"
assert_json '[e["to"] for e in d["history"]] == ["'"$A"'", "'"$B"'", "'"$C"'"]' \
	"garbage lines: history lists exactly the three whole lines"
for l in "2:not a whole journal line" "3:not a whole journal line" "4:not a whole journal line" \
	"5:not a whole journal line"; do
	assert_err_contains "'$LOG_IN': line ${l%%:*} is damaged (${l#*:}): ignored" "garbage lines: line ${l%%:*} is named"
done
assert_err_contains "'$LOG_IN': 4 more damaged lines ignored" "garbage lines: past five, the rest are counted"
cvm history --cuda 11.8 -v
check "garbage lines: every damaged line is reported once" test "$(grep -c 'is damaged' "$CVM_ERRF")" = 5
cvm rollback --cuda 11.8
assert_rc 0 "garbage lines: rollback exits 0"
assert_uses "$TK11" 11.8 "$B" "garbage lines: rollback goes back to B"
check "garbage lines: the garbage is left as it was" cmp -s "$TEST_TMP/garbage.log" <(head -n 12 "$LOG")

# a NUL byte, and the lines after it still count
three_uses
python3 - "$LOG" <<'EOF'
import sys
p = sys.argv[1]
lines = open(p, "rb").read().split(b"\n")
lines.insert(1, b"17000\x0000000\tu\tuse\t-\tx\tcmd")
open(p, "wb").write(b"\n".join(lines))
EOF
cvm --json history --cuda 11.8
assert_json '[e["to"] for e in d["history"]] == ["'"$A"'", "'"$B"'", "'"$C"'"]' \
	"a NUL byte: the whole lines after it are read too"
assert_err_contains "'$LOG_IN': line 2 is damaged (a NUL byte in it): ignored" "a NUL byte: the line is named"
back_twice "a NUL byte"

# a lost line in the middle: "use A -> B" damaged; the walk follows "use B -> C"'s from
three_uses
sed -i '2s/^[0-9]*/x/' "$LOG"
cvm rollback --cuda 11.8
assert_rc 0 "a damaged line in the middle: rollback exits 0"
assert_uses "$TK11" 11.8 "$B" "a damaged line in the middle: rollback goes to B (the lost line's version), not A"
assert_err_contains "'$LOG_IN': line 2 is damaged (not a whole journal line): ignored" \
	"a damaged line in the middle: rollback names it"
cvm rollback --cuda 11.8
assert_uses "$TK11" 11.8 "$A" "a damaged line in the middle: the second rollback goes to A"

# --------------------------------------------------------------- an empty journal
three_uses
: >"$LOG"
cvm --json history --cuda 11.8
assert_rc 0 "an empty journal: history exits 0"
assert_json 'd["history"] == []' "an empty journal: no entries"
check "an empty journal: no warning" test ! -s "$CVM_ERRF"
cvm rollback --cuda 11.8
assert_rc 1 "an empty journal: rollback exits 1"
assert_err_contains "nothing to roll back to" "an empty journal: nothing to roll back to"
use_ok 8.9.6 --cuda 11.8 --no-smoke
check "an empty journal: the next use writes one whole line" test "$(kinds)" = "use $C $B"
check "an empty journal: one line, no marker" test "$(wc -l <"$LOG")" = 1 -a -z "$(grep -F '(cut short)' "$LOG")"

# ------------------------------------- a journal that is not a regular file
# not_a_file NAME KIND MAKE: the journal replaced by MAKE (run with $LOG); every
# command that reads or writes it refuses with one message and touches nothing.
not_a_file() {
	local name=$1 kind=$2
	three_uses
	rm -f "$LOG"
	eval "$3"
	snapshot "$ROOT" >"$TEST_TMP/before.snap"
	cvm history --cuda 11.8
	assert_rc 1 "$name: history exits 1"
	assert_err_contains "cudnnvm: error: '$LOG_IN' is $kind, not cudnnvm's journal (a regular file): refused, left as it is" \
		"$name: history says what the journal is"
	cvm history
	assert_rc 1 "$name: history of every toolkit exits 1"
	cvm rollback --cuda 11.8
	assert_rc 1 "$name: rollback exits 1"
	assert_err_contains "'$LOG_IN' is $kind, not cudnnvm's journal" "$name: rollback says why"
	cvm use 8.9.7 --cuda 11.8 --no-smoke
	assert_rc 1 "$name: use exits 1"
	assert_err_contains "'$LOG_IN' is $kind, not cudnnvm's journal" "$name: use says why"
	assert_uses "$TK11" 11.8 "$C" "$name: use refused before switching: C still active"
	snapshot "$ROOT" >"$TEST_TMP/after.snap"
	assert_same_snapshot "$TEST_TMP/before.snap" "$TEST_TMP/after.snap" "$name: nothing changed"
}
printf 'not a journal\n' >"$TEST_TMP/elsewhere"
cp "$TEST_TMP/elsewhere" "$TEST_TMP/elsewhere.orig"
not_a_file "a symlink" "a symbolic link" 'ln -s "$TEST_TMP/elsewhere" "$LOG"'
check "a symlink: its target is untouched" cmp -s "$TEST_TMP/elsewhere" "$TEST_TMP/elsewhere.orig"
not_a_file "a dangling symlink" "a symbolic link" 'ln -s "$TEST_TMP/nothing-here" "$LOG"'
assert_absent "$TEST_TMP/nothing-here" "a dangling symlink: nothing created where it points"
not_a_file "a folder" "a folder" 'mkdir "$LOG"'
not_a_file "a FIFO" "a FIFO" 'mkfifo "$LOG"'

finish
