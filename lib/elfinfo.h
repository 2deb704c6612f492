/* SPDX-License-Identifier: MIT */
#ifndef CUDNNVM_ELFINFO_H
#define CUDNNVM_ELFINFO_H

/*
 * What a cuDNN library file says about itself, read from its bytes without
 * loading it (no libelf): ELF64 little-endian only. Every offset and size is
 * checked against the file, so a hostile or truncated file gives an error,
 * never a read outside it.
 *
 * The evidence of a library's release (docs/cudnn-facts.md): its soname
 * (major only), a "cudnn_version_M_m_p_b_" string (libcudnn_graph carries
 * one), and the CUDNN_VERSION constant compiled into the sub-library's
 * version-check entry point (cudnnOpsVersionCheck, cudnnCnnVersionCheck ...,
 * or cudnnGetVersion where it is not a forwarder). The device code: the
 * fatbin sections (.nv_fatbin, __nv_relfatbin) list one entry per cubin
 * (sm_XX) and per PTX.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CVM_ELF_MAX_ARCHS 32
#define CVM_ELF_MAX_NEEDED 32
#define CVM_ELF_MAX_LOADS 8

struct cvm_elf_info {
	char soname[128];		/* DT_SONAME, "" when none */
	char tag[32];			/* "9.19.0" from a cudnn_version_ string, "" when none */
	char check_sym[64];		/* the version-check function the constant came from */
	unsigned long check_version;	/* its CUDNN_VERSION constant (91900), 0 when none */
	unsigned archs[CVM_ELF_MAX_ARCHS];	/* cubin architectures (90 = sm_90), sorted */
	size_t narchs;
	unsigned ptx[CVM_ELF_MAX_ARCHS];	/* PTX virtual architectures, sorted */
	size_t nptx;
	bool fatbin;			/* has a fatbin section */
	char needed[CVM_ELF_MAX_NEEDED][64];	/* DT_NEEDED entries, in order (longer ones skipped) */
	size_t nneeded;
	/*
	 * cvm_elf_read_deps only: the whole strings of .rodata that begin with
	 * one of its probes ("libnvrtc.so." finds "libnvrtc.so.13"), the names
	 * the library hands dlopen at run time.
	 */
	char loads[CVM_ELF_MAX_LOADS][64];
	size_t nloads;
};

/*
 * Parses the ELF image buf[0..len). 0 and *out filled; -CVM_E_LAYOUT when it
 * is not an ELF64 little-endian file or its headers point outside it. Prints
 * nothing.
 */
int cvm_elf_parse(const void *buf, size_t len, struct cvm_elf_info *out);

/*
 * Maps the file path (relative to dirfd, symlinks followed) read-only and
 * parses it. 0, -CVM_E_LAYOUT, or -errno. Prints nothing.
 */
int cvm_elf_read_at(int dirfd, const char *path, struct cvm_elf_info *out);

/*
 * What a library needs at load and run time, and nothing else (no symbol
 * table, no fatbin): soname, needed[] and loads[] (the strings of its
 * .rodata that start with one of the nprobes probes). 0, -CVM_E_LAYOUT or
 * -errno, as cvm_elf_read_at. Prints nothing.
 */
int cvm_elf_read_deps(int dirfd, const char *path, const char *const *probes, size_t nprobes,
		      struct cvm_elf_info *out);

/*
 * What cvm_elf_read_at answered for files, by device and inode (elfcache.c):
 * the extraction reads each library as it is written (extract.h), so that
 * the checks of the staged tree (release.h, ccgate.h) need not read it again.
 */
struct cvm_elf_known {
	uint64_t dev, ino;
	int r;				/* 0 or -CVM_E_LAYOUT */
	struct cvm_elf_info e;
};

struct cvm_elf_cache {
	struct cvm_elf_known *v;
	size_t n, cap;
};

/* Notes read_at's answer r (0 or -CVM_E_LAYOUT) for the file dev:ino: 0 or -ENOMEM. */
int cvm_elf_cache_add(struct cvm_elf_cache *c, uint64_t dev, uint64_t ino, int r,
		      const struct cvm_elf_info *e);
/*
 * cvm_elf_read_at(dirfd, path, out), unless c (or NULL) has the answer for
 * path's file (symlinks followed, as read_at follows them).
 */
int cvm_elf_read_known(const struct cvm_elf_cache *c, int dirfd, const char *path,
		       struct cvm_elf_info *out);
void cvm_elf_cache_free(struct cvm_elf_cache *c);

/* "9.19.0" for 91900 (8.9.7 for 8907); buf of at least 16 bytes. */
void cvm_elf_version_str(unsigned long v, char *buf, size_t len);

#endif
