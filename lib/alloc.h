/* SPDX-License-Identifier: MIT */
#ifndef CUDNNVM_ALLOC_H
#define CUDNNVM_ALLOC_H

/*
 * Growing arrays, in the manner of git's ALLOC_GROW and st_mult: every
 * array that grows as it is filled (a list, a stack, a byte buffer) goes
 * through cvm_grow, which grows geometrically (appending n elements one at
 * a time costs O(n), not O(n^2)) and checks that the element count times the
 * element size fits before it asks for memory.
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>

/*
 * *res = a * b. 0, or -EOVERFLOW when the product does not fit a size_t
 * (*res untouched then).
 */
static inline int cvm_st_mult(size_t a, size_t b, size_t *res)
{
	if (b && a > SIZE_MAX / b)
		return -EOVERFLOW;
	*res = a * b;
	return 0;
}

/*
 * Makes the array whose address is arrp (a pointer to the caller's pointer
 * variable, NULL or malloc'd, of *cap elements of size bytes each) hold at
 * least n elements: nothing when *cap >= n (n = 0 included), otherwise it is
 * realloc'd to max(n, *cap * 3/2 + 16) elements (fewer when that many would
 * not fit: never less than n) and *cap is set to that count. The elements
 * already there are kept; the new ones are not initialised.
 *
 * Returns 0; -EOVERFLOW when n * size is more than an object may have
 * (PTRDIFF_MAX bytes); -ENOMEM when realloc fails; -EINVAL when size is 0.
 * On failure the array and *cap are untouched: the old array stays the
 * caller's, still valid, still to be freed by the caller. The caller always
 * owns the array (free it with free()). Not atomic: an array shared between
 * threads needs the caller's lock.
 */
int cvm_grow(void *arrp, size_t size, size_t n, size_t *cap);

/*
 * CVM_GROW(v, n, cap): cvm_grow for the pointer variable v (any object
 * type), its wanted count n and its capacity cap (a size_t lvalue), e.g.
 *	r = CVM_GROW(l->v, l->n + 1, l->cap);
 * Each argument is evaluated once. Returns cvm_grow's value.
 */
#define CVM_GROW(v, n, cap) cvm_grow(&(v), sizeof(*(v)), (n), &(cap))

/*
 * A growing byte string, as git's strbuf: buf holds len bytes and, once
 * something was added, a NUL after them (so text can be used as a C string).
 * Start with struct cvm_strbuf sb = { 0 }; free with cvm_strbuf_release.
 * Each add grows through cvm_grow (overflow-checked) and returns 0, or
 * -ENOMEM / -EOVERFLOW with the contents as they were before the call.
 */
struct cvm_strbuf {
	char *buf;
	size_t len, cap;
};

int cvm_strbuf_add(struct cvm_strbuf *sb, const void *data, size_t len);
int cvm_strbuf_addf(struct cvm_strbuf *sb, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void cvm_strbuf_release(struct cvm_strbuf *sb);

#endif
