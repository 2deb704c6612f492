/* SPDX-License-Identifier: MIT */
/* smoke: the smoke test on what a program using a toolkit would load now. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "activate.h"
#include "cli.h"
#include "error.h"
#include "json.h"
#include "out.h"
#include "smoke.h"
#include "toolkit.h"

int cvm_cmd_smoke(struct cvm_ctx *ctx, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "cuda", required_argument, NULL, 'c' },
		{ "no-gpu", no_argument, NULL, 'n' },
		{ "device", required_argument, NULL, 'd' },
		{ "all-devices", no_argument, NULL, 'a' },
		CVM_COMMON_LONGOPTS,
		{ NULL, 0, NULL, 0 }
	};
	struct cvm_smoke_opts o = { .device = -1 };
	struct cvm_toolkit tk = { 0 };
	const char *cuda = NULL;
	char name[16], id[160];
	cvm_json *doc = NULL;
	long dev;
	int c, r;

	while ((c = cvm_cli_getopt(argc, argv, opts)) != -1) {
		switch (c) {
		case 'c':
			cuda = optarg;
			break;
		case 'n':
			o.no_gpu = true;
			break;
		case 'a':
			o.all_devices = true;
			break;
		case 'd':
			r = cvm_cli_number("smoke", "--device", optarg, 0, 1023, &dev);
			if (r < 0)
				return r;
			o.device = (int)dev;
			break;
		default:
			return cvm_usage_bad_option("smoke", argv);
		}
	}
	if (optind != argc)
		return cvm_usage_unexpected("smoke", argv);
	if (o.all_devices && o.device >= 0)
		return cvm_usage("smoke", "--device and --all-devices exclude each other");
	r = cvm_toolkit_select(ctx->root, cuda, &tk);
	if (r < 0)
		return r;
	cvm_toolkit_name(&tk, name, sizeof(name));
	/* What is there now: the managed version if any, else whatever the toolkit holds. */
	if (!ctx->store_open || cvm_active_get(&ctx->store, name, id, sizeof(id)) < 0)
		id[0] = '\0';
	if (cvm_out.json)
		doc = cvm_json_object();
	r = cvm_smoke_run(ctx, &tk, id[0] ? id : NULL, &o, doc);
	if (doc) {
		cvm_json_print(doc);
	} else if (r == 0) {
		cvm_info("smoke test passed");
	} else if (r == -CVM_E_SKIPPED) {
		cvm_info("smoke test: loader part passed; GPU part skipped (exit 77)");
	}
	cvm_json_free(doc);
	cvm_toolkit_release(&tk);
	return r;
}
