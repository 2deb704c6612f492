/* SPDX-License-Identifier: MIT */
/*
 * cvm_grow / CVM_GROW (alloc.h): geometric growth that keeps the elements,
 * nothing done when the room is there, counts whose size does not fit
 * refused with -EOVERFLOW and the array and its capacity untouched then;
 * cvm_st_mult's overflow check; the string builder (cvm_strbuf) over it.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "unit.h"

struct big {
	char bytes[4096];
};

static void growth(void)
{
	int *v = NULL;
	size_t cap = 0, reallocs = 0, prev;
	int ok = 1;

	CHECK_INT(CVM_GROW(v, 0, cap), 0, "room for 0 elements: nothing to do");
	CHECK(v == NULL && cap == 0, "room for 0 elements allocates nothing");
	CHECK_INT(CVM_GROW(v, 1, cap), 0, "an empty array grows to hold 1");
	CHECK(v != NULL && cap >= 1, "it holds at least 1 (cap %zu)", cap);
	prev = cap;
	/* Appending one at a time: geometric, so a handful of reallocs for 100000. */
	for (size_t i = 0; i < 100000; i++) {
		if (CVM_GROW(v, i + 1, cap) < 0) {
			ok = 0;
			break;
		}
		if (cap != prev) {
			reallocs++;
			prev = cap;
		}
		v[i] = (int)i;
	}
	CHECK(ok && cap >= 100000, "100000 appends succeed (cap %zu)", cap);
	CHECK(reallocs <= 40, "100000 appends take %zu reallocs (geometric: at most 40)", reallocs);
	for (size_t i = 0; ok && i < 100000; i++)
		ok = v[i] == (int)i;
	CHECK(ok, "every element survives the reallocs");
	prev = cap;
	int *same = v;
	CHECK_INT(CVM_GROW(v, cap, cap), 0, "asking for the capacity there is does nothing");
	CHECK(v == same && cap == prev, "the array and its capacity are the same");
	CHECK_INT(CVM_GROW(v, 5, cap), 0, "asking for less does nothing (no shrinking)");
	CHECK(v == same && cap == prev, "the array keeps its capacity");
	/* A jump far past the geometric step gets exactly what was asked. */
	CHECK_INT(CVM_GROW(v, prev * 4, cap), 0, "a jump to 4x the capacity");
	CHECK_INT(cap, prev * 4, "the capacity is the count asked for");
	CHECK_INT(v[99999], 99999, "the last element is still there");
	free(v);
}

static void overflow(void)
{
	struct big *b = NULL;
	char *s = NULL;
	size_t cap = 0, r = 7;
	int *v = NULL;

	CHECK_INT(CVM_GROW(b, SIZE_MAX / sizeof(*b) + 1, cap), -EOVERFLOW,
		  "a count over SIZE_MAX / size is -EOVERFLOW");
	CHECK(b == NULL && cap == 0, "the array and its capacity stay untouched");
	CHECK_INT(CVM_GROW(b, SIZE_MAX, cap), -EOVERFLOW, "SIZE_MAX elements of 4096 bytes: -EOVERFLOW");
	CHECK_INT(CVM_GROW(s, SIZE_MAX, cap), -EOVERFLOW, "SIZE_MAX bytes: -EOVERFLOW");
	CHECK_INT(CVM_GROW(s, (size_t)PTRDIFF_MAX + 1, cap), -EOVERFLOW,
		  "PTRDIFF_MAX + 1 bytes (more than an object may have): -EOVERFLOW");
	CHECK(s == NULL && cap == 0, "the byte array stays untouched");

	/* The same on an array that holds data: it stays valid and whole. */
	CHECK_INT(CVM_GROW(v, 3, cap), 0, "an array of 3 ints");
	v[0] = 10, v[1] = 20, v[2] = 30;
	int *before = v;
	size_t was = cap;
	CHECK_INT(CVM_GROW(v, SIZE_MAX / sizeof(*v) + 1, cap), -EOVERFLOW,
		  "growing it past SIZE_MAX / sizeof(int) is -EOVERFLOW");
	CHECK(v == before && cap == was, "its pointer and capacity are untouched");
	CHECK(v[0] == 10 && v[1] == 20 && v[2] == 30, "its elements are untouched");
	CHECK_INT(CVM_GROW(v, was + 1, cap), 0, "and it can still grow after the refusal");
	CHECK(v[0] == 10 && v[2] == 30, "with its elements");
	free(v);

	cap = 0;
	CHECK_INT(cvm_grow(&s, 0, 1, &cap), -EINVAL, "an element size of 0 is -EINVAL");
	CHECK(s == NULL && cap == 0, "and changes nothing");

	CHECK_INT(cvm_st_mult(3, 5, &r), 0, "3 * 5 fits");
	CHECK_INT(r, 15, "3 * 5 = 15");
	CHECK_INT(cvm_st_mult(SIZE_MAX / 2 + 1, 2, &r), -EOVERFLOW, "(SIZE_MAX / 2 + 1) * 2 overflows");
	CHECK_INT(r, 15, "the result is untouched on overflow");
	CHECK_INT(cvm_st_mult(SIZE_MAX, 1, &r), 0, "SIZE_MAX * 1 fits");
	CHECK(r == SIZE_MAX, "SIZE_MAX * 1 = SIZE_MAX");
	CHECK_INT(cvm_st_mult(0, SIZE_MAX, &r), 0, "0 * SIZE_MAX fits");
	CHECK_INT(r, 0, "0 * SIZE_MAX = 0");
	CHECK_INT(cvm_st_mult(SIZE_MAX, 0, &r), 0, "SIZE_MAX * 0 fits");
}

static void strbuf(void)
{
	struct cvm_strbuf sb = { 0 };
	char big[5000];
	size_t was;

	CHECK_INT(cvm_strbuf_add(&sb, "", 0), 0, "adding nothing to an empty builder");
	CHECK(sb.buf && sb.len == 0 && sb.buf[0] == '\0', "leaves an empty C string");
	CHECK_INT(cvm_strbuf_addf(&sb, "%s-%d", "cuda", 12), 0, "a formatted add");
	CHECK_STR(sb.buf, "cuda-12", "is appended");
	CHECK_INT(cvm_strbuf_add(&sb, ".4\0x", 2), 0, "a byte add");
	CHECK_STR(sb.buf, "cuda-12.4", "takes exactly len bytes and ends the string");
	CHECK_INT(sb.len, 9, "len counts the bytes, not the NUL");
	/* Longer than the room left: the formatted add grows and writes it again. */
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	CHECK_INT(cvm_strbuf_addf(&sb, "[%s]", big), 0, "a formatted add larger than the room");
	CHECK_INT(sb.len, 9 + 2 + sizeof(big) - 1, "its whole length is kept");
	CHECK(!strncmp(sb.buf, "cuda-12.4[x", 11) && sb.buf[sb.len - 1] == ']' &&
	      sb.buf[sb.len] == '\0', "with the text before it and a NUL after it");
	was = sb.len;
	CHECK_INT(cvm_strbuf_add(&sb, big, SIZE_MAX - 1), -EOVERFLOW,
		  "a length that cannot fit with the NUL is -EOVERFLOW");
	CHECK(sb.len == was && sb.buf[was] == '\0', "and the contents are untouched");
	cvm_strbuf_release(&sb);
	CHECK(sb.buf == NULL && sb.len == 0 && sb.cap == 0, "release empties it for reuse");
}

int main(void)
{
	growth();
	overflow();
	strbuf();
	return unit_done();
}
