#!/bin/bash
# SPDX-License-Identifier: MIT
# --store (and CUDNNVM_STORE) relative to the working folder is taken as the
# absolute path it names: the toolkit's links resolve and the ld.so.conf.d
# line is absolute. A store path with '#' (where ldconfig ends a line) or a
# control character is a usage error naming it, and nothing is created.
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"
# shellcheck source-path=SCRIPTDIR source=lib_activate.sh
. "$TESTS_DIR/integration/lib_activate.sh"

act_root
A897=$(archive 8.9.7.29 11)
mkdir -p "$ROOT/opt" "$ROOT/usr/share"
cd "$ROOT/opt" || exit 1
cvm --store cudnnvm --manifests "$MAN" install 8.9.7 --cuda 11.8 --archive "$A897"
assert_rc 0 "install with --store cudnnvm (relative): exit 0"
assert_dir "$STORE/versions/$ID897" "the version is in ROOT/opt/cudnnvm"
cvm --store cudnnvm use 8.9.7 --cuda 11.8 --no-smoke
assert_rc 0 "use with a relative --store: exit 0"
assert_uses "$TK11" 11.8 "$ID897" "the toolkit's links go through the store, the ld.so.conf.d line is absolute"
assert_no_dangling "$TK11" "no dangling link in the toolkit"

cd "$ROOT/usr/share" || exit 1
CUDNNVM_STORE=../../opt/./cudnnvm cvm current --cuda 11.8
assert_rc 0 "CUDNNVM_STORE=../../opt/./cudnnvm from another folder: exit 0"
assert_out_contains "8.9.7.29" "the same store is found"
cvm --store ../../opt/cudnnvm/ history --cuda 11.8
assert_rc 0 "a relative --store with a trailing slash: exit 0"
cd "$TEST_TMP/cwd/here" || exit 1

for bad in "$TEST_TMP/st#ore" "$TEST_TMP/st
ore" "$TEST_TMP/st$(printf '\t')ore"; do
	shown=$(printf '%s' "$bad" | tr '\n\t' '??')
	cvm --store "$bad" --manifests "$MAN" install 8.9.7 --cuda 11.8 --archive "$A897"
	assert_rc 2 "--store '$shown': exit 2"
	assert_err_contains "--store" "--store '$shown': the option is named"
	assert_err_contains "$TEST_TMP/st" "--store '$shown': the path is named"
	assert_absent "$bad" "--store '$shown': nothing created"
done
CUDNNVM_STORE="$TEST_TMP/env#store" cvm list
assert_rc 2 "CUDNNVM_STORE with '#': exit 2"
assert_absent "$TEST_TMP/env#store" "CUDNNVM_STORE with '#': nothing created"
# the config file's store key: a '#' in it is refused the same way
mkdir -p "$ROOT/etc"
printf 'store = /opt/cud#nnvm\n' >"$ROOT/etc/cudnnvm.conf"
cvm list
assert_rc 2 "'store = /opt/cud#nnvm' in cudnnvm.conf: exit 2"
assert_err_contains "cudnnvm.conf" "the config file is named"
assert_absent "$ROOT/opt/cud#nnvm" "nothing created at the cut path"
rm -f "$ROOT/etc/cudnnvm.conf"
finish
