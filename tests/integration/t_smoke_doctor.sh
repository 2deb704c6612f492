#!/bin/bash
# SPDX-License-Identifier: MIT
# The smoke command without a GPU (exit 77, the loader part reported), the
# failures it must name (headers and library of different versions, a missing
# sub-library, a file others cannot read), and doctor on a root with three
# copies (the store, a hand copy in a toolkit, a conda env on LD_LIBRARY_PATH).
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"
# shellcheck source-path=SCRIPTDIR source=lib_activate.sh
. "$(dirname "$0")/lib_activate.sh"

act_root
inst 8.9.7.29 11.8
use_ok 8.9.7 --cuda 11.8
V=$STORE/versions/$ID897

# A clean activation: the loader part passes, no GPU here: 77.
cvm smoke --cuda 11.8
assert_rc 77 "smoke without a GPU exits 77"
assert_out_contains "cuDNN 8907" "it reports the library's version"
assert_out_contains "skipped" "it says the GPU part was skipped"
cvm --json smoke --cuda 11.8
assert_rc 77 "smoke --json exits 77 too"
assert_json 'd["header_version"] == 8907 and d["library_version"] == 8907 and d["cudart_version"] == 11080' \
	"smoke --json: header, library and cudart versions"
assert_json 'isinstance(d["gpu"]["skipped"], str) and d["gpu"]["skipped"] and d["gpu"]["passed"] is None and d["library"].endswith("/lib64/libcudnn.so.8")' \
	"smoke --json: the library loaded through the toolkit, the GPU part skipped"
cvm smoke --cuda 11.8 --no-gpu
assert_rc 77 "smoke --no-gpu exits 77"
cvm smoke --cuda 11.8 --device x
assert_rc 2 "a bad --device is a usage error"

# Headers of another version than the library: 4, saying which.
chmod u+w "$V/include/cudnn_version.h"
cp "$V/include/cudnn_version.h" "$TEST_TMP/h.saved"
sed -i 's/#define CUDNN_PATCHLEVEL 7/#define CUDNN_PATCHLEVEL 6/' "$V/include/cudnn_version.h"
cvm smoke --cuda 11.8
assert_rc 4 "headers of 8.9.6 over a library of 8.9.7: exit 4"
assert_err_contains "headers" "the message names the headers"
cp "$TEST_TMP/h.saved" "$V/include/cudnn_version.h"

# A missing sub-library: 4, naming it.
mv "$V/lib/libcudnn_cnn_infer.so.8.9.7" "$TEST_TMP/cnn.saved"
cvm smoke --cuda 11.8
assert_rc 4 "a missing sub-library: exit 4"
assert_err_contains "libcudnn_cnn_infer.so.8" "the message names the missing sub-library"
mv "$TEST_TMP/cnn.saved" "$V/lib/libcudnn_cnn_infer.so.8.9.7"

# A file other users cannot read: 4, naming it.
chmod 600 "$V/lib/libcudnn_ops_infer.so.8.9.7"
cvm smoke --cuda 11.8
assert_rc 4 "a sub-library only root can read: exit 4"
assert_err_contains "not readable by other users" "the message says who cannot read it"
chmod 644 "$V/lib/libcudnn_ops_infer.so.8.9.7"
cvm smoke --cuda 11.8
assert_rc 77 "repaired: back to 77"

# doctor with three copies: the store's (active for 11.8), a hand copy in
# CUDA 12.4, and a conda env on LD_LIBRARY_PATH.
hand_copy "$(archive 9.1.1.17 12)" "$TK12"
CONDA=$TEST_TMP/conda/envs/torch
mkdir -p "$CONDA/lib"
x=$TEST_TMP/condax
mkdir -p "$x"
tar -xJf "$(archive 9.1.0.70 12)" -C "$x"
cp -a "$x"/*/lib/libcudnn.so* "$CONDA/lib/"
cvm doctor
assert_rc 0 "doctor with no LD_LIBRARY_PATH: exit 0 (each toolkit loads its own)"
assert_out_contains "9.1.1" "doctor sees the hand copy in CUDA 12.4"
assert_out_contains "8.9.7" "doctor sees the store's version"
# The listing's columns are as wide as their widest entry, whatever the versions' lengths.
sed -n '/^cuDNN copies found: /,/^NVIDIA driver/p' "$CVM_OUTF" | sed '1d;$d' >"$TEST_TMP/rows"
diag "$(cat "$TEST_TMP/rows")"
check "doctor lists the two copies, one line each" test "$(wc -l <"$TEST_TMP/rows")" = 2
check "doctor's columns line up: 'headers' and the folder at one offset on every line" \
	test "$(awk '{ print index($0, " headers "), index($0, " /") }' "$TEST_TMP/rows" | sort -u | wc -l)" = 1
LD_LIBRARY_PATH=$CONDA/lib cvm doctor
assert_rc 1 "doctor with a conda env on LD_LIBRARY_PATH: exit 1"
assert_out_contains "$CONDA/lib" "doctor lists the conda copy"
assert_output_matches "CUDA 12.4 .*programs load $CONDA/lib/libcudnn.so.9.* first on LD_LIBRARY_PATH" \
	"doctor says CUDA 12.4's programs load the conda copy, and why"
assert_out_contains "not the toolkit's own" "doctor flags that it is not the toolkit's own"
assert_out_contains "lacks libcudnn_ops.so.9" "doctor flags the conda copy's missing sub-libraries"
assert_out_contains "fix:" "each problem comes with a fix"
LD_LIBRARY_PATH=$CONDA/lib cvm -q doctor
assert_rc 1 "doctor -q with problems: exit 1"
check "doctor -q prints only the problems and their fixes" \
	test -z "$(grep -v -e '^problem: ' -e '^    fix: ' "$CVM_OUTF")" -a ! -s "$CVM_ERRF"
assert_out_contains "$CONDA/lib" "doctor -q names the problem (the conda copy)"
check "doctor -q: no list of copies, no summary" eval '! grep -q -e "copies found" -e "problems* found" "$CVM_OUTF"'
cvm -q doctor
assert_rc 0 "doctor -q without problems: exit 0"
check "doctor -q without problems prints nothing" test ! -s "$CVM_OUTF" -a ! -s "$CVM_ERRF"
LD_LIBRARY_PATH=$CONDA/lib cvm --json doctor
assert_json 'len(d["copies"]) >= 3 and any(c["managed"] for c in d["copies"]) and d["problems"]' \
	"doctor --json: three copies or more, one managed, problems listed"

finish
