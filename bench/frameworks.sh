#!/bin/sh
# SPDX-License-Identifier: MIT
#
# usage: sh bench/frameworks.sh CUDNNVM
#
# How long reading a large Python environment takes (lib/frameworks.c): a
# generated venv of BENCH_DISTS (default 2000) distributions, each
# NAME-VERSION.dist-info/METADATA as pip writes it (headers, a few
# Requires-Dist lines, a description of some KiB), one of them torch with its
# nvidia-cudnn-cu13 pin and the wheel beside it. It times `doctor --python`
# on it and on the same venv with torch alone, BENCH_RUNS times each (default
# 5), under an empty --root, and prints the medians and their difference (the
# reading of the other distributions), which must stay under 100 ms (exit 1
# above). Cheap: a second or two.
set -eu
[ $# -ge 1 ] || { echo "usage: sh bench/frameworks.sh CUDNNVM" >&2; exit 2; }
cvm=$1
case $cvm in /*) ;; *) cvm=$PWD/$cvm ;; esac
runs=${BENCH_RUNS:-5}
dists=${BENCH_DISTS:-2000}
work=$(mktemp -d "${TMPDIR:-/tmp}/cvm-bench-fw.XXXXXX")
trap 'rm -rf "$work"' EXIT

python3 - "$work" "$dists" <<'PY'
import os, sys
work, n = sys.argv[1], int(sys.argv[2])
desc = ("A package of the benchmark. " * 40 + "\n") * 8
for root, count in (("big", n), ("small", 1)):
    site = os.path.join(work, root, "opt/venv/lib/python3.12/site-packages")
    os.makedirs(os.path.join(work, root, "opt/venv/bin"))
    open(os.path.join(work, root, "opt/venv/bin/python3"), "w").close()
    os.makedirs(os.path.join(site, "nvidia/cudnn/lib"))
    open(os.path.join(site, "nvidia/cudnn/lib/libcudnn.so.9"), "w").close()
    w = os.path.join(site, "nvidia_cudnn_cu13-9.19.0.56.dist-info")
    os.makedirs(w)
    open(os.path.join(w, "METADATA"), "w").write("Metadata-Version: 2.1\nName: nvidia-cudnn-cu13\nVersion: 9.19.0.56\n\n")
    t = os.path.join(site, "torch-2.11.0.dist-info")
    os.makedirs(t)
    open(os.path.join(t, "METADATA"), "w").write(
        "Metadata-Version: 2.1\nName: torch\nVersion: 2.11.0\nRequires-Dist: filelock\n"
        "Requires-Dist: nvidia-cudnn-cu13==9.19.0.56; platform_system == \"Linux\"\n\n" + desc)
    for i in range(count - 1):
        d = os.path.join(site, "package_%04d-1.%d.0.dist-info" % (i, i % 50))
        os.makedirs(d)
        with open(os.path.join(d, "METADATA"), "w") as f:
            f.write("Metadata-Version: 2.1\nName: package-%04d\nVersion: 1.%d.0\n"
                    "Summary: a generated distribution\nLicense: MIT\n"
                    "Requires-Python: >=3.9\nRequires-Dist: numpy>=1.24\n"
                    "Requires-Dist: requests; extra == \"net\"\n"
                    "Requires-Dist: typing-extensions; python_version < \"3.11\"\n\n" % (i, i % 50))
            f.write(desc)
        for extra in ("RECORD", "WHEEL", "INSTALLER"):
            open(os.path.join(d, extra), "w").write("x\n")
PY

median_ms() { # ROOT: the median wall time of doctor --python, in ms
	i=0
	: >"$work/times"
	while [ "$i" -lt "$runs" ]; do
		t0=$(date +%s%N)
		"$cvm" --root "$1" --json doctor --python /opt/venv/bin/python3 >"$work/out.json" 2>/dev/null || true
		t1=$(date +%s%N)
		echo $(((t1 - t0) / 1000)) >>"$work/times"
		i=$((i + 1))
	done
	sort -n "$work/times" | awk '{ a[NR] = $1 } END { printf "%.1f", a[int((NR + 1) / 2)] / 1000 }'
}
big=$(median_ms "$work/big")
grep -q '"nvidia-cudnn-cu13==9.19.0.56"' "$work/out.json" || { echo "bench: doctor did not report torch's pin" >&2; exit 1; }
small=$(median_ms "$work/small")
diff=$(echo "$big $small" | awk '{ printf "%.1f", $1 - $2 }')
echo "| frameworks: doctor --python, $dists distributions | $big ms |"
echo "| frameworks: doctor --python, torch alone | $small ms |"
echo "| frameworks: reading the other $((dists - 1)) (the difference; bound 100 ms) | $diff ms |"
echo "$diff" | awk '{ exit !($1 < 100) }' || { echo "bench: over 100 ms" >&2; exit 1; }
