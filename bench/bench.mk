# SPDX-License-Identifier: MIT
# Benchmarks (bench/run.sh), never part of `make check`:
#   make bench [BENCH_RUNS=3] [BENCH_CACHE=/var/tmp/cudnnvm-bench] [BENCH_SOURCE=/usr/local/cuda-X.Y]
# installs a realistic cuDNN archive (single- and multi-block) with a release
# build and compares it with `sha256sum && tar -xJf` and `xz -T0 -dc`, run by
# run; the report goes to $(O)/bench-results.md (bench/RESULTS.md holds the
# committed one).
BENCH_RUNS ?= 3

bench: $(O)/cudnnvm
	$(Q)BENCH_RUNS=$(BENCH_RUNS) sh bench/run.sh $(O)/cudnnvm $(O)/bench-results.md
	$(Q)sh bench/frameworks.sh $(O)/cudnnvm

# Reading a Python environment of 2,000 distributions (doctor --python): under 100 ms. Seconds.
bench-frameworks: $(O)/cudnnvm
	$(Q)sh bench/frameworks.sh $(O)/cudnnvm

.PHONY: bench bench-frameworks
