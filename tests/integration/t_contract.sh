#!/bin/bash
# SPDX-License-Identifier: MIT
# One contract for every command, checked by running every command:
# - a usage error (an unknown option, an option without its value, a bad
#   VERSION, a bad --cuda) is exit 2, one line naming what was typed, and
#   touches nothing: no store, .lock or .staging is made;
# - --cuda X (or X.x) means any toolkit of CUDA major X, in every command;
# - the exit codes of the man page's EXIT STATUS are those of --help's line
#   and the README's table, and real runs exit with them (0, 1, 2, 3, 5);
# - the command and option lists of 'cudnnvm --help', 'cudnnvm CMD --help',
#   the man page and the README agree; the commands not on Windows are named
#   alike by main.c's table, the man page's WINDOWS section and the README.
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"
# shellcheck source-path=SCRIPTDIR source=lib_activate.sh
. "$TESTS_DIR/integration/lib_activate.sh"

SRC=$TESTS_DIR/../src
README=$TESTS_DIR/../README.md
MANTXT=$TEST_TMP/man.txt
sed -e 's/\\-/-/g' -e 's/\\f[BIRP]//g' -e 's/\\(lq\|\\(rq/"/g' "$TESTS_DIR/../packaging/cudnnvm.1" >"$MANTXT"

# The commands, as 'cudnnvm --help' lists them.
cvm --help
mapfile -t COMMANDS < <(sed -n '/^commands:/,/^$/s/^  \([a-z]*\) .*/\1/p' "$CVM_OUTF")
check "--help lists at least 20 commands (found ${#COMMANDS[@]})" test "${#COMMANDS[@]}" -ge 20
COLS=$(sed -n '/^commands:/,/^$/s/^\(  [a-z]*  *\)[^ ].*/\1/p' "$CVM_OUTF" | awk '{ print length($0) }' | sort -u | tr '\n' ' ')
check "--help: every command's summary starts in one column (modulefiles too: $COLS)" test "$COLS" = "15 "

# opts CMD: the --options of 'cudnnvm CMD --help', one a line; with ARG: "--opt ARG".
opts() { cvm "$1" --help; sed -n -E 's/^  (--[a-z0-9-]+)( [A-Z][A-Za-z.|]*)?( .*)?$/\1\2/p' "$CVM_OUTF"; }

# has_opt OPT LIST...: OPT is one of LIST (called through check).
# shellcheck disable=SC2317
has_opt() { local o=$1 x; shift; for x; do [ "$x" = "$o" ] && return 0; done; return 1; }

# The extra operands a command needs for its options to be read at all.
tail_of() {
	case $1 in
	exec) echo "-- true" ;;
	*) echo "" ;;
	esac
}

# usage_error NAME WANT_LINE ARGS...: exit 2, that one error line, nothing made under the root.
usage_error() {
	local name=$1 want=$2
	shift 2
	cvm "$@"
	assert_rc 2 "$name: exit 2"
	assert_err_line "$want" "$name: the message names what was typed"
	assert_absent "$STORE" "$name: no store made"
	snapshot "$ROOT" >"$TEST_TMP/after.snap"
	assert_same_snapshot "$TEST_TMP/before.snap" "$TEST_TMP/after.snap" "$name: nothing changed under the root"
}

act_root
snapshot "$ROOT" >"$TEST_TMP/before.snap"
for c in "${COMMANDS[@]}"; do
	[ "$c" = help ] && continue
	# shellcheck disable=SC2046  # the extra operands are words
	usage_error "$c --bogus" "$c: unknown option '--bogus' (see 'cudnnvm $c --help')" "$c" --bogus $(tail_of "$c")
	# The last option that takes a value, typed without one (exec's "--" would be its value).
	valued=$(opts "$c" | grep ' ' | tail -n 1 | cut -d' ' -f1)
	if [ -n "$valued" ] && [ "$c" != exec ]; then
		usage_error "$c $valued (no value)" "$c: option '$valued' needs a value (see 'cudnnvm $c --help')" "$c" "$valued"
	fi
	if opts "$c" | grep -q '^--cuda '; then
		# shellcheck disable=SC2046
		usage_error "$c --cuda 11.8.0" "$c: --cuda '11.8.0': expected a CUDA version such as 12.4 (see 'cudnnvm $c --help')" \
			"$c" --cuda 11.8.0 $(tail_of "$c")
	fi
	cvm "$c" --help
	if head -n 1 "$CVM_OUTF" | grep -Eq "^usage: cudnnvm \[GLOBAL OPTIONS\] $c \[?VERSION"; then
		extra=$(tail_of "$c")
		[ "$c" = export ] && extra=out.tar
		# shellcheck disable=SC2086
		usage_error "$c 9.x" "$c: VERSION '9.x': expected a cuDNN version such as 9.1, or an installed id (see 'cudnnvm $c --help')" \
			"$c" 9.x $extra
		# shellcheck disable=SC2086
		usage_error "$c 7.6.5" "$c: VERSION '7.6.5': cuDNN 7 is older than any release cudnnvm supports (8 and newer) (see 'cudnnvm $c --help')" \
			"$c" 7.6.5 $extra
	fi
done
usage_error "global --root (no value)" "option '--root' needs a value (see 'cudnnvm --help')" --root
CUDNNVM_SMOKE_TIMEOUT=0 cvm use 9.1 --cuda 12.4
assert_rc 2 "CUDNNVM_SMOKE_TIMEOUT=0: exit 2"
assert_err_line "CUDNNVM_SMOKE_TIMEOUT '0': expected a whole number from 1 to 86400 (seconds)" "CUDNNVM_SMOKE_TIMEOUT=0: named with its range"
CUDNNVM_VERIFY_FIRST=yes cvm install 9.1 --cuda 12.4
assert_rc 2 "CUDNNVM_VERIFY_FIRST=yes: exit 2"
assert_err_line "CUDNNVM_VERIFY_FIRST 'yes': expected a whole number from 0 to 1 (1: hash the archive first)" \
	"CUDNNVM_VERIFY_FIRST=yes: named with its range"
assert_absent "$STORE" "the environment's numbers: no store made"

# ------------------------------------------------ --cuda X means any toolkit of major X
inst 9.1.1.17 12.4
inst 8.9.7.29 11.8
for cu in 12 12.x; do
	cvm use 9.1.1 --cuda "$cu" --no-smoke
	assert_rc 0 "use --cuda $cu: exit 0"
	assert_symlink "$STORE/active/cuda-12.4" "../versions/$ID911" "use --cuda $cu: activated for the 12.4 toolkit"
	for c in current which history env prefix smoke; do
		cvm "$c" --cuda "$cu"
		check "$c --cuda $cu: not a usage error (rc $RC)" test "$RC" != 2
	done
	cvm current --cuda "$cu"
	assert_out_contains "/usr/local/cuda-12.4" "current --cuda $cu: the 12.4 toolkit"
	cvm history --cuda "$cu"
	assert_out_contains "CUDA 12.4" "history --cuda $cu: the 12.4 toolkit's journal"
	cvm env --cuda "$cu"
	assert_out_contains "export CUDNN_PATH='$STORE/versions/$ID911'" "env --cuda $cu: the 12.4 toolkit's version"
done
# Paths under --root: messages and JSON name them as the system under the root sees them;
# env's values (what a process opens) are host paths (above).
cvm smoke --cuda 12 --no-gpu
check "smoke: the library line names the library as seen under the root" \
	grep -q '^  library   /usr/local/cuda-12.4/targets/x86_64-linux/lib/libcudnn\.so\.9 (' "$CVM_OUTF" "$CVM_ERRF"
check "smoke: no message holds the host path of the root" bash -c "! grep -qF '$ROOT' '$CVM_OUTF' '$CVM_ERRF'"
cvm --json smoke --cuda 12 --no-gpu
assert_json 'd["library"] == "/usr/local/cuda-12.4/targets/x86_64-linux/lib/libcudnn.so.9"' "smoke --json: the library as seen under the root"
cvm --json use 9.1.1 --cuda 12.4
assert_json 'd["smoke"]["library"] == "/usr/local/cuda-12.4/targets/x86_64-linux/lib/libcudnn.so.9" and d["smoke"]["library_version"] == 90101' \
	"use --json: the smoke test's document under \"smoke\""
cvm --json use 9.1.1 --cuda 12.4 --no-smoke
assert_json 'd["smoke"] is None' "use --json --no-smoke: \"smoke\" is null"

for c in current history; do
	cvm "$c" --cuda 99.9
	assert_rc 1 "$c --cuda 99.9 (no such toolkit): exit 1"
	assert_err_line "no CUDA 99.9 toolkit under '$ROOT' (found: 11.8 at /usr/local/cuda-11.8, 12.4 at /usr/local/cuda-12.4)" \
		"$c --cuda 99.9: said alike"
done
mkdir -p "$STORE/history/cuda-11.8.log"
cvm history --cuda 11.8
assert_rc 1 "a journal that is a folder: exit 1"
assert_err_line "'/opt/cudnnvm/history/cuda-11.8.log' is a folder, not cudnnvm's journal (a regular file): refused, left as it is" \
	"a journal that is a folder: said"
rmdir "$STORE/history/cuda-11.8.log"

# ------------------------------------------------ install --use takes use's options
ldconfig_counter
CUDNNVM_LDCONFIG=$LDCONFIG_PROG cvm --manifests "$MAN" install 9.1.0.70 --cuda 12 --archive "$(archive 9.1.0.70 12)" \
	--use --no-smoke --no-ldconfig
assert_rc 0 "install --use --no-smoke --no-ldconfig: exit 0"
assert_symlink "$STORE/active/cuda-12.4" "../versions/$ID910" "install --use --cuda 12: active for 12.4"
assert_out_lacks "smoke test" "install --use --no-smoke: no smoke test"
check "install --use --no-ldconfig: ldconfig not run" test "$(ld_calls)" = 0
usage_error_here() { # NAME LINE ARGS...
	local name=$1 want=$2
	shift 2
	snapshot "$ROOT" >"$TEST_TMP/b.snap"
	cvm "$@"
	assert_rc 2 "$name: exit 2"
	assert_err_line "$want" "$name: said"
	snapshot "$ROOT" >"$TEST_TMP/a.snap"
	assert_same_snapshot "$TEST_TMP/b.snap" "$TEST_TMP/a.snap" "$name: nothing changed"
}
usage_error_here "install --no-smoke without --use" \
	"install: --no-smoke goes with --use (the activation it changes) (see 'cudnnvm install --help')" \
	--manifests "$MAN" install 9.1.0.70 --cuda 12.4 --archive "$(archive 9.1.0.70 12)" --no-smoke

# ------------------------------------------------ a suggested command works
# A stray link leading nowhere where use would put its own: remove it (adopt has nothing to take).
ln -s /nowhere/libcudnn.so.8.9.7 "$LIB11/libcudnn.so.8"
cvm use 8.9.7 --cuda 11.8 --no-smoke
assert_rc 1 "use over a stray dangling link: exit 1"
assert_err_line "'/usr/local/cuda-11.8/lib64/libcudnn.so.8' is a link cudnnvm did not create, and it leads nowhere: nothing changed; remove that link, then run this again" \
	"use over a stray dangling link: the advice is to remove it"
rm "$LIB11/libcudnn.so.8"
cvm use 8.9.7 --cuda 11.8 --no-smoke
assert_rc 0 "... which done, use works"
inst 9.1.1.17 11.8
cvm use "$ID911_11" --cuda 12.4 --no-smoke
assert_rc 1 "use of a cuda11 id for CUDA 12.4: exit 1"
assert_err_line "cuDNN $ID911_11 is installed only as $ID911_11, a build for another CUDA major: CUDA 12.4 needs a cuda12 build ('cudnnvm install 9.1.1.17 --cuda 12.4')" \
	"use of a cuda11 id for CUDA 12.4: the install it suggests names the version, not the id"
cvm --manifests "$MAN" install 9.1.1.17 --cuda 12.4 --archive "$(archive 9.1.1.17 12)"
assert_rc 0 "the suggested install (with its archive): exit 0"

# ------------------------------------------------ exit codes: the table and real runs
codes_of() { grep -oE '^[0-9]+( [0-9]+)*$' | tr ' ' '\n' | sort -n | tr '\n' ' '; }
MAN_CODES=$(sed -n '/^\.SH EXIT STATUS/,/^\.SH /{/^\.B /s/^\.B //p}' "$MANTXT" | codes_of)
check "the man page's EXIT STATUS: 0 1 2 3 4 5 77 126 127 130 ($MAN_CODES)" test "$MAN_CODES" = "0 1 2 3 4 5 77 126 127 130 "
cvm --help
HELP_CODES=$(grep '^exit codes:' "$CVM_OUTF" | grep -oE '\b[0-9]+ [A-Za-z]' | cut -d' ' -f1 | sort -n | tr '\n' ' ')
README_CODES=$(sed -n '/^## Exit codes/,/^## /s/^| \([0-9]*\) |.*/\1/p' "$README" | sort -n | tr '\n' ' ')
check "--help's exit codes are the man page's but exec's and Ctrl-C's ($HELP_CODES)" test "$HELP_CODES" = "0 1 2 3 4 5 77 "
check "the README's exit codes are --help's ($README_CODES)" test "$README_CODES" = "$HELP_CODES"
cvm use 9.1 --help
assert_rc 0 "help: exit 0"
cvm use 8.9.6 --cuda 11.8 --no-smoke
assert_rc 1 "a version that is not installed: exit 1 (operational)"
cvm use 8.9.6 --cuda 11.8 --no-smoek
assert_rc 2 "a misspelt option: exit 2 (usage)"
printf 'changed\n' >>"$(find "$STORE/versions/$ID897/include" -type f | head -n 1)"
cvm verify 8.9.7
assert_rc 3 "verify of a changed file: exit 3 (integrity)"
hold_lock
cvm --no-wait install 9.1.1 --cuda 12.4 --archive "$(archive 9.1.1.17 12)"
assert_rc 5 "--no-wait on a held lock: exit 5 (locked)"
release_lock

# ------------------------------------------------ --help, the man page and the README agree
for c in "${COMMANDS[@]}"; do
	check "the man page has an entry for $c" grep -Eq "^$c( |$)" <(grep -A1 '^\.TP' "$MANTXT")
	check "the README names 'cudnnvm $c'" grep -Eq "cudnnvm( --[a-z]+( [^ ]+)?)* $c\b" "$README"
	entry=$(grep -A1 '^\.TP' "$MANTXT" | grep -E "^$c( |$)" | head -n 1)
	mapfile -t mine < <(opts "$c" | cut -d' ' -f1)
	for o in "${mine[@]}"; do
		check "the man page documents $c $o" grep -q -- "$o" "$MANTXT"
		check "the README names $o" grep -q -- "$o" "$README"
	done
	# Each option of the man page's usage line of CMD is one of CMD --help's.
	for o in $(printf '%s\n' "$entry" | grep -oE -- '--[a-z0-9-]+' | sort -u); do
		check "the man page's $c $o is in '$c --help'" has_opt "$o" "${mine[@]}"
	done
done

# The commands not on Windows: main.c's CVM_CMD_NOWIN, the man page's WINDOWS section, the README.
NOWIN=$(sed -n -E 's/^\t\{ "([a-z]+)", cvm_cmd_[a-z]+, .*CVM_CMD_NOWIN.*/\1/p' "$SRC/main.c" | tr '\n' ' ')
check "main.c flags modulefiles alone as not on Windows ($NOWIN)" test "$NOWIN" = "modulefiles "
WINMAN=$(sed -n '/^\.SH WINDOWS/,/^\.SH /p' "$MANTXT" | tr '\n' ' ')
check "the man page's WINDOWS section: every command but modulefiles" \
	grep -q "Every command works there but modulefiles" <<<"$WINMAN"
# shellcheck disable=SC2016  # the backquotes are the README's
check "the README: every command works on Windows but modulefiles" \
	grep -q 'Every command works on Windows but `modulefiles`' "$README"

finish
