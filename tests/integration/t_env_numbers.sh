#!/bin/bash
# SPDX-License-Identifier: MIT
# Numbers from the environment are parsed as strictly as options' (digits
# only, within bounds, no overflow): CUDNNVM_SMOKE_TIMEOUT (seconds, 1 to
# 86400) and CUDNNVM_JOBS (1 to 256). A bad one is a usage error (exit 2)
# naming the variable, its value and the range, before anything is touched;
# set and empty is unset.
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"
# shellcheck source-path=SCRIPTDIR source=lib_activate.sh
. "$TESTS_DIR/integration/lib_activate.sh"

act_root
inst 9.1.1.17 12.4
inst 9.1.0.70 12.4
use_ok 9.1.1 --cuda 12.4 --no-smoke
A=$(archive 8.9.7.29 11)

# bad VAR MAX UNIT ARGS...: every bad value of VAR makes cvm ARGS exit 2 and change nothing.
bad() {
	local var=$1 max=$2 unit=$3 v
	shift 3
	snapshot "$ROOT" >"$TEST_TMP/before"
	for v in 9223372036854775 99999999999999999999 -1 abc 0 +5 0x10 1e3 3.5 5s " 5" "5 " $((max + 1)); do
		eval "$var=\$v cvm \"\${ARGS[@]}\""
		assert_rc 2 "$var='$v': ${ARGS[0]} is a usage error (exit 2)"
		assert_err_line "$var '$v': expected a whole number from 1 to $max ($unit)" \
			"$var='$v': the message names the variable, the value and the range"
	done
	snapshot "$ROOT" >"$TEST_TMP/after"
	assert_same_snapshot "$TEST_TMP/before" "$TEST_TMP/after" "$var: nothing was changed by any of them"
}

ARGS=(use 9.1.0 --cuda 12.4)
bad CUDNNVM_SMOKE_TIMEOUT 86400 seconds
assert_symlink "$STORE/active/cuda-12.4" "../versions/$ID911" "9.1.1 is still the active version"
ARGS=(smoke --cuda 12.4 --no-gpu)
bad CUDNNVM_SMOKE_TIMEOUT 86400 seconds
ARGS=(--manifests "$MAN" install 8.9.7 --cuda 11.8 --archive "$A")
bad CUDNNVM_JOBS 256 "decoder threads"
assert_versions "$ID911 $ID910" "no version was installed"
# Any command: the environment is checked before the command runs.
ARGS=(list)
bad CUDNNVM_JOBS 256 "decoder threads"

# ------------------------------------------------------ good values
CUDNNVM_SMOKE_TIMEOUT=86400 cvm use 9.1.0 --cuda 12.4 --no-smoke
assert_rc 0 "CUDNNVM_SMOKE_TIMEOUT=86400: accepted"
CUDNNVM_SMOKE_TIMEOUT='' cvm use 9.1.1 --cuda 12.4 --no-smoke
assert_rc 0 "CUDNNVM_SMOKE_TIMEOUT set and empty: the default"
CUDNNVM_JOBS=1 cvm --manifests "$MAN" install 8.9.7 --cuda 11.8 --archive "$A"
assert_rc 0 "CUDNNVM_JOBS=1: accepted"
finish
