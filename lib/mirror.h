/* SPDX-License-Identifier: MIT */
#ifndef CUDNNVM_MIRROR_H
#define CUDNNVM_MIRROR_H

/*
 * mirror: a folder laid out as NVIDIA's redist server (redistrib_<label>.json
 * at the top, each archive at its relative_path), for machines without
 * internet to `update` and `install` from (--mirror file://DIR, or DIR
 * served over HTTP).
 */
#include <stddef.h>

#include "context.h"
#include "fetch.h"

struct cvm_mirror_opts {
	const char *dir;		/* the mirror folder (made when missing) */
	char **specs;			/* releases ("9.27", "8.9.7"); none: every release */
	size_t nspecs;
	int cuda[16];			/* CUDA majors to keep; none: every one */
	size_t ncuda;
	const char *platforms[16];	/* platforms to keep; none: every one */
	size_t nplatforms;
	struct cvm_fetch_opts fo;
};

/*
 * Writes the manifests of the releases chosen (their bytes as the catalogue
 * has them) and downloads from ctx's mirror, verified and resumable, each
 * archive of theirs (cudnn and cudnn_jit) that the filters keep and DIR
 * lacks; an archive already there is re-verified, and one that is not the
 * catalogue's is refused (-CVM_E_INTEGRITY), never replaced. Reports (text
 * or JSON). 0 or negative (said).
 */
int cvm_mirror_make(struct cvm_ctx *ctx, const struct cvm_mirror_opts *o);

#endif
