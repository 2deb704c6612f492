#!/bin/sh
# SPDX-License-Identifier: MIT
#
# usage: sh tests/run.sh BUILD_DIR [NAME...]
#
# Runs every BUILD_DIR/tests/test_* unit binary and every
# tests/integration/t_*.sh (with bash, CUDNNVM=<BUILD_DIR/cudnnvm>, and one
# fixture cache for the whole run), counts their "ok - " and "not ok - "
# lines ("ok - ... # SKIP why" is a skip), shows the failures, and ends with
# one line "N passed, N failed[, N skipped]". Exit 1 when anything failed.
# NAMEs (e.g. t_lock test_version) run only those.
#
# A script or binary also fails when it does not end with its TAP plan "1..N"
# (lib.sh's finish, unit.h's unit_done) or N is not the count of its results
# (it stopped early), when it exits other than 0 or 1-with-failures, or prints
# no result; a tests/unit/test_*.c without its binary in BUILD_DIR/tests, a
# NAME that names nothing, and a run with no test fail too.
#
# Environment: CVM_TEST_JOBS (integration scripts run at once, default 2),
# CVM_TEST_TIMEOUT (seconds per script, default 1200; make check-asan: 2400),
# CVM_TEST_VERBOSE=1 (print every output in full), CVM_TEST_DIR (the folder
# holding unit/test_*.c and integration/t_*.sh, default tests; t_harness uses it).
set -u

if [ $# -lt 1 ]; then
	echo "usage: sh tests/run.sh BUILD_DIR [NAME...]" >&2
	exit 2
fi
build_arg=$1
shift
top=$(cd "$(dirname "$0")/.." && pwd)
if ! build=$(cd "$build_arg" 2>/dev/null && pwd); then
	echo "run.sh: no build folder '$build_arg'" >&2
	echo "0 passed, 1 failed"
	exit 1
fi
jobs=${CVM_TEST_JOBS:-2}
limit=${CVM_TEST_TIMEOUT:-1200}
verbose=${CVM_TEST_VERBOSE:-0}

work=$(mktemp -d "${TMPDIR:-/tmp}/cvm-run.XXXXXX")
trap 'rm -rf "$work"' EXIT
trap 'exit 130' INT TERM HUP PIPE
CVM_FIXTURE_CACHE=$work/fixtures
export CVM_FIXTURE_CACHE
CUDNNVM=$build/cudnnvm
export CUDNNVM
mkdir -p "$CVM_FIXTURE_CACHE"
cd "$top" || exit 1

selected() { # NAME: whether it was asked for (all when none was)
	[ -z "$filter" ] && return 0
	for f in $filter; do
		case $1 in
		"$f" | "$f".sh) return 0 ;;
		esac
	done
	return 1
}
filter=$*

tdir=${CVM_TEST_DIR:-$top/tests}

# The list of what to run: "kind name path", in order. A unit test's binary
# that is not there is one failure ("missing"), not a silent gap.
: >"$work/list"
for src in "$tdir"/unit/test_*.c; do
	[ -f "$src" ] || continue
	n=${src##*/}
	n=${n%.c}
	selected "$n" || continue
	t=$build/tests/$n
	if [ -f "$t" ] && [ -x "$t" ]; then
		echo "unit $n $t" >>"$work/list"
	else
		echo "missing $n $t" >>"$work/list"
	fi
done
for t in "$tdir"/integration/t_*.sh; do
	[ -f "$t" ] || continue
	n=${t##*/}
	selected "$n" && echo "integration $n $t" >>"$work/list"
done

missing_bin=0
[ -x "$CUDNNVM" ] || missing_bin=1

# A NAME that matched nothing is a mistake, not an empty success.
unknown=0
for f in $filter; do
	if ! awk -v f="$f" '$2 == f || $2 == f ".sh" { found = 1 } END { exit !found }' "$work/list"; then
		echo "run.sh: no unit test or script named '$f'" >&2
		unknown=$((unknown + 1))
	fi
done

# run_one KIND NAME PATH: output in $work/NAME.log, exit code in $work/NAME.rc
run_one() {
	if [ "$1" = unit ]; then
		timeout -k 10 "$limit" "$3" >"$work/$2.log" 2>&1 </dev/null
	else
		timeout -k 10 "$limit" bash "$3" >"$work/$2.log" 2>&1 </dev/null
	fi
	echo $? >"$work/$2.rc"
}

# Unit tests one after the other (fast), integration scripts $jobs at a time.
pids=
running=0
while read -r kind name path; do
	if [ "$kind" = integration ] && [ "$missing_bin" = 1 ]; then
		echo "not ok - $CUDNNVM is missing: $name not run" >"$work/$name.log"
		echo 1 >"$work/$name.rc"
		continue
	fi
	if [ "$kind" = missing ]; then
		echo "not ok - the unit test binary $path is missing (make O=... all-tests builds it)" >"$work/$name.log"
		echo 1 >"$work/$name.rc"
		continue
	fi
	if [ "$kind" = unit ]; then
		run_one "$kind" "$name" "$path"
		continue
	fi
	run_one "$kind" "$name" "$path" &
	pids="$pids $!"
	running=$((running + 1))
	if [ "$running" -ge "$jobs" ]; then
		# wait for the oldest
		# shellcheck disable=SC2086  # a list of pids
		set -- $pids
		wait "$1"
		shift
		pids=$*
		running=$((running - 1))
	fi
done <"$work/list"
for p in $pids; do
	wait "$p"
done

# Report, in the order of the list.
passed=0 failed=0 skipped=0
while read -r kind name path; do
	log=$work/$name.log
	rc=$(cat "$work/$name.rc" 2>/dev/null || echo 99)
	[ "$verbose" = 1 ] && sed -e "s|^|$name: |" "$log"
	# plan: the N of the last "1..N" line, -1 when there is none; late: results after it
	awk -v name="$name" -v counts="$work/$name.counts" '
		BEGIN { plan = -1 }
		/^not ok - / { f++; if (plan >= 0) late++; print "  " name ": " $0; diag = 1; nd = 0; next }
		/^ok - / { diag = 0; if (plan >= 0) late++; if ($0 ~ /# [Ss][Kk][Ii][Pp]/) s++; else p++; next }
		/^1\.\.[0-9]+$/ { diag = 0; plan = substr($0, 4) + 0; late = 0; next }
		/^#/ { if (diag && nd < 12) { print "  " name ": " $0; nd++ } next }
		{ diag = 0 }
		END { printf "%d %d %d %d %d\n", p, f, s, plan, late > counts }
	' "$log" >"$work/$name.fails"
	read -r p f s plan late <"$work/$name.counts"
	extra=0
	why=
	if [ "$kind" = missing ]; then
		: # its "not ok" line says it all
	elif [ "$rc" != 0 ] && { [ "$rc" != 1 ] || [ "$f" = 0 ]; }; then
		# exit 1 after reported failures is the normal "some failed";
		# anything else (a crash, a sanitizer's exit, a timeout) is one more
		extra=1
		case $rc in
		124 | 137) why="timed out after ${limit}s or was killed (exit $rc)" ;;
		*) why="exited with status $rc" ;;
		esac
	elif [ $((p + f + s)) = 0 ]; then
		extra=1
		why="printed no test results"
	elif [ "$plan" = -1 ]; then
		extra=1
		why="stopped early: no plan line '1..N' at its end (lib.sh's finish, unit.h's unit_done)"
	elif [ "$late" != 0 ] || [ "$plan" != $((p + f + s)) ]; then
		extra=1
		why="its plan says 1..$plan, but it printed $((p + f + s)) results ($late after the plan)"
	fi
	if [ "$f" = 0 ] && [ "$extra" = 0 ]; then
		printf 'PASS %s (%d ok%s)\n' "$name" "$p" "$([ "$s" != 0 ] && echo ", $s skipped")"
	else
		printf 'FAIL %s (%d ok, %d not ok%s)\n' "$name" "$p" $((f + extra)) "$([ "$s" != 0 ] && echo ", $s skipped")"
		cat "$work/$name.fails"
		if [ "$extra" = 1 ]; then
			echo "  $name: not ok - $why; last lines of its output:"
			tail -n 20 "$log" | sed -e 's/^/  |   /'
		fi
	fi
	passed=$((passed + p))
	failed=$((failed + f + extra))
	skipped=$((skipped + s))
done <"$work/list"

if [ ! -s "$work/list" ] || [ $((passed + failed + skipped)) = 0 ]; then
	echo "run.sh: no test ran" >&2
	failed=$((failed + 1))
fi
failed=$((failed + unknown))
if [ "$skipped" -gt 0 ]; then
	echo "$passed passed, $failed failed, $skipped skipped"
else
	echo "$passed passed, $failed failed"
fi
[ "$failed" -eq 0 ]
