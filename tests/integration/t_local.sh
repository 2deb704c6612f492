#!/bin/bash
# SPDX-License-Identifier: MIT
# .cudnn-version: 'local VERSION' writes it; env, exec, use and install take
# their VERSION from it (in the working folder or a parent) when none is
# given; a FIFO, a link, a folder or a big file of that name is refused at
# once (never opened for reading, never replaced).
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"
# shellcheck source-path=SCRIPTDIR source=lib_activate.sh
. "$TESTS_DIR/integration/lib_activate.sh"

act_root
inst 9.1.1.17 12.4
inst 9.1.0.70 12.4
A910=$(archive 9.1.0.70 12)
V910=$STORE/versions/$ID910
PROJ=$TEST_TMP/proj
mkdir -p "$PROJ/sub/deeper"

# ------------------------------------------------------------------ local
cd "$PROJ" || exit 1
cvm local 9.1.0
assert_rc 0 "local 9.1.0: exit 0"
check "local wrote .cudnn-version holding 9.1.0" test "$(cat "$PROJ/.cudnn-version")" = 9.1.0
assert_out_contains "$PROJ/.cudnn-version" "local names the file it wrote"
cvm --json local 9.1.0.70
assert_json 'd == {"file": "'"$PROJ"'/.cudnn-version", "version": "9.1.0.70"}' "local --json: file and version"
cvm local 9.1.0
for bad in "9.1 x" "../9.1" "" "abc"; do
	cvm local "$bad"
	assert_rc 2 "local '$bad': exit 2"
	check "local '$bad': the file is unchanged" test "$(cat "$PROJ/.cudnn-version")" = 9.1.0
done
cvm local
assert_rc 0 "local without VERSION: shows the pin, exit 0"
assert_out_contains "9.1.0 ($PROJ/.cudnn-version)" "local without VERSION: the version and the file"

# ------------------------------------- env, exec, use, install take the pin
cd "$PROJ/sub/deeper" || exit 1
cvm env --cuda 12.4
assert_rc 0 "env in a folder below the pin: exit 0"
assert_out_contains "CUDNN_PATH='$V910'" "env takes 9.1.0 from the parent's .cudnn-version"
# shellcheck disable=SC2016  # expanded by the sh that exec runs
cvm exec --cuda 12.4 -- sh -c 'printf "%s\n" "$CUDNN_PATH"'
assert_rc 0 "exec without VERSION: exit 0"
check "exec takes 9.1.0 from .cudnn-version" test "$OUT" = "$V910"
use_ok 9.1.1 --cuda 12.4 --no-smoke
cvm use --cuda 12.4 --no-smoke
assert_rc 0 "use without VERSION below a pin: exit 0"
assert_symlink "$STORE/active/cuda-12.4" "../versions/$ID910" "use takes 9.1.0 from .cudnn-version"
assert_out_contains "$PROJ/.cudnn-version" "use says which file pinned the version"
cvm --manifests "$MAN" install --cuda 12.4 --archive "$A910"
assert_rc 0 "install without VERSION below a pin: exit 0"
assert_out_contains "$ID910 is already installed" "install takes 9.1.0 from .cudnn-version"

# ------------------------------------------------------- no pin, no VERSION
mkdir -p "$TEST_TMP/nopin"
cd "$TEST_TMP/nopin" || exit 1
cvm use --cuda 12.4 --no-smoke
assert_rc 2 "use with neither VERSION nor .cudnn-version: exit 2"
assert_err_contains "cudnnvm local VERSION" "it says how to pin one"
cvm --manifests "$MAN" install --cuda 12.4
assert_rc 2 "install with neither VERSION nor .cudnn-version: exit 2"

# ------------------------- what is not a regular file is refused, at once
HOSTILE=$TEST_TMP/hostile
for kind in fifo link dir big; do
	d=$HOSTILE/$kind
	mkdir -p "$d"
	case $kind in
	fifo) mkfifo "$d/.cudnn-version" ;;
	link) printf '9.1.0\n' >"$TEST_TMP/pin-target" && ln -s "$TEST_TMP/pin-target" "$d/.cudnn-version" ;;
	dir) mkdir "$d/.cudnn-version" ;;
	big) head -c 8192 /dev/zero | tr '\0' '#' >"$d/.cudnn-version" ;;
	esac
	cd "$d" || exit 1
	for c in "env --cuda 12.4" "exec --cuda 12.4 -- true" "use --cuda 12.4 --no-smoke"; do
		eval "set -- $c"
		CVM_TIMEOUT=60 cvm "$@"
		assert_rc 2 "$kind .cudnn-version, $1: exit 2 (not a hang: 124)"
		assert_err_contains "$d/.cudnn-version" "$kind .cudnn-version, $1: the file is named"
	done
	cvm local 9.1.1
	case $kind in
	big)
		assert_rc 0 "local over a big regular .cudnn-version: replaced (a regular file)"
		;;
	*)
		assert_rc 1 "local over a $kind named .cudnn-version: refused, exit 1"
		check "the $kind is still there" test -e "$d/.cudnn-version" -o -p "$d/.cudnn-version" -o -L "$d/.cudnn-version"
		;;
	esac
done
check "the link's target is unchanged" test "$(cat "$TEST_TMP/pin-target")" = 9.1.0

# A FIFO in a parent folder (as in /tmp) is refused the same way, not waited on.
mkdir -p "$HOSTILE/fifo/sub/dir"
cd "$HOSTILE/fifo/sub/dir" || exit 1
for c in "env --cuda 12.4" "exec --cuda 12.4 -- true"; do
	eval "set -- $c"
	CVM_TIMEOUT=60 cvm "$@"
	assert_rc 2 "a FIFO .cudnn-version two folders up, $1: exit 2 (not a hang: 124)"
	assert_err_contains "$HOSTILE/fifo/.cudnn-version" "a FIFO two folders up, $1: the file is named"
done
cd "$TEST_TMP/cwd/here" || exit 1

# ------------------------------ local shows and removes the pin; cuDNN 7 is refused
SHOW=$TEST_TMP/show
mkdir -p "$SHOW/sub"
cd "$SHOW/sub" || exit 1
cvm local
assert_rc 1 "local with no pin here or above: exit 1"
assert_err_line "no .cudnn-version in '$SHOW/sub' or a parent folder ('cudnnvm local VERSION' writes one)" \
	"local with no pin: said, naming the folder"
cd "$SHOW" || exit 1
cvm local 9.1
cd "$SHOW/sub" || exit 1
cvm local
assert_out_contains "9.1 ($SHOW/.cudnn-version)" "local in a subfolder: the parent's pin and its file"
cvm --json local
assert_json 'd == {"file": "'"$SHOW"'/.cudnn-version", "version": "9.1"}' "local --json without VERSION: file and version"
cvm local --unset
assert_rc 1 "local --unset where there is no pin (only the parent has one): exit 1"
check "local --unset in a subfolder: the parent's pin is kept" test -f "$SHOW/.cudnn-version"
cd "$SHOW" || exit 1
cvm local --unset
assert_rc 0 "local --unset: exit 0"
check "local --unset: the pin is gone" test ! -e "$SHOW/.cudnn-version"
printf '9.1\n# keep: edited by hand\n' >"$SHOW/.cudnn-version"
cvm local --unset
assert_rc 1 "local --unset of a file with more than the version: exit 1"
assert_err_line "'$SHOW/.cudnn-version' holds more than the version 'cudnnvm local' writes: not removed (edit or remove it yourself)" \
	"local --unset of an edited file: refused, naming it"
check "local --unset of an edited file: kept" test -f "$SHOW/.cudnn-version"
cvm local --unset 9.1
assert_rc 2 "local --unset VERSION: a usage error"
for v in 7.0 7 0.9 7.6.5.32; do
	cvm local "$v"
	assert_rc 2 "local $v: exit 2"
	assert_err_line "local: VERSION '$v': cuDNN ${v%%.*} is older than any release cudnnvm supports (8 and newer) (see 'cudnnvm local --help')" \
		"local $v: refused as older than cuDNN 8"
done
check "local 7.0: the pin is unchanged" test "$(head -1 "$SHOW/.cudnn-version")" = 9.1
cd "$TEST_TMP/cwd/here" || exit 1

finish
