/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cudnnvm/alloc.h"

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
