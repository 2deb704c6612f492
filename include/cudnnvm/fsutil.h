/* SPDX-License-Identifier: MIT */
#ifndef CUDNNVM_FSUTIL_H
#define CUDNNVM_FSUTIL_H

/* File-system helpers. None prints: they return -errno, callers report. */
#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>
#include <sys/types.h>

#include "cudnnvm/compat.h"

/* snprintf into buf; -ENAMETOOLONG on truncation. */
int cvm_fmt(char *buf, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Creates every missing folder of path (relative to dirfd, or absolute). */
int cvm_mkdir_p_at(int dirfd, const char *path, mode_t mode);

/* Removes name below dirfd and everything under it, never following a symlink. */
int cvm_rm_rf_at(int dirfd, const char *name);

/* Atomically replaces name: temp file, write, fsync, rename, fsync dirfd. */
int cvm_write_file_at(int dirfd, const char *name, const void *buf, size_t len, mode_t mode);

/* Reads a whole file of at most max bytes (NUL-terminated, malloc'd, caller frees). */
int cvm_read_file_at(int dirfd, const char *name, size_t max, char **buf, size_t *len);

/* Replaces (or creates) the symlink name -> target atomically (temp link + rename). */
int cvm_symlink_replace_at(int dirfd, const char *target, const char *name);

int cvm_fsync_dir(int dirfd);

/*
 * Resolves inner (an absolute path as seen inside the root prefix, "" for
 * the host) as the kernel would inside a chroot: symlinks followed by hand,
 * absolute targets re-rooted, ".." never above the root, at most 16 links.
 * out gets the resolved inner path. Every component must exist.
 */
int cvm_resolve_in_root(const char *prefix, const char *inner, char *out, size_t outlen);

/* Writes all of buf; -errno on error. */
int cvm_write_all(int fd, const void *buf, size_t len);

/* Monotonic milliseconds. */
long long cvm_now_ms(void);

#endif
