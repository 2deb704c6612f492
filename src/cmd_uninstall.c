/* SPDX-License-Identifier: MIT */
/* uninstall: remove a version from the store, atomically (rename to .trash, delete). */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "activate.h"
#include "cli.h"
#include "modulefiles.h"
#include "error.h"
#include "journal.h"
#include "json.h"
#include "out.h"
#include "plan.h"
#include "proc.h"
#include "store.h"
#include "version.h"

/*
 * The version to put back when id goes: the most recently active other
 * installed one. The journal is read from its end; each switch names the
 * version it made active and the one that was active until then.
 */
static const char *most_recent_other(struct cvm_store *s, const struct cvm_journal_entry *e,
				     size_t n, const char *id)
{
	while (n--) {
		const char *cand[] = { e[n].to, e[n].from };
		for (size_t i = 0; i < 2; i++)
			if (cand[i][0] && strcmp(cand[i], "-") && strcmp(cand[i], id) &&
			    cvm_store_has(s, cand[i]))
				return cand[i];
	}
	return NULL;
}

/* --force on an active version: the most recently active other one comes back, or none is active. */
static int deactivate(struct cvm_ctx *ctx, const char *id, const char *cuda, int argc, char **argv)
{
	struct cvm_activate_opts o = { .kind = "rollback", .no_smoke = true, .argc = argc, .argv = argv };
	struct cvm_journal_entry *e = NULL;
	struct cvm_toolkit tk = { 0 };
	const char *to;
	size_t n = 0;
	int r;

	r = cvm_toolkit_select(ctx->root, cuda, &tk);
	if (r == 0)
		r = cvm_journal_read(&ctx->store, cuda, true, &e, &n);
	if (r < 0)
		goto out;
	to = most_recent_other(&ctx->store, e, n, id);
	if (to) {
		cvm_info("%s is active for CUDA %s: putting back %s, the version active before it",
			 id, cuda, to);
	} else {
		o.kind = "deactivate";
		cvm_info("%s is active for CUDA %s and no other installed version was active before "
			 "it: the toolkit is left without a managed cuDNN", id, cuda);
	}
	r = cvm_activate(ctx, &tk, to, &o);
	if (r == 0 && !cvm_plan_dry(&ctx->plan))
		cvm_info("CUDA %s: %s%s", cuda, to ? "back to " : "no cuDNN active now", to ? to : "");
out:
	free(e);
	cvm_toolkit_release(&tk);
	return r;
}

/* Refuses while running processes map the version's files. */
static int check_users(struct cvm_ctx *ctx, const char *id, bool force)
{
	struct cvm_proc_user *u = NULL;
	char dir[PATH_MAX], real[PATH_MAX], who[512] = "";
	size_t n = 0;
	int r;

	r = snprintf(dir, sizeof(dir), "%s/versions/%s", ctx->store.path, id) >= (int)sizeof(dir)
		    ? -ENAMETOOLONG : 0;
	if (r == 0 && !realpath(dir, real))
		r = -errno;
	if (r == 0)
		r = cvm_proc_users(real, &u, &n);
	if (r < 0) {
		cvm_warn("cannot tell whether running programs use %s: %s", id, cvm_strerror(-r));
		return 0;
	}
	for (size_t i = 0; i < n && strlen(who) < sizeof(who) - 80; i++)
		snprintf(who + strlen(who), sizeof(who) - strlen(who), "%s%ld (%s%s%s)", i ? ", " : "",
			 (long)u[i].pid, cvm_safe(u[i].comm), u[i].job[0] ? ", Slurm job " : "",
			 u[i].job);
	if (n && !force)
		r = cvm_err(-CVM_E_BUSY, "%s is in use by %zu running process%s: %s%s; stop %s first "
			    "(or --force: they keep the files they have open)", id, n,
			    n == 1 ? "" : "es", who, n > 3 ? ", ..." : "", n == 1 ? "it" : "them");
	else if (n)
		cvm_warn("removing %s while %s use%s it; they keep the files they have open", id, who,
			 n == 1 ? "s" : "");
	free(u);
	return r;
}

int cvm_cmd_uninstall(struct cvm_ctx *ctx, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "cuda", required_argument, NULL, 'c' },
		{ "platform", required_argument, NULL, 'p' },
		{ "force", no_argument, NULL, 'f' },
		CVM_DRYRUN_LONGOPT,
		CVM_COMMON_LONGOPTS,
		{ NULL, 0, NULL, 0 }
	};
	const char *platform = NULL, *spec;
	char **ids = NULL, active[256];
	size_t n = 0;
	int c, r, k, major = 0;
	bool force = false;

	while ((c = cvm_cli_getopt(argc, argv, opts)) != -1) {
		switch (c) {
		case 'c':
			r = cvm_cuda_arg("uninstall", optarg, &major);
			if (r < 0)
				return r;
			break;
		case 'p':
			platform = optarg;
			break;
		case 'f':
			force = true;
			break;
		default:
			return cvm_usage_bad_option("uninstall", argv);
		}
	}
	if (optind + 1 != argc)
		return cvm_usage("uninstall", "one VERSION is needed, e.g. 8.9.7");
	spec = argv[optind];
	r = cvm_store_match(&ctx->store, spec, major, platform, &ids, &n);
	if (r == -CVM_E_VERSION)
		return cvm_err(r, "invalid version '%s': expected numbers such as 8.9.7 or an id",
			       cvm_safe(spec));
	if (r < 0)
		return r;
	if (n == 0) {
		r = cvm_err(-CVM_E_NOTFOUND, "cuDNN %s is not installed%s (see 'cudnnvm list')",
			    cvm_safe(spec), major ? " for that CUDA major" : "");
		goto out;
	}
	if (n > 1) {
		char names[1024] = "";
		for (size_t i = 0; i < n && strlen(names) + strlen(ids[i]) + 3 < sizeof(names); i++)
			snprintf(names + strlen(names), sizeof(names) - strlen(names), "%s%s",
				 i ? ", " : "", ids[i]);
		r = cvm_err(-CVM_E_USAGE, "'%s' names %zu installed versions (%s): give the full "
			    "version or --cuda", cvm_safe(spec), n, names);
		goto out;
	}
	r = cvm_store_active_for(&ctx->store, ids[0], active, sizeof(active));
	if (r == 0 && active[0] && !force) {
		r = cvm_err(-CVM_E_BUSY, "%s is active for CUDA %s: activate another version first "
			    "(or --force, which puts the previous one back)", ids[0], active);
		goto out;
	}
	r = check_users(ctx, ids[0], force);
	if (r < 0)
		goto out;
	for (char *p = active, *q; *p && r == 0; p = *q ? q + 1 : q) {
		char cuda[32];
		q = strchrnul(p, ',');
		snprintf(cuda, sizeof(cuda), "%.*s", (int)(q - p), p);
		r = deactivate(ctx, ids[0], cuda, argc, argv);
	}
	if (r < 0)
		goto out;
	r = cvm_store_remove(&ctx->store, ids[0]);
	if (r < 0)
		goto out;
	k = cvm_modulefiles_refresh(ctx);
	if (cvm_out.json) {
		cvm_json *o = cvm_json_object();
		cvm_json_set(o, "removed", cvm_json_string(ids[0]));
		cvm_json_print(o);
		cvm_json_free(o);
	} else {
		cvm_info("%s%s%s", cvm_plan_dry(&ctx->plan) ? "dry run: " : "removed ", ids[0],
			 cvm_plan_dry(&ctx->plan) ? " would be removed; nothing was changed" : "");
	}
	r = k;	/* stale modulefiles: the exit code, after the removal is said */
out:
	cvm_strv_free(ids, n);
	return r;
}
