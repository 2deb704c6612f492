# SPDX-License-Identifier: MIT
# shellcheck shell=bash
# shellcheck disable=SC2034  # RC, OUT, ERR, ROOT_N... are for the sourcing scripts
#
# Helpers for the integration tests (sourced by tests/integration/t_*.sh).
#
# Environment: CUDNNVM (the binary, required), CVM_FIXTURE_CACHE (archives
# built once per run, set by tests/run.sh; a private one otherwise).
#
# Each assertion prints "ok - <name>" or "not ok - <name>" followed by "#"
# diagnostic lines; tests/run.sh counts them. `finish` ends a script: exit 1
# when an assertion failed.
#
# cvm ARGS...: runs "$CUDNNVM" --root "$ROOT" ARGS with CUDNNVM_NO_PROGRESS=1
# and sets RC, OUT, ERR (and the files CVM_OUTF, CVM_ERRF).

set -u

if [ -z "${CUDNNVM:-}" ]; then
	echo "not ok - CUDNNVM is not set (run through tests/run.sh)"
	exit 1
fi
case $CUDNNVM in
/*) ;;
*) CUDNNVM=$PWD/$CUDNNVM ;;
esac

TESTS_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
FIXTURES=$TESTS_DIR/fixtures
T_NAME=$(basename "$0" .sh)

TEST_TMP=$(mktemp -d "${TMPDIR:-/tmp}/cvm-$T_NAME.XXXXXX")
_cvm_cleanup() {
	local rc=$?
	# background helpers (lock holders) first
	local p
	for p in "${CVM_BG_PIDS[@]:-}"; do
		[ -n "$p" ] && kill "$p" 2>/dev/null
	done
	wait 2>/dev/null
	for p in "${CVM_CLEANUP[@]:-}"; do
		[ -n "$p" ] && rm -rf "$p"
	done
	chmod -R u+rwX "$TEST_TMP" 2>/dev/null
	rm -rf "$TEST_TMP"
	exit "$rc"
}
trap _cvm_cleanup EXIT
trap 'exit 130' INT TERM HUP PIPE
CVM_BG_PIDS=()
CVM_CLEANUP=()
# cleanup_add PATH: removed when the script ends.
cleanup_add() { CVM_CLEANUP+=("$1"); }

# The binary runs in a folder of its own two levels down, so that a write
# relative to the working directory ("../../evil") stays in TEST_TMP.
mkdir -p "$TEST_TMP/cwd/here"
cd "$TEST_TMP/cwd/here" || exit 1

if [ -z "${CVM_FIXTURE_CACHE:-}" ]; then
	CVM_FIXTURE_CACHE=$TEST_TMP/fixture-cache
fi
export CVM_FIXTURE_CACHE
mkdir -p "$CVM_FIXTURE_CACHE"

# Isolation: nothing from the caller's environment selects a store, a
# catalogue or a mirror; nothing is fetched from the network.
unset CUDNNVM_STORE CUDNNVM_MANIFESTS CUDNNVM_FAULT
export CUDNNVM_MIRROR="file://$TEST_TMP/no-mirror/"
export HOME=$TEST_TMP/home
mkdir -p "$HOME"
export LC_ALL=C

T_PASS=0
T_FAIL=0
T_SKIP=0
ROOT_N=0

# new_root: a fresh, empty --root; sets ROOT and STORE (the default store).
new_root() {
	ROOT_N=$((ROOT_N + 1))
	ROOT=$TEST_TMP/root$ROOT_N
	mkdir -p "$ROOT"
	STORE=$ROOT/opt/cudnnvm
}
new_root

diag() { # lines... (each printed as "#   line")
	local l
	for l in "$@"; do
		printf '%s\n' "$l" | sed -e 's/^/#   /'
	done
}

ok() {
	T_PASS=$((T_PASS + 1))
	printf 'ok - %s\n' "$1"
}

not_ok() { # NAME [DIAG...]
	T_FAIL=$((T_FAIL + 1))
	printf 'not ok - %s\n' "$1"
	shift
	[ $# -gt 0 ] && diag "$@"
	return 0
}

skip() { # NAME REASON
	T_SKIP=$((T_SKIP + 1))
	printf 'ok - %s # SKIP %s\n' "$1" "$2"
}

# finish: the TAP plan "1..N" (N: every ok, not ok and skip printed), then
# exit 1 when an assertion failed. tests/run.sh fails a script without it.
finish() {
	printf '# %s: %d passed, %d failed, %d skipped\n' "$T_NAME" "$T_PASS" "$T_FAIL" "$T_SKIP"
	printf '1..%d\n' $((T_PASS + T_FAIL + T_SKIP))
	[ "$T_FAIL" -eq 0 ]
	exit $?
}

# check NAME CMD...: ok when CMD succeeds.
check() {
	local name=$1
	shift
	if "$@"; then ok "$name"; else not_ok "$name" "failed: $*"; fi
}

_cvm_ctx() { # the last command, its exit code and the start of its stderr/stdout
	diag "command: cudnnvm --root \$ROOT ${CVM_LAST:-}" "exit code: ${RC:-?}"
	if [ -s "${CVM_ERRF:-/dev/null}" ]; then
		head -n 8 "$CVM_ERRF" | cat -v | sed -e 's/^/#   stderr: /'
	fi
	if [ -s "${CVM_OUTF:-/dev/null}" ]; then
		head -n 8 "$CVM_OUTF" | cat -v | sed -e 's/^/#   stdout: /'
	fi
}

CVM_N=0
# cvm ARGS...: run the binary against $ROOT; sets RC OUT ERR CVM_OUTF CVM_ERRF.
cvm() {
	CVM_N=$((CVM_N + 1))
	CVM_OUTF=$TEST_TMP/cvm.$CVM_N.out
	CVM_ERRF=$TEST_TMP/cvm.$CVM_N.err
	CVM_LAST="$*"
	CVM_WORK_BEFORE=$(_entries "$STORE/.staging"; _entries "$STORE/.trash")
	CUDNNVM_NO_PROGRESS=1 timeout -k 5 "${CVM_TIMEOUT:-120}" \
		"$CUDNNVM" --root "$ROOT" "$@" >"$CVM_OUTF" 2>"$CVM_ERRF" </dev/null
	RC=$?
	OUT=$(cat "$CVM_OUTF")
	ERR=$(cat "$CVM_ERRF")
	_cvm_sanitizer_check
	_cvm_contract_check "$@"
	return 0
}

# What holds after every command (reported only when it does not, so that
# the count of tests does not depend on it): work areas that were empty are
# empty again unless the process was killed (leftovers of a crash are for a
# locked command to sweep, which the crash tests check); a failure prints exactly one "cudnnvm: error: "
# line; with --json a failure's stdout is one {"error": {"code", "message"}}
# document whose code is the exit code. CVM_NO_AUTO=1 turns this off.
_cvm_contract_check() {
	[ "${CVM_NO_AUTO:-0}" = 1 ] && return 0
	local w e a json=0
	if [ "$RC" != 137 ] && [ -z "$CVM_WORK_BEFORE" ]; then
		for w in .staging .trash; do
			e=$(_entries "$STORE/$w")
			if [ -n "$e" ]; then
				not_ok "$w empty after: ${CVM_LAST}" "$w holds: $(printf '%s' "$e" | tr '\n' ' ')"
			fi
		done
	fi
	case $RC in
	0 | 137 | 124) return 0 ;;
	77) return 0 ;; # the smoke test's "GPU part skipped": a result, not an error
	esac
	# doctor's exit 1 means "something needs fixing", said as findings, not as an error.
	case " $* " in *" doctor "*) [ "$RC" = 1 ] && return 0 ;; esac
	e=$(grep -c '^cudnnvm: error: ' "$CVM_ERRF")
	if [ "$e" != 1 ]; then
		not_ok "one 'cudnnvm: error: ' line on stderr from: ${CVM_LAST}" "got $e (exit $RC):" \
			"$(head -n 5 "$CVM_ERRF" | cat -v)"
	fi
	for a in "$@"; do
		[ "$a" = --json ] && json=1
	done
	if [ "$json" = 1 ] && ! e=$(python3 - "$CVM_OUTF" "$RC" 2>&1 <<'EOF'
import json, sys
try:
    d = json.load(open(sys.argv[1]))
except Exception as e:
    sys.exit("stdout is not one JSON document: %s" % e)
err = d.get("error") if isinstance(d, dict) else None
if not isinstance(err, dict) or err.get("code") != int(sys.argv[2]) \
        or not isinstance(err.get("message"), str) or not err["message"]:
    sys.exit("want {\"error\": {\"code\": %s, \"message\": ...}}, got %s" % (sys.argv[2], json.dumps(d)[:300]))
EOF
	); then
		not_ok "--json error document on stdout from: ${CVM_LAST}" "$e"
	fi
	return 0
}

# A sanitizer report is a failure whatever the exit code (reported only then).
_cvm_sanitizer_check() {
	if grep -qE '(ERROR|WARNING): (Address|Leak|UndefinedBehavior|Memory|Thread)Sanitizer|runtime error: ' "$CVM_ERRF"; then
		not_ok "no sanitizer report from: ${CVM_LAST}" \
			"$(grep -m 5 -E 'Sanitizer|runtime error|#[0-9] ' "$CVM_ERRF")"
	fi
}

# cvm_bg TAG ARGS...: cvm in the background; results in $TEST_TMP/bg.TAG.{out,err,rc}.
cvm_bg() {
	local tag=$1
	shift
	(
		CUDNNVM_NO_PROGRESS=1 timeout -k 5 "${CVM_TIMEOUT:-120}" \
			"$CUDNNVM" --root "$ROOT" "$@" >"$TEST_TMP/bg.$tag.out" 2>"$TEST_TMP/bg.$tag.err" </dev/null
		echo $? >"$TEST_TMP/bg.$tag.rc"
	) &
	CVM_BG_PIDS+=($!)
}

# bg_result TAG: after wait, sets RC OUT ERR CVM_OUTF CVM_ERRF from a cvm_bg run.
bg_result() {
	CVM_OUTF=$TEST_TMP/bg.$1.out
	CVM_ERRF=$TEST_TMP/bg.$1.err
	CVM_LAST="(background $1)"
	RC=$(cat "$TEST_TMP/bg.$1.rc" 2>/dev/null || echo '?')
	OUT=$(cat "$CVM_OUTF")
	ERR=$(cat "$CVM_ERRF")
	_cvm_sanitizer_check
}

# ------------------------------------------------------------------ waiting
# Nothing waits a fixed time or measures one: a test waits for the state
# itself, polling it; the cap only ends a hang (CVM_WAIT_CAP, default 300 s).

# wait_until CMD...: polls CMD every 0.05 s until it succeeds; 1 when the cap passed first.
wait_until() {
	local end=$((SECONDS + ${CVM_WAIT_CAP:-300}))
	until "$@"; do
		[ "$SECONDS" -ge "$end" ] && return 1
		sleep 0.05
	done
	return 0
}

# wait_for NAME CMD...: wait_until CMD; when it never held, "not ok - NAME" and 1.
wait_for() {
	local name=$1
	shift
	wait_until "$@" && return 0
	not_ok "$name" "waited ${CVM_WAIT_CAP:-300} s for: $*"
	return 1
}

lock_held() { ! flock -n "$STORE/.lock" true; } # another process holds STORE/.lock

# hold_lock: another process takes STORE/.lock and holds it until
# release_lock; returns once it is held. HOLDER is its pid.
hold_lock() {
	local lock=$STORE/.lock
	HOLD_STOP=$TEST_TMP/hold-stop.$RANDOM$RANDOM
	# shellcheck disable=SC2016  # for the holder's shell (the cap: should the test die)
	flock "$lock" sh -c 'i=0; while [ ! -e "$1" ] && [ $i -lt "$2" ]; do sleep 0.05; i=$((i + 1)); done' \
		sh "$HOLD_STOP" $((${CVM_WAIT_CAP:-300} * 20)) &
	HOLDER=$!
	CVM_BG_PIDS+=("$HOLDER")
	wait_for "the test's lock holder took $lock" lock_held
}

# release_lock: the holder of hold_lock lets go and has ended when it returns.
release_lock() {
	touch "$HOLD_STOP"
	wait "$HOLDER" 2>/dev/null
	return 0
}

# ------------------------------------------------------------ another user
# as_other_ready USER: whether USER (e.g. nobody) can be switched to here and
# reach TEST_TMP; prints why not. TEST_TMP must be made 0755 first.
as_other_ready() {
	if [ "$(id -u)" != 0 ] || ! command -v setpriv >/dev/null || ! id "$1" >/dev/null 2>&1; then
		echo "needs root, setpriv and a user $1"
		return 1
	fi
	if ! setpriv --reuid="$1" --regid="$(id -g "$1")" --clear-groups test -x "$TEST_TMP"; then
		echo "user $1 cannot enter $TEST_TMP (a folder above it is closed to others; set TMPDIR)"
		return 1
	fi
	return 0
}

# other_binary: a copy of the binary that any user can run, in TEST_TMP (the
# checkout may be in a folder others cannot enter); prints its path.
other_binary() {
	local d=$TEST_TMP/bin-for-others
	if [ ! -x "$d/cudnnvm" ]; then
		mkdir -p "$d" && cp "$CUDNNVM" "$d/cudnnvm" && chmod 0755 "$d" "$d/cudnnvm"
	fi
	echo "$d/cudnnvm"
}

# ---------------------------------------------------------------- assertions

assert_rc() { # WANT NAME
	if [ "$RC" = "$1" ]; then
		ok "$2"
	else
		not_ok "$2" "want exit code $1, got $RC"
		_cvm_ctx
	fi
}

_grep_in() { # MODE(F|E) FILE PATTERN
	grep -q -i -"$1" -e "$3" "$2"
}

assert_err_contains() { # TEXT NAME   (fixed string, case-insensitive)
	if _grep_in F "$CVM_ERRF" "$1"; then ok "$2"; else
		not_ok "$2" "stderr does not contain '$1'"
		_cvm_ctx
	fi
}

assert_err_matches() { # ERE NAME   (case-insensitive)
	if _grep_in E "$CVM_ERRF" "$1"; then ok "$2"; else
		not_ok "$2" "stderr does not match /$1/"
		_cvm_ctx
	fi
}

assert_out_contains() { # TEXT NAME
	if _grep_in F "$CVM_OUTF" "$1"; then ok "$2"; else
		not_ok "$2" "stdout does not contain '$1'"
		_cvm_ctx
	fi
}

assert_out_lacks() { # TEXT NAME
	if ! _grep_in F "$CVM_OUTF" "$1"; then ok "$2"; else
		not_ok "$2" "stdout contains '$1'"
		_cvm_ctx
	fi
}

assert_err_lacks() { # TEXT NAME
	if ! _grep_in F "$CVM_ERRF" "$1"; then ok "$2"; else
		not_ok "$2" "stderr contains '$1'"
		_cvm_ctx
	fi
}

assert_output_contains() { # TEXT NAME   (stdout or stderr)
	if _grep_in F "$CVM_OUTF" "$1" || _grep_in F "$CVM_ERRF" "$1"; then ok "$2"; else
		not_ok "$2" "neither stdout nor stderr contains '$1'"
		_cvm_ctx
	fi
}

assert_output_matches() { # ERE NAME   (stdout or stderr, case-insensitive)
	if _grep_in E "$CVM_OUTF" "$1" || _grep_in E "$CVM_ERRF" "$1"; then ok "$2"; else
		not_ok "$2" "neither stdout nor stderr matches /$1/"
		_cvm_ctx
	fi
}

# The error convention: "cudnnvm: error: " lines on stderr, exactly one.
assert_error_line() { # NAME
	local n
	n=$(grep -c '^cudnnvm: error: ' "$CVM_ERRF")
	if [ "$n" -eq 1 ]; then ok "$1"; else
		not_ok "$1" "want exactly one 'cudnnvm: error: ' line on stderr, got $n"
		_cvm_ctx
	fi
}

assert_stderr_line() { # LINE NAME: stderr has exactly this line (a fixed string)
	if grep -qxF -e "$1" "$CVM_ERRF"; then ok "$2"; else
		not_ok "$2" "stderr lacks the line: $1"
		_cvm_ctx
	fi
}
assert_err_line() { assert_stderr_line "cudnnvm: error: $1" "$2"; } # TEXT NAME

# Untrusted names are printed through a sanitiser: no control characters
# (other than the newline ending each line) reach the terminal, and every line
# on stderr is a whole message.
assert_stderr_sanitised() { # NAME
	if LC_ALL=C grep -q "$(printf '[\001-\011\013-\037\177]')" "$CVM_ERRF"; then
		not_ok "$1" "stderr holds raw control characters"
		_cvm_ctx
	elif grep -v -q -e '^cudnnvm: ' -e '^$' "$CVM_ERRF"; then
		not_ok "$1" "stderr has a line not starting with 'cudnnvm: ' (a name split by a newline?)"
		_cvm_ctx
	else
		ok "$1"
	fi
}

assert_file() { # PATH NAME
	if [ -f "$1" ] && [ ! -L "$1" ]; then ok "$2"; else not_ok "$2" "not a regular file: $1" "$(ls -ld "$1" 2>&1)"; fi
}

assert_dir() { # PATH NAME
	if [ -d "$1" ] && [ ! -L "$1" ]; then ok "$2"; else not_ok "$2" "not a folder: $1" "$(ls -ld "$1" 2>&1)"; fi
}

assert_absent() { # PATH NAME   (not even a dangling symlink)
	if [ ! -e "$1" ] && [ ! -L "$1" ]; then ok "$2"; else not_ok "$2" "exists: $1" "$(ls -ld "$1" 2>&1)"; fi
}

assert_symlink() { # PATH TARGET NAME   (TARGET '' = any target)
	local got
	if [ ! -L "$1" ]; then
		not_ok "$3" "not a symlink: $1" "$(ls -ld "$1" 2>&1)"
		return
	fi
	got=$(readlink "$1")
	if [ -n "$2" ] && [ "$got" != "$2" ]; then
		not_ok "$3" "$1 -> '$got', want -> '$2'"
	elif [ ! -e "$1" ]; then
		not_ok "$3" "dangling symlink: $1 -> $got"
	else
		ok "$3"
	fi
}

assert_mode() { # PATH OCTAL NAME   (e.g. 644, 755: permission bits incl. set-id)
	local got
	got=$(stat -c '%a' "$1" 2>&1)
	if [ "$got" = "$2" ]; then ok "$3"; else not_ok "$3" "mode of $1 is $got, want $2"; fi
}

assert_owner() { # PATH UID NAME
	local got
	got=$(stat -c '%u:%g' "$1" 2>&1)
	if [ "$got" = "$2:$2" ]; then ok "$3"; else not_ok "$3" "owner of $1 is $got, want $2:$2"; fi
}

# Every object under DIR is readable by all: files 0644 or 0755, folders 0755,
# no set-id or sticky bit, owned by the installing user.
assert_tree_modes() { # DIR NAME
	local bad
	bad=$(find "$1" \( -type d ! -perm 0755 -printf 'folder %m %P\n' \) \
		-o \( -type f ! -perm 0644 ! -perm 0755 -printf 'file %m %P\n' \) \
		-o \( ! -type d ! -type f ! -type l -printf 'special %y %P\n' \) 2>&1
		find "$1" \( ! -uid "$(id -u)" -o ! -gid "$(id -g)" \) -printf 'owner %U:%G %P\n' 2>&1)
	if [ -z "$bad" ]; then ok "$2"; else
		not_ok "$2" "bad modes/owners under $1:" "$(printf '%s\n' "$bad" | head -n 10)"
	fi
}

_entries() { find "$1" -mindepth 1 -maxdepth 1 -printf '%P\n' 2>/dev/null | LC_ALL=C sort; }

# A folder that is empty, or absent.
assert_empty_or_absent() { # DIR NAME
	if [ ! -e "$1" ] || { [ -d "$1" ] && [ -z "$(_entries "$1")" ]; }; then ok "$2"; else
		not_ok "$2" "$1 is not empty:" "$(find "$1" -mindepth 1 -printf '%y %m %P\n' 2>&1 | head -n 10)"
	fi
}

# The work areas are empty after every command.
assert_store_clean() { # NAME
	local bad=
	local w e
	for w in .staging .trash; do
		e=$(_entries "$STORE/$w")
		[ -n "$e" ] && bad="$bad $w: $(printf '%s' "$e" | tr '\n' ' ')"
	done
	if [ -z "$bad" ]; then ok "$1"; else not_ok "$1" "work areas not empty:$bad"; fi
}

# The committed versions, one id a line.
versions() { _entries "$STORE/versions"; }

assert_versions() { # "ID ID..." NAME   (exactly these in versions/)
	local want got ids
	read -r -a ids <<<"$1"
	want=$( [ ${#ids[@]} -gt 0 ] && printf '%s\n' "${ids[@]}" | LC_ALL=C sort)
	got=$(versions)
	if [ "$want" = "$got" ]; then ok "$2"; else
		not_ok "$2" "versions/ holds: $(printf '%s' "$got" | tr '\n' ' ')" "want: $(printf '%s' "$want" | tr '\n' ' ')"
	fi
}

# `sha256sum -c .cudnnvm/files.sha256` passes in the version folder.
assert_sha256sum_c() { # VERSION_DIR NAME
	local r
	if [ ! -s "$1/.cudnnvm/files.sha256" ]; then
		not_ok "$2" "missing or empty $1/.cudnnvm/files.sha256"
		return
	fi
	if r=$(cd "$1" && sha256sum --quiet --strict -c .cudnnvm/files.sha256 2>&1); then ok "$2"; else
		not_ok "$2" "sha256sum -c failed in $1:" "$(printf '%s\n' "$r" | head -n 5)"
	fi
}

# JSON: PYEXPR is a Python expression over d (the document); the assertion
# holds when it is true. json_get prints the value of an expression.
assert_json() { # PYEXPR NAME [FILE]
	local f=${3:-$CVM_OUTF} r
	if r=$(python3 - "$f" "$1" 2>&1 <<'EOF'
import json, sys
try:
    d = json.load(open(sys.argv[1]))
except Exception as e:
    print("not JSON: %s" % e)
    sys.exit(1)
try:
    v = eval(sys.argv[2], {"d": d, "json": json})
except Exception as e:
    print("%s: %r" % (type(e).__name__, e))
    v = False
if not v:
    s = json.dumps(d, indent=1)
    print(s if len(s) < 1500 else s[:1500] + " ...")
    sys.exit(1)
EOF
	); then ok "$2"; else
		not_ok "$2" "JSON check failed: $1" "$r"
		[ -z "${3:-}" ] && _cvm_ctx
	fi
}

json_get() { # PYEXPR [FILE]
	python3 - "${2:-$CVM_OUTF}" "$1" <<'EOF' 2>/dev/null
import json, sys
d = json.load(open(sys.argv[1]))
v = eval(sys.argv[2], {"d": d, "json": json})
print(v if isinstance(v, str) else json.dumps(v))
EOF
}

# snapshot DIR [PRUNE...]: every object under DIR (type, mode, owner, size of
# files, link target) and the sha256 of every regular file, sorted; PRUNE
# paths (relative to DIR, e.g. opt/cudnnvm) are left out. The content of a
# lock file (".lock": it may hold the holder's pid) is not compared.
snapshot() {
	local dir=$1 p
	shift
	local prune=()
	for p in "$@"; do
		prune+=(-path "./$p" -prune -o)
	done
	(
		cd "$dir" || exit 1
		find . -mindepth 1 "${prune[@]}" \( -type f -name .lock -printf '%y %m %U:%G - %p\n' \) -o \
			\( -type f -printf '%y %m %U:%G %s %p\n' \) -o \
			\( ! -type f -printf '%y %m %U:%G - %p -> %l\n' \) | LC_ALL=C sort
		find . -mindepth 1 "${prune[@]}" -type f ! -name .lock -print0 | LC_ALL=C sort -z | xargs -0 -r sha256sum
	)
}

assert_same_snapshot() { # FILE_BEFORE FILE_AFTER NAME
	local d
	if d=$(diff "$1" "$2"); then ok "$3"; else
		not_ok "$3" "the tree changed:" "$(printf '%s\n' "$d" | head -n 15)"
	fi
}

# ------------------------------------------------------------------ fixtures

# mkcudnn ARGS...: tests/fixtures/mkcudnn.sh into $TEST_TMP/archives; prints the path.
mkcudnn() {
	local outdir=$TEST_TMP/archives
	sh "$FIXTURES/mkcudnn.sh" "$outdir" "$@"
}

sha256() { sha256sum "$1" | cut -d' ' -f1; }

# A copy of FILE in a folder of its own (same file name), to corrupt.
copy_archive() { # FILE TAG
	local d=$TEST_TMP/copies/$2
	mkdir -p "$d"
	cp "$1" "$d/"
	echo "$d/$(basename "$1")"
}

# Flips one byte at OFFSET (default: the middle).
flip_byte() { # FILE [OFFSET]
	python3 - "$1" "${2:-}" <<'EOF'
import os, sys
p = sys.argv[1]
n = os.path.getsize(p)
off = int(sys.argv[2]) if sys.argv[2] else n // 2
with open(p, "r+b") as f:
    f.seek(off)
    b = f.read(1)
    f.seek(off)
    f.write(bytes([b[0] ^ 0xFF]))
EOF
}

truncate_half() { # FILE
	truncate -s $(($(stat -c %s "$1") / 2)) "$1"
}

# The id of a version: <full version>-cuda<major>-<platform>.
id_of() { printf '%s-cuda%s-%s\n' "$1" "$2" "${3:-linux-x86_64}"; }
