#!/bin/sh
# SPDX-License-Identifier: MIT
#
# usage: sh tests/deps.sh [build] [test] [fuzz] [lint]   (default: build)
#
# Installs what a make target needs, when it is missing, from Debian's
# packages: as root, with apt-get; otherwise one line naming the apt-get
# command to run, and exit 1. Prints nothing when all is there.
#   build  the compiler, pkg-config and the libraries' headers (`make`, `make demo`)
#   test   what the integration tests run (`make check`)
#   fuzz   clang with libFuzzer and the sanitizer run-times (`make check`, `make fuzz`)
#   lint   cppcheck and clang-tidy (`make lint`)
set -eu
[ $# -gt 0 ] || set -- build
missing=
need() { # PACKAGE: add it once
	case " $missing " in *" $1 "*) ;; *) missing="$missing $1" ;; esac
}
tools() { # TOOL:PACKAGE...
	for t in "$@"; do
		command -v "${t%%:*}" >/dev/null 2>&1 || need "${t#*:}"
	done
}
for group in "$@"; do
	case $group in
	build)
		tools cc:gcc make:make ar:binutils pkg-config:pkg-config
		# The pkg-config modules the Makefile asks for, and their packages.
		for m in libarchive:libarchive-dev libcrypto:libssl-dev jansson:libjansson-dev \
			libcurl:libcurl4-openssl-dev liblzma:liblzma-dev; do
			if ! command -v pkg-config >/dev/null 2>&1 || ! pkg-config --exists "${m%%:*}" 2>/dev/null; then
				need "${m#*:}"
			fi
		done
		;;
	test)
		tools bash:bash xz:xz-utils python3:python3 flock:util-linux setpriv:util-linux \
			sha256sum:coreutils timeout:coreutils tar:tar gzip:gzip find:findutils \
			pgrep:procps
		;;
	fuzz)
		tools clang:clang
		# libFuzzer and the ASan/UBSan run-times are a package of their own.
		probe=$(mktemp -d "${TMPDIR:-/tmp}/cvm-deps.XXXXXX")
		printf 'int LLVMFuzzerTestOneInput(const char *d, unsigned long n);\nint LLVMFuzzerTestOneInput(const char *d, unsigned long n) { (void)d; (void)n; return 0; }\n' >"$probe/p.c"
		if ! command -v clang >/dev/null 2>&1 ||
			! clang -fsanitize=fuzzer,address,undefined "$probe/p.c" -o "$probe/p" >/dev/null 2>&1; then
			need libclang-rt-dev
		fi
		rm -rf "$probe"
		;;
	lint)
		tools cppcheck:cppcheck clang-tidy:clang-tidy
		;;
	*)
		echo "deps.sh: unknown group '$group' (build, test, fuzz or lint)" >&2
		exit 2
		;;
	esac
done
[ -z "$missing" ] && exit 0
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
	echo "missing packages; as root run: apt-get install$missing" >&2
	exit 1
fi
echo "installing:$missing"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
# shellcheck disable=SC2086
apt-get install -y -qq --no-install-recommends $missing >/dev/null
