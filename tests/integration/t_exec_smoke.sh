#!/bin/bash
# SPDX-License-Identifier: MIT
# The last smoke test of each version is recorded (STORE/smoke/<id>.json, its
# time and reason); exec and env refuse a version whose last smoke test failed
# (exit 4) unless --force; of several builds matching a partial version the
# active one wins, then one whose smoke test passed, then the newest, and -v
# says why; exec says once when a Python package's own cuDNN would load first.
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"
# shellcheck source-path=SCRIPTDIR source=lib_activate.sh
. "$(dirname "$0")/lib_activate.sh"

act_root
inst 9.1.1.17 12.4
inst 9.1.1.30 12.4
inst 9.1.0.70 12.4
IDA=$(id_of 9.1.1.17 12)
IDB=$(id_of 9.1.1.30 12)

# 9.1.1.30 active, and its smoke test fails (a sub-library others cannot read).
use_ok "$IDB" --cuda 12.4 --no-smoke
chmod 600 "$STORE/versions/$IDB/lib/libcudnn_ops.so.9.1.1"
cvm smoke --cuda 12.4
assert_rc 4 "set-up: the smoke test of $IDB fails"
chmod 755 "$STORE/versions/$IDB/lib/libcudnn_ops.so.9.1.1"
assert_file "$STORE/smoke/$IDB.json" "the result is recorded in STORE/smoke/<id>.json"
assert_json "d['id'] == '$IDB' and d['result'] == 'failed' and 'libcudnn_ops' in d['reason'] and d['time'] > 1700000000 and d['toolkit'] == '12.4'" \
	"the record holds the id, 'failed', the reason, the time and the toolkit" "$STORE/smoke/$IDB.json"

cvm exec "$IDB" --cuda 12.4 -- true
assert_rc 4 "exec of a version whose last smoke test failed: exit 4"
assert_err_contains "failed its last smoke test" "exec says why"
assert_err_contains "libcudnn_ops" "exec gives the recorded reason"
assert_err_contains "--force" "exec names --force"
cvm exec "$IDB" --cuda 12.4 --force -- true
assert_rc 0 "exec --force runs it"
assert_err_contains "going on (--force)" "exec --force still warns"
cvm env "$IDB" --cuda 12.4
assert_rc 4 "env of that version: exit 4"
cvm env "$IDB" --cuda 12.4 --force
assert_rc 0 "env --force prints the environment"
assert_out_contains "$IDB" "env --force names the version"

# The active one wins among matching builds, even over a failed smoke test.
cvm -v exec 9.1.1 --cuda 12.4 --force -- true
assert_rc 0 "exec 9.1.1 --force: exit 0"
assert_err_contains "$IDB wins: it is the active one for CUDA 12.4" "-v: the active build wins, and says so"

# Nothing of 9.1.1 active: the build whose smoke test did not fail wins over the newer one.
use_ok 9.1.0 --cuda 12.4 --no-smoke
cvm env 9.1.1 --cuda 12.4
assert_rc 0 "env 9.1.1: an older build never tested wins over the newest, whose test failed"
assert_out_contains "# cuDNN $IDA" "env 9.1.1 names $IDA"
cvm use "$IDA" --cuda 12.4
cvm use 9.1.0 --cuda 12.4 --no-smoke
must "set-up: 9.1.0 active again"
assert_file "$STORE/smoke/$IDA.json" "set-up: $IDA has a smoke result"
cvm -v exec 9.1.1 --cuda 12.4 -- true
assert_rc 0 "exec 9.1.1 picks the build whose smoke test did not fail"
assert_err_contains "$IDA wins: its last smoke test" "-v says it won by its smoke test"
cvm env 9.1.1 --cuda 12.4
assert_out_contains "$IDA" "env 9.1.1 picks the same build"

# With no smoke results the newest wins.
rm -f "$STORE/smoke/$IDA.json" "$STORE/smoke/$IDB.json"
cvm -v exec 9.1.1 --cuda 12.4 -- true
assert_rc 0 "exec 9.1.1 without smoke results: exit 0"
assert_err_contains "$IDB wins: none is active, so the newest" "-v: the newest wins, and says so"

# A version installed again starts without a smoke result (the old one was of other files).
use_ok "$IDB" --cuda 12.4 --no-smoke
chmod 600 "$STORE/versions/$IDB/lib/libcudnn_ops.so.9.1.1"
cvm smoke --cuda 12.4
chmod 755 "$STORE/versions/$IDB/lib/libcudnn_ops.so.9.1.1"
assert_file "$STORE/smoke/$IDB.json" "set-up: a failed result again"
use_ok 9.1.0 --cuda 12.4 --no-smoke
cvm --manifests "$MAN" install 9.1.1.30 --cuda 12.4 --archive "$(archive 9.1.1.30 12)" --force
must "reinstall $IDB --force"
assert_absent "$STORE/smoke/$IDB.json" "install --force forgets the old smoke result"
cvm exec "$IDB" --cuda 12.4 -- true
assert_rc 0 "exec of the reinstalled version runs"
ID910=$(id_of 9.1.0.70 12)
cvm smoke --cuda 12.4
assert_file "$STORE/smoke/$ID910.json" "set-up: 9.1.0 has a smoke result"
use_ok "$IDA" --cuda 12.4 --no-smoke
cvm uninstall "$ID910"
must "uninstall $ID910"
assert_absent "$STORE/smoke/$ID910.json" "uninstall removes the version's smoke result"

# exec of a Python program with a wheel's cuDNN in its virtual env: said once.
VENV=$TEST_TMP/venv
mkdir -p "$VENV/lib/python3.12/site-packages/nvidia/cudnn/lib"
cp "$STORE/versions/$IDA/lib/libcudnn.so.9.1.1" "$VENV/lib/python3.12/site-packages/nvidia/cudnn/lib/libcudnn.so.9"
export VIRTUAL_ENV=$VENV
cvm exec "$IDA" --cuda 12.4 -- python3 -c 'pass'
assert_rc 0 "exec of python3 with a wheel's copy: exit 0"
assert_err_contains "may load cuDNN from $VENV/lib/python3.12/site-packages/nvidia/cudnn" "exec says the wheel's copy would load first"
n=$(grep -c "may load cuDNN" "$CVM_ERRF")
check "exec says it once" test "$n" = 1
cvm exec "$IDA" --cuda 12.4 -- true
if grep -q "may load cuDNN" "$CVM_ERRF"; then not_ok "a command that is not Python gets no such warning"; else ok "a command that is not Python gets no such warning"; fi
unset VIRTUAL_ENV
cvm exec "$IDA" --cuda 12.4 -- env LD_PRELOAD= true
assert_rc 0 "exec without a venv: exit 0"
# (a sanitizer build would refuse a preload before its runtime: told not to check)
ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0 LD_PRELOAD=$STORE/versions/$IDB/lib/libcudnn.so.9.1.1 cvm exec "$IDA" --cuda 12.4 -- true
assert_err_contains "LD_PRELOAD names a cuDNN library" "exec says when LD_PRELOAD names a cuDNN library"

finish
