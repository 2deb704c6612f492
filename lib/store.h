/* SPDX-License-Identifier: MIT */
#ifndef CUDNNVM_STORE_H
#define CUDNNVM_STORE_H

/*
 * The versioned store (docs/design.md): versions/<id> (immutable once committed),
 * active/, history/, cache/, .staging/, .trash/, .lock. All operations are
 * relative to the store's directory descriptor.
 */
#include <stdbool.h>
#include <stddef.h>

struct cvm_plan;

struct cvm_store {
	char *path;		/* host path, malloc'd */
	char *display;		/* as seen inside the root, malloc'd */
	int fd;			/* the store folder, or -1 */
	int lock_fd;		/* STORE/.lock while locked, or -1 */
	struct cvm_plan *plan;	/* the run's plan (its context's), or NULL: make every change */
	struct cvm_flush_behind *behind; /* cvm_store_flush_behind's, or NULL */
};

/*
 * Opens the store. With create, makes the folders (0755) that are missing.
 * Without, a missing store gives -ENOENT and no message (readers treat it as
 * empty). Other errors are printed. Release with cvm_store_close.
 */
int cvm_store_open(struct cvm_store *s, const char *path, const char *display, bool create);

/*
 * Where the store is (path, for the system calls) and how it is shown
 * (display: inside root when it lies there): given (made absolute), else
 * ROOT/etc/cudnnvm.conf's store (absolute, no '#': usage error), else for one
 * user $XDG_DATA_HOME/cudnnvm or ~/.local/share/cudnnvm, else
 * ROOT/opt/cudnnvm; on Windows given, else %ProgramData%\cudnnvm
 * (%LOCALAPPDATA%\cudnnvm for one user). 0 or a negative code (said).
 */
int cvm_store_locate(const char *root, const char *given, bool user, char *path, size_t plen,
		     char *display, size_t dlen);
void cvm_store_close(struct cvm_store *s);

/*
 * Takes the store lock (see lock.h) on STORE/.lock, a 0600 file of the
 * store's owner that no other user can open (an older 0644 one is replaced),
 * then sweeps .staging and .trash.
 */
int cvm_store_lock(struct cvm_store *s, double timeout_s);

/* Removes everything in .staging and .trash (the lock must be held). */
int cvm_store_sweep(struct cvm_store *s);

/*
 * Creates .staging/<id>.XXXXXX and opens it: name (the staging entry's name)
 * and *dirfd are the caller's to pass to _commit or _discard.
 */
int cvm_store_stage(struct cvm_store *s, const char *id, char *name, size_t len, int *dirfd);

/*
 * For a large staged tree: until the next _commit, _discard or _close, the
 * store's file system is flushed in the background as the tree is written
 * (compat.h), so that the commit's flush has little left to wait for.
 * Start it after the extraction process is forked, never before: a child
 * forked beside a thread that is starting (or holds any lock but malloc's)
 * inherits that lock held and would wait for it forever.
 */
void cvm_store_flush_behind(struct cvm_store *s);

/*
 * Makes a staged tree versions/<id>: syncs the file system, renames, fsyncs
 * versions/. With replace, an existing versions/<id> is exchanged
 * atomically (renameat2 RENAME_EXCHANGE) and the old tree deleted.
 * -CVM_E_EXISTS when it exists and !replace.
 */
int cvm_store_commit(struct cvm_store *s, const char *staged, const char *id, bool replace);

/* Removes a staged tree. */
int cvm_store_discard(struct cvm_store *s, const char *staged);

/* Removes versions/<id>: renamed into .trash first (atomic), then deleted. */
int cvm_store_remove(struct cvm_store *s, const char *id);

/* Whether versions/<id> exists. */
bool cvm_store_has(struct cvm_store *s, const char *id);

/* Opens versions/<id> (O_DIRECTORY). fd or -errno (no message). */
int cvm_store_open_version(struct cvm_store *s, const char *id);

/* The committed ids, sorted by version, newest first. Free with cvm_strv_free. */
int cvm_store_list(struct cvm_store *s, char ***ids, size_t *n);
void cvm_strv_free(char **v, size_t n);

/*
 * The installed ids that spec names: an id itself, or a version prefix
 * ("8.9", "8.9.7.29"), optionally only for cuda_major (0: any) and platform
 * (NULL: any). Newest first; free with cvm_strv_free. -CVM_E_VERSION for a
 * spec that is neither (no message).
 */
int cvm_store_match(struct cvm_store *s, const char *spec, int cuda_major, const char *platform,
		    char ***ids, size_t *n);

/*
 * The newest installed id that spec names for cuda_major on platform, into
 * id. When there is none, prints what is installed instead (a build for
 * another CUDA major is named as such) and returns -CVM_E_NOTFOUND;
 * -CVM_E_VERSION for a malformed spec. cuda is "X.Y", for messages.
 */
int cvm_store_resolve(struct cvm_store *s, const char *spec, int cuda_major, const char *cuda,
		      const char *platform, char *id, size_t len);

/*
 * The toolkits ("11.8") whose STORE/active/cuda-<X.Y> link names id, as a
 * comma-separated list in buf ("" when none).
 */
int cvm_store_active_for(struct cvm_store *s, const char *id, char *buf, size_t len);

/*
 * Refuses (-CVM_E_PERM, printed) a store that another user could change
 * (the rule of trust.h): every folder and link on its path from "/", the
 * store folder, versions/ active/ toolkits/ history/ cache/ backups/
 * .staging/ .trash/ (real folders, not links), and versions/<id> with its
 * lib/ and include/ when id is given. A library there could be replaced
 * under its users.
 */
int cvm_store_check_safe(struct cvm_store *s, const char *id);

/* Builds the id "<version>-cuda<major>-<platform>" into buf. */
int cvm_store_id(char *buf, size_t len, const char *version, int cuda_major, const char *platform);
/* The id STORE/active/cuda-<cuda> ("11.8") names into id: 0, or -ENOENT when none. */
int cvm_active_get(struct cvm_store *s, const char *cuda, char *id, size_t len);

/*
 * What STORE/active/cuda-<cuda> is, for current, list, doctor and verify.
 * -ENOENT: nothing is active. 0: it is there; with *broken NULL, the link
 * use writes to an installed version (id filled); else *broken says (a
 * static text) why it is not one: a file or folder instead of the link, a
 * link out of versions/, a link to a version that is not installed (id
 * names it; "" otherwise). Other -errno as they come. Prints nothing.
 */
int cvm_active_check(struct cvm_store *s, const char *cuda, char *id, size_t len,
		     const char **broken);

/* A broken entry of STORE/active/: its toolkit ("11.8"), the id it names ("" if none), why. */
typedef void (*cvm_active_broken_fn)(void *arg, const char *cuda, const char *id, const char *why);

/*
 * Calls fn for each entry of STORE/active/ that is not the link use writes
 * to an installed version (cvm_active_check), whether or not its toolkit
 * is still there. The number of them (>= 0), or -errno. Prints nothing.
 */
int cvm_active_each_broken(struct cvm_store *s, cvm_active_broken_fn fn, void *arg);

/*
 * A difference cvm_store_check_version found: rel is "." for the version
 * folder itself; mount: it is a mount point (else an object that breaks the
 * rule of trust.h).
 */
typedef void (*cvm_store_problem_fn)(void *arg, const char *rel, const char *why, bool mount);

/* The first difference and how many, for who reports one (use, doctor): arg of cvm_store_first. */
struct cvm_store_first {
	char rel[4096], why[1024];
	size_t n;
	bool mount;
};
void cvm_store_first(void *arg, const char *rel, const char *why, bool mount);

/*
 * Checks versions/<id>, every folder, file and link in it (its record's
 * folder too), and the folders above it, by the rule one object of a
 * version must meet (cvm_trust_installed_why, trust.h: what install makes,
 * and what the smoke test of `use` trusts), and that no file system is
 * mounted in it. Calls fn for each object that fails; never follows a link
 * or enters a mount. The number of failures (>= 0), or -errno.
 */
int cvm_store_check_version(struct cvm_store *s, const char *id, cvm_store_problem_fn fn, void *arg);

/* Splits an id; version and platform buffers of vlen/plen. 0 or -CVM_E_VERSION. */
int cvm_store_parse_id(const char *id, char *version, size_t vlen, int *cuda_major,
		       char *platform, size_t plen);

#endif
