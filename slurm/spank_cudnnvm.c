/* SPDX-License-Identifier: MIT */
/*
 * The Slurm SPANK plugin: srun/sbatch/salloc --cudnn=VERSION give the job's
 * tasks the environment `cudnnvm env VERSION` prints (the same engine call,
 * cvm_env_select, linked in: nothing is run). The version is checked where
 * the job is submitted (srun, sbatch, salloc: the store is readable there on
 * a node or a shared file system) and again in each task on the node, from
 * that node's store; a version not installed, or whose last smoke test
 * failed, fails the job with the engine's message on the user's stderr.
 *
 * plugstack.conf: required /usr/lib/x86_64-linux-gnu/slurm/cudnnvm.so
 *   [root=DIR] [store=DIR] [default=VERSION]
 * A broken argument is logged (slurmd's log, srun's stderr) naming it; the
 * plugin then fails only the jobs that ask for a version.
 */
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <slurm/spank.h>

#include "context.h"
#include "error.h"
#include "fsutil.h"
#include "out.h"
#include "select.h"
#include "store.h"

SPANK_PLUGIN(cudnnvm, 1);

/* What a job asks for: --cudnn's value (or SLURM_SPANK_CUDNN's, or default=), "" for nothing. */
#define SPEC_MAX 160

static struct {
	char root[PATH_MAX];	/* "" for the real root */
	char store[PATH_MAX];	/* "" for the configured or default store */
	char def[SPEC_MAX];	/* default=VERSION, or "" */
	bool broken;		/* an argument was refused (logged) */
} conf;

static char opt_spec[SPEC_MAX];
static bool opt_given;

/* A version, a store id, or "pin" (cvm_pin_parse's rule, so a job's value reads as a pin file's). */
static bool valid_spec(const char *s, char *out, size_t len)
{
	if (!strcmp(s, "pin"))
		return cvm_fmt(out, len, "%s", s) == 0;
	return cvm_pin_parse(s, strlen(s), out, len) == 0 && !strcmp(out, s);
}

static int opt_cudnn(int val, const char *optarg, int remote)
{
	(void)val;
	(void)remote;
	if (!optarg || !valid_spec(optarg, opt_spec, sizeof(opt_spec))) {
		slurm_error("cudnnvm: --cudnn '%s': expected a version (9.1, 8.9.7.29), an installed "
			    "id or 'pin'", optarg ? cvm_safe(optarg) : "");
		return -1;
	}
	opt_given = true;
	return 0;
}

static struct spank_option cudnn_option = {
	"cudnn", "VERSION",
	"cuDNN VERSION for the job's tasks, as 'cudnnvm env VERSION' sets it (LD_LIBRARY_PATH, "
	"CPATH, CUDNN_PATH...); 'pin': the .cudnn-version of the working folder",
	1, 0, opt_cudnn
};

/* DIR of root=DIR or store=DIR: absolute, and (root) an existing folder, kept as its real path. */
static const char *dir_arg(const char *key, const char *val, char *out, size_t len)
{
	char real[PATH_MAX];

	if (val[0] != '/')
		return "expected an absolute path";
	if (strpbrk(val, "#"))
		return "a '#' in the path (ldconfig would read the store's library folder cut there)";
	if (!strcmp(key, "store"))
		return cvm_fmt(out, len, "%s", val) < 0 ? "the path is too long" : NULL;
	if (!realpath(val, real))
		return "no such folder";
	return cvm_fmt(out, len, "%s", strcmp(real, "/") ? real : "") < 0 ? "the path is too long"
									 : NULL;
}

/* plugstack.conf's arguments into conf; each broken one logged, naming it. */
static void parse_args(int ac, char **av)
{
	for (int i = 0; i < ac; i++) {
		const char *eq = strchr(av[i], '='), *why = NULL;
		size_t kl = eq ? (size_t)(eq - av[i]) : 0;

		if (eq && kl == 4 && !strncmp(av[i], "root", 4))
			why = dir_arg("root", eq + 1, conf.root, sizeof(conf.root));
		else if (eq && kl == 5 && !strncmp(av[i], "store", 5))
			why = dir_arg("store", eq + 1, conf.store, sizeof(conf.store));
		else if (eq && kl == 7 && !strncmp(av[i], "default", 7))
			why = valid_spec(eq + 1, conf.def, sizeof(conf.def))
				      ? NULL : "expected a version (9.1, 8.9.7.29), an installed id or 'pin'";
		else
			why = "unknown argument (expected root=DIR, store=DIR or default=VERSION)";
		if (why) {
			slurm_error("cudnnvm: plugstack.conf: argument '%s': %s", cvm_safe(av[i]), why);
			conf.broken = true;
		}
	}
}

int slurm_spank_init(spank_t sp, int ac, char **av)
{
	spank_context_t where = spank_context();

	memset(&conf, 0, sizeof(conf));
	parse_args(ac, av);
	if (where == S_CTX_LOCAL || where == S_CTX_REMOTE || where == S_CTX_ALLOCATOR)
		return spank_option_register(sp, &cudnn_option) == ESPANK_SUCCESS ? 0 : -1;
	return 0;
}

/*
 * What the job asks for into spec: --cudnn, else SLURM_SPANK_CUDNN (from
 * the job's environment on the node, from srun's or sbatch's own here),
 * else default=. 1, 0 for nothing (the job is left as it is), or -1 for a
 * SLURM_SPANK_CUDNN that names no version (said).
 */
static int job_spec(spank_t sp, char *spec, size_t len)
{
	char env[SPEC_MAX];
	const char *e;

	if (opt_given)
		return cvm_fmt(spec, len, "%s", opt_spec) == 0 ? 1 : -1;
	if (spank_remote(sp) == 1)
		e = spank_getenv(sp, "SLURM_SPANK_CUDNN", env, sizeof(env)) == ESPANK_SUCCESS ? env
											      : NULL;
	else
		e = getenv("SLURM_SPANK_CUDNN");
	if (e && *e && !valid_spec(e, spec, len)) {
		cvm_err(-CVM_E_USAGE, "SLURM_SPANK_CUDNN '%s': expected a version (9.1, 8.9.7.29), "
			"an installed id or 'pin'", cvm_safe(e));
		return -1;
	}
	if (e && *e)
		return 1;
	return conf.def[0] && cvm_fmt(spec, len, "%s", conf.def) == 0;
}

/* spec "pin": the .cudnn-version of the working folder or one above it, into spec. */
static int pin_spec(char *spec, size_t len)
{
	char cwd[PATH_MAX], file[PATH_MAX];
	int r;

	if (!getcwd(cwd, sizeof(cwd)))
		return cvm_err(-errno, "--cudnn=pin: cannot tell the working folder: %s",
			       cvm_strerror(-errno));
	r = cvm_pin_find(cwd, spec, len, file, sizeof(file));
	if (r == 0)
		return cvm_err(-CVM_E_NOTFOUND, "--cudnn=pin: no .cudnn-version in '%s' or a folder "
			       "above it", cvm_safe(cwd));
	return r < 0 ? r : 0;
}

/*
 * Resolves spec in this machine's store as `cudnnvm env` does; with sp (a
 * task), sets the task's environment; without (where the job is submitted),
 * a machine without a store lets it through. 0, or the error (its message printed
 * on stderr: the user's, in srun, sbatch and the task alike).
 */
static int apply(spank_t sp, const char *want)
{
	struct cvm_ctx ctx = { .root = conf.root, .lock_timeout = -1, .embedded = true };
	const struct cvm_env_var *v;
	char spec[SPEC_MAX], path[PATH_MAX], display[PATH_MAX], id[160], dir[PATH_MAX];
	char old[PATH_MAX * 4], val[PATH_MAX * 5];
	size_t n;
	int r;

	if (conf.broken) {
		r = cvm_err(-CVM_E_USAGE, "--cudnn: the cudnnvm plugin's arguments in plugstack.conf "
			    "are broken (see slurmd's log)");
		goto out;
	}
	r = cvm_fmt(spec, sizeof(spec), "%s", want);
	if (r == 0 && !strcmp(spec, "pin"))
		r = pin_spec(spec, sizeof(spec));
	if (r == 0)
		r = cvm_store_locate(conf.root, conf.store, false, path, sizeof(path), display,
				     sizeof(display));
	if (r < 0)
		goto out;
	ctx.store.plan = &ctx.plan;
	r = cvm_store_open(&ctx.store, path, display, false);
	ctx.store_open = r == 0;
	/*
	 * No store where the job is submitted (a login node without GPUs): the
	 * node decides. On the node, cvm_select_version says nothing is installed.
	 */
	if (r == -ENOENT && !sp) {
		r = 0;
		goto out;
	}
	if (r < 0 && r != -ENOENT)
		goto out;
	r = cvm_env_select(&ctx, "--cudnn", spec, NULL, false, id, sizeof(id), dir, sizeof(dir));
	if (r < 0 || !sp)
		goto out;
	v = cvm_env_vars(&n);
	for (size_t i = 0; i < n && r == 0; i++) {
		spank_err_t e = spank_getenv(sp, v[i].var, old, sizeof(old));

		/* Unset: nothing to keep. Too long to read: refused, never dropped. */
		if (e == ESPANK_ENV_NOEXIST)
			old[0] = '\0';
		else if (e != ESPANK_SUCCESS)
			r = -ENAMETOOLONG;
		if (r == 0)
			r = cvm_env_compose(val, sizeof(val), &v[i], dir, old);
		if (r == 0 && spank_setenv(sp, v[i].var, val, 1) != ESPANK_SUCCESS)
			r = -ENOMEM;
		if (r < 0)
			r = cvm_err(r, "--cudnn=%s: cannot set %s", cvm_safe(want), v[i].var);
	}
out:
	if (ctx.store_open)
		cvm_store_close(&ctx.store);
	return r;
}

/* Where the job is submitted (srun, sbatch, salloc): refused before it is queued. */
int slurm_spank_init_post_opt(spank_t sp, int ac, char **av)
{
	spank_context_t where = spank_context();
	char spec[SPEC_MAX];
	int r;

	(void)ac;
	(void)av;
	if (where != S_CTX_LOCAL && where != S_CTX_ALLOCATOR)
		return 0;
	r = job_spec(sp, spec, sizeof(spec));
	return r <= 0 ? r : apply(NULL, spec) < 0 ? -1 : 0;
}

/* In each task, as the user, in the job's working folder, before it runs: from this node's store. */
int slurm_spank_task_init(spank_t sp, int ac, char **av)
{
	char spec[SPEC_MAX];
	int r;

	(void)ac;
	(void)av;
	r = job_spec(sp, spec, sizeof(spec));
	return r <= 0 ? r : apply(sp, spec) < 0 ? -1 : 0;
}
