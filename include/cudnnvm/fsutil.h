/* SPDX-License-Identifier: MIT */
#ifndef CUDNNVM_FSUTIL_H
#define CUDNNVM_FSUTIL_H

/* File-system helpers. None prints: they return -errno, callers report. */
#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "cudnnvm/compat.h"

/* snprintf into buf; -ENAMETOOLONG on truncation. */
int cvm_fmt(char *buf, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Creates every missing folder of path (relative to dirfd, or absolute). */
int cvm_mkdir_p_at(int dirfd, const char *path, mode_t mode);

/*
 * Removes name below dirfd and everything under it, never following a
 * symlink. Iterative (cvm_walk_at): any depth, one descriptor at a time.
 */
int cvm_rm_rf_at(int dirfd, const char *name);

/* What cvm_walk_at reports. */
enum cvm_walk_event {
	CVM_WALK_ENTRY,		/* not a folder: a file, a symlink, anything else */
	CVM_WALK_DIR,		/* a folder, before its contents; the callback's 1 skips them */
	CVM_WALK_DIR_DONE,	/* the same folder, after its contents */
};

/*
 * Called for every object below the walk's top: dirfd is the folder that
 * holds it (valid during the call only), name its name there, rel its path
 * from the top ("a/b/c"), st its lstat. 0 goes on, 1 (CVM_WALK_DIR) skips
 * the folder's contents, a negative code ends the walk with that code.
 */
typedef int (*cvm_walk_fn)(void *arg, int dirfd, const char *name, const char *rel,
			   const struct stat *st, enum cvm_walk_event ev);

/*
 * Walks the tree below dirfd (its contents, not dirfd itself), depth first,
 * each folder's names in readdir order, never following a symlink. The walk
 * is iterative and holds one folder descriptor at a time whatever the depth:
 * a folder's names are read, then it is left for a subfolder and re-entered
 * through ".." (checked against its device and inode, -ESTALE when it moved).
 * Returns 0, the callback's negative code, or -errno.
 */
int cvm_walk_at(int dirfd, cvm_walk_fn fn, void *arg);

/* Atomically replaces name: temp file, write, fsync, rename, fsync dirfd. */
int cvm_write_file_at(int dirfd, const char *name, const void *buf, size_t len, mode_t mode);

/* Reads a whole file of at most max bytes (NUL-terminated, malloc'd, caller frees). */
int cvm_read_file_at(int dirfd, const char *name, size_t max, char **buf, size_t *len);

/*
 * The same from a descriptor already open (and checked by the caller), from
 * its current offset: -EINVAL when it is not a regular file, -EFBIG over max.
 */
int cvm_read_fd(int fd, size_t max, char **buf, size_t *len);

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

/*
 * path made absolute against the working folder, with "." and empty
 * components dropped and ".." taken lexically (as a shell's cd does).
 * 0, -ENAMETOOLONG, or -errno of getcwd.
 */
int cvm_abspath(const char *path, char *out, size_t outlen);

/* Writes all of buf; -errno on error. */
int cvm_write_all(int fd, const void *buf, size_t len);

/* Monotonic milliseconds. */
long long cvm_now_ms(void);

#endif
