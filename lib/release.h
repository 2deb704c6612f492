/* SPDX-License-Identifier: MIT */
#ifndef CUDNNVM_RELEASE_H
#define CUDNNVM_RELEASE_H

/*
 * One release per version: every versioned library file of a cuDNN tree
 * (lib/libcudnn*.so.*) must belong to the release its headers and name say.
 * The evidence (elfinfo.h): the file name's version (libcudnn_cnn.so.9.19.0),
 * the soname's major, a cudnn_version_ string, and the constant in the
 * sub-library's version-check entry point. A file that carries no evidence
 * (the dispatcher, libcudnn_heuristic) is not odd. Windows DLLs are not read.
 */
#include <stddef.h>

struct cvm_release_odd {
	char path[256];		/* "lib/libcudnn_cnn.so.9.19.0" */
	char found[32];		/* the version it carries: "9.14.0" (or "8" for a soname major) */
	char how[64];		/* what says so: "its soname", "cudnnCnnVersionCheck", ... */
};

/*
 * Checks the tree at dirfd against expected ("9.19.0"). 0 and *odd (malloc'd,
 * the caller frees; NULL when *n is 0) listing each odd file once; or -errno.
 * What known (or NULL) has of a library is not read again (elfinfo.h).
 * Prints nothing: the callers decide what a finding means.
 */
struct cvm_elf_cache;
int cvm_release_check(int dirfd, const char *expected, const struct cvm_elf_cache *known,
		      struct cvm_release_odd **odd, size_t *n);

/*
 * Refuses a mixed copy: one error line naming the first odd file and the
 * version it carries, a warning line for each other one. Returns
 * -CVM_E_INTEGRITY (exit 3). what names the archive or folder.
 */
int cvm_release_refuse(const char *what, const char *expected, const struct cvm_release_odd *odd,
		       size_t n);

#endif
