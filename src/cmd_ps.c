/* SPDX-License-Identifier: MIT */
/*
 * ps: every running process that maps cuDNN, its PID, command and the files
 * it maps grouped by copy; a process mapping more than one copy, or a store
 * version no toolkit has active, is flagged. A reader: never locks.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "error.h"
#include "json.h"
#include "out.h"
#include "procmap.h"
#include "store.h"

static cvm_json *proc_doc(const struct cvm_proc_cudnn *p)
{
	cvm_json *o = cvm_json_object(), *copies = cvm_json_array();

	if (!o || !copies) {
		cvm_json_free(o);
		cvm_json_free(copies);
		return NULL;
	}
	cvm_json_set(o, "pid", cvm_json_integer(p->pid));
	cvm_json_set(o, "command", cvm_json_string(p->command));
	cvm_json_set(o, "mixed", cvm_json_bool(p->mixed));
	cvm_json_set(o, "not_active", cvm_json_bool(p->not_active));
	for (size_t k = 0; k < p->ng; k++) {
		const struct cvm_copy_group *g = &p->g[k];
		cvm_json *c = cvm_json_object(), *files = cvm_json_array();
		cvm_json_set(c, "kind", cvm_json_string(g->kind));
		cvm_json_set(c, !strcmp(g->kind, "store") ? "id" : "folder", cvm_json_string(g->copy));
		if (!strcmp(g->kind, "store"))
			cvm_json_set(c, "active_for", cvm_json_string(g->active_for));
		for (size_t f = 0; f < g->nfiles; f++)
			cvm_json_append(files, cvm_json_string(g->files[f]));
		cvm_json_set(c, "files", files);
		cvm_json_append(copies, c);
	}
	cvm_json_set(o, "copies", copies);
	return o;
}

static void proc_text(const struct cvm_proc_cudnn *p)
{
	cvm_print("PID %ld  %s%s", (long)p->pid, cvm_safe(p->command),
		  p->mixed ? "  [MIXED]" : p->not_active ? "  [NOT ACTIVE]" : "");
	for (size_t k = 0; k < p->ng; k++) {
		const struct cvm_copy_group *g = &p->g[k];
		if (!strcmp(g->kind, "store"))
			cvm_print("  %-8s %s (%s%s)", g->kind, cvm_safe(g->copy),
				  g->active_for[0] ? "active for CUDA " : "not active for any toolkit",
				  cvm_safe(g->active_for));
		else
			cvm_print("  %-8s %s", g->kind, cvm_safe(g->copy));
		for (size_t f = 0; f < g->nfiles; f++)
			cvm_print("           %s", cvm_safe(g->files[f]));
	}
	if (p->mixed)
		cvm_print("  problem: one process, %zu cuDNN copies: whichever loads a sub-library "
			  "first wins, and releases that differ fail or compute differently", p->ng);
	else if (p->not_active)
		cvm_print("  note: a store version no toolkit has active (run through 'cudnnvm exec'?)");
}

int cvm_cmd_ps(struct cvm_ctx *ctx, int argc, char **argv)
{
	static const struct option opts[] = {
		CVM_COMMON_LONGOPTS,
		{ NULL, 0, NULL, 0 }
	};
	struct cvm_proc_cudnn *v = NULL;
	size_t n = 0, unreadable = 0, flagged = 0;
	cvm_json *doc = NULL, *arr = NULL;
	int r;

	if (cvm_cli_getopt(argc, argv, opts) != -1)
		return cvm_usage_bad_option("ps", argv);
	if (optind != argc)
		return cvm_usage_unexpected("ps", argv);
	r = cvm_procmap_scan(ctx->store.fd >= 0 ? &ctx->store : NULL, ctx->root, &v, &n, &unreadable);
	if (r < 0)
		return cvm_err(r, "cannot list the running processes: %s", cvm_strerror(-r));
	if (cvm_out.json) {
		doc = cvm_json_object();
		arr = cvm_json_array();
		if (!doc || !arr) {
			r = -ENOMEM;
			goto out;
		}
	}
	for (size_t i = 0; i < n; i++) {
		if (v[i].mixed || v[i].not_active)
			flagged++;
		if (arr)
			cvm_json_append(arr, proc_doc(&v[i]));
		else
			proc_text(&v[i]);
	}
	if (doc) {
		cvm_json_set(doc, "processes", arr);
		arr = NULL;
		cvm_json_set(doc, "unreadable", cvm_json_integer((int64_t)unreadable));
		r = cvm_json_print(doc);
		goto out;
	}
	if (!n)
		cvm_info("no running process maps cuDNN%s", unreadable ? " (of those that could be read)" : "");
	else
		cvm_info("%zu process%s map%s cuDNN, %zu flagged", n, n == 1 ? "" : "es",
			 n == 1 ? "s" : "", flagged);
	if (unreadable)
		cvm_info("%zu process%s%s could not be read (%s%s)", unreadable,
			 unreadable == 1 ? "" : "es", geteuid() ? " of other users" : "",
			 geteuid() ? "root sees them; " : "", cvm_out.verbosity > 0 ? "named above" : "-v names them");
out:
	cvm_json_free(arr);
	cvm_json_free(doc);
	cvm_procmap_free(v, n);
	return r;
}
