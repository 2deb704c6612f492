/* SPDX-License-Identifier: MIT */
/* export: one installed version as a store bundle (bundle.c), for installing elsewhere. */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "bundle.h"
#include "cli.h"
#include "error.h"
#include "json.h"
#include "out.h"
#include "store.h"
#include "version.h"

static bool ends_with(const char *s, const char *tail)
{
	size_t n = strlen(s), m = strlen(tail);

	return n >= m && !strcmp(s + n - m, tail);
}

int cvm_cmd_export(struct cvm_ctx *ctx, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "cuda", required_argument, NULL, 'c' },
		{ "format", required_argument, NULL, 'F' },
		CVM_COMMON_LONGOPTS,
		{ NULL, 0, NULL, 0 }
	};
	struct cvm_bundle_info info = { .size = 0 };
	const char *format = NULL, *file;
	char **ids = NULL;
	size_t n = 0;
	int c, r, major = 0;
	bool zstd;

	while ((c = cvm_cli_getopt(argc, argv, opts)) != -1) {
		switch (c) {
		case 'c':
			r = cvm_cuda_arg("export", optarg, &major);
			if (r < 0)
				return r;
			break;
		case 'F':
			format = optarg;
			break;
		default:
			return cvm_usage_bad_option("export", argv);
		}
	}
	if (optind + 2 != argc)
		return cvm_usage("export", "a VERSION and a FILE are needed, e.g. export 8.9.7 "
				 "cudnn-8.9.7.tar.zst");
	file = argv[optind + 1];
	if (!format)
		format = ends_with(file, ".tar") ? "tar" : "tar.zst";
	if (strcmp(format, "tar") && strcmp(format, "tar.zst"))
		return cvm_usage("export", "--format '%s': expected tar or tar.zst", cvm_safe(format));
	zstd = !strcmp(format, "tar.zst");
	r = ctx->store_open ? cvm_store_match(&ctx->store, argv[optind], major, NULL, &ids, &n) : 0;
	if (r == -CVM_E_VERSION)
		return cvm_err(r, "invalid version '%s': expected numbers such as 8.9.7 or an id",
			       cvm_safe(argv[optind]));
	if (r < 0)
		return r;
	if (n != 1) {
		r = n ? cvm_err(-CVM_E_USAGE, "'%s' names %zu installed versions (%s, …): give the "
				"full version or --cuda", cvm_safe(argv[optind]), n, ids[0])
		      : cvm_err(-CVM_E_NOTFOUND, "cuDNN %s is not installed (see 'cudnnvm list')",
				cvm_safe(argv[optind]));
		goto out;
	}
	r = cvm_bundle_export(ctx, ids[0], file, zstd, &info);
	if (r != 0)
		goto out;	/* an error, or 128 + the signal that interrupted it */
	if (cvm_out.json) {
		cvm_json *o = cvm_json_object();

		cvm_json_set(o, "id", cvm_json_string(ids[0]));
		cvm_json_set(o, "file", cvm_json_string(file));
		cvm_json_set(o, "format", cvm_json_string(format));
		cvm_json_set(o, "sha256", cvm_json_string(info.sha256));
		cvm_json_set(o, "size", cvm_json_integer((int64_t)info.size));
		cvm_json_set(o, "files", cvm_json_integer((int64_t)info.files));
		r = cvm_json_print(o);
		cvm_json_free(o);
	} else {
		cvm_info("exported %s to %s (%s, %zu files, %llu bytes)", ids[0], file, format,
			 info.files, (unsigned long long)info.size);
		cvm_info("sha256 %s", info.sha256);
		cvm_info("install it elsewhere with: cudnnvm install --bundle %s --sha256 %s", file,
			 info.sha256);
	}
out:
	cvm_strv_free(ids, n);
	return r;
}
