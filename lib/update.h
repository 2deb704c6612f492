/* SPDX-License-Identifier: MIT */
#ifndef CUDNNVM_UPDATE_H
#define CUDNNVM_UPDATE_H

/*
 * The catalogue beyond the built-in manifests: `update` reads the mirror's
 * folder listing (NVIDIA's index page, python -m http.server's, a file://
 * folder), fetches the redistrib_<X.Y.Z>.json it names, checks each as the
 * built-in ones are checked and keeps those that add releases or builds in
 * STORE/catalogue/. Every command's catalogue is built-in + STORE/catalogue
 * + --manifests (in that order: a later label replaces an earlier one).
 */
#include <stdbool.h>

#include "context.h"
#include "fetch.h"
#include "manifest.h"

/* The largest folder listing, manifest, and count of names a listing may give. */
#define CVM_UPDATE_LISTING_MAX (1u << 20)
#define CVM_UPDATE_MANIFEST_MAX (4u << 20)
#define CVM_UPDATE_NAMES_MAX 2000

/*
 * Loads the catalogue of ctx: built-in, then STORE/catalogue (when the store
 * is open and has one), then ctx->manifests; sorted. 0 or negative (printed);
 * cat is the caller's to release (cleared on failure).
 */
int cvm_update_catalogue(const struct cvm_ctx *ctx, struct cvm_catalogue *cat);

/*
 * The names a listing gives: every href of an HTML page (buf, len) that
 * names a manifest, as labels ("9.27.0") appended to *labels (caller frees
 * with cvm_strv_free). A name that mentions redistrib_ but is not a plain
 * "redistrib_X.Y.Z.json" of that folder ("../", "/x/", "http://other/",
 * "%2e") refuses the whole listing: -CVM_E_UNSAFE, said naming url.
 */
int cvm_update_parse_listing(const char *url, const char *buf, size_t len, char ***labels,
			     size_t *n);

struct cvm_update_opts {
	bool offline;			/* read nothing from the mirror: check STORE/catalogue */
	struct cvm_fetch_opts fo;
};

/*
 * update: reports (text or JSON) what is new; with a dry run, writes
 * nothing to STORE/catalogue. A manifest that changes an archive of a
 * release already known (another SHA-256 or size for one relative_path) is
 * -CVM_E_INTEGRITY and nothing is kept. 0 or negative (said).
 */
int cvm_update(struct cvm_ctx *ctx, const struct cvm_update_opts *o);

#endif
