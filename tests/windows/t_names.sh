# SPDX-License-Identifier: MIT
# shellcheck shell=bash
#
# Names as NTFS sees them (sourced by tests/windows/run.sh, with its helpers
# and $A86): a folder that differs from another only in case is one folder
# on NTFS, so the archive is refused (exit 3) as a file twin is; names of the
# 8.3 alias form (CUDNN6~1.DLL), which can be another file's short name, are
# refused; a UTF-8 name is written as itself and verifies; COM¹ and LPT³ are
# the reserved device names they are on Windows.

: "${A86:?}"
# A store of its own: the suite's store has other versions by now.
NAMES_SAVED=("$STORE" "$WSTORE")
STORE=$TMP/store-names
WSTORE=$(winpath "$STORE")
ID86N=$(id_of 8.6.0.163 11)
# names_zip RULE NAME...: $A86 with the entries NAME (under its top folder) added; prints the zip.
names_zip() {
	python3 - "$A86" "$TMP/names/$1" "${@:2}" <<'EOF'
import copy, os, sys, zipfile
base, outdir, names = sys.argv[1], sys.argv[2], sys.argv[3:]
src = zipfile.ZipFile(base)
top = src.namelist()[0].split("/")[0]
os.makedirs(outdir, exist_ok=True)
dest = os.path.join(outdir, os.path.basename(base))
with zipfile.ZipFile(dest, "w", zipfile.ZIP_DEFLATED) as z:
    for info in src.infolist():
        z.writestr(copy.copy(info), src.read(info))
    for n in names:
        zi = zipfile.ZipInfo(top + "/" + n, (2023, 11, 14, 22, 13, 20))
        zi.external_attr = 0o100644 << 16
        z.writestr(zi, b"extra\n")
print(dest)
EOF
}
# names_install RULE NAME...: installs $A86 with NAME... added (RC/OUT/ERR).
names_install() {
	local zip
	zip=$(names_zip "$@")
	cvm --manifests "$WMAN" install 8.6.0 --cuda 11.x --archive "$(winpath "$zip")" --sha256 "$(sha256 "$zip")"
}
# names_refused RULE WANT-ERR NAME...: exit 3, the exact error line, nothing left.
names_refused() {
	local rule=$1 want=$2
	shift 2
	names_install "$rule" "$@"
	rc_is 3 "names: $rule is refused with exit 3"
	want="cudnnvm: error: unsafe archive '$(winpath "$TMP/names/$rule/$(basename "$A86")")': $want"
	if [ "$ERR" = "$want" ]; then ok "names: $rule: the error says why"; else not_ok "names: $rule: the error says why" "want: $want" "$(diag_run)"; fi
	store_clean "names: $rule left nothing"
}
TOP86=cudnn-windows-x86_64-8.6.0.163_cuda11-archive
unsafe86() { printf "entry '%s/%s': %s" "$TOP86" "$1" "$2"; }

# ---- a folder that differs only in case: one folder on NTFS
names_refused "a folder BIN beside bin" \
	"$(unsafe86 BIN/x.dll "'BIN' and 'bin' differ only in case (one name on Windows)")" BIN/x.dll
names_refused "a deeper folder differing in case" \
	"$(unsafe86 include/Sub/b.h "'include/Sub' and 'include/sub' differ only in case (one name on Windows)")" \
	include/sub/a.h include/Sub/b.h
names_refused "a file differing in case from a file" \
	"$(unsafe86 include/CUDNN.H "'include/CUDNN.H' and 'include/cudnn.h' differ only in case (one name on Windows)")" \
	include/CUDNN.H
names_refused "a non-ASCII folder differing in case" \
	"$(unsafe86 "include/É/b.h" "'include/É' and 'include/é' differ only in case (one name on Windows)")" \
	"include/é/a.h" "include/É/b.h"

# ---- 8.3 short names: another file's alias on NTFS with short names on
ALIAS="a name of the 8.3 short-name form (NAME~N.EXT: on Windows it can be another file's short name)"
names_refused "bin/CUDNN6~1.DLL" "$(unsafe86 'bin/CUDNN6~1.DLL' "$ALIAS")" 'bin/CUDNN6~1.DLL'
names_refused "include/CUDNN~1.H" "$(unsafe86 'include/CUDNN~1.H' "$ALIAS")" 'include/CUDNN~1.H'
names_refused "a folder PROGRA~2" "$(unsafe86 'PROGRA~2/x.h' "$ALIAS")" 'PROGRA~2/x.h'

# ---- superscript digits after COM and LPT: reserved, as Windows reserves them
RES="a reserved Windows device name (CON, PRN, AUX, NUL, COM1-9, LPT1-9, COM¹-³, LPT¹-³)"
names_refused "bin/COM¹.dll" "$(unsafe86 'bin/COM¹.dll' "$RES")" 'bin/COM¹.dll'
names_refused "include/lpt³.h" "$(unsafe86 'include/lpt³.h' "$RES")" 'include/lpt³.h'

# ---- UTF-8 names: written as themselves (UTF-16 on disk), recorded, verified
names_install utf8 'bin/x¹.dll' 'include/日本/é.h' 'doc/a~b.txt' 'doc/long~1name.txt'
rc_is 0 "names: UTF-8 names and a '~' that is no short name install (exit 0)"
is_file "$STORE/versions/$ID86N/bin/x¹.dll" "names: bin/x¹.dll is on disk under its own name"
is_file "$STORE/versions/$ID86N/include/日本/é.h" "names: include/日本/é.h is on disk under its own name"
if grep -qF 'include/日本/é.h' "$STORE/versions/$ID86N/.cudnnvm/files.sha256" 2>/dev/null; then
	ok "names: the record names include/日本/é.h"
else
	not_ok "names: the record names include/日本/é.h" "$(cat "$STORE/versions/$ID86N/.cudnnvm/files.sha256" 2>&1)"
fi
cvm verify 8.6.0 --cuda 11.x
rc_is 0 "names: verify passes on the version with UTF-8 names"
cvm uninstall 8.6.0 --cuda 11.x
rc_is 0 "names: uninstall of the version with UTF-8 names"
store_clean "names: it is gone"
STORE=${NAMES_SAVED[0]} WSTORE=${NAMES_SAVED[1]}
