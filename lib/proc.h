/* SPDX-License-Identifier: MIT */
#ifndef CUDNNVM_PROC_H
#define CUDNNVM_PROC_H

/* Running processes that map files of a folder (from /proc/<pid>/maps). */
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

struct cvm_proc_user {
	pid_t pid;
	char comm[64];
	char file[256];		/* one of the files it maps, for the message */
	char job[24];		/* its Slurm job (SLURM_JOB_ID in its environment), or "" */
};

/*
 * Every child process of cudnnvm (ldconfig, nvcc, the smoke child) runs
 * through cvm_proc_capture.
 *
 * Scans /proc/[0-9]+/maps for mappings of files under dir (a real path,
 * without a trailing slash). Processes that cannot be read are skipped.
 * *out is malloc'd (caller frees). 0 or -errno.
 */
int cvm_proc_users(const char *dir, struct cvm_proc_user **out, size_t *n);

/*
 * Reads a /proc file (its size is not known before: stat says 0) whole, or
 * its first max bytes, NUL-terminated and malloc'd into *buf (*len its
 * length, without the NUL). 0 or -errno.
 */
int cvm_proc_read(const char *path, size_t max, char **buf, size_t *len);

/*
 * Runs argv (no shell; argv[0] a path, or a name looked up in PATH) as a
 * child in its own process group, its environment made before it starts, stdin from /dev/null, stderr to /dev/null
 * unless keep_stderr, no descriptor but 0-2 inherited, LD_LIBRARY_PATH set to
 * ld_path when it is not NULL (on Windows PATH, where the loader looks). Its stdout, cut to len-1 bytes (the rest is
 * read and dropped, so a long output cannot block it), is NUL-terminated in
 * out. timeout_ms bounds the whole run, EOF included; on expiry the group is
 * killed. 0 and *status (the wait status), or -ETIMEDOUT, or -errno.
 */
int cvm_proc_capture(char *const argv[], const char *ld_path, bool keep_stderr, long timeout_ms,
		     char *out, size_t len, int *status);

/*
 * Runs argv (argv[0] looked up in PATH) in place of this process, with
 * this process's environment and standard streams: execvp on Linux; on
 * Windows, which has no exec, a child whose exit code this process exits
 * with once it ends (Ctrl-C reaches both). Returns only on failure: -errno
 * (-ENOENT: no such command).
 */
int cvm_proc_exec(char *const argv[]);

#endif
