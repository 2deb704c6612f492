/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "error.h"
#include "fsutil.h"
#include "json.h"
#include "out.h"
#include "toolkit.h"
#include "trust.h"

static int print_json(const struct cvm_toolkit *t, size_t n, int def)
{
	cvm_json *doc = NULL, *list, *item;
	char ver[32];
	int r;

	doc = cvm_json_object();
	list = cvm_json_array();
	if (!doc || !list) {
		cvm_json_free(list);
		r = -ENOMEM;
		goto out;
	}
	r = cvm_json_set(doc, "toolkits", list);
	if (r < 0)
		goto out;
	for (size_t i = 0; i < n; i++) {
		snprintf(ver, sizeof(ver), "%d.%d", t[i].major, t[i].minor);
		item = cvm_json_object();
		if (!item) {
			r = -ENOMEM;
			goto out;
		}
		/* The list owns item from here on, even when a later set fails. */
		r = cvm_json_append(list, item);
		if (r < 0)
			goto out;
		if ((r = cvm_json_set(item, "version", cvm_json_string(ver))) < 0 ||
		    (r = cvm_json_set(item, "path", cvm_json_string(t[i].display))) < 0 ||
		    (r = cvm_json_set(item, "source", cvm_json_string(t[i].source))) < 0 ||
		    (r = cvm_json_set(item, "default", cvm_json_bool((int)i == def))) < 0)
			goto out;
	}
	cvm_trust_skipped_json(doc);
	r = cvm_json_print(doc);
out:
	if (r == -ENOMEM)
		cvm_err(r, "out of memory");
	cvm_json_free(doc);
	return r;
}

static void print_table(const struct cvm_toolkit *t, size_t n, int def)
{
	int wpath = (int)strlen("PATH");

	for (size_t i = 0; i < n; i++) {
		int w = (int)strlen(cvm_safe(t[i].display));

		if (w > wpath)
			wpath = w;
	}
	printf("%-8s %-*s  %s\n", "VERSION", wpath, "PATH", "SOURCE");
	for (size_t i = 0; i < n; i++) {
		char ver[32];

		snprintf(ver, sizeof(ver), "%d.%d", t[i].major, t[i].minor);
		printf("%-8s %-*s  %s%s\n", ver, wpath, cvm_safe(t[i].display), t[i].source,
		       (int)i == def ? "  (default)" : "");
	}
	fflush(stdout);
}

int cvm_cmd_toolkits(struct cvm_ctx *ctx, int argc, char **argv)
{
	static const struct option longopts[] = {
		CVM_COMMON_LONGOPTS,
		{ NULL, 0, NULL, 0 }
	};
	const char *root = ctx->root ? ctx->root : "";
	struct cvm_toolkit *t = NULL;
	size_t n = 0;
	int def, r;

	if (cvm_cli_getopt(argc, argv, longopts) != -1)
		return cvm_usage_bad_option("toolkits", argv);
	if (optind < argc)
		return cvm_usage_unexpected("toolkits", argv);

	r = cvm_toolkits_find(root, &t, &n);
	if (r < 0)
		goto out;
	if (!n && CVM_WINDOWS)
		cvm_warn("no CUDA toolkit found (looked at CUDA_PATH, CUDA_PATH_V<X>_<Y> and "
			 "%%ProgramFiles%%\\NVIDIA GPU Computing Toolkit\\CUDA\\v*)");
	else if (!n)
		cvm_warn("no CUDA toolkit found under '%s' (looked in /usr/local/cuda-* and /opt/cuda*)",
			 cvm_safe(root[0] ? root : "/"));
	def = cvm_toolkit_default(root, t, n);
	if (cvm_out.json)
		r = print_json(t, n, def);
	else if (n)
		print_table(t, n, def);
	/* The configuration names a toolkit that is not there: said, and exit 1. */
	if (r == 0 && def == -CVM_E_NOTFOUND)
		r = def;
out:
	cvm_toolkits_free(t, n);
	return r;
}
