#!/bin/bash
# SPDX-License-Identifier: MIT
# adopt: a cuDNN copied into a toolkit by hand is moved into the store, every
# copied file becomes a managed link, the bytes seen through every path stay
# the same, the originals are kept (hard links) in STORE/backups/<id>/, and
# use/rollback work afterwards; mixed majors and empty toolkits are refused.
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"
# shellcheck source-path=SCRIPTDIR source=lib_activate.sh
. "$TESTS_DIR/integration/lib_activate.sh"

# originals TK: "include/NAME inode" / "lib/NAME inode" of every regular cuDNN file.
originals() {
	local n p
	while read -r n; do
		p=$(tk_path "$1" "$n")
		[ -f "$p" ] && [ ! -L "$p" ] && echo "$n $(stat -c %i "$p")"
	done < <(toolkit_names "$1")
}

# assert_backups ID ORIGINALS_FILE NAMES_FILE NAME: every original is in
# STORE/backups/ID/ as a hard link (same inode), every name has a backup.
assert_backups() {
	local b=$STORE/backups/$1 probs n i
	probs=$(
		while read -r n i; do
			if [ ! -f "$b/$n" ]; then echo "no backup $b/$n"; continue; fi
			[ "$(stat -c %i "$b/$n")" = "$i" ] || echo "$b/$n is not the original (inode $(stat -c %i "$b/$n"), want $i)"
		done <"$2"
		while read -r n; do
			[ -e "$b/$n" ] || [ -L "$b/$n" ] || echo "no backup of $n"
		done <"$3"
	)
	if [ -z "$probs" ]; then ok "$4"; else not_ok "$4" "$(printf '%s\n' "$probs" | head -n 10)"; fi
}

# ------------------------------------------- 9.1.1 (cuda12) copied into 12.4
act_root
AID12=9.1.1-cuda12-linux-x86_64
hand_copy "$(archive 9.1.1.17 12)" "$TK12"
toolkit_names "$TK12" >"$TEST_TMP/names12"
originals "$TK12" >"$TEST_TMP/orig12"
bytes "$TK12" >"$TEST_TMP/bytes12.before"
check "set-up: the hand copy has libcudnn.so.9.1.1" grep -qx "lib/libcudnn.so.9.1.1" "$TEST_TMP/names12"
ldconfig_counter
CUDNNVM_LDCONFIG=$LDCONFIG_PROG cvm adopt --cuda 12.4
assert_rc 0 "adopt --cuda 12.4 exits 0"
assert_dir "$STORE/versions/$AID12" "adopted as versions/$AID12"
assert_uses "$TK12" 12.4 "$AID12" "adopt: every hand-copied name is a managed link through active/cuda-12.4"
check "adopt: the same names as before" cmp -s "$TEST_TMP/names12" <(toolkit_names "$TK12")
bytes "$TK12" >"$TEST_TMP/bytes12.after"
assert_same_snapshot "$TEST_TMP/bytes12.before" "$TEST_TMP/bytes12.after" "adopt: the bytes read through every path (include/, lib64/) are unchanged"
assert_backups "$AID12" "$TEST_TMP/orig12" "$TEST_TMP/names12" "adopt: the originals are hard-linked into backups/$AID12/{include,lib}/"
assert_no_dangling "$TK12" "adopt: no dangling link"
assert_symlink "$TK12/lib64" targets/x86_64-linux/lib "adopt: lib64 is still the toolkit's link"
assert_file "$TK12/include/cuda_runtime_api.h" "adopt: the toolkit's own header is untouched"
assert_file "$LIB12/libcufft.so.11" "adopt: the toolkit's own library is untouched"
check "adopt ran ldconfig (a new conf file)" test "$(ld_calls)" = 1
assert_sha256sum_c "$STORE/versions/$AID12" "adopt: sha256sum -c passes in the adopted version"
assert_tree_modes "$STORE/versions/$AID12" "adopt: the adopted version is readable by all"
cvm verify
assert_rc 0 "verify passes after adopt"
check "journal: adopt (none) -> $AID12" test "$(journal 12.4)" = "adopt - $AID12"
assert_journal "adopt: the journal parses"
assert_store_clean "adopt: work areas empty"
cvm --json current --cuda 12.4
assert_json '[e["id"] for e in d["active"]] == ["'"$AID12"'"]' "current: the adopted version is active for 12.4"
cvm --json list
assert_json '[e["active_for"] for e in d["installed"] if e["id"] == "'"$AID12"'"] == [["12.4"]]' "list: the adopted version is listed, active for 12.4"

snapshot "$ROOT" >"$TEST_TMP/before.snap"
cvm adopt --cuda 12.4
assert_rc 1 "adopt again (nothing hand-copied left): exit 1"
snapshot "$ROOT" >"$TEST_TMP/after.snap"
assert_same_snapshot "$TEST_TMP/before.snap" "$TEST_TMP/after.snap" "adopt again changes nothing"

# use another version, and roll back to the adopted one
inst 9.1.0.70 12.4
cvm use 9.1.0 --cuda 12.4
assert_rc 0 "use 9.1.0 after adopt exits 0"
assert_uses "$TK12" 12.4 "$ID910" "use 9.1.0 after adopt: 9.1.0's links"
assert_no_dangling "$TK12" "use 9.1.0 after adopt: no dangling link"
cvm rollback --cuda 12.4
assert_rc 0 "rollback to the adopted version exits 0"
assert_uses "$TK12" 12.4 "$AID12" "rollback: the adopted version is active again"
bytes "$TK12" >"$TEST_TMP/bytes12.back"
assert_same_snapshot "$TEST_TMP/bytes12.before" "$TEST_TMP/bytes12.back" "rollback: the original bytes again through every path"
check "journal: adopt, use, rollback" test "$(journal 12.4 | cut -d' ' -f1 | tr '\n' ' ')" = "adopt use rollback "
cvm rollback --cuda 12.4
assert_rc 1 "rollback past the adoption: exit 1 (nothing before it)"
assert_uses "$TK12" 12.4 "$AID12" "the adopted version stays active"
cvm uninstall 9.1.0 --cuda 12.4
assert_rc 0 "uninstall of the other version exits 0"
cvm verify
assert_rc 0 "verify passes at the end"

# -------------------------------- 8.9.7 copied into the default toolkit (11.8)
act_root
AID8=8.9.7-cuda11-linux-x86_64
hand_copy "$(archive 8.9.7.29 11)" "$TK11"
toolkit_names "$TK11" >"$TEST_TMP/names11"
originals "$TK11" >"$TEST_TMP/orig11"
bytes "$TK11" >"$TEST_TMP/bytes11.before"
ldconfig_counter
CUDNNVM_LDCONFIG=$LDCONFIG_PROG cvm adopt --no-ldconfig
assert_rc 0 "adopt (default toolkit, --no-ldconfig) exits 0"
assert_uses "$TK11" 11.8 "$AID8" "adopt: 11.8 now uses $AID8 through managed links"
bytes "$TK11" >"$TEST_TMP/bytes11.after"
assert_same_snapshot "$TEST_TMP/bytes11.before" "$TEST_TMP/bytes11.after" "adopt 8.9.7: the bytes through every path are unchanged"
assert_backups "$AID8" "$TEST_TMP/orig11" "$TEST_TMP/names11" "adopt 8.9.7: originals kept as hard links in backups/"
check "adopt --no-ldconfig: ldconfig not run" test "$(ld_calls)" = 0
inst 8.9.6.50 11.8
inst 9.1.1.17 11.8
use_ok 9.1.1 --cuda 11.8
assert_uses "$TK11" 11.8 "$ID911_11" "use 9.1.1 after adopting 8.9.7: 9.x links only"
assert_no_dangling "$TK11" "use 9.1.1 after adopting 8.9.7: no dangling link"
use_ok 8.9.6 --cuda 11.8
cvm rollback
assert_rc 0 "rollback (to 9.1.1) exits 0"
cvm rollback
assert_rc 0 "rollback (to the adopted 8.9.7) exits 0"
assert_uses "$TK11" 11.8 "$AID8" "two rollbacks: the adopted 8.9.7 again"
bytes "$TK11" >"$TEST_TMP/bytes11.back"
assert_same_snapshot "$TEST_TMP/bytes11.before" "$TEST_TMP/bytes11.back" "the adopted 8.9.7's bytes again through every path"
cvm verify
assert_rc 0 "verify passes"

# -------------------------------------------------------------- refusals
store_untouched() { # WHAT: the store (if made) holds no version, link, backup or journal
	local d bad=
	for d in versions active backups history toolkits .staging .trash; do
		[ -n "$(_entries "$STORE/$d")" ] && bad="$bad $d/: $(_entries "$STORE/$d" | tr '\n' ' ')"
	done
	if [ -z "$bad" ]; then ok "$1: the store holds nothing"; else not_ok "$1: the store holds nothing" "$bad"; fi
}
# headers of 8.9.7, libraries of 9.1.1
act_root
x=$TEST_TMP/mixed
mkdir -p "$x/8" "$x/9"
tar -xJf "$(archive 8.9.7.29 11)" -C "$x/8"
tar -xJf "$(archive 9.1.1.17 11)" -C "$x/9"
cp -a "$x"/8/*/include/. "$TK11/include/"
cp -a "$x"/9/*/lib/. "$LIB11/"
snapshot "$ROOT" opt >"$TEST_TMP/before.snap"
cvm adopt --cuda 11.8
assert_rc 3 "adopt of 8.9.7 headers with libcudnn.so.9: exit 3"
assert_err_matches "8\\.9\\.7|major|9" "the refusal says what disagrees"
snapshot "$ROOT" opt >"$TEST_TMP/after.snap"
assert_same_snapshot "$TEST_TMP/before.snap" "$TEST_TMP/after.snap" "mixed majors: nothing changed outside the store"
store_untouched "mixed majors"

# a toolkit with no cuDNN at all
act_root
snapshot "$ROOT" opt >"$TEST_TMP/before.snap"
cvm adopt --cuda 11.8
assert_rc 1 "adopt in a toolkit without cuDNN: exit 1"
cvm adopt --cuda 12.4
assert_rc 1 "adopt in the other toolkit without cuDNN: exit 1"
snapshot "$ROOT" opt >"$TEST_TMP/after.snap"
assert_same_snapshot "$TEST_TMP/before.snap" "$TEST_TMP/after.snap" "adopt without cuDNN: nothing changed outside the store"
store_untouched "adopt without cuDNN"

finish
