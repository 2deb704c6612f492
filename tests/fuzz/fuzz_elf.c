/* SPDX-License-Identifier: MIT */
/*
 * The ELF reader (elfinfo.h) on any bytes: an error or a result, never a read
 * outside the buffer (ASan), and a result that keeps the header's promises:
 * strings NUL-terminated within their fields, architectures sorted, unique
 * and within bounds. The buffer is a copy of exactly the input's length.
 * The same bytes as a file (cvm_elf_read_at, which reads with pread, not
 * from memory) give the same result.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fuzz.h"

#include "elfinfo.h"
#include "error.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	fuzz_quiet();
	return 0;
}

/* The bytes as a file, read by cvm_elf_read_at: what cvm_elf_parse said of them in memory. */
static void same_from_file(const uint8_t *data, size_t size, int want, const struct cvm_elf_info *e)
{
	struct cvm_elf_info f;
	char path[64];
	int fd = memfd_create("fuzz_elf", MFD_CLOEXEC), r;

	if (fd < 0 || (size && write(fd, data, size) != (ssize_t)size))
		abort();
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	r = cvm_elf_read_at(AT_FDCWD, path, &f);
	/* The closure's reading of the same file: the dynamic section and .rodata's dlopen names. */
	struct cvm_elf_info d;
	static const char *const probes[] = { "libnvrtc.so.", "libcublasLt.so." };
	int rd = cvm_elf_read_deps(AT_FDCWD, path, probes, 2, &d);
	if (rd == 0) {
		FUZZ_ASSERT(d.nneeded <= CVM_ELF_MAX_NEEDED && d.nloads <= CVM_ELF_MAX_LOADS,
			    "%zu needed, %zu loads", d.nneeded, d.nloads);
		for (size_t i = 0; i < d.nloads; i++)
			FUZZ_ASSERT(!strncmp(d.loads[i], "libnvrtc.so.", 12) ||
				    !strncmp(d.loads[i], "libcublasLt.so.", 15), "load '%s'", d.loads[i]);
	}
	close(fd);
	/* Files shorter than an ELF header are refused before they are read. */
	if (size < 64) {
		FUZZ_ASSERT(r == -CVM_E_LAYOUT, "read_at of %zu bytes gave %d", size, r);
		return;
	}
	FUZZ_ASSERT(r == want, "read_at gave %d, parse %d", r, want);
	if (r == 0)
		FUZZ_ASSERT(!memcmp(&f, e, sizeof(f)), "read_at and parse differ");
}

static void sorted(const unsigned *v, size_t n)
{
	FUZZ_ASSERT(n <= CVM_ELF_MAX_ARCHS, "%zu architectures", n);
	for (size_t i = 1; i < n; i++)
		FUZZ_ASSERT(v[i - 1] < v[i], "architectures not sorted and unique at %zu", i);
	for (size_t i = 0; i < n; i++)
		FUZZ_ASSERT(v[i] > 0 && v[i] < 10000, "architecture %u", v[i]);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct cvm_elf_info e;
	uint8_t *copy = malloc(size ? size : 1);
	int r;

	if (!copy)
		abort();
	memcpy(copy, data, size);
	r = cvm_elf_parse(copy, size, &e);
	FUZZ_ASSERT(r == 0 || r == -CVM_E_LAYOUT || r == -ENOMEM, "parse gave %d", r);
	if (r == 0) {
		FUZZ_ASSERT(memchr(e.soname, '\0', sizeof(e.soname)), "soname not terminated");
		FUZZ_ASSERT(memchr(e.tag, '\0', sizeof(e.tag)), "tag not terminated");
		FUZZ_ASSERT(memchr(e.check_sym, '\0', sizeof(e.check_sym)), "check_sym not terminated");
		FUZZ_ASSERT(!e.check_version || (e.check_version >= 90000 && e.check_version <= 99999),
			    "check_version %lu", e.check_version);
		FUZZ_ASSERT(!e.check_version || e.check_sym[0], "a constant without its function");
		sorted(e.archs, e.narchs);
		sorted(e.ptx, e.nptx);
		FUZZ_ASSERT(e.fatbin || (!e.narchs && !e.nptx), "architectures without a fatbin");
		FUZZ_ASSERT(size >= 64, "a result from %zu bytes", size);
	}
	same_from_file(data, size, r, &e);
	free(copy);
	return 0;
}
