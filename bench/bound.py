#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The decode profile of an .xz archive, for the bound of a pipelined install.

usage: bound.py ARCHIVE > PROFILE

Decodes ARCHIVE with liblzma (Python's lzma module, one stream, as xz -dc
does) in 1 MiB pieces of input and prints, for each piece, the fraction of
the compressed file read and the fraction of the decode time spent by then.

What it is for: a decoder that follows a download at a steady rate, the whole
file in D seconds, cannot have decoded past compressed fraction p before D*p,
and from there needs F*(1 - t(p)) more (F: the decode time of the whole file,
t(p): the time fraction at p). So no pipeline can finish before
max over p of (D*p + F*(1 - t(p))); when the archive decodes more slowly per
compressed byte towards its end, that is more than max(D, F). bench/run.sh
prints this bound beside the measured time.
"""
import lzma
import sys
import time

path = sys.argv[1]
dec = lzma.LZMADecompressor()
points = [(0, 0.0)]
pos = 0
t0 = time.perf_counter()
with open(path, "rb") as f:
    while True:
        piece = f.read(1 << 20)
        if not piece:
            break
        pos += len(piece)
        dec.decompress(piece)
        points.append((pos, time.perf_counter() - t0))
total = points[-1][1]
for p, t in points:
    print("%.6f %.6f" % (p / pos, t / total))
