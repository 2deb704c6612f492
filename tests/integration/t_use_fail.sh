#!/bin/bash
# SPDX-License-Identifier: MIT
# use that fails leaves the state it started from: a version whose
# record.json is missing or corrupt is refused before anything switches; a
# journal that cannot be written after the switch puts the previous version
# back (links, active link, journal unchanged). A crash between the switch
# and its journal line is repaired by the next locked command: the journal's
# last destination is the active version again, and rollback goes back to
# the version before it. install --force of the active version links the
# toolkit again when the file set changed.
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"
# shellcheck source-path=SCRIPTDIR source=lib_activate.sh
. "$TESTS_DIR/integration/lib_activate.sh"

act_root
inst 8.9.7.29 11.8
inst 8.9.6.50 11.8
inst 9.1.1.17 11.8
use_ok 8.9.7 --cuda 11.8 --no-smoke
V911=$STORE/versions/$ID911_11

# unchanged NAME: 8.9.7 still active, links and journal as before.
unchanged() {
	assert_uses "$TK11" 11.8 "$ID897" "$1: 8.9.7 is still the one in use"
	assert_no_dangling "$TK11" "$1: no dangling link"
	check "$1: the journal is unchanged" test "$(journal 11.8)" = "$J_BEFORE"
	assert_absent "$STORE/history/cuda-11.8.pending" "$1: nothing pending"
}

# ------------------------------------------- record.json missing or corrupt
chmod u+w "$V911/.cudnnvm"
cp "$V911/.cudnnvm/record.json" "$TEST_TMP/record.json"
for how in missing corrupt empty other; do
	J_BEFORE=$(journal 11.8)
	case $how in
	missing) rm -f "$V911/.cudnnvm/record.json" ;;
	corrupt) printf '{"id": "%s", "vers' "$ID911_11" >"$V911/.cudnnvm/record.json" ;;
	empty) : >"$V911/.cudnnvm/record.json" ;;
	other) sed -e "s/$ID911_11/$ID896/" "$TEST_TMP/record.json" >"$V911/.cudnnvm/record.json" ;;
	esac
	for smoke in --no-smoke ""; do
		# shellcheck disable=SC2086  # "" is no argument
		cvm use 9.1.1 --cuda 11.8 $smoke
		assert_rc 3 "record.json $how, use ${smoke:-with the smoke test}: exit 3 (integrity, as export)"
		assert_err_contains "record" "record.json $how: the record is named"
		unchanged "record.json $how${smoke:+ $smoke}"
	done
	cp "$TEST_TMP/record.json" "$V911/.cudnnvm/record.json"
done

# ------------------------------------------- the journal cannot be written
J_BEFORE=$(journal 11.8)
mv "$STORE/history/cuda-11.8.log" "$TEST_TMP/saved.log"
mkdir "$STORE/history/cuda-11.8.log"
J_BEFORE=
cvm use 9.1.1 --cuda 11.8
assert_rc 1 "journal not writable: exit 1"
assert_err_contains "cuda-11.8.log" "journal not writable: the journal is named"
# A journal that is not a file is refused before anything switches (t_journal_damage).
assert_err_contains "'/opt/cudnnvm/history/cuda-11.8.log' is a folder, not cudnnvm's journal" \
	"journal not writable: refused before the switch, saying why"
assert_uses "$TK11" 11.8 "$ID897" "journal not writable: 8.9.7 is in use again"
assert_no_dangling "$TK11" "journal not writable: no dangling link"
assert_absent "$STORE/history/cuda-11.8.pending" "journal not writable: nothing pending"
rmdir "$STORE/history/cuda-11.8.log"
mv "$TEST_TMP/saved.log" "$STORE/history/cuda-11.8.log"

# ----------------------- a crash just before the journal line is repaired
use_ok 8.9.6 --cuda 11.8 --no-smoke
use_ok 8.9.7 --cuda 11.8 --no-smoke
n=$(hist_lines 11.8)
CUDNNVM_FAULT=use-finished cvm use 9.1.1 --cuda 11.8 --no-smoke
assert_rc 137 "crash at use-finished: use dies"
check "crash at use-finished: no journal line yet" test "$(hist_lines 11.8)" = "$n"
assert_file "$STORE/history/cuda-11.8.pending" "crash at use-finished: the switch is pending"
cvm cache clean
assert_rc 0 "the next locked command (cache clean): exit 0"
check "after it the journal's last destination is the active version" \
	test "$(journal 11.8 | tail -n 1)" = "use $ID897 $ID911_11"
assert_absent "$STORE/history/cuda-11.8.pending" "nothing pending any more"
assert_journal "the repaired journal parses"
cvm cache clean
check "a second locked command adds nothing" test "$(hist_lines 11.8)" = "$((n + 1))"
cvm rollback --cuda 11.8 --no-smoke
assert_rc 0 "rollback after the repaired crash: exit 0"
assert_uses "$TK11" 11.8 "$ID897" "rollback goes to 8.9.7, the version before the crashed switch"
cvm rollback --cuda 11.8 --no-smoke
assert_uses "$TK11" 11.8 "$ID896" "a second rollback goes to 8.9.6"

# a crash before the switch (use-prepared): the pending line is dropped, not added
n=$(hist_lines 11.8)
CUDNNVM_FAULT=use-prepared cvm use 9.1.1 --cuda 11.8 --no-smoke
assert_rc 137 "crash at use-prepared: use dies"
cvm cache clean
check "a switch that did not happen gets no journal line" test "$(hist_lines 11.8)" = "$n"
assert_absent "$STORE/history/cuda-11.8.pending" "and is no longer pending"
# ------------- install --force of the active version with another file set
act_root
A92=$(mkcudnn 9.2.0.82 11)
ID92=$(id_of 9.2.0.82 11)
cvm install 9.2.0 --cuda 11.8 --archive "$A92" --sha256 "$(sha256 "$A92")"
must "install 9.2.0"
use_ok 9.2.0 --cuda 11.8 --no-smoke
B92=$TEST_TMP/variant/$(basename "$A92")
mkdir -p "$(dirname "$B92")"
python3 - "$A92" "$B92" <<'EOF'
import io, sys, tarfile
with tarfile.open(sys.argv[1]) as t:
    members = [(m, t.extractfile(m).read() if m.isreg() else None) for m in t.getmembers()]
top = members[0][0].name.split("/")[0]
members = [(m, d) for m, d in members if m.name != top + "/include/cudnn_adv.h"]
ti = tarfile.TarInfo(top + "/include/cudnn_new.h")
data = b"/* new */\n"
ti.size, ti.mode = len(data), 0o644
members.append((ti, data))
with tarfile.open(sys.argv[2], "w:xz", format=tarfile.PAX_FORMAT) as t:
    for m, d in members:
        t.addfile(m, io.BytesIO(d) if d is not None else None)
EOF
check "set-up: the toolkit links include/cudnn_adv.h" test -L "$TK11/include/cudnn_adv.h"
J_BEFORE=$(journal 11.8)
cvm install 9.2.0 --cuda 11.8 --archive "$B92" --sha256 "$(sha256 "$B92")" --force
assert_rc 0 "install --force of the active version with another file set: exit 0"
assert_uses "$TK11" 11.8 "$ID92" "the toolkit holds exactly the new file set's links"
assert_absent "$TK11/include/cudnn_adv.h" "the link of the header that is gone is removed"
assert_symlink "$TK11/include/cudnn_new.h" "" "the new header is linked"
assert_no_dangling "$TK11" "no dangling link after install --force"
check "no journal line: the active version did not change" test "$(journal 11.8)" = "$J_BEFORE"
finish
