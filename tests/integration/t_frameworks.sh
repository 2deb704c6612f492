#!/bin/bash
# SPDX-License-Identifier: MIT
# Framework truth: what the frameworks of a Python environment need (pip's
# METADATA pins with their markers, JAX's range, TensorFlow's build_info,
# conda-meta, the table for those with no pin), which copy they load (their
# wheel, LD_LIBRARY_PATH, a conda env's own), and what doctor --python, exec,
# use --for and install --for make of it. Environments are laid out as pip and
# conda leave them; no interpreter runs.
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"
# shellcheck source-path=SCRIPTDIR source=lib_activate.sh
. "$TESTS_DIR/integration/lib_activate.sh"

act_root
inst 8.9.7.29 11.8
inst 9.1.1.17 12.4
inst 9.1.0.70 12.4

# dist ENVSITE NAME VERSION [HEADER LINE...]: NAME-VERSION.dist-info/METADATA as pip writes it.
dist() {
	local d=$1/$2-$3.dist-info name=$2 version=$3
	shift 3
	mkdir -p "$d"
	{
		printf 'Metadata-Version: 2.1\nName: %s\nVersion: %s\n' "$name" "$version"
		printf '%s\n' "$@"
		printf '\nA description, where a Requires-Dist: nvidia-cudnn-cu12==1.0 line is no header.\n'
	} >"$d/METADATA"
}

# venv DIR: a venv as python -m venv leaves it (bin/python3, pyvenv.cfg,
# lib/python3.12/site-packages); the interpreter is a script that says it ran.
# Sets SITE.
venv() {
	mkdir -p "$1/bin" "$1/lib/python3.12/site-packages"
	printf '#!/bin/sh\necho "python ran: $*"\n' >"$1/bin/python3"
	chmod +x "$1/bin/python3"
	ln -s python3 "$1/bin/python"
	printf 'home = /usr/bin\ninclude-system-site-packages = false\nversion = 3.12.3\n' >"$1/pyvenv.cfg"
	SITE=$1/lib/python3.12/site-packages
}

# wheel SITE VERSION: the nvidia-cudnn-cu12 wheel's files (a real copy: the store's 9.1.0.70 libraries).
wheel() {
	mkdir -p "$1/nvidia/cudnn/lib" "$1/nvidia_cudnn_cu12-$2.dist-info"
	cp -a "$STORE/versions/$ID910/lib/." "$1/nvidia/cudnn/lib/"
	printf 'Metadata-Version: 2.1\nName: nvidia-cudnn-cu12\nVersion: %s\n\n' "$2" \
		>"$1/nvidia_cudnn_cu12-$2.dist-info/METADATA"
}

# A: PyTorch from pip, its pin for Linux (and another for Windows), its wheel beside it.
VA=/opt/torch
venv "$ROOT$VA"
dist "$SITE" torch 2.4.0 'Requires-Dist: filelock' \
	'Requires-Dist: nvidia-cudnn-cu12==9.9.9.9; platform_system == "Windows"' \
	'Requires-Dist: nvidia-cudnn-cu12==9.1.0.70; platform_system == "Linux" and platform_machine == "x86_64"'
dist "$SITE" jax_cuda12_plugin 0.4.31 'Requires-Dist: nvidia-cudnn-cu12<10.0,>=9.1; extra == "with-cuda"'
dist "$SITE" numpy 2.0.0
wheel "$SITE" 9.1.0.70

cvm --json doctor --python "$VA/bin/python3"
assert_json 'd["frameworks"] == [
 {"name": "torch", "version": "2.4.0", "python": "/opt/torch/bin/python3",
  "requires": "nvidia-cudnn-cu12==9.1.0.70", "needs": "cuDNN 9.1 or a newer 9.x",
  "rule": "same major, not older than the build",
  "loads": {"path": "/opt/torch/lib/python3.12/site-packages/nvidia/cudnn/lib/libcudnn.so.9",
            "version": "9.1.0.70",
            "why": "the environment'"'"'s nvidia-cudnn wheel, which the framework loads by its own path"},
  "problem": None},
 {"name": "jax-cuda12-plugin", "version": "0.4.31", "python": "/opt/torch/bin/python3",
  "requires": "nvidia-cudnn-cu12<10.0,>=9.1", "needs": "cuDNN 9.1 or newer, older than 10.0",
  "rule": "the range as written",
  "loads": {"path": "/opt/torch/lib/python3.12/site-packages/nvidia/cudnn/lib/libcudnn.so.9",
            "version": "9.1.0.70",
            "why": "the environment'"'"'s nvidia-cudnn wheel, which the framework loads by its own path"},
  "problem": None}]' \
	"doctor --python (pip venv): torch's Linux pin (not the Windows one, not the description's), JAX's range, the wheel copy each loads"
cvm doctor --python "$VA/bin/python3"
assert_out_contains "  torch 2.4.0 (/opt/torch/bin/python3): needs cuDNN 9.1 or a newer 9.x (nvidia-cudnn-cu12==9.1.0.70); loads /opt/torch/lib/python3.12/site-packages/nvidia/cudnn/lib/libcudnn.so.9, cuDNN 9.1.0.70 (the environment's nvidia-cudnn wheel, which the framework loads by its own path): ok" \
	"doctor --python as text: torch's need, the copy it loads, ok"
assert_rc 0 "doctor --python: exit 0 when torch gets what it needs"
cvm --json doctor --python "$VA"
assert_json 'len(d["frameworks"]) == 2 and d["frameworks"][0]["python"] == "/opt/torch"' \
	"doctor --python takes the environment's folder too"

# LD_LIBRARY_PATH holding an older 9 comes first (as exec's would): a problem, exit 1.
OLD=$TEST_TMP/old90
mkdir -p "$OLD"
cp -a "$STORE/versions/$ID910/lib/." "$OLD/"
for f in "$OLD"/*.so.9.1.0; do mv "$f" "${f%.so.9.1.0}.so.9.0.0"; ln -sfn "$(basename "${f%.so.9.1.0}").so.9.0.0" "${f%.so.9.1.0}.so.9"; done
LD_LIBRARY_PATH=$OLD cvm --json doctor --python "$VA/bin/python3"
assert_rc 1 "doctor with an older cuDNN 9 on LD_LIBRARY_PATH: exit 1"
WANT="torch 2.4.0 (/opt/torch/bin/python3) needs cuDNN 9.1 or a newer 9.x (nvidia-cudnn-cu12==9.1.0.70; rule: same major, not older than the build), but loads $OLD/libcudnn.so.9.0.0, cuDNN 9.0.0 (LD_LIBRARY_PATH): older"
assert_json 'd["frameworks"][0]["problem"] == "'"$WANT"'" and d["frameworks"][0]["loads"]["path"] == "'"$OLD"'/libcudnn.so.9.0.0"' \
	"... torch's problem: it loads LD_LIBRARY_PATH's 9.0.0, older than its build"
assert_json 'any(p["problem"] == "'"$WANT"'" and p["fix"].startswith("take that folder out of LD_LIBRARY_PATH") for p in d["problems"])' \
	"... in doctor's problems, with the fix"

# B: a pin newer than anything installed (too old); C: two that disagree; D: no pin known.
VB=/opt/envb
venv "$ROOT$VB"
dist "$SITE" torch 2.5.0 'Requires-Dist: nvidia-cudnn-cu12==9.2.0.82; platform_system == "Linux"'
VC=/opt/envc
venv "$ROOT$VC"
dist "$SITE" torch 2.4.0 'Requires-Dist: nvidia-cudnn-cu12==9.1.0.70; sys_platform == "linux"'
dist "$SITE" onnxruntime_gpu 1.18.0
VD=/opt/envd
venv "$ROOT$VD"
dist "$SITE" onnxruntime_gpu 1.6.0
dist "$SITE" cupy_cuda12x 13.3.0
dist "$SITE" cupy_cuda13x 14.0.0
# E: TensorFlow's build_info, no pin; F: ONNX Runtime 1.19 by the table; both with a script.
VE=/opt/enve
venv "$ROOT$VE"
dist "$SITE" tensorflow 2.15.0 'Requires-Dist: numpy'
mkdir -p "$SITE/tensorflow/python/platform"
printf "import os\nbuild_info = {'cuda_version': '11.8', 'cudnn_version': '8', 'is_cuda_build': True}\n" \
	>"$SITE/tensorflow/python/platform/build_info.py"
dist "$SITE" ctranslate2 3.24.0

cvm --json doctor --python "$VD/bin/python3" --python "$VE/bin/python3"
assert_json '[(f["name"], f["requires"], f["needs"], f["rule"], f["problem"]) for f in d["frameworks"]] == [
 ("onnxruntime-gpu", None, None, None, None),
 ("cupy-cuda12x", None, None, None, None),
 ("tensorflow", "build_info cudnn_version 8", "cuDNN 8.x", "same major",
  "tensorflow 2.15.0 (/opt/enve/bin/python3) needs cuDNN 8.x (build_info cudnn_version 8) and finds no cuDNN 8"),
 ("ctranslate2", "cuDNN 8.x (CTranslate2 3.0-4.4: cuDNN 8)", "cuDNN 8.x", "same major",
  "ctranslate2 3.24.0 (/opt/enve/bin/python3) needs cuDNN 8.x (cuDNN 8.x (CTranslate2 3.0-4.4: cuDNN 8)) and finds no cuDNN 8")]' \
	"doctor --python twice: ONNX Runtime 1.6 and CuPy 13 (no pin known; CuPy 14 uses no cuDNN: not listed), TensorFlow's build_info and CTranslate2 by the table, neither finding a cuDNN 8"
assert_rc 1 "... exit 1"
assert_json '{"what": "onnxruntime-gpu 1.6.0 in '"$VD"'/bin/python3", "why": "it publishes no cuDNN pin and cudnnvm'"'"'s table has no entry for it (no pin known)"} in d["not_checked"]' \
	"... the one with no pin known is said as not checked"

cvm doctor --python /opt/nothing/bin/python3
assert_rc 1 "doctor --python of no environment: exit 1"
assert_err_line "--python '/opt/nothing/bin/python3': no site-packages found in $ROOT/opt/nothing (looked for lib/python3.*/site-packages and Lib/site-packages)" \
	"... naming it"
cvm doctor --python
assert_rc 2 "doctor --python without a path: exit 2"

# A FIFO where METADATA and build_info belong (a user's files): refused unread, nothing hangs.
VH=/opt/envh
venv "$ROOT$VH"
mkdir -p "$SITE/torch-2.4.0.dist-info" "$SITE/tensorflow-2.15.0.dist-info" "$SITE/tensorflow/python/platform"
mkfifo "$SITE/torch-2.4.0.dist-info/METADATA" "$SITE/tensorflow/python/platform/build_info.py"
printf 'Metadata-Version: 2.1\nName: tensorflow\nVersion: 2.15.0\n\n' >"$SITE/tensorflow-2.15.0.dist-info/METADATA"
cvm --json doctor --python "$VH/bin/python3"
assert_json '[(f["name"], f["requires"]) for f in d["frameworks"]] == [("tensorflow", None)]' \
	"FIFOs as METADATA and build_info: not read (torch left out, tensorflow's need unknown), no hang"

# Without --python: the conda environments doctor finds by itself (/opt/conda/envs/*).
CE=$ROOT/opt/conda/envs/ml
mkdir -p "$CE/conda-meta" "$CE/lib/python3.11/site-packages/torch-2.1.0.dist-info"
printf 'Metadata-Version: 2.1\nName: torch\nVersion: 2.1.0\n\n' >"$CE/lib/python3.11/site-packages/torch-2.1.0.dist-info/METADATA"
printf '{"name": "pytorch", "version": "2.1.0", "depends": ["cudnn >=8.9.2.26,<9.0a0", "python >=3.11"], "files": []}\n' \
	>"$CE/conda-meta/pytorch-2.1.0-py3.11_cuda12.1_cudnn8.9.2_0.json"
printf '{"name": "cudnn", "version": "8.9.7.29", "depends": []}\n' >"$CE/conda-meta/cudnn-8.9.7.29-cuda11_0.json"
cp -a "$STORE/versions/$ID897/lib/." "$CE/lib/"
cvm --json doctor
assert_json '[f for f in d["frameworks"] if f["python"] == "/opt/conda/envs/ml"] == [
 {"name": "torch", "version": "2.1.0", "python": "/opt/conda/envs/ml", "requires": "cudnn >=8.9.2.26,<9.0a0",
  "needs": "cuDNN 8.9.2.26 or newer, older than 9.0", "rule": "the range as written",
  "loads": {"path": "/opt/conda/envs/ml/lib/libcudnn.so.8", "version": "8.9.7.29",
            "why": "the conda environment'"'"'s own copy"}, "problem": None}]' \
	"doctor without --python finds the conda env: pytorch's conda pin, the env's own cudnn"

# ------------------------------------------------------------ exec
# exec runs on this system: the environments by their host paths.
VX=/opt/envx
venv "$ROOT$VX"
dist "$SITE" torch 2.4.0 'Requires-Dist: nvidia-cudnn-cu12==9.1.0.70; platform_system == "Linux"'
wheel "$SITE" 9.1.0.70
cvm exec 8.9.7 --cuda 11.8 -- "$ROOT$VX/bin/python3" -c 'import torch'
assert_rc 1 "exec 8.9.7 -- python of an env whose torch needs 9.1: exit 1"
assert_err_line "exec: the environment of '$ROOT$VX/bin/python3' ($ROOT$VX) cannot use cuDNN $ID897: torch 2.4.0 needs cuDNN 9.1 or a newer 9.x (nvidia-cudnn-cu12==9.1.0.70; another major); exec's LD_LIBRARY_PATH would come before any copy of its own ('cudnnvm exec --force' runs it anyway)" \
	"... naming the framework, its need, the version, even with its own wheel"
assert_out_lacks "python ran" "... and nothing ran"
cvm exec 8.9.7 --cuda 11.8 --force -- "$ROOT$VX/bin/python3" -c x
assert_rc 0 "exec --force runs it anyway: exit 0"
assert_out_contains "python ran: -c x" "... and it ran"
assert_err_contains "cannot use cuDNN $ID897: torch 2.4.0 needs" "... with a warning"
cvm exec 9.1.1 --cuda 12.4 -- "$ROOT$VX/bin/python3" -c x
assert_rc 0 "exec 9.1.1 (newer than torch's 9.1.0 build, same major): runs"
cvm exec 9.1.0 --cuda 12.4 -- "$ROOT$VB/bin/python3" -c x
assert_rc 1 "exec 9.1.0 -- python of an env whose torch needs 9.2: exit 1 (too old)"
assert_err_contains "torch 2.5.0 needs cuDNN 9.2 or a newer 9.x (nvidia-cudnn-cu12==9.2.0.82; older)" "... saying it is older"
# A script whose shebang names the env's python, found through PATH; and one through env.
mkdir -p "$TEST_TMP/bin"
printf '#!%s\nprint(1)\n' "$ROOT$VX/bin/python3" >"$TEST_TMP/bin/train"
printf '#!/usr/bin/env python3\nprint(1)\n' >"$TEST_TMP/bin/train-env"
chmod +x "$TEST_TMP/bin/train" "$TEST_TMP/bin/train-env"
PATH=$TEST_TMP/bin:$PATH cvm exec 8.9.7 --cuda 11.8 -- train
assert_rc 1 "exec -- a script whose shebang is the env's python: refused"
PATH=$ROOT$VX/bin:$TEST_TMP/bin:$PATH cvm exec 8.9.7 --cuda 11.8 -- train-env
assert_rc 1 "exec -- a script of '#!/usr/bin/env python3' with the env's python first on PATH: refused"
cvm exec 8.9.7 --cuda 11.8 -- "$ROOT$VD/bin/python3" -c x
assert_rc 0 "exec -- python of an env whose framework has no pin known: runs"
cvm exec 8.9.7 --cuda 11.8 -- true
assert_rc 0 "exec -- a program that is no Python: runs"

# ------------------------------------------------------------ use --for / install --for
cvm use --for "$VX/bin/python3" --cuda 12.4 --no-smoke
assert_rc 0 "use --for PY --cuda 12.4: exit 0"
assert_symlink "$STORE/active/cuda-12.4" "../versions/$ID911" "... activates the newest installed it takes, 9.1.1.17"
cvm use --for "$VE/bin/python3" --no-smoke
assert_rc 0 "use --for the TensorFlow env (build_info 8) on the default toolkit 11.8: exit 0"
assert_symlink "$STORE/active/cuda-11.8" "../versions/$ID897" "... activates 8.9.7.29"
cvm use --for "$VB/bin/python3" --cuda 12.4 --no-smoke
assert_rc 1 "use --for an env needing 9.2 (none installed): exit 1"
assert_err_line "--for '$VB/bin/python3': torch 2.5.0 needs cuDNN 9.2 or a newer 9.x; none of the installed versions for CUDA 12 does" \
	"... saying what it needs and that none installed does"
assert_symlink "$STORE/active/cuda-12.4" "../versions/$ID911" "... and leaves the active version"
cvm use --for "$VC/bin/python3" --cuda 12.4 --no-smoke
assert_rc 1 "use --for an env whose frameworks disagree: exit 1"
assert_err_line "--for '$VC/bin/python3': its frameworks disagree, no cuDNN serves them all: torch 2.4.0 needs cuDNN 9.1 or a newer 9.x, onnxruntime-gpu 1.18.0 needs cuDNN 8.x" \
	"... naming both"
cvm use --for "$VD/bin/python3" --cuda 12.4 --no-smoke
assert_rc 1 "use --for an env with no pin known: exit 1"
assert_err_line "--for '$VD/bin/python3': no framework there says which cuDNN it needs (see 'cudnnvm doctor --python $VD/bin/python3')" \
	"... saying so"
cvm use 9.1 --for "$VX/bin/python3"
assert_rc 2 "use VERSION --for PY: usage error"
# F: a range only 9.2.x meets; G: one the test's 9.1.1.17 (installed) is the newest of.
VF=/opt/envf
venv "$ROOT$VF"
dist "$SITE" jax_cuda12_plugin 0.4.31 'Requires-Dist: nvidia-cudnn-cu12<9.3,>=9.2; extra == "with-cuda"'
VG=/opt/envg
venv "$ROOT$VG"
dist "$SITE" jax_cuda12_plugin 0.4.26 'Requires-Dist: nvidia-cudnn-cu12 (<9.2,>=9.1) ; extra == "with-cuda"'
cvm --manifests "$MAN" install --dry-run --for "$VF/bin/python3" --cuda 12.4
assert_rc 0 "install --dry-run --for an env taking 9.2.x only: exit 0"
assert_out_contains "would create /opt/cudnnvm/versions/9.2.1.18-cuda12-linux-x86_64" \
	"... the newest release of the catalogue it takes, 9.2.1.18"
cvm --manifests "$MAN" install --for "$VG/bin/python3" --cuda 12.4
assert_rc 0 "install --for an env whose newest fit is installed: exit 0"
assert_output_contains "$ID911" "... 9.1.1.17, already there"
cvm --manifests "$MAN" install --for "$VC/bin/python3" --cuda 12.4
assert_rc 1 "install --for an env whose frameworks disagree: exit 1"
assert_err_contains "its frameworks disagree" "... saying so"
cvm install 9.1 --for "$VX/bin/python3"
assert_rc 2 "install VERSION --for PY: usage error"
# T: PyTorch's "large" wheel, every library bundled and no pin (pytorch/pytorch#85097): cuDNN 8
# in torch/lib, which it loads before any other. doctor says so; exec and --for leave it be.
VT=/opt/envt
venv "$ROOT$VT"
dist "$SITE" torch 1.12.1 'Requires-Dist: typing-extensions'
mkdir -p "$SITE/torch/lib"
cp -L "$STORE/versions/$ID897/lib/libcudnn.so.8" "$SITE/torch/lib/"
cvm --json doctor --python "$VT/bin/python3"
assert_json 'd["frameworks"] == [{"name": "torch", "version": "1.12.1", "python": "'"$VT"'/bin/python3", "requires": "bundled: torch/lib/libcudnn.so.8", "needs": "cuDNN 8.x", "rule": "same major", "loads": {"path": "'"$VT"'/lib/python3.12/site-packages/torch/lib/libcudnn.so.8", "version": None, "why": "its own copy, bundled with it, which it loads before any other"}, "problem": None}] and not any("torch" in n["what"] for n in d["not_checked"])' \
	"doctor --python, torch with cuDNN in torch/lib: the bundled copy is what it loads, no problem, nothing left unchecked"
cvm doctor --python "$VT/bin/python3"
assert_out_contains "  torch 1.12.1 ($VT/bin/python3): needs cuDNN 8.x (bundled: torch/lib/libcudnn.so.8); loads $VT/lib/python3.12/site-packages/torch/lib/libcudnn.so.8, cuDNN ? (its own copy, bundled with it, which it loads before any other): ok" \
	"doctor --python (text): the bundled copy, ok"
cvm exec 9.1.1 --cuda 12.4 -- "$ROOT$VT/bin/python3" -c x
assert_rc 0 "exec 9.1.1 -- python of an env whose torch bundles cuDNN 8: runs (it loads its own)"
cvm use --for "$VT/bin/python3" --cuda 12.4 --no-smoke
assert_rc 1 "use --for an env whose torch bundles its cuDNN: exit 1"
assert_err_line "--for '$VT/bin/python3': torch 1.12.1 loads the cuDNN 8 bundled with it (torch/lib), whatever is active: there is nothing to choose for it" \
	"... saying it loads its own copy"
finish
