/* SPDX-License-Identifier: MIT */
/* exec: run a command with a version selected through its environment. */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cudnnvm/cli.h"
#include "cudnnvm/error.h"
#include "cudnnvm/out.h"
#include "cudnnvm/select.h"
#include "cudnnvm/store.h"

static int prepend(const char *var, const char *dir, const char *sub)
{
	const char *old = getenv(var);
	char val[PATH_MAX * 4];

	if (snprintf(val, sizeof(val), "%s/%s%s%s", dir, sub, old && *old ? ":" : "",
		     old ? old : "") >= (int)sizeof(val))
		return -ENAMETOOLONG;
	return setenv(var, val, 1) < 0 ? -errno : 0;
}

int cvm_cmd_exec(struct cvm_ctx *ctx, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "cuda", required_argument, NULL, 'c' },
		CVM_COMMON_LONGOPTS,
		{ NULL, 0, NULL, 0 }
	};
	const char *cuda = NULL, *spec = NULL;
	char id[160], dir[PATH_MAX];
	int c, r;

	/* Everything after "--" is the command's: options are parsed only before it. */
	int dashes = 1;
	while (dashes < argc && strcmp(argv[dashes], "--"))
		dashes++;
	if (dashes >= argc || dashes + 1 >= argc)
		return cvm_usage("exec", "a command is needed after '--': cudnnvm exec VERSION -- CMD ...");
	while ((c = getopt_long(dashes, argv, CVM_COMMON_SHORTOPTS, opts, NULL)) != -1) {
		if (cvm_cli_common_opt(c))
			continue;
		if (c == 'c') {
			cuda = optarg;
			continue;
		}
		return cvm_usage_bad_option("exec", argv);
	}
	if (dashes - optind > 1)
		return cvm_usage("exec", "at most one VERSION before '--'");
	if (optind < dashes)
		spec = argv[optind];
	optind = dashes + 1;
	r = cvm_select_version(ctx, spec, cuda, id, sizeof(id), dir, sizeof(dir));
	if (r == 0)
		r = cvm_store_check_safe(&ctx->store, id);
	if (r < 0)
		return r;
	if (setenv("CUDNN_PATH", dir, 1) < 0 || setenv("CUDNN_HOME", dir, 1) < 0 ||
	    prepend("LD_LIBRARY_PATH", dir, "lib") < 0 || prepend("LIBRARY_PATH", dir, "lib") < 0 ||
	    prepend("CPATH", dir, "include") < 0)
		return cvm_err(-ENOMEM, "exec: cannot set the environment");
	cvm_verbose("running %s with cuDNN %s", argv[optind], id);
	fflush(NULL);
	execvp(argv[optind], argv + optind);
	/* As env(1) and the shells: 127 when there is no such command, 126 when it cannot run. */
	r = errno;
	cvm_err(-r, "cannot run '%s': %s", cvm_safe(argv[optind]), strerror(r));
	return r == ENOENT || r == ENOTDIR ? 127 : 126;
}
