# SPDX-License-Identifier: MIT
#
# Sourced by tests/windows/run.sh (its helpers, $ID91 installed from $A91):
# a process that has one of a version's DLLs loaded (holddll.exe, built
# here). uninstall refuses and names it; ps lists it and the DLL; with
# --force the version goes and the loaded DLL waits in .trash until a later
# command finds it unused.
#
# Measured under wine 8.0: the Restart Manager is a stub (RmStartSession,
# RmRegisterResources and RmGetList succeed, RmGetList names no process), so
# proc_win.c takes its other way, the modules of every process; a loaded DLL
# cannot be deleted (ERROR_ACCESS_DENIED), as on Windows, but the folder
# that holds it can be renamed, which NTFS refuses.

HOLD_PID= HOLD_JOB=
# hold_start DLL: holddll.exe loads DLL; waits (60 s at most) for its ready
# file, which holds its Windows PID (HOLD_PID).
hold_start() {
	local waited=0
	rm -f "$TMP/hold.ready" "$TMP/hold.go"
	run_win "$TMP/holddll.exe" "$(winpath "$1")" "$(winpath "$TMP/hold.ready")" \
		"$(winpath "$TMP/hold.go")" 120 >"$TMP/hold.log" 2>&1 &
	HOLD_JOB=$!
	while [ ! -s "$TMP/hold.ready" ] && kill -0 "$HOLD_JOB" 2>/dev/null && [ $waited -lt 1200 ]; do
		sleep 0.05
		waited=$((waited + 1))
	done
	HOLD_PID=$(tr -dc 0-9 <"$TMP/hold.ready" 2>/dev/null)
	[ -n "$HOLD_PID" ]
}
# hold_stop: lets it end (it unloads the DLL) and waits for it; its exit status.
hold_stop() {
	[ -n "$HOLD_JOB" ] || return 0
	: >"$TMP/hold.go"
	wait "$HOLD_JOB"
	local rc=$?
	HOLD_JOB=
	return $rc
}
trash_has_dll() { [ -n "$(find "$STORE/.trash" -iname cudnn64_9.dll 2>/dev/null)" ]; }
# The DLL's path as the API reports it: a Windows path with '/'.
DLL91=$V91/bin/cudnn64_9.dll
WDLL91=$(winpath "$DLL91" | tr '\\' /)
reinstall91() { cvm --manifests "$WMAN" install 9.1.0 --cuda 12.x --archive "$(winpath "$A91")"; }

if ! "$WIN_CC" -O1 -municode -o "$TMP/holddll.exe" "$HERE/holddll.c" 2>"$TMP/holddll.err"; then
	not_ok "holddll.exe builds" "$(cat "$TMP/holddll.err")"
elif ! hold_start "$DLL91"; then
	not_ok "holddll.exe loads $ID91's cudnn64_9.dll" "$(cat "$TMP/hold.log" 2>/dev/null)"
	hold_stop
else
	ok "holddll.exe loads $ID91's cudnn64_9.dll (PID $HOLD_PID)"

	cvm -v uninstall 9.1.0 --cuda 12.x
	rc_is 1 "uninstall while a process has the DLL loaded: exit 1"
	err_has "in use by 1 running process: $HOLD_PID (holddll.exe)" "the refusal names the PID and the image"
	if printf '%s' "$ERR" | grep -q "Restart Manager names no process"; then
		if [ -n "$NATIVE" ]; then
			not_ok "the Restart Manager names the process" "$(diag_run)"
		else
			skip "the Restart Manager names the process" "wine 8.0's RmGetList succeeds and names no process (a stub): the module walk found it"
		fi
	elif printf '%s' "$ERR" | grep -q "Restart Manager names 1 process"; then
		ok "the Restart Manager names the process"
	else
		not_ok "uninstall -v says which way found the process" "$(diag_run)"
	fi
	is_file "$DLL91" "the refused uninstall left the DLL"
	cvm verify "$ID91"
	rc_is 0 "the refused uninstall left $ID91 whole (verify)"

	cvm ps
	rc_is 0 "ps exits 0"
	if printf '%s' "$OUT" | grep -q "^PID $HOLD_PID .*holddll.exe"; then ok "ps lists holddll.exe by its PID"; else not_ok "ps lists holddll.exe by its PID" "$(diag_run)"; fi
	if printf '%s' "$OUT" | grep -qF "store    $ID91"; then ok "ps puts the DLL in the store copy $ID91"; else not_ok "ps puts the DLL in the store copy $ID91" "$(diag_run)"; fi
	if printf '%s' "$OUT" | grep -qiF "$WDLL91"; then ok "ps shows the DLL's path"; else not_ok "ps shows the DLL's path" "expected $WDLL91" "$(diag_run)"; fi
	cvm --json ps
	if printf '%s' "$OUT" | python3 -c '
import json, sys
pid, cid, dll = int(sys.argv[1]), sys.argv[2], sys.argv[3].lower()
d = json.load(sys.stdin)
p = [p for p in d["processes"] if p["pid"] == pid]
sys.exit(0 if p and any(c["kind"] == "store" and c["id"] == cid and dll in [f.lower() for f in c["files"]]
                         for c in p[0]["copies"]) else 1)' "$HOLD_PID" "$ID91" "$WDLL91" 2>/dev/null; then
		ok "ps --json: the process, its store copy and the DLL"
	else
		not_ok "ps --json: the process, its store copy and the DLL" "$(diag_run)"
	fi

	if hold_stop; then ok "holddll.exe ended when told to"; else not_ok "holddll.exe ended when told to" "$(cat "$TMP/hold.log")"; fi
	cvm uninstall 9.1.0 --cuda 12.x
	rc_is 0 "uninstall once the process has ended"
	is_absent "$V91" "it removed $ID91"

	# --force: the version goes; the DLL still loaded cannot be deleted and waits in .trash
	reinstall91
	rc_is 0 "install 9.1.0 again"
	if hold_start "$DLL91"; then
		cvm uninstall 9.1.0 --cuda 12.x --force
		rc_is 0 "uninstall --force while the DLL is loaded: exit 0"
		err_has "$HOLD_PID (holddll.exe)" "--force names the process it removes the version under"
		err_has "stay in" "--force says the loaded DLLs stay in .trash"
		is_absent "$V91" "--force removed $ID91 from versions"
		if trash_has_dll; then ok "the loaded DLL waits in .trash"; else not_ok "the loaded DLL waits in .trash" "$(find "$STORE/.trash")"; fi
		if [ -z "$NATIVE" ]; then
			skip "--force where NTFS will not rename the folder: its DLLs go aside, then the folder" "wine renames a folder that holds a loaded DLL; below, a folder held open shows the way back only"
		fi
		reinstall91
		rc_is 0 "a write command while .trash holds a loaded DLL is not stopped by it"
		if trash_has_dll; then ok "the DLL still loaded stays in .trash"; else not_ok "the DLL still loaded stays in .trash"; fi
		hold_stop
		cvm cache list
		rc_is 0 "a write command once the process has ended"
		if [ -z "$(ls -A "$STORE/.trash" 2>/dev/null)" ]; then ok "its sweep emptied .trash"; else not_ok "its sweep emptied .trash" "$(find "$STORE/.trash")"; fi
	else
		not_ok "holddll.exe loads the DLL again" "$(cat "$TMP/hold.log" 2>/dev/null)"
		hold_stop
	fi
	[ -d "$V91" ] || reinstall91

	# A version folder that cannot be renamed (held open without delete
	# sharing, as NTFS treats one that holds a loaded DLL): its bin files go
	# aside, the folder still does not move, they come back.
	if hold_start "$V91"; then
		cvm uninstall 9.1.0 --cuda 12.x --force
		rc_is 1 "uninstall when the version's folder cannot be moved: exit 1"
		err_has "nothing was changed" "it says why and that nothing was changed"
		hold_stop
		cvm verify "$ID91"
		rc_is 0 "the DLLs that went aside came back: $ID91 is whole (verify)"
		if [ -z "$(ls -A "$STORE/.trash" 2>/dev/null)" ]; then ok "nothing of it is left in .trash"; else not_ok "nothing of it is left in .trash" "$(find "$STORE/.trash")"; fi
	else
		not_ok "holddll.exe holds $ID91's folder open" "$(cat "$TMP/hold.log" 2>/dev/null)"
		hold_stop
	fi
	is_file "$DLL91" "$ID91 is installed for what follows"
fi
