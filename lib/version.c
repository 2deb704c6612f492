/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "error.h"
#include "out.h"
#include "version.h"

#define MAX_DIGITS 6

/*
 * Reads one run of 1..max decimal digits at *s into *out and advances *s.
 * strtoul is not used: it takes signs, spaces and hexadecimal prefixes.
 */
static int digits(const char **s, int max, unsigned *out)
{
	const char *p = *s;
	unsigned v = 0;
	int n = 0;

	while (*p >= '0' && *p <= '9') {
		if (++n > max)
			return -1;
		v = v * 10 + (unsigned)(*p - '0');
		p++;
	}
	if (!n)
		return -1;
	*s = p;
	*out = v;
	return 0;
}

int cvm_version_parse(const char *s, struct cvm_version *v)
{
	struct cvm_version t = { { 0 }, 0 };

	if (!s)
		return -CVM_E_VERSION;
	for (;;) {
		if (t.n == 4 || digits(&s, MAX_DIGITS, &t.part[t.n]) < 0)
			return -CVM_E_VERSION;
		t.n++;
		if (!*s)
			break;
		if (*s++ != '.')
			return -CVM_E_VERSION;
	}
	*v = t;
	return 0;
}

int cvm_version_cmp(const struct cvm_version *a, const struct cvm_version *b)
{
	int i;

	for (i = 0; i < 4; i++)
		if (a->part[i] != b->part[i])
			return a->part[i] < b->part[i] ? -1 : 1;
	return 0;
}

bool cvm_version_matches(const struct cvm_version *pat, const struct cvm_version *v)
{
	int i;

	for (i = 0; i < pat->n && i < 4; i++)
		if (pat->part[i] != v->part[i])
			return false;
	return true;
}

unsigned long cvm_version_encode(const struct cvm_version *v)
{
	unsigned long major = v->part[0], minor = v->part[1], patch = v->part[2];

	/* cuDNN 9 widened the major's factor so that minors past 9 fit. */
	if (major >= 9)
		return major * 10000 + minor * 100 + patch;
	return major * 1000 + minor * 100 + patch;
}

void cvm_version_decode(unsigned long code, struct cvm_version *v)
{
	memset(v, 0, sizeof(*v));
	if (code >= 90000) {
		v->part[0] = (unsigned)(code / 10000);
		v->part[1] = (unsigned)(code % 10000 / 100);
	} else {
		v->part[0] = (unsigned)(code / 1000);
		v->part[1] = (unsigned)(code % 1000 / 100);
	}
	v->part[2] = (unsigned)(code % 100);
	v->n = 3;
}

int cvm_version_format(const struct cvm_version *v, char *buf, size_t len)
{
	size_t o = 0;
	int i, w;

	if (v->n < 1 || v->n > 4 || !len)
		return -EINVAL;
	for (i = 0; i < v->n; i++) {
		w = snprintf(buf + o, len - o, i ? ".%u" : "%u", v->part[i]);
		if (w < 0 || (size_t)w >= len - o) {
			buf[0] = '\0';
			return -ENAMETOOLONG;
		}
		o += (size_t)w;
	}
	return 0;
}

int cvm_cuda_parse(const char *s, int *major, int *minor)
{
	unsigned ma, mi;

	/*
	 * "12" alone (or "12.x") gives minor -1, meaning "any 12.x": 0 would claim 12.0.
	 * Three digits are plenty for either part and keep the ints small.
	 */
	if (!s || digits(&s, 3, &ma) < 0 || !ma)
		return -CVM_E_VERSION;
	/* "12.x", as NVIDIA's Windows downloads name the CUDA major: the same as "12". */
	if (!*s || !strcmp(s, ".x")) {
		*major = (int)ma;
		*minor = -1;
		return 0;
	}
	if (*s++ != '.' || digits(&s, 3, &mi) < 0 || *s)
		return -CVM_E_VERSION;
	*major = (int)ma;
	*minor = (int)mi;
	return 0;
}

int cvm_cuda_arg(const char *cmd, const char *arg, int *major)
{
	int minor;

	if (cvm_cuda_parse(arg, major, &minor) == 0)
		return 0;
	return cvm_err_usage(cmd, "--cuda '%s': expected a CUDA version such as 12.4", cvm_safe(arg));
}
