#!/bin/bash
# SPDX-License-Identifier: MIT
# The store lock: --no-wait and --lock-timeout give exit 5 while another
# process holds STORE/.lock; a plain install waits for it; readers do not
# block; concurrent installs serialise.
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"

MAN=$TEST_TMP/manifests
A8=$(mkcudnn 8.9.7.29 11 --manifest "$MAN")
A9=$(mkcudnn 9.1.1.17 12 --manifest "$MAN")
A19=$(mkcudnn 9.19.0.56 13.0)
H19=$(sha256 "$A19")
ID8=$(id_of 8.9.7.29 11)
ID9=$(id_of 9.1.1.17 12)
ID19=$(id_of 9.19.0.56 13)

cvm --manifests "$MAN" install 8.9.7 --cuda 11.8 --archive "$A8"
assert_rc 0 "set-up: first install creates the store"
assert_file "$STORE/.lock" "set-up: STORE/.lock exists"

# hold_lock SECONDS: another process holds the lock; returns once it is held.
# When the holder lets go it writes the time (ms) to $TEST_TMP/released.
hold_lock() {
	rm -f "$TEST_TMP/released"
	# shellcheck disable=SC2016  # expanded by the inner sh
	flock "$STORE/.lock" sh -c 'sleep "$1"; date +%s%3N >"$2"' sh "$1" "$TEST_TMP/released" &
	HOLDER=$!
	CVM_BG_PIDS+=("$HOLDER")
	local _
	for _ in $(seq 100); do
		if ! flock -n "$STORE/.lock" true; then
			return 0
		fi
		sleep 0.05
	done
	not_ok "the test's lock holder took the lock"
}

hold_lock 5
t0=$(now_ms)
cvm --no-wait install 9.19.0 --cuda 13.0 --archive "$A19" --sha256 "$H19"
t1=$(now_ms)
assert_rc 5 "--no-wait while locked: exit 5"
assert_err_contains "locked" "--no-wait: the message says the store is locked"
assert_error_line "--no-wait: one 'cudnnvm: error:' line"
check "--no-wait returns at once ($((t1 - t0)) ms < 1500)" test $((t1 - t0)) -lt 1500
assert_absent "$STORE/versions/$ID19" "--no-wait: nothing installed"

cvm --json --no-wait install 9.19.0 --cuda 13.0 --archive "$A19" --sha256 "$H19"
assert_rc 5 "--json --no-wait while locked: exit 5"
assert_json 'd["error"]["code"] == 5' "--json --no-wait: error code 5"

t0=$(now_ms)
cvm --lock-timeout 1 install 9.19.0 --cuda 13.0 --archive "$A19" --sha256 "$H19"
t1=$(now_ms)
assert_rc 5 "--lock-timeout 1 while locked: exit 5"
assert_err_contains "locked" "--lock-timeout: the message says the store is locked"
check "--lock-timeout 1 waits about a second ($((t1 - t0)) ms in 900..2900)" \
	test $((t1 - t0)) -ge 900 -a $((t1 - t0)) -le 2900

t0=$(now_ms)
cvm list
t1=$(now_ms)
assert_rc 0 "list while locked: exit 0"
assert_out_contains "8.9.7.29" "list while locked shows the installed version"
check "list does not wait for the lock ($((t1 - t0)) ms < 1500)" test $((t1 - t0)) -lt 1500
cvm --json list
assert_rc 0 "list --json while locked: exit 0"
cvm --no-wait uninstall 8.9.7 --cuda 11.8
assert_rc 5 "--no-wait uninstall while locked: exit 5"
assert_dir "$STORE/versions/$ID8" "locked uninstall removed nothing"

if [ -f "$TEST_TMP/released" ]; then
	skip "a plain install waits for the lock" "the holder let go before the test got there (slow machine)"
else
	cvm install 9.19.0 --cuda 13.0 --archive "$A19" --sha256 "$H19"
	t1=$(now_ms)
	assert_rc 0 "a plain install waits and succeeds"
	rel=$(cat "$TEST_TMP/released" 2>/dev/null || echo 0)
	check "the plain install finished after the holder let go" test "$t1" -ge "$rel" -a "$rel" -gt 0
	assert_dir "$STORE/versions/$ID19" "the waiting install installed $ID19"
	assert_store_clean "work areas empty after the waiting install"
fi
wait "$HOLDER" 2>/dev/null

cvm --lock-timeout abc list
assert_rc 2 "--lock-timeout abc: exit 2"

# The lock is not left behind by a process that died holding it.
( exec 9>>"$STORE/.lock" && flock 9 && kill -9 "$BASHPID" ) 2>/dev/null
cvm --no-wait --manifests "$MAN" install 9.1.1 --cuda 12.4 --archive "$A9"
assert_rc 0 "after a holder was killed the lock is free (--no-wait install)"

# Two installs of one version at once: one installs, the other finds it.
cvm uninstall 9.1.1 --cuda 12.4
assert_rc 0 "uninstall 9.1.1 before the race"
cvm_bg a --manifests "$MAN" install 9.1.1 --cuda 12.4 --archive "$A9"
cvm_bg b --manifests "$MAN" install 9.1.1 --cuda 12.4 --archive "$A9"
wait
bg_result a
assert_rc 0 "concurrent install A: exit 0"
bg_result b
assert_rc 0 "concurrent install B: exit 0"
check "one of the concurrent installs said already installed" \
	grep -qi "already installed" "$TEST_TMP/bg.a.out" "$TEST_TMP/bg.a.err" "$TEST_TMP/bg.b.out" "$TEST_TMP/bg.b.err"
assert_versions "$ID8 $ID9 $ID19" "after the race versions/ holds each version once"
assert_sha256sum_c "$STORE/versions/$ID9" "after the race 9.1.1 verifies"
assert_store_clean "work areas empty after the race"

# Install and uninstall of different versions at once.
cvm_bg c uninstall 8.9.7 --cuda 11.8
cvm_bg d uninstall 9.19.0 --cuda 13.0
cvm_bg e list
wait
bg_result c
assert_rc 0 "concurrent uninstall C: exit 0"
bg_result d
assert_rc 0 "concurrent uninstall D: exit 0"
bg_result e
assert_rc 0 "list during concurrent uninstalls: exit 0"
assert_versions "$ID9" "after concurrent uninstalls only 9.1.1 is left"
assert_store_clean "work areas empty after concurrent uninstalls"

finish
