/* SPDX-License-Identifier: MIT */
/* use: activate an installed version for one CUDA toolkit, then the smoke test. */
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "activate.h"
#include "cli.h"
#include "error.h"
#include "frameworks.h"
#include "fsutil.h"
#include "json.h"
#include "manifest.h"
#include "out.h"
#include "plan.h"
#include "select.h"
#include "store.h"
#include "toolkit.h"

int cvm_cli_use_json(const char *cuda, const struct cvm_toolkit *tk, const char *id,
		     const char *previous, cvm_json **smoke)
{
	cvm_json *j = cvm_json_object();
	bool ran = *smoke && cvm_json_get(*smoke, "library");
	int r;

	cvm_json_set(j, "cuda", cvm_json_string(cuda));
	cvm_json_set(j, "toolkit", cvm_json_string(tk->display));
	cvm_json_set(j, "id", cvm_json_string(id));
	cvm_json_set(j, "previous", cvm_json_string(previous[0] ? previous : NULL));
	cvm_json_set(j, "smoke", ran ? *smoke : cvm_json_string(NULL));
	if (ran)
		*smoke = NULL;
	r = cvm_json_print(j);
	cvm_json_free(j);
	return r;
}

int cvm_cli_use(struct cvm_ctx *ctx, const struct cvm_toolkit *tk, const char *spec,
		const struct cvm_activate_opts *o)
{
	struct cvm_activate_opts ao = *o;
	char cuda[16], id[160], before[160];
	size_t untouched = 0;
	int r;

	r = cvm_cli_refuse_user(ctx, "use");
	if (r < 0)
		return r;
	cvm_toolkit_name(tk, cuda, sizeof(cuda));
	/* A dry run of a version not installed yet (o->files): spec is its id. */
	if (o->files)
		r = cvm_fmt(id, sizeof(id), "%s", spec);
	else
		r = cvm_select_resolve(ctx, spec, tk->major, cuda, id, sizeof(id));
	if (r < 0)
		return r;
	if (cvm_active_get(&ctx->store, cuda, before, sizeof(before)) < 0)
		before[0] = '\0';
	ao.untouched = &untouched;
	/* --json: the smoke test's document goes in use's, as "smoke" (null when none ran). */
	ao.smoke = cvm_out.json ? cvm_json_object() : NULL;
	r = cvm_activate(ctx, tk, id, &ao);
	if (r >= 0 && cvm_out.json)
		r = cvm_cli_use_json(cuda, tk, id, before, &ao.smoke);
	cvm_json_free(ao.smoke);
	if (r < 0 || cvm_out.json)
		return r;
	if (!strcmp(before, id) && untouched) {
		cvm_info("%s was already active for CUDA %s (%s); its links were checked: %zu "
			 "path%s left as found, not cudnnvm's (named above)", id, cuda, tk->display,
			 untouched, untouched == 1 ? "" : "s");
	} else if (!strcmp(before, id)) {
		cvm_info("%s was already active for CUDA %s (%s); its links are in order", id, cuda,
			 tk->display);
	} else if (cvm_plan_dry(&ctx->plan)) {
		cvm_info("dry run: CUDA %s (%s) would use %s%s%s; nothing was changed", cuda,
			 tk->display, id, before[0] ? ", was " : "", before);
	} else {
		cvm_info("CUDA %s (%s) now uses %s%s%s", cuda, tk->display, id,
			 before[0] ? ", was " : "", before);
	}
	return 0;
}

int cvm_cmd_use(struct cvm_ctx *ctx, int argc, char **argv)
{
	static const struct option opts[] = {
		CVM_ACTIVATE_LONGOPTS,
		{ "for", required_argument, NULL, 'F' },
		{ "force", no_argument, NULL, 'f' },
		CVM_DRYRUN_LONGOPT,
		CVM_COMMON_LONGOPTS,
		{ NULL, 0, NULL, 0 }
	};
	struct cvm_activate_opts o = { .kind = "use", .closure = true, .argc = argc, .argv = argv };
	struct cvm_toolkit tk = { 0 };
	const char *cuda_arg = NULL, *spec = NULL, *py = NULL;
	char pin[160];
	int c, r;

	while ((c = cvm_cli_getopt(argc, argv, opts)) != -1) {
		if (c == 'F')
			py = optarg;
		else if (c == 'f')
			o.force = true;
		else if (!cvm_cli_activate_opt(c, optarg, &cuda_arg, &o))
			return cvm_usage_bad_option("use", argv);
	}
	if (optind + 1 < argc)
		return cvm_usage("use", "one VERSION is needed, e.g. 9.1");
	if (py && optind < argc)
		return cvm_usage("use", "--for PY chooses the version: not with VERSION '%s'", argv[optind]);
	if (py && !*py)
		return cvm_usage("use", "--for needs a path to a Python interpreter or environment");
	if (!py) {
		r = cvm_pin_spec("use", optind < argc ? argv[optind] : NULL, pin, sizeof(pin), &spec);
		if (r < 0)
			return r;
	}
	r = cvm_cli_refuse_user(ctx, "use");
	if (r < 0)
		return r;
	r = cvm_toolkit_select(ctx->root, cuda_arg, &tk);
	if (r < 0)
		return r;
	/* --for: the newest installed version the environment's frameworks all take. */
	if (py) {
		r = cvm_frameworks_installed(ctx, py, tk.major, pin, sizeof(pin));
		if (r == 0)
			cvm_verbose("use --for %s: %s", py, pin);
		spec = pin;
	}
	if (r == 0)
		r = cvm_cli_use(ctx, &tk, spec, &o);
	cvm_toolkit_release(&tk);
	return r;
}
