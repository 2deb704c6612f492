/* SPDX-License-Identifier: MIT */
#ifndef CUDNNVM_UNIT_H
#define CUDNNVM_UNIT_H

/*
 * A minimal unit-test harness: each CHECK prints "ok - ..." or
 * "not ok - ..." (TAP style); tests/run.sh counts them. main() returns
 * unit_done(): it prints the plan "1..N" (tests/run.sh fails a binary that
 * stopped before it) and is non-zero when any check failed. UNIT_SKIP(what,
 * why) stands for checks that cannot run here: one "ok - what # SKIP why"
 * result, counted in the plan.
 */
#include <stdio.h>
#include <string.h>

static int unit_failed, unit_passed, unit_skipped;

#define CHECK(cond, ...) do { \
	if (cond) { \
		unit_passed++; \
		printf("ok - "); printf(__VA_ARGS__); printf("\n"); \
	} else { \
		unit_failed++; \
		printf("not ok - "); printf(__VA_ARGS__); \
		printf("  (%s:%d: %s)\n", __FILE__, __LINE__, #cond); \
	} \
} while (0)

#define CHECK_INT(got, want, ...) do { \
	long long g_ = (long long)(got), w_ = (long long)(want); \
	CHECK(g_ == w_, __VA_ARGS__); \
	if (g_ != w_) printf("#   got %lld, want %lld\n", g_, w_); \
} while (0)

#define CHECK_STR(got, want, ...) do { \
	const char *g_ = (got), *w_ = (want); \
	int eq_ = (g_ && w_) ? strcmp(g_, w_) == 0 : g_ == w_; \
	CHECK(eq_, __VA_ARGS__); \
	if (!eq_) printf("#   got '%s', want '%s'\n", g_ ? g_ : "(null)", w_ ? w_ : "(null)"); \
} while (0)

#define UNIT_SKIP(what, ...) do { \
	unit_skipped++; \
	printf("ok - %s # SKIP ", what); printf(__VA_ARGS__); printf("\n"); \
} while (0)

static inline int unit_done(void)
{
	printf("1..%d\n", unit_passed + unit_failed + unit_skipped);
	fflush(stdout);
	return unit_failed ? 1 : 0;
}

#endif
