/* SPDX-License-Identifier: MIT */
/*
 * The PE reader (peinfo.h) on any bytes: an error or a result, never a read
 * outside the buffer (ASan), and a result that keeps the header's promises:
 * names NUL-terminated, made of name characters, each once (case ignored),
 * counts within bounds, each load found by a probe and ending in ".dll".
 * The buffer is a copy of exactly the input's length. The same bytes as a
 * file (cvm_pe_read_at, which reads piece by piece with pread) give the
 * same result.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <strings.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fuzz.h"

#include "error.h"
#include "peinfo.h"

static const char *const probes[] = { "zlibwapi.dll", "nvrtc64_", "cublasLt64_" };
#define NPROBES (sizeof(probes) / sizeof(*probes))

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	fuzz_quiet();
	return 0;
}

static void names(char (*v)[64], size_t n, size_t max, bool load)
{
	FUZZ_ASSERT(n <= max, "%zu names", n);
	for (size_t i = 0; i < n; i++) {
		size_t len = strnlen(v[i], 64), p = 0;
		FUZZ_ASSERT(len > 0 && len < 64, "name %zu of length %zu", i, len);
		for (size_t k = 0; k < len; k++)
			FUZZ_ASSERT(strchr("_-.+~", v[i][k]) || (v[i][k] >= '0' && v[i][k] <= '9') ||
				    ((v[i][k] | 32) >= 'a' && (v[i][k] | 32) <= 'z'), "odd '%s'", v[i]);
		for (size_t j = 0; j < i; j++)
			FUZZ_ASSERT(strcasecmp(v[i], v[j]), "'%s' twice", v[i]);
		if (!load)
			continue;
		FUZZ_ASSERT(len > 4 && !strcasecmp(v[i] + len - 4, ".dll"), "load '%s'", v[i]);
		while (p < NPROBES && strncasecmp(v[i], probes[p], strlen(probes[p])))
			p++;
		FUZZ_ASSERT(p < NPROBES, "load '%s' of no probe", v[i]);
	}
}

/* The bytes as a file, read by cvm_pe_read_at: what cvm_pe_parse said of them in memory. */
static void same_from_file(const uint8_t *data, size_t size, int want, const struct cvm_pe_info *e)
{
	struct cvm_pe_info f;
	char path[64];
	int fd = memfd_create("fuzz_pe", MFD_CLOEXEC), r;

	if (fd < 0 || (size && write(fd, data, size) != (ssize_t)size))
		abort();
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	r = cvm_pe_read_at(AT_FDCWD, path, probes, NPROBES, &f);
	close(fd);
	FUZZ_ASSERT(r == want, "read_at gave %d, parse %d", r, want);
	if (r == 0)
		FUZZ_ASSERT(!memcmp(&f, e, sizeof(f)), "read_at and parse differ");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct cvm_pe_info e;
	uint8_t *copy = malloc(size ? size : 1);
	int r;

	if (!copy)
		abort();
	memcpy(copy, data, size);
	r = cvm_pe_parse(copy, size, probes, NPROBES, &e);
	FUZZ_ASSERT(r == 0 || r == -CVM_E_LAYOUT || r == -ENOMEM, "parse gave %d", r);
	if (r == 0) {
		names(e.imports, e.nimports, CVM_PE_MAX_IMPORTS, false);
		names(e.delay, e.ndelay, CVM_PE_MAX_IMPORTS, false);
		names(e.loads, e.nloads, CVM_PE_MAX_LOADS, true);
		FUZZ_ASSERT(size >= 64, "a result from %zu bytes", size);
	}
	same_from_file(data, size, r, &e);
	free(copy);
	return 0;
}
