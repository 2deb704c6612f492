/* SPDX-License-Identifier: MIT */
#ifndef CUDNNVM_SMOKE_H
#define CUDNNVM_SMOKE_H

/*
 * The smoke test of what a program using a toolkit would load. The parent
 * checks files (headers, sub-libraries: present, readable by all, ELF);
 * a child (a re-exec of cudnnvm, killed after a timeout) with the loader
 * environment of such a program dlopens libcudnn.so.<major> through the
 * toolkit, reports the path loaded and cudnnGetVersion(), then, with a GPU,
 * runs a small convolution through the legacy API against a CPU reference
 * and reports every cuDNN sub-library the process mapped. Neither cuDNN nor
 * CUDA is linked: the few entry points used are declared in smoke_conv.c.
 * On Windows (smoke_win.c) the same with DLLs: bin/cudnn64_<major>.dll
 * loaded by name with the PATH a program started now gets (winenv.h).
 */
#include <stdbool.h>
#include <stddef.h>

#include "context.h"
#include "json.h"
#include "toolkit.h"

struct cvm_smoke_opts {
	bool no_gpu;
	bool all_devices;
	int device;		/* -1: the first */
};

/*
 * Runs the test for the version id active in tk. Prints a summary (or, with
 * json non-NULL, fills it with the smoke JSON shape of docs/cli.md). 0: passed;
 * -CVM_E_SKIPPED: loader part passed, no usable GPU; -CVM_E_SMOKE: failed
 * (message printed saying what).
 */
int cvm_smoke_run(struct cvm_ctx *ctx, const struct cvm_toolkit *tk, const char *id,
		  const struct cvm_smoke_opts *o, cvm_json *json);

/*
 * Loads lib in a child (no GPU part) and reads cudnnGetVersion() and
 * cudnnGetCudartVersion(), and the path the loader took. 0, or
 * -CVM_E_SMOKE when it does not load (nothing printed), or -CVM_E_PERM when
 * lib or its folder could have been written by another user (trust.h): then
 * nothing is loaded, and cvm_trust_skip says so (not on Windows, where
 * trust.h checks nothing yet). On Windows lib is a DLL, loaded as that file.
 */
int cvm_smoke_probe(const char *lib, unsigned long *version, unsigned long *cudart, char *path,
		    size_t len);

/* The child's side: main() calls it for "cudnnvm __smoke-child ...". */
int cvm_smoke_child(int argc, char **argv);

#endif
