/* SPDX-License-Identifier: MIT */
/*
 * The cost of the load closure check (closure.h) of one cuDNN folder for one
 * toolkit, as use pays it once per switch: RUNS checks in a row (the files in
 * the page cache after the first, as right after an install), the median
 * in ms, against the 20 ms a version may cost. Prints one line; exit 1 when
 * over, 2 on bad arguments.
 *
 *   bench-closure DIR TOOLKIT [RUNS]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "closure.h"
#include "toolkit.h"

#define LIMIT_MS 20.0

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	struct cvm_toolkit tk = { 0 };
	struct cvm_closure c = { 0 };
	double ms[101], cpu[101];
	int runs = argc > 3 ? atoi(argv[3]) : 11;

	if (argc < 3 || runs < 1 || runs > 101) {
		fprintf(stderr, "usage: bench-closure DIR TOOLKIT [RUNS (1-101)]\n");
		return 2;
	}
	tk.path = argv[2];
	tk.display = argv[2];
	if (cvm_toolkit_version(argv[2], &tk.major, &tk.minor, &tk.source) < 0) {
		fprintf(stderr, "bench-closure: %s: no CUDA toolkit version found\n", argv[2]);
		return 2;
	}
	for (int i = 0; i < runs; i++) {
		struct timespec a, b, ca, cb;
		cvm_closure_release(&c);
		clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ca);
		clock_gettime(CLOCK_MONOTONIC, &a);
		if (cvm_closure_check("", argv[1], &tk, &c) < 0) {
			fprintf(stderr, "bench-closure: cannot read %s\n", argv[1]);
			return 2;
		}
		clock_gettime(CLOCK_MONOTONIC, &b);
		clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &cb);
		ms[i] = (double)(b.tv_sec - a.tv_sec) * 1e3 + (double)(b.tv_nsec - a.tv_nsec) / 1e6;
		cpu[i] = (double)(cb.tv_sec - ca.tv_sec) * 1e3 + (double)(cb.tv_nsec - ca.tv_nsec) / 1e6;
	}
	qsort(ms, (size_t)runs, sizeof(*ms), cmp);
	qsort(cpu, (size_t)runs, sizeof(*cpu), cmp);
	/* The CPU time is the cost; the wall time also counts other processes on a busy machine. */
	printf("closure check of %s for CUDA %d.%d: %zu libraries, %zu needs, %zu missing; "
	       "median %.2f ms CPU (%.2f ms wall) of %d runs: %.2fx the %.0f ms limit: %s\n",
	       argv[1], tk.major, tk.minor, c.nlibs, c.n, c.missing, cpu[runs / 2], ms[runs / 2],
	       runs, cpu[runs / 2] / LIMIT_MS, LIMIT_MS, cpu[runs / 2] < LIMIT_MS ? "ok" : "OVER");
	cvm_closure_release(&c);
	return cpu[runs / 2] < LIMIT_MS ? 0 : 1;
}
