#!/bin/sh
# SPDX-License-Identifier: MIT
# Cross-build the libraries that build-windows/cudnnvm.exe links statically
# (zlib, liblzma, libzstd, libarchive, jansson) for x86_64-w64-mingw32, from Debian's
# source packages: `apt-get source` with a sources list and apt state of this
# script's own (deb-src lines for the Debian suites this machine already uses),
# no other download.
#
#   sh packaging/windows/build-deps.sh [DIR]     (default build-windows/deps)
#
# Result: DIR/include, DIR/lib (static .a only), DIR/VERSIONS (the exact Debian
# source versions), DIR/deps.mk (DEPS_CFLAGS / DEPS_LIBS for the Makefile) and
# DIR/stamp. A second run with the stamp in place does nothing. The build runs
# in DIR.tmp and is renamed to DIR at the end, so DIR is complete or absent.
# Environment: HOST (x86_64-w64-mingw32), JOBS (2).
set -eu

DEST=${1:-build-windows/deps}
HOST=${HOST:-x86_64-w64-mingw32}
JOBS=${JOBS:-2}
SRCPKGS="zlib xz-utils libzstd libarchive jansson"
SELF=$0

die() { printf 'build-deps.sh: %s\n' "$*" >&2; exit 1; }
say() { printf 'build-deps.sh: %s\n' "$*" >&2; }

# The stamp names the script that made DIR: a changed script rebuilds.
want_stamp=$(cksum < "$SELF" | cut -d' ' -f1)
if [ -f "$DEST/stamp" ] && [ "$(cat "$DEST/stamp")" = "$want_stamp" ]; then
	say "$DEST is up to date ($(tr '\n' ' ' < "$DEST/VERSIONS"))"
	exit 0
fi

for tool in apt-get dpkg-source "$HOST-gcc" "$HOST-ar" "$HOST-ranlib" make \
		autoreconf libtoolize; do
	command -v "$tool" >/dev/null 2>&1 ||
		die "$tool not found (apt-get install gcc-mingw-w64-x86-64 dpkg-dev autoconf automake libtool make)"
done

mkdir -p "$(dirname "$DEST")"
DEST=$(cd "$(dirname "$DEST")" && pwd)/$(basename "$DEST")
TMP=$DEST.tmp
rm -rf "$TMP"
mkdir -p "$TMP/apt/lists/partial" "$TMP/apt/cache/archives/partial" \
	"$TMP/apt/parts" "$TMP/src" "$TMP/prefix/include" "$TMP/prefix/lib"
trap 'rm -rf "$TMP"' EXIT
PREFIX=$TMP/prefix

# --- 1. a sources list of our own: deb-src for the suites of every enabled
# Debian "deb" source of this machine (one-line .list and deb822 .sources).
list=$TMP/apt/sources.list
{
	for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
		[ -f "$f" ] || continue
		# deb [opts] URI SUITE COMPONENT...
		sed -n 's/^[[:space:]]*deb[[:space:]]\{1,\}/deb-src /p' "$f"
	done
	for f in /etc/apt/sources.list.d/*.sources; do
		[ -f "$f" ] || continue
		awk '
		function flush() {
			if (types ~ /(^|[ \t])deb([ \t]|$)/ && uris != "" && suites != "" && enabled != "no")
				for (i = 1; i <= nu; i++) for (j = 1; j <= ns; j++)
					printf "deb-src %s%s %s %s\n", signed, u[i], s[j], comps
			types = uris = suites = comps = signed = ""; enabled = ""; nu = ns = 0
		}
		/^[ \t]*#/ { next }
		/^[ \t]*$/ { flush(); next }
		{
			key = tolower($1); sub(/:$/, "", key); $1 = ""; sub(/^[ \t]+/, "")
			if (key == "types") types = $0
			else if (key == "uris") { uris = $0; nu = split($0, u, /[ \t]+/) }
			else if (key == "suites") { suites = $0; ns = split($0, s, /[ \t]+/) }
			else if (key == "components") comps = $0
			else if (key == "enabled") enabled = tolower($0)
			else if (key == "signed-by" && $0 ~ /^\//) signed = "[signed-by=" $0 "] "
		}
		END { flush() }' "$f"
	done
} | grep -E '^deb-src .*debian' | sort -u > "$list" || true
[ -s "$list" ] || die "no Debian 'deb' line in /etc/apt/sources.list(.d): cannot add deb-src"
say "sources: $(wc -l < "$list") deb-src line(s) for this machine's Debian suites"

APT="-o Dir::Etc::SourceList=$list -o Dir::Etc::SourceParts=$TMP/apt/parts
	-o Dir::State::Lists=$TMP/apt/lists -o Dir::Cache=$TMP/apt/cache
	-o Dir::Cache::pkgcache= -o Dir::Cache::srcpkgcache=
	-o APT::Sandbox::User=root -o Debug::NoLocking=true -q"
# shellcheck disable=SC2086
apt-get $APT update >/dev/null || die "apt-get update of the deb-src lists failed"
# Newest version first; a version the lists name but the mirror does not
# serve (a security update not mirrored yet) falls back to the next one.
# DEPS_VERSIONS="zlib=1:1.2.13.dfsg-1 ..." pins versions instead.
versions_of() {
	# shellcheck disable=SC2086
	apt-cache $APT showsrc --only-source "$1" 2>/dev/null |
		sed -n 's/^Version:[[:space:]]*//p' | sort -u |
		while read -r v; do
			n=0
			for w in $(apt-cache $APT showsrc --only-source "$1" 2>/dev/null |
					sed -n 's/^Version:[[:space:]]*//p' | sort -u); do
				dpkg --compare-versions "$w" gt "$v" && n=$((n + 1))
			done
			printf '%d %s\n' "$n" "$v"
		done | sort -n | cut -d' ' -f2
}
(
	cd "$TMP/src"
	for p in $SRCPKGS; do
		pin=
		for pv in ${DEPS_VERSIONS:-}; do
			[ "${pv%%=*}" = "$p" ] && pin=${pv#*=}
		done
		got=
		for v in ${pin:-$(versions_of "$p")}; do
			# shellcheck disable=SC2086
			if apt-get $APT source --only-source "$p=$v" >"$p.log" 2>&1; then
				got=$v
				break
			fi
			say "$p $v: not served by the mirror, trying an older version"
			rm -rf "./${p}_"* "./$p-"*
		done
		[ -n "$got" ] || { cat "$p.log" >&2; die "apt-get source $p failed"; }
	done
)

# Exact versions, from the .dsc files that apt fetched.
: > "$TMP/VERSIONS"
for p in $SRCPKGS; do
	dsc=$(ls "$TMP/src/${p}_"*.dsc 2>/dev/null | head -n1)
	[ -n "$dsc" ] || die "no .dsc for $p"
	v=$(sed -n 's/^Version:[[:space:]]*//p' "$dsc")
	printf '%s %s\n' "$p" "$v" >> "$TMP/VERSIONS"
done
say "versions: $(tr '\n' ' ' < "$TMP/VERSIONS")"

srcdir() { # the directory dpkg-source unpacked package $1 into
	for d in "$TMP/src/$1"-*/; do [ -d "$d" ] && { echo "${d%/}"; return; }; done
	die "no unpacked source for $1"
}
run() { # quiet unless it fails
	log=$TMP/src/step.log
	"$@" >"$log" 2>&1 || { tail -n 40 "$log" >&2; die "failed: $*"; }
}
export CC="$HOST-gcc" AR="$HOST-ar" RANLIB="$HOST-ranlib"
BASECFLAGS="-O2"

# --- 2. zlib: Debian's tarball has no win32/ makefile; the library is its
# top-level .c files.
d=$(srcdir zlib); say "zlib: $d"
(cd "$d" && for c in adler32 compress crc32 deflate gzclose gzlib gzread gzwrite \
		infback inffast inflate inftrees trees uncompr zutil; do
		run "$CC" $BASECFLAGS -c -o "$c.o" "$c.c" || exit 1
	done && run "$AR" rcs libz.a ./*.o)
cp "$d/zlib.h" "$d/zconf.h" "$PREFIX/include/"
cp "$d/libz.a" "$PREFIX/lib/"

# --- 3. liblzma: the library only.
d=$(srcdir xz-utils); say "xz-utils: $d"
(cd "$d" && run ./configure --host="$HOST" --prefix="$PREFIX" \
	--enable-static --disable-shared --disable-xz --disable-xzdec \
	--disable-lzmadec --disable-lzmainfo --disable-lzma-links --disable-scripts \
	--disable-doc --disable-nls --enable-threads=vista CFLAGS="$BASECFLAGS" &&
	run make -j"$JOBS" -C src/liblzma && run make -C src/liblzma install)

# --- 3b. libzstd: the static library (store bundles are zstd).
d=$(srcdir libzstd); say "libzstd: $d"
(cd "$d" && run make -j"$JOBS" -C lib libzstd.a CC="$CC" AR="$AR" \
	CFLAGS="$BASECFLAGS" ZSTD_LEGACY_SUPPORT=0 &&
	cp lib/zstd.h lib/zstd_errors.h lib/zdict.h "$PREFIX/include/" &&
	cp lib/libzstd.a "$PREFIX/lib/")

# --- 4. libarchive: zlib, lzma and zstd only.
d=$(srcdir libarchive); say "libarchive: $d"
(cd "$d" && run autoreconf -fi &&
	run ./configure --host="$HOST" --prefix="$PREFIX" \
	--enable-static --disable-shared --disable-bsdtar --disable-bsdcat \
	--disable-bsdcpio --disable-acl --disable-xattr \
	--with-zlib --with-lzma --with-zstd --without-bz2lib --without-iconv --without-lz4 \
	--without-lzo2 --without-cng --without-openssl \
	--without-nettle --without-mbedtls --without-xml2 --without-expat \
	CFLAGS="$BASECFLAGS" CPPFLAGS="-I$PREFIX/include -DLZMA_API_STATIC" \
	LDFLAGS="-L$PREFIX/lib" &&
	run make -j"$JOBS" libarchive.la &&
	run make install-libLTLIBRARIES install-includeHEADERS)

# --- 5. jansson.
d=$(srcdir jansson); say "jansson: $d"
(cd "$d" && { [ -x configure ] || run autoreconf -fi; } &&
	run ./configure --host="$HOST" --prefix="$PREFIX" --enable-static \
	--disable-shared CFLAGS="$BASECFLAGS" &&
	run make -j"$JOBS" -C src && run make -C src install)

# --- 6. the result: headers, static libraries, versions, flags.
rm -rf "$PREFIX/lib/pkgconfig" "$PREFIX/share" "$PREFIX"/lib/*.la
for a in libz.a liblzma.a libzstd.a libarchive.a libjansson.a; do
	[ -f "$PREFIX/lib/$a" ] || die "$a was not built"
done
cat > "$PREFIX/deps.mk" <<'EOF'
# Made by packaging/windows/build-deps.sh: flags for linking its static libraries.
DEPS_CFLAGS = -DLIBARCHIVE_STATIC -DLZMA_API_STATIC
DEPS_LIBS = -larchive -lzstd -llzma -lz -ljansson -lbcrypt
EOF
mv "$TMP/VERSIONS" "$PREFIX/VERSIONS"
printf '%s\n' "$want_stamp" > "$PREFIX/stamp"
rm -rf "$DEST"
mv "$PREFIX" "$DEST"
say "done: $DEST ($(tr '\n' ' ' < "$DEST/VERSIONS"))"
