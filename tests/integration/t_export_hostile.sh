#!/bin/bash
# SPDX-License-Identifier: MIT
# export on what the store can hold and what a careless admin leaves: names
# that are not UTF-8 (files, links, link bodies), long and deep names are
# exported faithfully and come back byte for byte through install --bundle; a
# name no install takes (a control character) and any version that fails
# verify (a file modified, missing or extra, a link or the links file or
# files.sha256 or record.json edited, a line naming what is not there) are
# refused with exit 3; a destination that is a symlink, a folder or a FIFO
# is refused and never followed; an interrupted export and every failure
# leave neither the file nor FILE.tmp.PID.
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"

MAN=$TEST_TMP/manifests
A8=$(mkcudnn 8.9.7.29 11 --manifest "$MAN")
ID=$(id_of 8.9.7.29 11)
OUTD=$TEST_TMP/out
mkdir -p "$OUTD"

E9=$(printf '\351')   # Latin-1 e-acute: not UTF-8
FF=$(printf '\377')
LONG=$(printf 'n%.0s' $(seq 1 250))
DEEP=$(printf 'd/%.0s' $(seq 1 30))

# The fixture archive with hostile but installable names added.
mkdir -p "$TEST_TMP/x"
tar -xJf "$A8" -C "$TEST_TMP/x"
TOP=$(ls "$TEST_TMP/x")
(
	cd "$TEST_TMP/x/$TOP" || exit 1
	printf 'latin-1\n' >"include/caf${E9}.h"
	ln -s "caf${E9}.h" "include/link${FF}.h"
	printf 'utf-8\n' >"include/caf$(printf '\303\251')-utf8.h"
	printf 'long\n' >"include/$LONG.h"
	mkdir -p "$DEEP" && printf 'deep\n' >"${DEEP}f.h"
)
HOSTILE=$TEST_TMP/hostile.tar.xz
tar -cJf "$HOSTILE" -C "$TEST_TMP/x" "$TOP"
cvm --manifests "$MAN" install 8.9.7 --cuda 11.8 --archive "$HOSTILE" --sha256 "$(sha256 "$HOSTILE")"
assert_rc 0 "set-up: an archive with non-UTF-8, long and deep names installs"
R1=$ROOT
V=$STORE/versions/$ID
cp -a "$V" "$TEST_TMP/version.good"

no_tmp() { test -z "$(find "$OUTD" -name '*.tmp.*')"; }

# ------------------------------------------------ faithful export and round trip
for f in b.tar b.tar.zst; do
	cvm export 8.9.7 "$OUTD/$f"
	assert_rc 0 "$f: a version with non-UTF-8 names exports (exit 0)"
	check "$f: no temporary file left" no_tmp
done
check "b.tar holds the non-UTF-8 file, link and body as their bytes" python3 - "$OUTD/b.tar" "$ID" <<'EOF'
import sys, tarfile
t = tarfile.open(sys.argv[1], encoding="utf-8", errors="surrogateescape")
m = {x.name.encode("utf-8", "surrogateescape"): x for x in t.getmembers()}
i = sys.argv[2].encode()
f = m[i + b"/include/caf\xe9.h"]
l = m[i + b"/include/link\xff.h"]
sys.exit(not (f.isfile() and l.issym() and l.linkname.encode("utf-8", "surrogateescape") == b"caf\xe9.h"
              and (i + b"/include/caf\xc3\xa9-utf8.h") in m))
EOF
for f in b.tar b.tar.zst; do
	new_root
	cvm install --bundle "$OUTD/$f" --sha256 "$(sha256 "$OUTD/$f")"
	assert_rc 0 "$f: install --bundle takes the names back (exit 0)"
	if diff -r --no-dereference -x .cudnnvm "$TEST_TMP/version.good" "$STORE/versions/$ID" >/dev/null &&
		[ "$(cd "$STORE/versions/$ID" && find . -path ./.cudnnvm -prune -o -printf '%p %y %l\n' | sort)" = \
			"$(cd "$TEST_TMP/version.good" && find . -path ./.cudnnvm -prune -o -printf '%p %y %l\n' | sort)" ]; then
		ok "$f: every name, link and byte came back identical"
	else
		not_ok "$f: every name, link and byte came back identical"
	fi
	cvm verify "$ID"
	assert_rc 0 "$f: verify ok on the second root"
done
ROOT=$R1
STORE=$ROOT/opt/cudnnvm

# ---------------------------------------------------- versions that fail verify
restore() { chmod -R u+w "$V" && rm -rf "$V" && cp -a "$TEST_TMP/version.good" "$V"; }

# refused NAME MESSAGE: export exits 3 with MESSAGE, writes nothing, leaves no temporary file.
refused() {
	rm -f "$OUTD/r.tar"
	cvm export 8.9.7 "$OUTD/r.tar"
	assert_rc 3 "$1: export exits 3"
	assert_err_contains "$2" "$1: the message says what is wrong"
	assert_stderr_sanitised "$1: names printed escaped"
	assert_absent "$OUTD/r.tar" "$1: no bundle"
	check "$1: no temporary file" no_tmp
	restore
}
chmod -R u+w "$V"
printf 'x' >>"$V/include/cudnn.h"
refused "a modified file" "$ID is damaged: include/cudnn.h has $(($(stat -c %s "$V/include/cudnn.h"))) bytes, its record says $(($(stat -c %s "$V/include/cudnn.h") - 1)) (run"
rm "$V/include/cudnn_backend.h"
refused "a missing file" "$ID is damaged: include/cudnn_backend.h is named by its record but missing (run 'cudnnvm verify $ID'); no bundle is written"
printf 'extra\n' >"$V/lib/libcudnn_extra.so.8"
refused "an extra file" "$ID is damaged: lib/libcudnn_extra.so.8 is not in its record"
printf 'x\n' >"$V/include/extra${FF}.h"
refused "an extra file with a non-UTF-8 name" "$ID is damaged: include/extra\\xff.h is not in its record"
ln -sfn libcudnn.so.8.9.7 "$V/lib/libcudnn.so"
refused "a link's body changed" "$ID is damaged: lib/libcudnn.so differs from its record (links)"
rm "$V/lib/libcudnn.so" && cp "$V/lib/libcudnn.so.8.9.7" "$V/lib/libcudnn.so"
refused "a link replaced by a file" "$ID is damaged: lib/libcudnn.so is not of the type its record says"
printf 'lib/libcudnn_%s.so\tlibcudnn.so.8\n' "$FF" >>"$V/.cudnnvm/links"
refused "a links line with a non-UTF-8 name" "$ID is damaged: lib/libcudnn_\\xff.so is named by its record but missing"
sed -i 's/\tlibcudnn.so.8$/\tlibcudnn.so.8.9.7/' "$V/.cudnnvm/links"
refused "a links line's body edited" "differs from its record (links)"
printf '%064d  ../../../../../etc/passwd\n' 0 >>"$V/.cudnnvm/files.sha256"
refused "a files.sha256 line naming a file outside the version" "$ID is damaged: ../../../../../etc/passwd is named by its record but missing"
sed -i "s/^[0-9a-f]\{64\}  include\/cudnn.h$/$(printf '%064d' 0)  include\/cudnn.h/" "$V/.cudnnvm/files.sha256"
refused "a hash edited in files.sha256" "$ID is damaged: include/cudnn.h differs from its record"
printf 'not a line\n' >>"$V/.cudnnvm/files.sha256"
refused "a malformed files.sha256" "'$ID/.cudnnvm/files.sha256' line $(wc -l <"$V/.cudnnvm/files.sha256"): not '<SHA-256 in lowercase hex>  <path>'"
sed -i "s/\"id\": \"$ID\"/\"id\": \"9.9.9.9-cuda11-linux-x86_64\"/" "$V/.cudnnvm/record.json"
refused "record.json naming another id" "$ID is damaged: its record is of 9.9.9.9-cuda11-linux-x86_64"
printf '{' >"$V/.cudnnvm/record.json"
refused "a record.json that does not parse" "cannot parse '$ID/.cudnnvm/record.json'"
# a name no install takes back, listed by the record and there: refused, named escaped
printf 'ctl\n' >"$V/include/x$(printf '\001')y.h"
printf '%s  include/x\001y.h\n' "$(printf 'ctl\n' | sha256sum | cut -c1-64)" >>"$V/.cudnnvm/files.sha256"
refused "a control character in a name" "cannot export $ID: include/x\\x01y.h: control character in the name (install --bundle would refuse it); no bundle is written"

# ------------------------------------------------------------ the destination
printf 'the victim\n' >"$TEST_TMP/victim"
cp "$TEST_TMP/victim" "$TEST_TMP/victim.orig"
dest_refused() { # NAME KIND
	cvm export 8.9.7 "$OUTD/d.tar"
	assert_rc 1 "$1: export exits 1"
	assert_err_contains "cudnnvm: error: cannot export to '$OUTD/d.tar': it is $2, not a regular file (export replaces only a file); nothing written" \
		"$1: the message names the destination and what it is"
	check "$1: no temporary file" no_tmp
}
ln -s "$TEST_TMP/victim" "$OUTD/d.tar"
dest_refused "a symlink at FILE" "a symbolic link"
check "a symlink at FILE: its target is untouched" cmp -s "$TEST_TMP/victim" "$TEST_TMP/victim.orig"
assert_symlink "$OUTD/d.tar" "$TEST_TMP/victim" "a symlink at FILE: the link is left as it was"
rm "$OUTD/d.tar"
ln -s "$TEST_TMP/not-there" "$OUTD/d.tar"
dest_refused "a dangling symlink at FILE" "a symbolic link"
assert_absent "$TEST_TMP/not-there" "a dangling symlink at FILE: nothing created where it points"
rm "$OUTD/d.tar"
mkdir "$OUTD/d.tar"
dest_refused "a folder at FILE" "a folder"
assert_empty_or_absent "$OUTD/d.tar" "a folder at FILE: left empty"
rmdir "$OUTD/d.tar"
mkfifo "$OUTD/d.tar"
dest_refused "a FIFO at FILE" "a special file"
rm "$OUTD/d.tar"
printf 'old\n' >"$OUTD/d.tar"
cvm export 8.9.7 "$OUTD/d.tar"
assert_rc 0 "a regular file at FILE is replaced (exit 0)"
check "a regular file at FILE: it is the bundle now" sh -c "tar -tf '$OUTD/d.tar' | grep -qx '$ID/.cudnnvm/links'"

# ---------------------------------------------------------------- interrupted
rm -f "$OUTD/i.tar"
CUDNNVM_FAULT=export-written:int cvm export 8.9.7 "$OUTD/i.tar"
assert_rc 130 "a Ctrl-C while exporting: exit 130"
assert_err_contains "cudnnvm: error: interrupted: no bundle was written" "a Ctrl-C while exporting: said"
assert_absent "$OUTD/i.tar" "a Ctrl-C while exporting: no bundle"
check "a Ctrl-C while exporting: no temporary file" no_tmp

# ------------------------------------------------------- import of hostile names
# a bundle with a control character in a name, made by hand: refused, nothing left
python3 - "$OUTD/b.tar" "$OUTD/ctl.tar" "$ID" <<'EOF'
import io, sys, tarfile
src, dst, i = sys.argv[1:4]
with tarfile.open(src, encoding="utf-8", errors="surrogateescape") as t, \
     tarfile.open(dst, "w", format=tarfile.GNU_FORMAT, encoding="utf-8", errors="surrogateescape") as o:
    for m in t.getmembers():
        o.addfile(m, t.extractfile(m) if m.isfile() else None)
    x = tarfile.TarInfo(i + "/include/b\x02d.h")
    x.size = 2
    o.addfile(x, io.BytesIO(b"x\n"))
EOF
new_root
cvm install --bundle "$OUTD/ctl.tar"
assert_rc 3 "a bundle with a control character in a name: exit 3"
assert_err_contains "control character in the name" "a bundle with a control character: the rule is named"
assert_stderr_sanitised "a bundle with a control character: printed escaped"
assert_versions "" "a bundle with a control character: nothing installed"
assert_store_clean "a bundle with a control character: no staging left"
finish
