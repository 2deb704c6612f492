#!/bin/sh
# SPDX-License-Identifier: MIT
# The load closure on the GPU machine (no GPU is used: nothing is loaded):
# the real cuDNN 9.14 (system, NVIDIA's debs: libcudnn*.so.9 in
# /lib/x86_64-linux-gnu) and 9.19 (the nvidia-cudnn-cu13 wheel) each as a
# copy in a --root toolkit made of this machine's CUDA 13.0 libraries: doctor
# finds no library missing. The same toolkit without libnvrtc: doctor names
# libnvrtc.so.13 (exit 1), and use of the 9.19 installed from an archive of
# the wheel is refused (exit 4, nothing changed); --force activates it.
# With BENCH_CLOSURE=path of build/bench-closure: the check's cost of each.
#   CUDNNVM=build/cudnnvm sh tests/gpu/closure.sh
set -u
NAME=closure
NEED_GPU=0 # nothing is loaded
. tests/gpu/lib.sh
SYS=${CUDNN_SYSTEM_DIR:-/lib/x86_64-linux-gnu}
W=${CUDNN_DIR:-$(python3 -c 'import nvidia.cudnn as m; print(m.__path__[0])' 2>/dev/null)} || W=
[ -z "$W" ] && [ -x /opt/torch/.venv/bin/python3 ] &&
	W=$(/opt/torch/.venv/bin/python3 -c 'import nvidia.cudnn as m; print(m.__path__[0])' 2>/dev/null)
[ -n "$W" ] || { echo "closure: skipped: no nvidia-cudnn wheel"; exit 77; }
ls "$SYS"/libcudnn*.so.9 >/dev/null 2>&1 || { echo "closure: skipped: no cuDNN in $SYS"; exit 77; }

# root NAME CUDNN_LIB_DIR [nonvrtc]: a --root whose toolkit links every library of this
# machine's CUDA (without libnvrtc* with nonvrtc) and the cuDNN copy's libcudnn*.so.9.
root() {
	R=$WORK/$1
	set --  "$2" "${3:-}"
	_libs=
	for f in "$REAL"/lib64/lib*.so*; do
		case $(basename "$f") in
		libcudnn*) continue ;;
		libnvrtc*) [ "$2" = nonvrtc ] && continue ;;
		esac
		_libs="$_libs $f"
	done
	[ -z "$1" ] || _libs="$_libs $(echo "$1"/libcudnn*.so.9)"
	# shellcheck disable=SC2086 # library paths (no spaces in them): one argument each
	toolkit_root "$R" $_libs
}

echo "== machine"
echo "CUDA $CV at $REAL; cuDNN 9.14 (system) in $SYS; cuDNN wheel in $W"
for v in 914:"$SYS" 919:"$W/lib"; do
	root "c${v%%:*}" "${v#*:}"
	show "$B" --root "$R" doctor
	rc=0
	"$B" --root "$R" doctor 2>&1 | grep "cannot load" && rc=1
	expect 0 "cuDNN ${v%%:*} against CUDA $CV: every library found"
	if [ -n "${BENCH_CLOSURE:-}" ]; then
		show "$BENCH_CLOSURE" "${v#*:}" "$REAL" 21
	fi
done

# A toolkit copy without libnvrtc.
root nonvrtc "$W/lib" nonvrtc
show "$B" --root "$R" doctor
expect 1 "doctor with a toolkit without libnvrtc: exit 1"
"$B" --root "$R" doctor 2>&1 | grep "libnvrtc.so" || { echo "not ok - doctor names libnvrtc"; fail=1; }

V=${CUDNN_VERSION:-$(/opt/torch/.venv/bin/python3 -c 'import importlib.metadata as m; print(m.version("nvidia-cudnn-cu13"))' 2>/dev/null ||
	python3 -c 'import importlib.metadata as m; print(m.version("nvidia-cudnn-cu13"))')}
A=$WORK/cudnn-linux-x86_64-${V}_cuda13-archive.tar.xz
XZ_OPT='-0 -T0' sh tests/fixtures/pack-cudnn.sh "$W/include" "$W/lib" "$V" 13 "$A" >/dev/null
root nonvrtc2 "" nonvrtc
show "$B" --root "$R" install "$V" --cuda "$CV" --archive "$A" --sha256 "$(sha256sum "$A" | cut -d' ' -f1)"
expect 0 "install of $V (it warns: the toolkit lacks libnvrtc)"
show "$B" --root "$R" use "$V" --cuda "$CV" --no-smoke
expect 4 "use of $V for a toolkit without libnvrtc: refused"
show "$B" --root "$R" current --cuda "$CV"
show "$B" --root "$R" use "$V" --cuda "$CV" --no-smoke --force
expect 0 "use --force: activated anyway"
exit $fail
