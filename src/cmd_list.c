/* SPDX-License-Identifier: MIT */
/* list: the installed versions, or with --available the catalogue. Never locks. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "error.h"
#include "fsutil.h"
#include "json.h"
#include "manifest.h"
#include "update.h"
#include "out.h"
#include "record.h"
#include "store.h"
#include "version.h"

/*
 * An active link that leads nowhere: not a version list can show, but said
 * (a warning; the list itself is right), and kept in the array arg for --json.
 */
static void active_broken(void *arg, const char *cuda, const char *id, const char *why)
{
	cvm_warn("the active link of CUDA %s is broken: %s%s%s%s; 'cudnnvm doctor' says how to "
		 "fix it", cuda, why, id[0] ? " (" : "", id[0] ? cvm_safe(id) : "", id[0] ? ")" : "");
	cvm_cli_broken_json(arg, cuda, id, why);
}

void cvm_cli_broken_json(cvm_json *doc, const char *cuda, const char *id, const char *why)
{
	cvm_json *arr, *o;

	if (!doc)
		return;
	arr = cvm_json_get(doc, "broken_active");
	if (!arr && cvm_json_set(doc, "broken_active", arr = cvm_json_array()) < 0)
		return;
	o = cvm_json_object();
	cvm_json_set(o, "cuda", cvm_json_string(cuda));
	cvm_json_set(o, "id", cvm_json_string(id[0] ? id : NULL));
	cvm_json_set(o, "problem", cvm_json_string(why));
	cvm_json_append(arr, o);
}

static int list_installed(struct cvm_ctx *ctx, int cuda_major)
{
	char **ids = NULL, ver[64], plat[64], active[256], path[4096];
	size_t n = 0, shown = 0;
	cvm_json *doc = NULL, *arr = NULL;
	int r = 0, major;

	if (ctx->store_open) {
		r = cvm_store_list(&ctx->store, &ids, &n);
		if (r < 0)
			return r;
	}
	if (cvm_out.json) {
		doc = cvm_json_object();
		arr = cvm_json_array();
		/* cvm_json_set takes its value, even when it fails. */
		if (!doc || !arr || cvm_json_set(doc, "installed", arr) < 0) {
			r = -ENOMEM;
			goto out;
		}
	}
	if (ctx->store_open)
		(void)cvm_active_each_broken(&ctx->store, active_broken, doc);
	for (size_t i = 0; i < n; i++) {
		struct cvm_version v;
		cvm_json *o, *act;
		char release[32];
		if (cvm_store_parse_id(ids[i], ver, sizeof(ver), &major, plat, sizeof(plat)) < 0 ||
		    cvm_version_parse(ver, &v) < 0)
			continue;
		if (cuda_major && major != cuda_major)
			continue;
		v.n = 3;
		cvm_version_format(&v, release, sizeof(release));
		cvm_store_active_for(&ctx->store, ids[i], active, sizeof(active));
		r = cvm_fmt(path, sizeof(path), "%s/versions/%s", ctx->store.display, ids[i]);
		if (r < 0)
			goto out;
		shown++;
		if (!cvm_out.json) {
			if (shown == 1)
				cvm_print("%-40s %-12s %-5s %s", "ID", "VERSION", "CUDA", "ACTIVE FOR");
			cvm_print("%-40s %-12s %-5d %s", ids[i], ver, major, active[0] ? active : "-");
			continue;
		}
		o = cvm_json_object();
		act = cvm_json_array();
		if (!o || !act) {
			cvm_json_free(o);
			cvm_json_free(act);
			r = -ENOMEM;
			goto out;
		}
		for (char *p = active, *q; *p; p = *q ? q + 1 : q) {
			q = strchrnul(p, ',');
			char one[32];
			snprintf(one, sizeof(one), "%.*s", (int)(q - p), p);
			cvm_json_append(act, cvm_json_string(one));
		}
		cvm_json_set(o, "id", cvm_json_string(ids[i]));
		cvm_json_set(o, "version", cvm_json_string(ver));
		cvm_json_set(o, "release", cvm_json_string(release));
		cvm_json_set(o, "cuda_major", cvm_json_integer(major));
		cvm_json_set(o, "platform", cvm_json_string(plat));
		cvm_json_set(o, "path", cvm_json_string(path));
		cvm_json_set(o, "active_for", act);
		cvm_json_append(arr, o);
	}
	if (cvm_out.json)
		r = cvm_json_print(doc);
	else if (!shown)
		cvm_info("no cuDNN installed in %s (see 'cudnnvm list --available')",
			 ctx->store.display ? ctx->store.display : "the store");
out:
	cvm_json_free(doc);
	cvm_strv_free(ids, n);
	return r;
}

static int list_available(struct cvm_ctx *ctx, int cuda_major, const char *platform)
{
	struct cvm_catalogue cat = { 0 };
	cvm_json *doc = NULL, *arr = NULL;
	char id[160];
	size_t shown = 0;
	int r;

	r = cvm_update_catalogue(ctx, &cat);
	if (r < 0)
		return r;
	if (cvm_out.json) {
		doc = cvm_json_object();
		arr = cvm_json_array();
		if (!doc || !arr || cvm_json_set(doc, "available", arr) < 0) {
			r = -ENOMEM;
			goto out;
		}
	}
	for (size_t i = 0; i < cat.n; i++) {
		const struct cvm_release *rel = &cat.rel[i];
		for (size_t j = 0; j < rel->nbuilds; j++) {
			const struct cvm_build *b = &rel->builds[j];
			bool installed;
			if (strcmp(b->platform, platform) || (cuda_major && b->cuda_major != cuda_major))
				continue;
			installed = ctx->store_open && !b->jit &&
				    cvm_build_id(b, id, sizeof(id)) == 0 && cvm_store_has(&ctx->store, id);
			shown++;
			if (!cvm_out.json) {
				char size[32] = "-";
				if (b->has_size)
					snprintf(size, sizeof(size), "%.0f MB", (double)b->size / 1e6);
				if (shown == 1)
					cvm_print("%-8s %-12s %-5s %-10s %-8s %s", "RELEASE", "VERSION",
						 "CUDA", "DATE", "SIZE", "");
				/* cudnn_jit is a separate library (its archive holds no libcudnn): said, not installable. */
				cvm_print("%-8s %-12s %-5s %-10s %-8s %s", rel->label, b->version_str,
					 b->cuda_variant, rel->release_date ? rel->release_date : "-",
					 size, b->jit ? "cudnn_jit (Graph JIT library)" :
					 installed ? "installed" : "");
				continue;
			}
			cvm_json *o = cvm_json_object();
			if (!o) {
				r = -ENOMEM;
				goto out;
			}
			cvm_json_set(o, "release", cvm_json_string(rel->label));
			cvm_json_set(o, "version", cvm_json_string(b->version_str));
			cvm_json_set(o, "cuda_major", cvm_json_integer(b->cuda_major));
			cvm_json_set(o, "cuda_variant", cvm_json_string(b->cuda_variant));
			cvm_json_set(o, "component", cvm_json_string(b->jit ? "cudnn_jit" : "cudnn"));
			cvm_json_set(o, "platform", cvm_json_string(b->platform));
			cvm_json_set(o, "release_date", cvm_json_string(rel->release_date));
			cvm_json_set(o, "relative_path", cvm_json_string(b->relative_path));
			cvm_json_set(o, "sha256", cvm_json_string(b->sha256));
			/* null when the manifest gives none: the same keys in every entry */
			cvm_json_set(o, "size", b->has_size ? cvm_json_integer((int64_t)b->size)
							    : cvm_json_string(NULL));
			cvm_json_set(o, "installed", cvm_json_bool(installed));
			cvm_json_append(arr, o);
		}
	}
	if (cvm_out.json)
		r = cvm_json_print(doc);
	else if (!shown)
		cvm_info("no release in the catalogue for %s%s", platform,
			 cuda_major ? " and that CUDA major" : "");
out:
	cvm_json_free(doc);
	cvm_catalogue_release(&cat);
	return r;
}

int cvm_cmd_list(struct cvm_ctx *ctx, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "available", no_argument, NULL, 'a' },
		{ "cuda", required_argument, NULL, 'c' },
		{ "platform", required_argument, NULL, 'p' },
		CVM_COMMON_LONGOPTS,
		{ NULL, 0, NULL, 0 }
	};
	const char *platform = NULL;
	bool available = false;
	int c, r, major = 0;

	while ((c = cvm_cli_getopt(argc, argv, opts)) != -1) {
		switch (c) {
		case 'a':
			available = true;
			break;
		case 'c':
			r = cvm_cuda_arg("list", optarg, &major);
			if (r < 0)
				return r;
			break;
		case 'p':
			platform = optarg;
			break;
		default:
			return cvm_usage_bad_option("list", argv);
		}
	}
	if (optind != argc)
		return cvm_usage_unexpected("list", argv);
	if (!available)
		return list_installed(ctx, major);
	if (!platform)
		platform = cvm_host_platform();
	if (!platform)
		return cvm_err(-CVM_E_NOTFOUND, "unknown host platform: give --platform");
	return list_available(ctx, major, platform);
}
