/* SPDX-License-Identifier: MIT */
/* uninstall: remove a version from the store, atomically (rename to .trash, delete). */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cudnnvm/cli.h"
#include "cudnnvm/error.h"
#include "cudnnvm/json.h"
#include "cudnnvm/out.h"
#include "cudnnvm/store.h"
#include "cudnnvm/version.h"

int cvm_cmd_uninstall(struct cvm_ctx *ctx, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "cuda", required_argument, NULL, 'c' },
		{ "platform", required_argument, NULL, 'p' },
		{ "force", no_argument, NULL, 'f' },
		CVM_COMMON_LONGOPTS,
		{ NULL, 0, NULL, 0 }
	};
	const char *platform = NULL, *spec;
	char **ids = NULL, active[256];
	size_t n = 0;
	int c, r, major = 0, minor;
	bool force = false;

	while ((c = getopt_long(argc, argv, CVM_COMMON_SHORTOPTS, opts, NULL)) != -1) {
		if (cvm_cli_common_opt(c))
			continue;
		switch (c) {
		case 'c':
			if (cvm_cuda_parse(optarg, &major, &minor) < 0)
				return cvm_usage("uninstall", "--cuda '%s': expected a CUDA version such as 12.4",
						 cvm_safe(optarg));
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
			    "(or --force)", ids[0], active);
		goto out;
	}
	r = cvm_store_remove(&ctx->store, ids[0]);
	if (r < 0)
		goto out;
	if (cvm_out.json) {
		cvm_json *o = cvm_json_object();
		cvm_json_set(o, "removed", cvm_json_string(ids[0]));
		cvm_json_print(o);
		cvm_json_free(o);
	} else {
		cvm_info("removed %s", ids[0]);
	}
out:
	cvm_strv_free(ids, n);
	return r;
}
