# SPDX-License-Identifier: MIT
# cudnnvm: one non-recursive GNU make. `make V=1` shows the commands,
# `make DEVELOPER=1` turns warnings into errors, `make O=dir` builds elsewhere.

PREFIX ?= /usr/local
BINDIR ?= $(PREFIX)/bin
MANDIR ?= $(PREFIX)/share/man
DATADIR ?= $(PREFIX)/share
DESTDIR ?=
O ?= build

CC ?= cc
PKG_CONFIG ?= pkg-config
CFLAGS ?= -O2 -g
LDFLAGS ?=

PKGS := libarchive libcrypto jansson libcurl liblzma
# The Debian package of each pkg-config module (tests/deps.sh installs them).
PKG_DEB_libarchive := libarchive-dev
PKG_DEB_libcrypto := libssl-dev
PKG_DEB_jansson := libjansson-dev
PKG_DEB_libcurl := libcurl4-openssl-dev
PKG_DEB_liblzma := liblzma-dev
# Asked of pkg-config when first used (after `deps` has installed what was
# missing), once; a module it cannot find stops the build with its name.
pkg_missing = $(strip $(foreach m,$(PKGS),$(if $(shell $(PKG_CONFIG) --exists $(m) 2>/dev/null && echo y),,$(m))))
pkg_query = $(if $(pkg_missing),$(error $(PKG_CONFIG) cannot find $(pkg_missing) (Debian: apt-get install \
	$(foreach m,$(pkg_missing),$(PKG_DEB_$(m))))),$(shell $(PKG_CONFIG) $(1)))
PKG_CFLAGS = $(eval PKG_CFLAGS := $(call pkg_query,--cflags $(PKGS)))$(PKG_CFLAGS)
# libarchive, libcurl and libcrypto are loaded at run time (dynlib.c) by the
# only files that use them (archive.c, fetch_curl.c, sha256_openssl.c), so that
# commands that never read an archive, download or hash start fast: their
# headers are needed, not their libraries.
PKG_LIBS = $(eval PKG_LIBS := $(call pkg_query,--libs $(filter-out libarchive libcurl libcrypto,$(PKGS))))$(PKG_LIBS)

# Our flags are always added; CFLAGS stays the user's.
CVM_CFLAGS := -std=c11 -D_GNU_SOURCE -D_FILE_OFFSET_BITS=64 -iquote lib -iquote compat -I$(O) \
	-Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes \
	-fstack-protector-strong -fPIC -MMD -MP
CVM_CFLAGS += $(if $(filter -O1 -O2 -O3 -Os,$(CFLAGS)),-D_FORTIFY_SOURCE=2)
# Test builds compile in the crash points (fault.h); release builds never do.
ifeq ($(CVM_TEST),1)
CVM_CFLAGS += -DCVM_FAULT_INJECTION
endif
ifeq ($(DEVELOPER),1)
CVM_CFLAGS += -Werror -Wformat=2 -Wpointer-arith -Wvla -Wundef -Wcast-align \
	-Wno-format-nonliteral
endif
CVM_LDFLAGS := -pie -Wl,-z,relro,-z,now
LIBS = $(PKG_LIBS) -lpthread -ldl -lm

ifneq ($(V),1)
Q := @
quiet = @printf '  %-7s %s\n' $(1) $(2);
endif
# make -s: not even the short lines.
ifneq ($(findstring s,$(firstword -$(MAKEFLAGS))),)
quiet = @
endif

# The sources, named per platform: no wildcard may pull one system's file into
# the other's build. src/ is the CLI (main.c and one cmd_<name>.c per command,
# with cli.h, which only they can include: it is on no include path); lib/ is
# the engine, headers beside sources, with its OS backends named *_linux.c,
# *_win.c or after the API they use; compat/ is the platform layer and the
# Windows entry point. Commands are shared; what differs is the platform
# layer, the outside APIs (OpenSSL / CNG, libcurl / WinHTTP) and the
# Linux-only modules, which Windows replaces with unavailable_win.c until
# their backend exists. Objects are named after their file (each name once).
vpath %.c src lib compat
CMD_SRCS := $(sort $(wildcard src/cmd_*.c))
COMMON_SRCS := $(addprefix lib/,activate.c alloc.c archive.c bundle.c cache.c ccgate.c closure.c config.c cudnn.c \
	digest.c doctor.c elfcache.c entry.c error.c extract.c fault.c fetch_loop.c findings.c fsutil.c hex.c install.c \
	journal.c json.c lock.c manifest.c mirror.c modulefiles.c out.c plan.c procmap.c record.c release.c \
	select.c smoke_conv.c smoke_verdict.c smokelog.c store.c toolkit.c trust.c update.c version.c xz.c)
# Framework truth (frameworks.h): what a Python environment's frameworks need.
COMMON_SRCS += lib/frameworks.c lib/frameworks_check.c
# The PE reader (peinfo.h): the closure's Windows part, built on Linux too for its tests and fuzzing.
COMMON_SRCS += lib/peinfo.c
# zlibwapi.dll into the Windows versions that load it (zlibwapi.h).
COMMON_SRCS += lib/zlibwapi.c
LINUX_SRCS := compat/compat_posix.c $(addprefix lib/,activate_linux.c closure_linux.c confine.c doctor_linux.c \
	dynlib.c elfinfo.c fetch_curl.c proc.c procmap_linux.c sha256_openssl.c smoke_child.c smoke_linux.c)
WIN_SRCS := compat/compat_win32.c $(addprefix lib/,closure_win.c doctor_win.c fetch_winhttp.c proc_win.c \
	procmap_win.c sha256_cng.c smoke_win.c unavailable_win.c activate_windows.c winenv.c)
LIB_SRCS := $(COMMON_SRCS) $(LINUX_SRCS)
LIB_OBJS := $(addprefix $(O)/,$(notdir $(LIB_SRCS:.c=.o))) $(O)/manifests_data.o
BIN_OBJS := $(O)/main.o $(CMD_SRCS:src/%.c=$(O)/%.o)
MANIFESTS := $(sort $(wildcard manifests/redistrib_*.json manifests/*releases.json))

UNIT_SRCS := $(sort $(wildcard tests/unit/test_*.c))
UNIT_BINS := $(UNIT_SRCS:tests/unit/%.c=$(O)/tests/%)

all: deps $(O)/cudnnvm

$(O)/cudnnvm: $(BIN_OBJS) $(O)/libcvm.a
	$(call quiet,LINK,$@)$(CC) $(CFLAGS) $(CVM_LDFLAGS) $(LDFLAGS) -o $@ $(BIN_OBJS) $(O)/libcvm.a $(LIBS)

$(O)/libcvm.a: $(LIB_OBJS)
	$(call quiet,AR,$@)rm -f $@ && ar rcs $@ $^

$(O)/%.o: %.c | $(O) deps
	$(call quiet,CC,$@)$(CC) $(CFLAGS) $(CVM_CFLAGS) $(PKG_CFLAGS) -c -o $@ $<

# The catalogue is compiled in, so that the binary works from anywhere.
$(O)/manifests_data.c: lib/embed-manifests.sh $(MANIFESTS) | $(O)
	$(call quiet,GEN,$@)sh lib/embed-manifests.sh $(MANIFESTS) > $@.tmp && mv $@.tmp $@

$(O)/manifests_data.o: $(O)/manifests_data.c
	$(call quiet,CC,$@)$(CC) $(CFLAGS) $(CVM_CFLAGS) -c -o $@ $<

$(O)/tests/%: tests/unit/%.c tests/unit/unit.h tests/unit/unit_so.h $(O)/libcvm.a | $(O)
	@mkdir -p $(O)/tests
	$(call quiet,CC,$@)$(CC) $(CFLAGS) $(CVM_CFLAGS) -Itests/unit $(PKG_CFLAGS) $(CVM_LDFLAGS) $(LDFLAGS) -o $@ $< $(O)/libcvm.a $(LIBS)

$(O):
	@mkdir -p $(O)

# What the goals need, installed when missing (Debian, as root; tests/deps.sh):
# the build always, the test tools for demo and check, libFuzzer for check and
# fuzz, the analysers for lint. DEPS=0 skips it (the sub-makes of check, a
# packaging build).
DEPS ?= 1
DEPS_GROUPS := build $(if $(filter demo check check-asan bench%,$(MAKECMDGOALS)),test) \
	$(if $(filter check fuzz fuzz-%,$(MAKECMDGOALS)),fuzz) $(if $(filter lint,$(MAKECMDGOALS)),lint)
deps:
	$(Q)$(if $(filter 1,$(DEPS)),sh tests/deps.sh $(DEPS_GROUPS),:)

# The suite runs a test build (crash points compiled in), then each fuzz target
# briefly. The same suite under sanitizers is make check-asan (CI runs both):
# on two cores it doubles the time, so check stays a few minutes.
check: deps
	$(Q)$(MAKE) --no-print-directory DEPS=0 O=build-test CVM_TEST=1 all-tests
	$(Q)sh tests/run.sh build-test
	$(Q)$(MAKE) --no-print-directory DEPS=0 -j2 fuzz-smoke FUZZ_SMOKE_SECONDS=2

all-tests: $(O)/cudnnvm $(UNIT_BINS)

# The same suite under AddressSanitizer and UndefinedBehaviorSanitizer.
ASAN_FLAGS := -O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all
check-asan: deps
	$(Q)$(MAKE) --no-print-directory DEPS=0 O=build-asan CVM_TEST=1 CFLAGS="$(ASAN_FLAGS)" all-tests
	$(Q)CVM_TEST_TIMEOUT=$${CVM_TEST_TIMEOUT:-2400} \
		ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:exitcode=99 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1:exitcode=99 \
		sh tests/run.sh build-asan

# The GPU smoke test on this machine's GPU: skipped (never faked) without one.
check-gpu: $(O)/cudnnvm
	$(Q)CUDNNVM=$(CURDIR)/$(O)/cudnnvm sh tests/gpu/run.sh; rc=$$?; \
		if [ $$rc = 77 ]; then echo "check-gpu: skipped"; exit 0; fi; exit $$rc

# Static analysis of the Linux sources (LINT_SRCS): cppcheck and clang-tidy (.clang-tidy), both with zero findings.
# Every file is looked at (two at a time, cppcheck beside them) and every finding reported before it fails.
# clang-tidy's static analyzer runs in its shallow mode (less inlining, fewer paths, each loop
# followed for 2 rounds: ~5x faster); LINT_ANALYZER=deep is the full depth. tests/lint-tidy.sh
# keeps a mark of each file clang-tidy found clean in $(O)/lint/: a file is looked at again only
# when it, a header of the project, a Debian package's headers, .clang-tidy or the flags changed.
LINT_JOBS ?= 2
LINT_ANALYZER ?= shallow
LINT_SRCS = src/main.c $(CMD_SRCS) $(LIB_SRCS)
lint: deps $(O)/manifests_data.c
	$(Q)rc=0; cppcheck --quiet --enable=warning,portability,performance --std=c11 -Ilib -Icompat \
		-D_GNU_SOURCE --inline-suppr --error-exitcode=1 $(LINT_SRCS) & cpp=$$!; \
	sh tests/lint-tidy.sh $(O)/lint $(LINT_JOBS) $(LINT_ANALYZER) $(LINT_SRCS) -- -std=c11 \
		-D_GNU_SOURCE -D_FILE_OFFSET_BITS=64 -iquote lib -iquote compat -I$(O) $(PKG_CFLAGS) || rc=1; \
	wait $$cpp || rc=1; \
	if [ $$rc != 0 ]; then echo "lint: failed (the findings are above)" >&2; fi; exit $$rc

demo: deps $(O)/cudnnvm
	$(Q)sh tests/fixtures/demo.sh $(O)/cudnnvm

install: deps $(O)/cudnnvm
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(MANDIR)/man1 \
		$(DESTDIR)$(DATADIR)/bash-completion/completions
	install -m 0755 $(O)/cudnnvm $(DESTDIR)$(BINDIR)/cudnnvm
	install -m 0644 packaging/cudnnvm.1 $(DESTDIR)$(MANDIR)/man1/cudnnvm.1
	install -m 0644 packaging/cudnnvm.bash $(DESTDIR)$(DATADIR)/bash-completion/completions/cudnnvm

clean:
	rm -rf build build-test build-asan $(if $(filter-out build build-test build-asan,$(O)),$(O))

.PHONY: all deps check all-tests check-asan check-gpu lint demo install clean

-include packaging/windows/windows.mk
.DELETE_ON_ERROR:

-include $(wildcard $(O)/*.d $(O)/tests/*.d)

# Fragments owned by their folders: fuzz targets and benchmarks.
-include tests/fuzz/fuzz.mk
-include bench/bench.mk
-include packaging/deb.mk
-include slurm/slurm.mk
