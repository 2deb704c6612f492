/* SPDX-License-Identifier: MIT */
#ifndef CUDNNVM_DYNLIB_H
#define CUDNNVM_DYNLIB_H

#include <stddef.h>

/*
 * Libraries loaded at run time, not linked (libarchive, libcurl, libcrypto on
 * Linux): a command that does not call one does not pay for mapping and
 * relocating its dependency tree at every start (bench/RESULTS.md). Each
 * caller keeps one static struct cvm_dynlib and calls cvm_dynlib_load before
 * its first call into the library; the loading is done once per process
 * (thread-safe), a failure is reported once and returned again after.
 */
struct cvm_dynsym {
	const char *name;	/* the library's own name of the function */
	void **slot;		/* where its address goes */
};

/* One entry of a table: the function f, its address into holder.f. */
#define CVM_DYNSYM(holder, f) { #f, (void **)&(holder).f }
/* .syms and .nsyms of a struct cvm_dynlib, from a table. */
#define CVM_DYNSYMS(table) .syms = (table), .nsyms = sizeof(table) / sizeof((table)[0])

struct cvm_dynlib {
	const char *soname;	/* the major soname: the ABI the library keeps */
	const char *test_env;	/* test builds: a variable naming another file to load */
	const char *task;	/* for the error: "cannot <task>: ..." */
	const char *hint;	/* what to do, after the error */
	const struct cvm_dynsym *syms;
	size_t nsyms;
	int state;		/* 0 not tried, 1 loaded, < 0 the error */
};

/*
 * Loads lib->soname and resolves every symbol. 0, or -CVM_E_NOTFOUND after
 * one error line: "cannot <task>: <file> is not loadable (<why>); <hint>" or
 * "cannot <task>: <file> lacks <function>, which cudnnvm needs".
 */
int cvm_dynlib_load(struct cvm_dynlib *lib);

#endif
