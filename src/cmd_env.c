/* SPDX-License-Identifier: MIT */
/* env: print the environment that selects a version without root. */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "compat.h"
#include "error.h"
#include "json.h"
#include "out.h"
#include "select.h"
#include "store.h"

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
	const struct cvm_env_var *v;
	char val[PATH_MAX + 16];
	size_t n;
	int r = -ENOMEM;

	if (!o || !set || !pre)
		goto out;
	v = cvm_env_vars(&n);
	for (size_t i = 0; i < n; i++) {
		if (cvm_env_value(val, sizeof(val), dir, v[i].sub) < 0)
			continue;
		cvm_json_set(v[i].sub ? pre : set, v[i].var, cvm_json_string(val));
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

/* One variable in shell's words: set to val, or (list) val put in front of it. */
static void print_var(const char *shell, const char *var, const char *val, bool list)
{
	if (!strcmp(shell, "cmd")) {
		/* cmd has no quoting but "set "VAR=..."": '%' and '"' are refused before. */
		if (list)
			printf("set \"%s=%s;%%%s%%\"\n", var, val, var);
		else
			printf("set \"%s=%s\"\n", var, val);
		return;
	}
	if (!strcmp(shell, "fish")) {
		printf("set -gx %s ", var);
		quoted(val, "\\'");
		if (list)
			printf(" $%s", var);
	} else if (!strcmp(shell, "pwsh")) {
		printf("$env:%s = ", var);
		quoted(val, "''");
		if (list)
			printf(" + $(if ($env:%s) { '%c' + $env:%s } else { '' })", var, cvm_env_sep, var);
	} else {
		printf("export %s=", var);
		quoted(val, "'\\''");
		if (list)
			printf("\"${%s:+:$%s}\"", var, var);
	}
	putchar('\n');
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
	const char *cuda = NULL, *shell = CVM_WINDOWS ? "pwsh" : "sh";
	const struct cvm_env_var *v;
	size_t n;
	bool force = false;
	char id[160], dir[PATH_MAX], val[PATH_MAX + 16];
	int c, r;

	while ((c = cvm_cli_getopt(argc, argv, opts)) != -1) {
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
	    strcmp(shell, "fish") && strcmp(shell, "pwsh") && (!CVM_WINDOWS || strcmp(shell, "cmd")))
		return cvm_usage("env", "--shell '%s': expected %s", cvm_safe(shell),
				 CVM_WINDOWS ? "pwsh, cmd, sh or fish" : "sh, fish or pwsh");
	if (argc - optind > 1)
		return cvm_usage("env", "at most one VERSION");
	r = cvm_env_select(ctx, "env", optind < argc ? argv[optind] : NULL, cuda, force, id,
			   sizeof(id), dir, sizeof(dir));
	if (r < 0)
		return r;
	if (cvm_out.json)
		return json_env(id, dir);
	if (!strcmp(shell, "cmd") && strpbrk(dir, "%\""))
		return cvm_err(-CVM_E_USAGE, "env --shell cmd: the folder '%s' has a '%%' or '\"', which "
			       "cmd cannot be given safely: use --shell pwsh", cvm_safe(dir));
	if (cvm_out.verbosity >= 0 && !strcmp(shell, "cmd"))
		printf("rem cuDNN %s (cudnnvm env --shell cmd > cudnn.cmd, then: call cudnn.cmd)\n", id);
	else if (cvm_out.verbosity >= 0)
		printf("# cuDNN %s (%s to use it)\n", id, !strcmp(shell, "pwsh") ?
		       "cudnnvm env --shell pwsh | Invoke-Expression" : "eval \"$(cudnnvm env)\"");
	v = cvm_env_vars(&n);
	for (size_t i = 0; i < n; i++) {
		if (cvm_env_value(val, sizeof(val), dir, v[i].sub) < 0)
			return cvm_err(-ENAMETOOLONG, "env: the folder '%s' is too long", cvm_safe(dir));
		print_var(shell, v[i].var, val, v[i].sub != NULL);
	}
	return 0;
}
