/* SPDX-License-Identifier: MIT */
#ifndef CUDNNVM_CCGATE_H
#define CUDNNVM_CCGATE_H

/*
 * Does a build serve a GPU's compute capability? The truth is the device
 * code the libraries embed (elfinfo.h): read once at install into the record.
 * A GPU of capability M.m is served by a cubin sm_Mk with k <= m (cubins run
 * on later minors of their major) or by PTX for a virtual architecture at or
 * below M.m (the driver compiles it, slowly, on first use). A table from
 * docs/cudnn-facts.md is the fallback for builds whose device code is not known.
 */
#include <stdbool.h>
#include <stddef.h>

#define CVM_ARCHS_MAX 32

struct cvm_archs {
	bool known;			/* read from the files */
	unsigned sm[CVM_ARCHS_MAX];	/* cubins every library with device code has (90 = sm_90) */
	size_t n;
	unsigned ptx[CVM_ARCHS_MAX];	/* PTX every such library has */
	size_t nptx;
};

/*
 * Reads the fatbins of every lib/libcudnn*.so* regular file of the tree at
 * dirfd; the architectures kept are those all of them have. Files without
 * device code (the dispatcher, libcudnn_graph) do not count; with none at
 * all, known stays false. 0 or -errno (a file that is not ELF is skipped).
 * What known (or NULL) has of a library is not read again (elfinfo.h).
 */
struct cvm_elf_cache;
int cvm_ccgate_scan(int dirfd, const struct cvm_elf_cache *known, struct cvm_archs *out);

/* Whether the scans read a file of this name (libcudnn*.so*): the release check's are among them. */
bool cvm_ccgate_reads(const char *name);

/* The same for a library folder itself (libfd; links followed). */
int cvm_ccgate_scan_dir(int libfd, struct cvm_archs *out);

/*
 * NULL when a GPU of capability major.minor is served; otherwise a reason
 * (into why) saying what the build has. cudnn (91900) and cudart (13000)
 * feed the fallback table when a is NULL or not known.
 */
const char *cvm_ccgate_check(const struct cvm_archs *a, unsigned long cudnn, unsigned long cudart,
			     int major, int minor, char *why, size_t len);

/* "sm_75 sm_80 ... + PTX 121" (or "unknown"); buf of at least 256 bytes. */
void cvm_ccgate_format(const struct cvm_archs *a, char *buf, size_t len);

#endif
