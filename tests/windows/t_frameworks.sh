# SPDX-License-Identifier: MIT
# shellcheck shell=bash
#
# Framework truth on Windows (sourced by tests/windows/run.sh): a venv as
# Windows' python -m venv leaves it (Scripts\python.exe, Lib\site-packages),
# PyTorch's METADATA with a pin per platform (the Windows one must be taken),
# the nvidia-cudnn wheel's bin\cudnn64_9.dll; doctor --python's frameworks
# list, and use --for's answer against the installed 9.1.0.

# frameworks_are WVENV NAME WANT [MORE]: the "frameworks" of doctor --json ($OUT) are the
# Python value WANT, V being the venv's Windows path (and MORE, a Python condition on d, holds).
frameworks_are() {
	if printf '%s' "$OUT" | python3 -c "
import json, sys
d = json.load(sys.stdin)
V = sys.argv[1]
sys.exit(0 if d['frameworks'] == $3 and (${4:-True}) else 1)" "$1" 2>/dev/null; then
		ok "$2"
	else
		not_ok "$2" "$(diag_run)"
	fi
}

FV=$TMP/fwvenv
FS=$FV/Lib/site-packages
mkdir -p "$FV/Scripts" "$FS/torch-2.4.0.dist-info" "$FS/nvidia/cudnn/bin" "$FS/nvidia_cudnn_cu12-9.1.0.70.dist-info"
: >"$FV/Scripts/python.exe"
printf 'Metadata-Version: 2.1\nName: torch\nVersion: 2.4.0\nRequires-Dist: nvidia-cudnn-cu12==9.1.0.70; platform_system == "Windows"\nRequires-Dist: nvidia-cudnn-cu12==8.0.0.1; platform_system == "Linux"\n\n' \
	>"$FS/torch-2.4.0.dist-info/METADATA"
printf 'Metadata-Version: 2.1\nName: nvidia-cudnn-cu12\nVersion: 9.1.0.70\n\n' >"$FS/nvidia_cudnn_cu12-9.1.0.70.dist-info/METADATA"
: >"$FS/nvidia/cudnn/bin/cudnn64_9.dll"
WFV=$(winpath "$FV")
cvm --json doctor --python "$WFV\\Scripts\\python.exe"
frameworks_are "$WFV" "doctor --python (Windows venv): torch's Windows pin, the wheel's bin\\cudnn64_9.dll" \
	"[{'name': 'torch', 'version': '2.4.0', 'python': V + '\\\\Scripts\\\\python.exe',
	   'requires': 'nvidia-cudnn-cu12==9.1.0.70', 'needs': 'cuDNN 9.1 or a newer 9.x',
	   'rule': 'same major, not older than the build',
	   'loads': {'path': V + '\\\\Lib\\\\site-packages\\\\nvidia\\\\cudnn\\\\bin\\\\cudnn64_9.dll',
	             'version': '9.1.0.70',
	             'why': \"the environment's nvidia-cudnn wheel, which the framework loads by its own path\"},
	   'problem': None}]"
cvm doctor --python "$WFV\\nothing\\python.exe"
rc_is 1 "doctor --python of no environment: exit 1"
err_has "no site-packages found" "... saying there is no site-packages there"

# PyTorch's Windows wheels as they are today: no cuDNN pin for Windows, cuDNN bundled in
# torch\lib, which it loads before anything on PATH: said as the copy it loads, no problem,
# nothing left unchecked; use --for has nothing to choose for it.
BV=$TMP/fwbundled
BS=$BV/Lib/site-packages
mkdir -p "$BV/Scripts" "$BS/torch-2.5.1+cu124.dist-info" "$BS/torch/lib"
: >"$BV/Scripts/python.exe"
printf 'Metadata-Version: 2.1\nName: torch\nVersion: 2.5.1+cu124\nRequires-Dist: nvidia-cudnn-cu12==9.1.0.70; platform_system == "Linux"\n\n' \
	>"$BS/torch-2.5.1+cu124.dist-info/METADATA"
: >"$BS/torch/lib/cudnn64_9.dll"
: >"$BS/torch/lib/cudnn_graph64_9.dll"
WBV=$(winpath "$BV")
cvm --json doctor --python "$WBV\\Scripts\\python.exe"
frameworks_are "$WBV" "doctor --python (Windows wheel of today): torch's bundled torch\\lib\\cudnn64_9.dll, no problem" \
	"[{'name': 'torch', 'version': '2.5.1+cu124', 'python': V + '\\\\Scripts\\\\python.exe',
	   'requires': 'bundled: torch\\\\lib\\\\cudnn64_9.dll', 'needs': 'cuDNN 9.x', 'rule': 'same major',
	   'loads': {'path': V + '\\\\Lib\\\\site-packages\\\\torch\\\\lib\\\\cudnn64_9.dll',
	             'version': None, 'why': 'its own copy, bundled with it, which it loads before any other'},
	   'problem': None}]" \
	"not any('torch' in n['what'] for n in d['not_checked'])"
cvm use --for "$WBV\\Scripts\\python.exe" --cuda 12.4 --no-smoke
rc_is 1 "use --for an env whose torch bundles cuDNN: exit 1"
err_has "torch 2.5.1+cu124 loads the cuDNN 9 bundled with it (torch\\lib), whatever is active: there is nothing to choose for it" \
	"... saying it loads its own copy"
