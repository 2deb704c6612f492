#!/bin/bash
# SPDX-License-Identifier: MIT
# A link in the toolkit is cudnnvm's only while it is exactly what cudnnvm
# wrote (a symlink with the body its record holds): the admin's link, file,
# folder or FIFO at one of its paths is left in place by use, rollback and
# uninstall, named in a warning on every switch, and reported by doctor; the
# rest of the switch is made. The record, STORE/toolkits/cuda-X.Y.links, is
# read strictly: a line outside the toolkit's include and library folders,
# with '..', relative, not named like cuDNN's files, with a body that does
# not go through the active link, not UTF-8, with a control character, or
# cut short is refused with its number and never acted on; a record that is
# a symlink, a FIFO, writable by others or another user's is not read.
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"
# shellcheck source-path=SCRIPTDIR source=lib_activate.sh
. "$TESTS_DIR/integration/lib_activate.sh"

W='cudnnvm: warning: '
LEAVES='cudnnvm leaves it as it is'
# The bodies cudnnvm writes: relative through STORE/active/cuda-X.Y.
B12=../../../../../../opt/cudnnvm/active/cuda-12.4
B11=../../../../opt/cudnnvm/active/cuda-11.8
LF11=/opt/cudnnvm/toolkits/cuda-11.8.links

# assert_no_in_order NAME: nothing says the links are in order.
assert_no_in_order() {
	if grep -qi 'in order' "$CVM_OUTF" "$CVM_ERRF"; then
		not_ok "$1" "$(grep -hi 'in order' "$CVM_OUTF" "$CVM_ERRF")"
	else
		ok "$1"
	fi
}

# --------------------------------------- the admin's link, through every switch
act_root
inst 9.1.1.17 12.4
inst 9.1.0.70 12.4
use_ok 9.1.1 --cuda 12.4 --no-smoke
G=$LIB12/libcudnn_graph.so.9
GI=/usr/local/cuda-12.4/targets/x86_64-linux/lib/libcudnn_graph.so.9
cp "$STORE/versions/$ID911/lib/libcudnn_graph.so.9.1.1" "$LIB12/libcudnn_graph.so.9-patched"
check "set-up: the record lists libcudnn_graph.so.9 with the body written" \
	grep -qxF "$(printf '%s\t%s' "$GI" "$B12/lib/libcudnn_graph.so.9")" "$STORE/toolkits/cuda-12.4.links"
cvm doctor
assert_rc 0 "doctor before the admin's change: exit 0"
rm "$G" && ln -s libcudnn_graph.so.9-patched "$G"
GW="$W'$GI' is a link to 'libcudnn_graph.so.9-patched', not the link cudnnvm wrote there (to '$B12/lib/libcudnn_graph.so.9'): $LEAVES"

cvm use 9.1.1 --cuda 12.4 --no-smoke
assert_rc 0 "use of the active version with the admin's link: exit 0"
assert_symlink "$G" libcudnn_graph.so.9-patched "use of the active version: the admin's link is kept"
assert_stderr_line "$GW" "use of the active version: a warning names the link, its body and ours"
assert_stderr_line "${W}CUDA 12.4: 1 path in the toolkit left as found (named above: not the link cudnnvm wrote); the rest of the switch was made" \
	"use of the active version: the switch says what it did not touch"
assert_out_contains "$ID911 was already active for CUDA 12.4 (/usr/local/cuda-12.4); its links were checked: 1 path left as found, not cudnnvm's (named above)" \
	"use of the active version: says a path was left, not that all is in order"
assert_no_in_order "use of the active version: nothing says its links are in order"

cvm doctor
assert_rc 1 "doctor with the admin's link: exit 1"
assert_out_contains "CUDA 12.4: '$GI' is a link to 'libcudnn_graph.so.9-patched', not the link cudnnvm wrote there (to '$B12/lib/libcudnn_graph.so.9'): $LEAVES" \
	"doctor names the admin's link as a problem"
assert_no_in_order "doctor with the admin's link: nothing says in order"

cvm use 9.1.0 --cuda 12.4 --no-smoke
assert_rc 0 "use 9.1.0 with the admin's link in the way: exit 0 (the rest switches)"
assert_symlink "$G" libcudnn_graph.so.9-patched "use 9.1.0: the admin's link is not overwritten"
assert_stderr_line "$GW" "use 9.1.0: the warning names it again"
assert_stderr_line "${W}CUDA 12.4: 1 path in the toolkit left as found (named above: not the link cudnnvm wrote); the rest of the switch was made" \
	"use 9.1.0: the switch says what it did not touch"
assert_symlink "$STORE/active/cuda-12.4" "../versions/$ID910" "use 9.1.0: the active link switched"
check "use 9.1.0: libcudnn.so.9 resolves into 9.1.0" \
	test "$(readlink -f "$LIB12/libcudnn.so.9")" = "$(readlink -f "$STORE/versions/$ID910/lib/libcudnn.so.9")"
check "use 9.1.0: the journal says use 9.1.1 -> 9.1.0" test "$(journal 12.4 | tail -n 1)" = "use $ID911 $ID910"

cvm rollback --cuda 12.4 --no-smoke
assert_rc 0 "rollback with the admin's link: exit 0"
assert_symlink "$G" libcudnn_graph.so.9-patched "rollback: the admin's link is kept"
assert_stderr_line "$GW" "rollback: the warning names it"
assert_symlink "$STORE/active/cuda-12.4" "../versions/$ID911" "rollback: 9.1.1 is active again"

# with the smoke test: the admin's library is what loads, and it passes
cvm use 9.1.1 --cuda 12.4
assert_rc 0 "use with the smoke test and the admin's (working) link: exit 0"
assert_symlink "$G" libcudnn_graph.so.9-patched "use with the smoke test: the admin's link is kept"

# removed by the admin: the next use puts cudnnvm's link back, and all is in order again
rm "$G"
cvm use 9.1.1 --cuda 12.4 --no-smoke
assert_rc 0 "use after the admin removed the link: exit 0"
assert_symlink "$G" "$B12/lib/libcudnn_graph.so.9" "use after the admin removed the link: cudnnvm's link is back"
assert_out_contains "its links are in order" "use after the admin removed the link: its links are in order"
cvm doctor
assert_rc 0 "doctor after the admin removed the link: exit 0"

# ------------------------- a name the next version lacks; deactivation, uninstall
act_root
inst 9.1.1.17 11.8
inst 8.9.7.29 11.8
use_ok 9.1.1 --cuda 11.8 --no-smoke
G=$LIB11/libcudnn_graph.so.9
GI=/usr/local/cuda-11.8/lib64/libcudnn_graph.so.9
ln -sfn libcudnn_graph.so.9-patched "$G"
GW="$W'$GI' is a link to 'libcudnn_graph.so.9-patched', not the link cudnnvm wrote there (to '$B11/lib/libcudnn_graph.so.9'): $LEAVES"
cvm use 8.9.7 --cuda 11.8 --no-smoke
assert_rc 0 "use 8.9.7 (which has no libcudnn_graph.so.9) with the admin's link there: exit 0"
check "use 8.9.7: the admin's link is not removed" test "$(readlink "$G")" = libcudnn_graph.so.9-patched
assert_stderr_line "$GW" "use 8.9.7: the warning names it"
check "use 8.9.7: the record still lists it (so that every switch names it)" \
	grep -qxF "$(printf '%s\t%s' "$GI" "$B11/lib/libcudnn_graph.so.9")" "$STORE/toolkits/cuda-11.8.links"
assert_absent "$LIB11/libcudnn_ops.so.9" "use 8.9.7: cudnnvm's own 9.x links are removed"
cvm use 9.1.1 --cuda 11.8 --no-smoke
assert_rc 0 "use 9.1.1 again: exit 0, not refused as a hand copy"
assert_stderr_line "$GW" "use 9.1.1 again: the warning names it"
check "use 9.1.1 again: the admin's link is kept" test "$(readlink "$G")" = libcudnn_graph.so.9-patched

# uninstall --force of the active version with nothing before it: deactivation
act_root
inst 9.1.1.17 11.8
use_ok 9.1.1 --cuda 11.8 --no-smoke
G=$LIB11/libcudnn_graph.so.9
ln -sfn libcudnn_graph.so.9-patched "$G"
cvm uninstall 9.1.1 --cuda 11.8 --force
assert_rc 0 "uninstall --force of the active version with the admin's link: exit 0"
check "uninstall --force: the admin's link is kept" test "$(readlink "$G")" = libcudnn_graph.so.9-patched
assert_stderr_line "$GW" "uninstall --force: the warning names it"
assert_stderr_line "${W}CUDA 11.8: 1 path in the toolkit left as found (named above: not the link cudnnvm wrote); the rest was removed" \
	"uninstall --force: says what it did not remove"
check "uninstall --force: only the admin's link is left of the cuDNN names" \
	test "$(toolkit_names "$TK11")" = lib/libcudnn_graph.so.9

# --------------------- a file, a folder, a FIFO where cudnnvm's link was
for kind in file folder fifo; do
	act_root
	inst 8.9.7.29 11.8
	inst 8.9.6.50 11.8
	use_ok 8.9.7 --cuda 11.8 --no-smoke
	# libcudnn.so.8: both versions have it; libcudnn.so.8.9.7: only 8.9.7
	for n in libcudnn.so.8 libcudnn.so.8.9.7; do
		rm "$LIB11/$n"
		case $kind in
		file) printf 'the admin\n' >"$LIB11/$n" ;;
		folder) mkdir "$LIB11/$n" ;;
		fifo) mkfifo "$LIB11/$n" ;;
		esac
	done
	case $kind in
	file) what='a regular file' hint=" (an adopt cut short? 'cudnnvm adopt --cuda 11.8' finishes it)" ;;
	folder) what='a folder' hint= ;;
	fifo) what='a FIFO' hint= ;;
	esac
	cvm use 8.9.6 --cuda 11.8 --no-smoke
	assert_rc 0 "$kind where cudnnvm's link was: use 8.9.6 exits 0"
	for n in libcudnn.so.8 libcudnn.so.8.9.7; do
		assert_stderr_line "$W'/usr/local/cuda-11.8/lib64/$n' is $what, not the link cudnnvm wrote there (to '$B11/lib/$n'): $LEAVES$hint" \
			"$kind at $n: named in a warning"
	done
	case $kind in
	file) check "$kind: both are still the admin's files" \
		test "$(cat "$LIB11/libcudnn.so.8" "$LIB11/libcudnn.so.8.9.7")" = "$(printf 'the admin\nthe admin')" ;;
	folder) check "$kind: both are still folders" test -d "$LIB11/libcudnn.so.8" -a -d "$LIB11/libcudnn.so.8.9.7" ;;
	fifo) check "$kind: both are still FIFOs" test -p "$LIB11/libcudnn.so.8" -a -p "$LIB11/libcudnn.so.8.9.7" ;;
	esac
	assert_stderr_line "${W}CUDA 11.8: 2 paths in the toolkit left as found (named above: not the links cudnnvm wrote); the rest of the switch was made" \
		"$kind: the switch counts what it did not touch"
	assert_symlink "$TK11/include/cudnn.h" "$B11/include/cudnn.h" "$kind: the rest of the links are cudnnvm's"
done

# ------------------------------------------ lines of the record that are refused
act_root
inst 8.9.7.29 11.8
inst 8.9.6.50 11.8
use_ok 8.9.7 --cuda 11.8 --no-smoke
mkdir -p "$ROOT/etc" "$ROOT/usr/share/zoneinfo"
: >"$ROOT/usr/share/zoneinfo/UTC"
ln -s /usr/share/zoneinfo/UTC "$ROOT/etc/localtime"
for n in libcufft_x.so libcudnn_evil.so "$(printf 'libcudnn_\377.so')" "$(printf 'libcudnn_\001.so')" libcudnn_y.so libcudnn_cut.so; do
	ln -s "$B11/lib/$n" "$LIB11/$n"
done
ln -s cuda_runtime_api.h "$TK11/include/cuda_link.h"
nl=$(wc -l <"$STORE/toolkits/cuda-11.8.links")
{
	printf '/etc/localtime\n'
	printf '/usr/local/cuda-11.8/lib64/../../../../etc/localtime\n'
	printf 'usr/local/cuda-11.8/lib64/libcudnn_y.so\n'
	printf '/usr/local/cuda-11.8/lib64/libcufft_x.so\n'
	printf '/usr/local/cuda-11.8/include/cuda_link.h\n'
	printf '/usr/local/cuda/lib64/libcudnn_y.so\n'
	printf '/usr/local/cuda-11.8/lib64/libcudnn_evil.so\t/etc/passwd\n'
	printf '/usr/local/cuda-11.8/lib64/libcudnn_\377.so\n'
	printf '/usr/local/cuda-11.8/lib64/libcudnn_\001.so\n'
	printf '/etc/localtime\t%s/lib/libcudnn.so.8\n' "$B11"
	printf '/usr/local/cuda-11.8/lib64/libcudnn_cut.so'
} >>"$STORE/toolkits/cuda-11.8.links"
snapshot "$ROOT/etc" >"$TEST_TMP/etc.before"
cvm use 8.9.6 --cuda 11.8 --no-smoke
assert_rc 0 "a record with refused lines: use 8.9.6 exits 0"
snapshot "$ROOT/etc" >"$TEST_TMP/etc.after"
assert_same_snapshot "$TEST_TMP/etc.before" "$TEST_TMP/etc.after" "refused lines: /etc/localtime is not deleted"
k=$nl
refused() { # LINE-AS-SHOWN WHY
	k=$((k + 1))
	assert_stderr_line "$W'$LF11', line $k ('$1'): $2: ignored, nothing is done at the path it names" \
		"refused line $k ($2)"
}
refused /etc/localtime "not in the toolkit's include or library folder"
refused /usr/local/cuda-11.8/lib64/../../../../etc/localtime "an empty, '.' or '..' component in the path"
refused usr/local/cuda-11.8/lib64/libcudnn_y.so "not an absolute path"
refused /usr/local/cuda-11.8/lib64/libcufft_x.so "not named like a cuDNN file (cudnn*.h, libcudnn*)"
refused /usr/local/cuda-11.8/include/cuda_link.h "not named like a cuDNN file (cudnn*.h, libcudnn*)"
refused /usr/local/cuda/lib64/libcudnn_y.so "not in the toolkit's include or library folder"
refused '/usr/local/cuda-11.8/lib64/libcudnn_evil.so\x09/etc/passwd' "its link body does not go through the store's active link"
refused '/usr/local/cuda-11.8/lib64/libcudnn_\xff.so' "not UTF-8"
refused '/usr/local/cuda-11.8/lib64/libcudnn_\x01.so' "a control character"
refused "/etc/localtime\\x09$B11/lib/libcudnn.so.8" "not in the toolkit's include or library folder"
refused /usr/local/cuda-11.8/lib64/libcudnn_cut.so "the last line is cut short (no newline at its end)"
assert_stderr_sanitised "refused lines: stderr is sanitised"
for n in libcufft_x.so libcudnn_evil.so "$(printf 'libcudnn_\377.so')" "$(printf 'libcudnn_\001.so')" libcudnn_y.so libcudnn_cut.so; do
	check "refused lines: lib64/$(printf '%s' "$n" | cat -v) is not deleted" test -L "$LIB11/$n"
done
check "refused lines: include/cuda_link.h is not deleted" test -L "$TK11/include/cuda_link.h"
assert_symlink "$STORE/active/cuda-11.8" "../versions/$ID896" "refused lines: the switch itself was made"
check "refused lines: libcudnn.so.8 resolves into 8.9.6" \
	test "$(readlink -f "$LIB11/libcudnn.so.8")" = "$(readlink -f "$STORE/versions/$ID896/lib/libcudnn.so.8")"
assert_absent "$LIB11/libcudnn.so.8.9.7" "refused lines: 8.9.7's own link is removed"
check "refused lines: the record written after the switch holds none of them" \
	test -z "$(grep -v -e "^/usr/local/cuda-11.8/lib64/libcudnn[^	]*	$B11/lib/" \
		-e "^/usr/local/cuda-11.8/include/cudnn[^	]*\\.h	$B11/include/" "$STORE/toolkits/cuda-11.8.links")"

# doctor reports a refused line
printf '/etc/localtime\n' >>"$STORE/toolkits/cuda-11.8.links"
k=$(wc -l <"$STORE/toolkits/cuda-11.8.links")
cvm doctor
assert_rc 1 "doctor with a refused line in the record: exit 1"
assert_out_contains "CUDA 11.8: '$LF11', line $k ('/etc/localtime'): not in the toolkit's include or library folder: ignored, nothing is done at the path it names" \
	"doctor names the refused line as a problem"
cvm use 8.9.7 --cuda 11.8 --no-smoke
assert_rc 0 "refused line: use 8.9.7 exits 0"
check "refused line: /etc/localtime is still there" test -L "$ROOT/etc/localtime"

# --------------------------------------------- a record that is not read at all
# Each: the switch is refused (exit 1), one error naming the file and why, nothing changed.
LF=$STORE/toolkits/cuda-11.8.links
# (a symlinked toolkits/ folder is refused by the store's own check, before)
for bad in symlink fifo others owner; do
	cp "$LF" "$TEST_TMP/links.good"
	printf '/etc/localtime\n' >"$TEST_TMP/links.evil"
	case $bad in
	symlink)
		rm "$LF" && ln -s "$TEST_TMP/links.evil" "$LF"
		why='not a regular file'
		;;
	fifo)
		rm "$LF" && mkfifo "$LF"
		why='not a regular file'
		;;
	others)
		chmod 0666 "$LF"
		why='it is writable by its group or others, so another user could choose what root removes'
		;;
	owner)
		if [ "$(id -u)" != 0 ] || ! id nobody >/dev/null 2>&1; then
			skip "a record owned by another user" "needs root and a user nobody"
			continue
		fi
		chown nobody "$LF"
		why="it is not owned by the store's owner, so another user could choose what root removes"
		;;
	esac
	snapshot "$ROOT" opt/cudnnvm/history >"$TEST_TMP/root.before"
	CVM_TIMEOUT=60 cvm use 8.9.6 --cuda 11.8 --no-smoke
	assert_rc 1 "record ($bad): use is refused with exit 1"
	assert_stderr_line "cudnnvm: error: refusing to read '$LF11': $why; nothing changed (once it is removed, cudnnvm records its links afresh)" \
		"record ($bad): one error naming the file and why"
	snapshot "$ROOT" opt/cudnnvm/history >"$TEST_TMP/root.after"
	assert_same_snapshot "$TEST_TMP/root.before" "$TEST_TMP/root.after" "record ($bad): nothing changed"
	rm -f "$LF" && cp "$TEST_TMP/links.good" "$LF"
	chmod 0644 "$LF"
done
cvm use 8.9.6 --cuda 11.8 --no-smoke
assert_rc 0 "a sound record again: use 8.9.6 exits 0"
assert_symlink "$STORE/active/cuda-11.8" "../versions/$ID896" "a sound record again: the switch is made"

# a record of the first format (a path a line) is still understood
act_root
inst 8.9.7.29 11.8
inst 8.9.6.50 11.8
use_ok 8.9.7 --cuda 11.8 --no-smoke
sed -i -e 's/\t.*//' "$STORE/toolkits/cuda-11.8.links"
cvm use 8.9.6 --cuda 11.8 --no-smoke
assert_rc 0 "a record of the first format: use 8.9.6 exits 0"
assert_uses "$TK11" 11.8 "$ID896" "a record of the first format: stale links removed, the record rewritten"
check "a record of the first format: no warning" test ! -s "$CVM_ERRF"

finish
