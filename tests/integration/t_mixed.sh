#!/bin/bash
# SPDX-License-Identifier: MIT
# One release per version: install and adopt refuse a copy whose library files
# come from different releases (exit 3, each odd file named with the version it
# carries: its file name, soname, version string or version-check constant);
# verify reports it for a version installed before the check.
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"
# shellcheck source-path=SCRIPTDIR source=lib_activate.sh
. "$(dirname "$0")/lib_activate.sh"

act_root
N=0
# next; next
A=$(mixed ARGS...): a 9.1.1.17 cuda12 archive built with ARGS, in a
# catalogue of its own ($M, set by next).
next() {
	N=$((N + 1))
	M=$TEST_TMP/man-mixed-$N
}
mixed() {
	mkdir -p "$TEST_TMP/mixed-$N"
	sh "$FIXTURES/mkcudnn.sh" "$TEST_TMP/mixed-$N" 9.1.1.17 12 --manifest "$M" "$@"
}
ID=$(id_of 9.1.1.17 12)

# A whole release installs: its files carry evidence, all of 9.1.1.
next
A=$(mixed)
cvm --manifests "$M" install 9.1.1 --cuda 12.4 --archive "$A"
assert_rc 0 "a copy of one release installs"
cvm verify "$ID"
assert_rc 0 "verify of a copy of one release: exit 0"
cvm --manifests "$M" uninstall "$ID"
must "uninstall the clean copy"

# The sub-library's version check says another release: exit 3, naming the file and its version.
next
A=$(mixed --mix cudnn_cnn=9.0.0)
cvm --manifests "$M" install 9.1.1 --cuda 12.4 --archive "$A"
assert_rc 3 "libcudnn_cnn of 9.0.0 in a 9.1.1 archive: exit 3"
assert_err_contains "lib/libcudnn_cnn.so.9.1.1 is cuDNN 9.0.0" "the message names the odd file and the version it carries"
assert_err_contains "cudnnCnnVersionCheck" "it says what carries the version (the version-check entry point)"
assert_versions "" "nothing is installed"
assert_store_clean "the staging area is empty after the refusal"

# The same refusal from what the extraction read of each library as it wrote
# it, in the confined process and, with --verify-first, in this one: -v says
# how many were read then (the checks after it do not read them again).
for how in "" --verify-first; do
	cvm --manifests "$M" -v install 9.1.1 --cuda 12.4 --archive "$A" $how
	assert_rc 3 "install -v ${how:-(decoding while verifying)}: exit 3"
	assert_err_contains "; 8 libraries read as written" "${how:-the confined decoding}: the 8 libraries were read as they were written"
	assert_err_contains "lib/libcudnn_cnn.so.9.1.1 is cuDNN 9.0.0" "${how:-the confined decoding}: the same odd file"
	assert_store_clean "${how:-the confined decoding}: the staging area is empty"
done

# A version string (libcudnn_graph's cudnn_version_...).
next
A=$(mixed --mix cudnn_graph=9.0.0)
cvm --manifests "$M" install 9.1.1 --cuda 12.4 --archive "$A"
assert_rc 3 "libcudnn_graph of 9.0.0: exit 3"
assert_err_contains "lib/libcudnn_graph.so.9.1.1 is cuDNN 9.0.0" "the version string names libcudnn_graph's release"

# A file of another release under its own name.
next
A=$(mixed --mix-file cudnn_adv=9.0.0)
cvm --manifests "$M" install 9.1.1 --cuda 12.4 --archive "$A"
assert_rc 3 "libcudnn_adv.so.9.0.0 in a 9.1.1 archive: exit 3"
assert_err_contains "lib/libcudnn_adv.so.9.0.0 is cuDNN 9.0.0 (its file name)" "the file name is evidence"

# Another major's soname.
next
A=$(mixed --mix cudnn_ops=8.9.7)
cvm --manifests "$M" install 9.1.1 --cuda 12.4 --archive "$A"
assert_rc 3 "libcudnn_ops with an 8.x soname: exit 3"
assert_err_contains "lib/libcudnn_ops.so.9.1.1 is cuDNN 8 (its soname)" "the soname's major is evidence"

# Two odd files: one error line, and a line for the other.
next
A=$(mixed --mix cudnn_cnn=9.0.0 --mix cudnn_adv=9.0.1)
cvm --manifests "$M" install 9.1.1 --cuda 12.4 --archive "$A"
assert_rc 3 "two odd files: exit 3"
assert_error_line "two odd files: one error line"
assert_err_contains "lib/libcudnn_adv.so.9.1.1 is cuDNN 9.0.1" "the first odd file is named"
assert_err_contains "lib/libcudnn_cnn.so.9.1.1 is cuDNN 9.0.0" "and the second one"

# verify: a version installed before the check, whose libcudnn_cnn is 9.0.0's.
next
A=$(mixed)
cvm --manifests "$M" install 9.1.1 --cuda 12.4 --archive "$A"
must "install the clean copy again"
X=$TEST_TMP/x-mixed
mkdir -p "$X"
next
tar -xJf "$(mixed --mix cudnn_cnn=9.0.0)" -C "$X"
V=$STORE/versions/$ID
chmod u+w "$V/lib" "$V/lib/libcudnn_cnn.so.9.1.1" "$V/.cudnnvm" "$V/.cudnnvm/files.sha256"
cp "$X"/*/lib/libcudnn_cnn.so.9.1.1 "$V/lib/libcudnn_cnn.so.9.1.1"
sum=$(sha256 "$V/lib/libcudnn_cnn.so.9.1.1")
sed -i "s|^[0-9a-f]*  lib/libcudnn_cnn.so.9.1.1\$|$sum  lib/libcudnn_cnn.so.9.1.1|" "$V/.cudnnvm/files.sha256"
cvm verify "$ID"
assert_rc 3 "verify of a mixed copy installed before the check: exit 3"
assert_output_contains "mixed release: lib/libcudnn_cnn.so.9.1.1 is cuDNN 9.0.0" "verify names the odd file and its version"
cvm --json verify "$ID"
assert_rc 3 "verify --json of the mixed copy: exit 3"

# A store bundle of that copy: installing it elsewhere is refused as the archive would be.
cvm export "$ID" "$TEST_TMP/mixed-bundle.tar"
if [ "$RC" = 0 ]; then
	SAVED_ROOT=$ROOT
	new_root
	cvm install --bundle "$TEST_TMP/mixed-bundle.tar"
	assert_rc 3 "install --bundle of a mixed copy: exit 3"
	assert_err_contains "lib/libcudnn_cnn.so.9.1.1 is cuDNN 9.0.0" "install --bundle names the odd file"
	assert_versions "" "install --bundle: nothing is installed"
	ROOT=$SAVED_ROOT
	STORE=$ROOT/opt/cudnnvm
else
	not_ok "set-up: export the mixed copy" "exit $RC: $ERR"
fi

# adopt: a hand copy in a toolkit that mixes releases is refused, the toolkit untouched.
act_root
next
hand_copy "$(mixed --mix cudnn_cnn=9.0.0)" "$TK12"
names_before=$(toolkit_names "$TK12")
cvm adopt --cuda 12.4
assert_rc 3 "adopt of a mixed hand copy: exit 3"
assert_err_contains "libcudnn_cnn.so.9.1.1 is cuDNN 9.0.0" "adopt names the odd file and its version"
assert_versions "" "adopt: nothing is in the store"
check "adopt: the toolkit's names are unchanged" test "$names_before" = "$(toolkit_names "$TK12")"
assert_file "$LIB12/libcudnn_cnn.so.9.1.1" "adopt: the hand-copied file is still there"

# The smoke test names the odd sub-library: a used version whose libcudnn_cnn
# was replaced afterwards by 9.0.0's, which also writes to stderr as cuDNN's
# logging does.
act_root
next
A=$(mixed)
cvm --manifests "$M" install 9.1.1 --cuda 12.4 --archive "$A"
must "install the clean copy for the smoke test"
cvm use 9.1.1 --cuda 12.4 --no-smoke
must "use it"
V=$STORE/versions/$ID/lib
cat >"$TEST_TMP/oddcnn.c" <<'C'
#include <stddef.h>
#include <stdio.h>
__attribute__((constructor)) static void say(void) { fprintf(stderr, "I! CuDNN (v90000) fake cnn loaded\n"); }
int cudnnCnnVersionCheck(size_t v) { return v == 90000u ? 0 : 3001; }
C
chmod u+w "$V" "$V/libcudnn_cnn.so.9.1.1"
${CC:-cc} -shared -fPIC -Wl,-soname,libcudnn_cnn.so.9 -o "$V/libcudnn_cnn.so.9.1.1" "$TEST_TMP/oddcnn.c"
chmod 755 "$V/libcudnn_cnn.so.9.1.1"
cvm smoke --cuda 12.4
assert_rc 4 "smoke of a copy whose libcudnn_cnn is 9.0.0's: exit 4"
assert_err_contains "libcudnn_cnn.so.9 ($V/libcudnn_cnn.so.9.1.1) is cuDNN 9.0.0 (cudnnCnnVersionCheck), the rest is cuDNN 9.1.1" \
	"smoke names the odd sub-library, its path and its version"
assert_out_contains "cuDNN and the loader said:" "cuDNN's own lines are under the report"
assert_out_contains "I! CuDNN (v90000) fake cnn loaded" "with what it wrote"
if grep -q "fake cnn loaded" "$CVM_ERRF"; then not_ok "cuDNN's line is not printed above the report on stderr"; else ok "cuDNN's line is not printed above the report on stderr"; fi
assert_json "d['result'] == 'failed' and 'libcudnn_cnn' in d['reason']" "the failure is recorded with its reason" "$STORE/smoke/$ID.json"

# A sub-library that does not load: named, with the loader's reason.
printf 'int cudnn_missing_dep(void);\nint f(void) { return cudnn_missing_dep(); }\n' >"$TEST_TMP/dep.c"
mkdir -p "$TEST_TMP/deplib"
printf 'int cudnn_missing_dep(void) { return 1; }\n' >"$TEST_TMP/deplib/d.c"
${CC:-cc} -shared -fPIC -Wl,-soname,libcvmnotthere.so.1 -o "$TEST_TMP/deplib/libcvmnotthere.so" "$TEST_TMP/deplib/d.c"
# libcudnn_cnn back as it was
mkdir -p "$TEST_TMP/clean"
tar -xJf "$A" -C "$TEST_TMP/clean"
cp "$TEST_TMP"/clean/*/lib/libcudnn_cnn.so.9.1.1 "$V/libcudnn_cnn.so.9.1.1"
chmod u+w "$V/libcudnn_adv.so.9.1.1"
${CC:-cc} -shared -fPIC -Wl,-soname,libcudnn_adv.so.9 -Wl,--no-as-needed -o "$V/libcudnn_adv.so.9.1.1" "$TEST_TMP/dep.c" -L"$TEST_TMP/deplib" -lcvmnotthere
chmod 755 "$V/libcudnn_adv.so.9.1.1"
rm -rf "$TEST_TMP/deplib"
cvm smoke --cuda 12.4
assert_rc 4 "smoke of a copy whose libcudnn_adv does not load: exit 4"
assert_err_contains "libcudnn_adv.so.9 does not load: libcvmnotthere.so.1" "smoke names the sub-library that does not load, and why"

finish
