/* SPDX-License-Identifier: MIT */
#ifndef CUDNNVM_CUDNN_H
#define CUDNNVM_CUDNN_H

/* What a cuDNN tree must hold, read without loading anything. */
#include <stdbool.h>
#include <stddef.h>

#include "version.h"

/*
 * Reads CUDNN_MAJOR, CUDNN_MINOR and CUDNN_PATCHLEVEL from header text
 * (cudnn_version.h from 8.x, cudnn.h before), as the preprocessor sees
 * them: comments removed, continued lines joined (a define inside a comment
 * is not one). 0, -CVM_E_NOTFOUND or -ENOMEM.
 */
/* The main library of cuDNN major on this platform, into buf: "libcudnn.so.9", Windows "cudnn64_9.dll". */
const char *cvm_cudnn_main_name(int major, char *buf, size_t len);

int cvm_cudnn_header_version(const char *text, size_t len, struct cvm_version *v);

struct cvm_cudnn_tree {
	struct cvm_version header;	/* major.minor.patch from the headers */
	bool windows;			/* bin/ include/ lib/x64 layout */
	char library[64];		/* "lib/libcudnn.so.9" or "bin/cudnn64_9.dll" */
};

/*
 * Checks that the version tree at dirfd looks like cuDNN: a version header,
 * the main library for the header's major. name is for messages.
 * 0, or -CVM_E_LAYOUT with a message naming what is missing.
 */
int cvm_cudnn_check_tree(int dirfd, const char *name, struct cvm_cudnn_tree *t);

/* The same checks on a tree that is not on disk (a dry run's archive entries). */
struct cvm_cudnn_src {
	/* The file's bytes (at most 1 MiB, malloc'd, NUL-terminated), or -errno. */
	int (*read)(void *arg, const char *rel, char **text, size_t *len);
	bool (*is_file)(void *arg, const char *rel);	/* a regular file, links followed */
	bool (*exists)(void *arg, const char *rel);	/* anything of that name */
	void *arg;
};
int cvm_cudnn_check_src(const struct cvm_cudnn_src *src, const char *name, struct cvm_cudnn_tree *t);

#endif
