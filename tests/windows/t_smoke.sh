# SPDX-License-Identifier: MIT
# shellcheck shell=bash
#
# The smoke test on Windows (lib/smoke_win.c), sourced by tests/windows/run.sh
# once 9.1.0 is installed ($V91): its helpers and variables are run.sh's.
#
# Without an active version (activation is lib/activate_windows.c's), `smoke`
# tests a copy in the toolkit, as NVIDIA's manual install leaves one: that is
# the same code path but for where the files are looked for. The toolkit is
# mktoolkit-win.sh's, found through CUDA_PATH; PATH entries are written into
# the registry with reg.exe, where smoke reads the PATH a program started now
# gets. Under wine there is no nvcuda.dll: the GPU part is skipped (exit 77).
# The GPU part's code (smoke_conv.c, the verdict) then runs against fakes that
# compute on the CPU (a fake nvcuda.dll in the prefix's System32, a fake
# CUDA runtime and cuDNN): that checks the plumbing, not a GPU. What changes
# the registry or System32 runs only under wine's throwaway prefix.

SMK=$TMP/smoke
mkdir -p "$SMK"
TKS=$SMK/tk124
sh "$FIXTURES/mktoolkit-win.sh" "$TKS" 12.4
cp "$V91"/bin/*.dll "$TKS/bin/"
cp "$V91"/include/*.h "$TKS/include/"
WTKS=$(winpath "$TKS")
# cvm with the toolkit found through CUDA_PATH, as the CUDA installer sets it.
scvm() { CUDA_PATH=$WTKS cvm "$@"; }
# child ARGS...: the smoke child run directly; WINEPATH is added to its PATH under wine.
child() {
	if [ -z "$NATIVE" ]; then
		WINEPATH=${CHILD_PATH:-} timeout -k 5 60 "$WINE" "$EXE" __smoke-child "$@" >"$TMP/out" 2>"$TMP/err"
	else
		PATH=${CHILD_PATH:+$(cygpath -u -p "$CHILD_PATH"):}$PATH timeout -k 5 60 "$EXE" __smoke-child "$@" \
			>"$TMP/out" 2>"$TMP/err"
	fi
	RC=$?
	OUT=$(tr -d '\r' <"$TMP/out")
	ERR=$(tr -d '\r' <"$TMP/err")
}
out_has() { # TEXT NAME
	if printf '%s' "$OUT" | grep -qiF -- "$1"; then ok "$2"; else not_ok "$2" "stdout lacks '$1'" "$(diag_run)"; fi
}
# json_is PY NAME: the expression PY, over d = stdout's JSON, is true.
json_is() {
	if printf '%s' "$OUT" | python3 -c 'import json,sys; d=json.load(sys.stdin); sys.exit(0 if eval(sys.argv[1]) else 1)' "$1" 2>/dev/null; then
		ok "$2"
	else
		not_ok "$2" "false: $1" "$(diag_run)"
	fi
}
# The form the child reports paths in: Z:/x/y.
wfwd() { winpath "$1" | tr '\\' /; }

# ---- the child, run directly: by name through PATH, and by path (cvm_smoke_probe's call)
CHILD_PATH="$(winpath "$V91/bin");$(winpath "$TKS/bin")" child cudnn64_9.dll "$(winpath "$V91/bin")"
rc_is 0 "__smoke-child by name: exit 0 (no GPU part, nothing failed)"
out_has "path $(wfwd "$V91/bin")/cudnn64_9.dll" "the child loaded cudnn64_9.dll by name from the PATH entry"
out_has "version 90100" "the child reports cudnnGetVersion() = 90100"
out_has "cudart 12040" "the child reports cudnnGetCudartVersion() = 12040"
n=$(printf '%s\n' "$OUT" | grep -c "^sub cudnn_.*64_9.dll $(wfwd "$V91/bin")/")
if [ "$n" = 7 ]; then ok "the child loaded the 7 sub-libraries by name, all from the same folder"; else not_ok "the child loaded the 7 sub-libraries by name" "$n of 7" "$(diag_run)"; fi
out_has "cudart_path $(wfwd "$TKS/bin")/cudart64_12.dll" "the child loaded the toolkit's cudart64_12.dll"
out_has "cudart_runtime 12040" "and read its cudaRuntimeGetVersion()"
out_has "gpu_skip nvcuda.dll" "no nvcuda.dll: the child skips the GPU part"
n=$(printf '%s\n' "$OUT" | grep -c '^mapped .*/cudnn.*\.dll$')
if [ "$n" = 8 ]; then ok "the child lists the 8 cudnn*.dll the process loaded (EnumProcessModules)"; else not_ok "the child lists the 8 cudnn*.dll the process loaded" "$n of 8" "$(diag_run)"; fi
CHILD_PATH= child "$(winpath "$V91/bin/cudnn64_9.dll")" "$(winpath "$V91/bin")" --no-gpu --no-subs
rc_is 0 "__smoke-child by path --no-gpu --no-subs (the probe's call): exit 0"
out_has "version 90100" "by path: the version"
if printf '%s' "$OUT" | grep -q '^sub'; then not_ok "by path --no-subs: no sub-library loaded" "$(diag_run)"; else ok "by path --no-subs: no sub-library loaded"; fi
CHILD_PATH= child cudnn64_9.dll x
rc_is 1 "__smoke-child of a name on no PATH entry: exit 1"
out_has "error cudnn64_9.dll does not load" "it says the DLL does not load"

# ---- smoke: a copy in the toolkit, nothing of ours on PATH (the toolkit's bin is added)
scvm smoke --cuda 12.4
rc_is 77 "smoke under wine (no nvcuda.dll): exit 77"
out_has "cuDNN 90100, headers 90100, built for CUDA runtime 12040" "smoke reports library, header and cudart versions"
out_has "$(wfwd "$TKS/bin")/cudnn64_9.dll" "smoke names the DLL loaded"
out_has "skipped: nvcuda.dll" "smoke says the GPU part was skipped, and why"
out_has "loaded    8 cuDNN DLLs, all from" "smoke says every cuDNN DLL came from the tested folder"
scvm --json smoke --cuda 12.4
rc_is 77 "smoke --json: exit 77"
json_is 'd["header_version"] == 90100 and d["library_version"] == 90100 and d["cudart_version"] == 12040' \
	"smoke --json: header, library and cudart versions"
json_is 'd["gpu"]["passed"] is None and "nvcuda.dll" in d["gpu"]["skipped"] and d["gpu"]["devices"] == []' \
	"smoke --json: the GPU part skipped, and why"
if printf '%s' "$OUT" | python3 -c 'import json,sys; d=json.load(sys.stdin); b=sys.argv[1].lower(); sys.exit(0 if d["library"].lower()==b+"/cudnn64_9.dll" and len(d["loaded"])==8 and all(p.lower().startswith(b+"/") for p in d["loaded"]) else 1)' "$(wfwd "$TKS/bin")"; then
	ok "smoke --json: library and the 8 DLLs in \"loaded\" are the toolkit's"
else
	not_ok "smoke --json: library and the 8 DLLs in \"loaded\" are the toolkit's" "$(diag_run)"
fi
scvm smoke --cuda 12.4 --no-gpu
rc_is 77 "smoke --no-gpu: exit 77"
out_has "skipped: --no-gpu" "smoke --no-gpu says so"

# ---- what the child must catch: a copy earlier in the DLL search (registry PATH, wine only)
# reg_path KEY: PATH's value there (nothing when unset); set_reg_path KEY VALUE (empty: delete).
reg_path() { run_win reg query "$1" /v Path 2>/dev/null | tr -d '\r' | sed -n 's/^ *Path *REG_[A-Z_]* *//p'; }
set_reg_path() {
	if [ -n "$2" ]; then
		run_win reg add "$1" /v Path /t REG_EXPAND_SZ /d "$2" /f >/dev/null 2>&1
	else
		run_win reg delete "$1" /v Path /f >/dev/null 2>&1
	fi
}
HKLM_ENV='HKLM\System\CurrentControlSet\Control\Session Manager\Environment'
HKCU_ENV='HKCU\Environment'
A92=$(sh "$FIXTURES/mkcudnn-win.sh" "$SMK/archives" 9.2.0.82 12)
mkdir -p "$SMK/other" "$SMK/only-cnn"
(cd "$SMK/other" && unzip -qo "$A92")
OTHER=$(ls -d "$SMK"/other/*/bin)
cp "$OTHER/cudnn_cnn64_9.dll" "$SMK/only-cnn/"
if [ -z "$NATIVE" ]; then
	sys_path=$(reg_path "$HKLM_ENV") user_path=$(reg_path "$HKCU_ENV")
	set_reg_path "$HKCU_ENV" "$(winpath "$OTHER")"
	scvm smoke --cuda 12.4
	rc_is 4 "another release's cudnn64_9.dll on the user PATH: exit 4"
	err_has "loads $(wfwd "$OTHER")/cudnn64_9.dll, not the one in" "smoke names the DLL loaded instead"
	err_has "is entry" "and says why (its PATH entry comes first)"
	out_has "cuDNN 90200" "the summary shows the other release's version"
	set_reg_path "$HKCU_ENV" "$user_path"
	# One sub-library of another release on the system PATH: the dispatcher's own is found, that one is not.
	set_reg_path "$HKLM_ENV" "$sys_path;$(winpath "$SMK/only-cnn")"
	scvm smoke --cuda 12.4
	rc_is 4 "another release's cudnn_cnn64_9.dll on the system PATH: exit 4"
	err_has "cudnn_cnn64_9.dll came from $(wfwd "$SMK/only-cnn")/cudnn_cnn64_9.dll" "smoke names the sub-library and where it came from"
	err_has "system PATH, which comes before the user's" "and that the system PATH comes first"
	# Both on the system PATH (as a second machine-wide store's entry would be): the order alone says why.
	set_reg_path "$HKLM_ENV" "$sys_path;$(winpath "$SMK/only-cnn");$(winpath "$TKS/bin")"
	scvm smoke --cuda 12.4
	rc_is 4 "another release's sub-library on the system PATH, before the toolkit's own entry there: exit 4"
	err_has "cudnn_cnn64_9.dll came from $(wfwd "$SMK/only-cnn")/cudnn_cnn64_9.dll" "smoke names the sub-library and where it came from"
	if printf '%s' "$ERR" | grep -q "is entry [0-9]* of PATH, before " && ! printf '%s' "$ERR" | grep -q "which comes before the user's"; then
		ok "and says its entry comes first, not that the system PATH precedes the user's (both are there)"
	else
		not_ok "and says its entry comes first, not that the system PATH precedes the user's (both are there)" "$(diag_run)"
	fi
	set_reg_path "$HKLM_ENV" "$sys_path"
	scvm smoke --cuda 12.4
	rc_is 77 "PATH put back: exit 77 again"
else
	skip "a copy earlier on PATH" "changes the registry: runs under wine's throwaway prefix only"
fi

# ---- the parent's file checks
mv "$TKS/bin/cudnn_cnn64_9.dll" "$SMK/cnn.saved"
scvm smoke --cuda 12.4
rc_is 4 "a missing sub-library: exit 4"
err_has "cudnn_cnn64_9.dll: missing" "smoke names the missing sub-library"
mv "$SMK/cnn.saved" "$TKS/bin/cudnn_cnn64_9.dll"
cp "$TKS/bin/cudnn_ops64_9.dll" "$SMK/ops.saved"
printf 'MZ' >"$TKS/bin/cudnn_ops64_9.dll"
scvm smoke --cuda 12.4
rc_is 4 "a truncated sub-library: exit 4"
err_has "cudnn_ops64_9.dll is empty or truncated" "smoke names the truncated sub-library"
cp "$SMK/ops.saved" "$TKS/bin/cudnn_ops64_9.dll"
cp "$TKS/include/cudnn_version.h" "$SMK/h.saved"
sed -i 's/#define CUDNN_MINOR 1/#define CUDNN_MINOR 2/' "$TKS/include/cudnn_version.h"
scvm smoke --cuda 12.4
rc_is 4 "headers of 9.2.0 over a library of 9.1.0: exit 4"
err_has "headers and library of different versions" "smoke says headers and library differ"
cp "$SMK/h.saved" "$TKS/include/cudnn_version.h"

# ---- a DLL that never finishes loading: killed after CUDNNVM_SMOKE_TIMEOUT
TKH=$SMK/tk-hang
cp -r "$TKS" "$TKH"
cat >"$SMK/hang.c" <<'C'
#include <windows.h>
BOOL WINAPI DllMain(HINSTANCE h, DWORD why, LPVOID r) { (void)h; (void)r; if (why == DLL_PROCESS_ATTACH) Sleep(INFINITE); return TRUE; }
__declspec(dllexport) size_t cudnnGetVersion(void) { return 90100; }
C
"$WIN_CC" -shared -O1 -o "$TKH/bin/cudnn64_9.dll" "$SMK/hang.c"
t0=$(date +%s)
CUDA_PATH=$(winpath "$TKH") CUDNNVM_SMOKE_TIMEOUT=3 cvm smoke --cuda 12.4
t=$(($(date +%s) - t0))
rc_is 4 "a DLL whose DllMain never returns: exit 4"
err_has "did not finish in 3 s: killed" "smoke says the child was killed after the time limit"
if [ "$t" -lt 30 ]; then ok "and returned in ${t} s"; else not_ok "the killed child let smoke return" "${t} s"; fi

# ---- a cudnnGetVersion that crashes: the child says so, not an exit code
TKC=$SMK/tk-crash
cp -r "$TKS" "$TKC"
printf '#include <stddef.h>\n__declspec(dllexport) size_t cudnnGetVersion(void) { return *(volatile size_t *)0; }\n' >"$SMK/crash.c"
"$WIN_CC" -shared -O1 -o "$TKC/bin/cudnn64_9.dll" "$SMK/crash.c"
CUDA_PATH=$(winpath "$TKC") cvm smoke --cuda 12.4
rc_is 4 "a cudnnGetVersion that dereferences NULL: exit 4"
err_has "crashed in cudnnGetVersion: exception 0xC0000005 (an access violation)" "smoke says where the child crashed, and how"

# ---- the GPU part's plumbing, with fakes that compute on the CPU (wine only: System32)
if [ -z "$NATIVE" ]; then
	TKG=$SMK/tk-gpu
	cp -r "$TKS" "$TKG"
	cat >"$SMK/fakert.c" <<'C'
#include <stdlib.h>
#include <string.h>
#define API __declspec(dllexport)
API int cudaRuntimeGetVersion(int *v) { *v = 12040; return 0; }
API int cudaDriverGetVersion(int *v) { *v = 12040; return 0; }
API int cudaGetDeviceCount(int *n) { *n = getenv("FAKE_DEVICES") ? atoi(getenv("FAKE_DEVICES")) : 1; return 0; }
API int cudaSetDevice(int d) { (void)d; return 0; }
API int cudaDeviceGetAttribute(int *v, int attr, int dev) { (void)dev; *v = attr == 75 ? 9 : 0; return 0; }
API int cudaGetDeviceProperties(char *p, int dev) { (void)dev; strcpy(p, "Fake GPU (host memory)"); return 0; }
API int cudaMalloc(void **p, size_t n) { *p = malloc(n ? n : 1); return *p ? 0 : 2; }
API int cudaFree(void *p) { free(p); return 0; }
API int cudaMemcpy(void *d, const void *s, size_t n, int k) { (void)k; memcpy(d, s, n); return 0; }
API int cudaDeviceSynchronize(void) { return 0; }
API const char *cudaGetErrorString(int e) { (void)e; return "fake CUDA error"; }
C
	cat >"$SMK/fakednn.c" <<'C'
#include <stdlib.h>
#define API __declspec(dllexport)
typedef struct { int n, c, h, w, pad; } desc;
typedef struct { int algo, status; float time; size_t memory; int determinism, math_type, reserved[3]; } perf;
static int mk(void **d) { *d = calloc(1, sizeof(desc)); return *d ? 0 : 2; }
API size_t cudnnGetVersion(void) { return 90100; }
API size_t cudnnGetCudartVersion(void) { return 12040; }
API const char *cudnnGetErrorString(int s) { (void)s; return "fake cuDNN error"; }
API int cudnnCreate(void **h) { return mk(h); }
API int cudnnDestroy(void *h) { free(h); return 0; }
API int cudnnCreateTensorDescriptor(void **d) { return mk(d); }
API int cudnnCreateFilterDescriptor(void **d) { return mk(d); }
API int cudnnCreateConvolutionDescriptor(void **d) { return mk(d); }
API int cudnnSetTensor4dDescriptor(desc *d, int f, int t, int n, int c, int h, int w) { (void)f; (void)t; d->n = n; d->c = c; d->h = h; d->w = w; return 0; }
API int cudnnSetFilter4dDescriptor(desc *d, int t, int f, int k, int c, int h, int w) { (void)f; (void)t; d->n = k; d->c = c; d->h = h; d->w = w; return 0; }
API int cudnnSetConvolution2dDescriptor(desc *d, int ph, int pw, int u, int v, int dh, int dw, int m, int t) { (void)pw; (void)u; (void)v; (void)dh; (void)dw; (void)m; (void)t; d->pad = ph; return 0; }
API int cudnnSetConvolutionMathType(desc *d, int m) { (void)d; (void)m; return 0; }
API int cudnnGetConvolution2dForwardOutputDim(desc *cd, desc *x, desc *w, int *n, int *c, int *h, int *wd)
{ *n = x->n; *c = w->n; *h = x->h + 2 * cd->pad - w->h + 1; *wd = x->w + 2 * cd->pad - w->w + 1; return 0; }
API int cudnnGetConvolutionForwardAlgorithm_v7(void *h, void *x, void *w, void *c, void *y, int req, int *got, perf *p)
{ (void)h; (void)x; (void)w; (void)c; (void)y; (void)req; p[0].algo = 3; p[0].status = 0; *got = 1; return 0; }
API int cudnnGetConvolutionForwardWorkspaceSize(void *h, void *x, void *w, void *c, void *y, int a, size_t *s)
{ (void)h; (void)x; (void)w; (void)c; (void)y; (void)a; *s = 0; return 0; }
/* Direct cross-correlation in float; FAKE_CONV_OFF shifts every output (a wrong result). */
API int cudnnConvolutionForward(void *h, const void *al, desc *xd, const float *x, desc *wd, const float *w, desc *cd,
	int a, void *ws, size_t wss, const void *be, desc *yd, float *y)
{
	float off = getenv("FAKE_CONV_OFF") ? (float)atof(getenv("FAKE_CONV_OFF")) : 0;
	(void)h; (void)al; (void)a; (void)ws; (void)wss; (void)be;
	for (int n = 0; n < yd->n; n++) for (int k = 0; k < yd->c; k++) for (int i = 0; i < yd->h; i++) for (int j = 0; j < yd->w; j++) {
		float acc = off;
		for (int c = 0; c < xd->c; c++) for (int r = 0; r < wd->h; r++) for (int s = 0; s < wd->w; s++) {
			int ii = i + r - cd->pad, jj = j + s - cd->pad;
			if (ii >= 0 && jj >= 0 && ii < xd->h && jj < xd->w)
				acc += x[((n * xd->c + c) * xd->h + ii) * xd->w + jj] * w[((k * wd->c + c) * wd->h + r) * wd->w + s];
		}
		y[((n * yd->c + k) * yd->h + i) * yd->w + j] = acc;
	}
	return 0;
}
C
	printf 'int fake_nvcuda;\n' >"$SMK/fakecuda.c"
	SYS32=$WINEPREFIX/drive_c/windows/system32
	if "$WIN_CC" -shared -O1 -o "$TKG/bin/cudart64_12.dll" "$SMK/fakert.c" &&
		"$WIN_CC" -shared -O1 -o "$TKG/bin/cudnn64_9.dll" "$SMK/fakednn.c" &&
		"$WIN_CC" -shared -O1 -o "$SYS32/nvcuda.dll" "$SMK/fakecuda.c"; then
		CUDA_PATH=$(winpath "$TKG") cvm --json smoke --cuda 12.4
		rc_is 0 "fake driver, runtime and cuDNN (CPU): the convolution passes, exit 0"
		json_is 'd["gpu"]["passed"] is True and d["gpu"]["name"].startswith("Fake GPU") and d["gpu"]["algo"] == "DIRECT" and d["gpu"]["max_abs_error"] < 1e-4 and d["gpu"]["cuda_driver_version"] == 12040' \
			"smoke --json: the fake device, its algorithm, the error against the CPU reference"
		CUDA_PATH=$(winpath "$TKG") FAKE_DEVICES=2 cvm --json smoke --cuda 12.4 --all-devices
		rc_is 0 "--all-devices on two fake devices: exit 0"
		json_is 'len(d["gpu"]["devices"]) == 2 and all(x["passed"] for x in d["gpu"]["devices"])' "both devices ran and passed"
		CUDA_PATH=$(winpath "$TKG") FAKE_CONV_OFF=0.5 cvm smoke --cuda 12.4
		rc_is 4 "a convolution that is off by 0.5: exit 4"
		err_has "differs from the CPU reference by 0.5" "smoke says by how much it differs"
	else
		not_ok "the fake GPU DLLs were built"
	fi
	rm -f "$SYS32/nvcuda.dll"
else
	skip "the GPU part's plumbing with fakes" "needs a fake nvcuda.dll in System32: wine's throwaway prefix only"
fi

# ---- the active version (lib/activate_windows.c): a store of its own and a toolkit
# without hand copies (activation refuses those), so that run.sh's store is left as
# it was; wine only (HKCU\Environment)
if [ -z "$NATIVE" ]; then
	WS2=$(winpath "$SMK/store")
	sh "$FIXTURES/mktoolkit-win.sh" "$SMK/tk-clean" 12.4
	acvm() { CUDA_PATH=$(winpath "$SMK/tk-clean") cvm "$@"; }
	user_path=$(reg_path "$HKCU_ENV")
	acvm --store "$WS2" --manifests "$WMAN" install 9.1.0 --cuda 12.x --archive "$(winpath "$A91")"
	acvm --store "$WS2" --user use 9.1.0 --cuda 12.4 --no-smoke
	rc_is 0 "--user use 9.1.0 --no-smoke (a store of the smoke tests' own)"
	if [ "$RC" = 0 ]; then
		acvm --store "$WS2" --user --json smoke --cuda 12.4
		rc_is 77 "smoke of the active 9.1.0 (no GPU): exit 77"
		if printf '%s' "$OUT" | python3 -c 'import json,sys; d=json.load(sys.stdin); s=sys.argv[1].lower(); sys.exit(0 if d["library_version"] == 90100 and d["library"].lower().startswith(s) and d["library"].lower().endswith("/bin/cudnn64_9.dll") else 1)' "$(wfwd "$SMK/store")"; then
			ok "smoke --json: the DLL loaded is the active version's, in the store"
		else
			not_ok "smoke --json: the DLL loaded is the active version's, in the store" "$(diag_run)"
		fi
	fi
	acvm --store "$WS2" --user uninstall 9.1.0 --cuda 12.x --force
	set_reg_path "$HKCU_ENV" "$user_path"
fi
