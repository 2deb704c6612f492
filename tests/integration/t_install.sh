#!/bin/bash
# SPDX-License-Identifier: MIT
# install, list, uninstall against a temporary --root: the store layout, the
# three archive layouts, version resolution, --sha256, bad input, messages.
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"

MAN=$TEST_TMP/manifests
A8=$(mkcudnn 8.9.7.29 11 --manifest "$MAN")
ID8=$(id_of 8.9.7.29 11)
V8=$STORE/versions/$ID8

# ------------------------------------------------------------ a first install
cvm --manifests "$MAN" install 8.9.7 --cuda 11.8 --archive "$A8"
assert_rc 0 "install 8.9.7 --cuda 11.8 --archive exits 0"
assert_versions "$ID8" "versions/ holds exactly $ID8"
assert_dir "$V8/include" "the version has include/"
assert_dir "$V8/lib" "the version has lib/"
assert_file "$V8/LICENSE" "the version has LICENSE"
assert_file "$V8/include/cudnn.h" "include/cudnn.h installed"
assert_file "$V8/include/cudnn_version.h" "include/cudnn_version.h installed"
assert_file "$V8/include/cudnn_ops_infer.h" "include/cudnn_ops_infer.h installed"
assert_file "$V8/lib/libcudnn.so.8.9.7" "lib/libcudnn.so.8.9.7 is a regular file"
assert_symlink "$V8/lib/libcudnn.so.8" libcudnn.so.8.9.7 "lib/libcudnn.so.8 -> libcudnn.so.8.9.7"
assert_symlink "$V8/lib/libcudnn.so" libcudnn.so.8 "lib/libcudnn.so -> libcudnn.so.8"
for l in ops_infer ops_train cnn_infer cnn_train adv_infer adv_train; do
	assert_symlink "$V8/lib/libcudnn_$l.so" "libcudnn_$l.so.8" "lib/libcudnn_$l.so -> libcudnn_$l.so.8"
	assert_symlink "$V8/lib/libcudnn_$l.so.8" "libcudnn_$l.so.8.9.7" "lib/libcudnn_$l.so.8 -> libcudnn_$l.so.8.9.7"
done
assert_file "$V8/lib/libcudnn_adv_static_v8.a" "static archive installed"
assert_absent "$V8/cudnn-linux-x86_64-8.9.7.29_cuda11-archive" "top folder stripped"
assert_absent "$V8/lib64" "no lib64/ in the nvidia layout"
if cmp -s "$V8/include/cudnn_version.h" <(tar -xJOf "$A8" cudnn-linux-x86_64-8.9.7.29_cuda11-archive/include/cudnn_version.h); then
	ok "installed header equals the archive's"
else
	not_ok "installed header equals the archive's"
fi
assert_mode "$V8/include/cudnn.h" 644 "headers are 0644"
assert_mode "$V8/lib/libcudnn.so.8.9.7" 755 "libraries keep 0755"
assert_mode "$V8" 755 "the version folder is 0755"
assert_tree_modes "$V8" "everything in the version is readable by all, no set-id"
assert_file "$V8/.cudnnvm/record.json" ".cudnnvm/record.json written"
assert_file "$V8/.cudnnvm/files.sha256" ".cudnnvm/files.sha256 written"
assert_file "$V8/.cudnnvm/links" ".cudnnvm/links written"
assert_sha256sum_c "$V8" "sha256sum -c .cudnnvm/files.sha256 passes"
check "files.sha256 lists lib/libcudnn.so.8.9.7" grep -Eq '^[0-9a-f]{64}  (\./)?lib/libcudnn\.so\.8\.9\.7$' "$V8/.cudnnvm/files.sha256"
check "files.sha256 lists include/cudnn.h" grep -Eq '^[0-9a-f]{64}  (\./)?include/cudnn\.h$' "$V8/.cudnnvm/files.sha256"
check "files.sha256 covers every regular file" test \
	"$(grep -c . "$V8/.cudnnvm/files.sha256")" -eq "$(find "$V8" -path "$V8/.cudnnvm" -prune -o -type f -print | grep -c .)"
check "links lists lib/libcudnn.so<TAB>libcudnn.so.8" grep -Eq '^(\./)?lib/libcudnn\.so	libcudnn\.so\.8$' "$V8/.cudnnvm/links"
check "links lists every symlink" test \
	"$(grep -c . "$V8/.cudnnvm/links")" -eq "$(find "$V8" -type l | grep -c .)"
assert_json 'd["id"] == "'"$ID8"'" and d["version"] == "8.9.7.29" and d["release"] == "8.9.7" and d["cuda_major"] == 11' \
	"record.json names the id, version, release and CUDA major" "$V8/.cudnnvm/record.json"
assert_json '"'"$(sha256 "$A8")"'" in json.dumps(d)' "record.json holds the archive's sha256" "$V8/.cudnnvm/record.json"
assert_file "$STORE/.lock" "the lock file exists"
assert_store_clean "work areas empty after install"

# ------------------------------------------------ already installed, --force
snapshot "$V8" >"$TEST_TMP/v8.snap"
cvm --manifests "$MAN" install 8.9.7 --cuda 11.8 --archive "$A8"
assert_rc 0 "installing again exits 0"
assert_output_contains "already installed" "installing again says it is already installed"
snapshot "$V8" >"$TEST_TMP/v8.snap2"
assert_same_snapshot "$TEST_TMP/v8.snap" "$TEST_TMP/v8.snap2" "installing again changes nothing"

cvm --manifests "$MAN" install 8.9 --cuda 11.8 --archive "$A8"
assert_rc 0 "install 8.9 resolves to the installed 8.9.7"
assert_output_contains "already installed" "install 8.9 says already installed"
cvm --manifests "$MAN" install 8.9.7.29 --cuda 11.8 --archive "$A8"
assert_rc 0 "install 8.9.7.29 resolves to the installed one"
assert_output_contains "already installed" "install 8.9.7.29 says already installed"
cvm --manifests "$MAN" install 8.9.7 --cuda 11.2 --archive "$A8"
assert_rc 0 "--cuda 11.2 selects the same cuda11 build"
assert_output_contains "already installed" "--cuda 11.2 says already installed"
assert_versions "$ID8" "still exactly one version"

echo tampered >>"$V8/include/cudnn_backend.h"
cvm --manifests "$MAN" install 8.9.7 --cuda 11.8 --archive "$A8" --force
assert_rc 0 "install --force exits 0"
assert_versions "$ID8" "--force leaves exactly one version"
assert_sha256sum_c "$V8" "--force reinstalled the files (sha256sum -c passes)"
check "--force restored the tampered header" cmp -s "$V8/include/cudnn_backend.h" \
	<(tar -xJOf "$A8" cudnn-linux-x86_64-8.9.7.29_cuda11-archive/include/cudnn_backend.h)
assert_symlink "$V8/lib/libcudnn.so" libcudnn.so.8 "--force kept the symlink chain"
assert_store_clean "work areas empty after --force"

# ------------------------------------------------------------------ list
cvm list
assert_rc 0 "list exits 0"
assert_out_contains "8.9.7.29" "list shows 8.9.7.29"

cvm --json list
assert_rc 0 "list --json exits 0"
assert_json '[e["id"] for e in d["installed"]] == ["'"$ID8"'"]' "list --json: one installed entry, $ID8"
assert_json 'd["installed"][0]["id"] == "'"$ID8"'"' "list --json: id"
assert_json 'd["installed"][0]["version"] == "8.9.7.29"' "list --json: version"
assert_json 'd["installed"][0]["release"] == "8.9.7"' "list --json: release"
assert_json 'd["installed"][0]["cuda_major"] == 11 and type(d["installed"][0]["cuda_major"]) is int' "list --json: cuda_major is the number 11"
assert_json 'd["installed"][0]["platform"] == "linux-x86_64"' "list --json: platform"
assert_json 'd["installed"][0]["path"] == "/opt/cudnnvm/versions/'"$ID8"'"' "list --json: path as seen inside the root"
assert_json 'd["installed"][0]["active_for"] == []' "list --json: active_for is []"
cvm list --json
assert_rc 0 "list accepts --json after the command"
assert_json 'd["installed"][0]["id"] == "'"$ID8"'"' "list --json after the command: same document"

cvm list --available --cuda 12.4
assert_rc 0 "list --available --cuda 12.4 exits 0"
assert_out_contains "9.1.1" "list --available --cuda 12.4 shows 9.1.1 (built-in catalogue)"
assert_out_contains "9.27.0" "list --available --cuda 12.4 shows 9.27.0"
assert_out_lacks "8.6.0" "list --available --cuda 12.4 leaves out 8.6.0 (no cuda12 build)"
cvm list --available
assert_rc 0 "list --available exits 0"
assert_out_contains "8.6.0" "list --available (all) shows 8.6.0"

# ----------------------------------------------------- a second version, 9.x
A9=$(mkcudnn 9.1.1.17 12 --manifest "$MAN")
ID9=$(id_of 9.1.1.17 12)
V9=$STORE/versions/$ID9
cvm --manifests "$MAN" install 9.1 --cuda 12.4 --archive "$A9"
assert_rc 0 "install 9.1 --cuda 12.4 (resolves to 9.1.1) exits 0"
assert_versions "$ID8 $ID9" "versions/ holds both"
for l in cudnn cudnn_ops cudnn_cnn cudnn_adv cudnn_graph cudnn_heuristic cudnn_engines_precompiled cudnn_engines_runtime_compiled; do
	assert_symlink "$V9/lib/lib$l.so" "lib$l.so.9" "9.x lib/lib$l.so -> lib$l.so.9"
	assert_symlink "$V9/lib/lib$l.so.9" "lib$l.so.9.1.1" "9.x lib/lib$l.so.9 -> lib$l.so.9.1.1"
	assert_file "$V9/lib/lib$l.so.9.1.1" "9.x lib/lib$l.so.9.1.1 is a file"
done
assert_sha256sum_c "$V9" "9.x: sha256sum -c passes"
assert_tree_modes "$V9" "9.x: everything readable by all"
cvm --json list
assert_json 'sorted(e["id"] for e in d["installed"]) == sorted(["'"$ID8"'", "'"$ID9"'"])' "list --json lists both versions"
assert_json '[e["cuda_major"] for e in d["installed"] if e["id"] == "'"$ID9"'"] == [12]' "list --json: 9.1.1 is cuda_major 12"
assert_store_clean "work areas empty after the second install"

# ------------------------------------------------ --sha256, no manifest
A19=$(mkcudnn 9.19.0.56 13.0)
H19=$(sha256 "$A19")
ID19=$(id_of 9.19.0.56 13)
cvm install 9.19.0 --cuda 13.0 --archive "$A19" --sha256 0000000000000000000000000000000000000000000000000000000000000000
assert_rc 3 "--sha256 that does not match: exit 3"
assert_err_contains "$(basename "$A19")" "--sha256 mismatch: stderr names the archive"
assert_absent "$STORE/versions/$ID19" "--sha256 mismatch: nothing installed"
assert_store_clean "--sha256 mismatch: work areas empty"
cvm install 9.19.0 --cuda 13.0 --archive "$A19" --sha256 zz
assert_rc 2 "--sha256 zz (not 64 hex digits): exit 2"
cvm install 9.19.0 --cuda 13.0 --archive "$A19" --sha256 "${H19:0:63}"
assert_rc 2 "--sha256 of 63 hex digits: exit 2"
cvm install 9.19.0 --cuda 13.0 --archive "$A19" --sha256 "$H19"
assert_rc 0 "install 9.19.0 (in no manifest) with --sha256 exits 0"
assert_dir "$STORE/versions/$ID19" "--sha256 install: id $ID19 (build from the top folder)"
assert_symlink "$STORE/versions/$ID19/lib/libcudnn.so.9" libcudnn.so.9.19.0 "--sha256 install: chain kept"
assert_sha256sum_c "$STORE/versions/$ID19" "--sha256 install: sha256sum -c passes"
assert_json '"'"$H19"'" in json.dumps(d)' "--sha256 install: record holds the hash" "$STORE/versions/$ID19/.cudnnvm/record.json"
cvm install 9.19.0 --cuda 13.0 --archive "$A19" --sha256 "$H19"
assert_rc 0 "--sha256 install again: exit 0"
assert_output_contains "already installed" "--sha256 install again: already installed"

# the top folder says 9.18.0.77, the headers say 9.17.0: refused
AMIS=$(mkcudnn 9.18.0.77 13.0 --header-version 9.17.0)
cvm install 9.18.0 --cuda 13.0 --archive "$AMIS" --sha256 "$(sha256 "$AMIS")"
assert_rc 3 "top folder and cudnn_version.h disagree: exit 3"
assert_absent "$STORE/versions/$(id_of 9.18.0.77 13)" "version mismatch: nothing installed"
assert_store_clean "version mismatch: work areas empty"
# the archive is 9.19.0.56 but the command asks for 9.18.0
cvm install 9.18.0 --cuda 13.0 --archive "$A19" --sha256 "$H19"
assert_rc 3 "asked for 9.18.0, the archive is 9.19.0.56: exit 3"
assert_err_contains "holds cuDNN 9.19.0.56, not 9.18.0" "asked-for mismatch: it says which version the archive holds"
assert_absent "$STORE/versions/$(id_of 9.18.0.56 13)" "asked-for mismatch: nothing installed under 9.18.0"

# --------------------------------------------------------- windows zip layout
MANW=$TEST_TMP/manifests-win
AW=$(mkcudnn 9.1.1.17 12 --layout windows --manifest "$MANW")
IDW=$(id_of 9.1.1.17 12 windows-x86_64)
VW=$STORE/versions/$IDW
cvm --manifests "$MANW" install 9.1.1 --cuda 12.4 --platform windows-x86_64 --archive "$AW"
assert_rc 0 "windows zip installs with --platform windows-x86_64"
assert_dir "$VW" "windows: id $IDW"
assert_file "$VW/bin/cudnn64_9.dll" "windows: bin/cudnn64_9.dll kept"
assert_file "$VW/lib/x64/cudnn.lib" "windows: lib/x64/cudnn.lib kept"
assert_file "$VW/include/cudnn_version.h" "windows: include/ kept"
assert_file "$VW/LICENSE" "windows: LICENSE kept"
assert_tree_modes "$VW" "windows: everything readable by all"
assert_sha256sum_c "$VW" "windows: sha256sum -c passes"
cvm --json list
assert_json '[e["platform"] for e in d["installed"] if e["id"] == "'"$IDW"'"] == ["windows-x86_64"]' "list --json: windows platform"

# --------------------------------------------------------- legacy tgz layout
AL=$(mkcudnn 8.2.1.32 11.3 --layout legacy)
IDL=$(id_of 8.2.1.32 11)
VL=$STORE/versions/$IDL
cvm install 8.2.1.32 --cuda 11.3 --archive "$AL" --sha256 "$(sha256 "$AL")"
assert_rc 0 "legacy cuda/ tgz installs with --sha256 and a full version"
assert_dir "$VL" "legacy: id $IDL"
assert_file "$VL/lib/libcudnn.so.8.2.1" "legacy: lib64/ stored as lib/"
assert_symlink "$VL/lib/libcudnn.so.8" libcudnn.so.8.2.1 "legacy: lib/libcudnn.so.8 -> libcudnn.so.8.2.1"
assert_symlink "$VL/lib/libcudnn.so" libcudnn.so.8 "legacy: lib/libcudnn.so -> libcudnn.so.8"
assert_absent "$VL/lib64" "legacy: no lib64/"
assert_absent "$VL/cuda" "legacy: top folder cuda/ stripped"
assert_file "$VL/include/cudnn_version.h" "legacy: include/ kept"
assert_sha256sum_c "$VL" "legacy: sha256sum -c passes"
assert_store_clean "work areas empty after the legacy install"

# ------------------------------------------------------------- bad input
cvm --manifests "$MAN" install 8.99.0 --cuda 11.8 --archive "$A8"
assert_rc 1 "unknown version 8.99.0: exit 1"
assert_err_matches '9\.27\.0|9\.1\.1|8\.6\.0' "unknown version: the message lists what exists"
assert_error_line "unknown version: one 'cudnnvm: error:' line"
cvm --manifests "$MAN" install 8.6.0 --cuda 12.4 --archive "$A8"
assert_rc 1 "8.6.0 --cuda 12.4: exit 1"
assert_err_contains "has no build for CUDA 12" "8.6.0 --cuda 12.4: 'has no build for CUDA 12'"
cvm --manifests "$MAN" install 8.9.6 --cuda 11.8 --archive "$TEST_TMP/no-such-archive.tar.xz"
assert_rc 1 "missing archive file: exit 1"
assert_err_contains "no-such-archive.tar.xz" "missing archive: stderr names it"
assert_error_line "missing archive: one 'cudnnvm: error:' line"
cvm --manifests "$MAN" install 8.9.7 --cuda 11.8 --archive "$A8" --bogus-option
assert_rc 2 "unknown install option: exit 2"
cvm --bogus-global list
assert_rc 2 "unknown global option: exit 2"
cvm frobnicate
assert_rc 2 "unknown command: exit 2"
cvm install
assert_rc 2 "install without VERSION: exit 2"
cvm install not.a.version --cuda 11.8 --archive "$A8"
assert_rc 2 "malformed VERSION: exit 2 (a usage error)"
assert_err_line "install: VERSION 'not.a.version': expected a cuDNN version such as 9.1, or an installed id (see 'cudnnvm install --help')" "malformed VERSION: the message names it"

BAD=$TEST_TMP/manifests-bad
mkdir -p "$BAD"
printf '{"release_label": "9.99.0", "cudnn": {' >"$BAD/redistrib_9.99.0.json"
cvm --manifests "$BAD" install 8.9.7 --cuda 11.8 --archive "$A8"
assert_rc 1 "malformed manifest in --manifests: exit 1"
assert_err_contains "redistrib_9.99.0.json" "malformed manifest: stderr names the file"
cvm --manifests "$BAD" list --available
assert_rc 1 "malformed manifest: list --available exits 1"
assert_err_contains "redistrib_9.99.0.json" "malformed manifest: list --available names the file"

# ------------------------------------------------------------ messages, --json
cvm --json --manifests "$MAN" install 8.99.0 --cuda 11.8 --archive "$A8"
assert_rc 1 "--json: unknown version still exits 1"
assert_json 'd["error"]["code"] == 1' "--json error: {\"error\": {\"code\": 1}}"
assert_json 'isinstance(d["error"]["message"], str) and len(d["error"]["message"]) > 0' "--json error: a message"
assert_err_contains "cudnnvm: error: " "--json error: the message is on stderr too"
cvm --json install 9.19.0 --cuda 13.0 --archive "$A19" --sha256 "$(printf 'f%.0s' {1..64})" --force
assert_rc 3 "--json wrong --sha256: exit 3"
assert_json 'd["error"]["code"] == 3' "--json error code 3 for an integrity failure"
cvm --json install 9.19.0 --cuda 13.0 --archive "$A19" --sha256 zz
assert_json 'd["error"]["code"] == 2' "--json error code 2 for a usage error"

# ------------------------------------------------------------- uninstall
cvm uninstall 8.9.7 --cuda 11.8
assert_rc 0 "uninstall 8.9.7 --cuda 11.8 exits 0"
assert_absent "$V8" "uninstall removed versions/$ID8"
assert_dir "$V9" "uninstall left the other versions"
assert_store_clean "work areas empty after uninstall"
cvm uninstall 8.9.7 --cuda 11.8
assert_rc 1 "uninstalling what is not installed: exit 1"
assert_error_line "uninstall not installed: one 'cudnnvm: error:' line"
cvm uninstall 9.1.1 --cuda 12.4 --platform windows-x86_64
if [ "$RC" = 2 ]; then
	skip "uninstall --platform" "uninstall takes no --platform"
else
	assert_rc 0 "uninstall --platform windows-x86_64 exits 0"
	assert_absent "$VW" "uninstall --platform removed the windows version"
	assert_dir "$V9" "uninstall --platform left the linux 9.1.1"
fi
cvm --json list
assert_json '"'"$ID8"'" not in [e["id"] for e in d["installed"]]' "list --json no longer shows the uninstalled version"
cvm uninstall 9.1.1 --cuda 12.4
assert_rc 0 "uninstall 9.1.1 exits 0"
cvm uninstall 9.19.0 --cuda 13.0
assert_rc 0 "uninstall 9.19.0 exits 0"
cvm uninstall 8.2.1.32 --cuda 11.3
assert_rc 0 "uninstall 8.2.1.32 exits 0"
cvm --json list
assert_json 'len([e for e in d["installed"] if e["platform"] == "linux-x86_64"]) == 0' "list --json: no linux versions left"
assert_store_clean "work areas empty at the end"

# -------------------------------------- modes do not depend on the umask
new_root
umask 077
cvm --manifests "$MAN" install 8.9.7 --cuda 11.8 --archive "$A8"
umask 022
assert_rc 0 "install under umask 077 exits 0"
assert_tree_modes "$STORE/versions/$ID8" "under umask 077 the version is still readable by all"
assert_mode "$STORE/versions" 755 "under umask 077 versions/ is 0755"
assert_mode "$STORE" 755 "under umask 077 the store is 0755"

# --------------------------------------------- readers on a missing store
new_root
cvm --json list
assert_rc 0 "list on a root with no store exits 0"
assert_json 'd["installed"] == []' "list --json on no store: installed []"
assert_absent "$STORE" "list does not create the store"
cvm verify
assert_rc 0 "verify on no store: exit 0"
assert_output_contains "nothing installed" "verify on no store: says nothing is installed"

finish
