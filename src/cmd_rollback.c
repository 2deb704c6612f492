/* SPDX-License-Identifier: MIT */
/* rollback: re-activate the version that was active before the current one. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "activate.h"
#include "cli.h"
#include "error.h"
#include "journal.h"
#include "json.h"
#include "out.h"
#include "plan.h"
#include "store.h"

static int installed(void *arg, const char *id)
{
	return cvm_store_has(arg, id);
}

int cvm_cmd_rollback(struct cvm_ctx *ctx, int argc, char **argv)
{
	static const struct option opts[] = {
		CVM_ACTIVATE_LONGOPTS,
		CVM_DRYRUN_LONGOPT,
		CVM_COMMON_LONGOPTS,
		{ NULL, 0, NULL, 0 }
	};
	struct cvm_activate_opts o = { .kind = "rollback", .argc = argc, .argv = argv };
	struct cvm_journal_entry *e = NULL;
	struct cvm_toolkit tk = { 0 };
	const char *cuda_arg = NULL;
	char cuda[16], cur[160] = "", to[160];
	size_t n = 0;
	int c, r;

	while ((c = cvm_cli_getopt(argc, argv, opts)) != -1) {
		if (!cvm_cli_activate_opt(c, optarg, &cuda_arg, &o))
			return cvm_usage_bad_option("rollback", argv);
	}
	if (optind != argc)
		return cvm_usage_unexpected("rollback", argv);
	r = cvm_cli_refuse_user(ctx, "rollback");
	if (r == 0)
		r = cvm_toolkit_select(ctx->root, cuda_arg, &tk);
	if (r < 0)
		return r;
	cvm_toolkit_name(&tk, cuda, sizeof(cuda));
	if (cvm_active_get(&ctx->store, cuda, cur, sizeof(cur)) < 0)
		cur[0] = '\0';
	r = cvm_journal_read(&ctx->store, cuda, true, &e, &n);
	if (r < 0)
		goto out;
	r = cvm_journal_previous(e, n, cur[0] ? cur : NULL, installed, &ctx->store, to, sizeof(to));
	if (r == -CVM_E_NOTFOUND) {
		r = cvm_err(r, "nothing to roll back to for CUDA %s: the journal has no earlier "
			    "version that is still installed (see 'cudnnvm history --cuda %s')",
			    cuda, cuda);
		goto out;
	}
	if (r < 0)
		goto out;
	o.smoke = cvm_out.json ? cvm_json_object() : NULL;
	r = cvm_activate(ctx, &tk, to, &o);
	if (r < 0)
		goto out;
	if (cvm_out.json) {
		r = cvm_cli_use_json(cuda, &tk, to, cur, &o.smoke);
	} else {
		cvm_info("%sCUDA %s (%s) %s %s%s%s%s", cvm_plan_dry(&ctx->plan) ? "dry run: " : "", cuda,
			 tk.display, cvm_plan_dry(&ctx->plan) ? "would roll back to" : "rolled back to", to,
			 cur[0] ? ", was " : "", cur, cvm_plan_dry(&ctx->plan) ? "; nothing was changed" : "");
	}
out:
	cvm_json_free(o.smoke);
	free(e);
	cvm_toolkit_release(&tk);
	return r;
}
