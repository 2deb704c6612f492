#!/bin/bash
# SPDX-License-Identifier: MIT
# Switching benchmark: 50 `cudnnvm use --no-smoke` between two installed
# versions of one major (8.9.7 <-> 8.9.6, the same sonames: ldconfig is not
# needed, and cudnnvm does not run it), against 50 switches by hand as the
# guides do them: `ln -sfn` of every header and library into the toolkit,
# then `ldconfig`. Both in the same throwaway root, one run; medians in ms.
# The clock is bash's $EPOCHREALTIME, read without starting a process (a
# `date` at each end would add its own start-up, ~5 ms here, to every switch);
# `/bin/true` timed the same way gives the machine's cost of starting any
# program, the floor of a switch done by a command.
# usage: bash bench/switch.sh [CUDNNVM] [N]
set -eu
B=${1:-build/cudnnvm}
N=${2:-50}
case $B in /*) ;; *) B=$PWD/$B ;; esac
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
R=$W/root
TK=$R/usr/local/cuda-11.8
mkdir -p "$TK/include" "$TK/lib64" "$R/etc/ld.so.conf.d" "$W/a" "$W/m"
printf '{"cuda":{"version":"11.8.0"}}\n' >"$TK/version.json"
: >"$R/etc/ld.so.conf"
export CUDNNVM_NO_PROGRESS=1
A7=$(sh tests/fixtures/mkcudnn.sh "$W/a" 8.9.7.29 11 --manifest "$W/m")
A6=$(sh tests/fixtures/mkcudnn.sh "$W/a" 8.9.6.50 11 --manifest "$W/m")
"$B" --root "$R" --manifests "$W/m" install 8.9.7 --cuda 11.8 --archive "$A7" >/dev/null
"$B" --root "$R" --manifests "$W/m" install 8.9.6 --cuda 11.8 --archive "$A6" >/dev/null
"$B" --root "$R" use 8.9.7 --cuda 11.8 --no-smoke --no-ldconfig >/dev/null

# The samples are $EPOCHREALTIME differences with the point taken out: microseconds.
median() { sort -n | awk '{a[NR]=$1} END {if (NR == 0) exit 1; m=(NR%2)?a[(NR+1)/2]:(a[NR/2]+a[NR/2+1])/2; printf "%.2f", m/1e3}'; }

: >"$W/tool"
: >"$W/true"
i=0
while [ $i -lt "$N" ]; do
	v=8.9.6
	[ $((i % 2)) = 1 ] && v=8.9.7
	t0=$EPOCHREALTIME
	"$B" --root "$R" use $v --cuda 11.8 --no-smoke >/dev/null
	t1=$EPOCHREALTIME
	echo $((${t1/[.,]/} - ${t0/[.,]/})) >>"$W/tool"
	t0=$EPOCHREALTIME
	/bin/true
	t1=$EPOCHREALTIME
	echo $((${t1/[.,]/} - ${t0/[.,]/})) >>"$W/true"
	i=$((i + 1))
done

# By hand, in a second toolkit folder of the same root, from the same store.
TK2=$R/usr/local/cuda-11.8-manual
mkdir -p "$TK2/include" "$TK2/lib64"
echo "$TK2/lib64" >"$R/etc/ld.so.conf.d/manual.conf"
: >"$W/manual"
i=0
while [ $i -lt "$N" ]; do
	id=8.9.6.50-cuda11-linux-x86_64
	[ $((i % 2)) = 1 ] && id=8.9.7.29-cuda11-linux-x86_64
	V=$R/opt/cudnnvm/versions/$id
	t0=$EPOCHREALTIME
	for f in "$V"/include/cudnn*; do ln -sfn "$f" "$TK2/include/"; done
	for f in "$V"/lib/libcudnn*; do ln -sfn "$f" "$TK2/lib64/"; done
	ldconfig -r "$R"
	t1=$EPOCHREALTIME
	echo $((${t1/[.,]/} - ${t0/[.,]/})) >>"$W/manual"
	i=$((i + 1))
done

tool=$(median <"$W/tool")
manual=$(median <"$W/manual")
floor=$(median <"$W/true")
echo "Switching (bench/switch.sh): $N switches 8.9.7 <-> 8.9.6, $(nproc) cores, $(date -u +%Y-%m-%d)"
echo
printf '| method | median ms per switch |\n| --- | ---: |\n'
printf '| cudnnvm use --no-smoke | %s |\n| ln -sfn + ldconfig (by hand) | %s |\n' "$tool" "$manual"
printf '| /bin/true (starting a program) | %s |\n' "$floor"
echo
awk -v a="$tool" -v b="$manual" 'BEGIN {
	printf "- use --no-smoke: median %.2f ms (target ≤ 10 ms): %s; cudnnvm / by hand = %.2f\n",
		a, a <= 10 ? "**met**" : "**not met**", a / b }'
