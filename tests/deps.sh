#!/bin/sh
# SPDX-License-Identifier: MIT
# Installs what building and testing cudnnvm needs, when it is missing, from
# Debian's packages (as root, with apt-get). Prints nothing when all is there.
set -eu
missing=
pkg-config --exists libarchive 2>/dev/null || missing="$missing libarchive-dev"
pkg-config --exists libcrypto 2>/dev/null || missing="$missing libssl-dev"
pkg-config --exists jansson 2>/dev/null || missing="$missing libjansson-dev"
pkg-config --exists libcurl 2>/dev/null || missing="$missing libcurl4-openssl-dev"
pkg-config --exists liblzma 2>/dev/null || missing="$missing liblzma-dev"
for tool in cc:gcc clang:clang make:make pkg-config:pkg-config xz:xz-utils python3:python3 flock:util-linux \
	sha256sum:coreutils; do
	command -v "${tool%%:*}" >/dev/null 2>&1 || missing="$missing ${tool#*:}"
done
[ -z "$missing" ] && exit 0
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
	echo "missing build or test dependencies:$missing (install them, e.g. with apt-get)" >&2
	exit 1
fi
echo "installing:$missing"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
# shellcheck disable=SC2086
apt-get install -y -qq --no-install-recommends $missing >/dev/null
