/* SPDX-License-Identifier: MIT */
/* prefix: the folder of an installed version (like `pyenv prefix`). A reader: never locks. */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "error.h"
#include "fsutil.h"
#include "json.h"
#include "out.h"
#include "select.h"
#include "store.h"

int cvm_cmd_prefix(struct cvm_ctx *ctx, int argc, char **argv)
{
	const char *cuda = NULL, *spec;
	char id[160], dir[PATH_MAX], shown[PATH_MAX], ver[64], plat[64];
	cvm_json *doc = NULL;
	int r, major;

	r = cvm_cli_cuda_only("prefix", argc, argv, &cuda);
	if (r < 0)
		return r;
	if (argc - optind > 1)
		return cvm_usage("prefix", "at most one VERSION");
	spec = optind < argc ? argv[optind] : NULL;
	if (spec && !cuda && cvm_store_parse_id(spec, ver, sizeof(ver), &major, plat, sizeof(plat)) == 0) {
		/* A whole id names its CUDA major itself: no toolkit to ask. */
		if (!ctx->store_open || !cvm_store_has(&ctx->store, spec))
			return cvm_err(-CVM_E_NOTFOUND, "%s is not installed (see 'cudnnvm list')",
				       cvm_safe(spec));
		r = cvm_fmt(id, sizeof(id), "%s", spec);
	} else {
		/* The same resolution as env and exec: VERSION, else .cudnn-version, else the active one. */
		r = cvm_select_version(ctx, spec, cuda, id, sizeof(id), dir, sizeof(dir));
	}
	if (r < 0)
		return r;
	r = cvm_fmt(shown, sizeof(shown), "%s/versions/%s", ctx->store.display, id);
	if (r < 0)
		return cvm_err(r, "path of '%s' too long", id);
	if (!cvm_out.json) {
		/* The path alone on stdout, even with -q: scripts read it ("$(cudnnvm prefix 9)"). */
		printf("%s\n", shown);
		return 0;
	}
	if (cvm_store_parse_id(id, ver, sizeof(ver), &major, plat, sizeof(plat)) < 0)
		return cvm_err(-CVM_E_VERSION, "malformed id '%s'", cvm_safe(id));
	doc = cvm_json_object();
	if (!doc)
		return -ENOMEM;
	cvm_json_set(doc, "id", cvm_json_string(id));
	cvm_json_set(doc, "version", cvm_json_string(ver));
	cvm_json_set(doc, "cuda_major", cvm_json_integer(major));
	cvm_json_set(doc, "platform", cvm_json_string(plat));
	cvm_json_set(doc, "path", cvm_json_string(shown));
	r = cvm_json_print(doc);
	cvm_json_free(doc);
	return r;
}
