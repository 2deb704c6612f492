/* SPDX-License-Identifier: MIT */
#ifndef CUDNNVM_ENTRY_H
#define CUDNNVM_ENTRY_H

/*
 * The rules every archive entry must pass before anything is written (pure:
 * no I/O). They hold for all three layouts (docs/cudnn-facts.md): one top folder,
 * which is stripped; regular files, folders and symlinks only; no absolute
 * names, no "..", no control characters; a symlink body is relative, and its
 * only ".." components lead it, no more of them than the link's own depth.
 * Together with an extractor that never follows a symlink while creating a
 * path, this keeps every write and every link inside the version.
 */
#include <stdbool.h>
#include <stddef.h>

#include "archive.h"

enum cvm_layout {
	CVM_LAYOUT_NVIDIA,	/* cudnn-<platform>-<ver>_cuda<N>-archive/ */
	CVM_LAYOUT_LEGACY,	/* cuda/include, cuda/lib64 (<= 8.2 tgz) */
};

struct cvm_entry_state {
	char top[256];		/* the top folder, set by the first entry */
	bool have_top;
	enum cvm_layout layout;
	unsigned long entries;	/* entries checked so far */
	bool bundle;		/* set by the caller: a store bundle (bundle.c), whose
				 * top folder is the id and whose .cudnnvm/ record files
				 * are taken */
	bool windows;		/* Windows' name rules too: set by the first entry when
				 * the top folder is cudnn-windows-*, always on Windows */
	struct cvm_entry_names *names;	/* with windows: the names used so far
					 * (cvm_entry_state_free) */
};

/*
 * Bounds that no cuDNN archive comes near (the deepest name has 4 parts,
 * the largest archive some hundred entries); each makes a hostile archive
 * fail at once instead of after writing millions of objects.
 */
enum {
	CVM_ENTRY_MAX_DEPTH = 32,	/* name components below the top folder */
	CVM_ENTRY_MAX_COMPONENT = 255,	/* bytes of one component (NAME_MAX) */
	CVM_ENTRY_MAX_ENTRIES = 4096,	/* entries of one archive */
};

/*
 * Checks e and writes its name relative to the version root (top folder
 * stripped, legacy lib64 mapped to lib) into rel. Returns 0 (write it),
 * 1 (the top folder itself: skip), or -CVM_E_UNSAFE after printing
 * "unsafe archive 'name': entry 'x': <rule>". st starts zeroed.
 */
int cvm_entry_check(struct cvm_entry_state *st, const char *archive_name,
		    const struct cvm_entry *e, char *rel, size_t rel_len);

/* Frees what cvm_entry_check kept in st (st stays usable, with no names seen). */
void cvm_entry_state_free(struct cvm_entry_state *st);

/* The name rules alone (for fuzzing and unit tests): NULL, or why not. */
const char *cvm_entry_name_problem(const char *path);
/*
 * The rules Windows adds, for each component of path (any separator):
 * no reserved device name (CON, PRN, AUX, NUL, COM1-9, LPT1-9 and COM or
 * LPT with a superscript 1-3, with or without an extension, in any case),
 * no trailing dot or space (Windows drops them, so two names would be one),
 * no 8.3 short-name form (NAME~N.EXT: another file's alias), no ':' (a
 * drive letter or an alternate data stream), no backslash (a second
 * separator), none of <>"|?*, and UTF-8 (written as UTF-16). NULL, or why
 * not. cvm_entry_check also refuses, in a Windows archive, a name that
 * differs from an earlier one (or its folder) only in case, as NTFS
 * compares them, a second entry of one name, and a file and a folder of
 * one name.
 */
const char *cvm_entry_windows_problem(const char *path);
/* The symlink rule alone: NULL, or why not. rel is the link's own name. */
const char *cvm_entry_link_problem(const char *rel, const char *target);

/*
 * The version and CUDA major of an NVIDIA top folder name
 * ("cudnn-linux-x86_64-8.9.7.29_cuda11-archive"). 0 or -CVM_E_NOTFOUND.
 */
int cvm_entry_top_version(const char *top, char *version, size_t vlen,
			  int *cuda_major, char *platform, size_t plen);

#endif
