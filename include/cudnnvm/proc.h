/* SPDX-License-Identifier: MIT */
#ifndef CUDNNVM_PROC_H
#define CUDNNVM_PROC_H

/* Running processes that map files of a folder (from /proc/<pid>/maps). */
#include <stddef.h>
#include <sys/types.h>

struct cvm_proc_user {
	pid_t pid;
	char comm[64];
	char file[256];		/* one of the files it maps, for the message */
};

/*
 * Scans /proc/[0-9]+/maps for mappings of files under dir (a real path,
 * without a trailing slash). Processes that cannot be read are skipped.
 * *out is malloc'd (caller frees). 0 or -errno.
 */
int cvm_proc_users(const char *dir, struct cvm_proc_user **out, size_t *n);

#endif
