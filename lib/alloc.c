/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"

int cvm_grow(void *arrp, size_t size, size_t n, size_t *cap)
{
	size_t max, want, step, bytes;
	void *old, *p;

	if (n <= *cap)
		return 0;
	if (!size)
		return -EINVAL;
	/* An object over PTRDIFF_MAX bytes breaks pointer differences: refused as too large. */
	max = (size_t)PTRDIFF_MAX / size;
	if (n > max)
		return -EOVERFLOW;
	step = *cap / 2 + 16;
	want = step <= max && *cap <= max - step ? *cap + step : max;
	if (want < n)
		want = n;
	if (cvm_st_mult(want, size, &bytes) < 0)
		return -EOVERFLOW;
	/*
	 * The caller's pointer is read and written as bytes: arrp points at a
	 * T *, not a void *, and memcpy is the access that the aliasing rules
	 * allow for any type.
	 */
	memcpy(&old, arrp, sizeof(old));
	p = realloc(old, bytes);
	if (!p)
		return -ENOMEM;
	memcpy(arrp, &p, sizeof(p));
	*cap = want;
	/* cppcheck sees no owner for p: the memcpy above gave it to the caller's pointer. */
	/* cppcheck-suppress memleak */
	return 0;
}

/* Room for n more bytes and the NUL after them. */
static int strbuf_room(struct cvm_strbuf *sb, size_t n)
{
	if (n >= SIZE_MAX - sb->len)
		return -EOVERFLOW;
	return CVM_GROW(sb->buf, sb->len + n + 1, sb->cap);
}

int cvm_strbuf_add(struct cvm_strbuf *sb, const void *data, size_t len)
{
	int r = strbuf_room(sb, len);

	if (r < 0)
		return r;
	if (len)
		memcpy(sb->buf + sb->len, data, len);
	sb->len += len;
	sb->buf[sb->len] = '\0';
	return 0;
}

int cvm_strbuf_addf(struct cvm_strbuf *sb, const char *fmt, ...)
{
	va_list ap;
	int n, r;

	va_start(ap, fmt);
	n = vsnprintf(sb->buf ? sb->buf + sb->len : NULL, sb->buf ? sb->cap - sb->len : 0, fmt, ap);
	va_end(ap);
	if (n < 0)
		return -EINVAL;
	if (sb->buf && (size_t)n < sb->cap - sb->len) {
		sb->len += (size_t)n;
		return 0;
	}
	/* It did not fit: grow to the length vsnprintf counted and write it again. */
	r = strbuf_room(sb, (size_t)n);
	if (r < 0) {
		if (sb->buf)
			sb->buf[sb->len] = '\0';
		return r;
	}
	va_start(ap, fmt);
	vsnprintf(sb->buf + sb->len, sb->cap - sb->len, fmt, ap);
	va_end(ap);
	sb->len += (size_t)n;
	return 0;
}

void cvm_strbuf_release(struct cvm_strbuf *sb)
{
	free(sb->buf);
	sb->buf = NULL;
	sb->len = sb->cap = 0;
}
