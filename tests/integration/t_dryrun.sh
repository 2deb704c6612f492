#!/bin/bash
# SPDX-License-Identifier: MIT
# --dry-run of install, use, rollback, uninstall and adopt: every change is
# printed ("would ..."), with the real paths, and none is made: the whole
# --root (every object, mode, link and byte) is the same before and after,
# no store, lock file, cache file or journal line appears. Validation runs
# for real: a dry run exits as the real run does, for success and refusals.
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"
# shellcheck source-path=SCRIPTDIR source=lib_activate.sh
. "$TESTS_DIR/integration/lib_activate.sh"

SNAP_N=0
# snap: a snapshot of the whole root into $TEST_TMP/snap.N; prints its path.
snap() {
	SNAP_N=$((SNAP_N + 1))
	snapshot "$ROOT" >"$TEST_TMP/snap.$SNAP_N"
	echo "$TEST_TMP/snap.$SNAP_N"
}

# dry NAME WANT_RC ARGS...: cvm ARGS --dry-run; exit code WANT_RC and the root unchanged.
dry() {
	local name=$1 want=$2 before
	shift 2
	before=$(snap)
	cvm "$@" --dry-run
	assert_rc "$want" "$name: exit $want"
	assert_same_snapshot "$before" "$(snap)" "$name: the root is byte-identical afterwards"
}

# same_rc NAME ARGS...: the real run of ARGS exits as the dry run just did ($RC).
same_rc() {
	local name=$1 want=$RC
	shift
	cvm "$@"
	if [ "$RC" = "$want" ]; then ok "$name: the real run exits $RC too"; else
		not_ok "$name: the real run exits as the dry run" "dry run: $want, real run: $RC"
		_cvm_ctx
	fi
}

act_root
A897=$(archive 8.9.7.29 11)
archive 8.9.6.50 11 >/dev/null

# ---------------------------------------------------- install into no store at all
dry "install into a root without a store" 0 --manifests "$MAN" install 8.9.7 --cuda 11.8 --archive "$A897"
assert_absent "$STORE" "install --dry-run: no store folder was made"
assert_out_contains "would create folder /opt/cudnnvm" "install --dry-run: names the store folder it would make"
assert_out_contains "would create /opt/cudnnvm/versions/$ID897 " "install --dry-run: names the version folder"
assert_output_contains "dry run: $ID897 would be installed" "install --dry-run: says nothing was installed"
assert_out_lacks "installed $ID897 in" "install --dry-run: does not claim to have installed"

# getopt takes "--dry" for --dry-run: so does the check made before the store is opened.
before=$(snap)
cvm --manifests "$MAN" install 8.9.7 --cuda 11.8 --archive "$A897" --dry
assert_rc 0 "install --dry (abbreviated): exit 0"
assert_same_snapshot "$before" "$(snap)" "install --dry (abbreviated): the root is byte-identical afterwards"
assert_absent "$STORE" "install --dry (abbreviated): no store folder was made"
assert_out_contains "would create folder /opt/cudnnvm" "install --dry (abbreviated): a dry run, described"

before=$(snap)
cvm --json --manifests "$MAN" install 8.9.7 --cuda 11.8 --archive "$A897" --dry-run
assert_rc 0 "install --json --dry-run: exit 0"
assert_json 'd["dry_run"] is True and d["id"] == "'"$ID897"'" and d["already_installed"] is False' \
	"install --json --dry-run: install's document with \"dry_run\": true"
assert_json 'any(c["action"] == "create" and c["path"] == "/opt/cudnnvm/versions/'"$ID897"'" for c in d["changes"]) and all(set(c) == {"action", "path", "target", "detail", "text"} for c in d["changes"])' \
	"install --json --dry-run: \"changes\" lists the version folder, every entry with the same keys"
assert_same_snapshot "$before" "$(snap)" "install --json --dry-run: the root is byte-identical afterwards"

# A download is described with its URL, size and place.
dry "install from the mirror" 0 --manifests "$MAN" install 8.9.7 --cuda 11.8
assert_out_matches() { if grep -q -E "$1" "$CVM_OUTF"; then ok "$2"; else not_ok "$2" "stdout does not match /$1/"; _cvm_ctx; fi; }
assert_out_matches "^would download file://$TEST_TMP/no-mirror/.*$(basename "$A897") \\($(stat -c %s "$A897") bytes\\) to /opt/cudnnvm/cache/$(basename "$A897")\$" \
	"install --dry-run: 'would download URL (N bytes) to STORE/cache/NAME'"

# Integrity refusals are the real run's.
BAD=$(copy_archive "$A897" bad)
flip_byte "$BAD"
dry "install of a corrupted archive" 3 --manifests "$MAN" install 8.9.7 --cuda 11.8 --archive "$BAD"
assert_err_contains "SHA-256 mismatch" "install --dry-run: the SHA-256 is checked for real"
same_rc "install of a corrupted archive" --manifests "$MAN" install 8.9.7 --cuda 11.8 --archive "$BAD"
dry "install of an unknown version" 1 --manifests "$MAN" install 8.99.1 --cuda 11.8 --archive "$A897"
same_rc "install of an unknown version" --manifests "$MAN" install 8.99.1 --cuda 11.8 --archive "$A897"

# ------------------------------------------------------------------ use
inst 8.9.7.29 11.8
inst 8.9.6.50 11.8
dry "install of an installed version" 0 --manifests "$MAN" install 8.9.7 --cuda 11.8 --archive "$A897"
assert_output_contains "already installed" "install --dry-run: an installed version is said to be installed"

dry "install --force of an installed version" 0 --manifests "$MAN" install 8.9.7 --cuda 11.8 --archive "$A897" --force
assert_out_contains "would replace /opt/cudnnvm/versions/$ID897 " "install --force --dry-run: the version would be replaced"
# install --use --dry-run of a version not installed: the install's changes,
# then each change use would make, planned from the archive's files: the
# same as 'use --dry-run' plans once the version is installed; one "nothing
# was changed", last.
A911=$(archive 9.1.1.17 12)
dry "install --use" 0 --manifests "$MAN" install 9.1.1 --cuda 12.4 --archive "$A911" --use --no-smoke
sed -n "/^dry run: $ID911 would be installed in \/opt\/cudnnvm\/versions\/$ID911\$/,\$p" "$CVM_OUTF" | sed 1d | LC_ALL=C sort >"$TEST_TMP/install-use.plan"
check "install --use --dry-run: the install's line ends its part, without 'nothing was changed'" \
	test "$(grep -c "^dry run: $ID911 would be installed in /opt/cudnnvm/versions/$ID911\$" "$CVM_OUTF")" = 1
check "install --use --dry-run: one 'nothing was changed', on the last line" \
	test "$(grep -c 'nothing was changed' "$CVM_OUTF")" = 1 -a \
	"$(tail -n 1 "$CVM_OUTF")" = "dry run: CUDA 12.4 (/usr/local/cuda-12.4) would use $ID911; nothing was changed"
check "install --use --dry-run: each link use would make is named" \
	grep -qx "would create link /usr/local/cuda-12.4/targets/x86_64-linux/lib/libcudnn.so.9 -> ../../../../../../opt/cudnnvm/active/cuda-12.4/lib/libcudnn.so.9" "$CVM_OUTF"
cvm --manifests "$MAN" install 9.1.1 --cuda 12.4 --archive "$A911"
must "install 9.1.1"
dry "use of the version installed since" 0 use 9.1.1 --cuda 12.4 --no-smoke
LC_ALL=C sort "$CVM_OUTF" >"$TEST_TMP/use.plan"
if cmp -s "$TEST_TMP/install-use.plan" "$TEST_TMP/use.plan" && [ -s "$TEST_TMP/use.plan" ]; then
	ok "install --use --dry-run plans the activation line for line as use --dry-run does once installed"
else
	not_ok "install --use --dry-run plans the activation line for line as use --dry-run does once installed" \
		"$(diff "$TEST_TMP/install-use.plan" "$TEST_TMP/use.plan" | head -n 10)"
fi
cvm uninstall "$ID911"
must "uninstall $ID911"
# From a download, which a dry run does not fetch, the files are not known: said so, and the rest.
dry "install --use from a download" 0 --manifests "$MAN" install 9.1.1 --cuda 12.4 --use
assert_out_contains "would activate $ID911 for CUDA 12.4 (/usr/local/cuda-12.4), as 'cudnnvm use' does: a link in the toolkit for each of its files, known once the archive is downloaded" \
	"install --use --dry-run of a download: the activation, and why its links are not listed"
check "install --use --dry-run of a download: one 'nothing was changed', on the last line" \
	test "$(grep -c 'nothing was changed' "$CVM_OUTF")" = 1 -a \
	"$(tail -n 1 "$CVM_OUTF")" = "dry run: CUDA 12.4 (/usr/local/cuda-12.4) would use $ID911; nothing was changed"

# A cached archive is verified and used; a bad one would be removed and downloaded again.
mkdir -p "$STORE/cache"
cp "$A897" "$STORE/cache/"
cvm uninstall "$ID897"
must "uninstall $ID897"
dry "install from the cache" 0 --manifests "$MAN" install 8.9.7 --cuda 11.8
assert_out_contains "would create /opt/cudnnvm/versions/$ID897 (extracted from /opt/cudnnvm/cache/$(basename "$A897")" \
	"install --dry-run: the cached archive would be used"
assert_out_lacks "would download" "install --dry-run: a verified cached archive is not downloaded again"
flip_byte "$STORE/cache/$(basename "$A897")"
dry "install from a corrupted cache" 0 --manifests "$MAN" install 8.9.7 --cuda 11.8
assert_out_contains "would remove /opt/cudnnvm/cache/$(basename "$A897") (it failed verification)" \
	"install --dry-run: a cached archive that fails verification would be removed"
assert_out_contains "would download " "install --dry-run: and downloaded again"
rm -rf "$STORE/cache"
inst 8.9.7.29 11.8

# An archive no manifest lists: its top folder names it, after its hash is checked.
A910=$(mkcudnn 9.1.0.70 12)
dry "install --sha256 of an unlisted archive" 0 install 9.1.0 --cuda 12.4 --archive "$A910" --sha256 "$(sha256 "$A910")"
assert_out_contains "would create /opt/cudnnvm/versions/$ID910 " "install --sha256 --dry-run: the id read from the archive"
dry "install --sha256 with the wrong hash" 3 install 9.1.0 --cuda 12.4 --archive "$A910" --sha256 "$(printf '%064d' 0)"
same_rc "install --sha256 with the wrong hash" install 9.1.0 --cuda 12.4 --archive "$A910" --sha256 "$(printf '%064d' 0)"

# Leftovers of a crash would be swept, as by the real run; the modulefiles rewritten.
mkdir -p "$STORE/.staging/$ID897.XyZ123"
printf 'torn\n' >"$STORE/history/cuda-11.8.pending"
mkdir -p "$ROOT/etc"
printf 'modules = /opt/modulefiles\n' >"$ROOT/etc/cudnnvm.conf"
CVM_NO_AUTO=1 dry "uninstall with a crash's leftovers" 0 uninstall "$ID896"
assert_out_contains "would remove /opt/cudnnvm/.staging/$ID897.XyZ123" "--dry-run: a crash's leftover in .staging would be swept"
assert_out_contains "would rewrite the modulefiles in /opt/modulefiles" "uninstall --dry-run: the modulefiles (modules = ...) would be rewritten"
assert_out_contains "would remove /opt/cudnnvm/history/cuda-11.8.pending" "--dry-run: a crash's pending journal line would be settled"
rm -rf "$STORE/.staging/$ID897.XyZ123" "$ROOT/etc/cudnnvm.conf" "$STORE/history/cuda-11.8.pending"

CUDNNVM_LDCONFIG=/bin/true dry "use on a toolkit with nothing active" 0 use 8.9.7 --cuda 11.8 --no-smoke
assert_out_contains "would create link /usr/local/cuda-11.8/lib64/libcudnn.so.8 -> ../../../../opt/cudnnvm/active/cuda-11.8/lib/libcudnn.so.8" \
	"use --dry-run: each toolkit link, by its real path and body"
assert_out_contains "would create link /usr/local/cuda-11.8/include/cudnn.h -> " "use --dry-run: the header links too"
assert_out_contains "would create link /opt/cudnnvm/active/cuda-11.8 -> ../versions/$ID897" "use --dry-run: the active link"
assert_out_contains "would write /etc/ld.so.conf.d/cudnnvm-cuda-11.8.conf" "use --dry-run: the ld.so.conf.d file"
assert_out_contains "would write /opt/cudnnvm/toolkits/cuda-11.8.links" "use --dry-run: the record of the links"
assert_out_contains "would run /bin/true -r $ROOT" "use --dry-run: ldconfig, as it would be run"
assert_out_contains "would append to /opt/cudnnvm/history/cuda-11.8.log" "use --dry-run: the journal line"
check "use --dry-run: one change a line, each 'would ...'" test -z "$(grep -v -e '^would ' -e '^dry run: ' "$CVM_OUTF")"
assert_output_contains "would use $ID897" "use --dry-run: says what it would use"
links_planned=$(grep -c '^would create link /usr/local/cuda-11.8/' "$CVM_OUTF")
check "use --dry-run: one line for each file of the version" \
	test "$links_planned" = "$(find "$STORE/versions/$ID897/include" "$STORE/versions/$ID897/lib" -mindepth 1 \( -name 'cudnn*' -o -name 'libcudnn*' \) | wc -l)"

dry "use with the smoke test" 0 use 8.9.7 --cuda 11.8
assert_out_contains "would run the smoke test of $ID897 for CUDA 11.8" "use --dry-run: the smoke test is named, not run"

before=$(snap)
cvm --json use 8.9.7 --cuda 11.8 --no-smoke --dry-run
assert_json 'd["dry_run"] is True and d["id"] == "'"$ID897"'" and d["previous"] is None and d["cuda"] == "11.8" and any(c["action"] == "create link" and c["path"] == "/usr/local/cuda-11.8/lib64/libcudnn.so.8" for c in d["changes"])' \
	"use --json --dry-run: use's document with \"dry_run\" and the links in \"changes\""
assert_same_snapshot "$before" "$(snap)" "use --json --dry-run: the root is byte-identical afterwards"

dry "use of a version that is not installed" 1 use 9.1 --cuda 11.8 --no-smoke
same_rc "use of a version that is not installed" use 9.1 --cuda 11.8 --no-smoke

use_ok 8.9.7 --cuda 11.8 --no-smoke
dry "use of the other version" 0 use 8.9.6 --cuda 11.8 --no-smoke
assert_out_contains "would replace link /opt/cudnnvm/active/cuda-11.8 -> ../versions/$ID896 (was -> ../versions/$ID897)" \
	"use --dry-run: the switch is the one rename of the active link"
check "use --dry-run: a name both versions have (libcudnn.so.8) is not touched" test -z "$(grep '/lib64/libcudnn.so.8 ' "$CVM_OUTF")"
dry "use of the active version" 0 use 8.9.7 --cuda 11.8 --no-smoke
check "use --dry-run of the active version: nothing to change" test -z "$(grep '^would ' "$CVM_OUTF")"
dry "install --force of the active version" 0 --manifests "$MAN" install 8.9.7 --cuda 11.8 --archive "$A897" --force
assert_out_contains "would replace /opt/cudnnvm/versions/$ID897 " "install --force --dry-run of the active version: the version would be replaced"
check "install --force --dry-run: its links are in order, none would change" test -z "$(grep '^would .* /usr/local/cuda-11.8/' "$CVM_OUTF")"

# ---------------------------------------------------------------- rollback
use_ok 8.9.6 --cuda 11.8 --no-smoke
dry "rollback" 0 rollback --cuda 11.8 --no-smoke
assert_out_contains "would replace link /opt/cudnnvm/active/cuda-11.8 -> ../versions/$ID897" "rollback --dry-run: back to the version before"
assert_output_contains "would roll back to $ID897" "rollback --dry-run: says where it would go"
cvm --json rollback --cuda 11.8 --no-smoke --dry-run
assert_json 'd["dry_run"] is True and d["id"] == "'"$ID897"'" and d["previous"] == "'"$ID896"'"' "rollback --json --dry-run: rollback's document"

# --------------------------------------------------------------- uninstall
dry "uninstall of the active version" 1 uninstall "$ID896"
assert_err_contains "is active for CUDA 11.8" "uninstall --dry-run: refused as the real run is"
same_rc "uninstall of the active version" uninstall "$ID896"
mkdir -p "$STORE/smoke"
printf '{}\n' >"$STORE/smoke/$ID897.json"
dry "uninstall of an inactive version" 0 uninstall "$ID897"
assert_out_contains "would remove /opt/cudnnvm/versions/$ID897" "uninstall --dry-run: the version folder"
assert_out_contains "would remove /opt/cudnnvm/smoke/$ID897.json" "uninstall --dry-run: and its last smoke result"
rm -f "$STORE/smoke/$ID897.json"
cvm --json uninstall "$ID897" --dry-run
assert_json 'd["dry_run"] is True and d["removed"] == "'"$ID897"'" and [c["path"] for c in d["changes"]] == ["/opt/cudnnvm/versions/'"$ID897"'"]' \
	"uninstall --json --dry-run: uninstall's document, one change"
dry "uninstall --force of the active version" 0 uninstall "$ID896" --force
assert_out_contains "would replace link /opt/cudnnvm/active/cuda-11.8 -> ../versions/$ID897" "uninstall --force --dry-run: the previous version comes back first"
assert_out_contains "would remove /opt/cudnnvm/versions/$ID896" "uninstall --force --dry-run: then the version goes"
dry "uninstall of a version that is not installed" 1 uninstall 8.0.1
same_rc "uninstall of a version that is not installed" uninstall 8.0.1

# ------------------------------------- a file cudnnvm did not create is in the way
inst 9.1.1.17 12.4
printf 'hand-copied\n' >"$LIB12/libcudnn.so.9"
dry "use on a toolkit with a planted foreign file" 1 use 9.1 --cuda 12.4 --no-smoke
assert_err_contains "libcudnn.so.9" "use --dry-run: the refusal names the foreign file"
same_rc "use on a toolkit with a planted foreign file" use 9.1 --cuda 12.4 --no-smoke
rm -f "$LIB12/libcudnn.so.9"

# -------------------------------------------------------------------- the lock
# An existing lock is waited for (or --no-wait refused, exit 5) as by the real run.
# (exec: the pid killed below is the one holding it)
(exec 9<"$STORE/.lock" && flock -x 9 && touch "$TEST_TMP/held" && exec sleep 60) &
CVM_BG_PIDS+=($!)
i=0
while [ ! -e "$TEST_TMP/held" ] && [ $i -lt 500 ]; do sleep 0.02; i=$((i + 1)); done
dry "use while another cudnnvm holds the lock" 5 --no-wait use 8.9.7 --cuda 11.8 --no-smoke
kill "${CVM_BG_PIDS[-1]}" 2>/dev/null
wait "${CVM_BG_PIDS[-1]}" 2>/dev/null

# ------------------------------------------------------------------- adopt
act_root
hand_copy "$(archive 9.1.1.17 12)" "$TK12"
AID12=9.1.1-cuda12-linux-x86_64
CUDNNVM_LDCONFIG=/bin/true dry "adopt into a root without a store" 0 adopt --cuda 12.4
assert_absent "$STORE" "adopt --dry-run: no store folder was made"
assert_out_contains "would copy /usr/local/cuda-12.4/targets/x86_64-linux/lib/libcudnn.so.9.1.1 to /opt/cudnnvm/versions/$AID12/lib/libcudnn.so.9.1.1" \
	"adopt --dry-run: each copy into the store, by its real paths"
assert_out_contains "would create /opt/cudnnvm/versions/$AID12 " "adopt --dry-run: the version it makes"
assert_out_contains "would replace /usr/local/cuda-12.4/targets/x86_64-linux/lib/libcudnn.so.9.1.1 -> ../../../../../../opt/cudnnvm/active/cuda-12.4/lib/libcudnn.so.9.1.1" \
	"adopt --dry-run: each hand-copied file replaced by a managed link"
assert_out_contains "would keep /usr/local/cuda-12.4/include/cudnn.h as /opt/cudnnvm/backups/$AID12/include/cudnn.h" \
	"adopt --dry-run: the originals kept in backups/"
assert_out_contains "would write /etc/ld.so.conf.d/cudnnvm-cuda-12.4.conf" "adopt --dry-run: the ld.so.conf.d file"
copies=$(grep -c '^would copy ' "$CVM_OUTF")
replaced=$(grep -c -E '^would replace (link )?/usr/local/cuda-12.4/' "$CVM_OUTF")
check "adopt --dry-run: every file copied is replaced by a link ($copies)" test "$copies" -gt 0 -a "$copies" = "$replaced"
same_rc "adopt into a root without a store" adopt --cuda 12.4
check "adopt: the real run made the version the dry run named" test -d "$STORE/versions/$AID12"
dry "adopt of a toolkit with nothing hand-copied" 1 adopt --cuda 12.4
same_rc "adopt of a toolkit with nothing hand-copied" adopt --cuda 12.4

# ------------------------------------------------ hostile and malformed archives
# A dry run reads every entry and checks it as the extraction does, and the
# tree it would make as the cuDNN check does: the same exit code and message
# as the real run for every rule of tests/fixtures/hostile.py, nothing written.
new_root
BASE=$(mkcudnn 9.19.0.56 13.0)
ZBASE=$(mkcudnn 9.19.0.56 13.0 --layout windows)
OUTSIDE=$(mktemp -d /tmp/cvm-outside.XXXXXX)
cleanup_add "$OUTSIDE"
if python3 "$FIXTURES/hostile.py" "$TEST_TMP/hostile" --base "$BASE" --zip-base "$ZBASE" --outside "$OUTSIDE" >"$TEST_TMP/hostile.list"; then
	printf 'whole %s\nzip-whole %s\n' "$BASE" "$ZBASE" >>"$TEST_TMP/hostile.list"
	differ=
	n=0
	while read -r rule path; do
		platform=()
		case $rule in zip-*) platform=(--platform windows-x86_64) ;; esac
		before=$(snap)
		snapshot "$OUTSIDE" >"$TEST_TMP/outside.before"
		cvm install 9.19.0 --cuda 13.0 "${platform[@]}" --archive "$path" --sha256 "$(sha256 "$path")" --dry-run
		drc=$RC
		# (the start of it: the confined child's report cuts a very long entry name short)
		derr=$(grep '^cudnnvm: error: ' "$CVM_ERRF" | cut -c1-240)
		if ! diff -q "$before" "$(snap)" >/dev/null || ! snapshot "$OUTSIDE" | diff -q "$TEST_TMP/outside.before" - >/dev/null; then
			differ="$differ $rule(changed something)"
		fi
		cvm install 9.19.0 --cuda 13.0 "${platform[@]}" --archive "$path" --sha256 "$(sha256 "$path")"
		[ "$drc" = "$RC" ] || differ="$differ $rule(dry $drc, real $RC)"
		[ "$derr" = "$(grep '^cudnnvm: error: ' "$CVM_ERRF" | cut -c1-240)" ] || differ="$differ $rule(another message)"
		rm -rf "${STORE:?}/versions/"*
		n=$((n + 1))
	done <"$TEST_TMP/hostile.list"
	if [ -z "$differ" ]; then
		ok "install --dry-run of $n archives (hostile, malformed, whole): the real run's exit code and message, nothing changed"
	else
		not_ok "install --dry-run of hostile and malformed archives exits as the real run" "differ:$differ"
	fi
else
	not_ok "hostile.py generated the archives"
fi

# ------------------------------------------------------------------- usage
cvm list --dry-run
assert_rc 2 "list --dry-run: not an option of list (exit 2)"
cvm --manifests "$MAN" install 8.9.7 --cuda 11.8 --prefer-bundles --dry-run
assert_rc 2 "install --prefer-bundles --dry-run: no dry run of a bundle yet (exit 2), said"

finish
