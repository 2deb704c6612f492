#!/bin/bash
# SPDX-License-Identifier: MIT
#
# The Windows suite (make check-windows): build-windows/cudnnvm.exe and the
# cross-built unit tests, under wine64 in a throwaway WINEPREFIX here, or
# natively in MSYS2 on Windows (no wine; paths through cygpath).
#
# Environment: CUDNNVM_EXE (default build-windows/cudnnvm.exe), WIN_O (the
# build folder, default build-windows), WINE (default /usr/lib/wine/wine64,
# else wine64 or wine on PATH), WIN_CC (x86_64-w64-mingw32-gcc; gcc in
# MSYS2), for the fixture DLLs and tests/windows/trustcert.c. Needs python3,
# unzip and openssl (for the HTTPS mirror).
#
# Output: "ok - NAME" / "not ok - NAME" lines with "#" diagnostics (as the
# Linux tests print them; "ok - NAME # SKIP why" for what cannot run here),
# then a plan "1..N" and a summary line. Exit 1 when something failed.
#
# What wine 8.0 cannot do (measured): create junctions (FSCTL_SET_REPARSE_POINT
# fails with ERROR_NOT_SUPPORTED) or symbolic links (CreateSymbolicLinkW
# reports success, creates nothing); activation is Windows II's anyway.
set -u

HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
FIXTURES=$REPO/tests/fixtures
WIN_O=${WIN_O:-$REPO/build-windows}
EXE=${CUDNNVM_EXE:-$WIN_O/cudnnvm.exe}
case $(uname -s) in
MINGW* | MSYS* | CYGWIN*) NATIVE=1 WIN_CC=${WIN_CC:-gcc} ;;
*) NATIVE= WIN_CC=${WIN_CC:-x86_64-w64-mingw32-gcc} ;;
esac
export WIN_CC

N=0 PASS=0 FAIL=0 SKIP=0
ok() { N=$((N + 1)) PASS=$((PASS + 1)); printf 'ok %d - %s\n' "$N" "$1"; }
not_ok() { # NAME [DIAG...]
	N=$((N + 1)) FAIL=$((FAIL + 1))
	printf 'not ok %d - %s\n' "$N" "$1"
	shift
	local l
	for l in "$@"; do printf '%s\n' "$l" | sed 's/^/#   /'; done
}
skip() { N=$((N + 1)) SKIP=$((SKIP + 1)); printf 'ok %d - %s # SKIP %s\n' "$N" "$1" "$2"; }
finish() {
	printf '1..%d\n' "$N"
	printf '# windows: %d passed, %d failed, %d skipped\n' "$PASS" "$FAIL" "$SKIP"
	[ "$FAIL" -eq 0 ]
	exit $?
}
# check NAME COMMAND...: ok when COMMAND succeeds.
check() { local name=$1; shift; if "$@"; then ok "$name"; else not_ok "$name" "${DIAG:-}"; fi; DIAG=; }

if [ ! -f "$EXE" ]; then
	not_ok "$EXE exists (make windows)"
	finish
fi

TMP=$(mktemp -d "${TMPDIR:-/tmp}/cvm-windows.XXXXXX")
SERVERS=()
cleanup() {
	local p
	for p in "${SERVERS[@]:-}"; do [ -n "$p" ] && kill "$p" 2>/dev/null; done
	[ -z "$NATIVE" ] && [ -n "${WINESERVER:-}" ] && "$WINESERVER" -k 2>/dev/null
	wait 2>/dev/null
	rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP

# ---- wine: a prefix of our own, one persistent wineserver for the run
if [ -z "$NATIVE" ]; then
	if [ -z "${WINE:-}" ]; then
		for w in /usr/lib/wine/wine64 wine64 wine; do
			command -v "$w" >/dev/null 2>&1 && { WINE=$w; break; }
		done
	fi
	[ -n "${WINE:-}" ] || { not_ok "wine64 is installed (apt-get install wine64)"; finish; }
	WINESERVER=$(dirname "$(command -v "$WINE")")/wineserver
	[ -x "$WINESERVER" ] || WINESERVER=wineserver
	export WINEPREFIX=$TMP/prefix WINEDEBUG=-all WINEARCH=win64
	# No Mono or Gecko installers, no display; wine's WinHTTP also reads
	# http_proxy, which must not send 127.0.0.1 elsewhere.
	export WINEDLLOVERRIDES="mscoree,mshtml=" DISPLAY=
	unset http_proxy https_proxy HTTP_PROXY HTTPS_PROXY all_proxy ALL_PROXY no_proxy
	t0=$(date +%s)
	# wineboot returns before the registry is written: wait for the server to end.
	if "$WINE" wineboot -i >"$TMP/wineboot.log" 2>&1 && "$WINESERVER" -w &&
		[ -f "$WINEPREFIX/system.reg" ]; then
		ok "a throwaway WINEPREFIX ($(($(date +%s) - t0)) s)"
	else
		not_ok "a throwaway WINEPREFIX" "$(tail -n 5 "$TMP/wineboot.log")"
		finish
	fi
	winpath() { printf 'Z:%s' "$1" | tr / '\\'; }
	run_win() { "$WINE" "$@"; }
	WINECMD=("$WINE")
else
	winpath() { cygpath -w "$1"; }
	run_win() { "$@"; }
	WINECMD=()
fi

# cvm ARGS...: the exe with --store STORE, RC/OUT/ERR set (CRs dropped).
STORE=$TMP/store
WSTORE=$(winpath "$STORE")
# A run that does not end within CVM_TIMEOUT seconds (120) is killed: exit 124.
cvm() {
	CUDNNVM_NO_PROGRESS=1 timeout -k 5 "${CVM_TIMEOUT:-120}" "${WINECMD[@]}" "$EXE" --store "$WSTORE" "$@" \
		>"$TMP/out" 2>"$TMP/err"
	RC=$?
	OUT=$(tr -d '\r' <"$TMP/out")
	ERR=$(tr -d '\r' <"$TMP/err")
}
diag_run() { printf 'rc=%s\nstdout: %s\nstderr: %s' "$RC" "$OUT" "$ERR"; }
rc_is() { # WANT NAME
	if [ "$RC" = "$1" ]; then ok "$2"; else not_ok "$2" "expected exit $1, got $RC" "$(diag_run)"; fi
}
err_has() { # TEXT NAME
	if printf '%s' "$ERR" | grep -qiF -- "$1"; then ok "$2"; else not_ok "$2" "stderr lacks '$1'" "$(diag_run)"; fi
}
is_file() { if [ -f "$1" ]; then ok "$2"; else not_ok "$2" "missing: $1"; fi; }
is_absent() { if [ ! -e "$1" ]; then ok "$2"; else not_ok "$2" "present: $1"; fi; }
# Nothing in versions/, nothing left in staging.
store_clean() { # NAME [ID...]
	local name=$1 want left
	shift
	want=$(printf '%s\n' "$@" | sed '/^$/d' | sort | tr '\n' ' ')
	left=$( (ls "$STORE/versions" 2>/dev/null; ls "$STORE/.staging" 2>/dev/null | sed 's/^/staging:/') |
		sort | tr '\n' ' ')
	if [ "$left" = "$want" ]; then ok "$name"; else not_ok "$name" "expected [${want}], store has [${left}]"; fi
}
sha256() { sha256sum "$1" | cut -d' ' -f1; }
id_of() { printf '%s-cuda%s-windows-x86_64\n' "$1" "$2"; }

# ---- --help, and a command Windows does not have yet
cvm --help
rc_is 0 "--help exits 0"
if printf '%s' "$OUT" | grep -q '^usage: cudnnvm'; then ok "--help prints the usage"; else not_ok "--help prints the usage" "$(diag_run)"; fi
cvm install --help
rc_is 0 "install --help exits 0"

# ---- the cross-built unit tests (not when WIN_ONLY names the scripts to run)
for t in "$WIN_O"/tests/test_*.exe; do
	[ -z "${WIN_ONLY:-}" ] || break
	[ -f "$t" ] || continue
	name=$(basename "$t" .exe)
	(cd "$TMP" && unset TMPDIR && run_win "$t") >"$TMP/unit.log" 2>&1
	rc=$?
	# each of its checks a line of ours, then its exit status
	while IFS= read -r l; do
		case $l in
		"ok - "*) ok "$name: ${l#ok - }" ;;
		"not ok - "*) not_ok "$name: ${l#not ok - }" ;;
		"#"*) printf '%s\n' "$l" ;;
		esac
	done < <(tr -d '\r' <"$TMP/unit.log")
	if [ $rc = 0 ]; then ok "$name exits 0"; else not_ok "$name exits 0 (exit $rc)" "$(tr -d '\r' <"$TMP/unit.log" | tail -n 5)"; fi
done

# ---- fixtures: NVIDIA-shaped zips with real PE DLLs, and their manifests
MAN=$TMP/manifests
A91=$(sh "$FIXTURES/mkcudnn-win.sh" "$TMP/archives" 9.1.0.70 12 --manifest "$MAN") &&
	A86=$(sh "$FIXTURES/mkcudnn-win.sh" "$TMP/archives" 8.6.0.163 11 --manifest "$MAN")
if [ -z "${A86:-}" ]; then
	not_ok "mkcudnn-win.sh made the fixtures"
	finish
fi
ID91=$(id_of 9.1.0.70 12)
ID86=$(id_of 8.6.0.163 11)
WMAN=$(winpath "$MAN")
V91=$STORE/versions/$ID91

# ---- install from --archive, listed in --manifests
cvm --manifests "$WMAN" install 9.1.0 --cuda 12.x --archive "$(winpath "$A91")"
rc_is 0 "install 9.1.0 --cuda 12.x --archive (a zip in --manifests)"
is_file "$V91/bin/cudnn64_9.dll" "bin/cudnn64_9.dll is in the store"
is_file "$V91/lib/x64/cudnn.lib" "lib/x64/cudnn.lib is in the store"
is_file "$V91/include/cudnn_version.h" "include/cudnn_version.h is in the store"
if cmp -s "$V91/bin/cudnn64_9.dll" <(cd "$TMP" && unzip -p "$A91" "*/bin/cudnn64_9.dll"); then
	ok "the installed DLL is the zip's"
else
	not_ok "the installed DLL is the zip's"
fi
store_clean "only $ID91 in the store, staging empty" "$ID91"

# WIN_ONLY="t_a.sh t_b.sh": only these scripts (in that order) after the install above.
if [ -n "${WIN_ONLY:-}" ]; then
	for s in $WIN_ONLY; do
		# shellcheck source=/dev/null
		source "$HERE/$s"
	done
	finish
fi

cvm --json list
rc_is 0 "list --json exits 0"
if printf '%s' "$OUT" | python3 -c 'import json,sys; d=json.load(sys.stdin); sys.exit(0 if any(v.get("id")==sys.argv[1] for v in d["installed"]) else 1)' "$ID91" 2>/dev/null; then
	ok "list --json shows $ID91"
else
	not_ok "list --json shows $ID91" "$(diag_run)"
fi

cvm verify
rc_is 0 "verify passes on the fresh install"
chmod u+w "$V91/bin/cudnn64_9.dll" 2>/dev/null
printf 'tampered' >>"$V91/bin/cudnn64_9.dll"
cvm verify
if [ "$RC" != 0 ]; then ok "verify catches a modified DLL (exit $RC)"; else not_ok "verify catches a modified DLL" "$(diag_run)"; fi
if printf '%s\n%s' "$OUT" "$ERR" | grep -q 'cudnn64_9.dll'; then ok "verify names the modified DLL"; else not_ok "verify names the modified DLL" "$(diag_run)"; fi
(cd "$TMP" && unzip -p "$A91" "*/bin/cudnn64_9.dll") >"$V91/bin/cudnn64_9.dll"
cvm verify
rc_is 0 "verify passes again once the DLL is put back"

# ---- an archive given with --sha256 (8.6.0 for CUDA 11, the other seed guide)
cvm --manifests "$WMAN" install 8.6.0 --cuda 11.x --archive "$(winpath "$A86")" --sha256 "$(sha256 "$A86")"
rc_is 0 "install 8.6.0 --cuda 11.x --archive --sha256"
is_file "$STORE/versions/$ID86/bin/cudnn64_8.dll" "bin/cudnn64_8.dll is in the store"

cvm uninstall 8.6.0 --cuda 11.x
rc_is 0 "uninstall 8.6.0"
is_absent "$STORE/versions/$ID86" "uninstall removed $ID86"

# ---- a corrupted zip, and a wrong --sha256: exit 3, nothing left
mkdir -p "$TMP/bad"
BAD=$TMP/bad/$(basename "$A86")
cp "$A86" "$BAD"
printf 'X' | dd of="$BAD" bs=1 seek=200 conv=notrunc 2>/dev/null
cvm --manifests "$WMAN" install 8.6.0 --cuda 11.x --archive "$(winpath "$BAD")"
rc_is 3 "a corrupted zip is refused with exit 3"
err_has "SHA-256" "the refusal says SHA-256"
store_clean "the corrupted zip left nothing" "$ID91"
cvm --manifests "$WMAN" install 8.6.0 --cuda 11.x --archive "$(winpath "$A86")" --sha256 "$(printf '0%.0s' $(seq 64))"
rc_is 3 "a wrong --sha256 is refused with exit 3"
store_clean "the wrong --sha256 left nothing" "$ID91"

# ---- hostile zip entries: exit 3, nothing written anywhere
OUTSIDE=$TMP/outside
mkdir -p "$OUTSIDE"
python3 - "$A86" "$TMP/hostile" "$OUTSIDE" >"$TMP/hostile.list" <<'EOF'
import copy, os, sys, zipfile
base, outdir, outside = sys.argv[1:4]
src = zipfile.ZipFile(base)
top = src.namelist()[0].split("/")[0]
drive_outside = "C:/" + outside.strip("/").replace("\\", "/")
rules = {
    "reserved-con": top + "/bin/CON",
    "reserved-nul-ext": top + "/include/nul.h",
    "reserved-com1": top + "/lib/x64/COM1.lib",
    "reserved-lpt9": top + "/bin/Lpt9.dll",
    "ads-colon": top + "/bin/cudnn64_8.dll:evil",
    "ads-stream": top + "/include/cudnn.h::$DATA",
    "trailing-dot": top + "/bin/evil.",
    "trailing-space": top + "/bin/evil ",
    "backslash": top + "\\..\\..\\evil-backslash",
    "dotdot": top + "/../../evil-dotdot",
    "absolute": outside.rstrip("/") + "/evil-abs",
    "drive-letter": drive_outside + "/evil-drive",
    "drive-relative": "C:evil-drive-rel",
    "case-twin": top + "/include/CUDNN.H",
}
for rule, name in rules.items():
    d = os.path.join(outdir, rule)
    os.makedirs(d, exist_ok=True)
    dest = os.path.join(d, os.path.basename(base))
    with zipfile.ZipFile(dest, "w", zipfile.ZIP_DEFLATED) as z:
        done = False
        for info in src.infolist():
            # a copy: writestr sets the header offset of the ZipInfo it is given
            z.writestr(copy.copy(info), src.read(info))
            # after the first file: an extractor has written something already
            if not done and not info.filename.endswith("/"):
                zi = zipfile.ZipInfo(name, (2023, 11, 14, 22, 13, 20))
                zi.external_attr = 0o100644 << 16
                z.writestr(zi, b"hostile\n")
                done = True
    print(rule, dest)
EOF
while read -r rule zip; do
	cvm --manifests "$WMAN" install 8.6.0 --cuda 11.x --archive "$(winpath "$zip")" --sha256 "$(sha256 "$zip")"
	if [ "$RC" = 3 ]; then
		ok "hostile $rule: refused with exit 3"
	else
		not_ok "hostile $rule: refused with exit 3" "$(diag_run)"
	fi
done <"$TMP/hostile.list"
store_clean "the hostile zips left nothing in the store" "$ID91"
left=$(find "$OUTSIDE" "$TMP/cwd" -mindepth 1 2>/dev/null; find "$TMP" -maxdepth 2 -name 'evil*' 2>/dev/null;
	find "$WINEPREFIX/drive_c" -maxdepth 3 -name 'evil*' 2>/dev/null)
if [ -z "$left" ]; then ok "the hostile zips wrote nothing outside the store"; else not_ok "the hostile zips wrote nothing outside the store" "$left"; fi

# ---- downloads from a mirror on 127.0.0.1: HTTP, then HTTPS
MIR=$TMP/mirror
mkdir -p "$MIR/cudnn/windows-x86_64"
cp "$A86" "$A91" "$MIR/cudnn/windows-x86_64/"
start_server() { # PORTFILE [ENV...]
	local pf=$1
	shift
	env "$@" python3 "$FIXTURES/httpd.py" "$MIR" "$pf" 600 >"$pf.log" 2>&1 &
	SERVERS+=($!)
	# wait for the port file, or for the server to have died
	while [ ! -s "$pf" ] && kill -0 "${SERVERS[-1]}" 2>/dev/null; do
		sleep 0.05
	done
	[ -s "$pf" ]
}
Z86=$(basename "$A86")
if start_server "$TMP/http.port"; then
	URL=http://127.0.0.1:$(cat "$TMP/http.port")/
	echo range >"$MIR/.mode"
	cvm --manifests "$WMAN" --mirror "$URL" install 8.6.0 --cuda 11.x
	rc_is 0 "install 8.6.0 by version from the HTTP mirror"
	is_file "$STORE/versions/$ID86/bin/cudnn64_8.dll" "the downloaded zip is installed"
	is_file "$STORE/cache/$Z86" "the download is kept in the cache"
	is_absent "$STORE/cache/$Z86.part" "no .part is left"

	cvm cache list
	rc_is 0 "cache list exits 0"
	if printf '%s' "$OUT" | grep -qF "$Z86"; then ok "cache list names the zip"; else not_ok "cache list names the zip" "$(diag_run)"; fi

	# a cut download: retried in the same run with a Range request
	cvm uninstall 8.6.0 --cuda 11.x
	cvm cache clean --all
	echo cut >"$MIR/.mode"
	: >"$MIR/.log"
	cvm --manifests "$WMAN" --mirror "$URL" fetch 8.6.0 --cuda 11.x
	rc_is 0 "fetch with a connection cut half-way succeeds"
	if grep -q "bytes=[1-9]" "$MIR/.log"; then ok "the cut download was resumed with a Range request"; else not_ok "the cut download was resumed with a Range request" "$(cat "$MIR/.log")"; fi
	if cmp -s "$STORE/cache/$Z86" "$A86"; then ok "the resumed download is the zip"; else not_ok "the resumed download is the zip"; fi

	# a .part left by an earlier run: the next run asks for the rest only
	rm -f "$STORE/cache/$Z86"
	half=$(($(stat -c %s "$A86") / 2))
	head -c "$half" "$A86" >"$STORE/cache/$Z86.part"
	echo range >"$MIR/.mode"
	: >"$MIR/.log"
	cvm --manifests "$WMAN" --mirror "$URL" fetch 8.6.0 --cuda 11.x
	rc_is 0 "fetch resumes a .part left by an earlier run"
	if grep -q "bytes=$half-" "$MIR/.log"; then ok "only the missing bytes were asked for (bytes=$half-)"; else not_ok "only the missing bytes were asked for" "$(cat "$MIR/.log")"; fi
	if cmp -s "$STORE/cache/$Z86" "$A86"; then ok "the resumed .part became the zip"; else not_ok "the resumed .part became the zip"; fi

	# the mirror serves other bytes than the catalogue's SHA-256
	cvm cache clean --all
	cp "$BAD" "$MIR/cudnn/windows-x86_64/$Z86"
	cvm --manifests "$WMAN" --mirror "$URL" install 8.6.0 --cuda 11.x
	rc_is 3 "a download whose SHA-256 does not match is refused with exit 3"
	err_has "SHA-256 mismatch" "it says SHA-256 mismatch"
	is_absent "$STORE/cache/$Z86.part" "the mismatching download is removed (.part)"
	is_absent "$STORE/cache/$Z86" "the mismatching download is not kept"
	store_clean "the mismatching download installed nothing" "$ID91"
	cp "$A86" "$MIR/cudnn/windows-x86_64/$Z86"

	cvm --manifests "$WMAN" --mirror "${URL}nowhere/" install 8.6.0 --cuda 11.x
	rc_is 1 "a mirror without the file: exit 1"
	err_has "HTTP 404" "it says HTTP 404"
else
	not_ok "the HTTP mirror started" "$(cat "$TMP/http.port.log")"
fi

# HTTPS with a certificate of our own, trusted the Windows way (the machine's
# Root store), so that WinHTTP's ordinary verification is what is tested.
if command -v openssl >/dev/null 2>&1 && command -v "$WIN_CC" >/dev/null 2>&1; then
	openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=localhost \
		-addext "subjectAltName=DNS:localhost,IP:127.0.0.1" \
		-keyout "$TMP/key.pem" -out "$TMP/cert.pem" >/dev/null 2>&1
	"$WIN_CC" -O1 -o "$TMP/trustcert.exe" "$HERE/trustcert.c" -lcrypt32
	if start_server "$TMP/https.port" HTTPD_TLS_CERT="$TMP/cert.pem" HTTPD_TLS_KEY="$TMP/key.pem"; then
		SURL=https://localhost:$(cat "$TMP/https.port")/
		cvm uninstall 8.6.0 --cuda 11.x
		cvm cache clean --all
		cvm --manifests "$WMAN" --mirror "$SURL" install 8.6.0 --cuda 11.x
		rc_is 1 "HTTPS with an untrusted certificate fails (exit 1)"
		err_has "TLS" "it says the TLS connection failed"
		store_clean "the TLS failure installed nothing" "$ID91"
		if run_win "$TMP/trustcert.exe" "$(winpath "$TMP/cert.pem")"; then
			cvm --manifests "$WMAN" --mirror "$SURL" install 8.6.0 --cuda 11.x
			rc_is 0 "HTTPS install once the certificate is in the Root store"
			is_file "$STORE/versions/$ID86/bin/cudnn64_8.dll" "the HTTPS download is installed"
		else
			not_ok "trustcert.exe added the certificate to the Root store"
		fi
	else
		not_ok "the HTTPS mirror started" "$(cat "$TMP/https.port.log")"
	fi
else
	skip "HTTPS mirror" "needs openssl and $WIN_CC"
fi

# ---- processes that have a version's DLL loaded: uninstall, ps
# shellcheck source=t_proc.sh
source "$HERE/t_proc.sh"

# ---- the smoke test (tests/windows/t_smoke.sh)
# shellcheck source=t_smoke.sh
source "$HERE/t_smoke.sh"

# ---- Windows II: activation (use, rollback, PATH, --user, env, exec, adopt, crash points)
# shellcheck source=t_activate.sh
source "$HERE/t_activate.sh"

# ---- Windows II: doctor and which (after t_activate.sh: its registry helpers)
# shellcheck source=t_doctor.sh
source "$HERE/t_doctor.sh"

# ---- framework truth: doctor --python on a Windows venv
# shellcheck source=t_frameworks.sh
source "$HERE/t_frameworks.sh"

# ---- names as NTFS sees them (tests/windows/t_names.sh)
# shellcheck source=t_names.sh
source "$HERE/t_names.sh"

# ---- the load closure: imports and LoadLibrary names a toolkit lacks (tests/windows/t_closure.sh);
# before t_habits, whose 33,000-character machine PATH wine 8 does not give back whole
# shellcheck source=t_closure.sh
source "$HERE/t_closure.sh"

# ---- the Windows habits: exec's command line, messages (tests/windows/t_habits.sh)
# shellcheck source=t_habits.sh
source "$HERE/t_habits.sh"

# ---- export, then uninstall
cvm export "$ID91" "$(winpath "$TMP/bundle.cvm")"
rc_is 0 "export $ID91 to a bundle"
is_file "$TMP/bundle.cvm" "the bundle is written"
cvm uninstall 9.1.0 --cuda 12.x
rc_is 0 "uninstall 9.1.0"
is_absent "$V91" "uninstall removed $ID91"

finish
