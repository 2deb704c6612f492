#!/bin/bash
# SPDX-License-Identifier: MIT
# ROOT/etc/cudnnvm.conf: "store =" is the default store (--store and
# CUDNNVM_STORE first, --user ignores it; a relative path is refused), "user =
# yes" makes --user the default, "cuda ="
# the toolkit a command without --cuda means (before /usr/local/cuda; one that
# no toolkit has is exit 1 naming the file); each key is known (no warning).
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"
# shellcheck source-path=SCRIPTDIR source=lib_activate.sh
. "$TESTS_DIR/integration/lib_activate.sh"

act_root
mkdir -p "$ROOT/etc"
conf() { printf '%s\n' "$@" >"$ROOT/etc/cudnnvm.conf"; }

# ------------------------------------------------------------ store =
conf "store = /srv/cudnn-store"
A=$(archive 8.9.7.29 11)
cvm --manifests "$MAN" install 8.9.7 --cuda 11.8 --archive "$A"
assert_rc 0 "install with 'store =' in the config exits 0"
assert_dir "$ROOT/srv/cudnn-store/versions/$ID897" "the version is in the configured store (inside the root)"
assert_absent "$ROOT/opt/cudnnvm" "and the default store is not made"
check "no warning about the key" test ! -s "$CVM_ERRF"
STORE=$ROOT/srv/cudnn-store
cvm --json list
assert_json '[v["id"] for v in d["installed"]] == ["'"$ID897"'"]' "list reads the configured store"
cvm --store "$ROOT/opt/other" --json list
assert_json 'd["installed"] == []' "--store wins over the config"
CUDNNVM_STORE=$ROOT/opt/other cvm --json list
assert_json 'd["installed"] == []' "CUDNNVM_STORE wins over the config"
conf "store = srv/relative"
cvm list
assert_rc 2 "a relative 'store =' is exit 2"
assert_err_contains "store 'srv/relative' is not an absolute path" "and the message names the value"
assert_err_contains "/etc/cudnnvm.conf" "and the file"

# ------------------------------------------------------------- cuda =
conf "store = /srv/cudnn-store"
inst 9.1.1.17 12.4
cvm use 8.9.7 --cuda 11.8 --no-smoke
must "use 8.9.7 --cuda 11.8"
cvm use 9.1.1 --cuda 12.4 --no-smoke
must "use 9.1.1 --cuda 12.4"
cvm --json current
assert_rc 0 "current without --cuda"
conf "store = /srv/cudnn-store" "cuda = 12.4"
cvm --json which
assert_rc 0 "which with 'cuda = 12.4' exits 0"
assert_output_contains "cuda-12.4" "which without --cuda: the configured toolkit, not /usr/local/cuda's 11.8"
cvm prefix
assert_rc 0 "prefix without --cuda exits 0"
assert_output_contains "$ID911" "prefix without a version: the version active for the configured 12.4"
conf "store = /srv/cudnn-store"
cvm prefix
assert_output_contains "$ID897" "without the key: the version active for /usr/local/cuda's 11.8"
conf "store = /srv/cudnn-store" "cuda = 10.2"
cvm prefix
assert_rc 1 "'cuda =' naming a toolkit that is not there: exit 1"
assert_err_contains "'/etc/cudnnvm.conf' names cuda 10.2, and there is no such toolkit" "and the message says so"
check "one error line only" test "$(grep -c 'error:' "$CVM_ERRF")" = 1
cvm prefix --cuda 11.8
assert_rc 0 "--cuda wins over the config"
conf "store = /srv/cudnn-store" "cuda = twelve"
cvm prefix
assert_rc 2 "'cuda =' that is not X.Y: exit 2"
assert_err_contains "cuda 'twelve' is not a CUDA version X.Y" "and the message names the value"

# ------------------------------------------------------------- user =
conf "user = yes"
cvm --json list
assert_rc 0 "list with 'user = yes' exits 0"
assert_json 'd["installed"] == []' "'user = yes': the per-user store (empty), not the system one"
cvm use 9.1.1 --cuda 12.4 --no-smoke
assert_rc 1 "'user = yes': use is refused as with --user (exit 1)"
assert_err_contains "with --user nothing system-wide is changed" "and says why"
cvm --store "$ROOT/srv/cudnn-store" --json list
assert_json 'sorted(v["id"] for v in d["installed"]) == sorted(["'"$ID897"'", "'"$ID911"'"])' "'user = yes': --store is used as given"
conf "user = no" "store = /srv/cudnn-store"
cvm --json list
assert_json 'len(d["installed"]) == 2' "'user = no': the configured store"
conf "user = maybe"
cvm list
assert_rc 2 "'user = maybe': exit 2"
assert_err_contains "user 'maybe': expected yes or no" "and the message names the value"

# ------------------------------------------------------- unknown keys
conf "store = /srv/cudnn-store" "stroe = /x"
cvm list
assert_rc 0 "an unknown key: still exit 0"
assert_err_contains "unknown key 'stroe'" "it is named in a warning"
assert_err_contains "known keys: mirror, store, user, cuda, modules, modules_format" "with the keys that are known"
finish
