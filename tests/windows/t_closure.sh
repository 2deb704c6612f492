# SPDX-License-Identifier: MIT
# shellcheck shell=bash
#
# The load closure on Windows (lib/closure_win.c over lib/peinfo.c), sourced
# by tests/windows/run.sh after t_activate.sh (its registry helpers): fixture
# DLLs built with mingw that import (cublas64_12.dll) or load by name
# (nvrtc64_120_0.dll) what a toolkit lacks. use refuses them (exit 4, also
# with --no-smoke) naming each missing DLL and where it looked, --force
# activates anyway, doctor names what the active version and a hand copy
# cannot load with the component that provides it; a DLL found in the
# toolkit's bin or on the PATH a new program gets counts. Then zlibwapi.dll:
# install of an 8.9 zip puts the one beside cudnnvm.exe in the version's bin,
# where a program started after use finds it.
: "${SYS_KEY:?}" "${USR_KEY:?}" "${MAN:?}"

CL=$TMP/closure
TKC=$CL/v12.8
sh "$FIXTURES/mktoolkit-win.sh" "$TKC" 12.8
export CUDA_PATH_V12_8
CUDA_PATH_V12_8=$(winpath "$TKC")
# A stub DLL of the name given, built with mingw into folder DIR.
stub_dll() { # DIR NAME
	mkdir -p "$1"
	printf '__declspec(dllexport) int stub_fn(void) { return 0; }\n' >"$CL/stub.c"
	"$WIN_CC" -shared -o "$1/$2" "$CL/stub.c"
}
# err_is LINE NAME: stderr has LINE as a whole line.
err_is() {
	if printf '%s\n' "$ERR" | grep -qxF -- "$1"; then ok "$2"; else not_ok "$2" "no stderr line '$1'" "$(diag_run)"; fi
}
# says TEXT NAME: a line of stdout or stderr holds TEXT (doctor's problems and fixes).
command -v says >/dev/null 2>&1 || says() {
	if printf '%s\n%s' "$OUT" "$ERR" | grep -qF -- "$1"; then ok "$2"; else not_ok "$2" "no line has '$1'" "$(diag_run)"; fi
}
out_is() {
	if printf '%s\n' "$OUT" | grep -qxF -- "$1"; then ok "$2"; else not_ok "$2" "no stdout line '$1'" "$(diag_run)"; fi
}

A911=$(sh "$FIXTURES/mkcudnn-win.sh" "$CL/archives" 9.1.1.17 12 --manifest "$MAN" \
	--needs cudnn_cnn=cublas64_12.dll --loads cudnn_engines_runtime_compiled=nvrtc64_120_0.dll)
ID911=$(id_of 9.1.1.17 12)
V911=$(winpath "$STORE/versions/$ID911/bin")
# What the loader searches, as use and doctor say it: the version's folder, the toolkit's
# bin, the API sets, System32, the Windows folder, then the PATH's other entries.
SYSPATH=$(run_win cmd /c echo %SystemRoot% 2>/dev/null | tr -d '\r')
TKBIN="$CUDA_PATH_V12_8\\bin"
LOOKED_HEAD="$TKBIN, the API sets, $SYSPATH\\system32, $SYSPATH"

cvm --manifests "$WMAN" install 9.1.1 --cuda 12.8 --archive "$(winpath "$A911")"
rc_is 0 "closure: install 9.1.1 for CUDA 12.8"
err_has "warning: CUDA 12.8 ($CUDA_PATH_V12_8) lacks what $ID911 needs to load: cublas64_12.dll (needed by cudnn_cnn64_9.dll), nvrtc64_120_0.dll (loaded by name by cudnn_engines_runtime_compiled64_9.dll); 'cudnnvm use' refuses it there until it has them" \
	"closure: install warns of what CUDA 12.8 lacks"

P0=$(reg_get "$SYS_KEY" Path)
for smoke in "" --no-smoke; do
	cvm use 9.1.1 --cuda 12.8 $smoke
	rc_is 4 "closure: use ${smoke:+$smoke }of a version whose closure CUDA 12.8 lacks: exit 4"
	if printf '%s\n' "$ERR" | grep -qF "error: refusing to activate $ID911 for CUDA 12.8: the loader would not find cublas64_12.dll (needed by cudnn_cnn64_9.dll), nvrtc64_120_0.dll (loaded by name by cudnn_engines_runtime_compiled64_9.dll); looked in $V911, $LOOKED_HEAD" &&
		printf '%s\n' "$ERR" | grep -qF "; nothing changed ('cudnnvm use --force' activates it anyway)"; then
		ok "closure: use ${smoke:+$smoke }names both DLLs and where it looked"
	else
		not_ok "closure: use ${smoke:+$smoke }names both DLLs and where it looked" "$(diag_run)"
	fi
	if [ "$(reg_get "$SYS_KEY" Path)" = "$P0" ]; then ok "closure: the refused use left PATH alone"; else not_ok "closure: the refused use left PATH alone"; fi
done
out_is "  fix for cublas64_12.dll: install the CUDA 12.8 component cublas (the installer's subpackage cublas_12.8) into $CUDA_PATH_V12_8" \
	"closure: the fix for cublas64_12.dll names the installer's component"
out_is "  fix for nvrtc64_120_0.dll: install the CUDA 12.8 component nvrtc (the installer's subpackage nvrtc_12.8) into $CUDA_PATH_V12_8" \
	"closure: the fix for nvrtc64_120_0.dll names the installer's component"

# cublas64_12.dll in the toolkit's bin: only nvrtc is missing.
stub_dll "$TKC/bin" cublas64_12.dll
cvm use 9.1.1 --cuda 12.8 --no-smoke
rc_is 4 "closure: with the toolkit's cublas64_12.dll, use still refuses (exit 4)"
if printf '%s' "$ERR" | grep -qF "the loader would not find nvrtc64_120_0.dll (loaded by name by cudnn_engines_runtime_compiled64_9.dll); looked in"; then
	ok "closure: only nvrtc64_120_0.dll is named"
else
	not_ok "closure: only nvrtc64_120_0.dll is named" "$(diag_run)"
fi

# --force: activated, with the warning; doctor then names what the active version cannot load.
cvm use 9.1.1 --cuda 12.8 --no-smoke --force
rc_is 0 "closure: use --force activates it anyway"
err_has "warning: --force: activating $ID911 for CUDA 12.8 although the loader would not find nvrtc64_120_0.dll (loaded by name by cudnn_engines_runtime_compiled64_9.dll); looked in $V911, $LOOKED_HEAD" \
	"closure: --force says what is missing as a warning"
cvm doctor
rc_is 1 "closure: doctor with an active version that cannot load: exit 1"
says "$ID911, active for CUDA 12.8, cannot load: nvrtc64_120_0.dll (loaded by name by cudnn_engines_runtime_compiled64_9.dll) is not found (looked in $V911, $LOOKED_HEAD" \
	"closure: doctor names the active version's missing DLL"
says "install the CUDA 12.8 component nvrtc (the installer's subpackage nvrtc_12.8) into $CUDA_PATH_V12_8" \
	"closure: doctor gives the component as the fix"

# nvrtc on the PATH a new program gets (the user's): found there, doctor is clean of it.
UP0=$(reg_get "$USR_KEY" Path)
stub_dll "$CL/nvrtc" nvrtc64_120_0.dll
reg_set "$USR_KEY" Path "${UP0:+$UP0;}$(winpath "$CL/nvrtc")"
cvm use 9.1.1 --cuda 12.8 --no-smoke
rc_is 0 "closure: nvrtc64_120_0.dll on the user's PATH: use exits 0"
cvm doctor
if printf '%s\n%s' "$OUT" "$ERR" | grep -qF "cannot load"; then
	not_ok "closure: doctor has no closure problem once the PATH has it" "$(diag_run)"
else
	ok "closure: doctor has no closure problem once the PATH has it"
fi
reg_set "$USR_KEY" Path "$UP0"
[ -n "$UP0" ] || reg_del "$USR_KEY" Path

# A hand copy in another toolkit's bin (no cublas there): doctor names it too.
TKH=$CL/v12.9
sh "$FIXTURES/mktoolkit-win.sh" "$TKH" 12.9
export CUDA_PATH_V12_9
CUDA_PATH_V12_9=$(winpath "$TKH")
cp "$STORE/versions/$ID911/bin/"*.dll "$TKH/bin/"
cvm doctor
rc_is 1 "closure: doctor with a hand copy that cannot load: exit 1"
says "the cuDNN in $CUDA_PATH_V12_9\\bin cannot load: cublas64_12.dll (needed by cudnn_cnn64_9.dll) is not found" \
	"closure: doctor names the hand copy's missing import"
says "install the CUDA 12.9 component cublas (the installer's subpackage cublas_12.9) into $CUDA_PATH_V12_9" \
	"closure: and the component that provides it"
rm -f "$TKH/bin/"cudnn*.dll
unset CUDA_PATH_V12_9

# ---- zlibwapi.dll: cuDNN 8.3 to 8.x load it; install puts the one beside cudnnvm.exe in the
# version's bin, recorded like its own files; a program started after use finds it on PATH.
A897=$(sh "$FIXTURES/mkcudnn-win.sh" "$CL/archives" 8.9.7.29 12 --manifest "$MAN" \
	--loads cudnn_ops_infer=zlibwapi.dll)
ID897=$(id_of 8.9.7.29 12)
V897=$STORE/versions/$ID897
cvm --manifests "$WMAN" install 8.9.7 --cuda 12.8 --archive "$(winpath "$A897")" --dry-run
rc_is 0 "zlibwapi: install --dry-run of 8.9.7"
if printf '%s\n' "$OUT" | grep -qF "$ID897/bin/zlibwapi.dll (beside cudnnvm: cuDNN 8.3 to 8.x load it)"; then
	ok "zlibwapi: install --dry-run says it would put zlibwapi.dll in the version's bin"
else
	not_ok "zlibwapi: install --dry-run says it would put zlibwapi.dll in the version's bin" "$(diag_run)"
fi
is_absent "$V897" "zlibwapi: install --dry-run made nothing"
cvm --manifests "$WMAN" install 8.9.7 --cuda 12.8 --archive "$(winpath "$A897")"
rc_is 0 "zlibwapi: install 8.9.7 for CUDA 12.8"
if cmp -s "$V897/bin/zlibwapi.dll" "$(dirname "$EXE")/zlibwapi.dll"; then
	ok "zlibwapi: the version's bin has the zlibwapi.dll beside cudnnvm.exe"
else
	not_ok "zlibwapi: the version's bin has the zlibwapi.dll beside cudnnvm.exe" "$(ls -l "$V897/bin" 2>&1)"
fi
if grep -q '  bin/zlibwapi.dll$' "$V897/.cudnnvm/files.sha256" 2>/dev/null &&
	grep -qF "$(sha256 "$V897/bin/zlibwapi.dll")" "$V897/.cudnnvm/files.sha256"; then
	ok "zlibwapi: the record lists bin/zlibwapi.dll with its SHA-256"
else
	not_ok "zlibwapi: the record lists bin/zlibwapi.dll with its SHA-256" "$(cat "$V897/.cudnnvm/files.sha256" 2>&1)"
fi
cvm use 8.9.7 --cuda 12.8 --no-smoke
rc_is 0 "zlibwapi: use 8.9.7 --cuda 12.8: its closure is whole (zlibwapi.dll in its bin)"
"$WIN_CC" -O1 -o "$CL/loadz.exe" "$HERE/loadz.c"
[ -z "$NATIVE" ] && "$WINESERVER" -k 2>/dev/null
LOADED=$(run_win "$CL/loadz.exe" 2>/dev/null | tr -d '\r')
if [ "$(printf '%s' "$LOADED" | tr '[:upper:]' '[:lower:]')" = "$(printf '%s\t1.2.13' "$(winpath "$V897/bin/zlibwapi.dll")" | tr '[:upper:]' '[:lower:]')" ]; then
	ok "zlibwapi: a program started after use loads the version's zlibwapi.dll by name (zlibVersion 1.2.13)"
else
	not_ok "zlibwapi: a program started after use loads the version's zlibwapi.dll by name" "got '$LOADED'"
fi
cvm verify
rc_is 0 "zlibwapi: verify passes"
chmod u+w "$V897/bin/zlibwapi.dll"
printf 'tampered' >>"$V897/bin/zlibwapi.dll"
cvm verify
if [ "$RC" = 3 ] && printf '%s\n%s' "$OUT" "$ERR" | grep -q 'zlibwapi.dll'; then
	ok "zlibwapi: verify catches a modified zlibwapi.dll (exit 3, named)"
else
	not_ok "zlibwapi: verify catches a modified zlibwapi.dll (exit 3, named)" "$(diag_run)"
fi
cp "$(dirname "$EXE")/zlibwapi.dll" "$V897/bin/zlibwapi.dll"

# Uninstalled with the version (another one active first; a hand copy then checked).
cvm use 9.1.1 --cuda 12.8 --no-smoke --force
# A hand copy of 8.9.7 without it (PATH now names 9.1.1's bin, which has none): doctor
# names zlibwapi.dll and where to get it; adopt then makes it a version that has it.
rm -rf "$CL/hand" && mkdir -p "$CL/hand" && (cd "$CL/hand" && unzip -q "$A897")
HAND=$(echo "$CL"/hand/*/)
cp "$HAND"bin/*.dll "$TKH/bin/" && cp "$HAND"include/*.h "$TKH/include/" && cp "$HAND"lib/x64/*.lib "$TKH/lib/x64/"
export CUDA_PATH_V12_9
CUDA_PATH_V12_9=$(winpath "$TKH")
cvm doctor
rc_is 1 "zlibwapi: doctor with a hand copy of 8.9.7 without zlibwapi.dll: exit 1"
says "the cuDNN in $CUDA_PATH_V12_9\\bin cannot load: zlibwapi.dll (loaded by name by cudnn_ops_infer64_8.dll) is not found" \
	"zlibwapi: doctor names the hand copy's missing zlibwapi.dll"
says "cudnnvm provides it: 'cudnnvm adopt' makes a copy in a toolkit a version with it in its bin folder ('cudnnvm install' puts it in every version that loads it); or copy the zlibwapi.dll beside cudnnvm.exe into the DLLs' folder" \
	"zlibwapi: doctor's fix says where to get it"
cvm uninstall 8.9.7 --cuda 12.x
rc_is 0 "zlibwapi: uninstall 8.9.7"
is_absent "$V897/bin/zlibwapi.dll" "zlibwapi: its zlibwapi.dll is gone with it"
# A cudnnvm.exe with no zlibwapi.dll beside it: install says what the version lacks, and
# use refuses it for that (exit 4) with the fix.
mkdir -p "$CL/bare"
cp "$EXE" "$CL/bare/cudnnvm.exe"
EXE=$CL/bare/cudnnvm.exe cvm --manifests "$WMAN" install 8.9.7 --cuda 12.8 --archive "$(winpath "$A897")"
rc_is 0 "zlibwapi: install by a cudnnvm.exe without zlibwapi.dll beside it: exit 0"
err_is "cudnnvm: warning: $ID897 needs zlibwapi.dll at run time and none is beside cudnnvm (this build has none): put one on PATH" \
	"zlibwapi: install warns that none is beside cudnnvm.exe"
is_absent "$V897/bin/zlibwapi.dll" "zlibwapi: the version has none"
cvm use 8.9.7 --cuda 12.8 --no-smoke
rc_is 4 "zlibwapi: use of a version without zlibwapi.dll: exit 4"
err_has "the loader would not find zlibwapi.dll (loaded by name by cudnn_ops_infer64_8.dll); looked in $(winpath "$V897/bin"), $LOOKED_HEAD" \
	"zlibwapi: use names zlibwapi.dll and where it looked"
cvm uninstall 8.9.7 --cuda 12.x
IDH=8.9.7-cuda12-windows-x86_64
cvm adopt --cuda 12.9
rc_is 0 "zlibwapi: adopt --cuda 12.9 of the hand copy"
if cmp -s "$STORE/versions/$IDH/bin/zlibwapi.dll" "$(dirname "$EXE")/zlibwapi.dll" &&
	grep -q '  bin/zlibwapi.dll$' "$STORE/versions/$IDH/.cudnnvm/files.sha256"; then
	ok "zlibwapi: the adopted version has zlibwapi.dll, recorded"
else
	not_ok "zlibwapi: the adopted version has zlibwapi.dll, recorded" "$(ls -l "$STORE/versions/$IDH/bin" 2>&1)"
fi
cvm verify
rc_is 0 "zlibwapi: verify passes with the adopted version"
cvm uninstall "$IDH" --force
rc_is 0 "zlibwapi: uninstall --force of the adopted version"
unset CUDA_PATH_V12_9 CUDA_PATH_V12_8
