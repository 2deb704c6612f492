/* SPDX-License-Identifier: MIT */
/*
 * Versions: parse, compare, match, format, encode and decode, and the CUDA
 * "X.Y" parser. The input is up to three lines, each parsed both ways; the
 * first 8 bytes are also a CUDNN_VERSION code to decode. What is accepted is
 * compared with the grammar of version.h written as POSIX regular
 * expressions, and every round trip must come back equal.
 */
#include <errno.h>
#include <regex.h>

#include "fuzz.h"

#include "error.h"
#include "version.h"

static regex_t re_version, re_canonical, re_cuda;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	fuzz_quiet();
	/* version.h: 1-4 decimal parts of at most 6 digits, nothing else. */
	if (regcomp(&re_version, "^[0-9]{1,6}(\\.[0-9]{1,6}){0,3}$", REG_EXTENDED | REG_NOSUB) ||
	    regcomp(&re_canonical, "^(0|[1-9][0-9]*)(\\.(0|[1-9][0-9]*)){0,3}$",
		    REG_EXTENDED | REG_NOSUB) ||
	    regcomp(&re_cuda, "^[0-9]{1,3}(\\.([0-9]{1,3}|x))?$", REG_EXTENDED | REG_NOSUB))
		abort();
	return 0;
}

static bool matches(regex_t *re, const char *s)
{
	return regexec(re, s, 0, NULL, 0) == 0;
}

static int sign(long long x)
{
	return (x > 0) - (x < 0);
}

/* Lexicographic over all four parts, absent ones being 0 (written apart from version.c). */
static int ref_cmp(const struct cvm_version *a, const struct cvm_version *b)
{
	/* Two parts of at most 6 digits fit a 64-bit number side by side. */
	unsigned long long x = a->part[0] * 1000000ull + a->part[1];
	unsigned long long y = b->part[0] * 1000000ull + b->part[1];

	if (x == y) {
		x = a->part[2] * 1000000ull + a->part[3];
		y = b->part[2] * 1000000ull + b->part[3];
	}
	return x < y ? -1 : x > y;
}

/* Inside the ranges where the CUDNN_VERSION encoding is meant to be exact. */
static bool encodable(const struct cvm_version *v)
{
	if (v->part[0] >= 9)
		return v->part[1] <= 99 && v->part[2] <= 99;
	return v->part[1] <= 9 && v->part[2] <= 99;
}

static void check_format(const struct cvm_version *v, const char *full)
{
	size_t len;

	for (len = 0; len <= strlen(full) + 2; len++) {
		char *b = malloc(len ? len : 1);
		int r;

		if (!b)
			abort();
		r = cvm_version_format(v, b, len);
		if (!len)
			FUZZ_ASSERT(r == -EINVAL, "format into 0 bytes gave %d", r);
		else if (strlen(full) < len)
			FUZZ_ASSERT(r == 0 && !strcmp(b, full), "format '%s' into %zu bytes: %d", full,
				    len, r);
		else
			FUZZ_ASSERT(r == -ENAMETOOLONG && b[0] == '\0',
				    "format '%s' into %zu bytes: %d", full, len, r);
		free(b);
	}
}

/* Parses s; returns whether it is a version, and checks all that follows from that. */
static bool check_version(const char *s, struct cvm_version *v)
{
	struct cvm_version back, enc;
	char buf[32], again[32];
	int r = cvm_version_parse(s, v), i;

	FUZZ_ASSERT(r == 0 || r == -CVM_E_VERSION, "parse '%s' gave %d", s, r);
	FUZZ_ASSERT((r == 0) == matches(&re_version, s), "'%s': parse says %d", s, r);
	if (r < 0)
		return false;
	FUZZ_ASSERT(v->n >= 1 && v->n <= 4, "'%s': %d parts", s, v->n);
	for (i = 0; i < 4; i++) {
		FUZZ_ASSERT(v->part[i] <= 999999, "'%s': part %d is %u", s, i, v->part[i]);
		FUZZ_ASSERT(i < v->n || v->part[i] == 0, "'%s': absent part %d is %u", s, i,
			    v->part[i]);
	}
	/* The parts are the decimal numbers written. */
	{
		const char *p = s;

		for (i = 0; i < v->n; i++) {
			char *e;
			unsigned long x = strtoul(p, &e, 10);

			FUZZ_ASSERT(x == v->part[i], "'%s': part %d read as %u", s, i, v->part[i]);
			p = *e ? e + 1 : e;
		}
	}
	FUZZ_ASSERT(cvm_version_format(v, buf, sizeof(buf)) == 0, "'%s' does not format", s);
	FUZZ_ASSERT(matches(&re_canonical, buf), "'%s' formats as '%s'", s, buf);
	FUZZ_ASSERT(cvm_version_parse(buf, &back) == 0, "'%s' formats as unparsable '%s'", s, buf);
	FUZZ_ASSERT(back.n == v->n && !memcmp(back.part, v->part, sizeof(back.part)),
		    "'%s' -> '%s' parses back different", s, buf);
	FUZZ_ASSERT(cvm_version_format(&back, again, sizeof(again)) == 0 && !strcmp(buf, again),
		    "'%s' formats unstably", buf);
	check_format(v, buf);

	FUZZ_ASSERT(cvm_version_cmp(v, v) == 0, "'%s' differs from itself", s);
	FUZZ_ASSERT(cvm_version_matches(v, v), "'%s' does not match itself", s);
	if (encodable(v)) {
		unsigned long code = cvm_version_encode(v);

		cvm_version_decode(code, &enc);
		FUZZ_ASSERT(enc.n == 3 && enc.part[0] == v->part[0] && enc.part[1] == v->part[1] &&
			    enc.part[2] == v->part[2] && enc.part[3] == 0,
			    "'%s' encodes as %lu, which decodes as %u.%u.%u", s, code, enc.part[0],
			    enc.part[1], enc.part[2]);
	}
	return true;
}

static void check_pair(const struct cvm_version *a, const struct cvm_version *b)
{
	bool m = true;
	int i;

	FUZZ_ASSERT(sign(cvm_version_cmp(a, b)) == ref_cmp(a, b), "cmp disagrees");
	FUZZ_ASSERT(sign(cvm_version_cmp(a, b)) == -sign(cvm_version_cmp(b, a)), "cmp not antisymmetric");
	for (i = 0; i < a->n; i++)
		m = m && a->part[i] == b->part[i];
	FUZZ_ASSERT(cvm_version_matches(a, b) == m, "matches disagrees");
	if (encodable(a) && encodable(b)) {
		struct cvm_version a3 = *a, b3 = *b;

		/* The encoding keeps three parts, in order. */
		a3.part[3] = b3.part[3] = 0;
		FUZZ_ASSERT(sign(ref_cmp(&a3, &b3)) ==
			    sign((long long)cvm_version_encode(a) - (long long)cvm_version_encode(b)),
			    "encoding does not keep the order");
	}
}

static void check_cuda(const char *s)
{
	int major = -7, minor = -7, r = cvm_cuda_parse(s, &major, &minor), m2, n2;
	bool want = matches(&re_cuda, s) && strtol(s, NULL, 10) != 0;
	char buf[32];

	FUZZ_ASSERT(r == 0 || r == -CVM_E_VERSION, "cuda '%s' gave %d", s, r);
	FUZZ_ASSERT((r == 0) == want, "cuda '%s': parse says %d", s, r);
	if (r < 0)
		return;
	FUZZ_ASSERT(major >= 1 && major <= 999, "cuda '%s': major %d", s, major);
	/* "12.x" is the major alone, as "12" is (NVIDIA's Windows downloads name it so). */
	FUZZ_ASSERT(strchr(s, '.') && !strstr(s, ".x") ? minor >= 0 && minor <= 999 : minor == -1,
		    "cuda '%s': minor %d", s, minor);
	FUZZ_ASSERT(major == strtol(s, NULL, 10), "cuda '%s': major %d", s, major);
	if (minor >= 0)
		snprintf(buf, sizeof(buf), "%d.%d", major, minor);
	else
		snprintf(buf, sizeof(buf), "%d", major);
	FUZZ_ASSERT(cvm_cuda_parse(buf, &m2, &n2) == 0 && m2 == major && n2 == minor,
		    "cuda '%s' -> '%s' parses back different", s, buf);
}

static void check_decode(unsigned long code)
{
	struct cvm_version v;

	cvm_version_decode(code, &v);
	FUZZ_ASSERT(v.n == 3 && v.part[3] == 0, "decode %lu: %d parts", code, v.n);
	FUZZ_ASSERT(v.part[2] <= 99 && v.part[1] <= 99, "decode %lu: %u.%u.%u", code, v.part[0],
		    v.part[1], v.part[2]);
	/* Codes that the encoding produces (8.x below 9000, 9+ from 90000) decode exactly. */
	if (code < 9000 || (code >= 90000 && code / 10000 <= 0xffffffffu))
		FUZZ_ASSERT(cvm_version_encode(&v) == code, "decode %lu gives %u.%u.%u, encoding as %lu",
			    code, v.part[0], v.part[1], v.part[2], cvm_version_encode(&v));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct cvm_version v[3];
	bool ok[3] = { false, false, false };
	char *copy = fuzz_strndup(data, size), *line[3] = { NULL, NULL, NULL }, *p = copy;
	unsigned long code = 0;
	int i, j, k, n = 0;

	/* Three lines at most; the last takes the rest. */
	while (n < 3 && p) {
		line[n++] = p;
		p = n < 3 ? strchr(p, '\n') : NULL;
		if (p)
			*p++ = '\0';
	}
	for (i = 0; i < n; i++) {
		ok[i] = check_version(line[i], &v[i]);
		check_cuda(line[i]);
	}
	for (i = 0; i < n; i++)
		for (j = 0; j < n; j++)
			if (ok[i] && ok[j])
				check_pair(&v[i], &v[j]);
	/* Transitivity of the order over the three. */
	for (i = 0; i < n; i++)
		for (j = 0; j < n; j++)
			for (k = 0; k < n; k++)
				if (ok[i] && ok[j] && ok[k] && cvm_version_cmp(&v[i], &v[j]) <= 0 &&
				    cvm_version_cmp(&v[j], &v[k]) <= 0)
					FUZZ_ASSERT(cvm_version_cmp(&v[i], &v[k]) <= 0, "order not transitive");

	memcpy(&code, data, size < sizeof(code) ? size : sizeof(code));
	check_decode(code);
	check_decode(code % 200000);
	free(copy);
	return 0;
}
