/* SPDX-License-Identifier: MIT */
/* modulefiles DIR: the command line of the modulefile writer (modulefiles.c). */
#include <getopt.h>
#include <stdbool.h>

#include "cli.h"
#include "modulefiles.h"
#include "out.h"

int cvm_cmd_modulefiles(struct cvm_ctx *ctx, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "format", required_argument, NULL, 'f' },
		{ "default", required_argument, NULL, 'd' },
		CVM_COMMON_LONGOPTS,
		{ NULL, 0, NULL, 0 }
	};
	const char *def = NULL;
	bool tcl = false;
	int c;

	while ((c = cvm_cli_getopt(argc, argv, opts)) != -1) {
		switch (c) {
		case 'f':
			if (cvm_modulefiles_format(optarg, &tcl) < 0)
				return cvm_usage("modulefiles", "--format '%s': expected lua or tcl",
						 cvm_safe(optarg));
			break;
		case 'd':
			def = optarg;
			break;
		default:
			return cvm_usage_bad_option("modulefiles", argv);
		}
	}
	if (argc - optind != 1)
		return cvm_usage("modulefiles", "expected one DIR (the modulefiles tree, e.g. "
				 "/opt/modulefiles)");
	return cvm_modulefiles_generate(ctx, argv[optind], tcl, def, false);
}

