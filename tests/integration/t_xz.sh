#!/bin/bash
# SPDX-License-Identifier: MIT
# The xz decoder and the two ways to verify and extract: multi-block archives
# (xz -T2 --block-size) install byte for byte as tar extracts them, with any
# --jobs, speculatively (decoding in a confined child while the parent
# hashes) or with --verify-first; a corrupted block in the middle is exit 3
# with nothing left; a hash mismatch while the child is extracting stops it
# and leaves no version and no staging; the child cannot reach outside the
# staging folder.
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"

# This script sets --jobs and the path itself.
unset CUDNNVM_JOBS CUDNNVM_VERIFY_FIRST
V=9.19.0.56
ID=$(id_of $V 13)
blocks() { xz --robot -l "$1" | awk '$1 == "totals" { print $3 }'; }

# A fake cuDNN whose sub-library holds PAYLOAD_MB of text-like data (it
# decodes at xz's real speed), packed with XZ_OPT=OPTS.
big_archive() { # OUT OPTS PAYLOAD_MB
	local t=$TEST_TMP/tree.$RANDOM top
	mkdir -p "$t"
	tar -xJf "$(mkcudnn $V 13)" -C "$t"
	top=$(ls "$t")
	python3 - "$t/$top/lib/libcudnn_engines_precompiled.so.9.19.0" "$3" <<'EOF'
import random, sys
r = random.Random(7)
words = [bytes(r.choice(b"abcdefghijklmnopqrstuvwxyz") for _ in range(r.randint(2, 9))) for _ in range(4000)]
with open(sys.argv[1], "wb") as f:
    for i in range(int(sys.argv[2]) * 16):
        if i % 5 == 4:
            f.write(r.randbytes(65536))
        else:
            f.write(b" ".join(r.choices(words, k=9000))[:65536].ljust(65536, b"."))
EOF
	mkdir -p "$(dirname "$1")"
	(cd "$t" && XZ_OPT=$2 tar --sort=name --owner=0 --group=0 --numeric-owner --mtime=@1700000000 \
		-cJf "$1" "$top")
	rm -rf "$t"
	echo "$1"
}

# The sha256 of every file as tar extracts it: the reference for each install.
tar_sums() { # ARCHIVE
	local t=$TEST_TMP/ref.$RANDOM
	mkdir -p "$t"
	tar -xJf "$1" -C "$t"
	(cd "$t"/* && find . -type f -printf '%P\n' | LC_ALL=C sort | xargs -d '\n' sha256sum)
	rm -rf "$t"
}

# installs_as_tar NAME ARCHIVE WANT_BLOCKS_RE INSTALL-ARGS...: a fresh install
# exits 0, says how it decoded, and its files are tar's.
installs_as_tar() {
	local name=$1 archive=$2 want=$3
	shift 3
	new_root
	cvm -v install 9.19.0 --cuda 13.0 --archive "$archive" --sha256 "$(sha256 "$archive")" "$@"
	assert_rc 0 "$name: exit 0"
	assert_err_matches "$want" "$name: -v says how it was decoded ($want)"
	if (cd "$STORE/versions/$ID" && sha256sum --quiet --strict -c "$REF" >/dev/null 2>&1); then
		ok "$name: every file is what tar extracts"
	else
		not_ok "$name: every file is what tar extracts" \
			"$(cd "$STORE/versions/$ID" && sha256sum --quiet -c "$REF" 2>&1 | head -n 5)"
	fi
	assert_sha256sum_c "$STORE/versions/$ID" "$name: files.sha256 verifies"
	cvm verify
	assert_rc 0 "$name: cudnnvm verify passes"
	assert_store_clean "$name: work areas empty"
}

spec_available=1
new_root
A1=$(copy_archive "$(mkcudnn $V 13)" single)
cvm -v install 9.19.0 --cuda 13.0 --archive "$A1" --sha256 "$(sha256 "$A1")"
assert_rc 0 "single-block fixture installs"
if grep -q 'extracting while verifying: in a confined process' "$CVM_ERRF"; then
	ok "-v names the speculative path by default"
else
	spec_available=0
	skip "-v names the speculative path by default" "no Landlock or seccomp here: $(grep -m1 'verifying first' "$CVM_ERRF")"
fi
assert_err_contains "xz: 1 block, 1 thread" "-v: a single-block file decodes in one thread"
new_root
cvm -v install 9.19.0 --cuda 13.0 --archive "$A1" --sha256 "$(sha256 "$A1")" --verify-first
assert_rc 0 "--verify-first installs"
assert_err_contains "verifying first, then extracting (--verify-first" "-v names the plain path with --verify-first"
new_root
CUDNNVM_VERIFY_FIRST=1 cvm -v install 9.19.0 --cuda 13.0 --archive "$A1" --sha256 "$(sha256 "$A1")"
assert_rc 0 "CUDNNVM_VERIFY_FIRST=1 installs"
assert_err_contains "verifying first" "CUDNNVM_VERIFY_FIRST=1 takes the plain path"

# --- multi-block archives, small and larger, decoded with any number of threads
# (copied: every mkcudnn of this version writes the same path)
AM=$(copy_archive "$(mkcudnn $V 13 --xz-opts '-T2 --block-size=16KiB')" multi-small)
nb=$(blocks "$AM")
check "the multi-block fixture has several blocks ($nb)" test "${nb:-0}" -ge 4
AB=$(big_archive "$TEST_TMP/big/cudnn-linux-x86_64-${V}_cuda13-archive.tar.xz" '-1 -T2 --block-size=100000' 4)
nbb=$(blocks "$AB")
check "the larger archive has many blocks of an odd size ($nbb)" test "${nbb:-0}" -ge 30
for archive in "$AM" "$AB"; do
	REF=$TEST_TMP/ref.sums
	tar_sums "$archive" >"$REF"
	n=$(blocks "$archive")
	tag=$([ "$archive" = "$AM" ] && echo "$n blocks" || echo "$n blocks, 4 MiB")
	installs_as_tar "$tag, default --jobs" "$archive" "xz: $n blocks, [0-9]+ threads?"
	installs_as_tar "$tag, --jobs 1" "$archive" "xz: $n blocks, 1 thread," --jobs 1
	installs_as_tar "$tag, --jobs 2" "$archive" "xz: $n blocks, 2 threads" --jobs 2
	installs_as_tar "$tag, --jobs 5" "$archive" "xz: $n blocks, 5 threads" --jobs 5
	installs_as_tar "$tag, --verify-first --jobs 2" "$archive" "verifying first" --verify-first --jobs 2
	installs_as_tar "$tag, --verify-first --jobs 1" "$archive" "xz: $n blocks, 1 thread," --verify-first --jobs 1
done
new_root
REF=$TEST_TMP/ref.sums
CUDNNVM_JOBS=3 cvm -v install 9.19.0 --cuda 13.0 --archive "$AB" --sha256 "$(sha256 "$AB")"
assert_rc 0 "CUDNNVM_JOBS=3: exit 0"
assert_err_matches "blocks, 3 threads" "CUDNNVM_JOBS=3 sets the default of --jobs"
cvm -v install 9.19.0 --cuda 13.0 --archive "$AB" --sha256 "$(sha256 "$AB")" --jobs 2 --force
assert_rc 0 "--force reinstall of a multi-block archive: exit 0"
assert_sha256sum_c "$STORE/versions/$ID" "--force reinstall: files verify"

# --- bad --jobs
for bad in 0 -1 x 257 2x ''; do
	cvm install 9.19.0 --cuda 13.0 --archive "$AM" --sha256 "$(sha256 "$AM")" --jobs "$bad"
	assert_rc 2 "--jobs '$bad' is a usage error"
done
CUDNNVM_JOBS=lots cvm install 9.19.0 --cuda 13.0 --archive "$AM" --sha256 "$(sha256 "$AM")"
assert_rc 2 "CUDNNVM_JOBS=lots is a usage error"

# refused NAME ARCHIVE WANT_RE ARGS...: exit 3, the message, nothing left
# (PRE: global options before the command).
PRE=()
refused() {
	local name=$1 archive=$2 want=$3
	shift 3
	new_root
	cvm "${PRE[@]}" -v install 9.19.0 --cuda 13.0 --archive "$archive" "$@"
	assert_rc 3 "$name: exit 3"
	assert_err_contains "$(basename "$archive")" "$name: stderr names the archive"
	assert_err_matches "$want" "$name: the message says why (/$want/)"
	assert_absent "$STORE/versions/$ID" "$name: no version"
	assert_empty_or_absent "$STORE/versions" "$name: versions/ is empty"
	assert_store_clean "$name: .staging and .trash empty"
	if pgrep -f -- "--root $ROOT " >/dev/null; then
		not_ok "$name: no cudnnvm process is left" "$(pgrep -a -f -- "--root $ROOT ")"
	else
		ok "$name: no cudnnvm process is left"
	fi
}

# --- a corrupted block in the middle
F=$(copy_archive "$AB" corrupt-block)
off=$(xz --robot -lvv "$F" | awk '$1 == "block" { n++; o[n] = $5 } END { print o[int(n / 2)] + 200 }')
flip_byte "$F" "$off"
H=$(sha256 "$F")
for args in "" "--jobs 1" "--jobs 2" "--verify-first" "--verify-first --jobs 1"; do
	# shellcheck disable=SC2086  # args are words
	refused "corrupt middle block, sha256 of the damaged file${args:+, $args}" "$F" \
		'corrupt archive .*xz' --sha256 "$H" $args
done
# shellcheck disable=SC2086
refused "corrupt middle block, sha256 of the original" "$F" 'SHA-256 mismatch' --sha256 "$(sha256 "$AB")"
if ! grep -qi 'corrupt archive' "$CVM_ERRF"; then ok "a mismatch is reported as one, not as the decoder's error"; else
	not_ok "a mismatch is reported as one, not as the decoder's error" "$(cat "$CVM_ERRF")"
fi
F=$(copy_archive "$AB" truncated-multi)
truncate_half "$F"
refused "truncated multi-block, its own sha256" "$F" 'corrupt archive' --sha256 "$(sha256 "$F")"
F=$(copy_archive "$AM" empty-xz)
xz -z </dev/null >"$F"
refused "an empty .xz, its own sha256" "$F" 'corrupt|empty|unrecognized' --sha256 "$(sha256 "$F")"

# --- a mismatching hash while the confined child is extracting
AS=$(big_archive "$TEST_TMP/slow/cudnn-linux-x86_64-${V}_cuda13-archive.tar.xz" '-1 -T2' 24)
refused "hash mismatch during speculative extraction" "$AS" 'SHA-256 mismatch' \
	--sha256 "$(sha256 "$AS" | tr 0-9a-f 1-9a-f0)" --jobs 1
if [ "$spec_available" = 1 ]; then
	if grep -q 'the extraction process was stopped while running; what it wrote is discarded' "$CVM_ERRF"; then
		ok "the child was stopped while it was still extracting"
	elif grep -q 'the extraction process had ended' "$CVM_ERRF"; then
		skip "the child was stopped while it was still extracting" "it had already ended (a slow parent)"
	else
		not_ok "the child was stopped while it was still extracting" "$(cat "$CVM_ERRF")"
	fi
	# the same with a catalogue entry (the staging folder is named for the id from the start)
	MAN=$TEST_TMP/man-slow
	mkcudnn $V 13 --manifest "$MAN" >/dev/null
	python3 - "$MAN/redistrib_9.19.0.json" "$AS" <<'EOF'
import json, os, sys
path, a = sys.argv[1:3]
d = json.load(open(path))
e = d["cudnn"]["linux-x86_64"]["cuda13"]
e["sha256"] = "0" * 64
e["size"] = str(os.path.getsize(a))
json.dump(d, open(path, "w"), indent=4)
EOF
	PRE=(--manifests "$MAN")
	refused "hash mismatch against the manifest during speculative extraction" "$AS" 'SHA-256 mismatch'
	PRE=()
	assert_err_matches 'extraction process (was stopped while running|had ended)' \
		"manifest mismatch: -v says the child was stopped"
fi
new_root
cvm install 9.19.0 --cuda 13.0 --archive "$AS" --sha256 "$(sha256 "$AS")" --jobs 1
assert_rc 0 "the intact larger archive installs afterwards"

# --- a crash of the parent while the child extracts leaves only staging, swept later
new_root
CUDNNVM_FAULT=install-extracting cvm install 9.19.0 --cuda 13.0 --archive "$AB" --sha256 "$(sha256 "$AB")"
assert_rc 137 "crash at install-extracting (--sha256, multi-block): SIGKILL"
assert_absent "$STORE/versions/$ID" "crash at install-extracting: no version"
# the child ends when it sees its parent gone (PR_SET_PDEATHSIG): wait for that, not a time
child_gone() { ! pgrep -f -- "--root $ROOT " >/dev/null; }
if ! wait_until child_gone; then
	not_ok "crash at install-extracting: the child died with its parent" "$(pgrep -a -f -- "--root $ROOT ")"
else
	ok "crash at install-extracting: the child died with its parent"
fi
cvm install 9.19.0 --cuda 13.0 --archive "$AB" --sha256 "$(sha256 "$AB")"
assert_rc 0 "the next install succeeds"
assert_store_clean "the next install swept the crash's staging folder"

# --- the child is confined (test builds: CUDNNVM_TEST_ESCAPE makes it try)
if [ "$spec_available" = 1 ]; then
	new_root
	CUDNNVM_TEST_ESCAPE=$ROOT/escaped cvm -v install 9.19.0 --cuda 13.0 --archive "$AM" --sha256 "$(sha256 "$AM")"
	assert_rc 0 "escape attempts: the install still succeeds"
	if grep -q 'confinement test' "$CVM_ERRF"; then
		for what in "create outside staging" "read outside staging" "socket" "signal the parent" "fork" "exec"; do
			if grep -q "confinement test: $what: allowed" "$CVM_ERRF" || ! grep -q "confinement test: $what: " "$CVM_ERRF"; then
				not_ok "the confined child cannot $what" "$(grep 'confinement test' "$CVM_ERRF")"
			else
				ok "the confined child cannot $what ($(sed -n "s/.*confinement test: $what: //p" "$CVM_ERRF"))"
			fi
		done
		assert_absent "$ROOT/escaped" "nothing was created outside the staging folder"
	else
		skip "the confined child cannot escape" "not a test build (no CUDNNVM_TEST_ESCAPE)"
	fi
fi

finish
