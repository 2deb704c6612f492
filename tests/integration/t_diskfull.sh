#!/bin/bash
# SPDX-License-Identifier: MIT
# A full disk: install into a store on a small tmpfs until ENOSPC. A clear
# error naming the store, exit 1, nothing left, the active version untouched.
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"

if [ "$(id -u)" != 0 ]; then
	skip "install on a full disk" "needs root to mount a tmpfs"
	finish
fi
MAN=$TEST_TMP/manifests
A8=$(mkcudnn 8.9.7.29 11 --manifest "$MAN")
ID8=$(id_of 8.9.7.29 11)

# A 9.x archive with one big incompressible library: 6 MiB unpacked, a 4 MiB store.
BIG=$TEST_TMP/big
mkdir -p "$BIG.src"
tar -C "$BIG.src" -xf "$(mkcudnn 9.1.1.17 12)"
top=$(ls "$BIG.src")
head -c $((6 << 20)) /dev/urandom >"$BIG.src/$top/lib/libcudnn_engines_precompiled.so.9.1.1"
A9=$TEST_TMP/$top.tar.xz
tar -C "$BIG.src" -cJf "$A9" "$top"
H9=$(sha256 "$A9")

STOREFS=$TEST_TMP/storefs
mkdir -p "$STOREFS"
if ! mount -t tmpfs -o size=4m tmpfs "$STOREFS" 2>/dev/null; then
	skip "install on a full disk" "cannot mount a tmpfs here"
	finish
fi
_df_cleanup() {
	local rc=$?
	umount "$STOREFS" 2>/dev/null
	return $rc
}
trap '_df_cleanup; _cvm_cleanup' EXIT
S=$STOREFS/cudnnvm

cvm --store "$S" --manifests "$MAN" install 8.9.7 --cuda 11.8 --archive "$A8"
assert_rc 0 "set-up: a small version fits"
mkdir -p "$ROOT/usr/local/cuda-11.8/include" "$ROOT/usr/local/cuda-11.8/lib64"
printf '{"cuda":{"version":"11.8.0"}}\n' >"$ROOT/usr/local/cuda-11.8/version.json"
CUDNNVM_LDCONFIG= cvm --store "$S" use 8.9.7 --cuda 11.8 --no-smoke
assert_rc 0 "set-up: it is active"
before=$(readlink "$S/active/cuda-11.8")

cvm --store "$S" install 9.1.1 --cuda 12.4 --archive "$A9" --sha256 "$H9"
assert_rc 1 "install on a full disk exits 1"
assert_err_contains "No space left on device" "the message says the disk is full"
assert_err_contains "$S" "the message names the store"
[ -z "$(ls -A "$S/.staging")" ] && ok "no staging left" || not_ok "no staging left" "$(ls -A "$S/.staging")"
[ ! -e "$S/versions/$(id_of 9.1.1.17 12)" ] && ok "no partial version" || not_ok "no partial version"
[ "$(readlink "$S/active/cuda-11.8")" = "$before" ] && ok "the active version is untouched" ||
	not_ok "the active version is untouched"
cvm --store "$S" verify "$ID8"
assert_rc 0 "the installed version still verifies"
finish
