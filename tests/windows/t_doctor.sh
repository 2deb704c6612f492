# SPDX-License-Identifier: MIT
# shellcheck shell=bash
#
# Windows II, doctor and which (sourced by tests/windows/run.sh after
# t_activate.sh, whose registry helpers and loadcudnn.exe it uses): a toolkit
# of its own (CUDA_PATH_V12_4), 9.1.0 active, then cuDNN DLLs copied by hand
# into the toolkit, into a folder on PATH (HKCU, then first on HKLM's) and
# into System32, headers of another version beside them. After each step
# doctor's exit code and lines, which's answer, and what a program started
# now really loads (loadcudnn.exe) are compared.
#
# Starts and ends with 9.1.0 installed and nothing active, the registry's
# PATH values and CUDA_PATH_V* as they were.

: "${ID91:?}" "${V91:?}" "${A91:?}" "${WMAN:?}"
if ! declare -F reg_get reg_set fresh without >/dev/null || [ ! -f "$TMP/loadcudnn.exe" ]; then
	not_ok "t_doctor.sh: t_activate.sh's helpers (reg_get, reg_set, fresh, without, loadcudnn.exe) are there"
	return
fi

# says TEXT NAME: doctor's and which's lines (stdout, or stderr for messages) hold TEXT.
says() {
	if printf '%s\n%s' "$OUT" "$ERR" | grep -qiF -- "$1"; then ok "$2"; else not_ok "$2" "no line has '$1'" "$(diag_run)"; fi
}
# same_path A B: whether A and B are the same Windows path (case ignored).
same_path() { [ "$(printf '%s' "$1" | tr '[:upper:]' '[:lower:]')" = "$(printf '%s' "$2" | tr '[:upper:]' '[:lower:]')" ]; }
# which_is PATH NAME: which --cuda 12.4 printed PATH (alone, on its first line), and a
# program started now loads it.
which_is() {
	local want=$1 name=$2
	cvm which --cuda 12.4
	if [ "$RC" = 0 ] && same_path "$(printf '%s\n' "$OUT" | head -n 1)" "$want"; then ok "which: $name"; else not_ok "which: $name" "expected $want" "$(diag_run)"; fi
	fresh
	if same_path "${LOADED%%	*}" "$want"; then ok "a program started now loads it too"; else not_ok "a program started now loads it too" "expected $want" "got '$LOADED'"; fi
}
# json_has PYTHON-EXPR NAME: EXPR is true of doctor --json's document d.
json_has() {
	if printf '%s' "$OUT" | python3 -c "import json,sys; d=json.load(sys.stdin); t=[x for x in d['toolkits'] if x['cuda']=='12.4']; sys.exit(0 if ($1) else 1)" 2>/dev/null; then
		ok "$2"
	else
		not_ok "$2" "$(diag_run)"
	fi
}

DTK=$TMP/doctor/v12.4
sh "$FIXTURES/mktoolkit-win.sh" "$DTK" 12.4
WDTK=$(winpath "$DTK")
# Only this toolkit: the others' CUDA_PATH* are put back at the end.
SAVED_CUDA=$(export -p | grep -E '^declare -x CUDA_PATH(_V[0-9_]+)?=' || true)
for v in $(compgen -e | grep -E '^CUDA_PATH(_V[0-9_]+)?$'); do unset "$v"; done
export CUDA_PATH_V12_4=$WDTK
SYS_SAVED=$(reg_get "$SYS_KEY" Path)
USR_SAVED=$(reg_get "$USR_KEY" Path)
WV91BIN=$(winpath "$V91/bin")
ONPATH=$TMP/doctor/onpath
WONPATH=$(winpath "$ONPATH")
mkdir -p "$ONPATH"

# ---- nothing active, no copy but the store's: clean
fresh
cvm doctor
rc_is 0 "doctor with only the store's copy and nothing active: exit 0"
says "cuDNN copies found: 1" "doctor finds one copy (the store's)"
says "no NVIDIA driver found" "doctor says no NVIDIA driver was found (wine has no nvcuda.dll)"
says "its own folder (not known here" "doctor says the program's own folder is not known here"
says "no cudnn64_9.dll in System32, the Windows folder or any PATH entry" "doctor: nothing for CUDA 12.4 to load"
cvm which --cuda 12.4
rc_is 1 "which with nothing to load: exit 1"
says "finds no cudnn64_N.dll of any major (7 to 9): not in System32" "which says no cudnn64 DLL of any major is found (nothing says which)"

# ---- 9.1.0 active: what loads is the active version's
cvm use 9.1.0 --cuda 12.4 --no-smoke
rc_is 0 "use 9.1.0 --cuda 12.4"
fresh
cvm doctor
rc_is 0 "doctor with 9.1.0 active: exit 0"
says "they load $WV91BIN\\cudnn64_9.dll (cuDNN 9.1.0.70): PATH entry" "doctor: programs load the active version's DLL, by its PATH entry"
says "active: $ID91 (what loads is the active version's)" "doctor: what loads is the active version's"
which_is "$WV91BIN\\cudnn64_9.dll" "the active version's cudnn64_9.dll"
says "the active version, $ID91" "which says it is the active version"

# ---- copies by hand: the toolkit's (with a version resource, headers of
# 9.1.0), and a folder on the user's PATH: behind the active one, so not
# loaded, but the toolkit's headers and DLL disagree
WINDRES=${WIN_CC%gcc}windres
if command -v "$WINDRES" >/dev/null 2>&1; then
	printf '1 VERSIONINFO\nFILEVERSION 9,2,0,82\nPRODUCTVERSION 9,2,0,82\nBEGIN\nEND\n' >"$TMP/doctor/v.rc"
	printf '#include <stddef.h>\n__declspec(dllexport) size_t cudnnGetVersion(void) { return 90200u; }\n' >"$TMP/doctor/v.c"
	"$WINDRES" "$TMP/doctor/v.rc" -O coff -o "$TMP/doctor/v.o" &&
		"$WIN_CC" -shared -O1 -o "$TMP/doctor/cudnn64_9.dll" "$TMP/doctor/v.c" "$TMP/doctor/v.o"
	RES=1
else
	cp "$V91/bin/cudnn64_9.dll" "$TMP/doctor/cudnn64_9.dll"
	RES=
fi
cp "$TMP/doctor/cudnn64_9.dll" "$DTK/bin/"
cp "$V91/include/cudnn_version.h" "$DTK/include/"
cp "$V91/bin/cudnn64_9.dll" "$ONPATH/"
reg_set "$USR_KEY" Path "$WONPATH;$WDTK\\bin"
fresh
cvm doctor
rc_is 1 "doctor with hand copies whose headers and DLL disagree: exit 1"
says "cuDNN copies found: 3" "doctor finds the store's, the toolkit's and the PATH folder's copies"
# The listing's columns as wide as their widest entry: 'headers' and the folder at one offset.
cols=$(printf '%s\n' "$OUT" | tr -d '\r' | sed -n '/^cuDNN copies found: /,/^NVIDIA driver/p' | sed '1d;$d' |
	awk '{ print index($0, " headers "), length($0) - length($NF) }' | sort -u)
if [ "$(printf '%s\n' "$cols" | wc -l)" = 1 ] && [ "${cols%% *}" != 0 ]; then
	ok "doctor's copies line up in columns"
else
	not_ok "doctor's copies line up in columns" "offsets: $cols" "$(diag_run)"
fi
if [ -n "$RES" ]; then
	says "$WDTK\\bin: the headers beside it say cuDNN 9.1.0, cudnn64_9.dll's version resource says 9.2.0" \
		"doctor: the toolkit's headers (9.1.0) and DLL (9.2.0, by its version resource) disagree"
	cvm --json doctor
	json_has "any(c['version_from']=='version resource' and c['library_version']==90200 for c in d['copies'])" \
		"doctor --json: the toolkit's copy is 9.2.0 by its version resource"
else
	skip "doctor reads a DLL's version resource" "no $WINDRES to build one"
	skip "doctor --json: the version resource's version" "no $WINDRES"
fi
cvm doctor
says "also cudnn64_9.dll in $WONPATH" "doctor names the copy on the user's PATH, after the active one"
says "also cudnn64_9.dll in $WDTK\\bin" "doctor names the toolkit's copy, after the active one"
says "active: $ID91 (what loads is the active version's)" "the active version still loads (the machine's PATH comes first)"
which_is "$WV91BIN\\cudnn64_9.dll" "still the active version's"

# ---- the folder first on the machine's PATH: it loads, ahead of the active one
reg_set "$SYS_KEY" Path "$WONPATH;$(reg_get "$SYS_KEY" Path)"
fresh
cvm doctor
rc_is 1 "doctor with a copy ahead of the active one: exit 1"
says "they load $WONPATH\\cudnn64_9.dll (cuDNN 9.x): PATH entry 1: $WONPATH" "doctor: programs load the copy of PATH entry 1 (version by the file name)"
says "PATH entry 1 ($WONPATH) holds another cudnn64_9.dll (cuDNN 9.x), ahead of the active version's" "doctor: the copy ahead of the active version is a problem"
says "programs load it, not the active version" "doctor says programs load it instead of the active version"
says "take $WONPATH out of PATH (HKLM" "the fix names the folder and the machine's PATH"
which_is "$WONPATH\\cudnn64_9.dll" "the copy of PATH entry 1"
says "PATH entry 1: $WONPATH" "which says why: PATH entry 1"
says "not the active version, $ID91" "which says it is not the active version"
cvm --json doctor
rc_is 1 "doctor --json: exit 1"
json_has "t and t[0]['why']=='PATH entry 1' and t[0]['loads'].lower().endswith('\\\\onpath\\\\cudnn64_9.dll')" \
	"doctor --json: CUDA 12.4 loads the PATH entry 1 copy"
json_has "t[0]['active']=='$ID91' and t[0]['loads_active'] is False and len(d['problems'])>=1" \
	"doctor --json: the active version is named, not loaded, and the problem listed"
cvm --json which --cuda 12.4
if printf '%s' "$OUT" | python3 -c 'import json,sys; d=json.load(sys.stdin); sys.exit(0 if d["why"]=="PATH" and d["library"].lower().endswith("onpath\\cudnn64_9.dll") else 1)' 2>/dev/null; then
	ok "which --json: why PATH, the library of PATH entry 1"
else
	not_ok "which --json: why PATH, the library of PATH entry 1" "$(diag_run)"
fi

# ---- this process's PATH differs from the registry's (a shell set by hand)
reg_set "$SYS_KEY" Path "$(without "$WONPATH" "$(reg_get "$SYS_KEY" Path)")"
fresh
MSYS2_ARG_CONV_EXCL='*' run_win cmd /c "set PATH=$WONPATH;%PATH%&& $(winpath "$EXE") --store $WSTORE doctor" >"$TMP/out" 2>"$TMP/err"
RC=$? OUT=$(tr -d '\r' <"$TMP/out") ERR=$(tr -d '\r' <"$TMP/err")
says "this process's PATH is not the registry's" "doctor says this process's PATH is not the registry's"
says "programs started from here load $WONPATH\\cudnn64_9.dll: PATH entry 1" "doctor says what programs started from this shell load"
says "active: $ID91 (what loads is the active version's)" "a program started now still loads the active version"

# ---- System32 comes before every PATH entry
if [ -z "$NATIVE" ]; then
	SYS32=$WINEPREFIX/drive_c/windows/system32
	cp "$TMP/doctor/cudnn64_9.dll" "$SYS32/"
	fresh
	cvm doctor
	rc_is 1 "doctor with a copy in System32: exit 1"
	says "System32 (C:\\windows\\system32) holds another cudnn64_9.dll" "doctor: the System32 copy is ahead of the active version"
	says "a copy in a system folder comes before every PATH entry" "the fix says a system folder comes before PATH"
	which_is "C:\\windows\\system32\\cudnn64_9.dll" "the System32 copy"
	rm -f "$SYS32/cudnn64_9.dll"
else
	skip "a copy in System32" "writing System32 needs an elevated prompt"
fi

# ---- the toolkit's headers of another major than the active version
sed -i 's/^#define CUDNN_MAJOR .*/#define CUDNN_MAJOR 8/' "$DTK/include/cudnn_version.h"
cp "$V91/bin/cudnn64_9.dll" "$DTK/bin/"
fresh
cvm doctor
rc_is 1 "doctor with cuDNN 8 headers in the toolkit and 9.1.0 active: exit 1"
says "programs look for cudnn64_8.dll (the major of the toolkit's headers)" "doctor: the toolkit's headers decide the DLL's name"
says "but the active version $ID91 is cuDNN 9" "doctor: the headers' major is not the active version's"
says "(majors compared by the file name: cudnn64_9.dll has no cuDNN version resource)" "doctor says it compared majors by the file name"
cvm which --cuda 12.4
rc_is 1 "which finds no cudnn64_8.dll: exit 1"
says "finds no cudnn64_8.dll" "which names cudnn64_8.dll"

# ---- as it was: no hand copies, the registry's PATH values, nothing active
rm -f "$DTK/bin/cudnn64_9.dll" "$DTK/include/cudnn_version.h" "$ONPATH/cudnn64_9.dll"
reg_set "$USR_KEY" Path "$USR_SAVED"
cvm uninstall 9.1.0 --cuda 12.4 --force
rc_is 0 "t_doctor: uninstall --force of the active 9.1.0"
if [ "$(reg_get "$SYS_KEY" Path)" = "$SYS_SAVED" ]; then ok "t_doctor: the machine PATH is as it was"; else not_ok "t_doctor: the machine PATH is as it was" "$(reg_get "$SYS_KEY" Path)"; fi
cvm --manifests "$WMAN" install 9.1.0 --cuda 12.x --archive "$(winpath "$A91")"
rc_is 0 "t_doctor: 9.1.0 installed again for what follows"
unset CUDA_PATH_V12_4
eval "$SAVED_CUDA"
fresh
