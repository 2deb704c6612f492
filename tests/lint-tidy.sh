#!/bin/sh
# SPDX-License-Identifier: MIT
#
# usage: sh tests/lint-tidy.sh CACHE_DIR JOBS ANALYZER FILE... -- COMPILE_FLAGS...
#
# clang-tidy (.clang-tidy, its static analyzer in mode ANALYZER: shallow or
# deep) on each FILE, JOBS at a time, every finding
# printed before it fails (exit 1). A file whose clang-tidy run was clean is
# not looked at again while nothing that could change the verdict changed:
# its key is the SHA-256 of clang-tidy's version, .clang-tidy, the mode, the
# flags and the file preprocessed with its comments kept (so every header it includes
# and every NOLINT count); CACHE_DIR/KEY marks a clean run. make clean (or
# removing CACHE_DIR) starts over.
set -u
if [ $# -lt 4 ]; then
	echo "usage: sh tests/lint-tidy.sh CACHE_DIR JOBS ANALYZER FILE... -- COMPILE_FLAGS..." >&2
	exit 2
fi
cache=$1 jobs=$2 mode=$3
shift 3
files=
while [ $# -gt 0 ] && [ "$1" != -- ]; do
	files="$files $1"
	shift
done
[ $# -gt 0 ] && shift
mkdir -p "$cache" || exit 1
# What every key shares: the tool, its configuration and the flags.
base=$( { clang-tidy --version; clang --version; cat .clang-tidy; echo "$mode"; printf '%s\n' "$@"; } | sha256sum | cut -c1-64)
export LINT_CACHE="$cache" LINT_BASE="$base" LINT_MODE="$mode"
# shellcheck disable=SC2016,SC2086 # the inner script's own variables; file names without spaces
printf '%s\n' $files | xargs -P"$jobs" -I{} sh -c '
	f=$1
	shift
	# No key (no mark kept) when the preprocessor fails: clang-tidy then says why.
	key=
	if pre=$(clang -E -C "$@" "$f" 2>/dev/null) && [ -n "$pre" ]; then
		key=$(printf "%s\n%s\n" "$LINT_BASE $f" "$pre" | sha256sum | cut -c1-64)
		[ -e "$LINT_CACHE/$key" ] && exit 0
	fi
	if out=$(clang-tidy --quiet "$f" -- "$@" -Xclang -analyzer-config -Xclang "mode=$LINT_MODE" 2>&1); then
		[ -z "$key" ] || : >"$LINT_CACHE/$key"
	else
		printf "%s\n" "$out" | grep -v "warnings generated"
		echo "lint: clang-tidy: findings in $f"
		exit 1
	fi' sh {} "$@"
