#!/bin/bash
# SPDX-License-Identifier: MIT
# Trees no archive may make any more (install refuses more than 32 folders),
# left by an older cudnnvm, a crash or a hand: a 2,000-deep tree in .staging
# or .trash is swept by the next locked command even with 256 descriptors,
# uninstall removes a version holding one, and verify walks a 1,100-deep
# file (names it, exit 3) instead of crashing.
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"

MAN=$TEST_TMP/manifests
A8=$(mkcudnn 8.9.7.29 11 --manifest "$MAN")
A9=$(mkcudnn 9.1.1.17 12 --manifest "$MAN")
ID8=$(id_of 8.9.7.29 11)
ID9=$(id_of 9.1.1.17 12)

# deep DIR N: DIR/a/a/.../a (N folders) with a file f at the bottom, each
# folder 0555 like an installed version's (made relative to descriptors: the
# path is longer than PATH_MAX).
deep() {
	python3 - "$1" "$2" <<'PY'
import os, sys
fd = os.open(sys.argv[1], os.O_RDONLY | os.O_DIRECTORY)
fds = [fd]
for _ in range(int(sys.argv[2])):
    os.mkdir("a", 0o755, dir_fd=fd)
    fd = os.open("a", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
    fds.append(fd)
    if len(fds) > 64:
        os.close(fds.pop(0))
os.close(os.open("f", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd))
PY
}

# the depth of the deepest folder under DIR (0 when there is none)
depth_of() { find "$1" -type d -printf '%d\n' 2>/dev/null | sort -n | tail -n 1; }

cvm --manifests "$MAN" install 8.9.7 --cuda 11.8 --archive "$A8"
assert_rc 0 "set-up: 8.9.7 installed"
mkdir -p "$STORE/.staging/$ID9.1234" "$STORE/.trash/$ID8.99999"
deep "$STORE/.staging/$ID9.1234" 2000
deep "$STORE/.trash/$ID8.99999" 2000
check "set-up: a 2,000-deep tree in .staging" test "$(depth_of "$STORE/.staging")" -ge 2000
chmod -R a-w "$STORE/.staging/$ID9.1234" "$STORE/.trash/$ID8.99999" 2>/dev/null

# With 256 descriptors, as a recursive removal holding one a level cannot.
CUDNNVM_LIMIT=$(ulimit -n)
ulimit -n 256
cvm --manifests "$MAN" install 9.1.1 --cuda 12.4 --archive "$A9"
assert_rc 0 "install with 2,000-deep leftovers and 256 descriptors: exit 0"
assert_store_clean "the 2,000-deep leftovers in .staging and .trash are swept"
assert_dir "$STORE/versions/$ID9" "9.1.1 installed"
cvm --manifests "$MAN" install 9.1.1 --cuda 12.4 --archive "$A9" --force
assert_rc 0 "a later write command is not stopped by 'Too many open files'"

# verify on a version holding a 1,100-deep file: named, exit 3, no crash.
V8=$STORE/versions/$ID8
chmod u+w "$V8/lib"
deep "$V8/lib" 1100
cvm verify 8.9.7
assert_rc 3 "verify of a version with a 1,100-deep extra file: exit 3 (not a crash)"
assert_err_contains "extra: lib/a/a/a/" "verify names the deep extra file"
cvm verify 9.1.1
assert_rc 0 "verify of the other version: exit 0"

# uninstall removes it whole (to .trash, then away).
cvm uninstall 8.9.7
assert_rc 0 "uninstall of the version with a 1,100-deep tree: exit 0"
assert_absent "$V8" "the version is gone"
assert_store_clean "nothing of it left in .trash"
ulimit -n "$CUDNNVM_LIMIT" 2>/dev/null
finish
