#!/bin/bash
# SPDX-License-Identifier: MIT
# What doctor, verify, current and list say about a store that is not as
# cudnnvm left it:
#  - STORE/active/cuda-X.Y broken: its version's folder gone (every toolkit
#    link dangles), a regular file, a folder, a link out of versions/, a link
#    to a version that is not installed. current lists it marked broken and
#    exits 1, doctor reports it (and the dangling links) with the fix and
#    exits 1, verify fails (3), list warns; --json says the same.
#  - a version with an object another user owns or can write, a set-id bit,
#    a mode install never gives, a FIFO: verify names it (3), doctor reports
#    it (1), use refuses it even with --no-smoke (1), by the one check
#    (cvm_store_check_version) that all three share.
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"
# shellcheck source-path=SCRIPTDIR source=lib_activate.sh
. "$TESTS_DIR/integration/lib_activate.sh"

act_root
inst 8.9.7.29 11.8
inst 8.9.6.50 11.8
use_ok 8.9.7 --cuda 11.8 --no-smoke
V7=$STORE/versions/$ID897
V6=$STORE/versions/$ID896
ACT=$STORE/active/cuda-11.8
TKROW="CUDA 11.8   /usr/local/cuda-11.8        "

# The problems of a doctor --json document, one a line.
doctor_problems() { json_get '"\n".join(p["problem"] for p in d["problems"])'; }

# A healthy store: no false alarm from any of them.
healthy() { # NAME
	cvm current
	assert_rc 0 "$1: current exits 0"
	assert_out_contains "$TKROW $ID897" "$1: current lists $ID897 for 11.8"
	cvm doctor
	assert_rc 0 "$1: doctor exits 0"
	cvm verify
	assert_rc 0 "$1: verify exits 0"
	cvm list
	assert_rc 0 "$1: list exits 0"
	check "$1: list warns of nothing" test -z "$ERR"
}
healthy "set-up"

# ------------------------------------------------ the active version's folder is gone
mv "$V7" "$TEST_TMP/away"
NOT_INST="the version it names is not installed"
cvm current
assert_rc 1 "version folder gone: current exits 1"
check "version folder gone: current lists 11.8 marked broken" \
	test "$OUT" = "$TKROW $ID897 (broken: $NOT_INST)"
check "version folder gone: current's one error says so, with the fix" test "$ERR" = \
	"cudnnvm: error: the active link of CUDA 11.8 is broken: $NOT_INST; activate an installed version ('cudnnvm use VERSION --cuda 11.8'), 'cudnnvm doctor' says more"
cvm --json current
assert_rc 1 "version folder gone: current --json exits 1"
assert_json 'd["active"] == [{"cuda": "11.8", "toolkit": "/usr/local/cuda-11.8", "id": "'"$ID897"'", "version": "8.9.7.29", "broken": "'"$NOT_INST"'"}] and d["error"]["code"] == 1' \
	"version folder gone: current --json lists it with \"broken\", and the error"
cvm current --cuda 11.8
assert_rc 1 "version folder gone: current --cuda 11.8 exits 1"

cvm doctor
assert_rc 1 "version folder gone: doctor exits 1"
assert_output_contains "problem: /opt/cudnnvm/active/cuda-11.8 is broken: $NOT_INST ($ID897): the toolkit's cuDNN links lead nowhere" \
	"version folder gone: doctor reports the broken active link"
assert_output_contains "fix: install $ID897 again ('cudnnvm install <its version> --cuda 11.8'), or activate an installed version ('cudnnvm use VERSION --cuda 11.8')" \
	"version folder gone: doctor gives the fix"
nlib=$(find "$LIB11" -maxdepth 1 -name 'libcudnn*' -xtype l | wc -l)
ninc=$(find "$TK11/include" -maxdepth 1 -name 'cudnn*' -xtype l | wc -l)
check "set-up: the toolkit's links dangle now ($nlib in lib64, $ninc in include)" test "$nlib" -gt 4 -a "$ninc" -gt 4
assert_output_matches "problem: $nlib cuDNN links in the library folder /usr/local/cuda-11\.8/lib64 of CUDA 11\.8 lead nowhere: (libcudnn[^,]*, ){3}libcudnn[^,]*, \.\.\.$" \
	"version folder gone: doctor reports the dangling links of lib64 (count, four names)"
assert_output_matches "problem: $ninc cuDNN links in the include folder /usr/local/cuda-11\.8/include of CUDA 11\.8 lead nowhere: " \
	"version folder gone: doctor reports the dangling links of include"
assert_output_contains "3 problems found" "version folder gone: doctor counts 3 problems"
cvm --json doctor
assert_rc 1 "version folder gone: doctor --json exits 1"
check "version folder gone: doctor --json lists the broken link first" \
	test "$(doctor_problems | head -n 1)" = "/opt/cudnnvm/active/cuda-11.8 is broken: $NOT_INST ($ID897): the toolkit's cuDNN links lead nowhere"

cvm verify
assert_rc 3 "version folder gone: verify exits 3"
assert_err_contains "active/cuda-11.8: broken: $NOT_INST ($ID897)" "version folder gone: verify names the link"
assert_err_contains "cudnnvm: error: 1 active link is broken: its toolkit's links lead nowhere ('cudnnvm doctor' says how to fix it)" \
	"version folder gone: verify's error"
cvm --json verify
assert_rc 3 "version folder gone: verify --json exits 3"
assert_json 'd["broken_active"] == [{"cuda": "11.8", "id": "'"$ID897"'", "problem": "'"$NOT_INST"'"}] and d["error"]["code"] == 3' \
	"version folder gone: verify --json lists it in broken_active"
cvm list
assert_rc 0 "version folder gone: list exits 0 (what is installed is in order)"
check "version folder gone: list warns, once" test "$ERR" = \
	"cudnnvm: warning: the active link of CUDA 11.8 is broken: $NOT_INST ($ID897); 'cudnnvm doctor' says how to fix it"
cvm --json list
assert_json 'd["broken_active"] == [{"cuda": "11.8", "id": "'"$ID897"'", "problem": "'"$NOT_INST"'"}]' \
	"version folder gone: list --json lists it in broken_active"
mv "$TEST_TMP/away" "$V7"
healthy "folder back"

# ------------------------------------------------ active/cuda-11.8 is not the link use writes
# broken_as NAME WHY ID: the entry made by the caller is reported as WHY (naming ID, or none).
broken_as() {
	local name=$1 why=$2 id=$3 named=
	[ -n "$id" ] && named=" ($id)"
	cvm current
	assert_rc 1 "$name: current exits 1"
	check "$name: current lists 11.8 marked broken" test "$OUT" = "$TKROW ${id:-(none)} (broken: $why)"
	cvm --json current
	assert_json 'd["active"][0]["broken"] == "'"$why"'" and d["error"]["code"] == 1' "$name: current --json says why"
	cvm doctor
	assert_rc 1 "$name: doctor exits 1"
	assert_output_contains "problem: /opt/cudnnvm/active/cuda-11.8 is broken: $why$named: the toolkit's cuDNN links lead nowhere" \
		"$name: doctor reports it"
	cvm verify
	assert_rc 3 "$name: verify exits 3"
	assert_err_contains "active/cuda-11.8: broken: $why$named" "$name: verify names it"
	cvm list
	assert_rc 0 "$name: list exits 0"
	assert_err_contains "warning: the active link of CUDA 11.8 is broken: $why$named;" "$name: list warns"
}
restore_link() { rm -rf "$ACT" && ln -s "../versions/$ID897" "$ACT"; }

rm "$ACT" && printf 'not a link\n' >"$ACT"
broken_as "a regular file" "it is a regular file, not the link 'use' writes" ""
cvm doctor
assert_output_contains "fix: move it away (cudnnvm does not delete what it did not write), then activate an installed version ('cudnnvm use VERSION --cuda 11.8')" \
	"a regular file: doctor's fix leaves the file to the admin"
check "a regular file: it is still there, untouched" test "$(cat "$ACT")" = "not a link"
restore_link
rm "$ACT" && mkdir "$ACT"
broken_as "a folder" "it is a folder, not the link 'use' writes" ""
restore_link
rm "$ACT" && ln -s /etc "$ACT"
broken_as "a link to /etc" "it points outside the store's versions folder" ""
restore_link
rm "$ACT" && ln -s "../versions/.." "$ACT"
broken_as "a link to versions/.." "it points outside the store's versions folder" ""
restore_link
rm "$ACT" && ln -s "../versions/9.9.9.9-cuda11-linux-x86_64" "$ACT"
broken_as "a link to a version not installed" "$NOT_INST" "9.9.9.9-cuda11-linux-x86_64"
restore_link
healthy "link restored"

# ------------------------------------------------ a version others could change
# unsafe NAME REL WHY: verify, doctor and use all name REL of 8.9.6 and why.
unsafe() {
	local name=$1 rel=$2 why=$3 shown
	shown=$ID896${rel:+/$rel}
	[ "$rel" = . ] && shown=$ID896
	cvm verify 8.9.6
	assert_rc 3 "$name: verify exits 3"
	assert_err_contains "$ID896: $why: $rel" "$name: verify names it and why"
	cvm verify 8.9.7
	assert_rc 0 "$name: verify of the other version exits 0"
	cvm doctor
	assert_rc 1 "$name: doctor exits 1"
	assert_output_contains "problem: /opt/cudnnvm/versions/$shown: $why" "$name: doctor reports it"
	snapshot "$ROOT" >"$TEST_TMP/before.snap"
	cvm use 8.9.6 --cuda 11.8 --no-smoke
	assert_rc 3 "$name: use --no-smoke refuses it, exit 3 as verify and export"
	if [ "$rel" = . ]; then
		assert_err_contains "refusing to activate $ID896: its folder: $why" "$name: use says what and why"
	else
		assert_err_contains "refusing to activate $ID896: '$rel' in it: $why" "$name: use says what and why"
	fi
	snapshot "$ROOT" >"$TEST_TMP/after.snap"
	assert_same_snapshot "$TEST_TMP/before.snap" "$TEST_TMP/after.snap" "$name: use changed nothing"
}

chmod o+w "$V6/lib"
unsafe "a folder every user can write" lib "every user can write it (mode 0757)"
chmod o-w "$V6/lib"
chmod o+w "$V6"
unsafe "the version folder every user can write" . "every user can write it (mode 0757)"
chmod o-w "$V6"
chown 65534 "$V6/include/cudnn.h"
unsafe "a file of another user" include/cudnn.h "it belongs to another user (uid 65534)"
chown 0 "$V6/include/cudnn.h"
chown -h 65534 "$V6/lib/libcudnn.so.8"
unsafe "a link of another user" lib/libcudnn.so.8 "it belongs to another user (uid 65534)"
chown -h 0 "$V6/lib/libcudnn.so.8"
chgrp 65534 "$V6/lib/libcudnn.so.8.9.6" && chmod g+w "$V6/lib/libcudnn.so.8.9.6"
unsafe "a library another group can write" lib/libcudnn.so.8.9.6 "another group can write it (mode 0775)"
chgrp 0 "$V6/lib/libcudnn.so.8.9.6" && chmod g-w "$V6/lib/libcudnn.so.8.9.6"
chmod u+s "$V6/lib/libcudnn.so.8.9.6"
unsafe "a set-uid library" lib/libcudnn.so.8.9.6 "a set-id or sticky bit is set (mode 4755)"
chmod u-s "$V6/lib/libcudnn.so.8.9.6"
chmod g+s "$V6/include"
unsafe "a set-gid folder" include "a set-id or sticky bit is set (mode 2755)"
chmod g-s "$V6/include"
chmod 0600 "$V6/include/cudnn.h"
unsafe "a header of mode 0600" include/cudnn.h "mode 0600, not the 0644 or 0755 install gives a file"
chmod 0644 "$V6/include/cudnn.h"
chmod 0646 "$V6/.cudnnvm/record.json"
unsafe "its record every user can write" .cudnnvm/record.json "every user can write it (mode 0646)"
chmod 0644 "$V6/.cudnnvm/record.json"
mkfifo "$V6/lib/libcudnn_fifo.so"
unsafe "a FIFO in it" lib/libcudnn_fifo.so "not a regular file, folder or symlink"
cvm verify 8.9.6
assert_err_contains "$ID896: extra: lib/libcudnn_fifo.so" "a FIFO in it: verify names it extra too"
rm "$V6/lib/libcudnn_fifo.so"
chmod o+w "$STORE/versions"
cvm verify 8.9.6
assert_rc 3 "versions/ every user can write: verify exits 3"
assert_err_contains "$ID896: '$STORE/versions' on its path: every user can write it (mode 0757): ." \
	"versions/ every user can write: verify names the folder above it"
chmod o-w "$STORE/versions"

cvm --json verify 8.9.6
assert_rc 0 "all put back: verify --json exits 0"
assert_json 'd["verified"] == [{"id": "'"$ID896"'", "problems": [], "ok": True}]' "all put back: verify --json: no problems"
use_ok 8.9.6 --cuda 11.8 --no-smoke
assert_uses "$TK11" 11.8 "$ID896" "all put back: use activates 8.9.6"
healthy_6() { cvm doctor; assert_rc 0 "$1: doctor exits 0"; }
healthy_6 "8.9.6 active"

finish
