# shellcheck shell=sh disable=SC2034 # fail, rc, CLEANUP: read by the sourcing script
# SPDX-License-Identifier: MIT
# Sourced by the GPU scripts (tests/gpu/*.sh) after they set NAME: what each
# of them needs first. Sets B (the cudnnvm binary: CUDNNVM), CUDA, REAL and
# CV (the machine's toolkit and its version), OUT, WORK (removed at exit,
# after the command in CLEANUP), fail=0; exits 1 without the binary, 77
# without a GPU unless DRY_RUN=1 (walks on) or NEED_GPU=0 (uses none).
B=${CUDNNVM:-$PWD/build/cudnnvm}
CUDA=${CUDA_HOME:-/usr/local/cuda}
REAL=$(readlink -f "$CUDA")
CV=$(basename "$REAL" | sed 's/^cuda-//')
OUT=${OUT:-$(mktemp -d)}
mkdir -p "$OUT"
export CUDNNVM_NO_PROGRESS=1 CUDNNVM_LDCONFIG=
fail=0
CLEANUP=:
[ -x "$B" ] || { echo "${NAME:?}: no cudnnvm binary at $B (set CUDNNVM)"; exit 1; }
if [ -z "${DRY_RUN:-}" ] && [ "${NEED_GPU:-1}" != 0 ] && { ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L >/dev/null 2>&1; }; then
	echo "$NAME: skipped: no NVIDIA GPU here"
	exit 77
fi
WORK=$(mktemp -d)
trap 'eval "$CLEANUP"; rm -rf "$WORK"' EXIT

# show CMD...: runs CMD, its output as it comes, then its exit code; sets rc.
show() { echo; echo "\$ $*"; "$@"; rc=$?; echo "(exit $rc)"; return $rc; }

# step NAME CMD...: runs CMD (10 min at most) into $OUT/step.out (and $LOG when set),
# prints it, its output and exit code; sets rc.
step() {
	name=$1
	shift
	echo
	echo "== $name"
	echo "\$ $*"
	timeout 600 "$@" >"$OUT/step.out" 2>&1
	rc=$?
	cat "$OUT/step.out"
	[ -z "${LOG:-}" ] || cat "$OUT/step.out" >>"$LOG"
	echo "(exit $rc)"
	return 0
}

# expect WANT WHAT: after show or step, rc must be WANT, else fail=1.
expect() {
	if [ "$rc" = "$1" ]; then echo "ok: $2 (exit $rc)"; else echo "UNEXPECTED: $2: exit $rc, want $1"; fail=1; fi
}

# toolkit_root R LIB...: a --root R whose toolkit usr/local/cuda-$CV (and the
# usr/local/cuda link) has this machine's cuda_runtime_api.h and links to LIBs.
toolkit_root() {
	_tk=$1/usr/local/cuda-$CV
	shift
	mkdir -p "$_tk/include" "$_tk/lib64" "${_tk%/usr/local/*}/etc/ld.so.conf.d"
	cp "$REAL/include/cuda_runtime_api.h" "$_tk/include/" || echo "NOTE: no cuda_runtime_api.h in $REAL/include"
	for _f; do ln -s "$_f" "$_tk/lib64/"; done
	ln -s "/usr/local/cuda-$CV" "${_tk%/usr/local/*}/usr/local/cuda"
}
