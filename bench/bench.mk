# SPDX-License-Identifier: MIT
# Benchmarks (bench/run.sh), never part of `make check`:
#   make bench [BENCH_RUNS=3] [BENCH_CACHE=/var/tmp/cudnnvm-bench] [BENCH_SOURCE=/usr/local/cuda-X.Y]
# installs a realistic cuDNN archive (single- and multi-block) with a release
# build and compares it with `sha256sum && tar -xJf` and `xz -T0 -dc`, run by
# run; the report goes to $(O)/bench-results.md (bench/RESULTS.md holds the
# committed one).
BENCH_RUNS ?= 3

bench: $(O)/cudnnvm bench-closure
	$(Q)BENCH_RUNS=$(BENCH_RUNS) sh bench/run.sh $(O)/cudnnvm $(O)/bench-results.md
	$(Q)sh bench/frameworks.sh $(O)/cudnnvm

# Reading a Python environment of 2,000 distributions (doctor --python): under 100 ms. Seconds.
bench-frameworks: $(O)/cudnnvm
	$(Q)sh bench/frameworks.sh $(O)/cudnnvm

# The load closure check per version (bench/closure.c): a real cuDNN folder
# (BENCH_CUDNN, default the toolkit's own lib64 when it holds one; skipped
# without) for the toolkit BENCH_TOOLKIT; under 20 ms or exit 1.
BENCH_TOOLKIT ?= /usr/local/cuda
BENCH_CUDNN ?= $(BENCH_TOOLKIT)/lib64

$(O)/bench-closure: bench/closure.c $(O)/libcvm.a | $(O)
	$(call quiet,CC,$@)$(CC) $(CFLAGS) $(CVM_CFLAGS) $(PKG_CFLAGS) $(CVM_LDFLAGS) $(LDFLAGS) -o $@ $< $(O)/libcvm.a $(LIBS)

bench-closure: $(O)/bench-closure
	$(Q)if ls $(BENCH_CUDNN)/libcudnn*.so.* >/dev/null 2>&1; then $(O)/bench-closure $(BENCH_CUDNN) $(BENCH_TOOLKIT); \
	else echo "bench-closure: skipped: no cuDNN in $(BENCH_CUDNN) (set BENCH_CUDNN)"; fi

.PHONY: bench bench-frameworks bench-closure
