/* SPDX-License-Identifier: MIT */
/* mirror DIR [VERSION...]: the manifests and archives, laid out as NVIDIA's server, for air-gapped sites. */
#include <getopt.h>
#include <stdbool.h>

#include "cli.h"
#include "error.h"
#include "mirror.h"
#include "out.h"
#include "version.h"

int cvm_cmd_mirror(struct cvm_ctx *ctx, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "cuda", required_argument, NULL, 'c' },
		{ "platform", required_argument, NULL, 'p' },
		CVM_FETCH_LONGOPTS,
		CVM_COMMON_LONGOPTS,
		{ NULL, 0, NULL, 0 }
	};
	struct cvm_mirror_opts o = { .fo = { .retries = -1 } };
	struct cvm_version v;
	int c, r;

	while ((c = cvm_cli_getopt(argc, argv, opts)) != -1) {
		switch (c) {
		case 'c':
			if (o.ncuda == sizeof(o.cuda) / sizeof(o.cuda[0]))
				return cvm_usage("mirror", "at most 16 --cuda");
			r = cvm_cuda_arg("mirror", optarg, &o.cuda[o.ncuda++]);
			if (r < 0)
				return r;
			break;
		case 'p':
			if (o.nplatforms == sizeof(o.platforms) / sizeof(o.platforms[0]))
				return cvm_usage("mirror", "at most 16 --platform");
			o.platforms[o.nplatforms++] = optarg;
			break;
		case 'C':
		case 'L':
		case 'R':
			r = cvm_cli_fetch_opt("mirror", c, optarg, &o.fo);
			if (r < 0)
				return r;
			break;
		default:
			return cvm_usage_bad_option("mirror", argv);
		}
	}
	if (optind >= argc)
		return cvm_usage("mirror", "a folder DIR is needed, e.g. /srv/cudnn");
	o.dir = argv[optind++];
	for (int i = optind; i < argc; i++)
		if (cvm_version_parse(argv[i], &v) < 0)
			return cvm_usage("mirror", "'%s': expected a version such as 9.27", cvm_safe(argv[i]));
	o.specs = argv + optind;
	o.nspecs = (size_t)(argc - optind);
	return cvm_mirror_make(ctx, &o);
}
