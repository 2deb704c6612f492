#!/bin/bash
# SPDX-License-Identifier: MIT
# verify: re-hashes installed files against the record; a modified, missing
# or extra file (or a changed symlink) is exit 3 naming it.
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"

MAN=$TEST_TMP/manifests
A8=$(mkcudnn 8.9.7.29 11 --manifest "$MAN")
A9=$(mkcudnn 9.1.1.17 12 --manifest "$MAN")
ID8=$(id_of 8.9.7.29 11)
V8=$STORE/versions/$ID8

cvm --manifests "$MAN" install 8.9.7 --cuda 11.8 --archive "$A8"
assert_rc 0 "set-up: 8.9.7 installed"
cvm --manifests "$MAN" install 9.1.1 --cuda 12.4 --archive "$A9"
assert_rc 0 "set-up: 9.1.1 installed"

cvm verify
assert_rc 0 "verify (all) exits 0"
cvm verify 8.9.7
assert_rc 0 "verify 8.9.7 exits 0"
cvm verify 8.9.7.29
assert_rc 0 "verify 8.9.7.29 exits 0"
cvm verify 9.1
assert_rc 0 "verify 9.1 exits 0"
cvm --json verify
assert_rc 0 "verify --json exits 0"
assert_json 'isinstance(d, dict)' "verify --json prints one JSON document"
cvm verify 7.0.0
assert_rc 1 "verify of a version that is not installed: exit 1"

reinstall() { # restores 8.9.7
	cvm --manifests "$MAN" install 8.9.7 --cuda 11.8 --archive "$A8" --force
	[ "$RC" = 0 ] || not_ok "reinstall --force to restore 8.9.7" "exit $RC: $ERR"
}

# a modified file
printf 'changed\n' >>"$V8/include/cudnn.h"
cvm verify
assert_rc 3 "modified file: verify exits 3"
assert_output_contains "include/cudnn.h" "modified file: verify names include/cudnn.h"
cvm verify 8.9.7
assert_rc 3 "modified file: verify 8.9.7 exits 3"
assert_output_contains "include/cudnn.h" "modified file: verify 8.9.7 names it"
cvm verify 9.1.1
assert_rc 0 "modified file in 8.9.7: verify 9.1.1 still exits 0"
cvm --json verify 8.9.7
assert_rc 3 "modified file: verify --json exits 3"
assert_json 'd["error"]["code"] == 3 if "error" in d else "include/cudnn.h" in json.dumps(d)' "modified file: --json names it or gives error code 3"
reinstall
cvm verify
assert_rc 0 "after --force reinstall verify exits 0"

# same size, different bytes (a flipped byte in a library)
python3 - "$V8/lib/libcudnn.so.8.9.7" <<'EOF'
import sys
p = sys.argv[1]
b = bytearray(open(p, "rb").read())
b[len(b) // 2] ^= 0xFF
open(p, "wb").write(bytes(b))
EOF
cvm verify 8.9.7
assert_rc 3 "flipped byte in a library: exit 3"
assert_output_contains "lib/libcudnn.so.8.9.7" "flipped byte: names lib/libcudnn.so.8.9.7"
reinstall

# a missing file
rm -f "$V8/lib/libcudnn_cnn_train.so.8.9.7"
cvm verify 8.9.7
assert_rc 3 "deleted file: verify exits 3"
assert_output_contains "lib/libcudnn_cnn_train.so.8.9.7" "deleted file: verify names it"
assert_output_matches 'missing' "deleted file: verify says missing"
reinstall

# an extra file
echo extra >"$V8/include/cudnn_extra.h"
cvm verify 8.9.7
assert_rc 3 "added file: verify exits 3"
assert_output_contains "include/cudnn_extra.h" "added file: verify names it"
assert_output_matches 'extra|unexpected|not in the record' "added file: verify says extra"
rm -f "$V8/include/cudnn_extra.h"
cvm verify 8.9.7
assert_rc 0 "extra file removed: verify exits 0"

# a symlink retargeted, a symlink removed
ln -sfn libcudnn_ops_infer.so.8.9.7 "$V8/lib/libcudnn.so.8"
cvm verify 8.9.7
assert_rc 3 "retargeted symlink: verify exits 3"
assert_output_contains "lib/libcudnn.so.8" "retargeted symlink: verify names it"
reinstall
rm -f "$V8/lib/libcudnn.so"
cvm verify 8.9.7
assert_rc 3 "removed symlink: verify exits 3"
assert_output_contains "lib/libcudnn.so" "removed symlink: verify names it"
reinstall

# a file replaced by a symlink to an identical copy elsewhere
cp "$V8/include/cudnn_backend.h" "$TEST_TMP/cudnn_backend.h"
rm -f "$V8/include/cudnn_backend.h"
ln -s "$TEST_TMP/cudnn_backend.h" "$V8/include/cudnn_backend.h"
cvm verify 8.9.7
assert_rc 3 "file replaced by a symlink: verify exits 3"
assert_output_contains "include/cudnn_backend.h" "file replaced by a symlink: verify names it"
reinstall

# the record itself damaged
python3 - "$V8/.cudnnvm/files.sha256" <<'EOF'
import sys
p = sys.argv[1]
lines = open(p).read().split("\n")
lines[0] = ("1" if lines[0][0] == "0" else "0") + lines[0][1:]
open(p, "w").write("\n".join(lines))
EOF
cvm verify 8.9.7
assert_rc 3 "a hash changed in files.sha256: verify exits 3"
rm -f "$V8/.cudnnvm/record.json"
cvm verify 8.9.7
check "record.json missing: verify fails (exit 1 or 3)" test "$RC" = 1 -o "$RC" = 3
reinstall
cvm verify
assert_rc 0 "after restoring everything verify exits 0"

# verify takes no lock (a reader) and changes nothing
snapshot "$ROOT" >"$TEST_TMP/before.snap"
cvm verify
snapshot "$ROOT" >"$TEST_TMP/after.snap"
assert_same_snapshot "$TEST_TMP/before.snap" "$TEST_TMP/after.snap" "verify changes nothing"
assert_store_clean "work areas empty after verify"

finish
