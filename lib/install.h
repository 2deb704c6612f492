/* SPDX-License-Identifier: MIT */
#ifndef CUDNNVM_INSTALL_H
#define CUDNNVM_INSTALL_H

/*
 * The install engine: resolve a version in the catalogue (or take an archive
 * or a bundle), fetch it or take it from the cache, verify its SHA-256
 * before a byte of it is trusted, extract into staging, check it is the
 * cuDNN it claims to be, record it and rename it into the store in one
 * step. The CLI (cmd_install.c) fills the request from the command line;
 * a library user (a plugin) fills it itself.
 */
#include <stdbool.h>

#include "context.h"
#include "digest.h"
#include "fetch.h"
#include "json.h"
#include "manifest.h"
#include "entry.h"

struct cvm_install {
	/* The request. */
	const char *spec;		/* VERSION (e.g. 9.1); with bundle, what it must hold */
	const char *cuda;		/* CUDA X.Y, or NULL for the default toolkit's */
	const char *archive;		/* a local archive instead of the catalogue's */
	const char *sha256;		/* what archive must hash to */
	const char *platform;		/* NULL: this host's */
	const char *bundle;		/* a store bundle (path or URL) instead */
	bool force;			/* reinstall an installed version */
	bool prefer_bundles;		/* the mirror's bundles/ first */
	unsigned jobs;			/* xz decoder threads; 0 = one per CPU */
	bool verify_first;		/* hash all before decoding a byte */
	bool offline;			/* the cache or nothing */
	/*
	 * install --use: a dry run's last line is use's, and a dry run of an
	 * archive on disk lists its files (below) for use's plan.
	 */
	bool then_use;
	struct cvm_fetch_opts fo;	/* timeouts and retries (retries < 0: the default) */
	int argc;			/* the command line, for the journal */
	char **argv;

	/* Filled in by the engine. */
	bool already;			/* it was installed before this run */
	bool verified;			/* the descriptor was hashed already (download, cache check) */
	char cache_path[4096];
	int cuda_major;
	int cuda_minor;			/* the toolkit's (picks cuda13.4 over cuda13); -1: not known */
	const struct cvm_release *rel;	/* what the archive must be */
	const struct cvm_build *build;
	char want_sha[CVM_SHA256_HEX];
	char version[32], release[32], id[160];
	/* From the archive's top folder (when it has the NVIDIA name). */
	char top_version[32], top_platform[64];
	int top_cuda;
	enum cvm_layout layout;
	/* then_use, a dry run of an archive on disk: the files it would install (cvm_strv_free). */
	char **files;
	size_t nfiles;
};

/*
 * Checks the request's values (sha256: 64 hex digits, cuda: X.Y) and fills
 * want_sha and cuda_major: 0, or -CVM_E_USAGE (said). cvm_install calls it;
 * the CLI calls it first so that its usage errors come in their order.
 */
int cvm_install_check(struct cvm_install *in);

/* Installs as requested: 0 (reported: text or JSON), or a negative code (said). */
int cvm_install(struct cvm_ctx *ctx, struct cvm_install *in);

/* install's JSON document for the version at path (display form). */
cvm_json *cvm_install_doc(const char *path, const struct cvm_install *in);

#endif
