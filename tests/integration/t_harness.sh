#!/bin/bash
# SPDX-License-Identifier: MIT
# The harness itself, with small fake scripts and unit binaries: tests/run.sh
# fails a script that stops before its plan line (1..N) or whose plan is not
# its count, a unit test whose binary is missing, a timeout, an exit 1 with no
# failure reported, a NAME that names nothing and a run where no test ran;
# `make fuzz-smoke` fails when it cannot fuzz; tests/deps.sh, not as root,
# names the one apt-get command; the Makefile names a missing pkg-config module.
# shellcheck disable=SC2016  # text for another shell, quoted for it
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"

TOP=$(cd "$TESTS_DIR/.." && pwd)
H=0
# tree: a fresh fake tests folder (unit/, integration/) and build folder; sets T, B.
tree() {
	H=$((H + 1))
	T=$TEST_TMP/tree$H/tests
	B=$TEST_TMP/tree$H/build
	mkdir -p "$T/unit" "$T/integration" "$B/tests"
	ln -s "$CUDNNVM" "$B/cudnnvm"
}
script() { # NAME BODY: integration/NAME.sh
	printf '#!/bin/bash\n%s\n' "$2" >"$T/integration/$1.sh"
}
unit() { # NAME BODY: unit/NAME.c and its "binary" (a script)
	: >"$T/unit/$1.c"
	printf '#!/bin/sh\n%s\n' "$2" >"$B/tests/$1"
	chmod +x "$B/tests/$1"
}
# harness NAME [ARGS...]: tests/run.sh on the tree; RC, and its output in $CVM_OUTF.
harness() {
	local name=$1
	shift
	CVM_OUTF=$TEST_TMP/harness.$name.out
	CVM_ERRF=$TEST_TMP/harness.$name.err
	CVM_LAST="CVM_TEST_DIR=\$T sh tests/run.sh \$B $*"
	CVM_TEST_DIR=$T sh "$TOP/tests/run.sh" "$B" "$@" >"$CVM_OUTF" 2>"$CVM_ERRF" </dev/null
	RC=$?
}

# ------------------------------------------------------------- what passes
tree
script t_good 'echo "ok - one"; echo "ok - two # SKIP not here"; echo "# t_good: 1 passed"; echo "1..2"'
unit test_good 'echo "ok - u"; echo "1..1"'
harness good
assert_rc 0 "a script and a unit binary with their plans: run.sh exits 0"
assert_out_contains "PASS t_good.sh (1 ok, 1 skipped)" "the script passes, its skip counted"
assert_out_contains "PASS test_good (1 ok)" "the unit binary passes"
assert_out_contains "2 passed, 0 failed, 1 skipped" "the summary counts them"

# A real lib.sh script: finish prints the plan, run.sh accepts it.
tree
script t_lib ". '$TESTS_DIR/integration/lib.sh'; ok first; skip second why; finish"
harness lib
assert_rc 0 "a lib.sh script that ends with finish passes"
assert_out_contains "PASS t_lib.sh (1 ok, 1 skipped)" "finish's plan 1..2 matches"

# ------------------------------------------------------------- what fails
tree
script t_lib_early ". '$TESTS_DIR/integration/lib.sh'; ok first; exit 0"
script t_early 'echo "ok - first"'
harness early
assert_rc 1 "scripts that stop before their plan: run.sh exits 1"
assert_out_contains "FAIL t_lib_early" "a lib.sh script that exits 0 before finish fails"
assert_out_contains "FAIL t_early" "a script with no plan line fails"
assert_out_contains "stopped early" "the reason: it stopped early"

tree
script t_count 'echo "ok - one"; echo "1..3"'
script t_after 'echo "1..1"; echo "ok - one"; echo "ok - two"'
harness count
assert_rc 1 "a plan that is not the count: run.sh exits 1"
assert_out_contains "FAIL t_count" "1..3 after one result fails"
assert_out_contains "FAIL t_after" "results after the plan fail"
assert_out_contains "its plan says 1..3, but it printed 1 results" "the reason names both numbers"

tree
unit test_good 'echo "ok - u"; echo "1..1"'
: >"$T/unit/test_gone.c"
harness missing
assert_rc 1 "a unit test whose binary is missing: run.sh exits 1"
assert_out_contains "FAIL test_gone" "the missing binary is a failure"
assert_out_contains "test_gone is missing" "it is named as missing"

tree
unit test_crash 'echo "ok - u"'
harness unit_early
assert_rc 1 "a unit binary that stops before its plan: run.sh exits 1"
assert_out_contains "FAIL test_crash" "the unit binary without its plan fails"

tree
script t_silent_fail 'echo "ok - one"; echo "1..1"; exit 1'
harness exit1
assert_rc 1 "exit 1 with no failure reported: run.sh exits 1"
assert_out_contains "exited with status 1" "the reason: its exit status"

tree
script t_hang 'echo "ok - started"; exec sleep 600'
CVM_TEST_TIMEOUT=1 harness hang
assert_rc 1 "a script past CVM_TEST_TIMEOUT: run.sh exits 1"
assert_out_contains "timed out after 1s" "the reason: it timed out"

tree
harness empty
assert_rc 1 "no script and no unit test: run.sh exits 1"
assert_err_contains "no test ran" "it says no test ran"

tree
script t_good 'echo "ok - one"; echo "1..1"'
harness unknown t_good t_nosuch
assert_rc 1 "a NAME that names nothing: run.sh exits 1"
assert_err_contains "no unit test or script named 't_nosuch'" "it names the NAME"

tree
script t_good 'echo "ok - one"; echo "1..1"'
harness no_result t_nosuch
assert_rc 1 "only NAMEs that name nothing: run.sh exits 1"
assert_err_contains "no test ran" "and says no test ran"

# ------------------------------------------------------- fuzz-smoke, deps, pkg-config
CVM_OUTF=$TEST_TMP/fuzz.out
CVM_ERRF=$TEST_TMP/fuzz.err
CVM_LAST="make fuzz-smoke FUZZ_CC=false"
env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -s -C "$TOP" O="$TEST_TMP/fuzzbuild" FUZZ_CC=false fuzz-smoke >"$CVM_OUTF" 2>"$CVM_ERRF" </dev/null
RC=$?
check "fuzz-smoke without libFuzzer fails (exit $RC)" test "$RC" != 0
assert_err_contains "cannot build a libFuzzer target" "fuzz-smoke says it cannot fuzz"
assert_err_contains "libclang-rt-dev" "fuzz-smoke names what to install"

# Not root, nothing there: one line naming the apt-get command.
FAKEBIN=$TEST_TMP/fakebin
mkdir -p "$FAKEBIN"
for t in sh mktemp rm printf; do
	ln -s "$(command -v "$t")" "$FAKEBIN/$t"
done
printf '#!/bin/sh\necho 1000\n' >"$FAKEBIN/id"
chmod +x "$FAKEBIN/id"
CVM_OUTF=$TEST_TMP/deps.out
CVM_ERRF=$TEST_TMP/deps.err
CVM_LAST="tests/deps.sh build test fuzz lint (not root, nothing installed)"
PATH=$FAKEBIN "$FAKEBIN/sh" "$TOP/tests/deps.sh" build test fuzz lint >"$CVM_OUTF" 2>"$CVM_ERRF" </dev/null
RC=$?
assert_rc 1 "deps.sh, not root, packages missing: exit 1"
check "deps.sh: one line on stderr, none on stdout" \
	test "$(wc -l <"$CVM_ERRF")" = 1 -a ! -s "$CVM_OUTF"
assert_err_contains "apt-get install gcc make" "deps.sh names the apt-get install command"
for p in libarchive-dev libssl-dev libjansson-dev libcurl4-openssl-dev liblzma-dev xz-utils python3 \
	clang libclang-rt-dev cppcheck clang-tidy; do
	assert_err_matches " $p( |\$)" "deps.sh names $p"
done
PATH=$FAKEBIN "$FAKEBIN/sh" "$TOP/tests/deps.sh" nonsense >/dev/null 2>&1
RC=$?
assert_rc 2 "deps.sh with an unknown group: exit 2"

# The Makefile names a pkg-config module it cannot find, and its package.
printf '#!/bin/sh\nfor a; do [ "$a" = libcurl ] && exit 1; done\nexec pkg-config "$@"\n' >"$TEST_TMP/pc-no-curl"
chmod +x "$TEST_TMP/pc-no-curl"
CVM_OUTF=$TEST_TMP/make.out
CVM_ERRF=$TEST_TMP/make.err
CVM_LAST="make PKG_CONFIG=(without libcurl) DEPS=0"
env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -s -C "$TOP" O="$TEST_TMP/nocurl" PKG_CONFIG="$TEST_TMP/pc-no-curl" DEPS=0 >"$CVM_OUTF" 2>"$CVM_ERRF" </dev/null
RC=$?
check "make without the libcurl module fails (exit $RC)" test "$RC" != 0
assert_err_contains "cannot find libcurl (Debian: apt-get install libcurl4-openssl-dev)" \
	"make names the missing module and its package"
check "make stopped before linking (no undefined references)" eval '! grep -q "undefined reference" "$CVM_ERRF"'
assert_absent "$TEST_TMP/nocurl/cudnnvm" "no binary was made"

finish
