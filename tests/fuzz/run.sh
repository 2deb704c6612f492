#!/bin/sh
# SPDX-License-Identifier: MIT
#
# usage: sh tests/fuzz/run.sh BIN SECONDS CORPUS_DIR REGRESSION_DIR [SEED_DIR...] [-- LIBFUZZER_OPTS...]
#
# Runs one libFuzzer target: first each file of REGRESSION_DIR once (inputs
# that once crashed it), then fuzzing for SECONDS (-max_total_time), new
# inputs going to CORPUS_DIR, starting from CORPUS_DIR and the SEED_DIRs.
# Prints one line, "NAME: N runs in S s (N exec/s), cov C, ft F, corpus U,
# R regressions replayed", and exits 0; on a crash, a leak or a timeout it
# prints the end of libFuzzer's report and where the input was saved, and
# exits 1. The whole log stays in CORPUS_DIR/../NAME.log.
set -u

if [ $# -lt 4 ]; then
	echo "usage: sh tests/fuzz/run.sh BIN SECONDS CORPUS_DIR REGRESSION_DIR [SEED_DIR...] [-- OPTS...]" >&2
	exit 2
fi
bin=$1 secs=$2 corpus=$3 regress=$4
shift 4
name=${bin##*/}
dirs=
while [ $# -gt 0 ] && [ "$1" != -- ]; do
	[ -d "$1" ] && dirs="$dirs $1"
	shift
done
[ $# -gt 0 ] && shift
mkdir -p "$corpus"
logdir=$(dirname "$corpus")
log=$logdir/$name.log
artifacts=$logdir/artifacts/$name/
mkdir -p "$artifacts"

fail() { # WHAT
	echo "$name: FAILED ($1); the log is $log" >&2
	grep -n 'ERROR: \|SUMMARY: \|fuzz: \|==ERROR\|Test unit written\|Base64' "$log" | tail -n 20 >&2
	echo "--- end of the log:" >&2
	tail -n 40 "$log" >&2
	exit 1
}

# Every saved regression input, once each: libFuzzer runs files given as arguments.
nreg=0
if [ -d "$regress" ]; then
	for f in "$regress"/*; do
		[ -f "$f" ] && nreg=$((nreg + 1))
	done
	if [ "$nreg" -gt 0 ]; then
		# shellcheck disable=SC2046
		"$bin" -runs=1 -timeout=30 "$@" $(find "$regress" -type f | sort) >"$log" 2>&1 ||
			fail "a regression input fails again"
	fi
fi

# shellcheck disable=SC2086
"$bin" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
	-artifact_prefix="$artifacts" "$@" "$corpus" $dirs >"$log" 2>&1 || fail "exit $?"

runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
time=$(sed -n 's/^Done [0-9]* runs in \([0-9]*\) second.*/\1/p' "$log" | tail -n 1)
rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -n 1)
last=$(grep -E '^#[0-9]+' "$log" | tail -n 1)
cov=$(printf '%s\n' "$last" | sed -n 's/.* cov: \([0-9]*\).*/\1/p')
ft=$(printf '%s\n' "$last" | sed -n 's/.* ft: \([0-9]*\).*/\1/p')
units=$(printf '%s\n' "$last" | sed -n 's/.* corp: \([0-9]*\)\/.*/\1/p')
[ -n "$runs" ] || fail "no final statistics"
echo "$name: $runs runs in ${time:-?} s (${rate:-?} exec/s), cov ${cov:-?}, ft ${ft:-?}, corpus ${units:-?}, $nreg regressions replayed"
