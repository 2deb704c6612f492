#!/bin/bash
# SPDX-License-Identifier: MIT
# adopt of a hand copy with something planted in it: adopt takes regular
# files owned by root or the caller that no one else can write, whose every
# name is in the hand copy, and the links of NVIDIA's layout (a sibling's
# name); it never follows a link it did not resolve itself. A link out of the
# hand copy (absolute, climbing out of --root, in include/ or lib/, in the
# middle of a chain), a link to a toolkit file or to nothing, a loop, a FIFO,
# a socket, a device, a folder, another user's file, a file others can write,
# a hard link whose other name is elsewhere, a file swapped or written while
# adopt runs: each is refused with exit 3 and one error line naming it and
# why, --dry-run the same, nothing changed and nothing of it in the store.
# What is taken keeps a mode no wider than its source's.
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"
# shellcheck source-path=SCRIPTDIR source=lib_activate.sh
. "$TESTS_DIR/integration/lib_activate.sh"

AID12=9.1.1-cuda12-linux-x86_64
ME=$(id -u)
AS_ROOT=0
[ "$ME" = 0 ] && id nobody >/dev/null 2>&1 && AS_ROOT=1

# What must never reach the store: a file only root can read, and a 0644
# file whose folder only root can enter (its mode says "all", its folder not).
PRIV=$TEST_TMP/private
mkdir -p "$PRIV"
printf 'MARK-SECRET shadow\n' >"$PRIV/shadow"
printf 'MARK-SECRET readable\n' >"$PRIV/readable"
chmod 0600 "$PRIV/shadow"
chmod 0644 "$PRIV/readable"
chmod 0700 "$PRIV"

# hand12 / hand11: a fresh root with a hand copy of 9.1.1 in 12.4 (lib64 is
# a link to targets/x86_64-linux/lib) or of 8.9.7 in 11.8 (lib64 a folder).
hand12() { act_root; hand_copy "$(archive 9.1.1.17 12)" "$TK12"; }
hand11() { act_root; hand_copy "$(archive 8.9.7.29 11)" "$TK11"; }
INC12=/usr/local/cuda-12.4/include
SHOWN_LIB12=/usr/local/cuda-12.4/targets/x86_64-linux/lib

# The store holds no version, link, backup, journal or work file.
store_untouched() { # WHAT
	local d bad=
	for d in versions active backups history toolkits .staging .trash; do
		[ -n "$(_entries "$STORE/$d")" ] && bad="$bad $d/: $(_entries "$STORE/$d" | tr '\n' ' ')"
	done
	if [ -z "$bad" ]; then ok "$1: the store holds nothing"; else not_ok "$1: the store holds nothing" "$bad"; fi
}

# No byte of the secrets anywhere under the store.
secret_unpublished() { # WHAT
	local hits
	hits=$(grep -rl MARK-SECRET "$STORE" 2>/dev/null)
	if [ -z "$hits" ]; then ok "$1: no secret in the store"; else not_ok "$1: no secret in the store" "$hits"; fi
}

assert_error_is() { # MESSAGE NAME: the one error line is exactly "cudnnvm: error: MESSAGE"
	if [ "$(grep '^cudnnvm: error: ' "$CVM_ERRF")" = "cudnnvm: error: $1" ]; then ok "$2"; else
		not_ok "$2" "want: cudnnvm: error: $1"
		_cvm_ctx
	fi
}

# refused NAME CUDA MESSAGE: adopt --dry-run, then adopt, both exit 3 with the
# one error line "refusing to adopt MESSAGE"; the dry run plans no copy;
# nothing changed outside the store, nothing in it.
refused() {
	local name=$1 cuda=$2 msg="refusing to adopt $3; nothing changed"
	snapshot "$ROOT" opt >"$TEST_TMP/before.snap"
	cvm adopt --cuda "$cuda" --dry-run
	assert_rc 3 "$name: adopt --dry-run exits 3"
	assert_error_is "$msg" "$name: adopt --dry-run refuses it, as adopt does"
	assert_out_lacks "copy" "$name: adopt --dry-run plans no copy"
	cvm adopt --cuda "$cuda"
	assert_rc 3 "$name: adopt exits 3"
	assert_error_is "$msg" "$name: adopt refuses it, naming the path and why"
	snapshot "$ROOT" opt >"$TEST_TMP/after.snap"
	assert_same_snapshot "$TEST_TMP/before.snap" "$TEST_TMP/after.snap" "$name: nothing changed outside the store"
	store_untouched "$name"
	secret_unpublished "$name"
}

# ------------------------------------------------------ links out of the copy
hand12
ln -s "$PRIV/shadow" "$TK12/include/cudnn_evil.h"
refused "absolute link in include/" 12.4 \
	"'$INC12/cudnn_evil.h': a link pointing outside the hand copy (to '$PRIV/shadow')"

hand12
ln -s ../../../../../private/shadow "$TK12/include/cudnn_evil.h"
check "set-up: the relative link climbs out of --root to the secret" cmp -s "$TK12/include/cudnn_evil.h" "$PRIV/shadow"
refused "relative link climbing out of --root" 12.4 \
	"'$INC12/cudnn_evil.h': a link pointing outside the hand copy (to '../../../../../private/shadow')"

hand12
ln -s "$PRIV/shadow" "$LIB12/libcudnn_evil.so"
refused "link in lib64/ (a link to targets/)" 12.4 \
	"'$SHOWN_LIB12/libcudnn_evil.so': a link pointing outside the hand copy (to '$PRIV/shadow')"

hand11
ln -s ../../../../../private/readable "$LIB11/libcudnn_evil.so.8"
refused "relative link in lib64/ (a folder)" 11.8 \
	"'/usr/local/cuda-11.8/lib64/libcudnn_evil.so.8': a link pointing outside the hand copy (to '../../../../../private/readable')"

# NVIDIA's own chain, its middle link pointing out: the middle one is named
hand12
ln -sfn "$PRIV/shadow" "$LIB12/libcudnn_graph.so.9"
refused "link in the middle of a chain" 12.4 \
	"'$SHOWN_LIB12/libcudnn_graph.so.9': a link pointing outside the hand copy (to '$PRIV/shadow')"

hand12
ln -s cuda_runtime_api.h "$TK12/include/cudnn_evil.h"
refused "link to a toolkit file beside it" 12.4 \
	"'$INC12/cudnn_evil.h': a link to 'cuda_runtime_api.h', which is not a file of the hand copy"

hand12
ln -s "$PRIV/shadow" "$TK12/include/evil.h"
ln -s evil.h "$TK12/include/cudnn_evil.h"
refused "link to a non-cuDNN link beside it" 12.4 \
	"'$INC12/cudnn_evil.h': a link to 'evil.h', which is not a file of the hand copy"

hand12
ln -s cudnn_gone.h "$TK12/include/cudnn_evil.h"
refused "dangling link" 12.4 \
	"'$INC12/cudnn_evil.h': a link to 'cudnn_gone.h', which is not a file of the hand copy"

hand12
ln -s libcudnn_loop.so.9 "$LIB12/libcudnn_loop.so"
ln -s libcudnn_loop.so "$LIB12/libcudnn_loop.so.9"
refused "loop of links" 12.4 "'$SHOWN_LIB12/libcudnn_loop.so': a loop of links"

# ------------------------------------------------------------ not a file
hand12
mkfifo "$TK12/include/cudnn_fifo.h"
CVM_TIMEOUT=60 refused "FIFO" 12.4 "'$INC12/cudnn_fifo.h': a FIFO, not a regular file"

hand12
rm "$TK12/include/cudnn_version.h"
mkfifo "$TK12/include/cudnn_version.h"
CVM_TIMEOUT=60 refused "FIFO as the header adopt reads" 12.4 "'$INC12/cudnn_version.h': a FIFO, not a regular file"

hand12
python3 -c 'import socket, sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])' "$LIB12/libcudnn_sock.so"
refused "socket" 12.4 "'$SHOWN_LIB12/libcudnn_sock.so': a socket or another special file, not a regular file"

hand12
mkdir "$TK12/include/cudnn_frontend"
refused "folder" 12.4 "'$INC12/cudnn_frontend': a folder, not a regular file"

if [ "$AS_ROOT" = 1 ]; then
	hand12
	mknod "$TK12/include/cudnn_dev.h" c 1 3
	refused "device" 12.4 "'$INC12/cudnn_dev.h': a device, not a regular file"
else
	skip "device: refused" "needs root (mknod)"
fi

# ------------------------------------------------- another user's, or writable
if [ "$AS_ROOT" = 1 ]; then
	NOBODY=$(id -u nobody)
	hand12
	chown nobody "$TK12/include/cudnn_adv.h"
	refused "another user's file" 12.4 \
		"'$INC12/cudnn_adv.h': it belongs to another user (uid $NOBODY, mode 0644)"
	hand12
	chgrp "$(id -g nobody)" "$LIB12/libcudnn_ops.so.9.1.1"
	chmod 0775 "$LIB12/libcudnn_ops.so.9.1.1"
	refused "file another group can write" 12.4 \
		"'$SHOWN_LIB12/libcudnn_ops.so.9.1.1': another group can write it (uid 0, mode 0775)"
else
	skip "another user's file: refused" "needs root and a user nobody"
	skip "file another group can write: refused" "needs root and a user nobody"
fi

hand12
chmod 0666 "$TK12/include/cudnn_ops.h"
refused "file every user can write" 12.4 \
	"'$INC12/cudnn_ops.h': every user can write it (uid $ME, mode 0666)"

# a hard link: its other name may be anywhere (here a file only root can reach)
hand12
ln "$PRIV/readable" "$TK12/include/cudnn_hl.h"
refused "hard link to a file outside" 12.4 \
	"'$INC12/cudnn_hl.h': a file with 2 names (hard links), 1 of them in the hand copy: the others could be any file"

hand11
rm "$LIB11/libcudnn.so.8.9.7"
printf 'MARK-SECRET library\n' >"$PRIV/library"
ln "$PRIV/library" "$LIB11/libcudnn.so.8.9.7"
refused "a library of the copy, hard-linked from elsewhere" 11.8 \
	"'/usr/local/cuda-11.8/lib64/libcudnn.so.8.9.7': a file with 2 names (hard links), 1 of them in the hand copy: the others could be any file"

# --json: the same refusal as the error document
hand12
ln -s "$PRIV/shadow" "$TK12/include/cudnn_evil.h"
cvm --json adopt --cuda 12.4
assert_rc 3 "--json: adopt exits 3"
assert_json 'd == {"error": {"code": 3, "message": "refusing to adopt '"'$INC12/cudnn_evil.h'"': a link pointing outside the hand copy (to '"'$PRIV/shadow'"'); nothing changed"}}' \
	"--json: the error document names the path and why"
store_untouched "--json"

# ------------------------------------------------- changed while adopt runs
# stopped_adopt POINT: adopt --cuda 12.4 in the background, stopped (SIGSTOP)
# at the crash point POINT of the test build; BG is its pid.
# shellcheck disable=SC2317  # called through wait_until
is_stopped_or_gone() { # PID
	[ ! -e "/proc/$1/stat" ] || [ "$(sed -e 's/^.*) //' "/proc/$1/stat" | cut -d' ' -f1)" = T ]
}
stopped_adopt() {
	CVM_N=$((CVM_N + 1))
	CVM_OUTF=$TEST_TMP/cvm.$CVM_N.out
	CVM_ERRF=$TEST_TMP/cvm.$CVM_N.err
	CVM_LAST="adopt --cuda 12.4 (CUDNNVM_FAULT=$1:stop)"
	CVM_WORK_BEFORE=
	CUDNNVM_NO_PROGRESS=1 CUDNNVM_FAULT=$1:stop "$CUDNNVM" --root "$ROOT" adopt --cuda 12.4 \
		>"$CVM_OUTF" 2>"$CVM_ERRF" </dev/null &
	BG=$!
	CVM_BG_PIDS+=("$BG")
	wait_until is_stopped_or_gone "$BG"
	if [ -e "/proc/$BG/stat" ]; then ok "$2: adopt stopped at $1"; else not_ok "$2: adopt stopped at $1"; fi
}
# shellcheck disable=SC2034  # OUT and ERR, as cvm sets them
resume() { # the stopped adopt goes on and ends; RC, OUT, ERR as cvm sets them
	kill -CONT "$BG" 2>/dev/null
	wait "$BG"
	RC=$?
	OUT=$(cat "$CVM_OUTF")
	ERR=$(cat "$CVM_ERRF")
	_cvm_sanitizer_check
	_cvm_contract_check adopt
}
changed() { # NAME MESSAGE: after resume, refused; nothing else changed
	assert_rc 3 "$1: adopt exits 3"
	assert_error_is "refusing to adopt $2; nothing changed" "$1: adopt refuses it"
	snapshot "$ROOT" opt >"$TEST_TMP/after.snap"
	assert_same_snapshot "$TEST_TMP/before.snap" "$TEST_TMP/after.snap" "$1: nothing changed outside the store"
	store_untouched "$1"
	secret_unpublished "$1"
}

hand12
stopped_adopt adopt-open "swapped for a link after the check"
ln -sfn "$PRIV/shadow" "$TK12/include/cudnn.h"
snapshot "$ROOT" opt >"$TEST_TMP/before.snap"
resume
changed "swapped for a link after the check" "'$INC12/cudnn.h': a link or another reparse point, not a regular file"

hand12
stopped_adopt adopt-open "replaced by another file after the check"
cp "$TK12/include/cudnn_adv.h" "$TK12/include/cudnn.h.new"
mv -f "$TK12/include/cudnn.h.new" "$TK12/include/cudnn.h"
snapshot "$ROOT" opt >"$TEST_TMP/before.snap"
resume
changed "replaced by another file after the check" "'$INC12/cudnn.h': it changed while cudnnvm was adopting it"

hand12
stopped_adopt adopt-read "written while copied"
printf '/* appended */\n' >>"$TK12/include/cudnn.h"
snapshot "$ROOT" opt >"$TEST_TMP/before.snap"
resume
changed "written while copied" "'$INC12/cudnn.h': it changed while cudnnvm was copying it"

# ---------------- modes: never wider than the source's, and what install gives
# The store gives every user what it holds (0644/0755, as verify and use
# require): a source not every user may read is refused, not published.
NOTALL="not every user may read it, and the store would let them ('chmod a+r' it first if every user is meant to load it)"
hand12
chmod 0600 "$TK12/include/cudnn_v9.h"
refused "a 0600 header" 12.4 "'$INC12/cudnn_v9.h': mode 0600: $NOTALL"
hand12
chmod 0640 "$TK12/include/cudnn_ops.h"
refused "a 0640 header" 12.4 "'$INC12/cudnn_ops.h': mode 0640: $NOTALL"
hand12
chmod 0700 "$LIB12/libcudnn_ops.so.9.1.1"
refused "a 0700 library" 12.4 "'$SHOWN_LIB12/libcudnn_ops.so.9.1.1': mode 0700: $NOTALL"
if [ "$AS_ROOT" = 1 ]; then
	hand12
	chgrp "$(id -g nobody)" "$TK12/include/cudnn_graph.h"
	chmod 0604 "$TK12/include/cudnn_graph.h"
	refused "a 0604 header of another group" 12.4 "'$INC12/cudnn_graph.h': mode 0604: $NOTALL"
else
	skip "a 0604 header of another group is refused" "needs root and a user nobody"
fi

hand12
chmod 4755 "$LIB12/libcudnn_graph.so.9.1.1"
chmod 0664 "$TK12/include/cudnn_cnn.h"
# a second name inside the hand copy is a name adopt sees
ln "$TK12/include/cudnn_backend.h" "$TK12/include/cudnn_backend_v9.h"
bytes "$TK12" >"$TEST_TMP/bytes.before"
cvm adopt --cuda 12.4
assert_rc 0 "modes: adopt exits 0"
V=$STORE/versions/$AID12
assert_uses "$TK12" 12.4 "$AID12" "modes: every hand-copied name is a managed link"
bytes "$TK12" >"$TEST_TMP/bytes.after"
assert_same_snapshot "$TEST_TMP/bytes.before" "$TEST_TMP/bytes.after" "modes: the bytes through every path are unchanged"
assert_mode "$V/lib/libcudnn_graph.so.9.1.1" 755 "a set-uid library loses the set-uid bit (0755)"
assert_mode "$V/include/cudnn_cnn.h" 644 "a 0664 header (our group may write) is 0644: no one writes the store's copy"
assert_mode "$V/include/cudnn_version.h" 644 "a 0644 header stays 0644"
assert_symlink "$V/lib/libcudnn.so" libcudnn.so.9 "NVIDIA's links stay links in the version (libcudnn.so)"
assert_symlink "$V/lib/libcudnn.so.9" libcudnn.so.9.1.1 "NVIDIA's links stay links in the version (libcudnn.so.9)"
check "a file with both its names in the hand copy is taken under both" cmp -s "$V/include/cudnn_backend.h" "$V/include/cudnn_backend_v9.h"
assert_sha256sum_c "$V" "modes: sha256sum -c passes in the adopted version"
cvm verify
assert_rc 0 "modes: verify passes"
assert_store_clean "modes: work areas empty"

finish
