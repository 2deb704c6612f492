/* SPDX-License-Identifier: MIT */
#ifndef CUDNNVM_ERROR_H
#define CUDNNVM_ERROR_H

#include "compat.h"

/*
 * Every function returns 0 on success, -errno for a system error, or -CVM_E_*
 * for one of ours. One sign only: negative is failure. The code that knows the
 * subject prints the message once (cvm_err); callers only pass the code up.
 */
enum cvm_error {
	CVM_E_FIRST = 1000,
	CVM_E_USAGE = CVM_E_FIRST,	/* bad command line (exit 2) */
	CVM_E_INTEGRITY,		/* size or SHA-256 mismatch (exit 3) */
	CVM_E_UNSAFE,			/* hostile or malformed archive (exit 3) */
	CVM_E_CORRUPT,			/* archive cannot be decoded (exit 3) */
	CVM_E_LOCKED,			/* store lock not taken (exit 5) */
	CVM_E_SMOKE,			/* smoke test failed (exit 4) */
	CVM_E_SKIPPED,			/* smoke test GPU part skipped (exit 77) */
	CVM_E_MANIFEST,			/* malformed catalogue file */
	CVM_E_NOTFOUND,			/* no such release, build, toolkit, version */
	CVM_E_VERSION,			/* malformed version string */
	CVM_E_LAYOUT,			/* archive content does not look like cuDNN */
	CVM_E_EXISTS,			/* already there */
	CVM_E_BUSY,			/* in use (active, mapped) */
	CVM_E_CONFLICT,			/* a file cudnnvm did not create is in the way */
	CVM_E_PERM,			/* unsafe permissions, or needs root */
	CVM_E_CHILD,			/* a helper process failed */
	CVM_E_NOTREG,			/* a FIFO, device, socket, folder or link where a file belongs */
	CVM_E_LAST
};

/* Returns a static description of code (negative or positive), never NULL. */
const char *cvm_strerror(int code);

/* Maps a return code to the process exit status documented in docs/cli.md. */
int cvm_exit_code(int code);

#endif
