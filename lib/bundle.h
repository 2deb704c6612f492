/* SPDX-License-Identifier: MIT */
#ifndef CUDNNVM_BUNDLE_H
#define CUDNNVM_BUNDLE_H

/*
 * Store bundles (bundle.c): an installed version exported as a tar or
 * tar.zst of versions/<id>/ under a top folder named <id>, its record
 * (.cudnnvm/record.json, files.sha256, links) included, and installed from
 * one through the same transaction as an archive (staging, one rename).
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "context.h"
#include "digest.h"
#include "fetch.h"

struct cvm_bundle_info {
	char sha256[CVM_SHA256_HEX];	/* of the bundle file */
	uint64_t size;			/* its bytes */
	size_t files;			/* files and links in it, records not counted */
};

/*
 * Writes versions/<id> into file (through file.tmp.<pid>, created O_EXCL and
 * O_NOFOLLOW beside it, fsynced, renamed): zstd-compressed when zstd. The
 * version must be what its record lists (no file missing, extra or of
 * another type, links as recorded, every name one install --bundle takes)
 * and every file is re-hashed as it is written: a damaged version gives
 * -CVM_E_INTEGRITY and no file. A file that is there must be a regular one
 * (else -CVM_E_CONFLICT). Interrupted (SIGINT, SIGTERM, SIGHUP): 128 + the
 * signal. No failure leaves file.tmp.<pid> behind. Messages printed.
 */
int cvm_bundle_export(struct cvm_ctx *ctx, const char *id, const char *file, bool zstd,
		      struct cvm_bundle_info *info);

struct cvm_bundle_opts {
	const char *bundle;		/* a file, or an http(s):// or file:// URL */
	const char *sha256;		/* 64 lowercase hex digits, or NULL (required for URLs
					 * unless archive_sha256 is given) */
	const char *archive_sha256;	/* the NVIDIA archive the carried record must name
					 * (--prefer-bundles: the catalogue's), or NULL */
	const char *spec;		/* the version it must hold, or NULL */
	int cuda_major;			/* the CUDA major it must be built for, or 0 */
	bool force;			/* replace an installed version */
	const struct cvm_fetch_opts *fo;
};

struct cvm_bundle_result {
	char id[160];
	bool already;			/* installed before: nothing done */
	size_t files;
};

/*
 * Installs a bundle (the store must be locked): its SHA-256 first when one
 * is given (-CVM_E_INTEGRITY on a mismatch), then extraction into staging
 * under the archive entry rules, every extracted file and link compared with
 * the carried files.sha256 and links (-CVM_E_INTEGRITY on any difference,
 * extra or missing file), the headers checked against the record, a new
 * record written that keeps the original archive's name and SHA-256 and
 * adds the bundle's, then one rename into versions/. Nothing is left on
 * failure (a bundle downloaded without a SHA-256 to check leaves the cache
 * too). -CVM_E_NOTFOUND, and no message, when a URL is not on the server and
 * archive_sha256 is set (the caller installs the archive instead). Messages
 * printed.
 */
int cvm_bundle_install(struct cvm_ctx *ctx, const struct cvm_bundle_opts *o,
		       struct cvm_bundle_result *res);

#endif
