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

# The lock is held (hold_lock) until the test lets go: nothing here depends
# on how fast the machine is. A command that waited for it would not end
# (cvm's own cap: exit 124), so an exit 5 or 0 shows it did not.
hold_lock
cvm --no-wait install 9.19.0 --cuda 13.0 --archive "$A19" --sha256 "$H19"
assert_rc 5 "--no-wait while locked: exit 5 (at once: the lock stays held)"
assert_err_contains "locked" "--no-wait: the message says the store is locked"
assert_error_line "--no-wait: one 'cudnnvm: error:' line"
assert_absent "$STORE/versions/$ID19" "--no-wait: nothing installed"

cvm --json --no-wait install 9.19.0 --cuda 13.0 --archive "$A19" --sha256 "$H19"
assert_rc 5 "--json --no-wait while locked: exit 5"
assert_json 'd["error"]["code"] == 5' "--json --no-wait: error code 5"

# --lock-timeout 1 ends although the lock stays held; it waited at least that
# second (a lower bound, which a slow machine cannot break).
t0=$(date +%s%N)
cvm --lock-timeout 1 install 9.19.0 --cuda 13.0 --archive "$A19" --sha256 "$H19"
t1=$(date +%s%N)
assert_rc 5 "--lock-timeout 1 while locked: exit 5"
assert_err_contains "locked" "--lock-timeout: the message says the store is locked"
check "--lock-timeout 1 waited at least a second ($(((t1 - t0) / 1000000)) ms)" \
	test $(((t1 - t0) / 1000000)) -ge 1000

cvm list
assert_rc 0 "list while locked: exit 0 (it did not wait for the lock)"
assert_out_contains "8.9.7.29" "list while locked shows the installed version"
cvm --json list
assert_rc 0 "list --json while locked: exit 0"
cvm --no-wait uninstall 8.9.7 --cuda 11.8
assert_rc 5 "--no-wait uninstall while locked: exit 5"
assert_dir "$STORE/versions/$ID8" "locked uninstall removed nothing"

# A plain install waits: it has the lock file open and is still running, has
# installed nothing, until the holder lets go; then it installs.
cvm_bg wait install 9.19.0 --cuda 13.0 --archive "$A19" --sha256 "$H19"
waiter=${CVM_BG_PIDS[${#CVM_BG_PIDS[@]} - 1]}
# lock_waiter: a cudnnvm of this root (not the holder) has STORE/.lock open
# shellcheck disable=SC2317  # called through wait_for
lock_waiter() {
	local p
	for p in $(pgrep -f -- "--root $ROOT install 9.19.0"); do
		[ "$p" = "$HOLDER" ] && continue
		find "/proc/$p/fd" -lname "$STORE/.lock" 2>/dev/null | grep -q . && return 0
	done
	return 1
}
if wait_for "a plain install opens the lock file and waits" lock_waiter; then
	check "the waiting install is still running while the lock is held" kill -0 "$waiter"
	assert_absent "$STORE/versions/$ID19" "the waiting install has installed nothing yet"
fi
release_lock
wait "$waiter"
bg_result wait
assert_rc 0 "a plain install waits and succeeds once the holder let go"
assert_dir "$STORE/versions/$ID19" "the waiting install installed $ID19"
assert_store_clean "work areas empty after the waiting install"

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
