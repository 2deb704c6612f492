#!/bin/bash
# SPDX-License-Identifier: MIT
# which: the library file a program of a toolkit loads and why (the active
# link, LD_LIBRARY_PATH, the toolkit's own copy, the loader cache); prefix: an
# installed version's folder, partial versions resolved as use does.
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"
# shellcheck source-path=SCRIPTDIR source=lib_activate.sh
. "$TESTS_DIR/integration/lib_activate.sh"

act_root
inst 8.9.7.29 11.8
inst 8.9.6.50 11.8
inst 9.1.1.17 12.4
inst 9.1.0.70 12.4
P897=/opt/cudnnvm/versions/$ID897
P896=/opt/cudnnvm/versions/$ID896

# ------------------------------------------------------------ prefix
cvm prefix 8.9 --cuda 11.8
assert_rc 0 "prefix 8.9 --cuda 11.8: exit 0"
check "prefix 8.9 is the newest 8.9 installed: $P897" test "$OUT" = "$P897"
cvm prefix 8.9.6
assert_rc 0 "prefix 8.9.6 (the default toolkit, CUDA 11.8): exit 0"
check "prefix 8.9.6 is $P896" test "$OUT" = "$P896"
cvm prefix 9.1 --cuda 12.4
check "prefix 9.1 --cuda 12.4 is the newest 9.1 for CUDA 12" test "$OUT" = "/opt/cudnnvm/versions/$ID911"
cvm prefix "$ID910"
assert_rc 0 "prefix ID: exit 0"
check "prefix of a full id is that id's folder" test "$OUT" = "/opt/cudnnvm/versions/$ID910"
cvm -q prefix 8.9.7.29
check "-q prefix still prints the path (for \$(cudnnvm prefix ...))" test "$OUT" = "$P897"
cvm --json prefix 8.9.7
assert_rc 0 "prefix --json: exit 0"
assert_json 'd == {"id": "'"$ID897"'", "version": "8.9.7.29", "cuda_major": 11, "platform": "linux-x86_64", "path": "'"$P897"'"}' \
	"prefix --json: id, version, cuda_major, platform, path"
cvm prefix 9.1.0
assert_rc 1 "prefix 9.1.0 for the default toolkit (CUDA 11.8): exit 1"
assert_err_contains "cuda12" "... and it says the build there is for CUDA 12"
cvm prefix 8.6
assert_rc 1 "prefix 8.6 (not installed): exit 1"
cvm prefix 8.9 9.1
assert_rc 2 "prefix with two versions: exit 2"
cvm prefix --bogus
assert_rc 2 "prefix --bogus: exit 2"
cvm prefix --cuda 10.2 8.9
assert_rc 1 "prefix --cuda 10.2 (no such toolkit): exit 1"
assert_err_contains "10.2" "... naming the toolkit asked for"

# ------------------------------------------------------------ which
cvm which --cuda 11.8
assert_rc 1 "which before any use: exit 1"
assert_err_line "a program using CUDA 11.8 (/usr/local/cuda-11.8) finds no libcudnn.so.N of any major (7 to 9): not on LD_LIBRARY_PATH, in the toolkit, or in the loader cache (see 'cudnnvm use')" \
	"... saying no libcudnn of any major is found (no headers, nothing active: none is assumed)"
# Nothing says which major: what a program finds, of any major (here cuDNN 8 on LD_LIBRARY_PATH).
LD_LIBRARY_PATH=$STORE/versions/$ID897/lib cvm --json which --cuda 11.8
assert_rc 0 "which with only an 8.9.7 on LD_LIBRARY_PATH: exit 0"
assert_json 'd["why"] == "LD_LIBRARY_PATH" and d["name"] == "/opt/cudnnvm/versions/'"$ID897"'/lib/libcudnn.so.8"' \
	"which finds libcudnn.so.8 for CUDA 11.8 when nothing says which major (not a libcudnn.so.9 assumed)"
use_ok 8.9.7 --cuda 11.8 --no-smoke
cvm which
assert_rc 0 "which (default toolkit) after use 8.9.7: exit 0"
check "the first line is the real file: $P897/lib/libcudnn.so.8.9.7" \
	test "$(head -n 1 "$CVM_OUTF")" = "$P897/lib/libcudnn.so.8.9.7"
assert_out_contains "/usr/local/cuda-11.8/lib64/libcudnn.so.8 is cudnnvm's link through /opt/cudnnvm/active/cuda-11.8 ($ID897)" \
	"which says why: the toolkit's link through the active link"
cvm --json which --cuda 11.8
assert_json 'd["why"] == "active link" and d["id"] == "'"$ID897"'" and d["library"] == "'"$P897"'/lib/libcudnn.so.8.9.7" and d["name"] == "/usr/local/cuda-11.8/lib64/libcudnn.so.8" and d["cuda"] == "11.8" and d["toolkit"] == "/usr/local/cuda-11.8"' \
	"which --json: why, id, library, name, cuda, toolkit"
cvm -q which --cuda 11.8
check "-q which prints only the file" test "$OUT" = "$P897/lib/libcudnn.so.8.9.7"

# LD_LIBRARY_PATH comes first.
LD_LIBRARY_PATH=$STORE/versions/$ID896/lib cvm --json which --cuda 11.8
assert_rc 0 "which with LD_LIBRARY_PATH naming 8.9.6's lib/: exit 0"
assert_json 'd["why"] == "LD_LIBRARY_PATH" and d["id"] == "'"$ID896"'" and d["library"].endswith("/lib/libcudnn.so.8.9.6")' \
	"which: LD_LIBRARY_PATH wins over the toolkit's link"
LD_LIBRARY_PATH=/nonexistent:$STORE/versions/$ID896/lib cvm which --cuda 11.8
assert_out_contains "LD_LIBRARY_PATH comes first" "which says LD_LIBRARY_PATH is why"

# A copy made by hand into the 12.4 toolkit: its own, not managed.
hand_copy "$(archive 9.1.1.17 12)" "$TK12"
cvm --json which --cuda 12.4
assert_rc 0 "which --cuda 12.4 with a hand-copied cuDNN: exit 0"
assert_json 'd["why"] == "toolkit lib64" and d["id"] is None and d["library"] == "/usr/local/cuda-12.4/targets/x86_64-linux/lib/libcudnn.so.9.1.1"' \
	"which: the toolkit's own copy, not the store's"
cvm which --cuda 12.4
assert_out_contains "not managed by cudnnvm" "which says the toolkit's copy is not managed"

# The loader cache: a toolkit with no cuDNN of its own, a copy in a system folder.
TK13=$ROOT/usr/local/cuda-13.0
mkdir -p "$TK13/include" "$TK13/lib64" "$ROOT/usr/lib/x86_64-linux-gnu" "$ROOT/etc"
printf '#define CUDART_VERSION 13000\n' >"$TK13/include/cuda_runtime_api.h"
make_stub "$ROOT/usr/lib/x86_64-linux-gnu/libcudnn.so.9.1.1" libcudnn.so.9 90101
ln -s libcudnn.so.9.1.1 "$ROOT/usr/lib/x86_64-linux-gnu/libcudnn.so.9"
printf '/usr/lib/x86_64-linux-gnu\n' >"$ROOT/etc/ld.so.conf"
LDC=/sbin/ldconfig
[ -x "$LDC" ] || LDC=/usr/sbin/ldconfig
if [ -x "$LDC" ] && "$LDC" -r "$ROOT" 2>/dev/null && [ -s "$ROOT/etc/ld.so.cache" ]; then
	CUDNNVM_LDCONFIG=$LDC cvm --json which --cuda 13.0
	assert_rc 0 "which --cuda 13.0 (only the loader cache knows a cuDNN): exit 0"
	assert_json 'd["why"] == "loader cache" and d["library"] == "/usr/lib/x86_64-linux-gnu/libcudnn.so.9.1.1" and d["name"] == "/usr/lib/x86_64-linux-gnu/libcudnn.so.9"' \
		"which: the loader cache names /usr/lib/x86_64-linux-gnu"
	CUDNNVM_LDCONFIG= cvm which --cuda 13.0
	assert_rc 1 "with CUDNNVM_LDCONFIG empty the cache is not read: exit 1"
else
	skip "which: the loader cache" "ldconfig -r cannot build a cache under the root here (not root?)"
fi

cvm which 8.9
assert_rc 2 "which with an argument: exit 2"
cvm which --cuda 10.2
assert_rc 1 "which --cuda 10.2 (no such toolkit): exit 1"

finish
