/* SPDX-License-Identifier: MIT */
/* update: release manifests newer than the built-in ones, from the mirror into STORE/catalogue. */
#include <getopt.h>
#include <stdbool.h>

#include "cli.h"
#include "update.h"

int cvm_cmd_update(struct cvm_ctx *ctx, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "offline", no_argument, NULL, 'o' },
		CVM_FETCH_LONGOPTS,
		CVM_DRYRUN_LONGOPT,
		CVM_COMMON_LONGOPTS,
		{ NULL, 0, NULL, 0 }
	};
	struct cvm_update_opts o = { .fo = { .retries = -1 } };
	int c, r;

	while ((c = cvm_cli_getopt(argc, argv, opts)) != -1) {
		switch (c) {
		case 'o':
			o.offline = true;
			break;
		case 'C':
		case 'L':
		case 'R':
			r = cvm_cli_fetch_opt("update", c, optarg, &o.fo);
			if (r < 0)
				return r;
			break;
		default:
			return cvm_usage_bad_option("update", argv);
		}
	}
	if (optind != argc)
		return cvm_usage("update", "unexpected argument '%s'", argv[optind]);
	return cvm_update(ctx, &o);
}
