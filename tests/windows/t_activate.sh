# SPDX-License-Identifier: MIT
# shellcheck shell=bash
#
# Windows II, activation (sourced by tests/windows/run.sh, with its helpers):
# use, use, rollback, and after each a fresh program (started after
# `wineserver -k`, so that its environment is the registry's) that loads
# cudnn64_9.dll by name; PATH edits keep every other entry and never
# duplicate ours; --user writes only HKCU; a hand-copied DLL is refused;
# --dry-run changes nothing; env and exec; the crash points of the backend.
#
# Wine has no reparse points: the store's active\cuda-X.Y is a link file and
# PATH names the version's folder (the fallback). Junctions are exercised by
# the Windows workflow (.github/workflows/windows.yml) on a real NTFS.

# From run.sh: the 9.1.0 and 8.6.0 zips and ids, the store, the helpers.
: "${ID91:?}" "${ID86:?}" "${A91:?}" "${A86:?}"
SYS_KEY='HKLM\SYSTEM\CurrentControlSet\Control\Session Manager\Environment'
USR_KEY='HKCU\Environment'

# reg_get KEY NAME: the value as stored ("" when unset).
reg_get() {
	MSYS2_ARG_CONV_EXCL='*' run_win reg query "$1" /v "$2" 2>/dev/null | tr -d '\r' |
		sed -n "s/^    $2    REG_[A-Z_]*    //p"
}
reg_set() { MSYS2_ARG_CONV_EXCL='*' run_win reg add "$1" /v "$2" /t REG_EXPAND_SZ /d "$3" /f >/dev/null 2>&1; }
reg_del() { MSYS2_ARG_CONV_EXCL='*' run_win reg delete "$1" /v "$2" /f >/dev/null 2>&1; }
# fresh: what a program started now loads (a new wineserver: the registry's environment).
fresh() { # [DLL]
	[ -z "$NATIVE" ] && "$WINESERVER" -k 2>/dev/null
	LOADED=$(run_win "$TMP/loadcudnn.exe" "$@" 2>/dev/null | tr -d '\r')
}
loads() { # WANT-PATH WANT-VERSION NAME
	local want_path=$1 want_v=$2 name=$3
	fresh
	if [ "$(printf '%s' "$LOADED" | tr '[:upper:]' '[:lower:]')" = "$(printf '%s\t%s' "$want_path" "$want_v" | tr '[:upper:]' '[:lower:]')" ]; then
		ok "$name"
	else
		not_ok "$name" "expected '$want_path	$want_v'" "got '$LOADED'"
	fi
}
# count_entry VALUE ENTRY: how many ';'-separated entries of VALUE are ENTRY (case ignored).
count_entry() {
	printf '%s' "$1" | tr ';' '\n' | tr '[:upper:]' '[:lower:]' | grep -cxF -- "$(printf '%s' "$2" | tr '[:upper:]' '[:lower:]')"
}
# without ENTRY VALUE: VALUE less every ENTRY (the other entries, in order, as they are).
without() {
	printf '%s' "$2" | tr ';' '\n' | E=$1 awk 'tolower($0) != tolower(ENVIRON["E"])' | paste -sd';'
}

"$WIN_CC" -O1 -o "$TMP/loadcudnn.exe" "$HERE/loadcudnn.c"
A92=$(sh "$FIXTURES/mkcudnn-win.sh" "$TMP/archives" 9.2.0.82 12 --manifest "$MAN")
ID92=$(id_of 9.2.0.82 12)
TK124=$TMP/toolkits/v12.4
TK118=$TMP/toolkits/v11.8
sh "$FIXTURES/mktoolkit-win.sh" "$TK124" 12.4
sh "$FIXTURES/mktoolkit-win.sh" "$TK118" 11.8
export CUDA_PATH_V12_4 CUDA_PATH_V11_8
CUDA_PATH_V12_4=$(winpath "$TK124")
CUDA_PATH_V11_8=$(winpath "$TK118")
[ -n "$NATIVE" ] || export WINEPATH=

# The machine PATH as the CUDA installer leaves it (both toolkits' bin), plus
# entries that must come back byte for byte: a trailing '\', an empty entry,
# an unexpanded variable.
SYS0=$(reg_get "$SYS_KEY" Path)
SYS1="$SYS0;$CUDA_PATH_V12_4\\bin;C:\\Odd Folder\\;;%ProgramFiles%\\Tools;$CUDA_PATH_V11_8\\bin"
reg_set "$SYS_KEY" Path "$SYS1"
USR1=$(reg_get "$USR_KEY" Path)

# install --use --dry-run of a version not installed: use's changes too, planned from the
# zip's files; nothing made, one "nothing was changed", last.
cvm --manifests "$WMAN" install 9.2.0 --cuda 12.4 --archive "$(winpath "$A92")" --use --dry-run
rc_is 0 "install --use --dry-run of 9.2.0 exits 0"
case $OUT in
*"would set HKLM"*"dry run: CUDA 12.4 ("*") would use $ID92; nothing was changed")
	if [ "$(printf '%s\n' "$OUT" | grep -c 'nothing was changed')" = 1 ]; then
		ok "install --use --dry-run: the PATH change use would make, then one last 'nothing was changed'"
	else
		not_ok "install --use --dry-run: one 'nothing was changed'" "$(diag_run)"
	fi ;;
*) not_ok "install --use --dry-run: the PATH change use would make, then one last 'nothing was changed'" "$(diag_run)" ;;
esac
if [ "$(reg_get "$SYS_KEY" Path)" = "$SYS1" ] && [ ! -e "$STORE/versions/$ID92" ] && [ ! -e "$STORE/active/cuda-12.4" ]; then
	ok "install --use --dry-run changed neither the registry nor the store"
else
	not_ok "install --use --dry-run changed neither the registry nor the store" "$(ls "$STORE/versions")"
fi
cvm --manifests "$WMAN" install 9.2.0 --cuda 12.4 --archive "$(winpath "$A92")"
rc_is 0 "install 9.2.0 for CUDA 12.4 (a second version)"
cvm --manifests "$WMAN" install 8.6.0 --cuda 11.8 --archive "$(winpath "$A86")"
rc_is 0 "8.6.0 for CUDA 11.8 is installed"
# The PATH entry of a version for a toolkit: STORE\active\cuda-X.Y\bin
# through the junction, or the version's own bin where there are no reparse
# points (wine). JUNCTION is set by the first use (-v says which).
JUNCTION=
entry() { # ID X.Y [STORE]
	if [ -n "$JUNCTION" ]; then winpath "${3:-$STORE}/active/cuda-$2/bin"; else winpath "${3:-$STORE}/versions/$1/bin"; fi
}

# ---- --dry-run changes nothing
cvm use 9.1.0 --cuda 12.4 --dry-run
rc_is 0 "use --dry-run exits 0"
if printf '%s' "$OUT" | grep -qF "would set HKLM"; then ok "use --dry-run says it would set the machine PATH"; else not_ok "use --dry-run says it would set the machine PATH" "$(diag_run)"; fi
if [ "$(reg_get "$SYS_KEY" Path)" = "$SYS1" ] && [ ! -e "$STORE/active/cuda-12.4" ]; then
	ok "use --dry-run changed neither the registry nor the store"
else
	not_ok "use --dry-run changed neither the registry nor the store" "$(reg_get "$SYS_KEY" Path)"
fi

# ---- use, use, rollback: what a new program loads after each
cvm -v use 9.1.0 --cuda 12.4
rc_is 0 "use 9.1.0 --cuda 12.4"
if printf '%s' "$ERR" | grep -qF "junction active"; then
	JUNCTION=1
	ok "-v says the junction is in use"
elif [ -z "$NATIVE" ]; then
	err_has "PATH names the version's folder" "-v says the fallback (no reparse points, as under wine) is in use"
else
	not_ok "-v says the junction is in use (NTFS)" "$(diag_run)"
fi
cvm doctor
if printf '%s\n%s' "$OUT" "$ERR" | grep -qF "active: $ID91 (what loads is the active version's), through $(
	if [ -n "$JUNCTION" ]; then echo "the junction"; else echo "PATH naming the version's folder (no reparse points"; fi)"; then
	ok "doctor says the active version is what loads, and by which means"
else
	not_ok "doctor says the active version is what loads, and by which means" "$(diag_run)"
fi
E91=$(entry "$ID91" 12.4)
E92=$(entry "$ID92" 12.4)
E86=$(entry "$ID86" 11.8)
loads "$E91\\cudnn64_9.dll" 90100 "a new program loads 9.1.0's cudnn64_9.dll by name"
P=$(reg_get "$SYS_KEY" Path)
if [ "$(without "$E91" "$P")" = "$SYS1" ]; then ok "the machine PATH keeps every other entry as it was"; else not_ok "the machine PATH keeps every other entry as it was" "before: $SYS1" "after:  $P"; fi
case $P in
*";$E91;$CUDA_PATH_V12_4\\bin;"*) ok "the entry is just before the toolkit's bin" ;;
*) not_ok "the entry is just before the toolkit's bin" "$P" ;;
esac
if [ "$(reg_get "$SYS_KEY" CUDNN_PATH)" = "$(winpath "$STORE/versions/$ID91")" ]; then ok "CUDNN_PATH names the version"; else not_ok "CUDNN_PATH names the version" "$(reg_get "$SYS_KEY" CUDNN_PATH)"; fi
if [ "$(reg_get "$USR_KEY" Path)" = "$USR1" ]; then ok "use without --user leaves HKCU alone"; else not_ok "use without --user leaves HKCU alone"; fi

cvm use 9.2.0 --cuda 12.4
rc_is 0 "use 9.2.0 --cuda 12.4"
loads "$E92\\cudnn64_9.dll" 90200 "a new program loads 9.2.0's"
P=$(reg_get "$SYS_KEY" Path)
if [ "$(count_entry "$P" "$E92")" = 1 ] && { [ -n "$JUNCTION" ] || [ "$(count_entry "$P" "$E91")" = 0 ]; }; then ok "PATH has 9.2.0's entry once and 9.1.0's no more"; else not_ok "PATH has 9.2.0's entry once and 9.1.0's no more" "$P"; fi
cvm use 9.2.0 --cuda 12.4
rc_is 0 "use 9.2.0 again"
if [ "$(reg_get "$SYS_KEY" Path)" = "$P" ]; then ok "using the active version again changes nothing (no duplicate)"; else not_ok "using the active version again changes nothing" "$(reg_get "$SYS_KEY" Path)"; fi
cvm current --cuda 12.4
if printf '%s' "$OUT" | grep -qF "$ID92"; then ok "current names 9.2.0"; else not_ok "current names 9.2.0" "$(diag_run)"; fi

cvm rollback --cuda 12.4
rc_is 0 "rollback --cuda 12.4"
loads "$E91\\cudnn64_9.dll" 90100 "after rollback a new program loads 9.1.0's again"
if [ "$(without "$E91" "$(reg_get "$SYS_KEY" Path)")" = "$SYS1" ]; then ok "after rollback the other entries are still as they were"; else not_ok "after rollback the other entries are still as they were" "$(reg_get "$SYS_KEY" Path)"; fi
cvm history --cuda 12.4
if [ "$(printf '%s\n' "$OUT" | grep -c "cuda12-windows-x86_64")" -ge 3 ]; then ok "history shows use, use, rollback"; else not_ok "history shows use, use, rollback" "$(diag_run)"; fi

# ---- a second toolkit, its own entry before its own bin
cvm use 8.6.0 --cuda 11.8
rc_is 0 "use 8.6.0 --cuda 11.8"
case $(reg_get "$SYS_KEY" Path) in
*";$E86;$CUDA_PATH_V11_8\\bin"*) ok "8.6.0's entry is just before 11.8's bin" ;;
*) not_ok "8.6.0's entry is just before 11.8's bin" "$(reg_get "$SYS_KEY" Path)" ;;
esac
fresh cudnn64_8.dll
case $LOADED in "$E86\\cudnn64_8.dll"*) ok "cudnn64_8.dll comes from 8.6.0" ;; *) not_ok "cudnn64_8.dll comes from 8.6.0" "$LOADED" ;; esac

# ---- uninstall of an active version is refused
cvm uninstall 9.1.0 --cuda 12.x
rc_is 1 "uninstall of the active 9.1.0 is refused (exit 1)"
err_has "active" "the refusal says it is active"
is_file "$STORE/versions/$ID91/bin/cudnn64_9.dll" "9.1.0 is still whole"

# ---- a cuDNN DLL copied by hand into the toolkit's bin: refused, nothing changed
cp "$STORE/versions/$ID92/bin/cudnn64_9.dll" "$TK124/bin/"
P=$(reg_get "$SYS_KEY" Path)
cvm use 9.2.0 --cuda 12.4
rc_is 1 "use with a hand-copied DLL in the toolkit's bin is refused (exit 1)"
err_has "cudnn64_9.dll' was not put there by cudnnvm" "the refusal names the DLL"
err_has "cudnnvm adopt" "it points to adopt"
if [ "$(reg_get "$SYS_KEY" Path)" = "$P" ]; then ok "the refused use left PATH alone"; else not_ok "the refused use left PATH alone"; fi
cvm current --cuda 12.4
if printf '%s' "$OUT" | grep -qF "$ID91"; then ok "9.1.0 is still the active version"; else not_ok "9.1.0 is still the active version" "$(diag_run)"; fi
rm -f "$TK124/bin/cudnn64_9.dll"

# ---- --user while the machine has a cudnn64_9.dll active: the machine's PATH
# comes first for every program, so the smoke test finds that one, names it, and
# the user's activation is rolled back
USTORE=$TMP/ustore
ucvm() { WSTORE=$(winpath "$USTORE") cvm --user "$@"; }
ucvm --manifests "$WMAN" install 9.2.0 --cuda 12.4 --archive "$(winpath "$A92")"
rc_is 0 "--user install 9.2.0"
U0=$(reg_get "$USR_KEY" Path)
ucvm use 9.2.0 --cuda 12.4
rc_is 4 "--user use under the machine's active 9.1.0: the smoke test fails (exit 4)"
if printf '%s' "$OUT$ERR" | grep -qF "$ID91"; then ok "it names the machine's copy that loads first"; else not_ok "it names the machine's copy that loads first" "$(diag_run)"; fi
if [ "$(reg_get "$USR_KEY" Path)" = "$U0" ]; then ok "the failed --user use is rolled back (HKCU Path as before)"; else not_ok "the failed --user use is rolled back" "$(reg_get "$USR_KEY" Path)"; fi

# ---- env and exec: one shell, one command, no registry
V92BIN=$(winpath "$STORE/versions/$ID92/bin")
cvm env 9.2.0 --cuda 12.4 --shell pwsh
rc_is 0 "env --shell pwsh"
if printf '%s' "$OUT" | grep -qxF "\$env:PATH = '$V92BIN' + \$(if (\$env:PATH) { ';' + \$env:PATH } else { '' })"; then ok "env --shell pwsh puts the version's bin first on PATH"; else not_ok "env --shell pwsh puts the version's bin first on PATH" "$(diag_run)"; fi
cvm env 9.2.0 --cuda 12.4 --shell cmd
rc_is 0 "env --shell cmd"
if printf '%s' "$OUT" | grep -qxF "set \"PATH=$V92BIN;%PATH%\"" &&
	printf '%s' "$OUT" | grep -qxF "set \"CUDNN_PATH=$(winpath "$STORE/versions/$ID92")\""; then
	ok "env --shell cmd sets PATH and CUDNN_PATH"
else
	not_ok "env --shell cmd sets PATH and CUDNN_PATH" "$(diag_run)"
fi
cvm env 9.2.0 --cuda 12.4 --shell tcsh
rc_is 2 "env --shell tcsh is a usage error"
cvm exec 9.2.0 --cuda 12.4 -- "$(winpath "$TMP/loadcudnn.exe")"
rc_is 0 "exec 9.2.0 -- loadcudnn.exe"
case $OUT in "$V92BIN\\cudnn64_9.dll	90200") ok "the command run by exec loads 9.2.0 (9.1.0 is active)" ;; *) not_ok "the command run by exec loads 9.2.0" "$(diag_run)" ;; esac
cvm exec 9.2.0 --cuda 12.4 -- "$(winpath "$TMP/loadcudnn.exe")" --exit 7
rc_is 7 "exec passes the command's exit code on (7)"
cvm exec 9.2.0 --cuda 12.4 -- no-such-program-here
rc_is 127 "exec of a missing command: exit 127"

# ---- crash points: whatever a kill leaves, a new program loads one whole version,
# and the next use of the version now active puts the rest in line
TEXE=$WIN_O/cudnnvm-test.exe
for point in use-prepared use-switched use-finished; do
	cvm use 9.1.0 --cuda 12.4
	EXE=$TEXE CUDNNVM_FAULT=$point cvm use 9.2.0 --cuda 12.4
	if [ "$RC" = 137 ]; then ok "$point: the test build was killed there"; else not_ok "$point: the test build was killed there" "$(diag_run)"; fi
	fresh
	case $LOADED in
	"$E91\\cudnn64_9.dll	90100" | "$E92\\cudnn64_9.dll	90200") ok "$point: a new program loads one whole version" ;;
	*) not_ok "$point: a new program loads one whole version" "$LOADED" ;;
	esac
	cvm current --cuda 12.4
	now=$(printf '%s' "$OUT" | grep -o "9\.[12]\.0\.[0-9]*-cuda12-windows-x86_64" | head -n 1)
	cvm use "${now%%-*}" --cuda 12.4
	P=$(reg_get "$SYS_KEY" Path)
	fresh
	if [ "$RC" = 0 ] && case $LOADED in "$(entry "$now" 12.4)\\cudnn64_9.dll	90${now:2:1}00") true ;; *) false ;; esac &&
		if [ -n "$JUNCTION" ]; then [ "$(count_entry "$P" "$E91")" = 1 ]; else
			[ $(($(count_entry "$P" "$E91") + $(count_entry "$P" "$E92"))) = 1 ]; fi; then
		ok "$point: use of the active version ($now) brings PATH in line"
	else
		not_ok "$point: use of the active version brings PATH in line" "active: $now" "loaded: $LOADED" "$P"
	fi
done

# ---- adopt: a cuDNN copied by hand into a toolkit (the seeds' method) becomes a version
TK126=$TMP/toolkits/v12.6
sh "$FIXTURES/mktoolkit-win.sh" "$TK126" 12.6
export CUDA_PATH_V12_6
CUDA_PATH_V12_6=$(winpath "$TK126")
rm -rf "$TMP/hand" && mkdir -p "$TMP/hand" && (cd "$TMP/hand" && unzip -q "$A92")
HAND=$(echo "$TMP"/hand/*/)
cp "$HAND"bin/*.dll "$TK126/bin/" && cp "$HAND"include/*.h "$TK126/include/" && cp "$HAND"lib/x64/*.lib "$TK126/lib/x64/"
NHAND=$(find "$HAND" -type f -name 'cudnn*' | wc -l)
IDA=9.2.0-cuda12-windows-x86_64
# What a hand copy never has is refused (exit 3, one error naming it, the dry run
# too), and nothing reaches the store: a link (on wine the link file that stands
# in for a reparse point), and a hard link whose other name is outside the copy.
TKSHOWN=$(winpath "$TK126" | tr "\\\\" /)
adopt_refused() { # NAME MESSAGE
	local run
	for run in --dry-run ""; do
		cvm adopt --cuda 12.6 ${run:+"$run"}
		rc_is 3 "adopt ${run:+$run }refuses $1 (exit 3)"
		if [ "$(printf '%s\n' "$ERR" | grep '^cudnnvm: error: ')" = "cudnnvm: error: refusing to adopt $2; nothing changed" ]; then
			ok "adopt ${run:+$run }names $1 and why"
		else
			not_ok "adopt ${run:+$run }names $1 and why" "want: refusing to adopt $2; nothing changed" "$(diag_run)"
		fi
	done
	if [ ! -e "$STORE/versions/$IDA" ] && [ ! -e "$STORE/backups/$IDA" ] && [ -z "$(ls -A "$STORE/.staging" 2>/dev/null)" ] &&
		[ -f "$TK126/bin/cudnn64_9.dll" ] && ! grep -rqs MARK-SECRET "$STORE"; then
		ok "adopt of $1: nothing moved, nothing in the store"
	else
		not_ok "adopt of $1: nothing moved, nothing in the store" "$(find "$STORE/versions" "$STORE/backups" "$STORE/.staging" 2>&1 | head -n 20)"
	fi
}
printf 'MARK-SECRET\n' >"$TMP/secret.txt"
printf '!<cudnnvm-link>\n..\\..\\..\\secret.txt' >"$TK126/include/cudnn_evil.h"
MSYS2_ARG_CONV_EXCL='*' run_win attrib +s "$(winpath "$TK126/include/cudnn_evil.h")" >/dev/null 2>&1
adopt_refused "a link among the headers" \
	"'$TKSHOWN/include/cudnn_evil.h': a link (a symbolic link, junction or link file), which no hand copy of cuDNN has on Windows"
rm -f "$TK126/include/cudnn_evil.h"
ln "$TMP/secret.txt" "$TK126/bin/cudnn_evil64_9.dll"
adopt_refused "a DLL hard-linked from elsewhere" \
	"'$TKSHOWN/bin/cudnn_evil64_9.dll': a file with 2 names (hard links), 1 of them in the hand copy: the others could be any file"
rm -f "$TK126/bin/cudnn_evil64_9.dll"
cvm adopt --cuda 12.6 --dry-run
rc_is 0 "adopt --dry-run"
if [ ! -e "$STORE/versions/$IDA" ] && [ -f "$TK126/bin/cudnn64_9.dll" ]; then ok "adopt --dry-run changed nothing"; else not_ok "adopt --dry-run changed nothing"; fi
cvm adopt --cuda 12.6
rc_is 0 "adopt --cuda 12.6"
same=0
for f in $(cd "$HAND" && find . -type f -name 'cudnn*'); do
	cmp -s "$HAND/$f" "$STORE/versions/$IDA/$f" && cmp -s "$HAND/$f" "$STORE/backups/$IDA/$f" && same=$((same + 1))
done
if [ "$same" = "$NHAND" ] && [ "$NHAND" -gt 10 ]; then ok "the version and the backups hold the $NHAND hand-copied files byte for byte"; else not_ok "the version and the backups hold the hand-copied files byte for byte" "$same of $NHAND"; fi
left=$(find "$TK126" -name 'cudnn*')
if [ -z "$left" ]; then ok "no cuDNN file is left in the toolkit"; else not_ok "no cuDNN file is left in the toolkit" "$left"; fi
fresh
case $LOADED in
"$(entry "$IDA" 12.6)\cudnn64_9.dll	90200") ok "a new program loads the adopted version through PATH" ;;
*) not_ok "a new program loads the adopted version through PATH" "$LOADED" ;;
esac
cvm current --cuda 12.6
if printf '%s' "$OUT" | grep -qF "$IDA"; then ok "current names the adopted version"; else not_ok "current names the adopted version" "$(diag_run)"; fi
cvm uninstall "$IDA" --force
rc_is 0 "uninstall --force of the adopted version"

# ---- leave the toolkits as they were found (9.1.0 installed, nothing active)
cvm uninstall 9.2.0 --cuda 12.4 --force
rc_is 0 "uninstall --force of 9.2.0"
cvm uninstall 8.6.0 --cuda 11.8 --force
rc_is 0 "uninstall --force of the active 8.6.0"
cvm uninstall 9.1.0 --cuda 12.4 --force
rc_is 0 "uninstall --force of the active 9.1.0"
if [ "$(reg_get "$SYS_KEY" Path)" = "$SYS1" ] && [ -z "$(reg_get "$SYS_KEY" CUDNN_PATH)" ]; then
	ok "with nothing active the machine PATH is exactly what it was, CUDNN_PATH gone"
else
	not_ok "with nothing active the machine PATH is exactly what it was, CUDNN_PATH gone" "$(reg_get "$SYS_KEY" Path)" "$(reg_get "$SYS_KEY" CUDNN_PATH)"
fi
cvm --manifests "$WMAN" install 9.1.0 --cuda 12.x --archive "$(winpath "$A91")"
rc_is 0 "9.1.0 installed again for what follows"
# ---- --user with nothing active machine-wide: HKCU only
S=$(reg_get "$SYS_KEY" Path)
SC=$(reg_get "$SYS_KEY" CUDNN_PATH)
ucvm use 9.2.0 --cuda 12.4
rc_is 0 "--user use 9.2.0 --cuda 12.4"
UE92=$(entry "$ID92" 12.4 "$USTORE")
U=$(reg_get "$USR_KEY" Path)
if [ "$(count_entry "$U" "$UE92")" = 1 ]; then ok "--user put the entry in HKCU\\Environment Path once"; else not_ok "--user put the entry in HKCU\\Environment Path once" "$U"; fi
if [ "$(reg_get "$SYS_KEY" Path)" = "$S" ] && [ "$(reg_get "$SYS_KEY" CUDNN_PATH)" = "$SC" ]; then ok "--user left the machine's PATH and CUDNN_PATH alone"; else not_ok "--user left the machine's PATH and CUDNN_PATH alone"; fi
if [ "$(reg_get "$USR_KEY" CUDNN_PATH)" = "$(winpath "$USTORE/versions/$ID92")" ]; then ok "--user set CUDNN_PATH in HKCU"; else not_ok "--user set CUDNN_PATH in HKCU" "$(reg_get "$USR_KEY" CUDNN_PATH)"; fi
ucvm uninstall 9.2.0 --cuda 12.4 --force
rc_is 0 "--user uninstall --force of the active version"
if [ "$(count_entry "$(reg_get "$USR_KEY" Path)" "$UE92")" = 0 ] && [ -z "$(reg_get "$USR_KEY" CUDNN_PATH)" ]; then
	ok "deactivating removed the HKCU entry and CUDNN_PATH"
else
	not_ok "deactivating removed the HKCU entry and CUDNN_PATH" "$(reg_get "$USR_KEY" Path)" "$(reg_get "$USR_KEY" CUDNN_PATH)"
fi
if [ "$(reg_get "$USR_KEY" Path)" = "$USR1" ]; then ok "HKCU Path is as it was before"; else not_ok "HKCU Path is as it was before" "$(reg_get "$USR_KEY" Path)"; fi

skip "junction STORE\\active\\cuda-X.Y re-pointed in place" "wine 8.0 has no reparse points (FSCTL_SET_REPARSE_POINT: ERROR_NOT_SUPPORTED); the link-file fallback ran above"
