/* SPDX-License-Identifier: MIT */
/* fetch: download a release's archive into the cache only (to prepare an offline machine). */
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "cache.h"
#include "cli.h"
#include "error.h"
#include "json.h"
#include "manifest.h"
#include "update.h"
#include "out.h"
#include "toolkit.h"
#include "version.h"

int cvm_cmd_fetch(struct cvm_ctx *ctx, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "cuda", required_argument, NULL, 'c' },
		{ "platform", required_argument, NULL, 'p' },
		CVM_FETCH_LONGOPTS,
		CVM_COMMON_LONGOPTS,
		{ NULL, 0, NULL, 0 }
	};
	struct cvm_fetch_opts fo = { .retries = -1 };
	struct cvm_catalogue cat = { 0 };
	const struct cvm_release *rel = NULL;
	const struct cvm_build *b = NULL;
	const char *cuda = NULL, *platform = NULL;
	char path[PATH_MAX];
	int c, r, major = 0, minor = -1, fd = -1;
	bool verified;

	while ((c = cvm_cli_getopt(argc, argv, opts)) != -1) {
		switch (c) {
		case 'c':
			cuda = optarg;
			break;
		case 'p':
			platform = optarg;
			break;
		case 'C':
		case 'L':
		case 'R':
			r = cvm_cli_fetch_opt("fetch", c, optarg, &fo);
			if (r < 0)
				return r;
			break;
		default:
			return cvm_usage_bad_option("fetch", argv);
		}
	}
	if (optind + 1 != argc)
		return cvm_usage("fetch", "one VERSION is needed, e.g. 8.9.7");
	if (!cuda)
		return cvm_usage("fetch", "--cuda X.Y is needed (the machine it is for may have another toolkit)");
	r = cvm_cuda_arg("fetch", cuda, &major);
	if (r < 0)
		return r;
	(void)cvm_cuda_parse(cuda, &major, &minor);
	if (!platform)
		platform = cvm_host_platform();
	if (!platform)
		return cvm_err(-CVM_E_NOTFOUND, "unknown host platform: give --platform");
	r = cvm_update_catalogue(ctx, &cat);
	if (r == 0)
		r = cvm_catalogue_resolve(&cat, argv[optind], major, minor, platform, &rel, &b);
	if (r < 0)
		goto out;
	fd = cvm_cache_open(ctx, b, false, false, &fo, path, sizeof(path), &verified);
	if (fd >= 0 && !verified && cvm_cache_check(fd, b, path) < 0) {
		close(fd);
		cvm_cache_discard(ctx, b);
		fd = cvm_cache_open(ctx, b, false, true, &fo, path, sizeof(path), &verified);
	}
	if (fd < 0) {
		r = fd;
		goto out;
	}
	if (cvm_out.json) {
		cvm_json *o = cvm_json_object();
		cvm_json_set(o, "file", cvm_json_string(path));
		cvm_json_set(o, "version", cvm_json_string(b->version_str));
		cvm_json_set(o, "sha256", cvm_json_string(b->sha256));
		cvm_json_set(o, "downloaded", cvm_json_bool(verified));
		r = cvm_json_print(o);
		cvm_json_free(o);
	} else {
		cvm_info("%s %s (SHA-256 matches): install it offline with "
			 "'cudnnvm install %s --cuda %s --offline'", verified ? "downloaded" : "cached",
			 path, b->version_str, cuda);
	}
out:
	if (fd >= 0)
		close(fd);
	cvm_catalogue_release(&cat);
	return r;
}
