/* SPDX-License-Identifier: MIT */
#ifndef CUDNNVM_VERSION_H
#define CUDNNVM_VERSION_H

#include <stdbool.h>
#include <stddef.h>

/* A cuDNN version of 1 to 4 dotted parts: 9, 8.9, 8.9.7, 8.9.7.29. */
struct cvm_version {
	unsigned part[4];
	int n;			/* parts given, 1..4; absent parts are 0 */
};

/* The oldest cuDNN major cudnnvm installs and activates (legacy tgz 8.0-8.2 included). */
#define CVM_CUDNN_OLDEST_MAJOR 8

/*
 * Parses s strictly: 1-4 decimal parts of at most 6 digits each, no sign,
 * no spaces, nothing after. 0, or -CVM_E_VERSION (prints nothing).
 */
int cvm_version_parse(const char *s, struct cvm_version *v);

/* Orders by all four parts (absent = 0): <0, 0, >0. */
int cvm_version_cmp(const struct cvm_version *a, const struct cvm_version *b);

/* True when the first pat->n parts of v equal those of pat (8.9 matches 8.9.7.29). */
bool cvm_version_matches(const struct cvm_version *pat, const struct cvm_version *v);

/*
 * CUDNN_VERSION encoding: M*1000+m*100+p up to 8.x, M*10000+m*100+p from 9.0.
 * decode: value >= 90000 means major = v/10000, else major = v/1000.
 */
unsigned long cvm_version_encode(const struct cvm_version *v);
void cvm_version_decode(unsigned long code, struct cvm_version *v);

/* Writes "a.b.c[.d]" (v->n parts); -ENAMETOOLONG if it does not fit. */
int cvm_version_format(const struct cvm_version *v, char *buf, size_t len);

/* Parses a CUDA version "X.Y" (or "X"): 0, or -CVM_E_VERSION. */
int cvm_cuda_parse(const char *s, int *major, int *minor);

/*
 * The argument of --cuda X.Y where it selects builds by their CUDA major
 * (install, export, fetch, list, uninstall, verify): the major into *major.
 * 0, or -CVM_E_USAGE said as "<cmd>: --cuda '<arg>': expected a CUDA version
 * such as 12.4".
 */
int cvm_cuda_arg(const char *cmd, const char *arg, int *major);

#endif
