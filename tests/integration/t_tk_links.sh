#!/bin/bash
# SPDX-License-Identifier: MIT
# A toolkit laid out as NVIDIA's packages lay it out, include/ and lib64/ both
# links into targets/x86_64-linux/: the links file that use writes is read
# back as cudnnvm's own by the next use, rollback and doctor.
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"
# shellcheck source-path=SCRIPTDIR source=lib_activate.sh
. "$TESTS_DIR/integration/lib_activate.sh"

act_root
inst 9.1.1.17 12.4
inst 9.1.0.70 12.4
T=$TK12/targets/x86_64-linux
mkdir -p "$T/include"
mv "$TK12/include/cuda_runtime_api.h" "$T/include/"
rmdir "$TK12/include"
ln -s targets/x86_64-linux/include "$TK12/include"

cvm use 9.1.1 --cuda 12.4 --no-smoke
assert_rc 0 "use 9.1.1 on a toolkit whose include/ and lib64/ are links: exit 0"
assert_symlink "$T/include/cudnn.h" "../../../../../../opt/cudnnvm/active/cuda-12.4/include/cudnn.h" \
	"cudnn.h is a link in the real include folder"
cvm use 9.1.0 --cuda 12.4 --no-smoke
assert_rc 0 "use 9.1.0 after it: exit 0"
assert_err_lacks "ignored" "use 9.1.0: no line of its own links file is refused"
assert_err_lacks "left as found" "use 9.1.0: no path of its own is left as found"
cvm doctor
assert_out_lacks "links', line" "doctor: no line of the links file is reported"
cvm rollback --cuda 12.4 --no-smoke
assert_rc 0 "rollback: exit 0"
assert_err_lacks "ignored" "rollback: no line of the links file is refused"
finish
