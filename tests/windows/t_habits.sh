# SPDX-License-Identifier: MIT
# shellcheck shell=bash
#
# The Windows habits (sourced by tests/windows/run.sh after t_activate.sh, or
# alone with WIN_ONLY=t_habits.sh, when it makes its own CUDA 12.4 toolkit):
# exec builds the command line as the C runtime splits it and gives cmd.exe
# its own line (cmd /c exit 7, a .bat and its exit code); the advice of
# "already installed"; use --cuda 11.x.

: "${ID91:?}" "${A91:?}"
# A store of its own, with 9.1.0 for CUDA 12 only.
HABITS_SAVED=("$STORE" "$WSTORE")
STORE=$TMP/store-habits
WSTORE=$(winpath "$STORE")
cvm --manifests "$WMAN" install 9.1.0 --cuda 12.x --archive "$(winpath "$A91")"
rc_is 0 "habits: 9.1.0 installed in a store of its own"
# toolkit X.Y: CUDA_PATH_VX_Y names a toolkit, made (mktoolkit-win.sh) when the run has none.
toolkit() {
	eval "[ -z \"\${CUDA_PATH_V$(echo "$1" | tr . _):-}\" ]" || return 0
	sh "$FIXTURES/mktoolkit-win.sh" "$TMP/toolkits/v$1" "$1"
	eval "export CUDA_PATH_V$(echo "$1" | tr . _)=\"\$(winpath \"\$TMP/toolkits/v$1\")\""
	[ -n "$NATIVE" ] || export WINEPATH=
}
toolkit 12.4
# out_is WANT NAME: stdout is exactly WANT.
out_is() { if [ "$OUT" = "$1" ]; then ok "$2"; else not_ok "$2" "want stdout: $1" "$(diag_run)"; fi; }

# ---- exec: cmd.exe's own line, a .bat and the exit codes
cvm exec 9.1.0 --cuda 12.4 -- cmd /c exit 7
rc_is 7 "exec -- cmd /c exit 7 returns 7"
cvm exec 9.1.0 --cuda 12.4 -- cmd /c "echo one& echo two"
out_is "one
two" "exec -- cmd /c 'echo one& echo two': cmd parses the line it was given"
mkdir -p "$TMP/bat dir"
printf '@echo off\r\necho built %%~1 %%2\r\nexit /b 5\r\n' >"$TMP/bat dir/build.bat"
cp "$TMP/bat dir/build.bat" "$TMP/build.bat"
cvm exec 9.1.0 --cuda 12.4 -- cmd /c "$(winpath "$TMP/build.bat")" "a b" c
rc_is 5 "exec -- cmd /c build.bat returns the .bat's exit code (5)"
out_is "built a b c" "exec -- cmd /c build.bat \"a b\" c: the .bat has its arguments"
cvm exec 9.1.0 --cuda 12.4 -- cmd /c "$(winpath "$TMP/bat dir/build.bat")" "x y" z
rc_is 5 "exec -- cmd /c on a .bat in a folder with a space returns its exit code"
out_is "built x y z" "exec -- cmd /c '...\\bat dir\\build.bat' \"x y\" z: the .bat has its arguments"
cvm exec 9.1.0 --cuda 12.4 -- cmd /c "$(winpath "$TMP/bat dir/build.bat")"
rc_is 5 "exec -- cmd /c '...\\bat dir\\build.bat' alone"
# An ordinary program: arguments as the C runtime splits them (quotes, backslashes, empty).
printf '#include <stdio.h>\nint main(int c, char **v) { for (int i = 1; i < c; i++) printf("[%%s]\\n", v[i]); return 4; }\n' >"$TMP/argv.c"
"$WIN_CC" -o "$TMP/argv.exe" "$TMP/argv.c"
cvm exec 9.1.0 --cuda 12.4 -- "$(winpath "$TMP/argv.exe")" plain 'a "b" c\' 'd\\"e' '' 'x\y' 'tab	z'
rc_is 4 "exec -- a program: its exit code (4)"
out_is '[plain]
[a "b" c\]
[d\\"e]
[]
[x\y]
[tab	z]' "exec -- a program: each argument arrives as it was given"

# ---- "already installed": advice that works on Windows (--force cannot replace there yet)
cvm --manifests "$WMAN" install 9.1.0 --cuda 12.x --archive "$(winpath "$A91")"
rc_is 0 "install of an installed version exits 0"
if [ "$OUT" = "$ID91 is already installed in $(printf '%s' "$WSTORE" | tr '\\' /)/versions/$ID91 (to reinstall it: cudnnvm uninstall 9.1.0.70 --cuda 12.x, then install again)" ]; then
	ok "already installed: the advice is uninstall, then install"
else
	not_ok "already installed: the advice is uninstall, then install" "$(diag_run)"
fi
cvm uninstall 9.1.0.70 --cuda 12.x
rc_is 0 "the advice works: uninstall 9.1.0.70 --cuda 12.x"
cvm --manifests "$WMAN" install 9.1.0 --cuda 12.x --archive "$(winpath "$A91")"
rc_is 0 "the advice works: install again"

# ---- use --cuda 11.x, as install takes it: the one CUDA 11 toolkit
toolkit 11.8
cvm --manifests "$WMAN" install 8.6.0 --cuda 11.x --archive "$(winpath "$A86")"
rc_is 0 "habits: 8.6.0 for CUDA 11 installed"
cvm use 8.6.0 --cuda 11.x --dry-run
rc_is 0 "use --cuda 11.x is taken (the one CUDA 11 toolkit)"
TKD=$(winpath "$TMP/toolkits" | tr '\\' /)
if [ "$(printf '%s\n' "$OUT" | tail -n 1)" = "dry run: CUDA 11.8 ($TKD/v11.8) would use $ID86; nothing was changed" ]; then
	ok "use --cuda 11.x picks CUDA 11.8"
else
	not_ok "use --cuda 11.x picks CUDA 11.8" "$(diag_run)"
fi
CUDA_PATH_V11_7=$(winpath "$TMP/toolkits/v11.7")
sh "$FIXTURES/mktoolkit-win.sh" "$TMP/toolkits/v11.7" 11.7
# Two CUDA 11 toolkits and a default of another major: 11.x is the newest of that major (as every --cuda X takes it).
CUDA_PATH_V11_7=$CUDA_PATH_V11_7 cvm use 8.6.0 --cuda 11.x --dry-run
rc_is 0 "use --cuda 11.x with two CUDA 11 toolkits is taken"
if [ "$(printf '%s\n' "$OUT" | tail -n 1)" = "dry run: CUDA 11.8 ($TKD/v11.8) would use $ID86; nothing was changed" ]; then
	ok "use --cuda 11.x picks the newest CUDA 11 toolkit, 11.8"
else
	not_ok "use --cuda 11.x picks the newest CUDA 11 toolkit, 11.8" "$(diag_run)"
fi
cvm use 8.6.0 --cuda 10.x --dry-run
rc_is 1 "use --cuda 10.x without a CUDA 10 toolkit is refused"
err_has "no CUDA 10.x toolkit" "the refusal names 10.x"
err_has "(found: 11.8 at $TKD/v11.8, 12.4 at $TKD/v12.4" "the refusal lists the toolkits (and any others the suite made before)"

# ---- a store whose path has a '%': its PATH entry would be expanded (REG_EXPAND_SZ) into another folder
PCT_SAVED=$WSTORE
WSTORE=$(winpath "$TMP/pct%PATH%store")
cvm install 9.1.0 --cuda 12.x --archive "$(winpath "$A91")"
rc_is 2 "--store with a '%': usage error (exit 2)"
if [ "$(printf '%s' "$ERR" | tr -d '\r')" = "cudnnvm: error: --store '$WSTORE': a '%' in the path (Windows expands %NAME% in PATH entries, so a version's entry could name another folder) (see 'cudnnvm --help')" ]; then
	ok "--store with a '%': the one line says why"
else
	not_ok "--store with a '%': the one line says why" "$(diag_run)"
fi
is_absent "$TMP/pct%PATH%store" "--store with a '%': no store made"
WSTORE=$PCT_SAVED

# ---- a store so deep that some installed paths reach 260 characters: said once, naming the longest
LONG_SAVED=$WSTORE
LONGDIR=$TMP/$(printf 'd%.0s' $(seq 170))
mkdir -p "$LONGDIR"
WSTORE=$(winpath "$LONGDIR/s")
FWD=$(printf '%s' "$WSTORE" | tr '\\' /)
# What the version will hold (the zip's files under its top folder) and which reach 260.
want=$(unzip -Z1 "$A91" | python3 -c '
import sys
base = len(sys.argv[1]) + len("/versions/") + len(sys.argv[2]) + 1
files = [l.rstrip("\n").split("/", 1)[1] for l in sys.stdin if not l.endswith("/\n") and "/" in l]
files = [f for f in files if f]
far = [f for f in files if base + len(f) >= 260]
top = sorted(far, key=lambda f: (-len(f), f))[0] if far else ""
print("%d %d %s" % (len(far), base + len(top), top))' "$FWD" "$ID91")
cvm --manifests "$WMAN" install 9.1.0 --cuda 12.x --archive "$(winpath "$A91")"
rc_is 0 "install into a store 200 characters deep: exit 0"
set -- $want
if [ "$1" -gt 0 ] && [ "$(printf '%s' "$ERR" | tr -d '\r')" = "cudnnvm: warning: $1 file$([ "$1" = 1 ] || echo s) of $ID91 $([ "$1" = 1 ] && echo has || echo have) a path of 260 characters or more (the longest, $2: $FWD/versions/$ID91/$3): Windows programs without long-path support (LongPathsEnabled and a manifest that opts in) cannot open them; a shorter --store avoids it" ]; then
	ok "the paths of 260 characters or more: one warning, their count and the longest"
else
	not_ok "the paths of 260 characters or more: one warning, their count and the longest" "want: $want" "$(diag_run)"
fi
cvm --manifests "$WMAN" install 9.1.0 --cuda 12.x --archive "$(winpath "$A91")"
if [ -z "$ERR" ]; then ok "installed already: no warning again"; else not_ok "installed already: no warning again" "$(diag_run)"; fi
WSTORE=$LONG_SAVED
rm -rf "$LONGDIR"
cvm --manifests "$WMAN" install 9.1.0 --cuda 12.x --archive "$(winpath "$A91")"
if ! printf '%s' "$ERR" | grep -q "260 characters"; then ok "a store of a short path: no warning"; else not_ok "a store of a short path: no warning" "$(diag_run)"; fi

# ---- the machine PATH: a REG_SZ stays REG_SZ; one over 32,767 characters is warned of
HKEY_ENV='HKLM\SYSTEM\CurrentControlSet\Control\Session Manager\Environment'
# path_type / path_value: the machine Path's type and value, as reg reads them.
path_type() { MSYS2_ARG_CONV_EXCL='*' run_win reg query "$HKEY_ENV" /v Path 2>/dev/null | tr -d '\r' | sed -n 's/^    Path    \(REG_[A-Z_]*\)    .*/\1/p'; }
path_value() { MSYS2_ARG_CONV_EXCL='*' run_win reg query "$HKEY_ENV" /v Path 2>/dev/null | tr -d '\r' | sed -n 's/^    Path    REG_[A-Z_]*    //p'; }
# path_import REG_SZ VALUE: sets the machine Path through a .reg file (reg add's line is too short).
path_import() {
	python3 - "$1" "$2" "$TMP/path.reg" <<'PY'
import sys
t, v, out = sys.argv[1:4]
data = '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"'
with open(out, "w", newline="\r\n") as f:
    f.write("Windows Registry Editor Version 5.00\n\n")
    f.write("[HKEY_LOCAL_MACHINE\\SYSTEM\\CurrentControlSet\\Control\\Session Manager\\Environment]\n")
    f.write('"Path"=' + data + "\n")
PY
	run_win regedit /s "$(winpath "$TMP/path.reg")" >/dev/null 2>&1
	[ -z "$NATIVE" ] && "$WINESERVER" -w
	[ "$(path_type)" = "$1" ]
}
PT0=$(path_type) PV0=$(path_value)
if path_import REG_SZ "$PV0"; then ok "the machine Path is REG_SZ (set up)"; else not_ok "the machine Path is REG_SZ (set up)" "$(path_type)"; fi
cvm use 8.6.0 --cuda 11.8
rc_is 0 "use with a REG_SZ machine Path"
if [ "$(path_type)" = REG_SZ ]; then ok "the machine Path stays REG_SZ"; else not_ok "the machine Path stays REG_SZ" "$(path_type)"; fi
case ";$(path_value);" in *";$(winpath "$STORE/versions/$ID86/bin");"*) ok "the entry is added to the REG_SZ Path" ;; *) not_ok "the entry is added to the REG_SZ Path" "$(path_value)" ;; esac
if [ -z "$OUT$ERR" ] || ! printf '%s\n%s' "$OUT" "$ERR" | grep -q REG_EXPAND_SZ; then ok "no word of a type change"; else not_ok "no word of a type change" "$(diag_run)"; fi
LONGP="$(path_value);C:\\$(printf 'p%.0s' $(seq 33000))"
path_import REG_SZ "$LONGP"
# (no smoke test: the program it starts is one of those that see PATH cut short)
cvm use 9.1.0 --cuda 12.4 --no-smoke
rc_is 0 "use with a machine Path of 33,000 characters"
NEWLEN=$((${#LONGP} + 1 + $(winpath "$STORE/versions/$ID91/bin" | wc -m)))
if [ "$ERR" = "cudnnvm: warning: $HKEY_ENV\\Path is now $NEWLEN characters long: Windows passes at most 32,767 characters of a variable to a new program, which will not see its end" ]; then
	ok "a Path over 32,767 characters is warned of"
else
	not_ok "a Path over 32,767 characters is warned of" "$(diag_run)"
fi
# put back as it was
MSYS2_ARG_CONV_EXCL='*' run_win reg delete "$HKEY_ENV" /v Path /f >/dev/null 2>&1
MSYS2_ARG_CONV_EXCL='*' run_win reg add "$HKEY_ENV" /v Path /t "$PT0" /d "$PV0" /f >/dev/null 2>&1
# (best effort: under wine 8 reg query reads nothing back after the long value; later scripts need no Path)

STORE=${HABITS_SAVED[0]} WSTORE=${HABITS_SAVED[1]}
