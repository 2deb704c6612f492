/* SPDX-License-Identifier: MIT */
/* history: the activation journal of one or every toolkit. A reader: never locks. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "error.h"
#include "journal.h"
#include "json.h"
#include "out.h"
#include "toolkit.h"

static int show(struct cvm_ctx *ctx, const char *cuda, cvm_json *arr)
{
	struct cvm_journal_entry *e = NULL;
	size_t n = 0;
	char when[32];
	int r;

	r = cvm_journal_read(&ctx->store, cuda, true, &e, &n);
	if (r < 0)
		return r;
	for (size_t i = 0; i < n; i++) {
		time_t t = (time_t)e[i].time;
		strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S", localtime(&t));
		if (!arr) {
			cvm_print("%s  %-8s CUDA %-5s %-10s %s -> %s  (%s)", when, e[i].user, cuda,
				 e[i].kind, e[i].from[0] ? e[i].from : "(none)",
				 e[i].to[0] ? e[i].to : "(none)", e[i].command);
			continue;
		}
		cvm_json *o = cvm_json_object();
		cvm_json_set(o, "time", cvm_json_integer(e[i].time));
		cvm_json_set(o, "user", cvm_json_string(e[i].user));
		cvm_json_set(o, "cuda", cvm_json_string(cuda));
		cvm_json_set(o, "kind", cvm_json_string(e[i].kind));
		cvm_json_set(o, "from", cvm_json_string(e[i].from[0] ? e[i].from : NULL));
		cvm_json_set(o, "to", cvm_json_string(e[i].to[0] ? e[i].to : NULL));
		cvm_json_set(o, "command", cvm_json_string(e[i].command));
		cvm_json_append(arr, o);
	}
	free(e);
	return 0;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int cvm_cmd_history(struct cvm_ctx *ctx, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "cuda", required_argument, NULL, 'c' },
		CVM_COMMON_LONGOPTS,
		{ NULL, 0, NULL, 0 }
	};
	const char *cuda = NULL;
	cvm_json *doc = NULL, *arr = NULL;
	struct cvm_toolkit tk;
	char *names[256], name[16];
	size_t n = 0;
	int c, r = 0;

	while ((c = cvm_cli_getopt(argc, argv, opts)) != -1) {
		if (c != 'c')
			return cvm_usage_bad_option("history", argv);
		cuda = optarg;
	}
	if (optind != argc)
		return cvm_usage_unexpected("history", argv);
	/* --cuda names a toolkit as current's does (12 or 12.4): none such is exit 1. */
	if (cuda) {
		r = cvm_toolkit_select(ctx->root, cuda, &tk);
		if (r < 0)
			return r;
		cvm_toolkit_name(&tk, name, sizeof(name));
		cvm_toolkit_release(&tk);
		cuda = name;
	}
	if (cvm_out.json) {
		doc = cvm_json_object();
		arr = cvm_json_array();
		if (!doc || !arr || cvm_json_set(doc, "history", arr) < 0) {
			cvm_json_free(arr);
			r = -ENOMEM;
			goto out;
		}
	}
	if (!ctx->store_open)
		goto done;
	if (cuda) {
		r = show(ctx, cuda, arr);
		goto done;
	}
	int fd = openat(ctx->store.fd, "history", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = fd < 0 ? NULL : fdopendir(fd);
	struct dirent *de;
	while (d && (de = readdir(d)) && n < sizeof(names) / sizeof(names[0])) {
		size_t l = strlen(de->d_name);
		if (strncmp(de->d_name, "cuda-", 5) || l < 10 || strcmp(de->d_name + l - 4, ".log"))
			continue;
		names[n] = strndup(de->d_name + 5, l - 9);
		if (names[n])
			n++;
	}
	if (d)
		closedir(d);
	else if (fd >= 0)
		close(fd);
	qsort(names, n, sizeof(names[0]), cmp_str);
	for (size_t i = 0; i < n && r == 0; i++)
		r = show(ctx, names[i], arr);
done:
	if (r == 0 && doc)
		r = cvm_json_print(doc);
out:
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	cvm_json_free(doc);
	return r;
}
