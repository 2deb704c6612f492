/* SPDX-License-Identifier: MIT */
#ifndef CUDNNVM_CONTEXT_H
#define CUDNNVM_CONTEXT_H

/*
 * The engine's context: where it works (root, store, catalogue, mirror) and
 * how it waits for the store. The CLI fills it from the global options
 * (cli.h); a library user (a plugin) fills it itself. The engine never
 * includes the CLI's header.
 */
#include <stdbool.h>

#include "plan.h"
#include "store.h"

struct cvm_ctx {
	const char *root;		/* host path of --root; "" for the real root */
	const char *manifests;		/* --manifests / CUDNNVM_MANIFESTS, or NULL */
	const char *mirror;		/* --mirror / CUDNNVM_MIRROR, or NULL */
	double lock_timeout;		/* < 0 waits forever, 0 = --no-wait */
	bool user;			/* --user */
	struct cvm_plan plan;		/* --dry-run, and what it described (store.plan points here) */
	struct cvm_store store;		/* opened (and locked) per the command's flags */
	bool store_open;
	bool embedded;			/* in another program (the Slurm plugin): no cudnnvm option to offer */
};

#endif
