/* SPDX-License-Identifier: MIT */
/*
 * install: the command line of the install engine (install.c), and --use,
 * which then switches to the installed version as 'use' does.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "activate.h"
#include "cli.h"
#include "config.h"
#include "error.h"
#include "frameworks.h"
#include "fsutil.h"
#include "install.h"
#include "json.h"
#include "out.h"
#include "plan.h"
#include "select.h"
#include "store.h"
#include "toolkit.h"

static int parse_jobs(const char *what, const char *s, unsigned *out)
{
	long v;
	int r = cvm_cli_number("install", what, s, 1, 256, &v);

	if (r == 0)
		*out = (unsigned)v;
	return r;
}

/* The install command: the engine's request, and what the CLI does after it. */
struct install_cli {
	struct cvm_install in;
	bool use;			/* --use: then activate it, as 'use' does */
	const char *py;			/* --for PY: the release its frameworks take */
	struct cvm_activate_opts ao;	/* use's options: --no-smoke, --no-ldconfig */
	char pin[160];			/* VERSION from .cudnn-version */
};

static int parse(struct install_cli *cli, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "cuda", required_argument, NULL, 'c' },
		{ "archive", required_argument, NULL, 'a' },
		{ "sha256", required_argument, NULL, 's' },
		{ "platform", required_argument, NULL, 'p' },
		{ "force", no_argument, NULL, 'f' },
		{ "jobs", required_argument, NULL, 'j' },
		{ "verify-first", no_argument, NULL, 'V' },
		{ "offline", no_argument, NULL, 'O' },
		CVM_FETCH_LONGOPTS,
		{ "use", no_argument, NULL, 'U' },
		{ "for", required_argument, NULL, 'F' },
		{ "no-smoke", no_argument, NULL, 'S' },
		{ "no-ldconfig", no_argument, NULL, 'l' },
		{ "bundle", required_argument, NULL, 'B' },
		{ "prefer-bundles", no_argument, NULL, 'b' },
		CVM_DRYRUN_LONGOPT,
		CVM_COMMON_LONGOPTS,
		{ NULL, 0, NULL, 0 }
	};
	struct cvm_install *in = &cli->in;
	long jobs;
	int c, r;

	/* The defaults of --jobs and --verify-first can come from the environment. */
	if (cvm_config_env_number("CUDNNVM_JOBS", 0, &jobs) < 0)
		return -CVM_E_USAGE;
	in->jobs = (unsigned)jobs;
	if (cvm_config_env_number("CUDNNVM_VERIFY_FIRST", 0, &jobs) < 0)
		return -CVM_E_USAGE;
	in->verify_first = jobs == 1;
	while ((c = cvm_cli_getopt(argc, argv, opts)) != -1) {
		switch (c) {
		case 'c':
			in->cuda = optarg;
			break;
		case 'a':
			in->archive = optarg;
			break;
		case 's':
			in->sha256 = optarg;
			break;
		case 'p':
			in->platform = optarg;
			break;
		case 'f':
			in->force = true;
			break;
		case 'j':
			if (parse_jobs("--jobs", optarg, &in->jobs) < 0)
				return -CVM_E_USAGE;
			break;
		case 'V':
			in->verify_first = true;
			break;
		case 'O':
			in->offline = true;
			break;
		case 'C':
		case 'L':
		case 'R':
			r = cvm_cli_fetch_opt("install", c, optarg, &in->fo);
			if (r < 0)
				return r;
			break;
		case 'U':
			cli->use = cli->in.then_use = true;
			break;
		case 'F':
			cli->py = optarg;
			break;
		case 'S':
			cli->ao.no_smoke = true;
			break;
		case 'l':
			cli->ao.no_ldconfig = true;
			break;
		case 'B':
			in->bundle = optarg;
			break;
		case 'b':
			in->prefer_bundles = true;
			break;
		default:
			return cvm_usage_bad_option("install", argv);
		}
	}
	if (!cli->use && (cli->ao.no_smoke || cli->ao.no_ldconfig))
		return cvm_usage("install", "--%s goes with --use (the activation it changes)",
				 cli->ao.no_smoke ? "no-smoke" : "no-ldconfig");
	if (in->bundle && in->archive)
		return cvm_usage("install", "--bundle and --archive: give one of them");
	if (in->prefer_bundles && (in->bundle || in->archive || in->sha256))
		return cvm_usage("install", "--prefer-bundles looks in the mirror's bundles/ folder: "
				 "not with --%s", in->bundle ? "bundle" : in->archive ? "archive" : "sha256");
	if (optind + 1 < argc)
		return cvm_usage("install", "one VERSION only");
	if (cli->py && (optind < argc || in->bundle || in->archive))
		return cvm_usage("install", "--for PY chooses the release: not with %s",
				 optind < argc ? "a VERSION" : in->bundle ? "--bundle" : "--archive");
	if (cli->py && !*cli->py)
		return cvm_usage("install", "--for needs a path to a Python interpreter or environment");
	if (cli->py) {
		/* The release is chosen once the CUDA major is known (cvm_install_check). */
	} else if (in->bundle) {
		/* A bundle names its version: VERSION, when given, is what it must hold. */
		in->spec = optind < argc ? argv[optind] : NULL;
	} else {
		r = cvm_pin_spec("install", optind < argc ? argv[optind] : NULL, cli->pin,
				 sizeof(cli->pin), &in->spec);
		if (r < 0)
			return r;
	}
	return cvm_install_check(in);
}

/*
 * install --use: then the activation 'use' makes (smoke test included), on
 * the toolkit --cuda names or the default one, by 'use' itself. With
 * --json, install's document gets use's (smoke included) under "use". A
 * dry run of a version not installed plans use's changes from the files
 * the archive holds; from a download, which a dry run does not fetch, they
 * are not known: what is, is said.
 */
static int use_installed(struct cvm_ctx *ctx, const struct cvm_install *in,
			 const struct cvm_activate_opts *use_opts)
{
	struct cvm_toolkit tk = { 0 };
	char cuda[16], path[4096];
	char *av[] = { "use", (char *)in->id, "--cuda", cuda, NULL };
	struct cvm_activate_opts ao = *use_opts;
	cvm_json *o = NULL, *u;
	int r;

	r = cvm_toolkit_select(ctx->root, in->cuda, &tk);
	if (r < 0)
		return r;
	cvm_toolkit_name(&tk, cuda, sizeof(cuda));
	ao.kind = "use";
	ao.argc = 4;
	ao.argv = av;
	ao.closure = true;
	if (!in->already && cvm_plan_dry(&ctx->plan)) {
		ao.files = in->files;
		ao.nfiles = in->nfiles;
	}
	if (!in->already && !in->files &&
	    cvm_plan_describe(&ctx->plan, "activate", in->id, NULL, "for CUDA %s (%s), as 'cudnnvm use' "
			      "does: a link in the toolkit for each of its files, known once the "
			      "archive is downloaded", cuda, tk.display)) {
		if (!cvm_out.json)
			cvm_info("dry run: CUDA %s (%s) would use %s; nothing was changed", cuda,
				 tk.display, in->id);
		goto out;
	}
	/* The journal line reads as the 'use' it is. */
	r = cvm_cli_use(ctx, &tk, in->id, &ao);
	if (r < 0 || !cvm_out.json)
		goto out;
	r = cvm_fmt(path, sizeof(path), "%s/versions/%s", ctx->store.display, in->id);
	if (r < 0)
		goto out;
	o = cvm_install_doc(path, in);
	u = cvm_json_take();
	if (!o || !u) {
		cvm_json_free(u);
		r = -ENOMEM;
		goto out;
	}
	cvm_json_set(o, "use", u);
	r = cvm_json_print(o);
out:
	cvm_json_free(o);
	cvm_toolkit_release(&tk);
	return r;
}

int cvm_cmd_install(struct cvm_ctx *ctx, int argc, char **argv)
{
	struct install_cli cli = { .in = { .argc = argc, .argv = argv, .fo.retries = -1 } };
	int r;

	r = parse(&cli, argc, argv);
	if (r == 0 && cli.use)
		r = cvm_cli_refuse_user(ctx, "install --use");
	/* --for: a small resolution before the engine, which then installs that release. */
	if (r == 0 && cli.py) {
		r = cvm_frameworks_release(ctx, cli.py, cli.in.cuda_major, cli.in.platform, cli.pin,
					   sizeof(cli.pin));
		cli.in.spec = cli.pin;
	}
	if (r == 0)
		r = cvm_install(ctx, &cli.in);
	if (r == 0 && cli.use)
		r = use_installed(ctx, &cli.in, &cli.ao);
	cvm_strv_free(cli.in.files, cli.in.nfiles);
	return r;
}
