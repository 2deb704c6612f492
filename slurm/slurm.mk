# SPDX-License-Identifier: MIT
# The Slurm SPANK plugin (slurm/spank_cudnnvm.c; spank.h from Debian's
# libslurm-dev): `make slurm` builds $(O)/slurm/cudnnvm.so with the engine
# (libcvm.a, position-independent) linked in and its symbols hidden, so that
# none of them can meet one of Slurm's. The test build makes it too where
# spank.h is installed (tests/integration/t_slurm.sh loads it), but not under
# the sanitizers: Slurm's daemons, which load it, are not built with them.
SLURM_SO := $(O)/slurm/cudnnvm.so

slurm: deps $(SLURM_SO)

$(SLURM_SO): slurm/spank_cudnnvm.c $(O)/libcvm.a | $(O)
	@echo '#include <slurm/spank.h>' | $(CC) -E -x c - >/dev/null 2>&1 || \
		{ echo "make slurm: needs Slurm's spank.h (Debian: apt-get install libslurm-dev)" >&2; exit 1; }
	@mkdir -p $(O)/slurm
	$(call quiet,LINK,$@)$(CC) $(CFLAGS) $(CVM_CFLAGS) $(PKG_CFLAGS) -shared \
		-Wl,-z,relro,-z,now -Wl,--exclude-libs,ALL $(LDFLAGS) -o $@ $< $(O)/libcvm.a \
		$(LIBS)

ifneq ($(wildcard /usr/include/slurm/spank.h),)
ifeq ($(findstring -fsanitize,$(CFLAGS)),)
all-tests: $(SLURM_SO)
endif
LINT_SRCS += slurm/spank_cudnnvm.c
endif

.PHONY: slurm
-include $(wildcard $(O)/slurm/*.d)
