#!/bin/bash
# SPDX-License-Identifier: MIT
# What a person at a terminal sees: Ctrl-C during an install's download
# stops it, says what was kept and what removed, leaves no staging and
# exits 130; SIGTERM to cudnnvm alone ends it too while its extraction
# process hangs; waiting for the store lock is said once on a terminal (and not
# in a log); an unknown key in ROOT/etc/cudnnvm.conf is warned about with
# the file and line.
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"

MAN=$TEST_TMP/manifests
A9=$(mkcudnn 9.1.1.17 12 --manifest "$MAN")
N9=$(basename "$A9")
ID9=$(id_of 9.1.1.17 12)
mkdir -p "$ROOT/usr/local/cuda-12.4/include" "$ROOT/usr/local/cuda-12.4/lib64"
printf '#define CUDART_VERSION 12040\n' >"$ROOT/usr/local/cuda-12.4/include/cuda_runtime_api.h"

# shellcheck disable=SC2317  # called through wait_until
has_bytes() { [ -s "$1" ]; }
# shellcheck disable=SC2317
gone() { ! kill -0 "$1" 2>/dev/null; }
# shellcheck disable=SC2317
held() { ! flock -n "$STORE/.lock" true; }
# shellcheck disable=SC2317
free() { flock -n "$STORE/.lock" true; }

# start_install BASE ARGS...: cudnnvm in the background ($PID), its output in
# $TEST_TMP/BASE.out and .err.
start_install() {
	local base=$1
	shift
	CUDNNVM_NO_PROGRESS=1 "$CUDNNVM" --root "$ROOT" "$@" >"$TEST_TMP/$base.out" \
		2>"$TEST_TMP/$base.err" </dev/null &
	PID=$!
	CVM_BG_PIDS+=("$PID")
}
# until_ok NAME BASE COND...: ok once COND holds, else not ok with BASE's stderr so far.
until_ok() {
	local name=$1 base=$2
	shift 2
	if wait_until "$@"; then ok "$name"; else not_ok "$name" "$(cat "$TEST_TMP/$base.err")"; fi
}
# stop_with SIG NAME BASE: sends SIG to the install in the background ($PID,
# its output in $TEST_TMP/BASE.out and .err), waits up to 30 s for it to end,
# then takes its exit code into RC and its output for the assertions.
stop_with() {
	kill -"$1" "$PID"
	if CVM_WAIT_CAP=30 wait_until gone "$PID"; then ok "$2"; else
		not_ok "$2" "still running 30 s later"
		kill -9 "$PID"
	fi
	wait "$PID"
	RC=$?
	CVM_ERRF=$TEST_TMP/$3.err CVM_OUTF=$TEST_TMP/$3.out CVM_LAST="install (SIG$1)"
}

# -------------------------------------------------- Ctrl-C during a download
MIR=$TEST_TMP/mirror
mkdir -p "$MIR/cudnn/linux-x86_64"
cp "$A9" "$MIR/cudnn/linux-x86_64/"
echo slow >"$MIR/.mode"
PORTFILE=$TEST_TMP/port
python3 "$FIXTURES/httpd.py" "$MIR" "$PORTFILE" 240 &
CVM_BG_PIDS+=($!)
wait_until has_bytes "$PORTFILE" || not_ok "the test's http server started"
URL=http://127.0.0.1:$(cat "$PORTFILE")

start_install int --manifests "$MAN" --mirror "$URL" install 9.1.1 --cuda 12.4
PART=$STORE/cache/$N9.part
until_ok "the install is downloading (its .part has bytes)" int has_bytes "$PART"
stop_with INT "Ctrl-C (SIGINT) ends the install" int
check "after Ctrl-C: exit 130 (128 + SIGINT), got $RC" test "$RC" = 130
assert_err_contains "interrupted: nothing was installed" "after Ctrl-C: it says nothing was installed"
assert_err_contains "kept in the cache" "after Ctrl-C: it says the bytes downloaded are kept, and where"
assert_err_contains "$N9.part" "after Ctrl-C: it names the partial download"
check "after Ctrl-C: one error line" test "$(grep -c '^cudnnvm: error: ' "$TEST_TMP/int.err")" = 1
assert_empty_or_absent "$STORE/.staging" "after Ctrl-C: no staging folder is left"
assert_empty_or_absent "$STORE/versions" "after Ctrl-C: nothing installed"
check "after Ctrl-C: the lock is free" flock -n "$STORE/.lock" true
echo range >"$MIR/.mode"
cvm --manifests "$MAN" --mirror "$URL" install 9.1.1 --cuda 12.4
assert_rc 0 "the next install resumes and finishes"
assert_versions "$ID9" "the next install installed $ID9"
assert_output_contains "resuming" "the next install resumed after the kept bytes"

# ------------------------- Ctrl-C during the extraction: the staging folder goes
cvm uninstall 9.1.1 --cuda 12.4
assert_rc 0 "uninstall 9.1.1 (for the next install)"
for how in "--verify-first" ""; do
	CUDNNVM_FAULT=install-staged:int cvm --manifests "$MAN" install 9.1.1 --cuda 12.4 --archive "$A9" $how
	assert_rc 130 "Ctrl-C when the version is staged${how:+ ($how)}: exit 130"
	assert_err_matches "interrupted: nothing was installed; the staging folder /opt/cudnnvm/\.staging/[^ ]+ is removed" \
		"Ctrl-C when staged${how:+ ($how)}: it names the staging folder it removed"
	assert_empty_or_absent "$STORE/.staging" "Ctrl-C when staged${how:+ ($how)}: .staging is empty"
	assert_empty_or_absent "$STORE/versions" "Ctrl-C when staged${how:+ ($how)}: nothing installed"
done

# ------------- SIGTERM to cudnnvm alone while its extraction process hangs
# The confined process stops itself after its first file (SIGSTOP: a child
# that hangs, and that a signal to cudnnvm's PID alone does not reach, as
# from kill, timeout or a job scheduler): cudnnvm stops waiting for it,
# kills it, removes the staging folder and exits 143.
# shellcheck disable=SC2317  # called through wait_until
child_stopped() {
	local c
	for c in $(pgrep -P "$1"); do
		[ "$(awk '{print $3}' "/proc/$c/stat" 2>/dev/null)" = T ] && return 0
	done
	return 1
}
CUDNNVM_FAULT=install-child-extracting:stop start_install term --manifests "$MAN" install 9.1.1 \
	--cuda 12.4 --archive "$A9"
until_ok "the extraction process hangs (stopped after its first file)" term child_stopped "$PID"
stop_with TERM "SIGTERM to cudnnvm alone ends the install although its child hangs" term
check "after SIGTERM: exit 143 (128 + SIGTERM), got $RC" test "$RC" = 143
assert_err_matches "^cudnnvm: error: interrupted: nothing was installed; the staging folder /opt/cudnnvm/\.staging/[^ ]+ is removed$" \
	"after SIGTERM: it names the staging folder it removed"
check "after SIGTERM: one error line" test "$(grep -c '^cudnnvm: error: ' "$TEST_TMP/term.err")" = 1
assert_empty_or_absent "$STORE/.staging" "after SIGTERM: .staging is empty"
assert_empty_or_absent "$STORE/versions" "after SIGTERM: nothing installed"
check "after SIGTERM: the lock is free" flock -n "$STORE/.lock" true

# --------------------------------------------- waiting for the lock, on a terminal
hold_lock
TTYLOG=$TEST_TMP/tty.log
CUDNNVM_NO_PROGRESS=1 script -qec "'$CUDNNVM' --root '$ROOT' --lock-timeout 1 cache clean" "$TTYLOG" \
	>/dev/null 2>&1 </dev/null
RC=$?
check "on a terminal, lock not had within --lock-timeout 1: exit 5, got $RC" test "$RC" = 5
check "on a terminal: 'waiting for the store lock' said once" \
	test "$(grep -c 'waiting for the store lock' "$TTYLOG")" = 1
cvm --lock-timeout 1 cache clean
assert_rc 5 "not on a terminal: exit 5 as well"
check "not on a terminal: no 'waiting' line in the log" test "$(grep -c 'waiting for' "$CVM_ERRF")" = 0
release_lock
wait_until free || not_ok "the test's lock holder let go"

# ------------------------------------------------- unknown keys in the config file
cvm cache clean --all
assert_rc 0 "cache clean --all (so that the config's mirror is asked)"
mkdir -p "$ROOT/etc"
printf '# a comment\nmirror = %s\nmirorr = http://typo.example/\n\n' "file://$TEST_TMP/no-mirror/" \
	>"$ROOT/etc/cudnnvm.conf"
CUDNNVM_MIRROR='' cvm --manifests "$MAN" fetch 9.1.1 --cuda 12.4
assert_rc 1 "fetch from the configured (empty) mirror: exit 1"
assert_err_contains "cudnnvm.conf' line 3: unknown key 'mirorr'" "the unknown key is named, with file and line"
check "the warning is given once" test "$(grep -c "unknown key" "$CVM_ERRF")" = 1
assert_err_contains "file://$TEST_TMP/no-mirror/" "the known key (mirror) is still used"

finish
