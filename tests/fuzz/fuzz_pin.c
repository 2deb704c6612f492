/* SPDX-License-Identifier: MIT */
/*
 * The small text parsers: the .cudnn-version pin (cvm_pin_parse, against a
 * model of select.h's rule), store ids, the cuDNN header macros and the
 * three CUDA toolkit sources (version.json, cuda_runtime_api.h, nvcc
 * --version). Every parser gets the input as an exact-size buffer without a
 * terminating NUL, so that reading past it is an ASan report.
 */
#include "fuzz.h"

#include "cudnn.h"
#include "error.h"
#include "select.h"
#include "store.h"
#include "toolkit.h"
#include "version.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	fuzz_quiet();
	return 0;
}

static bool is_trim(char c)
{
	return c == ' ' || c == '\t' || c == '\r';
}

static void check_id(const char *s, size_t vlen, size_t plen)
{
	char *ver = malloc(vlen), *plat = malloc(plen), back[512];
	const char *c = strstr(s, "-cuda");
	int major = -1;

	if (!ver || !plat)
		abort();
	if (cvm_store_parse_id(s, ver, vlen, &major, plat, plen) == 0) {
		FUZZ_ASSERT(strlen(ver) < vlen && strlen(plat) < plen, "id '%s' overflowed", s);
		FUZZ_ASSERT(major >= 1 && major <= 99, "id '%s': CUDA %d", s, major);
		FUZZ_ASSERT(plat[0], "id '%s': empty platform", s);
		FUZZ_ASSERT(c && strlen(ver) == (size_t)(c - s) && !strncmp(s, ver, (size_t)(c - s)),
			    "id '%s': version '%s'", s, ver);
		/* Joining the parts gives the id back, when its CUDA major was written plainly (no ".M" variant). */
		if (c[5] >= '1' && c[5] <= '9' && c[5 + strspn(c + 5, "0123456789")] == '-' &&
		    strlen(s) < sizeof(back)) {
			FUZZ_ASSERT(cvm_store_id(back, sizeof(back), ver, major, plat) == 0,
				    "id '%s' does not join", s);
			FUZZ_ASSERT(!strcmp(back, s), "id '%s' joins as '%s'", s, back);
		}
	}
	free(ver);
	free(plat);
}

/* select.h: the first line neither empty nor a "#" comment, trimmed, is a version or a store id. */
static int model_pin(const char *text, size_t len, size_t spec_len, char *want, size_t want_len)
{
	const char *p = text, *end = text + len;
	struct cvm_version v;
	char ver[64], plat[64];
	int major;

	while (p < end) {
		const char *eol = memchr(p, '\n', (size_t)(end - p)), *s = p, *e;

		e = eol ? eol : end;
		p = e + 1;
		while (s < e && is_trim(*s))
			s++;
		while (e > s && is_trim(e[-1]))
			e--;
		if (s == e || *s == '#')
			continue;
		if ((size_t)(e - s) >= want_len || (size_t)(e - s) >= spec_len)
			return -CVM_E_VERSION;
		if (memchr(s, '\0', (size_t)(e - s)) || memchr(s, '/', (size_t)(e - s)) ||
		    memchr(s, ' ', (size_t)(e - s)))
			return -CVM_E_VERSION;
		memcpy(want, s, (size_t)(e - s));
		want[e - s] = '\0';
		if (cvm_version_parse(want, &v) < 0 &&
		    cvm_store_parse_id(want, ver, sizeof(ver), &major, plat, sizeof(plat)) < 0)
			return -CVM_E_VERSION;
		return 0;
	}
	return -CVM_E_VERSION;
}

static void check_pin(const uint8_t *data, size_t size, size_t spec_len)
{
	char *spec = malloc(spec_len), want[160];
	int r, m;

	if (!spec)
		abort();
	memset(spec, 'X', spec_len);
	r = cvm_pin_parse((const char *)data, size, spec, spec_len);
	m = model_pin((const char *)data, size, spec_len, want, sizeof(want));
	FUZZ_ASSERT(r == 0 || r == -CVM_E_VERSION, "pin gave %d", r);
	FUZZ_ASSERT(r == m, "pin gave %d, the rule says %d", r, m);
	if (r == 0) {
		FUZZ_ASSERT(memchr(spec, '\0', spec_len), "pin not terminated");
		FUZZ_ASSERT(!strcmp(spec, want), "pin '%s', the rule says '%s'", spec, want);
		FUZZ_ASSERT(spec[0] && spec[0] != '#' && !is_trim(spec[0]) &&
			    !is_trim(spec[strlen(spec) - 1]) && !strpbrk(spec, "/ \n"),
			    "pin '%s' is not a clean spec", spec);
	}
	free(spec);
}

static void check_header(const uint8_t *data, size_t size)
{
	struct cvm_version v;
	int i;

	if (cvm_cudnn_header_version((const char *)data, size, &v) < 0)
		return;
	FUZZ_ASSERT(v.n == 3 && v.part[3] == 0, "header: %d parts", v.n);
	for (i = 0; i < 3; i++)
		FUZZ_ASSERT(v.part[i] <= 9999999, "header: part %d is %u", i, v.part[i]);
	FUZZ_ASSERT(memmem(data, size, "CUDNN_MAJOR", 11) && memmem(data, size, "CUDNN_MINOR", 11) &&
		    memmem(data, size, "CUDNN_PATCHLEVEL", 16) && memmem(data, size, "define", 6),
		    "header version found without its macros");
}

static void check_toolkit(const uint8_t *data, size_t size)
{
	const char *t = (const char *)data;
	int major = -1, minor = -1;

	if (cvm_toolkit_parse_version_json(t, size, &major, &minor) == 0) {
		FUZZ_ASSERT(major >= 0 && major <= 9999 && minor >= 0 && minor <= 9999,
			    "version.json: %d.%d", major, minor);
		FUZZ_ASSERT(memmem(data, size, "version", 7) && memmem(data, size, "cuda", 4),
			    "version.json read without its keys");
	}
	major = minor = -1;
	if (cvm_toolkit_parse_cudart_header(t, size, &major, &minor) == 0) {
		FUZZ_ASSERT(major >= 1 && major <= 9999 && minor >= 0 && minor <= 99,
			    "cuda_runtime_api.h: %d.%d", major, minor);
		FUZZ_ASSERT(memmem(data, size, "CUDART_VERSION", 14), "CUDART_VERSION not there");
	}
	major = minor = -1;
	if (cvm_toolkit_parse_nvcc(t, size, &major, &minor) == 0) {
		FUZZ_ASSERT(major >= 0 && major <= 9999 && minor >= 0 && minor <= 9999,
			    "nvcc: %d.%d", major, minor);
		FUZZ_ASSERT(memmem(data, size, "release ", 8), "nvcc read without 'release '");
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t *copy = malloc(size ? size : 1);
	char *s;

	/* libFuzzer's buffer is exact already; a private copy keeps it so under -runs replays too. */
	if (!copy)
		abort();
	memcpy(copy, data, size);
	check_pin(copy, size, 160);
	check_pin(copy, size, 1 + (size ? copy[size - 1] % 48 : 0));
	check_header(copy, size);
	check_toolkit(copy, size);
	s = fuzz_strndup(copy, size);
	check_id(s, 64, 64);
	check_id(s, 1 + (size ? copy[0] % 16 : 0), 1 + (size > 1 ? copy[1] % 16 : 0));
	free(s);
	free(copy);
	return 0;
}
