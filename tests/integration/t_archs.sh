#!/bin/bash
# SPDX-License-Identifier: MIT
# The compute-capability gate from the device code the libraries carry: install
# reads the architectures of the fatbin sections into the record (archs,
# ptx_archs, ptx); doctor compares each GPU's compute capability (nvidia-smi)
# with them: a cubin of the same major and an older or equal minor serves it,
# and so does PTX of an older architecture; without device code read, the
# table of docs/cudnn-facts.md decides (Blackwell from 9.7.0).
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"
# shellcheck source-path=SCRIPTDIR source=lib_activate.sh
. "$(dirname "$0")/lib_activate.sh"

act_root
# A fake nvidia-smi: the driver and one GPU whose compute capability is $FAKE_CC.
mkdir -p "$TEST_TMP/fakebin"
cat >"$TEST_TMP/fakebin/nvidia-smi" <<'SH'
#!/bin/sh
case "$*" in
*compute_cap*) echo "0, NVIDIA Fake GPU, ${FAKE_CC:-9.0}" ;;
*driver_version*) echo "580.65.06" ;;
*) echo "fake nvidia-smi" ;;
esac
SH
chmod 755 "$TEST_TMP/fakebin/nvidia-smi"
export PATH=$TEST_TMP/fakebin:$PATH

# build_inst VERSION ARGS...: a cuda12 archive of VERSION built with ARGS, installed and used.
build_inst() {
	local v=$1
	shift
	local m=$TEST_TMP/man-$v
	local a
	a=$(sh "$FIXTURES/mkcudnn.sh" "$TEST_TMP/arch-$v" "$v" 12 --manifest "$m" "$@")
	cvm --manifests "$m" install "$v" --cuda 12.4 --archive "$a"
	must "install $v $*"
	cvm use "$v" --cuda 12.4 --no-smoke
	must "use $v"
}
gpu_problem() { grep -q "GPU 0 (NVIDIA Fake GPU) has compute capability" "$CVM_OUTF"; }

build_inst 9.5.0.50 --archs "50 60 70 80 86 90"
R=$STORE/versions/$(id_of 9.5.0.50 12)/.cudnnvm/record.json
assert_json "d['archs'] == [50, 60, 70, 80, 86, 90] and d['ptx_archs'] == [] and d['ptx'] is False" \
	"install records the cubin architectures, and that there is no PTX" "$R"
FAKE_CC=10.0 cvm doctor
assert_rc 1 "doctor: a 10.0 GPU with a build up to sm_90 and no PTX: exit 1"
assert_out_contains "GPU 0 (NVIDIA Fake GPU) has compute capability 10.0" "doctor names the GPU and its compute capability"
assert_out_contains "sm_90" "doctor says what the build has"
FAKE_CC=8.9 cvm doctor
if gpu_problem; then not_ok "a cubin of sm_86 serves 8.9 (later minor, same major)"; else ok "a cubin of sm_86 serves 8.9 (later minor, same major)"; fi
FAKE_CC=9.0 cvm doctor
if gpu_problem; then not_ok "9.0 is served by sm_90"; else ok "9.0 is served by sm_90"; fi

# Blackwell in the device code: served.
build_inst 9.7.0.60 --archs "75 80 90 100 120"
FAKE_CC=12.0 cvm doctor
if gpu_problem; then not_ok "a 9.7.0 build with sm_120 serves 12.0"; else ok "a 9.7.0 build with sm_120 serves 12.0"; fi
FAKE_CC=7.0 cvm doctor
assert_output_contains "compute capability 7.0" "7.0 is below the build's oldest cubin, sm_75: a problem"

# PTX of an older architecture serves newer GPUs (JIT).
build_inst 9.4.0.40 --archs "80 90" --ptx "90"
R=$STORE/versions/$(id_of 9.4.0.40 12)/.cudnnvm/record.json
assert_json "d['archs'] == [80, 90] and d['ptx_archs'] == [90] and d['ptx'] is True" "install records PTX" "$R"
FAKE_CC=10.0 cvm doctor
if gpu_problem; then not_ok "PTX for 9.0 serves a 10.0 GPU"; else ok "PTX for 9.0 serves a 10.0 GPU"; fi

# No device code read (as for a version installed before this): the table decides.
build_inst 9.6.0.30
R=$STORE/versions/$(id_of 9.6.0.30 12)/.cudnnvm/record.json
assert_json "'archs' not in d" "without fatbin sections the record has no archs" "$R"
FAKE_CC=10.0 cvm doctor
assert_out_contains "before 9.7.0" "the table: 9.6 does not serve 10.0"
build_inst 9.7.1.20
FAKE_CC=10.0 cvm doctor
if gpu_problem; then not_ok "the table: 9.7 (CUDA 12 build) serves Blackwell"; else ok "the table: 9.7 (CUDA 12 build) serves Blackwell"; fi

# The smoke test's GPU part with a fake libcudart.so.12 in the toolkit (one
# "GPU" whose compute capability is $FAKE_CC) and the fake cuDNN's stubs: the
# parent judges the compute capability against the record's device code before
# anything else; the stub's failure is named without '?' and zeros, and what
# the fake cuDNN wrote to stderr is printed under the failing GPU.
cat >"$TEST_TMP/cudart.c" <<'C'
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
int cudaGetDeviceCount(int *n) { *n = 1; return 0; }
int cudaSetDevice(int d) { (void)d; return 0; }
int cudaDeviceGetAttribute(int *v, int attr, int dev)
{
	const char *cc = getenv("FAKE_CC");
	int ma = 9, mi = 0;
	(void)dev;
	if (cc)
		sscanf(cc, "%d.%d", &ma, &mi);
	*v = attr == 75 ? ma : attr == 76 ? mi : 0;
	return 0;
}
int cudaGetDeviceProperties(void *p, int dev) { (void)dev; strcpy(p, "NVIDIA Fake GPU"); return 0; }
int cudaMalloc(void **p, size_t n) { *p = malloc(n ? n : 1); return 0; }
int cudaFree(void *p) { free(p); return 0; }
int cudaMemcpy(void *d, const void *s, size_t n, int k) { (void)k; memcpy(d, s, n); return 0; }
int cudaDeviceSynchronize(void) { return 0; }
int cudaDriverGetVersion(int *v) { *v = 12040; return 0; }
const char *cudaGetErrorString(int e) { (void)e; return "fake CUDA error"; }
C
${CC:-cc} -shared -fPIC -Wl,-soname,libcudart.so.12 -o "$LIB12/libcudart.so.12" "$TEST_TMP/cudart.c"
chmod 755 "$LIB12/libcudart.so.12"
cvm use 9.5.0 --cuda 12.4 --no-smoke
must "use 9.5.0 (sm_50 ... sm_90, no PTX)"
FAKE_CC=10.0 cvm smoke --cuda 12.4
assert_rc 4 "smoke: a 10.0 GPU with a build up to sm_90: exit 4"
assert_err_contains "GPU 0 (NVIDIA Fake GPU) has compute capability 10.0, which this build's device code does not serve" \
	"smoke names the GPU, its compute capability and the build's device code"
assert_out_contains "FAILED before a result" "the GPU line says it failed before a result"
FAKE_CC=9.0 cvm smoke --cuda 12.4
assert_rc 4 "smoke on a 9.0 GPU, with the fake cuDNN's stubs: exit 4"
if grep -q "compute capability 9.0," "$CVM_ERRF"; then not_ok "9.0 passes the gate (sm_90)"; else ok "9.0 passes the gate (sm_90)"; fi
assert_err_contains "the convolution failed on GPU 0 (NVIDIA Fake GPU)" "the stub's failure is named"
assert_out_contains "FAILED before a result: api->create(&h): fake cuDNN" "the GPU line names the failing call, not '?' and zeros"
assert_out_contains "fake cuDNN: cudnnCreate is a stub" "what cuDNN wrote to stderr is in the report"
if grep -q "cudnnCreate is a stub" "$CVM_ERRF"; then not_ok "and not above it on stderr"; else ok "and not above it on stderr"; fi
# use runs the same gate and rolls back.
cvm use 9.7.0 --cuda 12.4 --no-smoke
must "use 9.7.0"
FAKE_CC=10.0 cvm use 9.5.0 --cuda 12.4
assert_rc 4 "use of a build without Blackwell code on a 10.0 GPU: exit 4"
assert_err_contains "compute capability 10.0" "use says why"
cvm --json current --cuda 12.4
assert_json "d['active'][0]['id'] == '$(id_of 9.7.0.60 12)'" "use rolled back to 9.7.0"
rm -f "$LIB12/libcudart.so.12"

finish
