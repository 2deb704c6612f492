/* SPDX-License-Identifier: MIT */
#ifndef CUDNNVM_CACHE_H
#define CUDNNVM_CACHE_H

/*
 * STORE/cache/: archives downloaded from the mirror, kept under the file
 * name of the catalogue, re-verified (size, SHA-256) before every use.
 */
#include <stdbool.h>

#include "context.h"
#include "fetch.h"
#include "manifest.h"

/* The mirror: --mirror / CUDNNVM_MIRROR, else "mirror =" in ROOT/etc/cudnnvm.conf, else NVIDIA's. */
int cvm_mirror(const struct cvm_ctx *ctx, char *buf, size_t len);
/* Whether a mirror (as cvm_mirror gives it) is NVIDIA's own server. */
bool cvm_mirror_is_nvidia(const char *mirror);

/*
 * An open descriptor of build's archive: the cached file (*verified false:
 * the caller checks it as any archive), or, when there is none (or fresh is
 * set), a download from the mirror (*verified true: hashed as it arrived).
 * With offline, never the network: -CVM_E_NOTFOUND when it is not cached.
 * path receives the file's path for messages. In a dry run a download is
 * described, not made: -ECANCELED (nothing printed).
 */
int cvm_cache_open(struct cvm_ctx *ctx, const struct cvm_build *b, bool offline, bool fresh,
		   const struct cvm_fetch_opts *fo, char *path, size_t len, bool *verified);

/* Checks a cached archive's size and SHA-256 against b: 0 or -CVM_E_INTEGRITY (printed). */
int cvm_cache_check(int fd, const struct cvm_build *b, const char *path);

/* Removes a cached archive that failed verification (it is never installed). */
void cvm_cache_discard(struct cvm_ctx *ctx, const struct cvm_build *b);

/* STORE/cache, created when missing, opened: fd or a negative code (printed). */
int cvm_cache_dir(struct cvm_ctx *ctx);

#endif
