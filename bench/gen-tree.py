#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Generates a cuDNN tree of realistic size and compressibility, for the
benchmark when no real cuDNN is installed.

usage: gen-tree.py MKCUDNN_SH DIR VERSION CUDA SIZE_MB

The layout, headers and stub libcudnn come from tests/fixtures/mkcudnn.sh;
the sub-libraries are then filled with SIZE_MB of data in the proportions of
cuDNN 9's, two fifths of it machine code (the system's own ELF files, as a stream)
and three fifths random bytes (as incompressible as GPU code is): xz -6 brings it to
about two thirds, as it does a real cuDNN."""
import glob, os, random, subprocess, sys, tarfile, tempfile

mk, tree, version, cuda, size_mb = sys.argv[1:6]
size = int(size_mb) << 20
with tempfile.TemporaryDirectory() as tmp:
    out = subprocess.run(["sh", mk, tmp, version, cuda], check=True, capture_output=True,
                         text=True).stdout.strip().splitlines()[-1]
    with tarfile.open(out) as t:
        t.extractall(tree)
top = os.path.join(tree, sorted(os.listdir(tree))[0])
mmp = ".".join(version.split(".")[:3])
shares = [("cudnn_engines_precompiled", 0.50), ("cudnn_adv", 0.22), ("cudnn_heuristic", 0.12),
          ("cudnn_ops", 0.08), ("cudnn_engines_runtime_compiled", 0.06), ("cudnn_cnn", 0.01),
          ("cudnn_graph", 0.01)]


def elf_stream():
    # each file once (libraries have several names), so that nothing repeats
    files = sorted({os.path.realpath(f) for f in glob.glob("/usr/lib/*-linux-gnu/*.so*") +
                    glob.glob("/usr/bin/*")})
    while True:
        got = False
        for f in files:
            try:
                with open(f, "rb") as fh:
                    if fh.read(4) != b"\x7fELF":
                        continue
                    fh.seek(0)
                    while True:
                        b = fh.read(1 << 20)
                        if not b:
                            break
                        got = True
                        yield b
            except OSError:
                continue
        if not got:
            raise SystemExit("gen-tree.py: no ELF files to take machine code from")


rng = random.Random(1700000000)
code = elf_stream()
pending = b""
for lib, share in shares:
    path = os.path.join(top, "lib", "lib%s.so.%s" % (lib, mmp))
    want = int(size * share)
    with open(path, "wb") as f:
        left = want
        while left > 0:
            n = min(left, 1 << 20)
            if rng.random() < 0.6:
                f.write(rng.randbytes(n))
            else:
                while len(pending) < n:
                    pending += next(code)
                f.write(pending[:n])
                pending = pending[n:]
            left -= n
    os.chmod(path, 0o755)
