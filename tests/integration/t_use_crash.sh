#!/bin/bash
# SPDX-License-Identifier: MIT
# Crash points of activation (test build: CUDNNVM_FAULT=<point> makes the
# process SIGKILL itself there): use-prepared, use-switched, use-unlinking,
# use-finished. After the kill every cuDNN link of the toolkit that resolves
# resolves into one version folder, the active version is whole in the
# toolkit, and the next command repairs everything: no dangling link, the
# journal parses and its last destination is the active version (a line a
# crash cut off is added from history/cuda-X.Y.pending), .staging and
# .trash are empty. (uninstall and adopt:
# t_uninstall_adopt_crash.sh)
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"
# shellcheck source-path=SCRIPTDIR source=lib_activate.sh
. "$TESTS_DIR/integration/lib_activate.sh"

act_root
inst 8.9.7.29 11.8
inst 8.9.6.50 11.8
inst 9.1.1.17 11.8

id_of_release() { # 8.9.7 -> its id
	case $1 in
	8.9.7) echo "$ID897" ;;
	8.9.6) echo "$ID896" ;;
	9.1.1) echo "$ID911_11" ;;
	esac
}

# after_next NAME ID: the state after the command that follows a crash.
after_next() {
	assert_uses "$TK11" 11.8 "$2" "$1: the links are those of $2"
	assert_no_dangling "$TK11" "$1: no dangling link"
	assert_journal "$1: the journal parses"
	check "$1: the journal's last destination is $2, the active one" \
		test "$(journal 11.8 | tail -n 1 | cut -d' ' -f3)" = "$2"
	assert_absent "$STORE/history/cuda-11.8.pending" "$1: no switch left pending"
	assert_store_clean "$1: .staging and .trash are empty"
}

# ------------------------------------------------ use, switching A -> B
for pair in "8.9.7 9.1.1" "9.1.1 8.9.7" "8.9.7 8.9.6"; do
	read -r a b <<<"$pair"
	ida=$(id_of_release "$a")
	idb=$(id_of_release "$b")
	for point in use-prepared use-switched use-unlinking use-finished; do
		t="$point, $a -> $b"
		use_ok "$a" --cuda 11.8 --no-smoke
		n=$(hist_lines 11.8)
		CUDNNVM_FAULT=$point cvm use "$b" --cuda 11.8 --no-smoke
		assert_rc 137 "$t: use dies (SIGKILL, 137)"
		case $point in
		use-prepared) want=$ida ;;
		*) want=$idb ;;
		esac
		assert_symlink "$STORE/active/cuda-11.8" "../versions/$want" "$t: active/cuda-11.8 -> ../versions/$want"
		assert_one_version "$TK11" "$t: every link that resolves resolves into one version"
		check "$t: ... the active one" test "$ONE_ID" = "$want"
		assert_active_complete "$TK11" 11.8 "$t: every name of the active version resolves in the toolkit"
		if [ "$point" = use-finished ]; then
			assert_no_dangling "$TK11" "$t: no dangling link (the stale ones were removed)"
		fi
		assert_journal "$t: the journal parses"
		check "$t: no journal line for the switch cut short" test "$(hist_lines 11.8)" = "$n"
		cvm --json current --cuda 11.8
		assert_json '[e["id"] for e in d["active"]] == ["'"$want"'"]' "$t: current reports $want, as the active link says"

		# the next command: the same use again repairs
		cvm use "$b" --cuda 11.8 --no-smoke
		assert_rc 0 "$t: use $b again exits 0"
		after_next "$t, use $b again" "$idb"

		# and the crash again, then going back instead (once per point)
		[ "$pair" = "8.9.7 9.1.1" ] || continue
		CUDNNVM_FAULT=$point cvm use "$a" --cuda 11.8 --no-smoke
		assert_rc 137 "$t: a second crash, $b -> $a, dies"
		cvm use "$b" --cuda 11.8 --no-smoke
		assert_rc 0 "$t: use $b after a crashed switch to $a exits 0"
		after_next "$t, use $b after a crashed switch to $a" "$idb"
	done
done

# a first activation cut short (no stale link to remove: no use-unlinking)
for point in use-prepared use-switched use-finished; do
	act_root
	inst 9.1.1.17 11.8
	CUDNNVM_FAULT=$point cvm use 9.1.1 --cuda 11.8 --no-smoke
	assert_rc 137 "$point, first activation: use dies"
	assert_at_most_one_version "$TK11" "$point, first activation: the links that resolve resolve into one version"
	if [ -L "$STORE/active/cuda-11.8" ]; then
		assert_active_complete "$TK11" 11.8 "$point, first activation: the active version is whole in the toolkit"
	fi
	cvm use 9.1.1 --cuda 11.8 --no-smoke
	assert_rc 0 "$point, first activation: use again exits 0"
	after_next "$point, first activation, use again" "$ID911_11"
done

finish
