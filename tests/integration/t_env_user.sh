#!/bin/bash
# SPDX-License-Identifier: MIT
# Activation through the environment: env (sh, fish, pwsh), exec, the
# .cudnn-version file, --user stores ($HOME/.local/share, $XDG_DATA_HOME), an
# unprivileged user (their own store works, the system store is refused), and
# stores that others could write (refused).
# shellcheck disable=SC2016  # commands for the child shell, quoted for it
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"
# shellcheck source-path=SCRIPTDIR source=lib_activate.sh
. "$TESTS_DIR/integration/lib_activate.sh"

act_root
inst 8.9.7.29 11.8
inst 8.9.6.50 11.8
inst 9.1.1.17 12.4
V897=$STORE/versions/$ID897
V896=$STORE/versions/$ID896

# env_eval ENVFILE VAR...: the values of VARs after eval of ENVFILE in sh,
# starting from the current environment; one a line.
env_eval() {
	local f=$1
	shift
	sh -c 'eval "$(cat "$1")" || exit 99; shift; for v in "$@"; do eval "printf \"%s\\n\" \"\${$v-<unset>}\""; done' _ "$f" "$@"
}

# ------------------------------------------------------------------- env
cvm env 8.9.7 --cuda 11.8
assert_rc 0 "env 8.9.7 --cuda 11.8 exits 0"
cp "$CVM_OUTF" "$TEST_TMP/env.sh"
got=$(LD_LIBRARY_PATH=/pre/ld LIBRARY_PATH=/pre/lib CPATH=/pre/inc \
	env_eval "$TEST_TMP/env.sh" CUDNN_PATH CUDNN_HOME LD_LIBRARY_PATH LIBRARY_PATH CPATH 2>&1)
want=$(printf '%s\n' "$V897" "$V897" "$V897/lib:/pre/ld" "$V897/lib:/pre/lib" "$V897/include:/pre/inc")
if [ "$got" = "$want" ]; then ok "eval env 8.9.7 in sh: CUDNN_PATH, CUDNN_HOME, and lib/include prepended"; else
	not_ok "eval env 8.9.7 in sh: CUDNN_PATH, CUDNN_HOME, and lib/include prepended" "got:" "$got" "want:" "$want"
fi
got=$(env_eval "$TEST_TMP/env.sh" LD_LIBRARY_PATH LIBRARY_PATH CPATH 2>&1)
want=$(printf '%s\n' "$V897/lib" "$V897/lib" "$V897/include")
if [ "$got" = "$want" ]; then ok "eval env with the variables unset: no empty element (no stray ':')"; else
	not_ok "eval env with the variables unset: no empty element (no stray ':')" "got:" "$got" "want:" "$want"
fi
check "the exported CUDNN_PATH is a folder holding lib/libcudnn.so.8" test -e "$(env_eval "$TEST_TMP/env.sh" CUDNN_PATH)/lib/libcudnn.so.8"

cvm env 8.9.7 --cuda 11.8 --shell fish
assert_rc 0 "env --shell fish exits 0"
assert_out_matches_fish() {
	if grep -Eq "^set -gx CUDNN_PATH '?$V897'?\$" "$CVM_OUTF" && grep -Eq "^set -gx LD_LIBRARY_PATH '?$V897/lib'?" "$CVM_OUTF"; then
		ok "$1"
	else
		not_ok "$1"
		_cvm_ctx
	fi
}
assert_out_matches_fish "env --shell fish: set -gx CUDNN_PATH and LD_LIBRARY_PATH"
assert_out_lacks "export " "env --shell fish: no sh export"
cvm env 8.9.7 --cuda 11.8 --shell pwsh
assert_rc 0 "env --shell pwsh exits 0"
assert_out_contains "\$env:CUDNN_PATH = '$V897'" "env --shell pwsh: \$env:CUDNN_PATH = '...'"
assert_out_contains "\$env:LD_LIBRARY_PATH" "env --shell pwsh: sets \$env:LD_LIBRARY_PATH"
cvm env 8.9.7 --cuda 11.8 --shell csh
assert_rc 2 "env --shell csh: usage error (exit 2)"

cvm env 9.1.1 --cuda 12.4
assert_rc 0 "env 9.1.1 --cuda 12.4 exits 0"
assert_out_contains "$STORE/versions/$ID911" "env --cuda 12.4 selects the cuda12 build"
cvm env 9.1.1 --cuda 11.8
assert_rc 1 "env 9.1.1 --cuda 11.8 (only a cuda12 build): exit 1"
cvm env 8.9.5 --cuda 11.8
assert_rc 1 "env of a version not installed: exit 1"

# without VERSION: the active version, else .cudnn-version
cvm env --cuda 11.8
assert_rc 1 "env without VERSION, nothing active, no .cudnn-version: exit 1"
use_ok 8.9.6 --cuda 11.8 --no-smoke
cvm env
assert_rc 0 "env without VERSION exits 0"
assert_out_contains "CUDNN_PATH='$V896'" "env without VERSION: the active version (8.9.6)"
printf '# pinned for this project\n\n8.9.7\n' >"$TEST_TMP/cwd/.cudnn-version"
cleanup_add "$TEST_TMP/cwd/.cudnn-version"
cvm env
assert_rc 0 "env with .cudnn-version in a parent folder exits 0"
assert_out_contains "CUDNN_PATH='$V897'" ".cudnn-version in a parent (after a comment and a blank line) selects 8.9.7"
printf '8.9.6\n' >"$TEST_TMP/cwd/here/.cudnn-version"
cvm env
assert_out_contains "CUDNN_PATH='$V896'" ".cudnn-version in the working folder wins over the parent's"
cvm env 8.9.7
assert_out_contains "CUDNN_PATH='$V897'" "VERSION on the command line wins over .cudnn-version"
printf '8.9.5\n' >"$TEST_TMP/cwd/here/.cudnn-version"
cvm env
assert_rc 1 ".cudnn-version naming a version not installed: exit 1"
assert_err_contains "8.9.5" "the message names 8.9.5"
rm -f "$TEST_TMP/cwd/here/.cudnn-version"

# -------------------------------------------------------------------- exec
# the documented order: exec VERSION [--cuda X.Y] -- CMD
cvm exec 8.9.7 --cuda 11.8 -- sh -c 'printf "%s|%s|%s\n" "$CUDNN_PATH" "$LD_LIBRARY_PATH" "$CPATH"'
assert_rc 0 "exec 8.9.7 --cuda 11.8 -- sh -c ... exits 0"
check "exec 8.9.7 --cuda 11.8 --: CMD sees CUDNN_PATH, LD_LIBRARY_PATH, CPATH" test "$OUT" = "$V897|$V897/lib|$V897/include"
cvm exec 9.1.1 --cuda 12.4 -- sh -c 'printf "%s\n" "$CUDNN_PATH"'
assert_rc 0 "exec 9.1.1 --cuda 12.4 -- sh -c ... exits 0"
check "exec 9.1.1 --cuda 12.4 --: the cuda12 build" test "$OUT" = "$STORE/versions/$ID911"
# options before VERSION
cvm exec --cuda 11.8 8.9.7 -- sh -c 'printf "%s|%s|%s\n" "$CUDNN_PATH" "$LD_LIBRARY_PATH" "$CPATH"'
assert_rc 0 "exec --cuda 11.8 8.9.7 -- sh -c ... exits 0"
check "exec: CMD sees CUDNN_PATH, LD_LIBRARY_PATH, CPATH" test "$OUT" = "$V897|$V897/lib|$V897/include"
# (the child's status is not a cudnnvm failure: no error line is expected)
CVM_NO_AUTO=1 cvm exec --cuda 11.8 8.9.7 -- sh -c 'exit 7'
assert_rc 7 "exec: CMD's exit status (7) is cudnnvm's"
cvm exec -- python3 -c 'import ctypes; print(ctypes.CDLL("libcudnn.so.8").cudnnGetVersion())'
assert_rc 0 "exec (the parent's .cudnn-version) -- python3 dlopen by soname exits 0"
check "exec: dlopen(\"libcudnn.so.8\") finds 8.9.7 (cudnnGetVersion() = 8907)" test "$OUT" = 8907
rm -f "$TEST_TMP/cwd/.cudnn-version"
cvm exec -- python3 -c 'import ctypes; print(ctypes.CDLL("libcudnn.so.8").cudnnGetVersion())'
check "exec without VERSION or file: the active version (8906)" test "$OUT" = 8906
cvm exec --cuda 11.8 8.9.7 -- "$TEST_TMP/no-such-program"
check "exec of a program that does not exist fails" test "$RC" != 0
cvm exec 8.9.7
assert_rc 2 "exec without -- CMD: usage error (exit 2)"
cvm exec 8.9.7 --cuda 11.8
assert_rc 2 "exec 8.9.7 --cuda 11.8 without -- CMD: usage error (exit 2)"

# ------------------------------------------------------------------ --user
USTORE=$HOME/.local/share/cudnnvm
cvm --user --manifests "$MAN" install 8.9.7.29 --cuda 11.8 --archive "$(archive 8.9.7.29 11)"
assert_rc 0 "--user install exits 0"
assert_dir "$USTORE/versions/$ID897" "--user install: into \$HOME/.local/share/cudnnvm"
assert_sha256sum_c "$USTORE/versions/$ID897" "--user install: the files verify"
cvm --user env 8.9.7 --cuda 11.8
assert_rc 0 "--user env exits 0"
assert_out_contains "CUDNN_PATH='$USTORE/versions/$ID897'" "--user env: CUDNN_PATH in the user's store"
cvm --user exec --cuda 11.8 8.9.7 -- sh -c 'printf %s "$CUDNN_PATH"'
assert_rc 0 "--user exec exits 0"
check "--user exec: CUDNN_PATH in the user's store" test "$OUT" = "$USTORE/versions/$ID897"
snapshot "$ROOT" >"$TEST_TMP/before.snap"
for c in "use 8.9.7" "rollback" "adopt"; do
	# shellcheck disable=SC2086  # the command and its arguments
	cvm --user $c --cuda 11.8
	assert_rc 1 "--user $c: exit 1"
	assert_err_matches "env|exec" "--user $c: the message points to env/exec"
done
snapshot "$ROOT" >"$TEST_TMP/after.snap"
assert_same_snapshot "$TEST_TMP/before.snap" "$TEST_TMP/after.snap" "--user use/rollback/adopt changed nothing under the root"
XDG_DATA_HOME=$TEST_TMP/xdg cvm --user --manifests "$MAN" install 8.9.6.50 --cuda 11.8 --archive "$(archive 8.9.6.50 11)"
assert_rc 0 "--user install with XDG_DATA_HOME set exits 0"
assert_dir "$TEST_TMP/xdg/cudnnvm/versions/$ID896" "--user with XDG_DATA_HOME: the store is \$XDG_DATA_HOME/cudnnvm"
XDG_DATA_HOME=$TEST_TMP/xdg cvm --user env 8.9.6 --cuda 11.8
assert_out_contains "CUDNN_PATH='$TEST_TMP/xdg/cudnnvm/versions/$ID896'" "--user env with XDG_DATA_HOME: that store"

# ------------------------------------------------ an unprivileged user
NB_HOME=$TEST_TMP/nobody-home
mkdir -p "$NB_HOME"
chown nobody:nogroup "$NB_HOME"
chmod 0755 "$TEST_TMP"
NB_N=0
# The checkout may be in a folder nobody cannot enter: nobody runs a copy.
NB_CVM=$(other_binary)
# as_nobody ARGS...: the binary as nobody (HOME=$NB_HOME, working in it); sets RC OUT ERR.
as_nobody() {
	NB_N=$((NB_N + 1))
	CVM_OUTF=$TEST_TMP/nobody.$NB_N.out
	CVM_ERRF=$TEST_TMP/nobody.$NB_N.err
	CVM_LAST="(as nobody, --root \$ROOT) $*"
	(cd "$NB_HOME" && setpriv --reuid=nobody --regid=nogroup --clear-groups \
		env -u XDG_DATA_HOME HOME="$NB_HOME" CUDNNVM_NO_PROGRESS=1 CUDNNVM_LDCONFIG= \
		timeout -k 5 120 "$NB_CVM" --root "$ROOT" "$@") >"$CVM_OUTF" 2>"$CVM_ERRF" </dev/null
	RC=$?
	OUT=$(cat "$CVM_OUTF")
	# shellcheck disable=SC2034  # set as cvm sets it
	ERR=$(cat "$CVM_ERRF")
	_cvm_sanitizer_check
}
if ! why=$(as_other_ready nobody); then
	skip "unprivileged user tests" "$why"
else
	NB_STORE=$NB_HOME/.local/share/cudnnvm
	snapshot "$ROOT" >"$TEST_TMP/before.snap"
	as_nobody --user --manifests "$MAN" install 9.1.1.17 --cuda 12.4 --archive "$(archive 9.1.1.17 12)"
	assert_rc 0 "nobody: --user install exits 0"
	assert_dir "$NB_STORE/versions/$ID911" "nobody: installed into their own store"
	assert_owner "$NB_STORE/versions/$ID911/lib/libcudnn.so.9.1.1" "$(id -u nobody)" "nobody: the files are theirs"
	as_nobody --user env 9.1.1 --cuda 12.4
	assert_rc 0 "nobody: --user env exits 0"
	assert_out_contains "CUDNN_PATH='$NB_STORE/versions/$ID911'" "nobody: --user env names their store"
	as_nobody --user exec --cuda 12.4 9.1.1 -- /usr/bin/python3 -c 'import ctypes; print(ctypes.CDLL("libcudnn.so.9").cudnnGetVersion())'
	assert_rc 0 "nobody: --user exec -- python3 exits 0"
	check "nobody: --user exec: dlopen(\"libcudnn.so.9\") reports 90101" test "$OUT" = 90101
	as_nobody env 8.9.7 --cuda 11.8
	assert_rc 0 "nobody: env of the system store (reading only) exits 0"
	assert_out_contains "CUDNN_PATH='$V897'" "nobody: env of the system store names it"
	as_nobody --manifests "$MAN" install 9.1.1.17 --cuda 12.4 --archive "$(archive 9.1.1.17 12)"
	assert_rc 1 "nobody: install into the system store: exit 1"
	assert_err_contains "needs root, or --user" "nobody: install: 'needs root, or --user'"
	as_nobody use 8.9.7 --cuda 11.8
	assert_rc 1 "nobody: use on the system store: exit 1"
	# what works instead: sudo, or env/exec; not --user, which use refuses
	assert_err_contains "sudo cudnnvm use" "nobody: use: suggests 'sudo cudnnvm use'"
	assert_err_contains "cudnnvm exec VERSION -- CMD" "nobody: use: suggests 'cudnnvm exec' for one command"
	check "nobody: use: does not suggest --user (use refuses it)" eval '! grep -q -e "--user" "$CVM_ERRF"'
	as_nobody rollback --cuda 11.8
	assert_rc 1 "nobody: rollback on the system store: exit 1"
	assert_err_contains "sudo cudnnvm rollback" "nobody: rollback: suggests 'sudo cudnnvm rollback'"
	as_nobody uninstall 8.9.7 --cuda 11.8
	assert_rc 1 "nobody: uninstall from the system store: exit 1"
	snapshot "$ROOT" >"$TEST_TMP/after.snap"
	assert_same_snapshot "$TEST_TMP/before.snap" "$TEST_TMP/after.snap" "nobody changed nothing under the root"

	chmod o+w "$NB_STORE"
	as_nobody --user env 9.1.1 --cuda 12.4
	assert_rc 1 "nobody: a user store others can write: env refuses (exit 1)"
	assert_err_matches "written by others|writable by others" "nobody: the message says it could be written by others"
	chmod o-w "$NB_STORE"
fi
chmod 0700 "$TEST_TMP"

# ------------------------------------------ a store others could write to
others_refuse() { # PATH WHAT [install]
	chmod o+w "$1"
	cvm env 8.9.7 --cuda 11.8
	assert_rc 1 "$2 writable by others: env refuses (exit 1)"
	assert_err_matches "written by others|writable by others" "$2 writable by others: env says it could be written by others"
	assert_out_lacks "CUDNN_PATH" "$2 writable by others: env prints no exports"
	cvm exec --cuda 11.8 8.9.7 -- sh -c 'echo ran'
	assert_rc 1 "$2 writable by others: exec refuses (exit 1)"
	assert_out_lacks "ran" "$2 writable by others: exec did not run CMD"
	if [ "${3:-}" = install ]; then
		cvm --manifests "$MAN" install 9.1.0.70 --cuda 12.4 --archive "$(archive 9.1.0.70 12)"
		assert_rc 1 "$2 writable by others: install refuses (exit 1)"
		assert_err_matches "written by others|writable by others" "$2 writable by others: install says it could be written by others"
	fi
	chmod o-w "$1"
}
others_refuse "$STORE" "the store folder (opt/cudnnvm)" install
others_refuse "$STORE/versions" "the versions folder" install
# the folder env puts first in LD_LIBRARY_PATH
others_refuse "$V897/lib" "the version's lib folder"
assert_absent "$STORE/versions/$ID910" "no refused install happened"
cvm env 8.9.7 --cuda 11.8
assert_rc 0 "once no longer writable by others, env works again"
chmod o+w "$USTORE"
cvm --user env 8.9.7 --cuda 11.8
assert_rc 1 "a --user store others can write: env refuses (exit 1)"
chmod o-w "$USTORE"

finish
