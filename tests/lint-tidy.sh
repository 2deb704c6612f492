#!/bin/sh
# SPDX-License-Identifier: MIT
#
# usage: sh tests/lint-tidy.sh CACHE_DIR JOBS ANALYZER FILE... -- COMPILE_FLAGS...
#
# clang-tidy (.clang-tidy, its static analyzer in mode ANALYZER: shallow, which
# also follows each loop for 2 rounds instead of 4, or deep) on each FILE, JOBS
# at a time, every finding printed before it fails (exit 1). A file whose
# clang-tidy run was clean is not looked at again while nothing that could
# change the verdict changed: its key is the SHA-256 of clang-tidy's version,
# .clang-tidy, the mode, the flags, every header in the folders of the FILEs,
# the versions of the Debian packages whose headers they include, and the file
# itself (its NOLINTs included); CACHE_DIR/KEY marks a clean run. make clean
# (or removing CACHE_DIR) starts over.
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
case $mode in
shallow) depth="-Xclang -analyzer-config -Xclang mode=shallow -Xclang -analyzer-max-loop -Xclang 2" ;;
*) depth="-Xclang -analyzer-config -Xclang mode=$mode" ;;
esac
# shellcheck disable=SC2086 # file names without spaces
dirs=$(for f in $files; do dirname "$f"; done | sort -u)
# What every key shares: the tool, its configuration, the flags and the headers.
# shellcheck disable=SC2086
base=$( {
	clang-tidy --version
	clang --version
	cat .clang-tidy
	echo "$depth"
	printf '%s\n' "$@"
	for d in $dirs; do cat "$d"/*.h 2>/dev/null; done
	dpkg-query -W libc6-dev libarchive-dev libssl-dev libjansson-dev libcurl4-openssl-dev \
		liblzma-dev libslurm-dev 2>/dev/null
} | sha256sum | cut -c1-64)
export LINT_CACHE="$cache" LINT_BASE="$base" LINT_DEPTH="$depth"
# shellcheck disable=SC2016,SC2086 # the inner script's own variables; file names without spaces
printf '%s\n' $files | xargs -P"$jobs" -I{} sh -c '
	f=$1
	shift
	key=$({ echo "$LINT_BASE $f"; cat "$f"; } | sha256sum | cut -c1-64)
	[ -e "$LINT_CACHE/$key" ] && exit 0
	if out=$(clang-tidy --quiet "$f" -- "$@" $LINT_DEPTH 2>&1); then
		: >"$LINT_CACHE/$key"
	else
		printf "%s\n" "$out" | grep -v "warnings generated"
		echo "lint: clang-tidy: findings in $f"
		exit 1
	fi' sh {} "$@"
