# SPDX-License-Identifier: MIT
# Windows: `make windows` cross-builds build-windows/cudnnvm.exe (PE32+,
# x86-64, static, one file) with Debian's mingw-w64 against the libraries
# packaging/windows/build-deps.sh cross-builds once into build-windows/deps;
# `make windows NATIVE=1` builds the same in MSYS2's MINGW64 shell against
# MSYS2's own static libraries (pacman -S mingw-w64-x86_64-{gcc,libarchive,
# jansson,xz,zlib,pkgconf}). `make check-windows` runs tests/windows/run.sh
# (under wine here, natively on Windows); `make clean-windows`.

WIN_O ?= build-windows
WIN_DEPS := $(WIN_O)/deps

ifeq ($(NATIVE),1)
WIN_CC ?= gcc
WIN_AR ?= ar
WIN_PKGS := libarchive liblzma zlib jansson
WIN_DEPS_CFLAGS = $(shell pkg-config --static --cflags $(WIN_PKGS)) -DLIBARCHIVE_STATIC -DLZMA_API_STATIC
WIN_DEPS_LIBS = $(shell pkg-config --static --libs $(WIN_PKGS)) -lbcrypt
WIN_DEPS_STAMP :=
else
WIN_CC ?= x86_64-w64-mingw32-gcc
WIN_AR ?= x86_64-w64-mingw32-ar
# DEPS_CFLAGS, DEPS_LIBS: written by build-deps.sh (read once it has run).
-include $(WIN_DEPS)/deps.mk
WIN_DEPS_CFLAGS = -I$(WIN_DEPS)/include $(DEPS_CFLAGS)
WIN_DEPS_LIBS = -L$(WIN_DEPS)/lib $(DEPS_LIBS)
WIN_DEPS_STAMP := $(WIN_DEPS)/stamp
endif

# archive.c links libarchive (no dlopen on Windows); Windows 10 APIs; C99 printf.
WIN_CVM_CFLAGS := -std=c11 -D_FILE_OFFSET_BITS=64 -D__USE_MINGW_ANSI_STDIO=1 \
	-D_WIN32_WINNT=0x0A00 -DCVM_LINK_LIBARCHIVE -iquote lib -iquote compat -I$(WIN_O) \
	-Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes -MMD -MP
ifeq ($(CVM_TEST),1)
WIN_CVM_CFLAGS += -DCVM_FAULT_INJECTION
endif
ifeq ($(DEVELOPER),1)
WIN_CVM_CFLAGS += -Werror -Wpointer-arith -Wvla -Wundef
endif
# The headers' format(printf) means the Microsoft runtime's printf to mingw's
# gcc, which knows no %zu; the C99 printf is linked (__USE_MINGW_ANSI_STDIO),
# and the Linux build checks every format of the same sources.
WIN_CVM_CFLAGS += -Wno-format
# One file: the C runtime's and winpthreads' code linked in too.
WIN_LDFLAGS := -static -municode
# version: a DLL's version resource, read by doctor without loading the DLL.
WIN_LIBS = $(WIN_DEPS_LIBS) -lwinhttp -lbcrypt -lpsapi -lrstrtmgr -luser32 -ladvapi32 -lversion -lpthread

WIN_LIB_OBJS := $(addprefix $(WIN_O)/,$(notdir $(COMMON_SRCS:.c=.o) $(WIN_SRCS:.c=.o))) $(WIN_O)/manifests_data.o
WIN_BIN_OBJS := $(WIN_O)/main.o $(WIN_O)/main_win.o $(CMD_SRCS:src/%.c=$(WIN_O)/%.o)
WIN_UNIT := $(addprefix $(WIN_O)/tests/,test_alloc.exe test_compat.exe test_entry.exe test_digest.exe test_version.exe \
	test_driver.exe)

windows: $(WIN_DEPS_STAMP)
	$(Q)$(MAKE) --no-print-directory windows-exe

windows-exe: $(WIN_O)/cudnnvm.exe $(WIN_O)/zlibwapi.dll $(WIN_UNIT) $(WIN_O)/cudnnvm-test.exe

# zlibwapi.dll, shipped beside cudnnvm.exe: cuDNN 8.3 to 8.x load it, and install puts a copy
# in each such version (lib/zlibwapi.h). It is the zlib cudnnvm.exe links, as a DLL with all of
# zlib's functions exported under their own names (x64 has one calling convention, so WinImage's
# zlibwapi and zlib's own DLL export the same).
ifeq ($(NATIVE),1)
WIN_ZLIB_A = $(shell pkg-config --variable=libdir zlib)/libz.a
else
WIN_ZLIB_A = $(WIN_DEPS)/lib/libz.a
endif
$(WIN_O)/zlibwapi.dll: $(WIN_DEPS_STAMP) | $(WIN_O)
	$(call quiet,LINK,$@)$(WIN_CC) -shared -s -static-libgcc -o $@ -Wl,--whole-archive $(WIN_ZLIB_A) \
		-Wl,--no-whole-archive -Wl,--export-all-symbols -Wl,--no-insert-timestamp

# The test build (crash points compiled in, as make CVM_TEST=1 on Linux):
# the same sources into $(WIN_O)/test/, for check-windows only.
WIN_TEST_OBJS := $(addprefix $(WIN_O)/test/,$(notdir $(patsubst %.c,%.o,src/main.c compat/main_win.c $(CMD_SRCS) $(COMMON_SRCS) $(WIN_SRCS)))) \
	$(WIN_O)/manifests_data.o

$(WIN_O)/cudnnvm-test.exe: $(WIN_TEST_OBJS)
	$(call quiet,LINK,$@)$(WIN_CC) $(CFLAGS) $(WIN_LDFLAGS) -o $@ $^ $(WIN_LIBS)

$(WIN_O)/test/%.o: %.c | $(WIN_O)
	@mkdir -p $(WIN_O)/test
	$(call quiet,CC,$@)$(WIN_CC) $(CFLAGS) $(WIN_CVM_CFLAGS) -DCVM_FAULT_INJECTION $(WIN_DEPS_CFLAGS) -c -o $@ $<

$(WIN_DEPS)/stamp: packaging/windows/build-deps.sh
	$(Q)sh packaging/windows/build-deps.sh $(WIN_DEPS)

$(WIN_O)/cudnnvm.exe: $(WIN_BIN_OBJS) $(WIN_O)/libcvm.a
	$(call quiet,LINK,$@)$(WIN_CC) $(CFLAGS) $(WIN_LDFLAGS) -o $@ $(WIN_BIN_OBJS) $(WIN_O)/libcvm.a $(WIN_LIBS)

$(WIN_O)/libcvm.a: $(WIN_LIB_OBJS)
	$(call quiet,AR,$@)rm -f $@ && $(WIN_AR) rcs $@ $^

$(WIN_O)/%.o: %.c | $(WIN_O)
	$(call quiet,CC,$@)$(WIN_CC) $(CFLAGS) $(WIN_CVM_CFLAGS) $(WIN_DEPS_CFLAGS) -c -o $@ $<

$(WIN_O)/manifests_data.c: lib/embed-manifests.sh $(MANIFESTS) | $(WIN_O)
	$(call quiet,GEN,$@)sh lib/embed-manifests.sh $(MANIFESTS) > $@.tmp && mv $@.tmp $@

$(WIN_O)/manifests_data.o: $(WIN_O)/manifests_data.c
	$(call quiet,CC,$@)$(WIN_CC) $(CFLAGS) $(WIN_CVM_CFLAGS) -c -o $@ $<

$(WIN_O)/tests/%.exe: tests/unit/%.c tests/unit/unit.h $(WIN_O)/main_win.o $(WIN_O)/libcvm.a | $(WIN_O)
	@mkdir -p $(WIN_O)/tests
	$(call quiet,CC,$@)$(WIN_CC) $(CFLAGS) $(WIN_CVM_CFLAGS) -Itests/unit $(WIN_DEPS_CFLAGS) $(WIN_LDFLAGS) \
		-o $@ $< $(WIN_O)/main_win.o $(WIN_O)/libcvm.a $(WIN_LIBS)

$(WIN_O):
	@mkdir -p $(WIN_O)

# Under wine here (run.sh finds wine64; WINE=... to choose), natively in MSYS2.
check-windows: windows
	$(Q)CUDNNVM_EXE=$(CURDIR)/$(WIN_O)/cudnnvm.exe WIN_O=$(CURDIR)/$(WIN_O) WIN_CC="$(WIN_CC)" \
		$(if $(WINE),WINE="$(WINE)") bash tests/windows/run.sh

# The objects and the exe; the deps stay (they take minutes): clean-windows DEPS=1 removes them too.
clean-windows:
	rm -rf $(WIN_O)/*.o $(WIN_O)/*.d $(WIN_O)/*.a $(WIN_O)/*.exe $(WIN_O)/tests $(WIN_O)/test \
		$(WIN_O)/manifests_data.c $(if $(filter 1,$(DEPS)),$(WIN_DEPS))

.PHONY: windows windows-exe check-windows clean-windows

-include $(wildcard $(WIN_O)/*.d $(WIN_O)/tests/*.d $(WIN_O)/test/*.d)
