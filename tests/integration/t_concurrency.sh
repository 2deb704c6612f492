#!/bin/bash
# SPDX-License-Identifier: MIT
# Eight cudnnvm processes at once on one store (install, use, rollback,
# uninstall, over and over) while readers (current, list, env) run in a loop:
# every writer serialises on the lock and exits 0 or a documented refusal;
# readers never block and never see a half state; the end state verifies.
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"
# shellcheck source-path=SCRIPTDIR source=lib_activate.sh
. "$(dirname "$0")/lib_activate.sh"

act_root
A6=$(archive 8.9.6.50 11)
A5=$(archive 8.9.5.30 11)
inst 8.9.7.29 11.8
use_ok 8.9.7 --cuda 11.8 --no-smoke

# One writer: ROUNDS commands of its own mix; each exit code is kept.
writer() { # N
	local n=$1 i rc
	for i in 1 2 3 4 5 6; do
		case $(((n + i) % 6)) in
		0) "$CUDNNVM" --root "$ROOT" --manifests "$MAN" install 8.9.6 --cuda 11.8 --archive "$A6" ;;
		1) "$CUDNNVM" --root "$ROOT" use 8.9.6 --cuda 11.8 --no-smoke ;;
		2) "$CUDNNVM" --root "$ROOT" rollback --cuda 11.8 --no-smoke ;;
		3) "$CUDNNVM" --root "$ROOT" uninstall 8.9.6 --cuda 11.8 ;;
		4) "$CUDNNVM" --root "$ROOT" --manifests "$MAN" install 8.9.5 --cuda 11.8 --archive "$A5" ;;
		5) "$CUDNNVM" --root "$ROOT" use 8.9.7 --cuda 11.8 --no-smoke ;;
		esac >/dev/null 2>>"$TEST_TMP/w.$n.err"
		rc=$?
		echo "$rc" >>"$TEST_TMP/w.$n.rc"
	done
}

# A reader: current --json must name an installed version, list and env must answer.
reader() {
	local end=$(($(date +%s) + 60)) bad=0 n=0 id
	while [ ! -e "$TEST_TMP/stop" ] && [ "$(date +%s)" -lt "$end" ]; do
		n=$((n + 1))
		if ! "$CUDNNVM" --root "$ROOT" --json current --cuda 11.8 >"$TEST_TMP/r.json" 2>/dev/null; then
			bad=$((bad + 1)); echo "current failed" >>"$TEST_TMP/r.err"; continue
		fi
		id=$(python3 -c 'import json,sys; a=json.load(open(sys.argv[1]))["active"]; print(a[0]["id"] or "")' "$TEST_TMP/r.json" 2>/dev/null) ||
			{ bad=$((bad + 1)); echo "current: not JSON" >>"$TEST_TMP/r.err"; continue; }
		# A version named active is there whole (its record readable) for as long as
		# it stays active: a rollback then an uninstall may follow the read above.
		if [ -n "$id" ] && [ ! -f "$STORE/versions/$id/.cudnnvm/record.json" ] &&
			[ "$(readlink "$STORE/active/cuda-11.8")" = "../versions/$id" ]; then
			bad=$((bad + 1)); echo "active $id has no record" >>"$TEST_TMP/r.err"
		fi
		"$CUDNNVM" --root "$ROOT" list >/dev/null 2>>"$TEST_TMP/r.err" || { bad=$((bad + 1)); echo "list failed" >>"$TEST_TMP/r.err"; }
	done
	echo "$n $bad" >"$TEST_TMP/r.result"
}

reader &
RPID=$!
pids=()
for n in 1 2 3 4 5 6 7 8; do
	writer "$n" &
	pids+=($!)
done
wait "${pids[@]}"
touch "$TEST_TMP/stop"
wait "$RPID"

codes=$(cat "$TEST_TMP"/w.*.rc | sort | uniq -c | tr '\n' ' ')
bad_codes=$(cat "$TEST_TMP"/w.*.rc | grep -v -E '^(0|1)$' | sort -u | tr '\n' ' ')
[ "$(cat "$TEST_TMP"/w.*.rc | wc -l)" = 48 ] && ok "8 writers ran 48 commands" || not_ok "8 writers ran 48 commands" "$codes"
[ -z "$bad_codes" ] && ok "every writer exited 0 or 1 (no crash, no lock failure): $codes" ||
	not_ok "every writer exited 0 or 1" "$codes" "$(cat "$TEST_TMP"/w.*.err | sort | uniq -c | head)"
# Exit 1 only for the documented refusals.
other=$(cat "$TEST_TMP"/w.*.err | grep '^cudnnvm: error:' |
	grep -v -E 'is active for CUDA|nothing to roll back to|is not installed' | sort -u | head -5)
[ -z "$other" ] && ok "every refusal was a documented one (active, nothing to roll back, not installed)" ||
	not_ok "every refusal was a documented one" "$other"
read -r rn rbad <"$TEST_TMP/r.result"
[ "${rn:-0}" -gt 0 ] && [ "${rbad:-1}" = 0 ] && ok "readers ran $rn rounds during the writes, never failed" ||
	not_ok "readers never failed" "rounds ${rn:-?}, failures ${rbad:-?}" "$(sort "$TEST_TMP/r.err" 2>/dev/null | uniq -c | head)"

# The end state: links whole, journal parses, versions verify, work areas empty.
cvm use 8.9.7 --cuda 11.8 --no-smoke
assert_rc 0 "a command after the storm succeeds"
assert_no_dangling "$TK11" "no dangling link in the toolkit"
assert_one_version "$TK11" "the toolkit's links resolve into one version"
assert_journal "the journal parses after concurrent switches"
cvm verify
assert_rc 0 "every version verifies"
assert_store_clean "no staging or trash left"

# --no-wait while another holds the lock: 5, as documented.
hold_lock
cvm --no-wait use 8.9.7 --cuda 11.8 --no-smoke
assert_rc 5 "--no-wait gives 5 while another holds the lock"
cvm --json current --cuda 11.8
assert_rc 0 "a reader does not wait for the lock"
release_lock

finish
