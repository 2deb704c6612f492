#!/bin/sh
# SPDX-License-Identifier: MIT
# Framework truth on the GPU machine (run by hand with a carried binary, as
# tests/gpu/run.sh): with the real PyTorch in PY (default
# /opt/torch/.venv/bin/python, built against cuDNN 9.19, its nvidia-cudnn-cu13
# wheel beside it) and the system's cuDNN 9.14 (NVIDIA's debs, in
# /usr/lib/<arch>-linux-gnu), it
#   1. runs doctor --python PY: torch's pin and the wheel copy it loads;
#   2. installs the system's 9.14 and the wheel's 9.19 (packed in NVIDIA's
#      layout, tests/fixtures/pack-cudnn.sh) into a temporary --root/store;
#   3. exec 9.14 -- python: refused (exit 1) before PyTorch runs;
#   4. exec 9.14 --force -- python: PyTorch itself then fails, which is what
#      the refusal spares;
#   5. exec 9.19 -- python: runs, a convolution through cuDNN;
# and ends with a markdown table for tests/gpu/RESULTS.md.
# Environment: CUDNNVM (the binary), PY, SYS_LIB (the system's cuDNN folder),
# SYS_INC (its headers), SYS_VERSION (its 4-part version), CUDA_HOME.
# DRY_RUN=1 walks it without a GPU. Exit 0 when every expectation held, 1
# otherwise, 77 without a GPU.
set -u
PY=${PY:-/opt/torch/.venv/bin/python}
ARCH=$(uname -m)
SYS_LIB=${SYS_LIB:-/usr/lib/$ARCH-linux-gnu}
NAME=frameworks.sh
. tests/gpu/lib.sh
[ -x "$PY" ] || { echo "frameworks.sh: no Python at $PY (set PY)"; exit 1; }
PREFIX=$(cd "$(dirname "$PY")/.." && pwd)
W=
for d in "$PREFIX"/lib/python3*/site-packages/nvidia/cudnn; do [ -d "$d/lib" ] && W=$d && break; done
[ -n "$W" ] || { echo "frameworks.sh: no nvidia/cudnn wheel under $PREFIX"; exit 1; }
WV=
for d in "$W"/../../nvidia_cudnn_cu*.dist-info; do [ -d "$d" ] && WV=$(basename "$d" .dist-info) && WV=${WV##*-} && break; done
case $WV in *.*.*.*) ;; *) echo "frameworks.sh: cannot read the wheel's version from its dist-info"; exit 1 ;; esac
# The system's cuDNN: its version from dpkg (or SYS_VERSION), its headers as cudnn*.h.
SV=${SYS_VERSION:-$(dpkg-query -W -f '${Version}' "libcudnn9-cuda-13" 2>/dev/null | cut -d- -f1)}
case $SV in *.*.*.*) ;; *) echo "frameworks.sh: cannot read the system cuDNN's version (set SYS_VERSION)"; exit 1 ;; esac
INC=${SYS_INC:-}
if [ -z "$INC" ]; then
	INC=$WORK/sysinc
	mkdir -p "$INC"
	# The debs keep cudnn*_v9.h in /usr/include/<arch>-linux-gnu (alternatives link the plain names).
	for f in /usr/include/"$ARCH"-linux-gnu/cudnn*_v9.h; do
		[ -e "$f" ] && cp "$f" "$INC/$(basename "$f" | sed 's/_v9\.h$/.h/')"
	done
	[ -e "$INC/cudnn_version.h" ] || cp /usr/include/cudnn*.h "$INC/" 2>/dev/null
fi
echo "== machine"
nvidia-smi --query-gpu=index,name,driver_version,compute_cap --format=csv,noheader 2>&1
echo "Python $PY (env $PREFIX); wheel cuDNN $WV at $W; system cuDNN $SV in $SYS_LIB; CUDA $REAL ($CV)"

# 1. doctor --python, on the real system.
"$B" --json doctor --python "$PY" >"$OUT/doctor.json" 2>"$OUT/doctor.err"
doctor_rc=$?
echo
echo "== doctor --python $PY (exit $doctor_rc)"
cat "$OUT/doctor.err"
python3 - "$OUT/doctor.json" "$W/lib/libcudnn.so.9" "$WV" >"$OUT/doctor.check" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
t = [f for f in d.get("frameworks", []) if f["name"] == "torch"]
print(json.dumps(t, indent=1))
ok = (len(t) == 1 and t[0]["requires"].startswith("nvidia-cudnn-cu13==") and t[0]["loads"]
      and t[0]["loads"]["path"] == sys.argv[2] and t[0]["loads"]["version"] == sys.argv[3]
      and t[0]["problem"] is None)
print("ok" if ok else "UNEXPECTED")
PY
cat "$OUT/doctor.check"
grep -qx ok "$OUT/doctor.check" || fail=1
torch_requires=$(python3 -c 'import json,sys; t=[f for f in json.load(open(sys.argv[1]))["frameworks"] if f["name"]=="torch"]; print(t[0]["requires"] if t else "?")' "$OUT/doctor.json" 2>/dev/null)

# 2. The two versions into a temporary root whose toolkit is this machine's CUDA.
R=$WORK/root
toolkit_root "$R" "$REAL"/lib64/libcudart.so*
SA=$WORK/cudnn-linux-$ARCH-${SV}_cuda13-archive.tar.xz
WA=$WORK/cudnn-linux-$ARCH-${WV}_cuda13-archive.tar.xz
XZ_OPT='-0 -T0' sh tests/fixtures/pack-cudnn.sh "$INC" "$SYS_LIB" "$SV" 13 "$SA" >/dev/null || fail=1
XZ_OPT='-0 -T0' sh tests/fixtures/pack-cudnn.sh "$W/include" "$W/lib" "$WV" 13 "$WA" >/dev/null || fail=1
step "install the system's $SV" "$B" --root "$R" install "$SV" --cuda "$CV" --archive "$SA" --sha256 "$(sha256sum "$SA" | cut -d' ' -f1)"
expect 0 "install the system's $SV"
step "install the wheel's $WV" "$B" --root "$R" install "$WV" --cuda "$CV" --archive "$WA" --sha256 "$(sha256sum "$WA" | cut -d' ' -f1)"
expect 0 "install the wheel's $WV"

PROG='import torch; x = torch.randn(1, 3, 16, 16, device="cuda"); w = torch.randn(4, 3, 3, 3, device="cuda"); y = torch.nn.functional.conv2d(x, w); torch.cuda.synchronize(); print("cudnn", torch.backends.cudnn.version(), "conv", tuple(y.shape))'
SREL=$(echo "$SV" | cut -d. -f1-2)
WREL=$(echo "$WV" | cut -d. -f1-2)
# 3. Refused before PyTorch runs.
step "exec $SREL -- python (refused)" "$B" --root "$R" exec "$SREL" --cuda "$CV" -- "$PY" -c "$PROG"
expect 1 "exec $SREL -- python (refused)"
refused_rc=$rc
refused_msg=$(grep -m1 'cudnnvm: error:' "$OUT/step.out" | sed 's/^cudnnvm: error: //')
grep -q '^cudnn ' "$OUT/step.out" && { echo "UNEXPECTED: PyTorch ran"; fail=1; }
# 4. What the refusal spares: PyTorch's own failure.
step "exec $SREL --force -- python (PyTorch's own check)" "$B" --root "$R" exec "$SREL" --cuda "$CV" --force -- "$PY" -c "$PROG"
forced_rc=$rc
forced_msg=$(grep -m1 'Error: ' "$OUT/step.out" || grep -m1 -i 'incompatib' "$OUT/step.out")
forced_msg=$(printf '%s' "$forced_msg" | cut -c1-200)
# 5. The version it was built with runs.
step "exec $WREL -- python (runs)" "$B" --root "$R" exec "$WREL" --cuda "$CV" -- "$PY" -c "$PROG"
expect 0 "exec $WREL -- python (runs)"
ran_rc=$rc
ran_line=$(grep -m1 '^cudnn ' "$OUT/step.out")
[ -n "$ran_line" ] || [ -n "${DRY_RUN:-}" ] || { echo "UNEXPECTED: no convolution line"; fail=1; }

echo
echo "== results (tests/gpu/RESULTS.md)"
echo "| step | result |"
echo "| --- | --- |"
echo "| date | $(date -u '+%Y-%m-%d %H:%M UTC') |"
echo "| GPU | $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -n 1) |"
echo "| PyTorch env | $PREFIX, wheel cuDNN $WV; system cuDNN $SV |"
echo "| doctor --python: torch requires | $torch_requires (exit $doctor_rc; $(tail -n 1 "$OUT/doctor.check")) |"
echo "| exec $SREL -- python | exit $refused_rc (1 expected): $refused_msg |"
echo "| exec $SREL --force -- python | exit $forced_rc: $forced_msg |"
echo "| exec $WREL -- python | exit $ran_rc (0 expected): $ran_line |"
exit $fail
