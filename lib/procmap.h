/* SPDX-License-Identifier: MIT */
#ifndef CUDNNVM_PROCMAP_H
#define CUDNNVM_PROCMAP_H

/*
 * Running processes that map cuDNN libraries (/proc/PID/maps; on Windows the
 * cudnn*.dll modules they have loaded), with the files grouped by copy: a
 * store version, a toolkit, a Python wheel (site-packages/nvidia/cudnn), a
 * conda env, a system folder, or unknown. The kernel lets a user read the
 * maps of their own processes: others' are counted as unreadable, not
 * guessed at. procmap.c is shared; procmap.c is Linux's (parse,
 * classify, scan), procmap_win.c Windows' (classify, scan).
 */
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

struct cvm_store;

struct cvm_copy_group {
	char kind[16];		/* "store", "toolkit", "wheel", "conda", "system", "unknown" */
	char copy[4096];	/* the store id, or the folder */
	char active_for[64];	/* store copies: the toolkits it is active for ("" none) */
	char **files;		/* the mapped paths (malloc'd) */
	size_t nfiles, files_cap;	/* files_cap: files' allocated count (cvm_grow) */
};

struct cvm_proc_cudnn {
	pid_t pid;
	char command[512];	/* the command line, spaces for NULs, sanitised by the printer */
	struct cvm_copy_group *g;
	size_t ng, g_cap;	/* g_cap: g's allocated count (cvm_grow) */
	bool mixed;		/* more than one copy */
	bool not_active;	/* a store version that no toolkit has active */
};

/*
 * The unique paths of libcudnn* files in a maps text (one path per mapping
 * line; " (deleted)" kept). *paths malloc'd (each string and the array; free
 * with cvm_procmap_paths_free). 0 or -ENOMEM.
 */
int cvm_procmap_parse(const char *text, size_t len, char ***paths, size_t *n);
void cvm_procmap_paths_free(char **paths, size_t n);

/*
 * Which copy path belongs to; store_real is the store's real path (or NULL).
 * kind and copy as in struct cvm_copy_group (copy of copy_len bytes): the
 * store's version, a pip wheel, a conda environment, a CUDA toolkit, the
 * system's folders, or unknown, in that order, decided once (procmap.c) over
 * what each system says of a path (struct cvm_procmap_os).
 */
void cvm_procmap_classify(const char *store_real, const char *path, char *kind, size_t kind_len,
			  char *copy, size_t copy_len);

/*
 * A system's part of the classifier: procmap_linux.c (its folders),
 * procmap_win.c (its folders, names compared as Windows compares them).
 */
struct cvm_procmap_os {
	/* path as it is compared (Linux: itself; Windows: lower case) */
	void (*fold)(const char *path, char *out, size_t len);
	/* path below the folder dir */
	bool (*under)(const char *path, const char *dir);
	const char *const *wheels;	/* a pip wheel's cuDNN folder, folded ("/site-packages/nvidia/cudnn/") */
	size_t nwheels;
	/* in a CUDA toolkit; in the folders every program loads from (dir: path's folder) */
	bool (*toolkit)(const char *path, const char *folded);
	bool (*system)(const char *path, const char *dir);
};

const struct cvm_procmap_os *cvm_procmap_os(void);

/*
 * Appends process pid, running command, to *v (*cnt entries, room for *cap:
 * grown by cvm_grow, and *cnt counts it even when this fails, so that
 * cvm_procmap_free frees what it holds) with its n paths grouped by copy (cvm_procmap_classify; store and
 * store_real as there). The strings of paths move into the groups (paths[i]
 * set to NULL); the array stays the caller's. 0 or -ENOMEM (-EOVERFLOW: cvm_grow).
 */
int cvm_procmap_add(struct cvm_store *store, const char *store_real, pid_t pid, const char *command,
		    char **paths, size_t n, struct cvm_proc_cudnn **v, size_t *cnt, size_t *cap);
/* Orders v by PID, so that the output is stable. */
void cvm_procmap_sort(struct cvm_proc_cudnn *v, size_t n);

/*
 * Scans every /proc/PID but this process's (on Windows every process's
 * modules; the command is its image's path). With root (a --root prefix, not
 * ""), only files under it count. store may be NULL (no store):
 * then no copy is "store" and none is "not active". *out malloc'd (free with
 * cvm_procmap_free); *unreadable counts processes whose maps could not be
 * read (another user's). 0 or -errno.
 */
int cvm_procmap_scan(struct cvm_store *store, const char *root, struct cvm_proc_cudnn **out,
		     size_t *n, size_t *unreadable);
void cvm_procmap_free(struct cvm_proc_cudnn *v, size_t n);

#endif
