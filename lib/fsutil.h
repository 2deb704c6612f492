/* SPDX-License-Identifier: MIT */
#ifndef CUDNNVM_FSUTIL_H
#define CUDNNVM_FSUTIL_H

/* File-system helpers. None prints: they return -errno, callers report. */
#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>
#include <dirent.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "compat.h"

/* snprintf into buf; -ENAMETOOLONG on truncation. */
int cvm_fmt(char *buf, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/*
 * host as the system under the root sees it (host without root, "" for none,
 * when it lies there), for messages and JSON; values a process opens (env,
 * exec) stay host paths.
 */
const char *cvm_root_inside(const char *root, const char *host);

/* Creates every missing folder of path (relative to dirfd, or absolute). */
int cvm_mkdir_p_at(int dirfd, const char *path, mode_t mode);

/*
 * Removes name below dirfd and everything under it, never following a
 * symlink. Iterative (cvm_walk_at): any depth, one descriptor at a time.
 * It never crosses into another file system: when name is, or holds, a
 * mount point (cvm_tree_mount), it deletes nothing and returns -EXDEV.
 */
int cvm_rm_rf_at(int dirfd, const char *name);

/*
 * Whether name below dirfd is a mount point or has one under it (a bind
 * mount of the same file system included): 1 with rel set to the first one
 * found ("name/sub/dir", relative to dirfd), 0 when none (or name is gone),
 * or -errno. Every walk that deletes calls it first, so that it can refuse
 * before it has deleted anything.
 */
int cvm_tree_mount(int dirfd, const char *name, char *rel, size_t len);

/* What cvm_walk_at reports. */
enum cvm_walk_event {
	CVM_WALK_ENTRY,		/* not a folder: a file, a symlink, anything else */
	CVM_WALK_DIR,		/* a folder, before its contents; the callback's 1 skips them */
	CVM_WALK_DIR_DONE,	/* the same folder, after its contents */
	CVM_WALK_MOUNT,		/* on another mount than the top (a mount point): never entered */
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
 * It never crosses a mount point: an object on another mount than the top
 * (another device, or another mount id: a bind mount) is given as
 * CVM_WALK_MOUNT and neither entered nor given as an entry or a folder.
 * Returns 0, the callback's negative code, or -errno.
 */
int cvm_walk_at(int dirfd, cvm_walk_fn fn, void *arg);

/*
 * Atomically replaces name: temp file, write, fsync, rename, fsync dirfd.
 * Only a regular file (or nothing) is replaced: a FIFO, link or anything
 * else at name is left as it is, -CVM_E_NOTREG.
 */
int cvm_write_file_at(int dirfd, const char *name, const void *buf, size_t len, mode_t mode);

/*
 * The one way cudnnvm opens a file it reads or writes into: name (below
 * dirfd, or a path with AT_FDCWD) opened with flags (the access mode,
 * O_APPEND, O_CREAT with mode, O_TRUNC, O_EXCL, and O_NOFOLLOW where the
 * last component must not be a link: anything in the store) plus O_NONBLOCK,
 * O_CLOEXEC and O_NOCTTY, then fstat'ed. O_NONBLOCK is why: a FIFO put where
 * a file belongs (a record, a journal, the configuration, a pin) answers at
 * once instead of hanging a command that may hold the store lock; on a
 * regular file it changes nothing. Anything but a regular file is closed and
 * refused. Returns the descriptor (the caller closes it), -CVM_E_NOTREG for a
 * FIFO, socket, device, folder (or, with O_NOFOLLOW, a symlink), or -errno
 * (-ENOENT when absent). Prints nothing. On Windows, where no FIFO lives in
 * the file system, the same calls and checks apply.
 */
int cvm_open_regular(int dirfd, const char *name, int flags, mode_t mode);

/*
 * A file for a reader of a binary format (ELF, PE): cvm_open_regular(dirfd,
 * name, O_RDONLY) with the file's size (from the same fstat) into *size,
 * where what is not a regular file is not of the format (-CVM_E_LAYOUT).
 */
int cvm_open_to_parse(int dirfd, const char *name, uint64_t *size);

/* path's folder (cut at its last '/', or on Windows '\' too) into buf; path itself when it has none. */
void cvm_path_folder(const char *path, char *buf, size_t len);

/*
 * Reads the rest of fd, a regular file of at most max bytes by its fstat
 * (NUL-terminated, malloc'd into *buf, caller frees; *len its length when
 * len is not NULL): for who opened the file with its own checks.
 * -CVM_E_NOTREG when it is not a regular file, -EFBIG, -ENOMEM or -errno;
 * fd stays open.
 */
int cvm_read_fd(int fd, size_t max, char **buf, size_t *len);

/*
 * Reads a whole regular file of at most max bytes (NUL-terminated, malloc'd,
 * caller frees), opened by cvm_open_regular(dirfd, name, flags): flags is 0
 * (a link in the last component is followed: a toolkit's headers, the
 * configuration) or O_NOFOLLOW (the store's files). -CVM_E_NOTREG, -EFBIG,
 * or -errno.
 */
int cvm_read_regular_at(int dirfd, const char *name, int flags, size_t max, char **buf, size_t *len);

/* cvm_read_regular_at(dirfd, name, 0, ...): follows a link, refuses what is not a file. */
int cvm_read_file_at(int dirfd, const char *name, size_t max, char **buf, size_t *len);

/* Replaces (or creates) the symlink name -> target atomically (temp link + rename). */
int cvm_symlink_replace_at(int dirfd, const char *target, const char *name);

int cvm_fsync_dir(int dirfd);

/*
 * Opens the folder name under dirfd (O_RDONLY|O_DIRECTORY|O_CLOEXEC|flags,
 * e.g. O_NOFOLLOW) as a stream in *d (closedir closes it): 0, -ENOENT when
 * there is none (*d NULL), or -errno.
 */
int cvm_opendir_at(int dirfd, const char *name, int flags, DIR **d);

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
