#!/bin/bash
# SPDX-License-Identifier: MIT
# Hostile archives (tests/fixtures/hostile.py), one per extraction rule, each
# installed with --sha256 of its own hash so that only the entry checks can
# refuse it (including the bounds: 32 folders, 255-byte names, 4,096
# entries): exit 3, "unsafe" on stderr, nothing written anywhere (in the
# root, in the store, at the outside targets), no version, staging empty.
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"

MAN=$TEST_TMP/manifests
A8=$(mkcudnn 8.9.7.29 11 --manifest "$MAN")
BASE=$(mkcudnn 9.19.0.56 13.0)
ZBASE=$(mkcudnn 9.19.0.56 13.0 --layout windows)
ID=$(id_of 9.19.0.56 13)
IDW=$(id_of 9.19.0.56 13 windows-x86_64)

# The folder the archives aim at, outside the root, with a file to overwrite.
OUTSIDE=$(mktemp -d /tmp/cvm-outside.XXXXXX)
cleanup_add "$OUTSIDE"
echo "original victim" >"$OUTSIDE/victim"
chmod 0644 "$OUTSIDE/victim"

H=$TEST_TMP/hostile
if ! python3 "$FIXTURES/hostile.py" "$H" --base "$BASE" --zip-base "$ZBASE" --outside "$OUTSIDE" >"$TEST_TMP/hostile.list"; then
	not_ok "hostile.py generated the archives"
	finish
fi

# The store exists and holds one version, so that "unchanged" covers it.
mkdir -p "$ROOT/etc"
echo marker >"$ROOT/etc/marker"
cvm --manifests "$MAN" install 8.9.7 --cuda 11.8 --archive "$A8"
assert_rc 0 "set-up: 8.9.7 installed"
PASSWD_SUM=$(sha256 /etc/passwd)

while read -r rule path; do
	case $rule in
	setid | no-library | no-headers) continue ;;
	esac
	platform=()
	id=$ID
	case $rule in
	zip-*) platform=(--platform windows-x86_64) id=$IDW ;;
	esac
	snapshot "$ROOT" >"$TEST_TMP/before.snap"
	snapshot "$OUTSIDE" >"$TEST_TMP/outside-before.snap"
	cvm install 9.19.0 --cuda 13.0 "${platform[@]}" --archive "$path" --sha256 "$(sha256 "$path")"
	assert_rc 3 "$rule: exit 3"
	assert_err_contains "unsafe" "$rule: stderr says unsafe"
	assert_error_line "$rule: one 'cudnnvm: error:' line"
	assert_stderr_sanitised "$rule: stderr carries no raw control characters"
	assert_absent "$STORE/versions/$id" "$rule: no version installed"
	assert_store_clean "$rule: .staging and .trash empty"
	snapshot "$ROOT" >"$TEST_TMP/after.snap"
	assert_same_snapshot "$TEST_TMP/before.snap" "$TEST_TMP/after.snap" "$rule: the root is unchanged"
	snapshot "$OUTSIDE" >"$TEST_TMP/outside-after.snap"
	assert_same_snapshot "$TEST_TMP/outside-before.snap" "$TEST_TMP/outside-after.snap" "$rule: nothing written outside ($OUTSIDE)"
	for f in /tmp/evil /tmp/evil-inner "$TEST_TMP/evil" "$TEST_TMP/evil-inner" "$TEST_TMP/cwd/evil" "$ROOT/evil" "$STORE/evil" "$STORE/evil-inner"; do
		if [ -e "$f" ] || [ -L "$f" ]; then
			not_ok "$rule: nothing at $f" "$(ls -ld "$f")"
			rm -rf "$f"
		fi
	done
	# keep the rules independent: undo what a failed rule left behind
	rm -rf "${STORE:?}/versions/$id"
	echo "original victim" >"$OUTSIDE/victim"
	find "$OUTSIDE" -mindepth 1 ! -name victim -exec rm -rf {} + 2>/dev/null
done <"$TEST_TMP/hostile.list"
check "/etc/passwd untouched" test "$(sha256 /etc/passwd)" = "$PASSWD_SUM"
check "hostile.py made every rule" test "$(grep -c . "$TEST_TMP/hostile.list")" -ge 30

cvm verify
assert_rc 0 "after the hostile archives the store verifies"
assert_versions "$(id_of 8.9.7.29 11)" "after the hostile archives versions/ holds only 8.9.7"

# Malformed, not hostile: an archive without the dispatcher library or the
# version header is not cuDNN (exit 3, cli.md: "malformed archive").
for rule in no-library no-headers; do
	path=$(awk -v r="$rule" '$1 == r { print $2 }' "$TEST_TMP/hostile.list")
	snapshot "$ROOT" >"$TEST_TMP/before.snap"
	cvm install 9.19.0 --cuda 13.0 --archive "$path" --sha256 "$(sha256 "$path")"
	assert_rc 3 "$rule: exit 3"
	assert_error_line "$rule: one 'cudnnvm: error:' line"
	assert_absent "$STORE/versions/$ID" "$rule: no version installed"
	assert_store_clean "$rule: .staging and .trash empty"
	snapshot "$ROOT" >"$TEST_TMP/after.snap"
	assert_same_snapshot "$TEST_TMP/before.snap" "$TEST_TMP/after.snap" "$rule: the root is unchanged"
done

# Valid, with set-id bits, 0600/0700 entries, a 01777 folder and a foreign
# owner: installs with the bits stripped, 0644/0755 modes, owned by us.
path=$(awk '$1 == "setid" { print $2 }' "$TEST_TMP/hostile.list")
cvm install 9.19.0 --cuda 13.0 --archive "$path" --sha256 "$(sha256 "$path")"
assert_rc 0 "setid: the archive installs"
V=$STORE/versions/$ID
assert_mode "$V/lib/libcudnn.so.9.19.0" 755 "setid: 04755 library installed 0755"
assert_mode "$V/lib/libcudnn_graph.so.9.19.0" 755 "setid: 0700 library installed 0755"
assert_mode "$V/include/cudnn_graph.h" 644 "setid: 0600 header installed 0644"
assert_mode "$V/include/cudnn_ops.h" 644 "setid: 02640 header installed 0644"
assert_mode "$V/include" 755 "setid: 0700 folder installed 0755"
assert_mode "$V/lib" 755 "setid: 01777 folder installed 0755"
assert_owner "$V/lib/libcudnn.so.9.19.0" "$(id -u)" "setid: owner 4242 not restored"
assert_tree_modes "$V" "setid: no set-id bits, everything readable by all"
check "setid: no file with a set-id or sticky bit" test -z "$(find "$V" -perm /7000)"
assert_sha256sum_c "$V" "setid: sha256sum -c passes"
assert_store_clean "setid: work areas empty"

finish
