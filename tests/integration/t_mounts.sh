#!/bin/bash
# SPDX-License-Identifier: MIT
# A file system mounted inside the store (a bind mount of the same file
# system: same st_dev, another mount id) is never entered, read or deleted:
#  - uninstall, uninstall --force and install --force refuse before they
#    delete anything, naming the mount point (exit 1); nothing changes, the
#    mounted files stay;
#  - verify and doctor name the mount point and do not list what is in it;
#    export refuses (exit 3), use refuses (exit 1);
#  - the .trash/.staging sweep leaves a leftover with a mount in it, saying
#    so, and deletes the rest;
#  - a bind mount of one file (over a header) and of the version folder
#    itself are refused the same way.
# Needs mount --bind (root, and a kernel that lets this process mount);
# skipped with the reason otherwise. Every mount is undone in a trap.
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"
# shellcheck source-path=SCRIPTDIR source=lib_activate.sh
. "$TESTS_DIR/integration/lib_activate.sh"

# umount_all: undoes every mount under TEST_TMP, deepest first (a mount in a
# mount), wherever it is now: a version renamed into .trash takes its mounts along.
umount_all() {
	local m
	awk -v t="$TEST_TMP/" 'index($5, t) == 1 { print $5 }' /proc/self/mountinfo | sort -r |
		while read -r m; do
			umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null
		done
}
# Unmounted before lib.sh's cleanup deletes TEST_TMP: rm -rf would go into a mount.
trap 'rc=$?; umount_all; (exit $rc); _cvm_cleanup' EXIT
bind() { mount --bind "$1" "$2"; } # SRC DST
unbind() { umount "$1"; }          # DST

mkdir -p "$TEST_TMP/probe/a" "$TEST_TMP/probe/b"
if [ "$(id -u)" != 0 ]; then
	skip "bind mounts in the store" "needs root for mount --bind"
	finish
fi
if ! why=$(mount --bind "$TEST_TMP/probe/a" "$TEST_TMP/probe/b" 2>&1); then
	skip "bind mounts in the store" "mount --bind is not permitted here: $why"
	finish
fi
umount "$TEST_TMP/probe/b"

act_root
inst 8.9.7.29 11.8
inst 8.9.6.50 11.8
use_ok 8.9.7 --cuda 11.8 --no-smoke
V6=$STORE/versions/$ID896
SHOWN6=/opt/cudnnvm/versions/$ID896

# What is mounted: another user's files, on the same file system as the store.
OTHER=$TEST_TMP/other
mkdir -p "$OTHER/sub"
printf 'precious\n' >"$OTHER/sub/data"
printf 'secret\n' >"$TEST_TMP/secret"
other_intact() { # NAME
	check "$1: the mounted files are intact" test "$(cat "$OTHER/sub/data" 2>&1)" = precious
	check "$1: the secret file is intact" test "$(cat "$TEST_TMP/secret" 2>&1)" = secret
}

# refused NAME REL VERB: the last command refused, naming SHOWN6/REL, and changed nothing.
refused() {
	local at=$SHOWN6${2:+/$2}
	assert_rc 1 "$1: exit 1"
	check "$1: the one error names the mount point" test "$ERR" = \
		"cudnnvm: error: refusing to $3 $SHOWN6: '$at' is a mount point (another file system is mounted there), and cudnnvm deletes nothing in a file system it did not make; nothing was changed: unmount it first"
	snapshot "$STORE" >"$TEST_TMP/after.snap"
	assert_same_snapshot "$TEST_TMP/before.snap" "$TEST_TMP/after.snap" "$1: the store did not change"
	other_intact "$1"
	assert_store_clean "$1: .trash and .staging are empty"
}

# ----------------------------------------- a folder mounted inside a version
mkdir "$V6/lib/mnt"
bind "$OTHER" "$V6/lib/mnt"
snapshot "$STORE" >"$TEST_TMP/before.snap"
cvm uninstall 8.9.6
refused "uninstall with a bind mount in lib/" lib/mnt remove
cvm uninstall 8.9.6 --force
refused "uninstall --force with a bind mount in lib/" lib/mnt remove
cvm --manifests "$MAN" install 8.9.6.50 --cuda 11.8 --archive "$(archive 8.9.6.50 11)" --force
refused "install --force over a version with a bind mount" lib/mnt replace

cvm verify 8.9.6
assert_rc 3 "verify with a bind mount in lib/: exit 3"
assert_err_contains "$ID896: a mount point: another file system is mounted there (not entered): lib/mnt" \
	"verify names the mount point"
check "verify does not list what is mounted there (not entered)" \
	sh -c '! grep -q "lib/mnt/" "$1"' sh "$CVM_ERRF"
cvm doctor
assert_rc 1 "doctor with a bind mount in a version: exit 1"
assert_output_contains "problem: $SHOWN6/lib/mnt: a mount point: another file system is mounted there (not entered): " \
	"doctor reports the mount point"
assert_output_contains "fix: unmount it, or reinstall it ('cudnnvm install $ID896 --force');" "doctor: the fix is to unmount it"
cvm export "$ID896" "$TEST_TMP/out.tar.xz"
assert_rc 3 "export of a version with a bind mount: exit 3"
check "export's one error names the mount point" test "$ERR" = \
	"cudnnvm: error: refusing to export $ID896: '/opt/cudnnvm/versions/$ID896/lib/mnt' is a mount point (another file system is mounted there); no bundle is written: unmount it ('cudnnvm verify $ID896' says the same)"
check "export left no bundle and no temporary file" test -z "$(find "$TEST_TMP" -maxdepth 1 -name 'out.tar*')"
cvm use 8.9.6 --cuda 11.8 --no-smoke
assert_rc 3 "use of a version with a bind mount: exit 3, as export"
assert_err_contains "refusing to activate $ID896: 'lib/mnt' in it: a mount point" "use names the mount point"
other_intact "verify, doctor, export, use"

# Nested: the mount point deeper down, under a folder of the version.
unbind "$V6/lib/mnt"
rmdir "$V6/lib/mnt"
mkdir -p "$V6/include/deep/er"
bind "$OTHER" "$V6/include/deep/er"
snapshot "$STORE" >"$TEST_TMP/before.snap"
cvm uninstall 8.9.6
refused "uninstall with a bind mount two folders down" include/deep/er remove
unbind "$V6/include/deep/er"
rm -r "$V6/include/deep"

# ----------------------------------------- one file mounted over a header
bind "$TEST_TMP/secret" "$V6/include/cudnn.h"
snapshot "$STORE" >"$TEST_TMP/before.snap"
cvm uninstall 8.9.6
refused "uninstall with a file bind-mounted over include/cudnn.h" include/cudnn.h remove
cvm verify 8.9.6
assert_rc 3 "verify with a file mount: exit 3"
assert_err_contains "$ID896: a mount point: another file system is mounted there (not entered): include/cudnn.h" \
	"verify names the file mount, not as a modified header"
cvm export "$ID896" "$TEST_TMP/out.tar.xz"
assert_rc 3 "export with a file mount: exit 3 (the mounted file is not read into a bundle)"
check "export left no bundle and no temporary file (file mount)" test -z "$(find "$TEST_TMP" -maxdepth 1 -name 'out.tar*')"
unbind "$V6/include/cudnn.h"

# ----------------------------------------- the version folder itself a mount point
mkdir -p "$TEST_TMP/copy6"
cp -a "$V6/." "$TEST_TMP/copy6/"
bind "$TEST_TMP/copy6" "$V6"
snapshot "$STORE" >"$TEST_TMP/before.snap"
cvm uninstall 8.9.6
refused "uninstall of a version folder that is itself a mount point" "" remove
check "the mounted copy is intact" test -f "$TEST_TMP/copy6/include/cudnn.h"
unbind "$V6"

# ----------------------------------------- leftovers with a mount in them
mkdir -p "$STORE/.trash/$ID896.4242/lib/mnt" "$STORE/.trash/plain.4343/lib" "$STORE/.staging/$ID896.XyZ123/mnt"
printf 'x\n' >"$STORE/.trash/plain.4343/lib/f"
bind "$OTHER" "$STORE/.trash/$ID896.4242/lib/mnt"
bind "$OTHER" "$STORE/.staging/$ID896.XyZ123/mnt"
cvm uninstall 8.9.6
assert_rc 0 "a locked command with mounts in .trash and .staging leftovers: exit 0"
assert_err_contains "warning: leaving /opt/cudnnvm/.trash/$ID896.4242: '/opt/cudnnvm/.trash/$ID896.4242/lib/mnt' is a mount point, and cudnnvm deletes nothing in a file system it did not make: unmount it" \
	"the sweep names the mount point in .trash"
assert_err_contains "warning: leaving /opt/cudnnvm/.staging/$ID896.XyZ123: '/opt/cudnnvm/.staging/$ID896.XyZ123/mnt' is a mount point" \
	"the sweep names the mount point in .staging"
assert_absent "$STORE/.trash/plain.4343" "the sweep still deletes the leftover without a mount"
assert_dir "$STORE/.trash/$ID896.4242/lib" "the leftover with a mount stays"
assert_absent "$V6" "uninstall 8.9.6 (no mount in it) went ahead"
other_intact "sweep"
umount_all
cvm use 8.9.7 --cuda 11.8 --no-smoke
assert_rc 0 "unmounted: the next locked command exits 0"
assert_empty_or_absent "$STORE/.trash" "unmounted: the sweep empties .trash"
assert_empty_or_absent "$STORE/.staging" "unmounted: the sweep empties .staging"
other_intact "after the sweep"

finish
