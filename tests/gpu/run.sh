#!/bin/sh
# SPDX-License-Identifier: MIT
# The GPU proof (make check-gpu, or on the lent GPU machine with a carried
# binary): packs the cuDNN of the nvidia-cudnn-cu13 wheel into an archive in
# NVIDIA's layout, installs it with --sha256 into a temporary --root whose
# toolkit is this machine's CUDA 13, activates it (the smoke test runs a real
# convolution), runs smoke --json, smoke --all-devices and doctor, then
# activates a deliberately broken version (a truncated sub-library) and
# shows exit 4 and the automatic rollback. Without a GPU it says so and
# exits 77: it never fakes a result.
set -u
# DRY_RUN=1 walks the steps on a machine without a GPU (the GPU part then reports skipped).
NAME=check-gpu
. tests/gpu/lib.sh
# The cuDNN to pack: the wheel's, or CUDNN_DIR (with include/ and lib/) and CUDNN_VERSION.
W=${CUDNN_DIR:-$(python3 -c 'import nvidia.cudnn as m; print(m.__path__[0])' 2>/dev/null)} || W=
[ -n "$W" ] || { echo "check-gpu: skipped: no nvidia-cudnn wheel in python3"; exit 77; }
V=${CUDNN_VERSION:-$(python3 -c 'import importlib.metadata as m; print(m.version("nvidia-cudnn-cu13"))')}

echo "== machine"
nvidia-smi --query-gpu=index,name,driver_version,compute_cap --format=csv,noheader 2>/dev/null
echo "cuDNN wheel: $V at $W; CUDA toolkit: $REAL ($CV)"

A=$WORK/cudnn-linux-x86_64-${V}_cuda13-archive.tar.xz
XZ_OPT='-0 -T0' sh tests/fixtures/pack-cudnn.sh "$W/include" "$W/lib" "$V" 13 "$A" >/dev/null
SHA=$(sha256sum "$A" | cut -d' ' -f1)
# A broken copy: the same files, one sub-library cut short, under another build number.
BV=$(echo "$V" | cut -d. -f1-3).99
mkdir -p "$WORK/broken/lib"
cp "$W"/lib/libcudnn*.so.9 "$WORK/broken/lib/"
truncate -s 65536 "$WORK/broken/lib/libcudnn_cnn.so.9"
BA=$WORK/cudnn-linux-x86_64-${BV}_cuda13-archive.tar.xz
XZ_OPT='-0 -T0' sh tests/fixtures/pack-cudnn.sh "$W/include" "$WORK/broken/lib" "$BV" 13 "$BA" >/dev/null
BSHA=$(sha256sum "$BA" | cut -d' ' -f1)

# The root: the machine's CUDA as its toolkit (headers copied, runtime linked).
R=$WORK/root
# cudart, and what cuDNN loads by name (cublasLt, nvrtc): use checks the closure first
toolkit_root "$R" "$REAL"/lib64/libcudart.so* "$REAL"/lib64/libcublas*.so* "$REAL"/lib64/libnvrtc*.so*

show "$B" --root "$R" install "$V" --cuda "$CV" --archive "$A" --sha256 "$SHA" || fail=1
show "$B" --root "$R" use "$V" --cuda "$CV" || fail=1
echo; echo "\$ cudnnvm --root R --json smoke --cuda $CV"
"$B" --root "$R" --json smoke --cuda "$CV" >"$OUT/smoke.json" || fail=1
cat "$OUT/smoke.json"
show "$B" --root "$R" smoke --cuda "$CV" --all-devices || fail=1
show "$B" --root "$R" install "$BV" --cuda "$CV" --archive "$BA" --sha256 "$BSHA" || fail=1
show "$B" --root "$R" use "$BV" --cuda "$CV"
broken_rc=$rc
"$B" --root "$R" --json current --cuda "$CV" >"$OUT/current.json"
show "$B" --root "$R" current --cuda "$CV"
show "$B" --root "$R" history --cuda "$CV"
show "$B" doctor
doctor_rc=$rc

echo
echo "== results"
python3 - "$OUT/smoke.json" "$OUT/current.json" "$broken_rc" "$doctor_rc" "$V" <<'PY'
import json, sys, subprocess, datetime
s = json.load(open(sys.argv[1])); cur = json.load(open(sys.argv[2]))
g = s.get("gpu", {})
try:
    gpu = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version,compute_cap",
                          "--format=csv,noheader"], capture_output=True, text=True).stdout.strip()
except OSError:
    gpu = "none"
rows = [
    ("date", datetime.datetime.utcnow().strftime("%Y-%m-%d %H:%M UTC")),
    ("GPU, driver, cc", gpu.splitlines()[0] if gpu else "?"),
    ("cuDNN (wheel)", sys.argv[5]),
    ("library loaded", s.get("library")),
    ("header / library / cudart", "%s / %s / %s" % (s.get("header_version"), s.get("library_version"), s.get("cudart_version"))),
    ("convolution", "N=2 C=3 H=W=32 K=8 3x3 pad 1, float NCHW"),
    ("algorithm", g.get("algo")),
    ("time (first call)", "%.3f ms" % g["ms"] if g.get("ms") is not None else "not run"),
    ("max abs error vs CPU", "%.3g" % g["max_abs_error"] if g.get("max_abs_error") is not None else "not run"),
    ("passed", g.get("passed")),
    ("sub-libraries mapped", len(s.get("loaded", []))),
    ("broken version: use exit", sys.argv[3] + " (4 expected)"),
    ("active after the rollback", cur["active"][0]["id"] if cur.get("active") else None),
    ("doctor exit (real system)", sys.argv[4]),
]
for k, v in rows:
    print("| %-28s | %s |" % (k, v))
PY
[ "$broken_rc" = 4 ] || fail=1
exit $fail
