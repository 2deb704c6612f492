/* SPDX-License-Identifier: MIT */
#ifndef CUDNNVM_DOCTOR_H
#define CUDNNVM_DOCTOR_H

/*
 * doctor: every cuDNN copy the system has (the store, each toolkit, the
 * loader's folders and cache, LD_LIBRARY_PATH, conda environments, pip
 * wheels), which one a program using each toolkit would load and why, and
 * each problem found with its fix. One sequence (doctor.c) over the
 * platform's part (doctor_os.h): doctor_linux.c; doctor_win.c on Windows
 * (System32, the Windows folder, PATH: the DLL search order).
 */
#include "context.h"
#include "json.h"
#include "toolkit.h"

/*
 * Prints the report (or fills json). 0 when clean, 1 when something needs fixing, or < 0.
 * pys[npy]: the Python environments whose frameworks are checked (--python);
 * NULL: those doctor finds (frameworks.h).
 */
int cvm_doctor_run(struct cvm_ctx *ctx, cvm_json *json, char *const *pys, size_t npy);

/*
 * The driver version from the platform's text: Linux, "580.159.04" from
 * /proc/driver/nvidia/version; Windows, "552.22" from nvcuda.dll's file
 * version "31.0.15.5222" (its last five digits). 0 or -CVM_E_NOTFOUND.
 */
int cvm_doctor_parse_driver(const char *text, char *out, size_t len);

/* The oldest driver of this platform a build for cuda_major needs (docs/cudnn-facts.md), or NULL. */
const char *cvm_doctor_min_driver(int cuda_major);

/* Which file a program using a toolkit loads, and why (cmd_which). */
struct cvm_which {
	int major;			/* of the soname looked for */
	char name[4096];		/* the name the loader finds: DIR/libcudnn.so.<major> (host path) */
	char library[4096];		/* what it resolves to (host path) */
	const char *why;		/* "LD_LIBRARY_PATH", "active link", "toolkit lib64", "loader cache";
					   Windows: "active PATH entry", "PATH", "System32", ... */
	char id[160];			/* the store version the file belongs to, or "" */
	char reason[2048];		/* Windows: the whole why ("PATH entry 3: C:\...\bin, ..."); Linux: "" */
};

/*
 * Fills w with the libcudnn.so.<major> a program built with tk loads, by the
 * reasoning doctor reports: LD_LIBRARY_PATH first, then the toolkit's own lib
 * folder (a managed link is the "active link"), then the root's loader cache.
 * On Windows, cudnn64_<major>.dll by the DLL search order: System32, the
 * Windows folder, then the PATH a program started now gets.
 * The major is the toolkit headers', else the active version's. 0, or
 * -CVM_E_NOTFOUND when none is found, -ENOMEM; prints nothing.
 */
int cvm_doctor_which(struct cvm_ctx *ctx, const struct cvm_toolkit *tk, struct cvm_which *w);

/* The same for libcudnn.so.<major> (cudnn64_<major>.dll): what a framework needing major gets. */
int cvm_doctor_which_major(struct cvm_ctx *ctx, const struct cvm_toolkit *tk, int major,
			   struct cvm_which *w);

#endif
