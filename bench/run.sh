#!/bin/sh
# SPDX-License-Identifier: MIT
#
# usage: sh bench/run.sh CUDNNVM [REPORT.md]
#
# Installs a cuDNN archive of realistic size with CUDNNVM and compares, run
# by run, with the manual method (`sha256sum A && tar -xJf A`) and with the
# floor (`xz -T0 -dc A > /dev/null`), for a single-block archive (xz -6, one
# thread, as NVIDIA's are) and a multi-block one (xz -6 -T0). Prints every
# run as it goes, then a markdown report with the medians (also written to
# REPORT.md when given), and last the switching benchmark (bench/switch.sh).
#
# The archive is packed (tests/fixtures/pack-cudnn.sh) from the real cuDNN of
# a CUDA toolkit when one is installed (BENCH_SOURCE=DIR, else the first
# /usr/local/cuda* with include/cudnn_version.h and lib*/libcudnn.so.*; the
# toolkit is only read), else generated (bench/gen-tree.py, BENCH_SIZE_MB of
# data that compresses like cuDNN's). Archives are kept in BENCH_CACHE
# (default /var/tmp/cudnnvm-bench): packing one takes minutes.
#
# Environment: BENCH_RUNS (runs of each method, default 3), BENCH_CACHE,
# BENCH_SOURCE, BENCH_GENERATE=1 (generate even when a cuDNN is there),
# BENCH_SIZE_MB (default 480), BENCH_KINDS (default "single multi": the
# archives to pack and measure), BENCH_WORK (where the trees
# are written, default /var/tmp), BENCH_PREPARE_ONLY=1 (build the archives
# and stop), BENCH_PLAIN=0 (leave out the --verify-first rows).
set -eu

die() {
	echo "bench: $*" >&2
	exit 1
}

[ $# -ge 1 ] || die "usage: sh bench/run.sh CUDNNVM [REPORT.md]"
cvm=$1
report=${2:-}
case $cvm in /*) ;; *) cvm=$PWD/$cvm ;; esac
[ -x "$cvm" ] || die "no binary '$cvm' (make first)"
top=$(cd "$(dirname "$0")/.." && pwd)
runs=${BENCH_RUNS:-3}
cache=${BENCH_CACHE:-/var/tmp/cudnnvm-bench}
size_mb=${BENCH_SIZE_MB:-480}
plain=${BENCH_PLAIN:-1}
kinds=${BENCH_KINDS:-single multi}
for t in xz tar sha256sum python3 /usr/bin/time; do
	command -v "$t" >/dev/null 2>&1 || die "needs $t"
done

# ------------------------------------------------------------ the source

find_source() { # prints "INCLUDE LIB" of a toolkit's cuDNN, or nothing
	for d in ${BENCH_SOURCE:-} /usr/local/cuda /usr/local/cuda-*; do
		[ -f "$d/include/cudnn_version.h" ] || continue
		for l in "$d/lib64" "$d/lib" "$d/targets/$(uname -m)-linux/lib"; do
			if ls "$l"/libcudnn.so.* >/dev/null 2>&1; then
				echo "$(cd "$d/include" && pwd -P) $(cd "$l" && pwd -P)"
				return 0
			fi
		done
	done
	return 0
}

mkdir -p "$cache"
src=$(find_source)
[ "${BENCH_GENERATE:-0}" = 1 ] && src=
if [ -n "$src" ]; then
	inc=${src% *}
	lib=${src#* }
	mmp=$(python3 - "$inc" <<'EOF'
import re, sys
t = open(sys.argv[1] + "/cudnn_version.h").read()
v = [re.search(r"#define CUDNN_%s\s+(\d+)" % k, t).group(1) for k in ("MAJOR", "MINOR", "PATCHLEVEL")]
print(".".join(v))
EOF
	)
	# the build number: from a pip dist-info next to the toolkit or (a wheel's
	# nvidia/cudnn) in its site-packages, else 0
	dist=$(ls -d "$inc"/../dist-info/nvidia_cudnn_cu*-"$mmp".*.dist-info \
		"$inc"/../../../nvidia_cudnn_cu*-"$mmp".*.dist-info 2>/dev/null | head -n 1)
	ver=$(echo "$dist" | sed -n 's/.*-\([0-9.]*\)\.dist-info$/\1/p')
	[ -n "$ver" ] || ver=$mmp.0
	cuda=$(sed -n 's/^#define CUDART_VERSION *\([0-9]*\).*/\1/p' "$inc/cuda_runtime_api.h" 2>/dev/null | head -n 1)
	if [ -n "$cuda" ]; then cuda=$((cuda / 1000)); else cuda=$(basename "$(dirname "$inc")" | sed -n 's/^cuda-\([0-9]*\).*/\1/p'); fi
	[ -n "$cuda" ] || cuda=$(basename "$dist" | sed -n 's/^nvidia_cudnn_cu\([0-9]*\)-.*/\1/p')
	[ -n "$cuda" ] || cuda=12
	# the key changes when the libraries do
	key=real-$ver-cuda$cuda-$(ls -lL "$lib"/libcudnn*.so.* "$inc"/cudnn*.h | sha256sum | cut -c1-12)
	what="the real cuDNN $ver of $(dirname "$inc") (packed into NVIDIA's layout)"
else
	ver=9.19.0.56
	cuda=13
	key=gen-$size_mb-v1
	what="a generated cuDNN $ver tree of $size_mb MB (no cuDNN found in a toolkit)"
fi
mmp=$(echo "$ver" | cut -d. -f1-3)
name=cudnn-linux-$(uname -m | sed 's/aarch64/sbsa/')-${ver}_cuda$cuda-archive.tar.xz

pack() { # XZ_OPT OUT
	if [ -n "$src" ]; then
		XZ_OPT=$1 sh "$top/tests/fixtures/pack-cudnn.sh" "$inc" "$lib" "$ver" "$cuda" "$2" >/dev/null
	else
		tree=$(mktemp -d "$cache/tree.XXXXXX")
		python3 "$top/bench/gen-tree.py" "$top/tests/fixtures/mkcudnn.sh" "$tree" "$ver" "$cuda" "$size_mb"
		(cd "$tree" && XZ_OPT=$1 tar --sort=name --owner=0 --group=0 --numeric-owner \
			--mtime=@1700000000 -cJf "$2" "${name%.tar.xz}")
		rm -rf "$tree"
	fi
}

blocks() { xz --robot -l "$1" | awk '$1 == "totals" { print $3 }'; }

for kind in $kinds; do
	a=$cache/$key/$kind/$name
	if [ ! -f "$a" ]; then
		mkdir -p "$(dirname "$a")"
		case $kind in
		single) opt='-6 -T1' ;;
		multi) opt='-6 -T0' ;;
		esac
		echo "bench: packing $kind-block archive (XZ_OPT='$opt'), this takes minutes: $a" >&2
		t0=$(date +%s)
		pack "$opt" "$a.tmp"
		mv "$a.tmp" "$a"
		echo "bench: packed in $(($(date +%s) - t0)) s" >&2
	fi
done
[ "${BENCH_PREPARE_ONLY:-0}" = 1 ] && exit 0

# ------------------------------------------------------------ measuring

work=$(mktemp -d "${BENCH_WORK:-/var/tmp}/cudnnvm-bench-run.XXXXXX")
trap 'exit 130' INT TERM HUP
results=$work/results # kind method run wall rss rss_sum commit_ms

# timed OUTFILE CMD...: runs CMD under /usr/bin/time; "wall maxrss_kib" into OUTFILE.time
timed() {
	out=$1
	shift
	sync
	/usr/bin/time -f '%e %M' -o "$out.time" "$@" >"$out.out" 2>"$out.err" || {
		echo "bench: failed: $*" >&2
		cat "$out.err" >&2
		exit 1
	}
}

hr() { printf '%s\n' "------------------------------------------------------------------------"; }

# The single-block archive also comes from a mirror on 127.0.0.1 (httpd.py:
# once throttled to the pace at which xz decodes it, once unthrottled) and as
# a store bundle exported from an install of it.
net_setup() { # ARCHIVE SHA256
	mir=$work/mirror
	mkdir -p "$mir/cudnn/linux-x86_64" "$work/manifests"
	# a hard link (or a copy): httpd.py serves nothing that resolves outside its folder
	ln "$1" "$mir/cudnn/linux-x86_64/$name" 2>/dev/null || cp "$1" "$mir/cudnn/linux-x86_64/$name"
	python3 - "$work/manifests/redistrib_$mmp.json" "$name" "$2" "$(stat -L -c %s "$1")" "$ver" "$cuda" <<'PY'
import json, sys
path, name, sha, size, ver, cuda = sys.argv[1:7]
label = ".".join(ver.split(".")[:3])
json.dump({"release_date": "2026-01-01", "release_label": label, "release_product": "cudnn",
           "cudnn": {"name": "NVIDIA CUDA Deep Neural Network library", "license": "cudnn",
                     "license_path": "cudnn/LICENSE.txt", "version": ver, "cuda_variant": [cuda],
                     "linux-x86_64": {"cuda" + cuda: {"relative_path": "cudnn/linux-x86_64/" + name,
                                                       "sha256": sha, "md5": "", "size": size}}}},
          open(path, "w"))
PY
	echo range >"$mir/.mode"
	python3 "$top/tests/fixtures/httpd.py" "$mir" "$work/port" 7200 &
	httpd=$!
	i=0
	while [ ! -s "$work/port" ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i + 1)); done
	url=http://127.0.0.1:$(cat "$work/port")
	mkdir -p "$work/broot"
	"$cvm" --root "$work/broot" install "$mmp" --cuda "$cuda" --archive "$1" --sha256 "$2" >/dev/null
	bundle=$work/bundle.tar.zst
	"$cvm" --root "$work/broot" export "$mmp" "$bundle" >/dev/null
	bh=$(sha256sum "$bundle" | cut -d' ' -f1)
	rm -rf "$work/broot"
}

# cvm_run METHOD ARGS...: times one cudnnvm install into a fresh root and records it
cvm_run() {
	method=$1
	shift
	mkdir -p "$work/root"
	timed "$work/$method" "$cvm" --root "$work/root" -v "$@"
	read -r w m <"$work/$method.time"
	sum=$(sed -n -e 's/.*peak memory: \([0-9]*\) MiB in this process, \([0-9]*\) MiB in the extraction process.*/\1 \2/p' \
		-e 's/.*peak memory: \([0-9]*\) MiB$/\1 0/p' "$work/$method.err" | awk '{ print ($1 + $2) * 1024 }')
	commit=$(sed -n 's/.*committed in \([0-9]*\) ms.*/\1/p' "$work/$method.err")
	echo "$kind $method $i $w $m ${sum:-$m} ${commit:--}" >>"$results"
	rm -rf "$work/root"
}

load0=$(cut -d' ' -f1-3 /proc/loadavg)
httpd=
trap '[ -n "$httpd" ] && kill "$httpd" 2>/dev/null; rm -rf "$work"' EXIT
for kind in $kinds; do
	a=$cache/$key/$kind/$name
	h=$(sha256sum "$a" | cut -d' ' -f1)
	if [ "$kind" = single ]; then
		net_setup "$a" "$h"
		# the decode profile, for the least time any pipeline could take (bench/bound.py)
		if [ ! -s "$a.profile" ]; then
			python3 "$top/bench/bound.py" "$a" >"$a.profile.tmp"
			mv "$a.profile.tmp" "$a.profile"
		fi
		profile=$a.profile
	fi
	hr
	printf '%s-block archive: %s (%s bytes, %s blocks)\n' "$kind" "$a" "$(stat -c %s "$a")" "$(blocks "$a")"
	cat "$a" >/dev/null # in the page cache for every method alike
	if [ "$kind" = single ]; then
		# the mirror's pace: the archive in the time xz -dc takes, the median of 3
		# before the runs (one run's time, slow or fast by chance, skewed it)
		for _ in 1 2 3; do
			timed "$work/calib" sh -c 'exec xz -T0 -dc "$1" >/dev/null' sh "$a"
			cut -d' ' -f1 "$work/calib.time"
		done >"$work/calib"
		pace=$(sort -n "$work/calib" | sed -n 2p)
		rate=$(echo "$(stat -L -c %s "$a") $pace" | awk '{ printf "%d", $1 / $2 }')
		printf '  mirror pace: %s bytes/s (xz -dc: %s s, median of 3)\n' "$rate" "$pace"
	fi
	i=1
	while [ "$i" -le "$runs" ]; do
		timed "$work/floor" sh -c 'exec xz -T0 -dc "$1" >/dev/null' sh "$a"
		read -r w m <"$work/floor.time"
		echo "$kind floor $i $w $m $m -" >>"$results"
		f=$w

		mkdir -p "$work/manual"
		timed "$work/manual" sh -c 'sha256sum "$1" >/dev/null && tar -xJf "$1" -C "$2"' sh "$a" "$work/manual"
		read -r w m <"$work/manual.time"
		echo "$kind manual $i $w $m $m -" >>"$results"
		rm -rf "$work/manual"
		mm=$w

		for method in cudnnvm plain; do
			[ "$method" = plain ] && [ "$plain" != 1 ] && continue
			flag=
			[ "$method" = plain ] && flag=--verify-first
			mkdir -p "$work/root"
			timed "$work/$method" "$cvm" --root "$work/root" -v install "$mmp" --cuda "$cuda" \
				--archive "$a" --sha256 "$h" $flag
			read -r w m <"$work/$method.time"
			sum=$(sed -n -e 's/.*peak memory: \([0-9]*\) MiB in this process, \([0-9]*\) MiB in the extraction process.*/\1 \2/p' \
				-e 's/.*peak memory: \([0-9]*\) MiB$/\1 0/p' "$work/$method.err" | awk '{ print ($1 + $2) * 1024 }')
			commit=$(sed -n 's/.*committed in \([0-9]*\) ms.*/\1/p' "$work/$method.err")
			echo "$kind $method $i $w $m ${sum:-$m} ${commit:--}" >>"$results"
			[ "$method" = cudnnvm ] && c=$w && cm=$m
			if [ "$method" = cudnnvm ] && [ "$i" = 1 ]; then
				grep -E 'extracting while|verifying first|extracted' "$work/$method.err" | sed -e 's/^/    /'
			fi
			rm -rf "$work/root"
		done
		printf '  run %s: floor %6.2f s | manual %6.2f s | cudnnvm %6.2f s (%s MiB)  = %.2f x manual, %.2f x floor\n' \
			"$i" "$f" "$mm" "$c" "$((cm / 1024))" "$(echo "$c $mm" | awk '{ print $1 / $2 }')" \
			"$(echo "$c $f" | awk '{ print $1 / $2 }')"
		if [ "$kind" = single ]; then
			echo "rate $rate" >"$mir/.mode"
			timed "$work/download" curl -sf -o /dev/null "$url/cudnn/linux-x86_64/$name"
			read -r w m <"$work/download.time"
			echo "$kind download $i $w $m $m -" >>"$results"
			d=$w
			cvm_run net --manifests "$work/manifests" --mirror "$url" install "$mmp" --cuda "$cuda"
			n=$w
			echo range >"$mir/.mode"
			cvm_run netfast --manifests "$work/manifests" --mirror "$url" install "$mmp" --cuda "$cuda"
			nf=$w
			cvm_run bundle install --bundle "$bundle" --sha256 "$bh"
			printf '         download alone %6.2f s | install from it %6.2f s = %.2f x max | unthrottled %6.2f s = %.2f x floor | bundle %6.2f s = %.2f x install\n' \
				"$d" "$n" "$(echo "$n $d $f" | awk '{ m = $2 > $3 ? $2 : $3; print $1 / m }')" \
				"$nf" "$(echo "$nf $f" | awk '{ print $1 / $2 }')" "$w" "$(echo "$w $c" | awk '{ print $1 / $2 }')"
		fi
		i=$((i + 1))
	done
done
load1=$(cut -d' ' -f1-3 /proc/loadavg)
hr

# ------------------------------------------------------------ the report

python3 - "$results" "$what" "$load0" "$load1" "$runs" "$cvm" "${profile:-}" <<'EOF' | tee "$work/report.md"
import os, platform, statistics, subprocess, sys, time
path, what, load0, load1, runs, cvm, profile = sys.argv[1:8]
rows = [l.split() for l in open(path)]
def med(kind, method, col):
    v = [float(r[col]) for r in rows if r[0] == kind and r[1] == method and r[col] != "-"]
    return statistics.median(v) if v else None
def rng(kind, method):
    v = [float(r[3]) for r in rows if r[0] == kind and r[1] == method]
    return "%.2f–%.2f" % (min(v), max(v)) if v else ""
cpu = "?"
for l in open("/proc/cpuinfo"):
    if l.startswith("model name"):
        cpu = l.split(":", 1)[1].strip()
        break
mem = int(open("/proc/meminfo").readline().split()[1]) // 1024
xz = subprocess.run(["xz", "--version"], capture_output=True, text=True).stdout.splitlines()[0]
fs = subprocess.run(["df", "-T", os.environ.get("BENCH_WORK", "/var/tmp")], capture_output=True, text=True).stdout.splitlines()[-1].split()[1]
print("## cudnnvm install benchmark")
print()
print("- date: %s" % time.strftime("%Y-%m-%d %H:%M %Z"))
print("- machine: %s, %d CPUs online, %d MiB RAM, Linux %s, %s on %s" % (cpu, os.cpu_count(), mem, platform.release(), xz, fs))
print("- archive: %s" % what)
print("- %s runs of each method, interleaved; medians; page cache warm; `sync` before each run; load average %s before, %s after" % (runs, load0, load1))
print("- cudnnvm: `cudnnvm -v install --archive A --sha256 H` into a fresh store (default: decoding in a confined child while the parent hashes, `--jobs` = CPUs); `--verify-first`: the plain path (hash, then decode)")
print("- peak RSS: the largest process as `/usr/bin/time` reports it; for cudnnvm also the sum of its two processes' peaks (which counts their shared pages twice)")
print()
print("| archive | method | median wall (s) | range (s) | vs manual | vs floor | peak RSS (MiB) | RSS parent+child (MiB) | commit (ms) |")
print("|---|---|---:|---:|---:|---:|---:|---:|---:|")
names = {"floor": "`xz -T0 -dc > /dev/null` (floor)", "manual": "`sha256sum && tar -xJf` (manual)",
         "cudnnvm": "cudnnvm install", "plain": "cudnnvm install --verify-first",
         "download": "`curl` from the throttled mirror (download alone)",
         "net": "cudnnvm install from the throttled mirror",
         "netfast": "cudnnvm install from the unthrottled mirror",
         "bundle": "cudnnvm install --bundle (tar.zst)"}
methods = ("floor", "manual", "cudnnvm", "plain", "download", "net", "netfast", "bundle")
res = {}
for kind in ("single", "multi"):
    f, m = med(kind, "floor", 3), med(kind, "manual", 3)
    if f is None:
        continue
    for method in methods:
        w = med(kind, method, 3)
        if w is None:
            continue
        res[(kind, method)] = w
        rss, rsum, commit = med(kind, method, 4), med(kind, method, 5), med(kind, method, 6)
        print("| %s-block | %s | %.2f | %s | %.2f | %.2f | %.0f | %s | %s |" % (
            kind, names[method], w, rng(kind, method), w / m, w / f, rss / 1024,
            "%.0f" % (rsum / 1024) if method in ("cudnnvm", "plain", "net", "netfast", "bundle") else "",
            "%.0f" % commit if commit is not None else ""))
print()
def verdict(ok):
    return "**met**" if ok else "**not met**"
print("Targets (medians):")
print()
if ("multi", "cudnnvm") in res:
    r1 = res[("multi", "cudnnvm")] / res[("multi", "manual")]
    print("- multi-block: install / manual = %.2f (target ≤ 0.55): %s" % (r1, verdict(r1 <= 0.55)))
if ("single", "cudnnvm") in res:
    r2 = res[("single", "cudnnvm")] / res[("single", "floor")]
    print("- single-block: install / floor = %.2f (target ≤ 1.1): %s" % (r2, verdict(r2 <= 1.1)))
if ("single", "net") in res:
    base = max(res[("single", "download")], res[("single", "floor")])
    r3 = res[("single", "net")] / base
    print("- from a mirror throttled to xz's pace: install / max(download alone, floor) = %.2f "
          "(target ≤ 1.10): %s" % (r3, verdict(r3 <= 1.10)))
    if profile:
        # no pipeline can do better than this (bench/bound.py)
        prof = [tuple(map(float, l.split())) for l in open(profile)]
        d, f = res[("single", "download")], res[("single", "floor")]
        bound = max(d * p + f * (1 - t) for p, t in prof)
        print("  - the least any decoder following that download can take, from this archive's "
              "decode profile (bench/bound.py): %.2f s = %.2f x max(download alone, floor); "
              "the install is %.2f x that bound" % (bound, bound / base, res[("single", "net")] / bound))
    r4 = res[("single", "netfast")] / res[("single", "floor")]
    print("- from an unthrottled mirror: install / floor = %.2f (target ≤ 1.10): %s" % (r4, verdict(r4 <= 1.10)))
    r5 = res[("single", "bundle")] / res[("single", "cudnnvm")]
    print("- a store bundle (tar.zst) against the xz archive: install --bundle / install = %.2f "
          "(target ≤ 0.2): %s" % (r5, verdict(r5 <= 0.2)))
inst = ("cudnnvm", "net", "netfast")
rss = max(float(r[4]) for r in rows if r[1] in inst) / 1024
rsum = max(float(r[5]) for r in rows if r[1] in inst) / 1024
print("- peak RSS of the install, largest process, worst run: %.0f MiB (target ≤ 64 MiB): %s; "
      "both processes' peaks added: %.0f MiB (target ≤ 64 MiB): %s" % (rss, verdict(rss <= 64), rsum, verdict(rsum <= 64)))
EOF

# `use` between two versions, in the same run (bench/switch.sh)
echo | tee -a "$work/report.md"
(cd "$top" && bash bench/switch.sh "$cvm" 50) | tee -a "$work/report.md"
if [ -n "$report" ]; then
	cp "$work/report.md" "$report"
	echo "bench: report written to $report" >&2
fi
