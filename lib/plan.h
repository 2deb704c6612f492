/* SPDX-License-Identifier: MIT */
#ifndef CUDNNVM_PLAN_H
#define CUDNNVM_PLAN_H

/*
 * --dry-run: the one place that decides, for each kind of change cudnnvm
 * makes to a system (a folder, a link, a file, a tree of the store, a
 * program run, a download, a journal line), whether it is made or only
 * described. The code that changes things calls these instead of the
 * system calls; validation and resolution around them run as they always
 * do, so a dry run refuses what the real run refuses, with its exit code.
 *
 * A description is one line on stdout, "would <verb> <path>[ -> <target>]"
 * (also under -q: it is what was asked for), or with --json one entry of
 * the document's "changes" (with "dry_run": true; see cvm_plan_json).
 * Paths are shown as seen inside --root, as every message shows them.
 */
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "json.h"

/*
 * One run's plan, in its context (struct cvm_ctx's plan; the store points at
 * it): whether changes are made or described, and what was described. Every
 * function below takes it; NULL is a plan that makes every change.
 */
struct cvm_plan {
	bool dry;		/* --dry-run: describe, change nothing */
	cvm_json *changes;	/* with --json: the described changes */
	char **said;		/* every change described, once each */
	size_t nsaid, said_cap;
};

bool cvm_plan_dry(const struct cvm_plan *p);
void cvm_plan_release(struct cvm_plan *p);

/*
 * In a dry run: records the change (action: a short verb such as "create
 * link"; path as shown; target, or NULL; detail, printf-style, or NULL)
 * and returns true: the caller makes no change. Otherwise false, and the
 * caller makes it. The one test for kinds of change that are not a single
 * call below (a download, an extraction, a version's commit or removal).
 */
bool cvm_plan_describe(struct cvm_plan *p, const char *action, const char *path,
		       const char *target, const char *detail, ...)
	__attribute__((format(printf, 5, 6)));

/*
 * The changes themselves: each makes what it names and returns 0 or
 * -errno (no message, as fsutil), or in a dry run describes it and
 * returns 0. shown is the path as messages show it.
 */
/* mkdirat; an existing folder is 0 (and not described). */
int cvm_do_mkdir_at(struct cvm_plan *p, int dirfd, const char *name, mode_t mode,
		    const char *shown);
/* cvm_mkdir_p_at of a host path; shown_root is the --root prefix to strip ("" for none). */
int cvm_do_mkdir_p(struct cvm_plan *p, const char *host, mode_t mode, const char *shown_root);
/* A new symlink name -> target (symlinkat). */
int cvm_do_symlink_at(struct cvm_plan *p, int dirfd, const char *target, const char *name,
		      const char *shown);
/* Creates or atomically replaces the symlink name -> target; an equal one is not described. */
int cvm_do_symlink_replace_at(struct cvm_plan *p, int dirfd, const char *target, const char *name,
			      const char *shown);
/* Removes a file or link; a missing one is 0. */
int cvm_do_unlink_at(struct cvm_plan *p, int dirfd, const char *name, const char *shown);
/* Writes a whole file atomically (cvm_write_file_at); the same bytes again are not described. */
int cvm_do_write_file_at(struct cvm_plan *p, int dirfd, const char *name, const void *buf,
			 size_t len, mode_t mode, const char *shown);
/* Hard link (a backup): linkat of from to to (both host paths). */
int cvm_do_link(struct cvm_plan *p, const char *from, const char *to, const char *shown_from,
		const char *shown_to);
/* Moves a file (rename) from one host path to another. */
int cvm_do_rename(struct cvm_plan *p, const char *from, const char *to, const char *shown_from,
		  const char *shown_to);
/* Removes a tree (cvm_rm_rf_at). */
int cvm_do_rm_rf_at(struct cvm_plan *p, int dirfd, const char *name, const char *shown);

/*
 * With --json in a dry run: adds "dry_run": true and "changes": [{"action",
 * "path", "target", "detail", "text"}...] to doc (the command's document).
 */
void cvm_plan_json(struct cvm_plan *p, cvm_json *doc);

#endif
