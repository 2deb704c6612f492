#!/bin/bash
# SPDX-License-Identifier: MIT
# Privilege and trust, as root on a shared server (the rule is trust.h's):
# root runs (nvcc) and loads (doctor's child) nothing another user could have
# written, and says what it skipped; use refuses to write through a link
# planted in a toolkit or into a folder another user controls; the store is
# checked from "/" down (and through links); verify names files others can
# write; the lock is one that only the store's owner can take; manifests
# others can write are refused; doctor says what it did not check.
# "Another user" is simulated by chown to nobody.
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"
# shellcheck source-path=SCRIPTDIR source=lib_activate.sh
. "$TESTS_DIR/integration/lib_activate.sh"

if [ "$(id -u)" != 0 ] || ! id nobody >/dev/null 2>&1 || ! command -v setpriv >/dev/null; then
	skip "privilege tests" "need root, setpriv and a user nobody"
	finish
fi
NB=$(id -u nobody)

act_root
inst 8.9.7.29 11.8
inst 8.9.6.50 11.8
inst 9.1.1.17 12.4
use_ok 8.9.7 --cuda 11.8 --no-smoke

# ------------------------------------------------ 1. nvcc another user wrote
# A toolkit whose version only nvcc knows (no version.json, no header); its
# nvcc leaves a mark when it runs.
MARK=$TEST_TMP/nvcc-ran
TK13=$ROOT/usr/local/cuda-13.1
mkdir -p "$TK13/bin"
cat >"$TK13/bin/nvcc" <<EOF
#!/bin/sh
echo ran >>"$MARK"
echo "Cuda compilation tools, release 13.1, V13.1.80"
EOF
chmod 755 "$TK13/bin/nvcc"

chown -R nobody "$TK13"
rm -f "$MARK"
cvm toolkits
assert_rc 0 "toolkits with a toolkit folder owned by another user: exit 0"
assert_absent "$MARK" "toolkits did not run the nvcc of a folder owned by another user"
assert_err_matches "skipping .*cuda-13.1/bin/nvcc.*another user \\(uid $NB\\)" \
	"toolkits says it skipped that nvcc, and why (another user, uid $NB)"
assert_out_lacks "13.1" "toolkits does not list a toolkit whose version nothing trusted gave"
cvm --json toolkits
assert_json 'any(s["path"].endswith("/cuda-13.1") and "nvcc" in s["what"] and "another user" in s["why"] for s in d["skipped"])' \
	"toolkits --json: the skipped nvcc is in \"skipped\", with the folder and why"
cvm current
assert_absent "$MARK" "current did not run it either"
assert_err_contains "cuda-13.1/bin/nvcc" "current says what it skipped"
cvm --json current
assert_json 'any("nvcc" in s["what"] for s in d["skipped"])' "current --json: \"skipped\" names it"
cvm doctor
assert_absent "$MARK" "doctor did not run it either"

# The file root's, but the folder above it writable by every user.
chown -R root "$TK13"
chmod o+w "$TK13/bin"
cvm toolkits
assert_absent "$MARK" "a root-owned nvcc in a folder every user can write: not run"
assert_err_matches "cuda-13.1/bin'?: every user can write it" "the message names that folder"
chmod o-w "$TK13/bin"

# R's own chain: the --root folder itself writable by every user.
chmod o+w "$ROOT"
cvm toolkits
assert_absent "$MARK" "with --root R writable by every user, nothing under R is run"
assert_err_contains "'$ROOT': every user can write it" "the message names the root folder"
chmod o-w "$ROOT"

# The control: all root's, not writable by others: nvcc runs (the test can see a run).
cvm toolkits
assert_rc 0 "toolkits with a trusted nvcc: exit 0"
assert_file "$MARK" "control: a trusted nvcc is run (the mark appears)"
assert_out_contains "13.1" "control: its version is listed"
rm -rf "$TK13" "$MARK"

# ------------------------------------- 1b. a libcudnn another user wrote
# doctor loads each copy in a child: a constructor there would run as root.
LMARK=$TEST_TMP/ctor-ran
TK20=$ROOT/usr/local/cuda-12.8
mkdir -p "$TK20/lib64" "$TK20/include"
printf '{"cuda":{"name":"CUDA SDK","version":"12.8.0"}}\n' >"$TK20/version.json"
cat >"$TEST_TMP/ctor.c" <<EOF
#include <stdio.h>
__attribute__((constructor)) static void mark(void)
{
	FILE *f = fopen("$LMARK", "a");
	if (f) { fputs("loaded\n", f); fclose(f); }
}
unsigned long cudnnGetVersion(void) { return 90101; }
unsigned long cudnnGetCudartVersion(void) { return 12080; }
EOF
${CC:-cc} -shared -fPIC -o "$TK20/lib64/libcudnn.so.9" "$TEST_TMP/ctor.c"
chown -R nobody "$TK20"
rm -f "$LMARK"
cvm doctor
assert_absent "$LMARK" "doctor did not load a libcudnn.so.9 another user owns (no constructor ran)"
assert_err_matches "skipping loading .*cuda-12.8/lib64/libcudnn.so.9.*another user" \
	"doctor says it did not load it, and why"
assert_out_contains "not checked: /usr/local/cuda-12.8/lib64/libcudnn.so.9" \
	"doctor lists that copy as not checked"
assert_out_lacks "does not load" "doctor does not call the skipped copy broken"
cvm --json doctor
assert_json 'any("cuda-12.8" in n["what"] for n in d["not_checked"]) and any("libcudnn.so.9" in s["what"] for s in d["skipped"])' \
	"doctor --json: \"not_checked\" and \"skipped\" name it"
chown -R root "$TK20"
cvm doctor
assert_file "$LMARK" "control: a root-owned copy is loaded (the constructor's mark appears)"
rm -rf "$TK20" "$LMARK"

# smoke loads through the toolkit's lib folder: not when another user owns it.
cvm smoke --cuda 11.8
assert_rc 77 "set-up: smoke of 8.9.7 for 11.8 passes its loader part (77: no GPU)"
chown nobody "$LIB11"
cvm smoke --cuda 11.8
assert_rc 4 "smoke with the toolkit's lib folder owned by another user: exit 4, nothing loaded"
assert_err_contains "not loading" "smoke says it did not load the library"
assert_err_contains "$LIB11': it belongs to another user (uid $NB)" "smoke names the folder and its owner"
chown root "$LIB11"
# One sub-library (reached through the toolkit's link) another user's file.
SUB=$STORE/versions/$ID897/lib/libcudnn_ops_infer.so.8.9.7
chown nobody "$SUB"
cvm smoke --cuda 11.8
assert_rc 4 "smoke with one sub-library file owned by another user: exit 4, nothing loaded"
assert_err_contains "'$SUB': it belongs to another user" "smoke names that file"
chown root "$SUB"
cvm smoke --cuda 11.8
assert_rc 77 "control: all root's again: smoke's loader part passes (77)"

# --------------------------------- 2. use never writes through a planted link
mv "$TK11/include" "$TK11/include.real"
ln -s /etc "$TK11/include"
snapshot "$ROOT" >"$TEST_TMP/before.snap"
cvm use 8.9.6 --cuda 11.8 --no-smoke
assert_rc 1 "use with the toolkit's include -> /etc: exit 1"
assert_err_contains "refusing to write into '/usr/local/cuda-11.8/include': it leads to '/etc'" \
	"the message names the folder and where it leads"
assert_err_contains "outside the toolkit '/usr/local/cuda-11.8'" "the message says it leads outside the toolkit"
check "no cudnn*.h was created in /etc" test -z "$(find "$ROOT/etc" -name 'cudnn*.h')"
check "8.9.7 is still active for 11.8" test "$(readlink "$STORE/active/cuda-11.8")" = "../versions/$ID897"
snapshot "$ROOT" >"$TEST_TMP/after.snap"
assert_same_snapshot "$TEST_TMP/before.snap" "$TEST_TMP/after.snap" "the refused use changed nothing under the root"
rm "$TK11/include"
mv "$TK11/include.real" "$TK11/include"

# The real folder behind lib64 owned by another user.
chown nobody "$LIB12"
snapshot "$ROOT" >"$TEST_TMP/before.snap"
cvm use 9.1.1 --cuda 12.4 --no-smoke
assert_rc 1 "use with the toolkit's lib folder owned by another user: exit 1"
assert_err_contains "'/usr/local/cuda-12.4/targets/x86_64-linux/lib'" "the message names the real lib folder"
assert_err_contains "another user (uid $NB)" "the message says who owns it"
snapshot "$ROOT" >"$TEST_TMP/after.snap"
assert_same_snapshot "$TEST_TMP/before.snap" "$TEST_TMP/after.snap" "that refused use changed nothing"
chown root "$LIB12"

# The include folder writable by every user.
chmod o+w "$TK12/include"
cvm use 9.1.1 --cuda 12.4 --no-smoke
assert_rc 1 "use with the toolkit's include writable by every user: exit 1"
assert_err_contains "every user can write it" "the message says every user can write it"
chmod o-w "$TK12/include"

# ROOT/etc/ld.so.conf.d a link to somewhere else.
mkdir -p "$ROOT/elsewhere"
mv "$ROOT/etc/ld.so.conf.d" "$ROOT/etc/ld.so.conf.d.real"
ln -s ../elsewhere "$ROOT/etc/ld.so.conf.d"
snapshot "$ROOT" >"$TEST_TMP/before.snap"
cvm use 9.1.1 --cuda 12.4 --no-smoke
assert_rc 1 "use with /etc/ld.so.conf.d -> ../elsewhere: exit 1"
assert_err_contains "'/etc/ld.so.conf.d'" "the message names /etc/ld.so.conf.d"
check "nothing was written into /elsewhere" test -z "$(ls -A "$ROOT/elsewhere")"
snapshot "$ROOT" >"$TEST_TMP/after.snap"
assert_same_snapshot "$TEST_TMP/before.snap" "$TEST_TMP/after.snap" "that refused use changed nothing"
rm "$ROOT/etc/ld.so.conf.d"
mv "$ROOT/etc/ld.so.conf.d.real" "$ROOT/etc/ld.so.conf.d"
rmdir "$ROOT/elsewhere"

# ROOT/etc/ld.so.conf.d owned by another user.
chown nobody "$ROOT/etc/ld.so.conf.d"
cvm use 9.1.1 --cuda 12.4 --no-smoke
assert_rc 1 "use with /etc/ld.so.conf.d owned by another user: exit 1"
assert_err_contains "$ROOT/etc/ld.so.conf.d': it belongs to another user" "the message names it and its owner"
assert_absent "$STORE/active/cuda-12.4" "still no active link for CUDA 12.4"
chown root "$ROOT/etc/ld.so.conf.d"

# The control: all in order, the same use works.
cvm use 9.1.1 --cuda 12.4 --no-smoke
assert_rc 0 "control: use 9.1.1 --cuda 12.4 with trusted folders: exit 0"
assert_symlink "$TK12/include/cudnn.h" "" "control: the header link is made and resolves"

# ldconfig (CUDNNVM_LDCONFIG may name any program): not run when another user could change it.
ldconfig_counter
chown nobody "$LDCONFIG_PROG"
rm -f "$ROOT/etc/ld.so.conf.d/cudnnvm-cuda-11.8.conf"
CUDNNVM_LDCONFIG=$LDCONFIG_PROG cvm use 8.9.6 --cuda 11.8 --no-smoke
assert_rc 0 "use with an ldconfig another user owns: the switch is done (exit 0)"
check "that ldconfig was not run" test "$(ld_calls)" = 0
assert_err_contains "skipping running '$LDCONFIG_PROG'" "use says it did not run it, and why"
chown root "$LDCONFIG_PROG"
rm -f "$ROOT/etc/ld.so.conf.d/cudnnvm-cuda-11.8.conf"
CUDNNVM_LDCONFIG=$LDCONFIG_PROG cvm use 8.9.7 --cuda 11.8 --no-smoke
assert_rc 0 "control: use with a root-owned ldconfig: exit 0"
check "control: that ldconfig was run once" test "$(ld_calls)" = 1

# ------------------------------------------- 3. the store, from "/" down
store_refused() { # PATH NAME: PATH is made writable by every user; install, use refuse
	chmod o+w "$1"
	cvm --manifests "$MAN" install 9.1.0.70 --cuda 12.4 --archive "$(archive 9.1.0.70 12)"
	assert_rc 1 "$2 writable by every user: install refused (exit 1)"
	assert_err_contains "'${3:-$1}" "$2: the message names it"
	cvm use 8.9.6 --cuda 11.8 --no-smoke
	assert_rc 1 "$2 writable by every user: use refused (exit 1)"
	chmod o-w "$1"
}
for d in active toolkits history cache; do
	mkdir -p "$STORE/$d"
	store_refused "$STORE/$d" "STORE/$d" "/opt/cudnnvm/$d"
done
store_refused "$ROOT/opt" "the store's parent (ROOT/opt)"
assert_absent "$STORE/versions/$ID910" "no refused install happened"
check "8.9.7 is still active for 11.8" test "$(readlink "$STORE/active/cuda-11.8")" = "../versions/$ID897"

chown nobody "$STORE/active"
cvm use 8.9.6 --cuda 11.8 --no-smoke
assert_rc 1 "STORE/active owned by another user: use refused (exit 1)"
assert_err_contains "belongs to another user" "the message says another user owns it"
chown root "$STORE/active"

# A store reached through a link in a folder another user owns: they could swap it.
NBDIR=$TEST_TMP/nobody-dir
mkdir -p "$NBDIR"
ln -s "$STORE" "$NBDIR/store"
chown -h nobody "$NBDIR" "$NBDIR/store"
cvm --store "$NBDIR/store" use 8.9.6 --cuda 11.8 --no-smoke
assert_rc 1 "a store path through a link in another user's folder: refused (exit 1)"
assert_err_contains "'$NBDIR'" "the message names that folder"
check "8.9.7 is still active for 11.8" test "$(readlink "$STORE/active/cuda-11.8")" = "../versions/$ID897"

# Sticky folders: /tmp-like is fine while what is in it is root's; a link
# another user owns in it is not.
STICKY=$TEST_TMP/sticky
mkdir -p "$STICKY"
chmod 1777 "$STICKY"
ln -s "$STORE" "$STICKY/root-link"
cvm --store "$STICKY/root-link" env 8.9.7 --cuda 11.8
assert_rc 0 "a store through a root-owned link in a sticky folder every user can write: accepted"
ln -s "$STORE" "$STICKY/nobody-link"
chown -h nobody "$STICKY/nobody-link"
cvm --store "$STICKY/nobody-link" env 8.9.7 --cuda 11.8
assert_rc 1 "the same through a link another user owns in that sticky folder: refused"
assert_err_contains "'$STICKY'" "the message names the sticky folder"
assert_out_lacks "CUDNN_PATH" "refused: env prints no exports"

# verify names files others could write, even when their bytes are intact.
chmod o+w "$STORE/versions/$ID896/lib/libcudnn.so.8.9.6"
cvm verify 8.9.6
assert_rc 3 "verify with a library every user can write: exit 3"
assert_err_contains "every user can write it (mode 0757): lib/libcudnn.so.8.9.6" "verify names that file, and why"
chmod o-w "$STORE/versions/$ID896/lib/libcudnn.so.8.9.6"
cvm verify 8.9.6
assert_rc 0 "verify once it is 0644 again: exit 0"

# ------------------------------------------------- 4. the lock is root's
chmod 0755 "$TEST_TMP"
if ! why=$(as_other_ready nobody); then
	# else "nobody cannot take the lock" would hold only because nobody cannot get there
	not_ok "set-up: user nobody can reach the test folder" "$why"
fi
cvm --manifests "$MAN" install 9.1.0.70 --cuda 12.4 --archive "$(archive 9.1.0.70 12)"
assert_rc 0 "install (takes the lock): exit 0"
assert_mode "$STORE/.lock" 600 "STORE/.lock is 0600"
assert_owner "$STORE/.lock" 0 "STORE/.lock is root's"
if setpriv --reuid=nobody --regid=nogroup --clear-groups flock -s -n "$STORE/.lock" true 2>/dev/null; then
	not_ok "another user cannot take even a shared lock on STORE/.lock"
else
	ok "another user cannot take even a shared lock on STORE/.lock"
fi

# An older 0644 lock that another user holds a shared flock on: replaced.
chmod 0644 "$STORE/.lock"
mkdir -p "$TEST_TMP/nb-w"
chown nobody "$TEST_TMP/nb-w"
HELD=$TEST_TMP/nb-w/holds
STOP=$TEST_TMP/holder-stop
# shellcheck disable=SC2016  # for the holder's shell
setpriv --reuid=nobody --regid=nogroup --clear-groups flock -s "$STORE/.lock" \
	sh -c 'echo held >"$1"; i=0; while [ ! -e "$2" ] && [ $i -lt 6000 ]; do sleep 0.05; i=$((i + 1)); done' \
	sh "$HELD" "$STOP" >/dev/null 2>&1 &
HOLDER=$!
CVM_BG_PIDS+=("$HOLDER")
wait_until test -s "$HELD"
check "set-up: another user holds a shared flock on the old 0644 lock" test -s "$HELD"
cvm --no-wait uninstall 9.1.0 --cuda 12.4
assert_rc 0 "--no-wait uninstall while another user holds the old lock: exit 0 (not locked out)"
assert_mode "$STORE/.lock" 600 "the old lock was replaced by a 0600 one"
assert_absent "$STORE/versions/$ID910" "the uninstall happened"
check "no temporary lock file is left" test -z "$(find "$STORE" -maxdepth 1 -name '.lock.*')"
touch "$STOP"
wait "$HOLDER" 2>/dev/null
chmod 0700 "$TEST_TMP"

# ---------------------------------------------- 5. manifests others can write
chmod o+w "$MAN"
cvm --manifests "$MAN" install 9.1.0.70 --cuda 12.4 --archive "$(archive 9.1.0.70 12)"
assert_rc 1 "--manifests folder writable by every user: install refused (exit 1)"
assert_err_contains "refusing the manifests in '$MAN'" "the message names the folder"
CUDNNVM_MANIFESTS=$MAN cvm install 9.1.0.70 --cuda 12.4 --archive "$(archive 9.1.0.70 12)"
assert_rc 1 "CUDNNVM_MANIFESTS folder writable by every user: refused too"
chmod o-w "$MAN"
M1=$(find "$MAN" -name 'redistrib_*.json' | head -n 1)
chmod o+w "$M1"
cvm --manifests "$MAN" install 9.1.0.70 --cuda 12.4 --archive "$(archive 9.1.0.70 12)"
assert_rc 1 "a manifest file writable by every user: install refused (exit 1)"
assert_err_contains "'$M1'" "the message names the file"
chmod o-w "$M1"
chown nobody "$M1"
cvm --manifests "$MAN" install 9.1.0.70 --cuda 12.4 --archive "$(archive 9.1.0.70 12)"
assert_rc 1 "a manifest file owned by another user: refused (exit 1)"
chown root "$M1"
assert_absent "$STORE/versions/$ID910" "no refused install happened"
cvm --manifests "$MAN" install 9.1.0.70 --cuda 12.4 --archive "$(archive 9.1.0.70 12)"
assert_rc 0 "control: the same install with trusted manifests: exit 0"

# ------------------------------------- 6. doctor says what it did not check
cvm doctor
assert_out_contains "not checked: whether the loader cache knows the active versions" \
	"doctor says it did not check the loader cache (CUDNNVM_LDCONFIG is empty here)"
check "doctor does not end with a bare 'no problems found'" test "$(tail -n 1 "$CVM_OUTF")" != "no problems found"
cvm --json doctor
assert_json 'any("loader cache" in n["what"] and "CUDNNVM_LDCONFIG" in n["why"] for n in d["not_checked"])' \
	"doctor --json: \"not_checked\" names the loader-cache check and why"

# doctor asks nvidia-smi for the driver when /proc does not say: found on PATH, run only when trusted.
if [ -e /proc/driver/nvidia/version ]; then
	skip "doctor and an nvidia-smi another user owns" "this machine has /proc/driver/nvidia/version"
else
	SMI=$TEST_TMP/smi-bin
	SMARK=$TEST_TMP/smi-ran
	mkdir -p "$SMI"
	printf '#!/bin/sh\necho ran >>"%s"\necho 580.65.06\n' "$SMARK" >"$SMI/nvidia-smi"
	chmod 755 "$SMI/nvidia-smi"
	chown nobody "$SMI/nvidia-smi"
	PATH=$SMI:$PATH cvm doctor
	assert_absent "$SMARK" "doctor did not run an nvidia-smi on PATH that another user owns"
	assert_err_contains "skipping running '$SMI/nvidia-smi'" "doctor says it skipped it, and why"
	chown root "$SMI/nvidia-smi"
	PATH=$SMI:$PATH cvm doctor
	assert_file "$SMARK" "control: a root-owned nvidia-smi on PATH is run"
	assert_out_contains "NVIDIA driver: 580.65.06" "control: and its answer is used"
fi

finish
