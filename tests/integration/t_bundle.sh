#!/bin/bash
# SPDX-License-Identifier: MIT
# Store bundles: export on one root, install on another (tar and tar.zst,
# from a file and a file:// URL), the bytes identical and verify ok, the
# record keeping the NVIDIA archive's hash beside the bundle's; a tampered
# bundle (a file changed, files.sha256 edited, a file added or missing, a
# wrong --sha256, a hostile name) refused with exit 3 and nothing left; a
# mirror's bundles/ used only with --prefer-bundles, bound to the catalogue's
# archive; a damaged version is not exported.
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"

MAN=$TEST_TMP/manifests
A8=$(mkcudnn 8.9.7.29 11 --manifest "$MAN")
ID8=$(id_of 8.9.7.29 11)
B=$TEST_TMP/bundles
mkdir -p "$B"

cvm --manifests "$MAN" install 8.9.7 --cuda 11.8 --archive "$A8"
must() { [ "$RC" = 0 ] || { not_ok "set-up: $1"; _cvm_ctx; }; }
must "install 8.9.7"
R1=$ROOT
S1=$STORE
V1=$S1/versions/$ID8

# ------------------------------------------------------------- export
cvm --json export 8.9.7 "$B/b.tar.zst"
assert_rc 0 "export 8.9.7 to a .tar.zst exits 0"
assert_json 'd["id"] == "'"$ID8"'" and d["format"] == "tar.zst" and d["files"] > 10' "export --json: id, format, files"
assert_json 'd["sha256"] == "'"$(sha256 "$B/b.tar.zst")"'" and d["size"] == '"$(stat -c %s "$B/b.tar.zst")" \
	"export --json: the sha256 and size of the file written"
check "the .tar.zst is zstd" sh -c "head -c 4 '$B/b.tar.zst' | od -An -tx1 | grep -q '28 b5 2f fd'"
cvm export "$ID8" "$B/b.tar"
assert_rc 0 "export by id to a .tar exits 0"
assert_out_contains "install --bundle $B/b.tar --sha256 $(sha256 "$B/b.tar")" "export says how to install it, with its sha256"
check "the .tar lists the record under the id's folder" sh -c "tar -tf '$B/b.tar' | grep -qx '$ID8/.cudnnvm/files.sha256'"
check "export leaves no temporary file" test -z "$(find "$B" -name '*.tmp.*')"

same_tree() { # ROOT_A ROOT_B NAME: the version's files, links and modes are identical (records aside)
	if diff -r --no-dereference -x record.json "$1/opt/cudnnvm/versions/$ID8" "$2/opt/cudnnvm/versions/$ID8" >/dev/null &&
		[ "$(cd "$1/opt/cudnnvm/versions/$ID8" && find . -printf '%p %y %m %l\n' | sort)" = \
			"$(cd "$2/opt/cudnnvm/versions/$ID8" && find . -printf '%p %y %m %l\n' | sort)" ]; then
		ok "$3"
	else
		not_ok "$3" "$(diff -r --no-dereference "$1/opt/cudnnvm/versions/$ID8" "$2/opt/cudnnvm/versions/$ID8" | head -n 5)"
	fi
}

# ------------------------------------------------------- round trips
for f in b.tar.zst b.tar; do
	new_root
	cvm --json install --bundle "$B/$f" --sha256 "$(sha256 "$B/$f")"
	assert_rc 0 "install --bundle $f --sha256 exits 0"
	assert_json 'd["id"] == "'"$ID8"'" and d["already_installed"] is False and d["version"] == "8.9.7.29" and d["release"] == "8.9.7"' \
		"install --bundle $f --json: the id, version and release"
	assert_versions "$ID8" "$f: the version is installed"
	same_tree "$R1" "$ROOT" "$f: files, links and modes are identical to the exported version"
	cvm verify "$ID8"
	assert_rc 0 "$f: verify ok"
	assert_json 'd["archive_sha256"] == "'"$(sha256 "$A8")"'" and d["bundle"] == "'"$f"'" and d["bundle_sha256"] == "'"$(sha256 "$B/$f")"'"' \
		"$f: the record keeps the archive's sha256 and names the bundle and its sha256" "$STORE/versions/$ID8/.cudnnvm/record.json"
	assert_store_clean "$f: no staging left"
done
# the same again: already installed, nothing done
cvm install --bundle "$B/b.tar"
assert_rc 0 "a bundle of an installed version: exit 0"
assert_output_contains "already installed" "and says it is already installed"
# without --sha256: a warning, and the bundle is checked against itself
new_root
cvm install --bundle "$B/b.tar.zst"
assert_rc 0 "install --bundle without --sha256 exits 0"
assert_err_contains "checked only against its own file list" "and warns that only the bundle's own list was checked"
assert_json 'd["bundle_sha256"] is None' "without --sha256 the record has no bundle sha256" "$STORE/versions/$ID8/.cudnnvm/record.json"
# a URL: needs --sha256; file:// with it installs (through the cache)
new_root
cvm install --bundle "file://$B/b.tar.zst"
assert_rc 2 "a bundle URL without --sha256 is a usage error (exit 2)"
assert_versions "" "nothing installed"
cvm install --bundle "file://$B/b.tar.zst" --sha256 "$(sha256 "$B/b.tar.zst")"
assert_rc 0 "a file:// bundle URL with --sha256 installs"
assert_versions "$ID8" "the version is installed from the URL"
assert_file "$STORE/cache/b.tar.zst" "the downloaded bundle is in the cache"
new_root
cvm install 8.9.6 --bundle "$B/b.tar"
assert_rc 3 "a bundle of another version than asked: exit 3"
assert_err_contains "holds $ID8, not cuDNN 8.9.6" "the message names both"
assert_versions "" "nothing installed"
cvm install 8.9.7 --cuda 12.4 --bundle "$B/b.tar"
assert_rc 3 "a bundle for another CUDA major than asked: exit 3"

# ------------------------------------------------------ tampered bundles
# tamper NAME PYTHON: a copy of b.tar rewritten by PYTHON (m: the member, data: its bytes)
tamper() {
	python3 - "$B/b.tar" "$B/$1" "$2" <<'PY'
import io, sys, tarfile
src, dst, code = sys.argv[1], sys.argv[2], sys.argv[3]
out = []
with tarfile.open(src) as t:
    for m in t.getmembers():
        data = t.extractfile(m).read() if m.isfile() else None
        res = {"m": m, "data": data, "drop": False, "extra": []}
        exec(code, {"tarfile": tarfile}, res)
        if not res["drop"]:
            out.append((res["m"], res["data"]))
        out.extend(res["extra"])
with tarfile.open(dst, "w", format=tarfile.PAX_FORMAT) as t:
    for m, data in out:
        if data is not None:
            m.size = len(data)
            t.addfile(m, io.BytesIO(data))
        else:
            t.addfile(m)
PY
}
ID=$ID8
tamper file.tar 'if m.name == "'"$ID"'/lib/libcudnn.so.8.9.7": data = data[:-1] + bytes([data[-1] ^ 1])'
tamper sums.tar 'if m.name.endswith("/.cudnnvm/files.sha256"): data = data.replace(data[:64], b"0" * 64, 1)'
tamper extra.tar '
if m.name == "'"$ID"'/LICENSE":
    x = tarfile.TarInfo("'"$ID"'/lib/libcudnn_extra.so.8"); x.mode = 0o644
    extra = [(x, b"not listed\n")]'
tamper missing.tar 'drop = m.name == "'"$ID"'/include/cudnn_backend.h"'
tamper evil.tar '
if m.name == "'"$ID"'/LICENSE":
    x = tarfile.TarInfo("'"$ID"'/../evil"); x.mode = 0o644
    extra = [(x, b"evil\n")]'
tamper meta.tar '
if m.name == "'"$ID"'/LICENSE":
    x = tarfile.TarInfo("'"$ID"'/.cudnnvm/smuggled"); x.mode = 0o644
    extra = [(x, b"x\n")]'
for t in "file.tar:differs from its files.sha256" "sums.tar:differs from its files.sha256" \
	"extra.tar:lib/libcudnn_extra.so.8 is not in its files.sha256" \
	"missing.tar:include/cudnn_backend.h is named by its record but missing" \
	"evil.tar:unsafe" "meta.tar:not a file of cudnnvm's records"; do
	f=${t%%:*}
	new_root
	snapshot "$ROOT" >"$TEST_TMP/before.snap"
	cvm install --bundle "$B/$f"
	assert_rc 3 "tampered bundle $f: exit 3"
	assert_err_contains "${t#*:}" "tampered bundle $f: the message says what is wrong"
	assert_versions "" "tampered bundle $f: no version"
	assert_store_clean "tampered bundle $f: no staging left"
done
new_root
cvm install --bundle "$B/b.tar" --sha256 "$(sha256 "$B/b.tar.zst")"
assert_rc 3 "a bundle whose --sha256 does not match: exit 3"
assert_err_contains "SHA-256 mismatch" "the message says so"
assert_versions "" "nothing installed"
# a bundle given as an archive
cvm --manifests "$MAN" install 8.9.7 --cuda 11.8 --archive "$B/b.tar" --sha256 "$(sha256 "$B/b.tar")"
assert_rc 3 "a bundle given with --archive: exit 3"
assert_err_contains "install it with --bundle" "the message points to --bundle"
assert_versions "" "nothing installed"

# ------------------------------------- a mirror's bundles/ (--prefer-bundles)
# MIRROR/cudnn/linux-x86_64/<archive> as NVIDIA's redist folder, MIRROR/bundles/<id>.tar.zst beside it.
MIR=$TEST_TMP/mirror
mkdir -p "$MIR/cudnn/linux-x86_64" "$MIR/bundles"
cp "$A8" "$MIR/cudnn/linux-x86_64/"
cp "$B/b.tar.zst" "$MIR/bundles/$ID8.tar.zst"
new_root
cvm --manifests "$MAN" --mirror "file://$MIR" --json install 8.9.7 --cuda 11.8 --prefer-bundles
assert_rc 0 "install --prefer-bundles from a mirror with the bundle exits 0"
assert_json 'd["bundle"] == "'"$ID8"'.tar.zst" and d["archive_sha256"] == "'"$(sha256 "$A8")"'"' \
	"--prefer-bundles: the record names the mirror's bundle and NVIDIA's archive hash" "$STORE/versions/$ID8/.cudnnvm/record.json"
assert_absent "$STORE/cache/$(basename "$A8")" "--prefer-bundles: NVIDIA's archive was not downloaded"
same_tree "$R1" "$ROOT" "--prefer-bundles: files, links and modes are identical to the exported version"
cvm verify "$ID8"
assert_rc 0 "--prefer-bundles: verify ok"
# without the option the mirror's bundle is never used
new_root
cvm --manifests "$MAN" --mirror "file://$MIR" install 8.9.7 --cuda 11.8
assert_rc 0 "without --prefer-bundles: installs"
assert_json 'd["bundle"] is None' "without --prefer-bundles: from NVIDIA's archive, not the bundle" "$STORE/versions/$ID8/.cudnnvm/record.json"
assert_file "$STORE/cache/$(basename "$A8")" "without --prefer-bundles: the archive was downloaded"
# a mirror without a bundle of that id: NVIDIA's archive, said, no error
mv "$MIR/bundles/$ID8.tar.zst" "$MIR/bundles/away"
new_root
cvm --manifests "$MAN" --mirror "file://$MIR" install 8.9.7 --cuda 11.8 --prefer-bundles
assert_rc 0 "--prefer-bundles, no bundle on the mirror: exit 0"
assert_out_contains "the mirror has no bundle of $ID8" "and says it installs NVIDIA's archive instead"
check "no error line for the missing bundle" sh -c "! grep -q error: \"\$1\"" sh "$CVM_ERRF"
assert_json 'd["bundle"] is None and d["archive_sha256"] == "'"$(sha256 "$A8")"'"' \
	"--prefer-bundles, no bundle: installed from the archive" "$STORE/versions/$ID8/.cudnnvm/record.json"
# a .tar bundle is found too
cp "$B/b.tar" "$MIR/bundles/$ID8.tar"
new_root
cvm --manifests "$MAN" --mirror "file://$MIR" install 8.9.7 --cuda 11.8 --prefer-bundles
assert_rc 0 "--prefer-bundles takes bundles/<id>.tar when there is no .tar.zst"
assert_json 'd["bundle"] == "'"$ID8"'.tar"' "the record names the .tar" "$STORE/versions/$ID8/.cudnnvm/record.json"
# a bundle made from another archive than the catalogue names: exit 3, nothing left, not cached
tamper other.tar 'if m.name.endswith("/.cudnnvm/record.json"): data = data.replace(b"'"$(sha256 "$A8")"'", b"'"$(printf '%064d' 7)"'")'
cp "$TEST_TMP/bundles/other.tar" "$MIR/bundles/$ID8.tar"
new_root
cvm --manifests "$MAN" --mirror "file://$MIR" install 8.9.7 --cuda 11.8 --prefer-bundles
assert_rc 3 "--prefer-bundles: a bundle made from another archive: exit 3"
assert_err_contains "not from NVIDIA's $(sha256 "$A8")" "the message names the catalogue's archive hash"
assert_versions "" "nothing installed"
assert_store_clean "no staging left"
assert_absent "$STORE/cache/$ID8.tar" "the rejected bundle is not kept in the cache"
rm -f "$MIR/bundles/$ID8.tar"
# usage errors
new_root
cvm --manifests "$MAN" --mirror "https://developer.download.nvidia.com/compute/cudnn/redist/" install 8.9.7 --cuda 11.8 --prefer-bundles
assert_rc 2 "--prefer-bundles with NVIDIA's server as the mirror: exit 2"
assert_err_contains "NVIDIA's server has no bundles" "and says why"
cvm --manifests "$MAN" install 8.9.7 --cuda 11.8 --prefer-bundles --archive "$A8"
assert_rc 2 "--prefer-bundles with --archive: exit 2"
assert_versions "" "nothing installed"

# ------------------------------------------------ a damaged version is not exported
ROOT=$R1
STORE=$S1
chmod u+w "$V1/lib" "$V1/lib/libcudnn.so.8.9.7" 2>/dev/null
flip_byte "$V1/lib/libcudnn.so.8.9.7" # the same size: found by its hash, as it is written
cvm export 8.9.7 "$B/damaged.tar"
assert_rc 3 "export of a damaged version: exit 3"
assert_err_contains "lib/libcudnn.so.8.9.7 differs from its record" "the message names the file"
assert_absent "$B/damaged.tar" "no bundle is written"
check "and no temporary file is left" test -z "$(find "$B" -name '*.tmp.*')"
finish
