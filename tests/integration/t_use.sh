#!/bin/bash
# SPDX-License-Identifier: MIT
# use, current, list's active_for: the store's active link, the toolkit's
# relative links through it, the links file, the loader configuration, when
# ldconfig runs, a file set that changes (8.x -> 9.x), a toolkit whose lib64 is
# a link, two toolkits sharing a soname, the smoke test's report, and every
# refusal leaving everything as it was.
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"
# shellcheck source-path=SCRIPTDIR source=lib_activate.sh
. "$TESTS_DIR/integration/lib_activate.sh"

act_root
inst 8.9.7.29 11.8
inst 8.9.6.50 11.8
inst 9.1.1.17 11.8
inst 9.1.1.17 12.4
inst 9.1.0.70 12.4

# ------------------------------------------------------------ nothing active
cvm --json current
assert_rc 0 "current --json with nothing active exits 0"
assert_json 'd == {"active": []}' "current --json with nothing active: {\"active\": []}"
assert_absent "$STORE/active/cuda-11.8" "no active link before the first use"

# --------------------------------------------- the first use (default toolkit)
ldconfig_counter
CUDNNVM_LDCONFIG=$LDCONFIG_PROG cvm use 8.9.7
assert_rc 0 "use 8.9.7 (toolkit from /usr/local/cuda) exits 0"
assert_symlink "$STORE/active/cuda-11.8" "../versions/$ID897" "active/cuda-11.8 -> ../versions/$ID897"
assert_uses "$TK11" 11.8 "$ID897" "use 8.9.7: every cudnn*.h and libcudnn* of 8.9.7 is a relative link through the active link"
assert_symlink "$LIB11/libcudnn.so.8" ../../../../opt/cudnnvm/active/cuda-11.8/lib/libcudnn.so.8 \
	"lib64/libcudnn.so.8 -> ../../../../opt/cudnnvm/active/cuda-11.8/lib/libcudnn.so.8"
assert_symlink "$TK11/include/cudnn.h" ../../../../opt/cudnnvm/active/cuda-11.8/include/cudnn.h \
	"include/cudnn.h -> ../../../../opt/cudnnvm/active/cuda-11.8/include/cudnn.h"
check "readlink -f lib64/libcudnn.so.8 is versions/$ID897/lib/libcudnn.so.8.9.7" \
	test "$(readlink -f "$LIB11/libcudnn.so.8")" = "$(readlink -f "$STORE/versions/$ID897/lib/libcudnn.so.8.9.7")"
check "the links file names lib64/libcudnn.so.8 as seen inside the root, with the body written" \
	grep -qxF "$(printf '/usr/local/cuda-11.8/lib64/libcudnn.so.8\t../../../../opt/cudnnvm/active/cuda-11.8/lib/libcudnn.so.8')" \
	"$STORE/toolkits/cuda-11.8.links"
check "the links file names include/cudnn.h as seen inside the root, with the body written" \
	grep -qxF "$(printf '/usr/local/cuda-11.8/include/cudnn.h\t../../../../opt/cudnnvm/active/cuda-11.8/include/cudnn.h')" \
	"$STORE/toolkits/cuda-11.8.links"
assert_file "$ROOT/etc/ld.so.conf.d/cudnnvm-cuda-11.8.conf" "etc/ld.so.conf.d/cudnnvm-cuda-11.8.conf written"
check "the conf file names /opt/cudnnvm/active/cuda-11.8/lib (inside the root)" \
	grep -qx /opt/cudnnvm/active/cuda-11.8/lib "$ROOT/etc/ld.so.conf.d/cudnnvm-cuda-11.8.conf"
check "first use ran ldconfig once" test "$(ld_calls)" = 1
check "ldconfig was given -r ROOT" grep -Eq -- "^-r ($ROOT|$(readlink -f "$ROOT"))/?\$" "$LDCALLS"
assert_smoke 8907 "use 8.9.7: the smoke test loads it and it reports 8907"
assert_file "$LIB11/libcufft.so.10" "the toolkit's own libraries are left alone"
assert_file "$TK11/include/cuda_runtime_api.h" "the toolkit's own headers are left alone"
check "use made nothing in the 12.4 toolkit" test -z "$(toolkit_names "$TK12")"
assert_no_dangling "$TK11" "use 8.9.7: no dangling link in the toolkit"
assert_journal "use 8.9.7: the journal parses"
check "use 8.9.7: the journal has one entry: use (none) -> 8.9.7" test "$(journal 11.8)" = "use - $ID897"
assert_json 'd["history"][0]["user"] == "'"$(id -un)"'" and d["history"][0]["cuda"] == "11.8" and "8.9.7" in d["history"][0]["command"]' \
	"history entry: user, cuda and command" "$JOURNAL_JSON"

cvm --json current
assert_rc 0 "current --json exits 0"
assert_json 'd["active"] == [{"cuda": "11.8", "toolkit": "/usr/local/cuda-11.8", "id": "'"$ID897"'", "version": "8.9.7.29"}]' \
	"current --json: 11.8 /usr/local/cuda-11.8 $ID897 8.9.7.29"
cvm current
assert_rc 0 "current exits 0"
assert_out_contains "$ID897" "current names the active id"
cvm --json list
assert_json '[e["active_for"] for e in d["installed"] if e["id"] == "'"$ID897"'"] == [["11.8"]]' "list --json: 8.9.7 is active_for [\"11.8\"]"
assert_json 'all(e["active_for"] == [] for e in d["installed"] if e["id"] != "'"$ID897"'")' "list --json: the others are active for nothing"

# ------------------------------- same sonames: 8.9.7 -> 8.9.6, ldconfig not run
ino=$(stat -c %i "$LIB11/libcudnn.so.8")
CUDNNVM_LDCONFIG=$LDCONFIG_PROG cvm use 8.9.6 --cuda 11.8
assert_rc 0 "use 8.9.6 exits 0"
assert_uses "$TK11" 11.8 "$ID896" "use 8.9.6: the toolkit holds exactly 8.9.6's names, through the active link"
assert_absent "$LIB11/libcudnn.so.8.9.7" "use 8.9.6: no stale libcudnn.so.8.9.7 link"
check "use 8.9.6: lib64/libcudnn.so.8 (a name both have) was not replaced" test "$(stat -c %i "$LIB11/libcudnn.so.8")" = "$ino"
check "use 8.9.6 (same sonames, same conf) did not run ldconfig" test "$(ld_calls)" = 1
assert_smoke 8906 "use 8.9.6: the smoke test reports 8906"
check "use 8.9.6: journal: use 8.9.7 -> 8.9.6" test "$(journal 11.8 | tail -n 1)" = "use $ID897 $ID896"

# the same version again: nothing to switch
n=$(hist_lines 11.8)
CUDNNVM_LDCONFIG=$LDCONFIG_PROG cvm use 8.9.6.50 --cuda 11.8
assert_rc 0 "use of the active version again exits 0"
assert_uses "$TK11" 11.8 "$ID896" "use of the active version again: links in order"
check "use of the active version again: not a switch, no journal line" test "$(hist_lines 11.8)" = "$n"
check "use of the active version again: ldconfig not run" test "$(ld_calls)" = 1

# --------------------------------- the file set changes: 8.9.6 -> 9.1.1 (cuda11)
CUDNNVM_LDCONFIG=$LDCONFIG_PROG cvm use 9.1.1 --cuda 11.8
assert_rc 0 "use 9.1.1 --cuda 11.8 (a cuda11 build of 9.x) exits 0"
assert_uses "$TK11" 11.8 "$ID911_11" "use 9.1.1: exactly 9.1.1's names, through the active link"
assert_absent "$LIB11/libcudnn.so.8" "use 9.1.1: no stale libcudnn.so.8"
assert_absent "$LIB11/libcudnn_ops_infer.so.8" "use 9.1.1: no stale libcudnn_ops_infer.so.8"
assert_absent "$TK11/include/cudnn_ops_infer.h" "use 9.1.1: no stale cudnn_ops_infer.h"
assert_absent "$TK11/include/cudnn_v8.h" "use 9.1.1: no stale cudnn_v8.h"
assert_symlink "$LIB11/libcudnn_graph.so.9" ../../../../opt/cudnnvm/active/cuda-11.8/lib/libcudnn_graph.so.9 "use 9.1.1: libcudnn_graph.so.9 linked"
if grep -q -e '\.so\.8' -e '_v8' -e '_infer' "$STORE/toolkits/cuda-11.8.links"; then
	not_ok "use 9.1.1: the links file lists no 8.x name" "$(grep -e '\.so\.8' -e '_v8' -e '_infer' "$STORE/toolkits/cuda-11.8.links" | head -n 3)"
else
	ok "use 9.1.1: the links file lists no 8.x name"
fi
assert_no_dangling "$TK11" "use 9.1.1: no dangling link in the toolkit"
check "8.x -> 9.x (sonames change) ran ldconfig" test "$(ld_calls)" = 2
assert_smoke 90101 "use 9.1.1: the smoke test reports 90101"

# -------------------------- the 12.4 toolkit: lib64 is a link, version from the header
CUDNNVM_LDCONFIG=$LDCONFIG_PROG cvm use 9.1.1 --cuda 12.4
assert_rc 0 "use 9.1.1 --cuda 12.4 exits 0"
assert_uses "$TK12" 12.4 "$ID911" "use 9.1.1 --cuda 12.4: links in targets/x86_64-linux/lib through active/cuda-12.4"
assert_symlink "$TK12/lib64" targets/x86_64-linux/lib "12.4: lib64 is still the toolkit's link"
assert_symlink "$LIB12/libcudnn.so.9" ../../../../../../opt/cudnnvm/active/cuda-12.4/lib/libcudnn.so.9 \
	"12.4: targets/x86_64-linux/lib/libcudnn.so.9 -> ../../../../../../opt/cudnnvm/active/cuda-12.4/lib/libcudnn.so.9"
check "12.4: lib64/libcudnn.so.9 resolves into versions/$ID911" \
	test "$(readlink -f "$TK12/lib64/libcudnn.so.9")" = "$(readlink -f "$STORE/versions/$ID911/lib/libcudnn.so.9.1.1")"
check "use --cuda 12.4 ran ldconfig (a new conf file)" test "$(ld_calls)" = 3
assert_err_contains "libcudnn.so.9" "two toolkits with libcudnn.so.9 active: the warning names the soname"
assert_err_matches "warning:.*(11\\.8|12\\.4)" "the warning names the toolkits"
assert_err_matches "resolves|wins|loader" "the warning says which one the loader cache resolves to"
assert_uses "$TK11" 11.8 "$ID911_11" "use --cuda 12.4 left the 11.8 toolkit as it was"
cvm --json current
assert_json 'sorted((e["cuda"], e["toolkit"], e["id"]) for e in d["active"]) == [("11.8", "/usr/local/cuda-11.8", "'"$ID911_11"'"), ("12.4", "/usr/local/cuda-12.4", "'"$ID911"'")]' \
	"current --json lists both toolkits"
cvm --json current --cuda 12.4
assert_json '[(e["cuda"], e["id"], e["version"]) for e in d["active"]] == [("12.4", "'"$ID911"'", "9.1.1.17")]' \
	"current --json --cuda 12.4 lists only 12.4"

CUDNNVM_LDCONFIG=$LDCONFIG_PROG cvm use 9.1.0 --cuda 12.4 --no-smoke
assert_rc 0 "use 9.1.0 --cuda 12.4 --no-smoke exits 0"
assert_uses "$TK12" 12.4 "$ID910" "use 9.1.0 --cuda 12.4: exactly 9.1.0's names"
assert_out_lacks "smoke test" "--no-smoke: no smoke test line on stdout"
if grep -qi "smoke test:" "$CVM_ERRF"; then not_ok "--no-smoke: no smoke test line on stderr"; else ok "--no-smoke: no smoke test line on stderr"; fi
check "9.1.1 -> 9.1.0 (same sonames) did not run ldconfig" test "$(ld_calls)" = 3

# --no-ldconfig, and CUDNNVM_LDCONFIG set and empty, skip it
CUDNNVM_LDCONFIG=$LDCONFIG_PROG cvm use 8.9.7 --cuda 11.8 --no-ldconfig
assert_rc 0 "use 8.9.7 --no-ldconfig exits 0"
assert_uses "$TK11" 11.8 "$ID897" "9.x -> 8.x: exactly 8.9.7's names again"
assert_no_dangling "$TK11" "9.x -> 8.x: no dangling link"
check "--no-ldconfig: ldconfig not run though the sonames changed" test "$(ld_calls)" = 3
cvm use 9.1.1 --cuda 11.8
assert_rc 0 "use with CUDNNVM_LDCONFIG= exits 0"
check "CUDNNVM_LDCONFIG= (empty): ldconfig not run" test "$(ld_calls)" = 3

# ------------------------------------------------------------------ refusals
refusal() { # NAME WANT_RC  (after cvm: nothing changed)
	assert_rc "$2" "$1: exit $2"
	snapshot "$ROOT" >"$TEST_TMP/after.snap"
	assert_same_snapshot "$TEST_TMP/before.snap" "$TEST_TMP/after.snap" "$1: nothing changed (toolkits, store, journal)"
}
snapshot "$ROOT" >"$TEST_TMP/before.snap"

cvm use 9.1.0 --cuda 11.8
refusal "use 9.1.0 --cuda 11.8 (only a cuda12 build installed)" 1
assert_err_matches "CUDA (major )?12|cuda12|another CUDA major|other CUDA major" "cuda12 build for an 11.8 toolkit: the message says it is a build for another CUDA major"

cvm use 8.9.5 --cuda 11.8
refusal "use 8.9.5 (not installed)" 1
assert_err_contains "8.9.5" "not installed: the message names the version"

cvm use 8.9.7 --cuda 10.2
refusal "use --cuda 10.2 (no such toolkit)" 1

cvm use
assert_rc 2 "use without a version: usage error (exit 2)"

cvm --user use 8.9.7
refusal "--user use" 1

# a hand-copied header in the way of a first activation
act_root
inst 8.9.7.29 11.8
inst 9.1.1.17 11.8
cp "$STORE/versions/$ID897/include/cudnn.h" "$TK11/include/cudnn.h"
snapshot "$ROOT" >"$TEST_TMP/before.snap"
cvm use 8.9.7 --cuda 11.8
refusal "a hand-copied include/cudnn.h" 1
assert_err_contains "cudnn.h" "the refusal names the file in the way"
assert_err_contains "cudnnvm adopt" "the refusal suggests 'cudnnvm adopt'"
assert_absent "$STORE/active/cuda-11.8" "the refusal made no active link"
rm -f "$TK11/include/cudnn.h"

# a file in the way of a name only the new version has (8.x -> 9.x): the
# links already made are taken back
use_ok 8.9.7 --cuda 11.8
printf 'hand copy\n' >"$LIB11/libcudnn_graph.so.9"
snapshot "$ROOT" >"$TEST_TMP/before.snap"
cvm use 9.1.1 --cuda 11.8
refusal "a hand-copied lib64/libcudnn_graph.so.9 in the way of 8.x -> 9.x" 1
assert_err_contains "libcudnn_graph.so.9" "the refusal names libcudnn_graph.so.9"
assert_err_contains "adopt" "the refusal suggests adopt"
check "still 8.9.7, journal unchanged" test "$(journal 11.8)" = "use - $ID897"
rm -f "$LIB11/libcudnn_graph.so.9"
# a link cudnnvm did not make is not replaced either
ln -s /nowhere/libcudnn_ops.so.9 "$LIB11/libcudnn_ops.so.9"
snapshot "$ROOT" >"$TEST_TMP/before.snap"
cvm use 9.1.1 --cuda 11.8
refusal "a foreign symlink lib64/libcudnn_ops.so.9" 1
assert_err_contains "libcudnn_ops.so.9" "the refusal names the foreign link"
rm -f "$LIB11/libcudnn_ops.so.9"
use_ok 9.1.1 --cuda 11.8
assert_uses "$TK11" 11.8 "$ID911_11" "once the file is gone, use 9.1.1 works"
assert_no_dangling "$TK11" "and leaves no dangling link"
assert_journal "the journal parses at the end"

finish
