/* SPDX-License-Identifier: MIT */
#ifndef CUDNNVM_CLOSURE_H
#define CUDNNVM_CLOSURE_H

/*
 * The load closure of a cuDNN folder for one CUDA toolkit: every library
 * its files need (ELF NEEDED entries; the libraries cuDNN loads by name at
 * run time, docs/cudnn-facts.md) resolved the way the loader will, without
 * loading anything: the folder itself, the toolkit's library folders, the
 * loader cache, the system folders. A library of the toolkit (cudart,
 * cublasLt, nvrtc ...) must be found inside the root; a system library
 * (libc, libstdc++, libz) is looked for on the host when the root has no
 * C library at all (a --root made for tests or an image). The
 * resolving is closure.c's, once; what a file needs and where a system
 * looks is the platform's (closure_linux.c: ELF, ld.so; closure_win.c: PE,
 * the DLL search order).
 */
#include <stdbool.h>
#include <stddef.h>

#include "context.h"
#include "toolkit.h"

struct cvm_closure_need {
	char name[64];		/* what the loader is asked for: "libcublasLt.so.12" */
	char by[64];		/* the cuDNN file that asks: "libcudnn_cnn.so.9" */
	bool by_name;		/* loaded by name at run time, not a NEEDED entry */
	bool toolkit;		/* a CUDA toolkit library (looked for inside the root only) */
};

struct cvm_closure {
	struct cvm_closure_need *need;	/* every library needed, each once */
	size_t n, cap;
	size_t nlibs;			/* cuDNN files read */
	size_t missing;			/* needs not found (missing[] first: see cvm_closure_check) */
	/*
	 * Where it looked, as seen inside the root, ", " between; then, for a
	 * root without a C library, "; for system libraries the host's ...".
	 */
	char looked[2048];
};

/*
 * Reads the cuDNN libraries in the folder dir (a host path: a version's
 * lib/ or a toolkit's library folder) and resolves what they need for tk
 * under root ("" for the host). 0 with c filled (the c->missing needs that
 * were not found come first in c->need, in the order found), or -errno /
 * -CVM_E_LAYOUT with nothing printed. Free with cvm_closure_release.
 */
int cvm_closure_check(const char *root, const char *dir, const struct cvm_toolkit *tk,
		      struct cvm_closure *c);
void cvm_closure_release(struct cvm_closure *c);

/* What provides a missing library, for a fix ("the CUDA 12.4 component cuda-nvrtc-12-4 ..."). */
void cvm_closure_fix(const struct cvm_closure_need *m, const struct cvm_toolkit *tk, char *buf,
		     size_t len);

/* "libcublasLt.so.12 (loaded by name by libcudnn_cnn.so.9)" for one missing library. */
void cvm_closure_what(const struct cvm_closure_need *m, char *buf, size_t len);

/*
 * use's check of installed version id for tk, before anything switches:
 * 0 when its closure is whole; otherwise one error naming each missing
 * library and where it looked, a line with each fix, and -CVM_E_SMOKE
 * (exit 4). With force: the same said as a warning, 0. A closure that
 * cannot be read is warned and not held against the version (the smoke
 * test still loads it).
 */
int cvm_closure_use(struct cvm_ctx *ctx, const struct cvm_toolkit *tk, const char *id, bool force);

/*
 * install's: one warning naming what the toolkit lacks of the closure of
 * the installed version id (CUDA major cuda_major): the toolkit cuda names
 * ("X.Y"), or the default one when cuda is NULL; nothing when that toolkit
 * is of another major, is not there, or has it all.
 */
void cvm_closure_warn(const struct cvm_ctx *ctx, const char *cuda, int cuda_major, const char *id);

struct cvm_findings;
/*
 * doctor's: for each toolkit whose library folder holds cuDNN (an active
 * version's links or a hand copy), a problem per missing library, with its fix.
 */
void cvm_closure_doctor(struct cvm_findings *f, const char *root, const struct cvm_toolkit *t,
			size_t n);

/*
 * doctor's, where an active version is not in the toolkit's folders
 * (Windows: a PATH entry names it): a problem per library the version
 * active for each toolkit needs and the loader would not find.
 */
void cvm_closure_doctor_active(struct cvm_findings *f, struct cvm_ctx *ctx, const struct cvm_toolkit *t,
			       size_t n);

/* ---- the platform's part (closure_linux.c, closure_win.c) */

/* A folder the loader looks in: its host path, and as seen inside the root. */
struct cvm_closure_place {
	char host[1024];
	char shown[512];
};

struct cvm_closure_os {
	/* The C library every program loads ("libc.so.6"): a root without it is no system. */
	const char *libc;
	/* Whether a file of a version's folder is a cuDNN library the loader opens (Linux: the
	 * soname links, libcudnn*.so.N; Windows: cudnn*.dll). */
	bool (*is_lib)(const char *name);
	/*
	 * The needs of the library at path (by: its name), each through add: what
	 * it links (NEEDED, imports) and the names it loads (by_name). 0; 1 when
	 * it cannot be read as a library (left out); or add's error.
	 */
	int (*needs)(const char *path, const char *by, struct cvm_closure *c,
		     int (*add)(struct cvm_closure *c, const char *name, const char *by, bool by_name));
	/* The folders searched after dir and before the cache, in order (the toolkit's). */
	size_t (*toolkit_places)(const struct cvm_toolkit *tk, struct cvm_closure_place *p, size_t max);
	/* The system folders under root ("" host), in the loader's order. */
	size_t (*system_places)(const char *root, struct cvm_closure_place *p, size_t max);
	/* The loader cache under root (NULL when there is none), read once per check. */
	void *(*cache_open)(const char *root);
	/* Whether it maps name to a file that exists under root. */
	bool (*cache_has)(void *cache, const char *root, const char *name);
	void (*cache_close)(void *cache);
	/* Whether the name is a CUDA toolkit library, and its component ("cuda-nvrtc"), or NULL. */
	const char *(*component)(const char *name);
	/* A component's package, printf of (component, major, minor): "package %s-%d-%d". */
	const char *package;
	/* The folder of an installed version its libraries are in: "lib", "bin". */
	const char *version_dir;
	/* The cache_open's name in messages: "the loader cache". */
	const char *cache_name;
	/* The fix of a library that is no toolkit's, when the platform knows one; NULL otherwise. */
	const char *(*advice)(const char *name);
};

const struct cvm_closure_os *cvm_closure_os(void);

#endif
