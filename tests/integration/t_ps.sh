#!/bin/bash
# SPDX-License-Identifier: MIT
# ps: running processes that map cuDNN, grouped by copy (store version, wheel,
# ...); a process that maps two copies is MIXED, one that maps a store version
# no toolkit has active is NOT ACTIVE; doctor reports both (exit 1) with the PID.
# Processes made here: python3 that dlopens fake libraries from two folders.
# With --root, only processes mapping files inside the root count.
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"
# shellcheck source-path=SCRIPTDIR source=lib_activate.sh
. "$(dirname "$0")/lib_activate.sh"

act_root
inst 9.1.1.17 12.4
inst 9.1.0.70 12.4
use_ok 9.1.1 --cuda 12.4 --no-smoke
V=$STORE/versions/$ID911/lib
V0=$STORE/versions/$ID910/lib
# A Python wheel's copy (site-packages/nvidia/cudnn/lib), inside the root.
WHEEL=$ROOT/venv/lib/python3.12/site-packages/nvidia/cudnn
mkdir -p "$WHEEL/lib"
cp "$V/libcudnn_graph.so.9.1.1" "$WHEEL/lib/libcudnn_graph.so.9"

# hold LIB...: a background python3 that maps every LIB; sets HOLD_PID.
hold() {
	local ready=$TEST_TMP/hold.$RANDOM
	"$PY" -c '
import ctypes, sys, time
for p in sys.argv[2:]:
    ctypes.CDLL(p)
open(sys.argv[1], "w").close()
time.sleep(300)' "$ready" "$@" &
	HOLD_PID=$!
	CVM_BG_PIDS+=("$HOLD_PID")
	# ready, or ended without getting there
	wait_until eval '[ -e "$ready" ] || ! kill -0 "$HOLD_PID" 2>/dev/null'
	[ -e "$ready" ]
}
stop() { # waits until HOLD_PID is gone
	kill "$HOLD_PID" 2>/dev/null
	wait "$HOLD_PID" 2>/dev/null
}

cvm ps
assert_rc 0 "ps with no process mapping the root's cuDNN: exit 0"
assert_out_contains "no running process maps cuDNN" "ps says so"

# One copy, the active version: listed, not flagged.
check "set-up: a process maps the active version" hold "$V/libcudnn.so.9.1.1"
cvm ps
assert_rc 0 "ps exits 0"
assert_out_contains "PID $HOLD_PID" "ps lists the process by PID"
assert_out_contains "store    $ID911 (active for CUDA 12.4)" "the copy is the store version, active for 12.4"
assert_out_lacks "MIXED" "one copy is not MIXED"
cvm --json ps
assert_json "[p for p in d['processes'] if p['pid'] == $HOLD_PID and not p['mixed'] and not p['not_active'] and p['copies'][0]['kind'] == 'store' and p['copies'][0]['id'] == '$ID911' and p['copies'][0]['files'][0].endswith('/libcudnn.so.9.1.1')]" \
	"ps --json: pid, one store copy with its id and files, not flagged"
assert_json "'python' in [p for p in d['processes'] if p['pid'] == $HOLD_PID][0]['command']" "ps --json: the command line"
cvm doctor
if grep -q "PID $HOLD_PID" "$CVM_OUTF"; then not_ok "doctor: a process with the active version only is no problem"; else ok "doctor: a process with the active version only is no problem"; fi
stop

# Two copies in one process: the store's dispatcher and the wheel's libcudnn_graph.
check "set-up: a process maps two copies" hold "$V/libcudnn.so.9.1.1" "$WHEEL/lib/libcudnn_graph.so.9"
cvm ps
assert_rc 0 "ps of a mixed process exits 0"
assert_out_contains "PID $HOLD_PID" "the mixed process is listed"
assert_out_contains "[MIXED]" "it is flagged MIXED"
assert_out_contains "wheel    $WHEEL" "the wheel copy is named by its folder"
assert_out_contains "$WHEEL/lib/libcudnn_graph.so.9" "with the file it maps"
cvm --json ps
assert_json "[p for p in d['processes'] if p['pid'] == $HOLD_PID and p['mixed'] and sorted(c['kind'] for c in p['copies']) == ['store', 'wheel']]" \
	"ps --json: mixed, a store copy and a wheel copy"
cvm doctor
assert_rc 1 "doctor with a mixed process: exit 1"
assert_out_contains "PID $HOLD_PID" "doctor names the PID"
assert_out_contains "maps 2 cuDNN copies" "doctor says it maps two copies"
assert_out_contains "fix: restart PID $HOLD_PID" "doctor gives a fix"
cvm --json doctor
assert_json "[p for p in d['processes'] if p['pid'] == $HOLD_PID and p['mixed']]" "doctor --json lists the process"
stop

# A store version that no toolkit has active.
check "set-up: a process maps 9.1.0, not active" hold "$V0/libcudnn.so.9.1.0"
cvm ps
assert_out_contains "[NOT ACTIVE]" "ps flags a version no toolkit has active"
assert_out_contains "$ID910 (not active for any toolkit)" "and says so on the copy"
cvm doctor
assert_rc 1 "doctor with a process on a non-active version: exit 1"
assert_out_contains "which no toolkit has active" "doctor says the version is not active"
stop

# Another root's processes are not this root's.
check "set-up: a process maps the active version" hold "$V/libcudnn.so.9.1.1"
SAVED_ROOT=$ROOT
new_root
cvm ps
assert_out_lacks "PID $HOLD_PID" "with another --root the process is not listed"
ROOT=$SAVED_ROOT
STORE=$ROOT/opt/cudnnvm
stop

# Without root: only the user's own processes can be read; the others are counted, not guessed.
chmod 0755 "$TEST_TMP"
if why=$(as_other_ready nobody); then
	check "set-up: root's process maps the active version" hold "$V/libcudnn.so.9.1.1"
	cvm ps
	if grep -q "PID $HOLD_PID" "$CVM_OUTF"; then
		# a copy: the checkout may be in a folder nobody cannot enter
		out=$(cd / && setpriv --reuid=nobody --regid="$(id -g nobody)" --clear-groups "$(other_binary)" ps 2>&1)
		if printf '%s' "$out" | grep -q "PID $HOLD_PID"; then
			not_ok "another user's ps does not list root's process" "$out"
		else
			ok "another user's ps does not list root's process"
		fi
		if printf '%s' "$out" | grep -q "of other users could not be read"; then ok "it says how many it could not read"; else not_ok "it says how many it could not read" "$out"; fi
		if printf '%s' "$out" | grep -q "(root sees them; -v names them)"; then ok "it says -v names them"; else not_ok "it says -v names them" "$out"; fi
		out=$(cd / && setpriv --reuid=nobody --regid="$(id -g nobody)" --clear-groups "$(other_binary)" -v ps 2>&1)
		if printf '%s\n' "$out" | grep -q "^cudnnvm: process $HOLD_PID (.*): its maps cannot be read: Permission denied$"; then
			ok "-v: the process it could not read is named, PID and command"
		else
			not_ok "-v: the process it could not read is named, PID and command" "$out"
		fi
	else
		not_ok "set-up: root's ps lists the process"
	fi
	stop
else
	skip "another user's ps" "$why"
fi
chmod 0700 "$TEST_TMP"

cvm ps extra
assert_rc 2 "ps with an argument is a usage error"

finish
