#!/bin/bash
# SPDX-License-Identifier: MIT
# verify: re-hashes installed files against the record; a modified, missing
# or extra file (or a changed symlink), a missing or broken record.json, is
# exit 3 naming it; every version is checked even when one cannot be read;
# a concurrent reinstall or uninstall is no damage; symlinks whose names
# hold " -> " verify.
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"

MAN=$TEST_TMP/manifests
A8=$(mkcudnn 8.9.7.29 11 --manifest "$MAN")
A9=$(mkcudnn 9.1.1.17 12 --manifest "$MAN")
ID8=$(id_of 8.9.7.29 11)
V8=$STORE/versions/$ID8

cvm --manifests "$MAN" install 8.9.7 --cuda 11.8 --archive "$A8"
assert_rc 0 "set-up: 8.9.7 installed"
cvm --manifests "$MAN" install 9.1.1 --cuda 12.4 --archive "$A9"
assert_rc 0 "set-up: 9.1.1 installed"

cvm verify
assert_rc 0 "verify (all) exits 0"
cvm verify 8.9.7
assert_rc 0 "verify 8.9.7 exits 0"
cvm verify 8.9.7.29
assert_rc 0 "verify 8.9.7.29 exits 0"
cvm verify 9.1
assert_rc 0 "verify 9.1 exits 0"
cvm --json verify
assert_rc 0 "verify --json exits 0"
assert_json 'isinstance(d, dict)' "verify --json prints one JSON document"
cvm verify 8.0.0
assert_rc 1 "verify of a version that is not installed: exit 1"

reinstall() { # restores 8.9.7
	cvm --manifests "$MAN" install 8.9.7 --cuda 11.8 --archive "$A8" --force
	[ "$RC" = 0 ] || not_ok "reinstall --force to restore 8.9.7" "exit $RC: $ERR"
}

# a modified file
printf 'changed\n' >>"$V8/include/cudnn.h"
cvm verify
assert_rc 3 "modified file: verify exits 3"
assert_output_contains "include/cudnn.h" "modified file: verify names include/cudnn.h"
cvm verify 8.9.7
assert_rc 3 "modified file: verify 8.9.7 exits 3"
assert_output_contains "include/cudnn.h" "modified file: verify 8.9.7 names it"
cvm verify 9.1.1
assert_rc 0 "modified file in 8.9.7: verify 9.1.1 still exits 0"
cvm --json verify 8.9.7
assert_rc 3 "modified file: verify --json exits 3"
assert_json 'd["error"]["code"] == 3 if "error" in d else "include/cudnn.h" in json.dumps(d)' "modified file: --json names it or gives error code 3"
reinstall
cvm verify
assert_rc 0 "after --force reinstall verify exits 0"

# same size, different bytes (a flipped byte in a library)
python3 - "$V8/lib/libcudnn.so.8.9.7" <<'EOF'
import sys
p = sys.argv[1]
b = bytearray(open(p, "rb").read())
b[len(b) // 2] ^= 0xFF
open(p, "wb").write(bytes(b))
EOF
cvm verify 8.9.7
assert_rc 3 "flipped byte in a library: exit 3"
assert_output_contains "lib/libcudnn.so.8.9.7" "flipped byte: names lib/libcudnn.so.8.9.7"
reinstall

# a missing file
rm -f "$V8/lib/libcudnn_cnn_train.so.8.9.7"
cvm verify 8.9.7
assert_rc 3 "deleted file: verify exits 3"
assert_output_contains "lib/libcudnn_cnn_train.so.8.9.7" "deleted file: verify names it"
assert_output_matches 'missing' "deleted file: verify says missing"
reinstall

# an extra file
echo extra >"$V8/include/cudnn_extra.h"
cvm verify 8.9.7
assert_rc 3 "added file: verify exits 3"
assert_output_contains "include/cudnn_extra.h" "added file: verify names it"
assert_output_matches 'extra|unexpected|not in the record' "added file: verify says extra"
rm -f "$V8/include/cudnn_extra.h"
cvm verify 8.9.7
assert_rc 0 "extra file removed: verify exits 0"

# a symlink retargeted, a symlink removed
ln -sfn libcudnn_ops_infer.so.8.9.7 "$V8/lib/libcudnn.so.8"
cvm verify 8.9.7
assert_rc 3 "retargeted symlink: verify exits 3"
assert_output_contains "lib/libcudnn.so.8" "retargeted symlink: verify names it"
reinstall
rm -f "$V8/lib/libcudnn.so"
cvm verify 8.9.7
assert_rc 3 "removed symlink: verify exits 3"
assert_output_contains "lib/libcudnn.so" "removed symlink: verify names it"
reinstall

# a file replaced by a symlink to an identical copy elsewhere
cp "$V8/include/cudnn_backend.h" "$TEST_TMP/cudnn_backend.h"
rm -f "$V8/include/cudnn_backend.h"
ln -s "$TEST_TMP/cudnn_backend.h" "$V8/include/cudnn_backend.h"
cvm verify 8.9.7
assert_rc 3 "file replaced by a symlink: verify exits 3"
assert_output_contains "include/cudnn_backend.h" "file replaced by a symlink: verify names it"
reinstall

# the record itself damaged
python3 - "$V8/.cudnnvm/files.sha256" <<'EOF'
import sys
p = sys.argv[1]
lines = open(p).read().split("\n")
lines[0] = ("1" if lines[0][0] == "0" else "0") + lines[0][1:]
open(p, "w").write("\n".join(lines))
EOF
cvm verify 8.9.7
assert_rc 3 "a hash changed in files.sha256: verify exits 3"
reinstall
cvm verify 8.9.7
assert_rc 0 "set-up: 8.9.7 verifies again"
# record.json alone: missing, then unreadable, then naming another version
cp "$V8/.cudnnvm/record.json" "$TEST_TMP/record.json"
for how in missing unreadable other; do
	case $how in
	missing) rm -f "$V8/.cudnnvm/record.json" ;;
	unreadable) printf '{"id": ' >"$V8/.cudnnvm/record.json" ;;
	other) sed -e "s/$ID8/$(id_of 9.1.1.17 12)/" "$TEST_TMP/record.json" >"$V8/.cudnnvm/record.json" ;;
	esac
	cvm verify 8.9.7
	assert_rc 3 "record.json $how (every other file intact): verify exits 3"
	assert_err_contains "$ID8: record missing or unreadable: .cudnnvm/record.json" "record.json $how: verify names it"
	assert_error_line "record.json $how: one error line"
done
# one version unreadable does not stop the others being checked
rm -f "$V8/.cudnnvm/files.sha256"
cvm verify
assert_rc 3 "files.sha256 of 8.9.7 missing: verify (all) exits 3"
assert_err_contains "$ID8: " "files.sha256 missing: 8.9.7 is reported"
assert_output_contains "$(id_of 9.1.1.17 12): ok" "files.sha256 of 8.9.7 missing: 9.1.1 is still checked"
assert_error_line "files.sha256 missing: one error line"
cp "$TEST_TMP/record.json" "$V8/.cudnnvm/record.json"
reinstall
cvm verify
assert_rc 0 "after restoring everything verify exits 0"

# a malformed record file is named, with its line and what is wrong (not ".cudnnvm/")
cp "$V8/.cudnnvm/files.sha256" "$TEST_TMP/files.sha256"
cp "$V8/.cudnnvm/links" "$TEST_TMP/links"
sed -i -e '2s/^\(.\{64\}\)  /\1 /' "$V8/.cudnnvm/files.sha256"
cvm verify 8.9.7
assert_rc 3 "files.sha256 line 2 malformed: verify exits 3"
assert_stderr_line "$ID8: record malformed: .cudnnvm/files.sha256: line 2: not '<SHA-256 in lowercase hex>  <path>'" \
	"files.sha256 line 2 malformed: verify names the file, the line and what is wrong"
cvm --json verify 8.9.7
assert_json 'd["verified"][0]["problems"] == [{"kind": "record malformed", "path": ".cudnnvm/files.sha256", "detail": "line 2: not %s<SHA-256 in lowercase hex>  <path>%s" % (chr(39), chr(39))}]' \
	"files.sha256 malformed: --json has the file as path and the line as detail"
cp "$TEST_TMP/files.sha256" "$V8/.cudnnvm/files.sha256"
printf 'lib/no-body\n' >>"$V8/.cudnnvm/links"
cvm verify 8.9.7
assert_rc 3 "a links line without a body: verify exits 3"
assert_stderr_line "$ID8: record malformed: .cudnnvm/links: line $(wc -l <"$V8/.cudnnvm/links"): not '<path><TAB><link body>'" \
	"links malformed: verify names the file and its line"
cp "$TEST_TMP/links" "$V8/.cudnnvm/links"
rm "$V8/.cudnnvm/links"
cvm verify 8.9.7
assert_rc 3 "links missing: verify exits 3"
assert_stderr_line "$ID8: cannot be read: .cudnnvm/links: No such file or directory" "links missing: verify names the file"
cp "$TEST_TMP/links" "$V8/.cudnnvm/links"
cvm verify 8.9.7
assert_rc 0 "record files restored: verify exits 0"

# sizes first: a file grown to 20 GB (sparse) is found different by its size
# alone, never read (its access time stays as set, on a file system that
# updates it on a read), and named with both sizes
BIG=$V8/include/cudnn_backend.h
RECORDED=$(stat -c %s "$BIG")
truncate -s 20G "$BIG"
touch -a -d '2001-01-01 00:00:00' "$BIG"
cvm verify 8.9.7
assert_rc 3 "a header grown to 20 GB: verify exits 3"
assert_stderr_line "$ID8: modified: include/cudnn_backend.h: 21474836480 bytes, the record says $RECORDED" \
	"a header grown to 20 GB: verify names it with both sizes"
printf 'x' >"$TEST_TMP/atime.probe"
touch -a -d '2001-01-01 00:00:00' "$TEST_TMP/atime.probe"
cat "$TEST_TMP/atime.probe" >/dev/null
if [ "$(stat -c %X "$TEST_TMP/atime.probe")" = "$(date -d '2001-01-01 00:00:00' +%s)" ]; then
	skip "a header grown to 20 GB is never read" "this file system does not update access times"
else
	check "a header grown to 20 GB is never read (its access time is unchanged)" \
		test "$(stat -c %X "$BIG")" = "$(date -d '2001-01-01 00:00:00' +%s)"
fi
cvm export 8.9.7 "$TEST_TMP/big.tar.xz"
assert_rc 3 "a header grown to 20 GB: export exits 3"
assert_err_line "$ID8 is damaged: include/cudnn_backend.h has 21474836480 bytes, its record says $RECORDED (run 'cudnnvm verify $ID8'); no bundle is written" \
	"export names the grown file with both sizes before reading it"
assert_absent "$TEST_TMP/big.tar.xz" "export of a grown file leaves no bundle"
reinstall
# a file of the recorded size with other bytes is still hashed and found
flip_byte "$V8/lib/libcudnn.so.8.9.7"
cvm verify 8.9.7
assert_rc 3 "same size, other bytes: verify exits 3"
assert_stderr_line "$ID8: modified: lib/libcudnn.so.8.9.7" "same size, other bytes: verify names it (no size to show)"
reinstall
# a version installed before sizes were recorded verifies by hash alone
edit_record() { # PYTHON-STATEMENT on d, the record.json of 8.9.7
	python3 -c 'import json, sys
p = sys.argv[1]
d = json.load(open(p))
exec(sys.argv[2])
json.dump(d, open(p, "w"))' "$V8/.cudnnvm/record.json" "$1"
}
edit_record 'del d["sizes"]'
cvm verify 8.9.7
assert_rc 0 "a record without sizes (an older install) verifies"
printf 'more\n' >>"$V8/include/cudnn.h"
cvm verify 8.9.7
assert_rc 3 "a record without sizes: a grown file is still found (by its hash)"
assert_stderr_line "$ID8: modified: include/cudnn.h" "a record without sizes: names the file"
reinstall
edit_record 'd["sizes"] = d["sizes"][1:]'
printf 'x' >>"$V8/include/cudnn.h"
cvm verify 8.9.7
assert_rc 3 "record.json's sizes one short (not of this list): not used, the hashes decide"
assert_stderr_line "$ID8: modified: include/cudnn.h" "sizes not of this list: the grown file is found by its hash"
reinstall

# symlinks whose name or body holds " -> " (the old links file split them wrongly)
ARROW=$(mkcudnn 9.2.0.82 12)
python3 - "$ARROW" <<'EOF'
import io, sys, tarfile
p = sys.argv[1]
with tarfile.open(p) as t:
    members = [(m, t.extractfile(m).read() if m.isreg() else None) for m in t.getmembers()]
top = members[0][0].name.split("/")[0]
def link(name, target):
    ti = tarfile.TarInfo(top + "/lib/" + name)
    ti.type, ti.linkname, ti.mode = tarfile.SYMTYPE, target, 0o777
    return (ti, None)
members += [link("a -> b", "libcudnn.so.9"), link("arrow", "x -> y")]
with tarfile.open(p, "w:xz", format=tarfile.PAX_FORMAT) as t:
    for m, d in members:
        t.addfile(m, io.BytesIO(d) if d is not None else None)
EOF
ID92=$(id_of 9.2.0.82 12)
V92=$STORE/versions/$ID92
cvm install 9.2.0 --cuda 12.4 --archive "$ARROW" --sha256 "$(sha256 "$ARROW")"
assert_rc 0 "an archive with symlinks 'lib/a -> b' and 'lib/arrow' -> 'x -> y' installs"
cvm verify 9.2.0
assert_rc 0 "... and verifies"
assert_symlink "$V92/lib/a -> b" libcudnn.so.9 "the link 'lib/a -> b' is as the archive has it"
# a links file of the older format ("path -> body", read at the first arrow) is still read
chmod u+w "$V92/.cudnnvm"
grep -v -e '^lib/a -> b' -e '^lib/arrow' "$V92/.cudnnvm/links" | sed -e 's/\t/ -> /' >"$TEST_TMP/links.old"
printf 'lib/arrow -> x -> y\n' >>"$TEST_TMP/links.old"
cp "$TEST_TMP/links.old" "$V92/.cudnnvm/links"
chmod u+w "$V92/lib"
rm -f "$V92/lib/a -> b"
cvm verify 9.2.0
assert_rc 0 "a links file in the older ' -> ' format still verifies"
cvm uninstall 9.2.0
assert_rc 0 "set-up: 9.2.0 removed"

# while another process reinstalls (install --force) or uninstalls, verify
# reports no damage that is not there: a replaced version is read again, a
# removed one skipped.
(
	for _ in $(seq 20); do
		CUDNNVM_NO_PROGRESS=1 "$CUDNNVM" --root "$ROOT" --manifests "$MAN" install 8.9.7 --cuda 11.8 --archive "$A8" --force >/dev/null 2>&1
	done
	CUDNNVM_NO_PROGRESS=1 "$CUDNNVM" --root "$ROOT" uninstall 8.9.7 >/dev/null 2>&1
	touch "$TEST_TMP/writer.done"
) &
WRITER=$!
CVM_BG_PIDS+=("$WRITER")
false_damage=0 runs=0
CVM_NO_AUTO=1 # the writer's work areas are not verify's
while [ ! -e "$TEST_TMP/writer.done" ] || [ "$runs" -lt 3 ]; do
	cvm verify
	runs=$((runs + 1))
	if [ "$RC" != 0 ]; then
		false_damage=$((false_damage + 1))
		diag "verify exit $RC: $(head -n 3 "$CVM_ERRF")"
	fi
done
wait "$WRITER"
CVM_NO_AUTO=0
check "verify during 20 reinstalls and an uninstall ($runs runs): never a failure ($false_damage)" test "$false_damage" = 0
reinstall

# verify takes no lock (a reader) and changes nothing
snapshot "$ROOT" >"$TEST_TMP/before.snap"
cvm verify
snapshot "$ROOT" >"$TEST_TMP/after.snap"
assert_same_snapshot "$TEST_TMP/before.snap" "$TEST_TMP/after.snap" "verify changes nothing"
assert_store_clean "work areas empty after verify"

finish
