/* SPDX-License-Identifier: MIT */
#ifndef CUDNNVM_TRUST_H
#define CUDNNVM_TRUST_H

/*
 * Whether a path can be changed only by root or by the caller: the one
 * question asked before cudnnvm runs (nvcc), loads (libcudnn in a child),
 * writes into (a toolkit, ld.so.conf.d, the store) or believes (manifests)
 * anything on disk.
 *
 * The rule, OpenSSH's secure_path()/StrictModes applied to every object the
 * kernel looks at while resolving the path (each folder from "/" down, each
 * symlink followed, the folders its target goes through, the object itself):
 *  - its owner is root or the caller (for root: root only);
 *  - no one else can write it: not writable by others, nor by a group
 *    other than root's (gid 0) or the caller's own;
 *  - one exception, for folders on the way only (not the object itself):
 *    a folder writable by others but with the sticky bit (/tmp) is accepted
 *    when its owner is trusted and the entry looked up in it is owned by
 *    root or the caller, since then no one else can rename, remove or
 *    replace that entry (OpenSSH refuses /tmp outright; cudnnvm's tests
 *    and many users' --root live there).
 * A symlink's own mode means nothing; it can be replaced only by those who
 * can write its folder, which is checked. Paths are host paths, resolved
 * as the kernel resolves them for exec and dlopen (under --root R that is
 * R's own chain, then the chain inside R).
 */
#include <stdbool.h>
#include <stddef.h>
#include <sys/stat.h>

#include "json.h"

struct cvm_trust {
	char path[4096];	/* the object that is not trusted (host path) */
	char why[192];		/* "belongs to another user (uid 65534)", ... */
};

/*
 * Checks path (absolute, or relative to the working folder) and everything
 * the kernel looks at to reach it. 0: trusted. -CVM_E_PERM: not trusted,
 * t says which object and why. -errno when a component cannot be looked
 * up (t->path names it, t->why says why). Prints nothing.
 */
int cvm_trust_check(const char *path, struct cvm_trust *t);

/*
 * The one-object part of the rule, for an object already open (fstat):
 * NULL when st (the object itself, no sticky exception) is trusted, else
 * a static reason.
 */
const char *cvm_trust_stat_why(const struct stat *st);

/*
 * For a file whose words decide what cudnnvm does (a .cudnn-version pin, the
 * configuration file), just read: whether to obey it. st is the open file's
 * fstat (NULL: stat(path) is taken). 0: the file and every folder on the way
 * to it (cvm_trust_check, a link followed) can be changed only by root or the
 * caller. Otherwise 1, after one warning naming shown, its owner and mode and
 * why: "ignoring 'shown' (owner uid U, mode M): ...; what is obeyed only when
 * root or you own it and no one else can write it": the caller then goes on
 * as if the file were not there. On Windows (no owners here) always 0.
 */
int cvm_trust_obey(const char *path, const char *shown, const struct stat *st, const char *what);

/*
 * The rule for one object of an installed version (lstat in st), shared by
 * verify and doctor: what install makes, a regular file of mode 0644 or
 * 0755, a folder of mode 0755, or a symlink, with no set-id or sticky bit,
 * owned and writable as cvm_trust_stat_why requires (the rule the smoke
 * test of `use` applies before it loads anything). NULL when it holds,
 * else buf, holding why ("every user can write it (mode 0757)"). On
 * Windows only the kind of object is checked.
 */
const char *cvm_trust_installed_why(const struct stat *st, char *buf, size_t len);

/*
 * Says (one warning on stderr) that what ("bin/nvcc of '/usr/local/cuda-12.4'")
 * was not run or loaded because t, and keeps it for cvm_trust_skipped_json.
 */
void cvm_trust_skip(const char *what, const struct cvm_trust *t);

/* Adds "skipped": [{"what", "path", "why"}] to obj when anything was skipped. */
void cvm_trust_skipped_json(cvm_json *obj);

#endif
