# SPDX-License-Identifier: MIT
# libFuzzer targets, included by the Makefile. Built with clang into $(O)/fuzz/:
#
#   make fuzz          every target for FUZZ_SECONDS each (default 60), corpora kept in $(O)/fuzz/corpus/
#   make fuzz-smoke    every target for FUZZ_SMOKE_SECONDS each (default 3) from the seeds only,
#                      after replaying tests/fuzz/regressions/; fails when any target fails
#   make fuzz-TARGET   one of them for FUZZ_SECONDS (TARGET: $(FUZZ_NAMES))
#
# FUZZ_CC (default clang) must have libFuzzer (-fsanitize=fuzzer). Without one, fuzz-smoke
# and fuzz fail, naming what to install. The src/ files are
# compiled again here, instrumented, with ASan and UBSan; what a target finds is saved
# under $(O)/fuzz/artifacts/<target>/ and is replayed with: $(O)/fuzz/fuzz_<target> FILE

FUZZ_CC ?= clang
FUZZ_SECONDS ?= 60
FUZZ_SMOKE_SECONDS ?= 3
FUZZ_NAMES := version entry pin manifest archive elf pe

FUZZ_DIR := $(O)/fuzz
FUZZ_SAN := -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=all
# Fortify would check instead of ASan, and clang may warn where gcc does not: lib/ is not ours to -Werror.
FUZZ_CFLAGS = $(FUZZ_SAN) $(filter-out -D_FORTIFY_SOURCE=%,$(CVM_CFLAGS)) $(PKG_CFLAGS)
FUZZ_SRC_CFLAGS = $(filter-out -Werror,$(FUZZ_CFLAGS)) -fsanitize=fuzzer-no-link
FUZZ_OBJS := $(addprefix $(FUZZ_DIR)/obj/,$(notdir $(LIB_SRCS:.c=.o))) $(FUZZ_DIR)/obj/manifests_data.o
FUZZ_BINS := $(FUZZ_NAMES:%=$(FUZZ_DIR)/fuzz_%)
FUZZ_SEEDS := $(FUZZ_DIR)/seeds/.done

# Per target: libFuzzer options. Archives of a few entries are some kB; manifests up to 15 kB.
FUZZ_OPTS_version := -max_len=256
FUZZ_OPTS_pin := -max_len=4096
FUZZ_OPTS_entry := -max_len=8192
FUZZ_OPTS_manifest := -max_len=16384 -dict=tests/fuzz/manifest.dict
FUZZ_OPTS_archive := -max_len=32768
# ELF: the seeds are small shared libraries (some kB) with a fatbin section.
FUZZ_OPTS_elf := -max_len=32768
# PE: the seeds are small mingw-built DLLs (some kB) and a PE32+ image made byte by byte.
FUZZ_OPTS_pe := -max_len=65536

$(FUZZ_DIR)/obj/%.o: %.c
	@mkdir -p $(@D)
	$(call quiet,FUZZCC,$@)$(FUZZ_CC) $(FUZZ_SRC_CFLAGS) -c -o $@ $<

$(FUZZ_DIR)/obj/manifests_data.o: $(O)/manifests_data.c
	@mkdir -p $(@D)
	$(call quiet,FUZZCC,$@)$(FUZZ_CC) $(FUZZ_SRC_CFLAGS) -c -o $@ $<

$(FUZZ_DIR)/libcvm.a: $(FUZZ_OBJS)
	$(call quiet,AR,$@)rm -f $@ && ar rcs $@ $^

$(FUZZ_DIR)/fuzz_%: tests/fuzz/fuzz_%.c $(FUZZ_DIR)/libcvm.a
	$(call quiet,FUZZLD,$@)$(FUZZ_CC) $(FUZZ_CFLAGS) -Itests/fuzz -fsanitize=fuzzer -o $@ $< \
		$(FUZZ_DIR)/libcvm.a $(LIBS)

$(FUZZ_SEEDS): tests/fuzz/seeds.sh $(MANIFESTS)
	$(call quiet,SEEDS,$(@D))sh tests/fuzz/seeds.sh $(@D) && touch $@

fuzz-build: $(FUZZ_BINS) $(FUZZ_SEEDS)

# One run of one target: $(call fuzz_run,NAME,SECONDS,WRITABLE_CORPUS)
fuzz_run = sh tests/fuzz/run.sh $(FUZZ_DIR)/fuzz_$(1) $(2) $(3) tests/fuzz/regressions/$(1) \
	tests/fuzz/corpus/$(1) $(FUZZ_DIR)/seeds/$(1) -- $(FUZZ_OPTS_$(1))

$(FUZZ_NAMES:%=fuzz-%): fuzz-%: $(FUZZ_DIR)/fuzz_% $(FUZZ_SEEDS)
	$(Q)$(call fuzz_run,$*,$(FUZZ_SECONDS),$(FUZZ_DIR)/corpus/$*)

fuzz: $(FUZZ_NAMES:%=fuzz-%)

# The smoke run starts from the seeds alone each time (its finds go to a scratch folder),
# so that its result does not depend on earlier runs.
$(FUZZ_NAMES:%=fuzz-smoke-%): fuzz-smoke-%: $(FUZZ_DIR)/fuzz_% $(FUZZ_SEEDS)
	$(Q)rm -rf $(FUZZ_DIR)/smoke/$* && \
		$(call fuzz_run,$*,$(FUZZ_SMOKE_SECONDS),$(FUZZ_DIR)/smoke/$*) && \
		rm -rf $(FUZZ_DIR)/smoke/$*

fuzz-smoke-all: $(FUZZ_NAMES:%=fuzz-smoke-%)

FUZZ_PROBE := printf 'int LLVMFuzzerTestOneInput(const char *d, unsigned long n);\nint LLVMFuzzerTestOneInput(const char *d, unsigned long n) { (void)d; (void)n; return 0; }\n' | \
	$(FUZZ_CC) -fsanitize=fuzzer,address,undefined -x c - -o $(FUZZ_DIR)/.probe 2>/dev/null

fuzz-smoke:
	@mkdir -p $(FUZZ_DIR)
	$(Q)if $(FUZZ_PROBE); then \
		$(MAKE) --no-print-directory fuzz-smoke-all; \
	else \
		echo "fuzz-smoke: failed: $(FUZZ_CC) cannot build a libFuzzer target (as root: apt-get install clang libclang-rt-dev)" >&2; \
		exit 1; \
	fi

.PHONY: fuzz fuzz-build fuzz-smoke fuzz-smoke-all $(FUZZ_NAMES:%=fuzz-%) $(FUZZ_NAMES:%=fuzz-smoke-%)

-include $(wildcard $(FUZZ_DIR)/obj/*.d $(FUZZ_DIR)/*.d)
