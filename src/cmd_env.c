/* SPDX-License-Identifier: MIT */
/* env: print the environment that selects a version without root. */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "cudnnvm/cli.h"
#include "cudnnvm/error.h"
#include "cudnnvm/json.h"
#include "cudnnvm/out.h"
#include "cudnnvm/select.h"
#include "cudnnvm/store.h"

/* Variables set to the folder itself, and lists the folder's part is put in front of. */
static const char *const plain[] = { "CUDNN_PATH", "CUDNN_HOME" };
static const struct { const char *var, *sub; } lists[] = {
	{ "LD_LIBRARY_PATH", "lib" }, { "LIBRARY_PATH", "lib" }, { "CPATH", "include" },
};

/* Single quotes, with the quote itself closed, escaped and reopened (sh, fish, pwsh alike). */
static void quoted(const char *s, const char *esc)
{
	putchar('\'');
	for (; *s; s++) {
		if (*s == '\'')
			fputs(esc, stdout);
		else
			putchar(*s);
	}
	putchar('\'');
}

/* --json: {"id", "path", "set": {VAR: value}, "prepend": {VAR: folder}} (host paths). */
static int json_env(const char *id, const char *dir)
{
	cvm_json *o = cvm_json_object(), *set = cvm_json_object(), *pre = cvm_json_object();
	char val[PATH_MAX + 16];
	int r = -ENOMEM;

	if (!o || !set || !pre)
		goto out;
	for (size_t i = 0; i < sizeof(plain) / sizeof(plain[0]); i++)
		cvm_json_set(set, plain[i], cvm_json_string(dir));
	for (size_t i = 0; i < sizeof(lists) / sizeof(lists[0]); i++) {
		snprintf(val, sizeof(val), "%s/%s", dir, lists[i].sub);
		cvm_json_set(pre, lists[i].var, cvm_json_string(val));
	}
	cvm_json_set(o, "id", cvm_json_string(id));
	cvm_json_set(o, "path", cvm_json_string(dir));
	cvm_json_set(o, "set", set);
	cvm_json_set(o, "prepend", pre);
	set = pre = NULL;
	r = cvm_json_print(o);
out:
	cvm_json_free(set);
	cvm_json_free(pre);
	cvm_json_free(o);
	return r;
}

int cvm_cmd_env(struct cvm_ctx *ctx, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "cuda", required_argument, NULL, 'c' },
		{ "shell", required_argument, NULL, 's' },
		{ "force", no_argument, NULL, 'f' },
		CVM_COMMON_LONGOPTS,
		{ NULL, 0, NULL, 0 }
	};
	const char *cuda = NULL, *shell = "sh";
	bool force = false;
	char id[160], dir[PATH_MAX], val[PATH_MAX + 16];
	int c, r;

	while ((c = getopt_long(argc, argv, CVM_COMMON_SHORTOPTS, opts, NULL)) != -1) {
		if (cvm_cli_common_opt(c))
			continue;
		switch (c) {
		case 'c':
			cuda = optarg;
			break;
		case 's':
			shell = optarg;
			break;
		case 'f':
			force = true;
			break;
		default:
			return cvm_usage_bad_option("env", argv);
		}
	}
	if (strcmp(shell, "sh") && strcmp(shell, "bash") && strcmp(shell, "zsh") &&
	    strcmp(shell, "fish") && strcmp(shell, "pwsh"))
		return cvm_usage("env", "--shell '%s': expected sh, fish or pwsh", cvm_safe(shell));
	if (argc - optind > 1)
		return cvm_usage("env", "at most one VERSION");
	r = cvm_select_version(ctx, optind < argc ? argv[optind] : NULL, cuda, id, sizeof(id), dir,
			       sizeof(dir));
	if (r == 0)
		r = cvm_store_check_safe(&ctx->store, id);
	if (r == 0)
		r = cvm_select_check_smoke(ctx, "env", id, force);
	if (r < 0)
		return r;
	if (cvm_out.json)
		return json_env(id, dir);
	if (cvm_out.verbosity >= 0)
		printf("# cuDNN %s (eval \"$(cudnnvm env)\" to use it)\n", id);
	for (size_t i = 0; i < sizeof(plain) / sizeof(plain[0]); i++) {
		if (!strcmp(shell, "fish"))
			printf("set -gx %s ", plain[i]), quoted(dir, "\\'");
		else if (!strcmp(shell, "pwsh"))
			printf("$env:%s = ", plain[i]), quoted(dir, "''");
		else
			printf("export %s=", plain[i]), quoted(dir, "'\\''");
		putchar('\n');
	}
	for (size_t i = 0; i < sizeof(lists) / sizeof(lists[0]); i++) {
		const char *v = lists[i].var;
		snprintf(val, sizeof(val), "%s/%s", dir, lists[i].sub);
		if (!strcmp(shell, "fish")) {
			printf("set -gx %s ", v);
			quoted(val, "\\'");
			printf(" $%s\n", v);
		} else if (!strcmp(shell, "pwsh")) {
			printf("$env:%s = ", v);
			quoted(val, "''");
			printf(" + $(if ($env:%s) { ':' + $env:%s } else { '' })\n", v, v);
		} else {
			printf("export %s=", v);
			quoted(val, "'\\''");
			printf("\"${%s:+:$%s}\"\n", v, v);
		}
	}
	return 0;
}
