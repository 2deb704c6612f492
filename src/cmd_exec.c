/* SPDX-License-Identifier: MIT */
/* exec: run a command with a version selected through its environment. */
#include <errno.h>
#include <getopt.h>
#ifndef _WIN32
#include <glob.h>
#endif
#include <stdbool.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "error.h"
#include "frameworks.h"
#include "out.h"
#include "proc.h"
#include "select.h"
#include "store.h"

/* var set to dir[/sub], or with dir/sub put in front of its list. */
static int set_var(const struct cvm_env_var *v, const char *dir)
{
	char val[PATH_MAX * 4];

	if (cvm_env_compose(val, sizeof(val), v, dir, getenv(v->var)) < 0)
		return -ENAMETOOLONG;
	return setenv(v->var, val, 1) < 0 ? -errno : 0;
}

static bool python_like(const char *cmd)
{
	const char *base = strrchr(cmd, '/') ? strrchr(cmd, '/') + 1 : cmd;
	static const char *const names[] = { "python", "ipython", "jupyter", "torchrun", "pytest",
					     "accelerate", "deepspeed" };

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strncmp(base, names[i], strlen(names[i])))
			return true;
	return false;
}

/* The first folder matching pattern that holds a libcudnn.so.*, into out. */
#ifdef _WIN32
/* A Windows wheel holds DLLs, not libcudnn.so: this check is Linux's. */
static bool wheel_copy(const char *pattern, char *out, size_t len)
{
	(void)pattern;
	(void)out;
	(void)len;
	return false;
}
#else
static bool wheel_copy(const char *pattern, char *out, size_t len)
{
	glob_t g;
	bool found = false;

	if (glob(pattern, 0, NULL, &g) != 0)
		return false;
	for (size_t i = 0; i < g.gl_pathc && !found; i++) {
		char probe[PATH_MAX];
		glob_t h;
		if (snprintf(probe, sizeof(probe), "%s/lib/libcudnn.so*", g.gl_pathv[i]) >= (int)sizeof(probe))
			continue;
		if (glob(probe, 0, NULL, &h) == 0) {
			snprintf(out, len, "%s", g.gl_pathv[i]);
			found = true;
			globfree(&h);
		}
	}
	globfree(&g);
	return found;
}
#endif

/*
 * Says once on stderr when the command would load cuDNN from somewhere else
 * first: LD_PRELOAD naming a libcudnn, or, for a Python program, a package's
 * own copy (site-packages/nvidia/cudnn, which PyTorch and others load by
 * path) in the active virtual env, conda env, the user's site or the
 * interpreter's prefix.
 */
static void shadowed(const char *cmd, const char *id)
{
	const char *pre = getenv("LD_PRELOAD"), *envs[] = { "VIRTUAL_ENV", "CONDA_PREFIX", "HOME" };
	char pat[PATH_MAX], where[PATH_MAX] = "", prog[PATH_MAX];

	if (pre && strstr(pre, "libcudnn")) {
		cvm_warn("exec: LD_PRELOAD names a cuDNN library (%s): '%s' loads it before cuDNN %s",
			 cvm_safe(pre), cvm_safe(cmd), id);
		return;
	}
	if (!python_like(cmd))
		return;
	for (size_t i = 0; i < 3 && !where[0]; i++) {
		const char *e = getenv(envs[i]);
		if (!e || !*e)
			continue;
		snprintf(pat, sizeof(pat), "%s/%s/python3*/site-packages/nvidia/cudnn", e,
			 i == 2 ? ".local/lib" : "lib");
		wheel_copy(pat, where, sizeof(where));
	}
	/* The interpreter's own prefix: PATH/../lib/python3.../site-packages. */
	if (!where[0] && !strchr(cmd, '/')) {
		const char *path = getenv("PATH");
		for (const char *p = path ? path : "", *q; *p && !where[0]; p = *q ? q + 1 : q) {
			q = strchrnul(p, ':');
			if (q == p || snprintf(prog, sizeof(prog), "%.*s/%s", (int)(q - p), p, cmd) >=
				      (int)sizeof(prog) || access(prog, X_OK) < 0)
				continue;
			snprintf(pat, sizeof(pat), "%.*s/../lib/python3*/site-packages/nvidia/cudnn",
				 (int)(q - p), p);
			wheel_copy(pat, where, sizeof(where));
			break;
		}
	}
	if (where[0])
		cvm_warn("exec: '%s' may load cuDNN from %s (a Python package's own copy, as PyTorch's "
			 "wheel does) rather than cuDNN %s: one process, two copies; "
			 "'cudnnvm ps' shows what it maps", cvm_safe(cmd), cvm_safe(where), id);
}

int cvm_cmd_exec(struct cvm_ctx *ctx, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "cuda", required_argument, NULL, 'c' },
		{ "force", no_argument, NULL, 'f' },
		CVM_COMMON_LONGOPTS,
		{ NULL, 0, NULL, 0 }
	};
	const char *cuda = NULL, *spec = NULL;
	char id[160], dir[PATH_MAX];
	const struct cvm_env_var *vars;
	size_t nvars;
	bool force = false;
	int c, r;

	/* Everything after "--" is the command's: options are parsed only before it. */
	int dashes = 1;
	while (dashes < argc && strcmp(argv[dashes], "--"))
		dashes++;
	if (dashes >= argc || dashes + 1 >= argc)
		return cvm_usage("exec", "a command is needed after '--': cudnnvm exec VERSION -- CMD ...");
	while ((c = cvm_cli_getopt(dashes, argv, opts)) != -1) {
		if (c == 'c') {
			cuda = optarg;
			continue;
		}
		if (c == 'f') {
			force = true;
			continue;
		}
		return cvm_usage_bad_option("exec", argv);
	}
	if (dashes - optind > 1)
		return cvm_usage("exec", "at most one VERSION before '--'");
	if (optind < dashes)
		spec = argv[optind];
	optind = dashes + 1;
	r = cvm_env_select(ctx, "exec", spec, cuda, force, id, sizeof(id), dir, sizeof(dir));
	if (r == 0)
		r = cvm_frameworks_exec_check(argv[optind], id, force);
	if (r < 0)
		return r;
	shadowed(argv[optind], id);
	vars = cvm_env_vars(&nvars);
	for (size_t i = 0; i < nvars; i++)
		if (set_var(&vars[i], dir) < 0)
			return cvm_err(-ENOMEM, "exec: cannot set %s", vars[i].var);
	cvm_verbose("running %s with cuDNN %s", argv[optind], id);
	r = -cvm_proc_exec(argv + optind);
	/* As env(1) and the shells: 127 when there is no such command, 126 when it cannot run. */
	cvm_err(-r, "cannot run '%s': %s", cvm_safe(argv[optind]), cvm_strerror(r));
	return r == ENOENT || r == ENOTDIR ? 127 : 126;
}
