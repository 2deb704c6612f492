/* SPDX-License-Identifier: MIT */
#ifndef CUDNNVM_PEINFO_H
#define CUDNNVM_PEINFO_H

/*
 * What a Windows DLL needs at load and run time, read from its bytes
 * without loading it (PE32 and PE32+, any machine): the DLL names of its
 * import table and of its delay-load import table, and the names it hands
 * LoadLibrary at run time (the whole strings of its .rdata, ASCII or
 * UTF-16LE, that begin with one of the caller's probes and end in ".dll":
 * "zlibwapi.dll", "nvrtc64_120_0.dll"). Every offset, RVA and count is
 * checked against the file and its section table, so a hostile or
 * truncated file gives an error, never a read outside it. Compiled on both
 * platforms: the closure's Windows part uses it, the Linux build tests and
 * fuzzes it.
 */
#include <stdbool.h>
#include <stddef.h>

#define CVM_PE_MAX_IMPORTS 64
#define CVM_PE_MAX_LOADS 8

struct cvm_pe_info {
	unsigned machine;			/* the COFF header's: 0x8664 x64, 0xaa64 arm64, 0x14c x86 */
	bool pe32plus;				/* a 64-bit image (PE32+) */
	/* The import table's DLL names, in order, each once (case ignored); longer ones skipped. */
	char imports[CVM_PE_MAX_IMPORTS][64];
	size_t nimports;
	char delay[CVM_PE_MAX_IMPORTS][64];	/* the delay-load imports, the same way */
	size_t ndelay;
	char loads[CVM_PE_MAX_LOADS][64];	/* the names of .rdata that a probe finds */
	size_t nloads;
};

/*
 * Parses the PE image buf[0..len), looking for the strings that begin with
 * one of the nprobes probes (matched with case ignored). 0 and *out filled;
 * -CVM_E_LAYOUT when it is not a PE image or a header or table it has
 * points outside it. Prints nothing.
 */
int cvm_pe_parse(const void *buf, size_t len, const char *const *probes, size_t nprobes,
		 struct cvm_pe_info *out);

/*
 * The same of the file path (relative to dirfd, a link followed; not a
 * regular file: -CVM_E_LAYOUT), read piece by piece (a cuDNN DLL can be
 * 1 GB: only its headers, tables and .rdata are read). 0, -CVM_E_LAYOUT or
 * -errno. Prints nothing.
 */
int cvm_pe_read_at(int dirfd, const char *path, const char *const *probes, size_t nprobes,
		   struct cvm_pe_info *out);

#endif
