/* SPDX-License-Identifier: MIT */
#ifndef CUDNNVM_EXTRACT_H
#define CUDNNVM_EXTRACT_H

/*
 * Extraction of an archive into a staging folder. Every entry passes
 * cvm_entry_check first; every path is created component by component with
 * O_NOFOLLOW, so nothing is ever written through a symlink; files get mode
 * 0644 (0755 when the archive marks them executable), folders 0755, never
 * owners or set-id bits. Each file is hashed as it is written, and written
 * in large pieces; nothing is fsynced here (the commit syncs once).
 *
 * Two ways: in this process, once the archive is verified
 * (cvm_extract_run), or speculatively, in a confined child process that
 * starts while the caller is still hashing the archive
 * (cvm_extract_spawn): its result is taken only after the hash matched,
 * and it is killed, its tree discarded, when it did not.
 */
#include <stdint.h>

#include "elfinfo.h"
#include "entry.h"
#include "record.h"

struct cvm_extract {
	struct cvm_entry_state state;	/* top folder and layout found */
	struct cvm_filelist files;	/* what was written (cvm_extract_release) */
	struct cvm_elf_cache elf;	/* each library written, as read once written (not on Windows) */
	uint64_t bytes;			/* bytes of file data written */
	char format[64];		/* "GNU tar format+xz" */
	char decoder[96];		/* "xz: 20 blocks, 2 threads, ..." or "" */
	uint64_t child_peak_rss;	/* bytes, of the speculative child; 0 in-process */
};

struct cvm_extract_opts {
	uint64_t archive_size;		/* for progress */
	uint64_t max_bytes;		/* more file data is a decompression bomb: -CVM_E_UNSAFE */
	unsigned jobs;			/* xz decoder threads at most (0: one) */
	uint64_t memlimit;		/* for those threads; 0: xz.h's default */
	bool follow;			/* cvm_extract_spawn only: fd is still being written;
					 * the child reads what cvm_extract_child_avail allows */
};

/* Frees what x holds, and clears it. */
void cvm_extract_release(struct cvm_extract *x);

/*
 * Extracts the archive readable from fd (read from offset 0) into dirfd.
 * Messages printed; on failure the caller discards dirfd.
 */
int cvm_extract_run(int fd, const char *name, const struct cvm_extract_opts *o, int dirfd,
		    struct cvm_extract *x);

/*
 * A dry run's extraction: every entry of the archive readable from fd is
 * read and checked as cvm_extract_run checks it (cvm_entry_check, one
 * entry per name, nothing below a link or a file, the size bound), then
 * the tree it would make as cvm_cudnn_check_tree checks it (into t);
 * nothing is written. With files, the names of what is not a folder
 * ("include/cudnn.h", "lib/libcudnn.so.9") into *files and *nfiles, the
 * caller's to free (cvm_strv_free). 0, or the code and message the real
 * run gives.
 */
struct cvm_cudnn_tree;
int cvm_extract_check(int fd, const char *name, const struct cvm_extract_opts *o,
		      struct cvm_cudnn_tree *t, char ***files, size_t *nfiles);

/* The same with one decoder thread and default limits. */
int cvm_extract_fd(int fd, const char *name, uint64_t archive_size, uint64_t max_bytes,
		   int dirfd, struct cvm_extract *x);

struct cvm_extract_child;

/*
 * Forks a child that confines itself (confine.h: only dirfd writable, no
 * capabilities, seccomp) and extracts fd into dirfd as cvm_extract_run
 * would, printing nothing. The caller must not have other threads. 0 and
 * *out, or -errno (printed). The child dies with the caller.
 */
int cvm_extract_spawn(int fd, const char *name, const struct cvm_extract_opts *o, int dirfd,
		      struct cvm_extract_child **out);

/*
 * Follow mode: the child may read the first avail bytes of fd (they are
 * hashed and will not change); complete: that is the whole archive, and its
 * hash matched. Never blocks.
 */
void cvm_extract_child_avail(struct cvm_extract_child *c, uint64_t avail, bool complete);

/* Archive bytes the child has decoded so far (for progress; never blocks). */
uint64_t cvm_extract_child_position(struct cvm_extract_child *c);

/* Whether the child has ended, its work done or not (it is not reaped; never blocks). */
bool cvm_extract_child_ended(struct cvm_extract_child *c);

/*
 * Only once the archive's hash matched: the name of its first entry, as
 * stored. 1 and path filled; 0 when the child found none (its result will
 * say why); negative when the child failed (message printed).
 */
int cvm_extract_child_first(struct cvm_extract_child *c, char *path, size_t len);

/*
 * Only once the archive's hash matched: waits for the child and takes its
 * result into x, printing its error if it failed (its code returned);
 * tick (may be NULL) is called about every 100 ms with the child's
 * position. Returns 1 when the caller should extract in-process instead:
 * the child could not confine itself, or failed for a reason that is not
 * the archive's (-errno); then x holds partial results to release and the
 * staging folder whatever the child wrote. Frees c.
 */
int cvm_extract_child_wait(struct cvm_extract_child *c, struct cvm_extract *x,
			   void (*tick)(void *arg, uint64_t pos), void *arg);

/*
 * Kills and reaps the child; nothing it wrote may be used. Frees c; NULL is
 * allowed. Returns 1 when the child was still running, 0 when it had ended.
 */
int cvm_extract_child_kill(struct cvm_extract_child *c);

#endif
