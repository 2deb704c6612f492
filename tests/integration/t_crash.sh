#!/bin/bash
# SPDX-License-Identifier: MIT
# Crash points (test build: CUDNNVM_FAULT=<point> makes the process SIGKILL
# itself there): a crash never leaves a half-installed version, and the next
# locked command sweeps .staging and .trash and succeeds.
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"

MAN=$TEST_TMP/manifests
A8=$(mkcudnn 8.9.7.29 11 --manifest "$MAN")
A19=$(mkcudnn 9.19.0.56 13.0)
H19=$(sha256 "$A19")
ID8=$(id_of 8.9.7.29 11)
ID19=$(id_of 9.19.0.56 13)
V8=$STORE/versions/$ID8

entries() { find "$1" -mindepth 1 -maxdepth 1 2>/dev/null | grep -c .; }

for point in install-verified install-extracting install-staged install-committed; do
	new_root
	V8=$STORE/versions/$ID8
	mkdir -p "$ROOT/etc"
	echo marker >"$ROOT/etc/marker"
	snapshot "$ROOT" opt >"$TEST_TMP/before.snap"
	CUDNNVM_FAULT=$point cvm --manifests "$MAN" install 8.9.7 --cuda 11.8 --archive "$A8"
	assert_rc 137 "$point: the install dies (SIGKILL, 137)"
	case $point in
	install-committed)
		assert_dir "$V8" "$point: the version exists"
		assert_sha256sum_c "$V8" "$point: the version's files verify"
		assert_symlink "$V8/lib/libcudnn.so" libcudnn.so.8 "$point: the chain is complete"
		cvm verify 8.9.7
		assert_rc 0 "$point: cudnnvm verify exits 0"
		;;
	*)
		assert_absent "$V8" "$point: no versions/$ID8"
		cvm --json list
		assert_json 'd["installed"] == []' "$point: list shows nothing installed"
		;;
	esac
	case $point in
	install-extracting | install-staged)
		check "$point: the crash left its staging folder (the point is reached)" \
			test "$(entries "$STORE/.staging")" -ge 1
		;;
	esac
	snapshot "$ROOT" opt >"$TEST_TMP/after.snap"
	assert_same_snapshot "$TEST_TMP/before.snap" "$TEST_TMP/after.snap" "$point: nothing written outside the store"
	check "$point: /opt holds only the store" test "$(find "$ROOT/opt" -mindepth 1 -maxdepth 1 -printf '%P\n')" = cudnnvm

	# a different locked command sweeps first
	cvm install 9.19.0 --cuda 13.0 --archive "$A19" --sha256 "$H19"
	assert_rc 0 "$point: the next install (another version) succeeds"
	assert_store_clean "$point: the next install swept .staging and .trash"
	assert_dir "$STORE/versions/$ID19" "$point: the next install installed $ID19"

	# and the crashed install can be done again
	cvm --manifests "$MAN" install 8.9.7 --cuda 11.8 --archive "$A8"
	assert_rc 0 "$point: installing 8.9.7 again succeeds"
	if [ "$point" = install-committed ]; then
		assert_output_contains "already installed" "$point: 8.9.7 is already installed"
	fi
	assert_sha256sum_c "$V8" "$point: 8.9.7 verifies afterwards"
	assert_versions "$ID8 $ID19" "$point: versions/ holds exactly the two versions"
	assert_store_clean "$point: work areas empty at the end"
done

# A crash during --force leaves the old version whole.
new_root
V8=$STORE/versions/$ID8
cvm --manifests "$MAN" install 8.9.7 --cuda 11.8 --archive "$A8"
assert_rc 0 "force: set-up install"
for point in install-extracting install-staged; do
	CUDNNVM_FAULT=$point cvm --manifests "$MAN" install 8.9.7 --cuda 11.8 --archive "$A8" --force
	assert_rc 137 "force, $point: the reinstall dies"
	assert_sha256sum_c "$V8" "force, $point: the installed version is still whole"
	assert_symlink "$V8/lib/libcudnn.so.8" libcudnn.so.8.9.7 "force, $point: its links are intact"
done
cvm --manifests "$MAN" install 8.9.7 --cuda 11.8 --archive "$A8" --force
assert_rc 0 "force: a clean --force afterwards succeeds"
assert_store_clean "force: work areas empty after it"
assert_versions "$ID8" "force: exactly one version"

# A stale staging folder from an older crash is swept by uninstall too.
mkdir -p "$STORE/.staging/$ID19.stale1" "$STORE/.trash/old.stale2"
echo junk >"$STORE/.staging/$ID19.stale1/junk"
cvm uninstall 8.9.7 --cuda 11.8
assert_rc 0 "uninstall with stale work areas: exit 0"
assert_store_clean "uninstall swept stale .staging and .trash"
assert_absent "$V8" "uninstall removed the version"

finish
