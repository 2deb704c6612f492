#!/bin/bash
# SPDX-License-Identifier: MIT
# make deb: the package is built with Debian's tooling (or an up-to-date one
# is reused), lintian finds no error, it holds what it should where Debian
# wants it, its dependencies are the libraries the binary links, and
# installing then removing/purging it in a throwaway dpkg root (never the
# system's database) leaves nothing behind but the store. The second binary
# package, cudnnvm-slurm, holds the Slurm plugin and its plugstack.conf.d line.
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"

TOP=$(cd "$TESTS_DIR/.." && pwd)
missing=
for p in dpkg-buildpackage dh dpkg-parsechangelog lintian; do
	command -v "$p" >/dev/null 2>&1 || missing="$missing $p"
done
if [ -n "$missing" ]; then
	skip "make deb" "missing:$missing (Debian: apt-get install dpkg-dev debhelper lintian)"
	finish
fi

VER=$(dpkg-parsechangelog -l "$TOP/packaging/debian/changelog" -S Version)
ARCH=$(dpkg-architecture -qDEB_HOST_ARCH)
DEB=$TOP/build/deb/cudnnvm_${VER}_${ARCH}.deb
SDEB=$TOP/build/deb/cudnnvm-slurm_${VER}_${ARCH}.deb

# ------------------------------------------------------------ build (or reuse)
newer=
if [ -f "$DEB" ]; then
	newer=$(cd "$TOP" && find Makefile README.md src lib compat slurm manifests packaging -newer "$DEB" -type f -print -quit 2>/dev/null)
fi
if [ -f "$DEB" ] && [ -f "$SDEB" ] && [ -z "$newer" ]; then
	ok "build/deb/cudnnvm_${VER}_${ARCH}.deb is newer than its sources: reused"
else
	if out=$(make -C "$TOP" -s deb 2>&1); then ok "make deb exits 0"; else
		not_ok "make deb exits 0" "$out" "$(tail -n 20 "$TOP/build/deb/build.log" 2>/dev/null)"
	fi
fi
if [ ! -f "$DEB" ]; then
	not_ok "make deb wrote build/deb/cudnnvm_${VER}_${ARCH}.deb"
	finish
fi
ok "make deb wrote build/deb/cudnnvm_${VER}_${ARCH}.deb"
check "the package is version $VER, as cudnnvm --version says" \
	grep -qx "cudnnvm $VER" <("$CUDNNVM" --version)

# ------------------------------------------------------------ lintian
lint=$(lintian --pedantic "$DEB" "$SDEB" 2>&1)
lrc=$?
if [ "$lrc" = 0 ] && ! printf '%s\n' "$lint" | grep -q '^E: '; then ok "lintian: no error"; else
	not_ok "lintian: no error" "exit $lrc" "$(printf '%s\n' "$lint" | grep -E '^[EW]: ' | head -n 20)"
fi
w=$(printf '%s\n' "$lint" | grep -c '^W: ')
if [ "$w" = 0 ]; then ok "lintian: no warning (pedantic)"; else
	ok "lintian: $w warnings # SKIP warnings are not errors: $(printf '%s\n' "$lint" | grep '^W: ' | head -n 3 | tr '\n' ' ')"
fi

# ------------------------------------------------------------ contents
dpkg -c "$DEB" | awk '{ print $1, $6 }' >"$TEST_TMP/contents"
has_entry() { # MODE PATH
	grep -qx -- "$1 ./$2" "$TEST_TMP/contents"
}
check "usr/bin/cudnnvm, 0755" has_entry -rwxr-xr-x usr/bin/cudnnvm
check "the man page, gzipped: usr/share/man/man1/cudnnvm.1.gz" has_entry -rw-r--r-- usr/share/man/man1/cudnnvm.1.gz
check "bash completion in usr/share/bash-completion/completions/cudnnvm" has_entry -rw-r--r-- usr/share/bash-completion/completions/cudnnvm
check "zsh completion in usr/share/zsh/vendor-completions/_cudnnvm" has_entry -rw-r--r-- usr/share/zsh/vendor-completions/_cudnnvm
check "fish completion in usr/share/fish/vendor_completions.d/cudnnvm.fish" has_entry -rw-r--r-- usr/share/fish/vendor_completions.d/cudnnvm.fish
check "etc/cudnnvm.conf" has_entry -rw-r--r-- etc/cudnnvm.conf
check "usr/share/doc/cudnnvm/copyright" has_entry -rw-r--r-- usr/share/doc/cudnnvm/copyright
check "nothing under opt/ (the store is the admin's)" bash -c "! grep -q ' ./opt/' '$TEST_TMP/contents'"
check "nothing but etc/ and usr/" bash -c "! grep -vE ' \./(etc|usr)?(/|$)' '$TEST_TMP/contents' | grep -q ."
check "the conffiles are /etc/cudnnvm.conf" test "$(dpkg-deb -I "$DEB" conffiles 2>&1)" = /etc/cudnnvm.conf
dep=$(dpkg-deb -f "$DEB" Depends)
missing=
for l in libarchive13 libssl3 libjansson4 libcurl4 liblzma5 libc6; do
	case ", $dep" in *", $l "* | *", $l,"* | *", $l") ;; *) missing="$missing $l" ;; esac
done
if [ -z "$missing" ]; then ok "Depends names each library the binary links (from shlibs)"; else
	not_ok "Depends names each library the binary links (from shlibs)" "Depends: $dep" "missing:$missing"
fi
X=$TEST_TMP/x
dpkg-deb -x "$DEB" "$X"
check "the man page is gzip" gzip -t "$X/usr/share/man/man1/cudnnvm.1.gz"
check "the copyright file is machine-readable (DEP-5)" grep -q '^Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/' "$X/usr/share/doc/cudnnvm/copyright"
check "the default config is all comments: it changes nothing" \
	bash -c "! grep -vE '^[[:space:]]*(#|$)' '$X/etc/cudnnvm.conf' | grep -q ."
# cudnnvm reads it without a complaint (each commented key, uncommented, parses too).
new_root
mkdir -p "$ROOT/etc"
sed -e 's/^#\([a-z_]* = \)/\1/' "$X/etc/cudnnvm.conf" | grep -v '^modules' >"$ROOT/etc/cudnnvm.conf"
cvm list
assert_rc 0 "cudnnvm accepts the packaged config with its keys uncommented"
check "README.Debian says remove and purge keep the store" grep -q 'never touches /opt/cudnnvm' "$X/usr/share/doc/cudnnvm/README.Debian"
check "no maintainer script (nothing runs as root at install or removal)" \
	bash -c "! dpkg-deb -I '$DEB' | grep -Eq '(pre|post)(inst|rm)'"

# ------------------------------------------------------------ cudnnvm-slurm
if [ -f "$SDEB" ]; then ok "make deb wrote build/deb/cudnnvm-slurm_${VER}_${ARCH}.deb"; else
	not_ok "make deb wrote build/deb/cudnnvm-slurm_${VER}_${ARCH}.deb"
fi
MULTIARCH=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
dpkg -c "$SDEB" | awk '{ print $1, $6 }' >"$TEST_TMP/scontents"
check "cudnnvm-slurm: the plugin in Slurm's plugin folder, 0644" \
	grep -qx -- "-rw-r--r-- ./usr/lib/$MULTIARCH/slurm-wlm/cudnnvm.so" "$TEST_TMP/scontents"
check "cudnnvm-slurm: its conffile is /etc/slurm/plugstack.conf.d/cudnnvm.conf" \
	test "$(dpkg-deb -I "$SDEB" conffiles 2>&1)" = /etc/slurm/plugstack.conf.d/cudnnvm.conf
SX=$TEST_TMP/sx
dpkg-deb -x "$SDEB" "$SX"
check "cudnnvm-slurm: the plugstack line is 'required cudnnvm.so'" \
	test "$(grep -vE '^[[:space:]]*(#|$)' "$SX/etc/slurm/plugstack.conf.d/cudnnvm.conf")" = "required cudnnvm.so"
case ", $(dpkg-deb -f "$SDEB" Depends)," in
*", cudnnvm (= $VER),"*) ok "cudnnvm-slurm depends on cudnnvm of the same version" ;;
*) not_ok "cudnnvm-slurm depends on cudnnvm of the same version" "Depends: $(dpkg-deb -f "$SDEB" Depends)" ;;
esac
check "cudnnvm-slurm: the plugin exports the SPANK entry points and nothing of the engine" \
	bash -c "nm -D --defined-only '$SX/usr/lib/$MULTIARCH/slurm-wlm/cudnnvm.so' | awk '{ print \$3 }' | grep -q '^slurm_spank_task_init\$' &&
		! nm -D --defined-only '$SX/usr/lib/$MULTIARCH/slurm-wlm/cudnnvm.so' | grep -q ' cvm_'"

# ------------------------------------- install, remove, purge in a throwaway dpkg root
R=$TEST_TMP/dpkgroot
mkdir -p "$R/var/lib/dpkg/info" "$R/var/lib/dpkg/updates" "$R/var/lib/dpkg/triggers" \
	"$R/opt/cudnnvm/versions/9.1.1.17-cuda12-linux-x86_64/lib"
: >"$R/var/lib/dpkg/status"
printf 'the admin data\n' >"$R/opt/cudnnvm/versions/9.1.1.17-cuda12-linux-x86_64/lib/libcudnn.so.9"
snapshot "$R" var/lib/dpkg >"$TEST_TMP/before"
sys_had=0
dpkg-query -W cudnnvm >/dev/null 2>&1 && sys_had=1
# The libraries are the host's; the throwaway root has no packages to satisfy Depends.
dp() { dpkg --root="$R" --log=/dev/null --force-not-root "$@" >"$TEST_TMP/dpkg.out" 2>&1; }
if dp --force-depends -i "$DEB"; then ok "dpkg --root -i exits 0"; else not_ok "dpkg --root -i exits 0" "$(tail -n 10 "$TEST_TMP/dpkg.out")"; fi
assert_file "$R/usr/bin/cudnnvm" "installed: usr/bin/cudnnvm"
assert_file "$R/etc/cudnnvm.conf" "installed: etc/cudnnvm.conf"
check "the installed binary runs" grep -qx "cudnnvm $VER" <("$R/usr/bin/cudnnvm" --version)
if [ "$sys_had" = 1 ]; then
	skip "the real system's dpkg database does not learn of it" "cudnnvm is installed on this system"
else
	check "the real system's dpkg database does not learn of it" bash -c "! dpkg-query -W cudnnvm >/dev/null 2>&1"
fi
if dp -r cudnnvm; then ok "dpkg --root -r exits 0"; else not_ok "dpkg --root -r exits 0" "$(tail -n 10 "$TEST_TMP/dpkg.out")"; fi
snapshot "$R" var/lib/dpkg etc >"$TEST_TMP/after-r"
assert_same_snapshot "$TEST_TMP/before" "$TEST_TMP/after-r" "after remove: nothing left but the store (and the conffile, as Debian keeps it)"
assert_file "$R/etc/cudnnvm.conf" "remove keeps the conffile /etc/cudnnvm.conf"
if dp -P cudnnvm; then ok "dpkg --root -P exits 0"; else not_ok "dpkg --root -P exits 0" "$(tail -n 10 "$TEST_TMP/dpkg.out")"; fi
snapshot "$R" var/lib/dpkg >"$TEST_TMP/after-p"
assert_same_snapshot "$TEST_TMP/before" "$TEST_TMP/after-p" "after purge: nothing left but the store, which is untouched"
check "the throwaway database no longer lists it" bash -c "! grep -q '^Package: cudnnvm$' '$R/var/lib/dpkg/status'"

finish
