#!/bin/sh
# SPDX-License-Identifier: MIT
# The GPU proofs in one device call: tests/gpu/run.sh, mixed.sh, closure.sh
# and frameworks.sh, each within LIMIT seconds (default 150), their whole
# output into $OUT/<name>.log, then each one's exit code and the last lines
# (its table) of each.
#   CUDNNVM=tests/gpu/bin/cudnnvm BENCH_CLOSURE=build/bench-closure sh tests/gpu/all.sh
set -u
OUT=${OUT:-$(mktemp -d)}
export PATH="/opt/torch/.venv/bin:$PATH"
for s in run mixed closure frameworks; do
	mkdir -p "$OUT/$s"
	t0=$(date +%s)
	OUT=$OUT/$s timeout "${LIMIT:-150}" sh "tests/gpu/$s.sh" >"$OUT/$s.log" 2>&1
	echo "$s.sh: exit $? in $(($(date +%s) - t0)) s" >>"$OUT/summary"
done
for s in run mixed closure frameworks; do
	echo "=== $s.sh"
	tail -n 22 "$OUT/$s.log"
done
cat "$OUT/summary"
