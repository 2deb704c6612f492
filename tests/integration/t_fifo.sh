#!/bin/bash
# SPDX-License-Identifier: MIT
# A FIFO (or a link) where cudnnvm reads or replaces a file: the loader's
# ld.so.conf.d/cudnnvm-cuda-X.Y.conf, a version's record and file list, the
# journal and its pending line, the toolkit's links file, the configuration,
# the cache, an --archive, a toolkit's version.json, a smoke log. Every one
# is opened without waiting (O_NONBLOCK) and refused unless it is a regular
# file: one error naming it, no hang (exit 124 from the cap), the lock free
# afterwards, the FIFO still there and nothing else changed.
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"
# shellcheck source-path=SCRIPTDIR source=lib_activate.sh
. "$TESTS_DIR/integration/lib_activate.sh"

# Only ends a hang of the code before the fix; a run here takes well under a second.
CAP=${CVM_FIFO_CAP:-60}

act_root
inst 9.1.1.17 12.4
inst 9.1.0.70 12.4
use_ok 9.1.1 --cuda 12.4 --no-smoke
V910=$STORE/versions/$ID910

# refused WHAT PATH RC MESSAGE ARGS...: with a FIFO at PATH, cvm ARGS exits RC
# with MESSAGE, the lock is free, the FIFO is still one and ROOT is unchanged.
refused() {
	local what=$1 path=$2 rc=$3 msg=$4
	shift 4
	snapshot "$ROOT" >"$TEST_TMP/before"
	CVM_TIMEOUT=$CAP cvm "$@"
	assert_rc "$rc" "$what: $1 exits $rc at once (124 is a hang)"
	assert_err_line "$msg" "$what: $1 says '$msg'"
	check "$what: $1 left the lock free" test ! -e "$STORE/.lock" -o -z "$(lock_held && echo held)"
	check "$what: $1 left the FIFO as it is" test -p "$path"
	snapshot "$ROOT" >"$TEST_TMP/after"
	assert_same_snapshot "$TEST_TMP/before" "$TEST_TMP/after" "$what: $1 changed nothing"
}

# fifo_at PATH: PATH (a file now) put aside and a FIFO made in its place; unfifo puts it back.
fifo_at() {
	FIFO=$1
	chmod u+w "$(dirname "$1")"
	[ -e "$1" ] && mv "$1" "$1.aside"
	mkfifo "$1"
}
unfifo() {
	rm -f "$FIFO"
	[ -e "$FIFO.aside" ] && mv "$FIFO.aside" "$FIFO"
	return 0
}

# ------------------------------------------------- the loader's file
CONF=$ROOT/etc/ld.so.conf.d/cudnnvm-cuda-12.4.conf
fifo_at "$CONF"
M="'/etc/ld.so.conf.d/cudnnvm-cuda-12.4.conf': not a regular file (left as it is; nothing changed): remove it, and the next switch writes it"
refused "ld.so.conf.d FIFO" "$CONF" 1 "$M" use 9.1.0 --cuda 12.4 --no-smoke
refused "ld.so.conf.d FIFO" "$CONF" 1 "$M" use 9.1.0 --cuda 12.4 --no-smoke --dry-run
refused "ld.so.conf.d FIFO" "$CONF" 1 "$M" uninstall 9.1.1 --force
assert_symlink "$STORE/active/cuda-12.4" "../versions/$ID911" "9.1.1 is still the active version"
CVM_TIMEOUT=$CAP cvm doctor
check "ld.so.conf.d FIFO: doctor answers (exit 0 or 1, not a hang)" test "$RC" = 0 -o "$RC" = 1
unfifo
# A link there is not ours either: never followed, never replaced.
mv "$CONF" "$TEST_TMP/conf.aside"
printf 'keep me\n' >"$TEST_TMP/conf-target"
ln -s "$TEST_TMP/conf-target" "$CONF"
cvm use 9.1.0 --cuda 12.4 --no-smoke
assert_rc 1 "ld.so.conf.d link: use exits 1"
assert_err_line "$M" "ld.so.conf.d link: the same message"
assert_symlink "$CONF" "$TEST_TMP/conf-target" "ld.so.conf.d link: left as it is"
check "ld.so.conf.d link: its target unchanged" test "$(cat "$TEST_TMP/conf-target")" = "keep me"
rm "$CONF"
mv "$TEST_TMP/conf.aside" "$CONF"

# --------------------------------------------------------- the journal
fifo_at "$STORE/history/cuda-12.4.log"
refused "journal FIFO" "$FIFO" 1 "'/opt/cudnnvm/history/cuda-12.4.log' is a FIFO, not cudnnvm's journal (a regular file): refused, left as it is" \
	use 9.1.0 --cuda 12.4 --no-smoke
refused "journal FIFO" "$FIFO" 1 "'/opt/cudnnvm/history/cuda-12.4.log' is a FIFO, not cudnnvm's journal (a regular file): refused, left as it is" \
	history --cuda 12.4
refused "journal FIFO" "$FIFO" 1 "'/opt/cudnnvm/history/cuda-12.4.log' is a FIFO, not cudnnvm's journal (a regular file): refused, left as it is" \
	rollback --cuda 12.4 --no-smoke
unfifo
fifo_at "$STORE/history/cuda-12.4.pending"
refused "pending FIFO" "$FIFO" 1 "cannot write '/opt/cudnnvm/history/cuda-12.4.pending': not a regular file" \
	use 9.1.0 --cuda 12.4 --no-smoke
unfifo

# ---------------------------------------------------- the links file
fifo_at "$STORE/toolkits/cuda-12.4.links"
refused "links file FIFO" "$FIFO" 1 "refusing to read '/opt/cudnnvm/toolkits/cuda-12.4.links': not a regular file; nothing changed (once it is removed, cudnnvm records its links afresh)" \
	use 9.1.0 --cuda 12.4 --no-smoke
unfifo

# ----------------------------------------------------- a version's record
fifo_at "$V910/.cudnnvm/record.json"
refused "record.json FIFO" "$FIFO" 1 "'$ID910/.cudnnvm/record.json': not a regular file" \
	use 9.1.0 --cuda 12.4 --no-smoke
CVM_TIMEOUT=$CAP cvm verify 9.1.0
assert_rc 3 "record.json FIFO: verify exits 3 (not a hang)"
CVM_TIMEOUT=$CAP cvm list
assert_rc 0 "record.json FIFO: list exits 0 (not a hang)"
unfifo
fifo_at "$V910/.cudnnvm/files.sha256"
refused "files.sha256 FIFO" "$FIFO" 3 "'$ID910/.cudnnvm/files.sha256': not a regular file" \
	export 9.1.0.70 "$TEST_TMP/out.tar"
assert_absent "$TEST_TMP/out.tar" "files.sha256 FIFO: no bundle written"
CVM_TIMEOUT=$CAP cvm verify 9.1.0
assert_rc 3 "files.sha256 FIFO: verify exits 3 (not a hang)"
unfifo

# ---------------------------------------------------- the configuration
fifo_at "$ROOT/etc/cudnnvm.conf"
refused "cudnnvm.conf FIFO" "$FIFO" 1 "cannot read '/etc/cudnnvm.conf': not a regular file" list
refused "cudnnvm.conf FIFO" "$FIFO" 1 "cannot read '/etc/cudnnvm.conf': not a regular file" \
	use 9.1.0 --cuda 12.4 --no-smoke
unfifo

# --------------------------------------------- a toolkit's version.json
fifo_at "$TK11/version.json"
CVM_TIMEOUT=$CAP cvm --json toolkits
assert_rc 0 "version.json FIFO: toolkits exits 0 (not a hang)"
assert_json '[(t["version"], t["source"]) for t in d["toolkits"] if t["version"] == "11.8"] == [("11.8", "cuda_runtime_api.h")]' \
	"version.json FIFO: 11.8 read from its header instead"
check "version.json FIFO: still a FIFO" test -p "$FIFO"
unfifo

# ------------------------------------------------ archives: given, cached
mkfifo "$TEST_TMP/given.tar.xz"
refused "--archive FIFO" "$TEST_TMP/given.tar.xz" 1 "cannot open '$TEST_TMP/given.tar.xz': not a regular file" \
	--manifests "$MAN" install 9.1.0 --cuda 12.4 --archive "$TEST_TMP/given.tar.xz" --force
A897=$(archive 8.9.7.29 11)
mkdir -p "$STORE/cache"
fifo_at "$STORE/cache/$(basename "$A897")"
refused "cached archive FIFO" "$FIFO" 1 "cannot open '/opt/cudnnvm/cache/$(basename "$A897")': not a regular file" \
	--manifests "$MAN" install 8.9.7 --cuda 11.8
unfifo
fifo_at "$STORE/cache/$(basename "$A897").part"
refused "download .part FIFO" "$FIFO" 1 "cannot write '$(basename "$A897").part' in the cache: not a regular file" \
	--manifests "$MAN" --mirror "file://$(dirname "$A897")/" install 8.9.7 --cuda 11.8
unfifo
assert_versions "$ID911 $ID910" "no version was added"

# ---------------------------------------- a smoke log is only a hint
mkdir -p "$STORE/smoke"
fifo_at "$STORE/smoke/$ID910.json"
CVM_TIMEOUT=$CAP cvm env 9.1.0 --cuda 12.4
assert_rc 0 "smoke log FIFO: env exits 0 (the log is not read, not waited on)"
CVM_TIMEOUT=$CAP cvm use 9.1.0 --cuda 12.4 --no-smoke
assert_rc 0 "smoke log FIFO: use --no-smoke exits 0"
check "smoke log FIFO: still a FIFO" test -p "$FIFO"
unfifo

finish
