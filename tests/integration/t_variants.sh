#!/bin/bash
# SPDX-License-Identifier: MIT
# The newest manifests' quirks: a flat "_cuda13.4" build beside a nested
# cuda13 one (9.27 windows-arm64) told apart in list, install and the record,
# and picked by the toolkit's version; cudnn_jit listed as its own library,
# never installed as cudnn; a Jetson (ROOT/etc/nv_tegra_release) is
# linux-aarch64, not sbsa; an archive of another platform than the host's is
# refused at install.
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"

# 1. NVIDIA's own 9.27 manifest (built in): the two windows-arm64 builds differ in CUDA.
cvm list --available --platform windows-arm64
assert_rc 0 "list --available --platform windows-arm64"
rows=$(printf '%s\n' "$OUT" | awk 'NR > 1 { print $1, $2, $3, $5, $6 }')
[ "$rows" = "9.27.0 9.27.0.42 13 468 MB
9.27.0 9.27.0.42 13.4 482 MB" ] && ok "9.27 windows-arm64: a CUDA 13 and a CUDA 13.4 build" ||
	not_ok "9.27 windows-arm64: a CUDA 13 and a CUDA 13.4 build" "$OUT"
cvm --json list --available --platform windows-arm64
assert_json '[(e["cuda_major"], e["cuda_variant"], e["relative_path"].rsplit("/", 1)[1]) for e in d["available"]] == [(13, "13", "cudnn-windows-arm64-9.27.0.42_cuda13-archive.zip"), (13, "13.4", "cudnn-windows-arm64-9.27.0.42_cuda13.4-archive.zip")]' \
	"JSON: cuda_variant tells the two builds apart"

# 2. cudnn_jit: its own rows, named, never "installed"
cvm list --available --platform linux-x86_64 --cuda 13.0
assert_out_contains "9.27.0   9.27.0.42    13    2026-09-29 55 MB    cudnn_jit (Graph JIT library)" \
	"the 9.27 cudnn_jit archive is listed as the Graph JIT library"
cvm --json list --available --platform linux-sbsa --cuda 12.4
assert_json '[e["relative_path"] for e in d["available"] if e["release"] == "9.12.0" and e["component"] == "cudnn_jit"] == ["cudnn_jit/linux-sbsa/cudnn_jit-linux-sbsa-9.12.0.46_cuda12-archive.tar.xz"]' \
	"JSON: component cudnn_jit for the jit archive"
assert_json '[e["component"] for e in d["available"] if e["release"] == "9.12.0"] == ["cudnn", "cudnn_jit"]' \
	"JSON: one cudnn and one cudnn_jit build of 9.12 for CUDA 12 on sbsa"

# 3. picked by the toolkit's version, installed and recorded as such
MAN=$TEST_TMP/manifests
A13=$(mkcudnn 9.27.0.42 13 --manifest "$MAN")
A134=$(mkcudnn 9.27.0.42 13.4 --variant 13.4 --manifest "$MAN")
MIR=$TEST_TMP/mirror
mkdir -p "$MIR/cudnn/linux-x86_64"
cp "$A13" "$A134" "$MIR/cudnn/linux-x86_64/"
ID13=9.27.0.42-cuda13-linux-x86_64
ID134=9.27.0.42-cuda13.4-linux-x86_64
cvm --manifests "$MAN" list --available --cuda 13
assert_rc 0 "list the fixture's two variants"
rows=$(printf '%s\n' "$OUT" | awk '$1 == "9.27.0" { print $2, $3 }')
[ "$rows" = "9.27.0.42 13
9.27.0.42 13.4" ] && ok "list: the fixture's builds as CUDA 13 and 13.4" ||
	not_ok "list: the fixture's builds as CUDA 13 and 13.4" "$OUT"
cvm --manifests "$MAN" --mirror "file://$MIR" install 9.27 --cuda 13.0
assert_rc 0 "install 9.27 for CUDA 13.0"
assert_versions "$ID13" "CUDA 13.0 gets the cuda13 build"
cvm --manifests "$MAN" --mirror "file://$MIR" --json install 9.27 --cuda 13.4
assert_rc 0 "install 9.27 for CUDA 13.4"
assert_json 'd["id"] == "'"$ID134"'" and d["cuda_major"] == 13' "CUDA 13.4 gets the cuda13.4 build"
assert_versions "$ID13 $ID134" "both variants side by side in the store"
assert_json 'd["cuda_variant"] == "13.4" and d["cuda_major"] == 13 and d["archive"] == "'"$(basename "$A134")"'"' \
	"the record says cuda_variant 13.4" "$STORE/versions/$ID134/.cudnnvm/record.json"
assert_json 'd["cuda_variant"] == "13"' "the record of the cuda13 build says 13" \
	"$STORE/versions/$ID13/.cudnnvm/record.json"
cvm --manifests "$MAN" --mirror "file://$MIR" install 9.27 --cuda 13.6
assert_rc 0 "install 9.27 for CUDA 13.6"
assert_out_contains "$ID134" "a later toolkit (13.6) takes the cuda13.4 build too"
cvm --manifests "$MAN" list --available --cuda 13
rows=$(printf '%s\n' "$OUT" | awk '$1 == "9.27.0" { print $3, $NF }')
[ "$rows" = "13 installed
13.4 installed" ] && ok "list --available marks each variant installed" ||
	not_ok "list --available marks each variant installed" "$OUT"
cvm verify "$ID134"
assert_rc 0 "the 13.4 build verifies"
cvm uninstall "$ID134"
assert_rc 0 "the 13.4 build uninstalls by id"
assert_versions "$ID13" "only the cuda13 build is left"

# 4. a Jetson is linux-aarch64, a server of the same architecture linux-sbsa
new_root
export CUDNNVM_TEST_MACHINE=aarch64
cvm --json list --available --cuda 12.6
assert_json '{e["platform"] for e in d["available"]} == {"linux-sbsa"}' "aarch64 without nv_tegra_release: linux-sbsa"
mkdir -p "$ROOT/etc"
echo "# R36 (release), REVISION: 4.0" >"$ROOT/etc/nv_tegra_release"
cvm --json list --available --cuda 12.6
assert_json '{e["platform"] for e in d["available"]} == {"linux-aarch64"} and d["available"][0]["release"] == "9.20.0"' \
	"aarch64 with ROOT/etc/nv_tegra_release: a Jetson, linux-aarch64 (9.12-9.20)"
cvm fetch 9.20 --cuda 12.6 --offline 2>/dev/null
cvm -v install 9.20 --cuda 12.6 --offline --dry-run
assert_err_contains "cudnn-linux-aarch64-9.20.0.48_cuda12-archive.tar.xz" "install on a Jetson resolves the linux-aarch64 archive"
unset CUDNNVM_TEST_MACHINE

# 5. an archive of another platform: refused, naming both platforms
new_root
AS=$(mkcudnn 9.1.1.17 12 --platform linux-sbsa)
cvm install 9.1.1.17 --cuda 12.4 --archive "$AS" --sha256 "$(sha256 "$AS")"
assert_rc 3 "an sbsa archive on an x86_64 host exits 3"
assert_err_line "'$AS' is built for linux-sbsa, not this host's linux-x86_64 (to keep it for such a machine, give --platform linux-sbsa)" \
	"the message names the archive's platform and the host's"
assert_versions "" "nothing installed"
cvm install 9.1.1.17 --cuda 12.4 --archive "$AS" --sha256 "$(sha256 "$AS")" --platform linux-sbsa
assert_rc 0 "with --platform linux-sbsa it is kept for such a machine"
assert_versions "9.1.1.17-cuda12-linux-sbsa" "installed under the sbsa id"

finish
