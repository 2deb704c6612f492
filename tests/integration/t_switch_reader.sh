#!/bin/bash
# SPDX-License-Identifier: MIT
# Readers never see a broken toolkit: while `use` switches versions over and
# over, background readers open the toolkit's libcudnn.so.8 and headers (cat,
# and a Python loop that also dlopens the library and calls cudnnGetVersion),
# and record every failure. There must be none.
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"
# shellcheck source-path=SCRIPTDIR source=lib_activate.sh
. "$TESTS_DIR/integration/lib_activate.sh"

act_root
inst 8.9.7.29 11.8
inst 8.9.6.50 11.8
inst 9.1.1.17 11.8
use_ok 8.9.7 --cuda 11.8 --no-smoke --no-ldconfig

cat >"$TEST_TMP/reader.py" <<'EOF'
# reader.py STOP OUT LIB VERSIONS PATH...: read every PATH and (every few
# rounds) dlopen LIB and check cudnnGetVersion() is in VERSIONS, until STOP
# exists; OUT gets "rounds failures" and then the first failures.
import ctypes, _ctypes, os, sys, time
stop, out, lib, versions = sys.argv[1:5]
paths = sys.argv[5:]
versions = {int(v) for v in versions.split(",")}
rounds = fails = 0
msgs = []
def fail(m):
    global fails
    fails += 1
    if len(msgs) < 10:
        msgs.append(m)
open(out + ".ready", "w").close()
while not os.path.exists(stop):
    for p in paths:
        try:
            with open(p, "rb") as f:
                if not f.read(65536):
                    fail("%s: empty read" % p)
        except OSError as e:
            fail("%s: %s" % (p, e))
    if rounds % 4 == 0:
        try:
            h = ctypes.CDLL(lib)
            v = h.cudnnGetVersion()
            if v not in versions:
                fail("%s reports %d" % (lib, v))
            _ctypes.dlclose(h._handle)
        except OSError as e:
            fail("dlopen %s: %s" % (lib, e))
    rounds += 1
    time.sleep(0.001)  # leave the switching process some CPU
with open(out, "w") as f:
    f.write("%d %d\n" % (rounds, fails))
    f.write("".join(m + "\n" for m in msgs))
EOF

# readers TAG LIB VERSIONS PATH...: start a Python reader and a shell loop
# (cat of the first PATH, an open of each).
readers() {
	local tag=$1 lib=$2 vers=$3 i
	shift 3
	rm -f "$TEST_TMP/stop.$tag"
	"$PY" "$TEST_TMP/reader.py" "$TEST_TMP/stop.$tag" "$TEST_TMP/py.$tag" "$lib" "$vers" "$@" &
	CVM_BG_PIDS+=($!)
	PY_PID=$!
	(
		n=0
		: >"$TEST_TMP/cat.$tag.fails"
		while [ ! -e "$TEST_TMP/stop.$tag" ]; do
			# the library through cat, every path opened by the shell itself
			cat "$1" >/dev/null 2>>"$TEST_TMP/cat.$tag.fails" || echo "cat $1 failed" >>"$TEST_TMP/cat.$tag.fails"
			for p in "$@"; do
				{ : <"$p"; } 2>>"$TEST_TMP/cat.$tag.fails" || echo "open $p failed" >>"$TEST_TMP/cat.$tag.fails"
			done
			n=$((n + 1))
		done
		echo "$n" >"$TEST_TMP/cat.$tag.rounds"
	) &
	CVM_BG_PIDS+=($!)
	CAT_PID=$!
	wait_until test -e "$TEST_TMP/py.$tag.ready"
}

# stop_readers TAG NAME: stop them and check they saw no failure.
stop_readers() {
	local tag=$1 r f c
	touch "$TEST_TMP/stop.$tag"
	wait "$PY_PID" "$CAT_PID" 2>/dev/null
	read -r r f <"$TEST_TMP/py.$tag" 2>/dev/null || { r=0; f='?'; }
	if [ "$f" = 0 ] && [ "$r" -ge 10 ]; then
		ok "$2: the Python reader (open, read, dlopen, cudnnGetVersion) saw no failure in $r rounds"
	else
		not_ok "$2: the Python reader (open, read, dlopen, cudnnGetVersion) saw no failure" \
			"rounds: $r, failures: $f" "$(tail -n +2 "$TEST_TMP/py.$tag" 2>/dev/null)"
	fi
	c=$(cat "$TEST_TMP/cat.$tag.rounds" 2>/dev/null || echo 0)
	if [ ! -s "$TEST_TMP/cat.$tag.fails" ] && [ "$c" -ge 10 ]; then
		ok "$2: the shell reader (cat, open) saw no failure in $c rounds"
	else
		not_ok "$2: the shell reader (cat, open) saw no failure" "rounds: $c" "$(head -n 5 "$TEST_TMP/cat.$tag.fails")"
	fi
}

# switches N V1 V2: N uses alternating V2, V1, V2, ...; sets BAD to the failures.
switches() {
	local i v
	BAD=0
	for i in $(seq "$1"); do
		if [ $((i % 2)) = 1 ]; then v=$3; else v=$2; fi
		cvm use "$v" --cuda 11.8 --no-smoke --no-ldconfig
		if [ "$RC" != 0 ]; then
			BAD=$((BAD + 1))
			[ "$BAD" = 1 ] && _cvm_ctx
		fi
	done
}

# ------------------------------------- 100 switches between 8.9.7 and 8.9.6
n=$(hist_lines 11.8)
readers same "$LIB11/libcudnn.so.8" 8906,8907 \
	"$LIB11/libcudnn.so.8" "$LIB11/libcudnn.so" "$LIB11/libcudnn_cnn_infer.so.8" \
	"$TK11/include/cudnn.h" "$TK11/include/cudnn_version.h"
switches 100 8.9.7 8.9.6
stop_readers same "100 switches 8.9.7 <-> 8.9.6"
check "all 100 uses exited 0 ($BAD did not)" test "$BAD" = 0
assert_uses "$TK11" 11.8 "$ID897" "after 100 switches: 8.9.7 active, links in order"
assert_no_dangling "$TK11" "after 100 switches: no dangling link"
check "after 100 switches: 100 more journal lines" test "$(hist_lines 11.8)" = $((n + 100))
assert_journal "after 100 switches: the journal parses"
assert_store_clean "after 100 switches: work areas empty"

# -------------- 20 switches between 8.9.7 and 9.1.1: names both have stay readable
n=$(hist_lines 11.8)
readers major "$LIB11/libcudnn.so" 8907,90101 \
	"$LIB11/libcudnn.so" "$TK11/include/cudnn.h" "$TK11/include/cudnn_version.h" "$TK11/include/cudnn_backend.h"
switches 20 8.9.7 9.1.1
stop_readers major "20 switches 8.9.7 <-> 9.1.1 (names both versions have)"
check "all 20 uses exited 0 ($BAD did not)" test "$BAD" = 0
assert_uses "$TK11" 11.8 "$ID897" "after 20 switches across majors: 8.9.7 active, links in order"
assert_no_dangling "$TK11" "after 20 switches across majors: no dangling link"
check "after 20 switches across majors: 20 more journal lines" test "$(hist_lines 11.8)" = $((n + 20))

finish
