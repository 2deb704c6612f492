#!/bin/sh
# SPDX-License-Identifier: MIT
# Mixed copies on the GPU machine, run once by hand (as tests/gpu/run.sh, with
# a carried binary in CUDNNVM): from the nvidia-cudnn-cu13 wheel's real
# libraries it
#   1. installs and uses a clean copy (the smoke test runs the convolution);
#   2. builds a mixed copy: libcudnn_cnn.so.9 from another release (the
#      system's 9.14 in /lib/x86_64-linux-gnu when there is one, else the
#      wheel's own with its version-check constant patched) and shows that
#      install refuses it (exit 3, naming the file);
#   3. puts the same odd file into an installed copy (as a copy installed
#      before the check would be) and shows verify (exit 3), use (the smoke
#      test fails, exit 4, and rolls back) and the smoke report naming it;
#   4. runs `ps` (and doctor) on a running python3 that loaded cuDNN through
#      `cudnnvm exec` (PyTorch when importable, else ctypes);
# and ends with a markdown table for tests/gpu/RESULTS.md. Every step prints
# its command and exit code; what it could not do is said, never skipped in
# silence. Exit 0 when every expectation held, 1 otherwise, 77 without a GPU.
set -u
NAME=mixed.sh
. tests/gpu/lib.sh
LOG=$OUT/mixed.log
: >"$LOG"
notes=
note() { echo "NOTE: $*"; notes="$notes
- $*"; }
PY=$(command -v python3) || { echo "mixed.sh: no python3"; exit 1; }
W=${CUDNN_DIR:-$("$PY" -c 'import nvidia.cudnn as m; print(m.__path__[0])' 2>/dev/null)} || W=
[ -n "$W" ] && [ -d "$W/lib" ] || { echo "mixed.sh: no nvidia-cudnn wheel in $PY (set CUDNN_DIR)"; exit 1; }
V=${CUDNN_VERSION:-$("$PY" -c 'import importlib.metadata as m; print(m.version("nvidia-cudnn-cu13"))' 2>/dev/null)} || V=
[ -n "$V" ] || { echo "mixed.sh: cannot read the wheel's version (set CUDNN_VERSION)"; exit 1; }
case $V in *.*.*.*) ;; *) echo "mixed.sh: the wheel's version '$V' is not 4 numbers"; exit 1 ;; esac
REL=$(echo "$V" | cut -d. -f1-3)
HOLD=
CLEANUP='[ -n "$HOLD" ] && kill "$HOLD" 2>/dev/null'
echo "== machine"
nvidia-smi --query-gpu=index,name,driver_version,compute_cap --format=csv,noheader 2>&1
echo "cuDNN wheel $V at $W; CUDA toolkit $REAL ($CV); cudnnvm $B"

# The root: the machine's CUDA as its toolkit.
R=$WORK/root
# cudart, and what cuDNN loads by name (cublasLt, nvrtc): use checks the closure first
toolkit_root "$R" "$REAL"/lib64/libcudart.so* "$REAL"/lib64/libcublas*.so* "$REAL"/lib64/libnvrtc*.so*
pack() { # LIBDIR VERSION OUT
	XZ_OPT='-0 -T0' sh tests/fixtures/pack-cudnn.sh "$W/include" "$1" "$2" 13 "$3" >/dev/null 2>"$OUT/pack.err" ||
		{ note "packing $2 failed: $(cat "$OUT/pack.err")"; return 1; }
}

# 1. The clean copy.
A=$WORK/cudnn-linux-x86_64-${V}_cuda13-archive.tar.xz
pack "$W/lib" "$V" "$A" || exit 1
step "install the wheel's copy" "$B" --root "$R" install "$V" --cuda "$CV" --archive "$A" --sha256 "$(sha256sum "$A" | cut -d' ' -f1)"
expect 0 "a copy of one release installs"
clean_install=$rc
step "use it (smoke test)" "$B" --root "$R" use "$V" --cuda "$CV"
expect 0 "the clean copy passes its smoke test"
clean_use=$rc
ID=$V-cuda13-linux-$(uname -m)
REC=$R/opt/cudnnvm/versions/$ID/.cudnnvm/record.json
archs=$("$PY" -c 'import json,sys; d=json.load(open(sys.argv[1])); print(" ".join("sm_%d" % a for a in d.get("archs", [])) + ("; PTX " + " ".join(str(p) for p in d["ptx_archs"]) if d.get("ptx_archs") else "; no PTX") if "archs" in d else "not read")' "$REC" 2>&1)
echo "device code in the record: $archs"

# 2. The odd file: another release's libcudnn_cnn, or the wheel's with its constant patched.
ODD=$WORK/odd
mkdir -p "$ODD"
cp "$W"/lib/libcudnn*.so.9 "$ODD/"
odd_from=
SYS=/lib/$(uname -m)-linux-gnu/libcudnn_cnn.so.9
if [ -f "$SYS" ] && ! cmp -s "$SYS" "$W/lib/libcudnn_cnn.so.9"; then
	cp "$SYS" "$ODD/libcudnn_cnn.so.9"
	odd_from="the system's $(readlink -f "$SYS")"
else
	note "no other release's libcudnn_cnn.so.9 at $SYS: patching the wheel's version-check constant instead"
	if "$PY" - "$ODD/libcudnn_cnn.so.9" "$REL" <<'PY'
import struct, sys
p, rel = sys.argv[1], sys.argv[2]
a, b, c = (int(x) for x in rel.split("."))
want = a * 10000 + b * 100 + c
other = want - 100 if b > 0 else want + 100
data = bytearray(open(p, "rb").read())
old, new = struct.pack("<I", want), struct.pack("<I", other)
# Only inside cudnnCnnVersionCheck: find it through the dynamic symbols (readelf).
import subprocess
out = subprocess.run(["readelf", "-W", "--dyn-syms", p], capture_output=True, text=True).stdout
sec = subprocess.run(["readelf", "-W", "-S", p], capture_output=True, text=True).stdout
addr = size = None
for line in out.splitlines():
    f = line.split()
    if len(f) >= 8 and f[7].startswith("cudnnCnnVersionCheck"):
        addr, size = int(f[1], 16), int(f[2])
text = None
for line in sec.splitlines():
    if " .text " in line:
        f = line.split("]")[1].split()
        text = (int(f[2], 16), int(f[3], 16))
if addr is None or text is None:
    sys.exit("cannot find cudnnCnnVersionCheck")
off = addr - text[0] + text[1]
i = data.find(old, off, off + size)
if i < 0:
    sys.exit("no constant %d in cudnnCnnVersionCheck" % want)
data[i:i + 4] = new
open(p, "wb").write(data)
print("patched %d -> %d at offset %d" % (want, other, i))
PY
	then odd_from="the wheel's, its version-check constant patched"
	else note "could not patch libcudnn_cnn.so.9: step 2 and 3 show nothing"; odd_from=
	fi
fi
echo "odd libcudnn_cnn.so.9: ${odd_from:-none}"
MV=$REL.98
MA=$WORK/cudnn-linux-x86_64-${MV}_cuda13-archive.tar.xz
mixed_install=skipped verify_rc=skipped mixed_use=skipped smoke_line="(not run)" mixed_msg="(not run)"
if [ -n "$odd_from" ] && pack "$ODD" "$MV" "$MA"; then
	step "install the mixed copy" "$B" --root "$R" install "$MV" --cuda "$CV" --archive "$MA" --sha256 "$(sha256sum "$MA" | cut -d' ' -f1)"
	expect 3 "install refuses a copy that mixes releases"
	mixed_install=$rc
	mixed_msg=$(grep -m1 'cudnnvm: error:' "$OUT/step.out" | sed 's/^cudnnvm: error: //')
	# 3. The same odd file in an installed copy (installed before the check).
	CA=$WORK/cudnn-linux-x86_64-$REL.97_cuda13-archive.tar.xz
	if pack "$W/lib" "$REL.97" "$CA"; then
		step "install a clean copy as $REL.97" "$B" --root "$R" install "$REL.97" --cuda "$CV" --archive "$CA" --sha256 "$(sha256sum "$CA" | cut -d' ' -f1)"
		VD=$R/opt/cudnnvm/versions/$REL.97-cuda13-linux-$(uname -m)
		if [ "$rc" = 0 ] && chmod u+w "$VD/lib" "$VD/lib/libcudnn_cnn.so.$REL" && cp "$ODD/libcudnn_cnn.so.9" "$VD/lib/libcudnn_cnn.so.$REL"; then
			step "verify it" "$B" --root "$R" verify "$REL.97"
			expect 3 "verify reports the odd file"
			verify_rc=$rc
			step "use it (smoke test names the odd file, rolls back)" "$B" --root "$R" use "$REL.97" --cuda "$CV"
			expect 4 "the smoke test of the mixed copy fails"
			mixed_use=$rc
			smoke_line=$(grep -m1 -E 'cudnnvm: error: smoke test' "$OUT/step.out" | sed 's/^cudnnvm: error: //')
			step "current after the rollback" "$B" --root "$R" current --cuda "$CV"
		else
			note "could not put the odd file into $VD"
		fi
	fi
fi

# 4. ps on a running python3 that loaded cuDNN through cudnnvm exec.
READY=$WORK/ready
cat >"$WORK/hold.py" <<'PY'
import sys, time
ready = sys.argv[1]
how = "ctypes"
try:
    import torch
    x = torch.randn(1, 3, 16, 16, device="cuda")
    w = torch.randn(4, 3, 3, 3, device="cuda")
    torch.nn.functional.conv2d(x, w)
    torch.cuda.synchronize()
    how = "torch %s, cudnn %s" % (torch.__version__, torch.backends.cudnn.version())
except Exception as e:
    import ctypes
    print("no torch convolution (%s): loading libcudnn.so.9 with ctypes" % e, flush=True)
    lib = ctypes.CDLL("libcudnn.so.9")
    lib.cudnnGetVersion.restype = ctypes.c_size_t
    how = "ctypes, cudnn %d" % lib.cudnnGetVersion()
    # A handle makes the dispatcher load its sub-libraries (needs the GPU).
    h = ctypes.c_void_p()
    st = lib.cudnnCreate(ctypes.byref(h))
    how += ", cudnnCreate status %d" % st
open(ready, "w").write(how)
time.sleep(300)
PY
echo
echo "== a python3 process through cudnnvm exec $V"
"$B" --root "$R" exec "$V" --cuda "$CV" -- "$PY" "$WORK/hold.py" "$READY" >"$OUT/hold.out" 2>&1 &
HOLD=$!
i=0
while [ ! -s "$READY" ] && kill -0 "$HOLD" 2>/dev/null && [ $i -lt 1200 ]; do sleep 0.1; i=$((i + 1)); done
cat "$OUT/hold.out"
ps_rc=skipped ps_summary="(not run)" doctor_rc=skipped how="(did not start)"
if [ -s "$READY" ]; then
	how=$(cat "$READY")
	echo "process $HOLD ready: $how"
	step "ps" "$B" --store "$R/opt/cudnnvm" ps
	ps_rc=$rc
	step "ps --json" "$B" --store "$R/opt/cudnnvm" --json ps
	cp "$OUT/step.out" "$OUT/ps.json"
	ps_summary=$("$PY" - "$OUT/ps.json" "$HOLD" <<'PY' 2>&1
import json, sys
d = json.load(open(sys.argv[1]))
p = [p for p in d["processes"] if p["pid"] == int(sys.argv[2])]
if not p:
    print("the process is not listed (%d others)" % len(d["processes"]))
else:
    p = p[0]
    print("%s%s; copies: %s" % ("MIXED" if p["mixed"] else "one copy",
          ", not active" if p["not_active"] else "",
          "; ".join("%s %s (%d files)" % (c["kind"], c.get("id") or c.get("folder"), len(c["files"])) for c in p["copies"])))
PY
)
	echo "ps: $ps_summary"
	step "doctor" "$B" --store "$R/opt/cudnnvm" doctor
	doctor_rc=$rc
else
	note "the python3 process did not get ready in 120 s: no ps result"
fi
[ -n "$HOLD" ] && kill "$HOLD" 2>/dev/null
HOLD=

echo
echo "== results (for tests/gpu/RESULTS.md)"
echo
echo "| what | result |"
echo "| --- | --- |"
echo "| date | $(date -u '+%Y-%m-%d %H:%M UTC') |"
echo "| GPU, driver, cc | $(nvidia-smi --query-gpu=name,driver_version,compute_cap --format=csv,noheader 2>/dev/null | head -n1) |"
echo "| cuDNN (wheel) | $V |"
echo "| clean copy: install / use | $clean_install / $clean_use (0 / 0 expected) |"
echo "| device code in the record | $archs |"
echo "| odd libcudnn_cnn.so.9 | ${odd_from:-none} |"
echo "| mixed copy: install exit | $mixed_install (3 expected) |"
echo "| install's message | $mixed_msg |"
echo "| copy made odd after install: verify exit | $verify_rc (3 expected) |"
echo "| its use (smoke test) exit | $mixed_use (4 expected) |"
echo "| smoke report | $smoke_line |"
echo "| python3 process via exec | $how |"
echo "| ps | exit $ps_rc: $ps_summary |"
echo "| doctor exit | $doctor_rc |"
if [ -n "$notes" ]; then
	echo
	echo "Not done or done differently:$notes"
fi
exit $fail
