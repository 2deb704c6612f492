#!/bin/bash
# SPDX-License-Identifier: MIT
# The load closure (closure.h): a version whose libraries need what the
# toolkit lacks (a NEEDED entry libcublasLt.so.12, a name loaded at run time,
# libnvrtc.so.12) is refused by use (exit 4, nothing changed, also with
# --no-smoke and --dry-run), named with where the loader would look and the
# fix; --force activates it anyway; install warns when the toolkit lacks
# them; doctor names each missing library of a toolkit's cuDNN (store or
# hand copy); once the toolkit has them, use and doctor are content. A root
# with a C library is a system of its own: its system libraries are not
# taken from the host.
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"
# shellcheck source-path=SCRIPTDIR source=lib_activate.sh
. "$TESTS_DIR/integration/lib_activate.sh"

act_root
inst 9.1.0.70 12.4
use_ok 9.1.0 --cuda 12.4 --no-smoke
# 9.1.1: libcudnn_cnn needs libcublasLt.so.12; the runtime-compiled engines load libnvrtc.so.12.
# libcudnn_ops needs libz.so.1, a system library (the host's serves a root without a C library).
A=$(mkcudnn 9.1.1.17 12 --manifest "$MAN" --needs cudnn_cnn=libcublasLt.so.12 --needs cudnn_ops=libz.so.1 \
	--loads cudnn_engines_runtime_compiled=libnvrtc.so.12)
cvm --manifests "$MAN" install 9.1.1 --cuda 12.4 --archive "$A"
assert_rc 0 "install of a version whose closure the toolkit lacks: exit 0"
# lib64 is a link to targets/x86_64-linux/lib: one folder, said once.
LOOKED="/opt/cudnnvm/versions/$ID911/lib, /usr/local/cuda-12.4/lib64"
MISS="libcublasLt.so.12 (needed by libcudnn_cnn.so.9), libnvrtc.so.12 (loaded by name by libcudnn_engines_runtime_compiled.so.9)"
assert_stderr_line "cudnnvm: warning: CUDA 12.4 (/usr/local/cuda-12.4) lacks what $ID911 needs to load: $MISS; 'cudnnvm use' refuses it there until it has them" \
	"install warns, naming what the toolkit lacks"

# ------------------------------------------------------------------ use refuses
J_BEFORE=$(journal 12.4)
for opt in "" --no-smoke --dry-run; do
	# shellcheck disable=SC2086  # "" is no argument
	cvm use 9.1.1 --cuda 12.4 $opt
	assert_rc 4 "use ${opt:-(smoke)}: exit 4"
	assert_err_matches "^cudnnvm: error: refusing to activate $ID911 for CUDA 12\.4: the loader would not find libcublasLt\.so\.12 \(needed by libcudnn_cnn\.so\.9\), libnvrtc\.so\.12 \(loaded by name by libcudnn_engines_runtime_compiled\.so\.9\); looked in /opt/cudnnvm/versions/$ID911/lib, /usr/local/cuda-12\.4/lib64; for system libraries the host's .*; nothing changed \('cudnnvm use --force' activates it anyway\)$" \
		"use ${opt:-(smoke)}: one error naming each missing library and where it looked"
	assert_err_contains "$LOOKED" "use ${opt:-(smoke)}: the version's folder, then the toolkit's, in the loader's order"
	assert_out_contains "  fix for libcublasLt.so.12: install the CUDA 12.4 component libcublas (package libcublas-12-4) into /usr/local/cuda-12.4" \
		"use ${opt:-(smoke)}: the fix for cublasLt"
	assert_out_contains "  fix for libnvrtc.so.12: install the CUDA 12.4 component cuda-nvrtc (package cuda-nvrtc-12-4) into /usr/local/cuda-12.4" \
		"use ${opt:-(smoke)}: the fix for nvrtc"
	assert_uses "$TK12" 12.4 "$ID910" "use ${opt:-(smoke)}: 9.1.0 is still the one in use"
	check "use ${opt:-(smoke)}: the journal is unchanged" test "$(journal 12.4)" = "$J_BEFORE"
	assert_absent "$STORE/history/cuda-12.4.pending" "use ${opt:-(smoke)}: nothing pending"
done

# ------------------------------------------------------------------ doctor
use_ok 9.1.1 --cuda 12.4 --no-smoke --force
assert_err_matches "^cudnnvm: warning: --force: activating $ID911 for CUDA 12\.4 although the loader would not find libcublasLt\.so\.12 \(needed by libcudnn_cnn\.so\.9\), libnvrtc\.so\.12 \(loaded by name by libcudnn_engines_runtime_compiled\.so\.9\); looked in /opt/cudnnvm/versions/$ID911/lib, /usr/local/cuda-12\.4/lib64; for system libraries the host's (loader cache|folders), /.*$" \
	"use --force --no-smoke: warned, naming each missing library"
assert_uses "$TK12" 12.4 "$ID911" "use --force --no-smoke: 9.1.1 is in use"
cvm doctor
assert_rc 1 "doctor with a cuDNN whose closure is not whole: exit 1"
assert_out_contains "  problem: the cuDNN in /usr/local/cuda-12.4/lib64 cannot load: libcublasLt.so.12 (needed by libcudnn_cnn.so.9) is not found (looked in /usr/local/cuda-12.4/lib64; for system libraries the host's " \
	"doctor names libcublasLt.so.12 and where it looked"
assert_out_contains "  problem: the cuDNN in /usr/local/cuda-12.4/lib64 cannot load: libnvrtc.so.12 (loaded by name by libcudnn_engines_runtime_compiled.so.9) is not found" \
	"doctor names libnvrtc.so.12"
assert_out_contains "      fix: install the CUDA 12.4 component cuda-nvrtc (package cuda-nvrtc-12-4) into /usr/local/cuda-12.4" \
	"doctor gives the fix"
cvm --json doctor
assert_json 'sum("libnvrtc.so.12" in p["problem"] for p in d["problems"]) == 1 and sum("libcublasLt.so.12" in p["problem"] for p in d["problems"]) == 1' \
	"doctor --json: one problem per missing library"

# A hand copy (not cudnnvm's) in CUDA 11.8 that needs what that toolkit lacks.
D=$TEST_TMP/hand
mkdir -p "$D"
tar -xJf "$A" -C "$D"
cp -P "$D"/*/lib/libcudnn*.so* "$LIB11/"
cvm doctor
assert_out_contains "  problem: the cuDNN in /usr/local/cuda-11.8/lib64 cannot load: libcublasLt.so.12 (needed by libcudnn_cnn.so.9) is not found" \
	"doctor names what a hand copy lacks"
rm -f "$LIB11"/libcudnn*

# ------------------------------------------------------------------ the toolkit gets them
use_ok 9.1.0 --cuda 12.4 --no-smoke
printf 'stand-in\n' >"$LIB12/libcublasLt.so.12"
printf 'stand-in\n' >"$LIB12/libnvrtc.so.12"
cvm use 9.1.1 --cuda 12.4 --no-smoke
assert_rc 0 "use once the toolkit has both: exit 0"
assert_err_lacks "warning" "use once the toolkit has both: no warning"
assert_uses "$TK12" 12.4 "$ID911" "use once the toolkit has both: 9.1.1 is in use"
cvm doctor
assert_out_lacks "cannot load" "doctor once the toolkit has both: no closure problem"

# A library only the host has does not count for the toolkit's: libnvrtc.so.12 removed again.
rm -f "$LIB12/libnvrtc.so.12"
use_ok 9.1.0 --cuda 12.4 --no-smoke
cvm use 9.1.1 --cuda 12.4 --no-smoke
assert_rc 4 "libnvrtc.so.12 gone again: exit 4"
assert_err_contains "the loader would not find libnvrtc.so.12 (loaded by name by libcudnn_engines_runtime_compiled.so.9); looked in" \
	"only the missing one is named"

# ------------------------------------------------------------------ a root with a C library of its own
# Its system libraries are its own: libz.so.1, which the host has, is missing there.
mkdir -p "$ROOT/usr/lib/x86_64-linux-gnu"
printf 'stand-in\n' >"$ROOT/usr/lib/x86_64-linux-gnu/libc.so.6"
printf 'stand-in\n' >"$LIB12/libnvrtc.so.12"
cvm use 9.1.0 --cuda 12.4 --no-smoke
assert_rc 0 "a root with libc: 9.1.0 (libc.so.6 alone) is used"
cvm use 9.1.1 --cuda 12.4 --no-smoke
assert_rc 4 "a root with libc but no libz: exit 4"
assert_err_line "refusing to activate $ID911 for CUDA 12.4: the loader would not find libz.so.1 (needed by libcudnn_ops.so.9); looked in $LOOKED, /usr/lib/x86_64-linux-gnu, /usr/lib; nothing changed ('cudnnvm use --force' activates it anyway)" \
	"a root with libc: libz.so.1 named, and only the root's folders"
assert_out_contains "  fix for libz.so.1: install zlib (package zlib1g on Debian and Ubuntu, zlib on RHEL)" \
	"a root with libc: zlib's fix"
printf 'stand-in\n' >"$ROOT/usr/lib/x86_64-linux-gnu/libz.so.1"
cvm use 9.1.1 --cuda 12.4 --no-smoke
assert_rc 0 "the root's libz.so.1 there: exit 0"

# install --use activates as use does: refused the same way.
use_ok 9.1.0 --cuda 12.4 --no-smoke
rm -f "$LIB12/libnvrtc.so.12"
cvm --manifests "$MAN" install 9.1.1 --cuda 12.4 --archive "$A" --use
assert_rc 4 "install --use of a version the toolkit lacks libnvrtc.so.12 for: exit 4"
assert_err_line "refusing to activate $ID911 for CUDA 12.4: the loader would not find libnvrtc.so.12 (loaded by name by libcudnn_engines_runtime_compiled.so.9); looked in $LOOKED, /usr/lib/x86_64-linux-gnu, /usr/lib; nothing changed ('cudnnvm use --force' activates it anyway)" \
	"install --use: the same refusal"
assert_uses "$TK12" 12.4 "$ID910" "install --use refused: 9.1.0 is still the one in use"
finish
