#!/bin/bash
# SPDX-License-Identifier: MIT
# Untrusted names in output: in a --json document a byte that is not UTF-8
# is the escape \udcXX (reversible: Python's os.fsencode gives the bytes
# back), never text a real backslash could make; on the terminal, C1
# controls (U+0080-U+009F) and bidirectional controls (U+202E...) are shown
# escaped (\u009b, \u202e), as other control characters are.
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"

A=$(mkcudnn 9.1.1.17 12)
ID=$(id_of 9.1.1.17 12)
V=$STORE/versions/$ID
cvm install 9.1.1.17 --cuda 12.4 --archive "$A" --sha256 "$(sha256 "$A")"
assert_rc 0 "set-up: 9.1.1.17 installed"

chmod u+w "$V/include"
python3 - "$V/include" <<'PY'
import os, sys
d = os.fsencode(sys.argv[1])
for name in (b"a\xffb.h", b"a\\xffb.h", "c\u202ed.h".encode(), "e\u009bf.h".encode(), "g\u2066h.h".encode()):
    open(os.path.join(d, name), "wb").close()
PY
cvm --json verify 9.1.1.17
assert_rc 3 "extra files: verify --json exits 3"
python3 - "$CVM_OUTF" <<'PY' >"$TEST_TMP/json.check"
import json, os, sys
raw = open(sys.argv[1], "rb").read()
d = json.loads(raw)
paths = [p["path"] for p in d["verified"][0]["problems"] if p["kind"] == "extra"]
print("raw-escape" if b'"include/a\\udcffb.h"' in raw else "no-raw-escape")
print("reversible" if b"include/a\xffb.h" in [os.fsencode(p) for p in paths] else "not-reversible")
print("backslash-literal" if "include/a\\xffb.h" in paths else "no-backslash-literal")
print("distinct" if len(set(paths)) == 5 else "collapsed")
PY
check "a non-UTF-8 byte is the JSON escape \\udcff" grep -qx raw-escape "$TEST_TMP/json.check"
check "os.fsencode of the path gives the name's bytes back" grep -qx reversible "$TEST_TMP/json.check"
check "a real backslash stays a backslash" grep -qx backslash-literal "$TEST_TMP/json.check"
check "the byte 0xff and the text '\\xff' are two names in JSON" grep -qx distinct "$TEST_TMP/json.check"

cvm verify 9.1.1.17
assert_rc 3 "extra files: verify exits 3"
assert_stderr_line "$ID: extra: include/c\\u202ed.h" "U+202E (right-to-left override) is shown escaped"
assert_stderr_line "$ID: extra: include/e\\u009bf.h" "U+009B (C1 CSI) is shown escaped"
assert_stderr_line "$ID: extra: include/g\\u2066h.h" "U+2066 (left-to-right isolate) is shown escaped"
assert_stderr_line "$ID: extra: include/a\\xffb.h" "a non-UTF-8 byte is shown as \\xff"
assert_stderr_line "$ID: extra: include/a\\x5cxffb.h" "a real backslash is shown as \\x5c"
check "no C1 or bidi control reaches the terminal" sh -c "! grep -q \"\$(printf '\\302\\233\\\\|\\342\\200\\256\\\\|\\342\\201\\246')\" '$CVM_ERRF'"

finish
