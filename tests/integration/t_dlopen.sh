#!/bin/bash
# SPDX-License-Identifier: MIT
# libarchive, libcurl and libcrypto are loaded when an archive is read, a
# download starts or a file is hashed, not at start-up: the binary does not
# link them, commands that need none run without them, and a command that
# needs one names the missing library in one line and leaves nothing behind.
# (Test builds: CVM_TEST_LIBARCHIVE / CVM_TEST_LIBCURL / CVM_TEST_LIBCRYPTO
# name the library to load instead.)
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"
# shellcheck source-path=SCRIPTDIR source=lib_activate.sh
. "$(dirname "$0")/lib_activate.sh"

MAN=$TEST_TMP/manifests
A8=$(mkcudnn 8.9.7.29 11 --manifest "$MAN")
ID8=$(id_of 8.9.7.29 11)
MIR=$TEST_TMP/mirror
mkdir -p "$MIR/cudnn/linux-x86_64"
cp "$A8" "$MIR/cudnn/linux-x86_64/"

needed=$(readelf -d "$CUDNNVM" 2>/dev/null | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
if [ -z "$needed" ]; then
	not_ok "readelf lists the binary's libraries" "readelf -d printed no NEEDED entry"
else
	case " $(echo $needed) " in
	*libarchive* | *libcurl* | *libcrypto*) not_ok "the binary links none of libarchive, libcurl, libcrypto" "$needed" ;;
	*) ok "the binary links none of libarchive, libcurl, libcrypto" ;;
	esac
fi

# Commands that read no archive and download nothing run without both.
export CVM_TEST_LIBARCHIVE=$TEST_TMP/none/libarchive.so.13 CVM_TEST_LIBCURL=$TEST_TMP/none/libcurl.so.4
cvm --manifests "$MAN" list --available
assert_rc 0 "list --available runs without libarchive and libcurl"
assert_out_contains "8.9.7.29" "and lists the catalogue"

# install needs libarchive: one line naming it, nothing left.
cvm --manifests "$MAN" install 8.9.7 --cuda 11.8 --archive "$A8"
assert_rc 1 "install without a loadable libarchive exits 1"
assert_err_contains "$TEST_TMP/none/libarchive.so.13 is not loadable" "the message names the library"
assert_err_contains "apt-get install libarchive13" "and the package that brings it"
assert_error_line "one error line"
assert_versions "" "no version is installed"
assert_store_clean "no staging is left"

# A download needs libcurl: one line naming it, nothing left in the cache.
unset CVM_TEST_LIBARCHIVE
cvm --manifests "$MAN" --mirror "file://$MIR/" install 8.9.7 --cuda 11.8
assert_rc 1 "a download without a loadable libcurl exits 1"
assert_err_contains "$TEST_TMP/none/libcurl.so.4 is not loadable" "the message names the library"
assert_err_contains "apt-get install libcurl4" "and the package that brings it"
assert_versions "" "no version is installed"
assert_empty_or_absent "$STORE/cache" "nothing is left in the cache"
# The same install with the archive given needs no libcurl.
cvm --manifests "$MAN" install 8.9.7 --cuda 11.8 --archive "$A8"
assert_rc 0 "install --archive needs no libcurl"
assert_versions "$ID8" "the version is installed"

# Hashing needs libcrypto: the commands that hash say so before they start.
unset CVM_TEST_LIBCURL
export CVM_TEST_LIBCRYPTO=$TEST_TMP/none/libcrypto.so.3
cvm --manifests "$MAN" install 8.9.7 --cuda 11.8 --archive "$A8"
assert_rc 1 "install without a loadable libcrypto exits 1"
assert_err_contains "cannot compute SHA-256: $TEST_TMP/none/libcrypto.so.3 is not loadable" "the message names the library"
assert_err_contains "apt-get install libssl3" "and the package that brings it"
assert_error_line "one error line"
assert_versions "$ID8" "the installed version is all there is"
assert_store_clean "no staging is left"
cvm verify "$ID8"
assert_rc 1 "verify without a loadable libcrypto exits 1"
assert_error_line "with one error line"
# Switching hashes nothing: use and current run without it.
make_toolkits
cvm use 8.9.7 --cuda 11.8 --no-smoke
assert_rc 0 "use runs without libcrypto"
assert_uses "$TK11" 11.8 "$ID8" "and activates the version"
cvm current
assert_rc 0 "current runs without libcrypto"
assert_out_contains "$ID8" "and names the active version"
unset CVM_TEST_LIBCRYPTO

# With the real libraries, they load when needed.
new_root
cvm --manifests "$MAN" --mirror "file://$MIR/" install 8.9.7 --cuda 11.8
assert_rc 0 "a download loads libcurl and libarchive when it needs them"
assert_versions "$ID8" "the downloaded version is installed"
cvm verify "$ID8"
assert_rc 0 "and verifies"
finish
