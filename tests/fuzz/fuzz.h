/* SPDX-License-Identifier: MIT */
#ifndef CVM_FUZZ_H
#define CVM_FUZZ_H

/*
 * What every libFuzzer target here shares. An assertion failure aborts, so
 * that libFuzzer saves the input and AddressSanitizer prints the stack.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

/* Straight to fd 2: the stderr stream may have been sent to /dev/null. */
#define FUZZ_ASSERT(cond, ...)                                                     \
	do {                                                                       \
		if (!(cond)) {                                                     \
			dprintf(2, "fuzz: %s:%d: '%s' does not hold: ", __FILE__,  \
				__LINE__, #cond);                                  \
			dprintf(2, __VA_ARGS__);                                   \
			dprintf(2, "\n");                                          \
			abort();                                                   \
		}                                                                  \
	} while (0)

/*
 * cvm_err() and friends print every refusal on the stderr stream, which
 * would drown libFuzzer's own lines. Only the stream is redirected: fd 2
 * stays, so libFuzzer's status lines, the sanitizers' reports and
 * FUZZ_ASSERT still reach the terminal. CVM_FUZZ_VERBOSE=1 keeps the messages.
 */
static inline void fuzz_quiet(void)
{
	FILE *f;

	if (getenv("CVM_FUZZ_VERBOSE"))
		return;
	f = fopen("/dev/null", "w");
	if (f)
		stderr = f;
}

/* A NUL-terminated copy of data[0..n) (cut at an embedded NUL); caller frees. */
static inline char *fuzz_strndup(const uint8_t *data, size_t n)
{
	char *s = malloc(n + 1);

	if (!s)
		abort();
	memcpy(s, data, n);
	s[n] = '\0';
	return s;
}

static inline bool fuzz_has_control(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || (unsigned char)*s == 0x7f)
			return true;
	return false;
}

#endif
