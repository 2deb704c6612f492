/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cudnnvm/cli.h"
#include "cudnnvm/error.h"
#include "cudnnvm/fsutil.h"
#include "cudnnvm/json.h"
#include "cudnnvm/out.h"
#include "cudnnvm/smoke.h"

#define CVM_VERSION_STRING "0.1.0"

struct command {
	const char *name;
	int (*run)(struct cvm_ctx *ctx, int argc, char **argv);
	unsigned flags;
	const char *summary;
};

/* The dispatcher opens and locks the store as each command's flags say. */
static const struct command commands[] = {
	{ "install", cvm_cmd_install, CVM_CMD_WRITE, "install a cuDNN release into the store" },
	{ "fetch", cvm_cmd_fetch, CVM_CMD_WRITE, "download an archive into the cache only" },
	{ "cache", cvm_cmd_cache, CVM_CMD_WRITE, "the downloaded archives: cache list | cache clean [--all]" },
	{ "list", cvm_cmd_list, CVM_CMD_STORE, "installed versions (--available: the catalogue)" },
	{ "verify", cvm_cmd_verify, CVM_CMD_STORE, "re-hash installed files against their record" },
	{ "uninstall", cvm_cmd_uninstall, CVM_CMD_WRITE, "remove an installed version" },
	{ "use", cvm_cmd_use, CVM_CMD_WRITE, "activate an installed version for a CUDA toolkit" },
	{ "current", cvm_cmd_current, CVM_CMD_STORE, "the active version per toolkit" },
	{ "rollback", cvm_cmd_rollback, CVM_CMD_WRITE, "re-activate the previous version" },
	{ "history", cvm_cmd_history, CVM_CMD_STORE, "the activation journal" },
	{ "env", cvm_cmd_env, CVM_CMD_STORE, "print the environment that selects a version" },
	{ "exec", cvm_cmd_exec, CVM_CMD_STORE, "run a command with a version selected" },
	{ "adopt", cvm_cmd_adopt, CVM_CMD_WRITE, "bring a hand-copied cuDNN under management" },
	{ "smoke", cvm_cmd_smoke, CVM_CMD_STORE, "the GPU smoke test of what programs load now" },
	{ "doctor", cvm_cmd_doctor, CVM_CMD_STORE, "every cuDNN copy, which one loads, and what is wrong" },
	{ "toolkits", cvm_cmd_toolkits, 0, "the CUDA toolkits found" },
	{ "export", cvm_cmd_export, CVM_CMD_WRITE, "write an installed version as a store bundle" },
	{ "which", cvm_cmd_which, CVM_CMD_STORE, "the cuDNN library a toolkit's programs load, and why" },
	{ "prefix", cvm_cmd_prefix, CVM_CMD_STORE, "the folder of an installed version" },
	{ "modulefiles", cvm_cmd_modulefiles, CVM_CMD_STORE, "write Lmod/Tcl modulefiles of the installed versions" },
};

static void usage(FILE *f)
{
	fprintf(f,
		"usage: cudnnvm [--root DIR] [--store DIR] [--manifests DIR] [--json] [-q|-v]\n"
		"               [--no-wait | --lock-timeout SEC] COMMAND [ARGS]\n\ncommands:\n");
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		fprintf(f, "  %-12s %s\n", commands[i].name, commands[i].summary);
	fprintf(f, "\nexit codes: 0 ok, 1 failure, 2 usage, 3 integrity, 4 smoke test, "
		   "5 locked, 77 GPU part skipped\n");
}

int cvm_cli_common_opt(int c)
{
	switch (c) {
	case 'J':
		cvm_out.json = true;
		return 1;
	case 'q':
		cvm_out.verbosity = -1;
		return 1;
	case 'v':
		cvm_out.verbosity++;
		return 1;
	default:
		return 0;
	}
}

int cvm_usage(const char *cmd, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (!strcmp(cmd, "cudnnvm"))
		return cvm_err(-CVM_E_USAGE, "%s (see 'cudnnvm --help')", msg);
	return cvm_err(-CVM_E_USAGE, "%s: %s (see 'cudnnvm --help')", cmd, msg);
}

/* After getopt_long returned '?' (opterr is 0: we word the message). */
int cvm_usage_bad_option(const char *cmd, char **argv)
{
	if (optopt && optopt != '?')
		return cvm_usage(cmd, "unknown option '-%c' or missing argument", optopt);
	return cvm_usage(cmd, "unknown option '%s' or missing argument", cvm_safe(argv[optind - 1]));
}

int cvm_cli_refuse_user(const struct cvm_ctx *ctx, const char *cmd)
{
	if (!ctx->user)
		return 0;
	return cvm_err(-CVM_E_PERM, "%s: with --user nothing system-wide is changed: select a "
		       "version through the environment with 'cudnnvm env' or 'cudnnvm exec'", cmd);
}

int cvm_root_path(const struct cvm_ctx *ctx, char *buf, size_t len, const char *path)
{
	return cvm_fmt(buf, len, "%s%s", ctx->root, path);
}

/* "" for the real root; otherwise an absolute path without a trailing slash. */
static int set_root(struct cvm_ctx *ctx, const char *arg, char **owned)
{
	char *abs;

	if (!*arg)
		return cvm_usage("--root", "empty path");
	abs = realpath(arg, NULL);
	if (!abs)
		return cvm_err(-errno, "--root '%s': %s", cvm_safe(arg), strerror(errno));
	if (!strcmp(abs, "/"))
		abs[0] = '\0';
	free(*owned);
	*owned = abs;
	ctx->root = abs;
	return 0;
}

static int parse_seconds(const char *s, double *out)
{
	char *end;
	double d;

	errno = 0;
	d = strtod(s, &end);
	if (errno || end == s || *end || d < 0 || d > 86400 * 7)
		return cvm_usage("--lock-timeout", "'%s' is not a number of seconds", cvm_safe(s));
	*out = d;
	return 0;
}

static int store_paths(struct cvm_ctx *ctx, const char *store_arg, char *path, size_t plen,
		       char *display, size_t dlen)
{
	const char *home, *xdg = getenv("XDG_DATA_HOME");
	size_t rl = strlen(ctx->root);
	int r;

	if (store_arg && *store_arg) {
		r = cvm_fmt(path, plen, "%s", store_arg);
	} else if (ctx->user) {
		home = getenv("HOME");
		if (!home || !*home)
			return cvm_err(-ENOENT, "--user: HOME is not set");
		r = xdg && *xdg ? cvm_fmt(path, plen, "%s/cudnnvm", xdg)
				: cvm_fmt(path, plen, "%s/.local/share/cudnnvm", home);
	} else {
		r = cvm_root_path(ctx, path, plen, "/opt/cudnnvm");
	}
	if (r < 0)
		return cvm_err(r, "store path too long");
	/* Shown as seen inside the root when it lies there. */
	if (rl && !strncmp(path, ctx->root, rl) && path[rl] == '/')
		return cvm_fmt(display, dlen, "%s", path + rl);
	return cvm_fmt(display, dlen, "%s", path);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "root", required_argument, NULL, 'R' },
		{ "store", required_argument, NULL, 'S' },
		{ "manifests", required_argument, NULL, 'M' },
		{ "mirror", required_argument, NULL, 'U' },
		{ "user", no_argument, NULL, 'u' },
		{ "no-wait", no_argument, NULL, 'N' },
		{ "lock-timeout", required_argument, NULL, 'T' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		CVM_COMMON_LONGOPTS,
		{ NULL, 0, NULL, 0 }
	};
	struct cvm_ctx ctx = { .root = "", .lock_timeout = -1 };
	const struct command *cmd = NULL;
	char *root_owned = NULL;
	const char *store_arg = getenv("CUDNNVM_STORE");
	char spath[4096], sdisplay[4096];
	int c, r = 0;

	/* What cudnnvm creates must be readable by every user, whatever the caller's umask. */
	umask(022);
	if (argc >= 2 && !strcmp(argv[1], "__smoke-child"))
		return cvm_smoke_child(argc - 1, argv + 1);
	opterr = 0;
	ctx.manifests = getenv("CUDNNVM_MANIFESTS");
	ctx.mirror = getenv("CUDNNVM_MIRROR");
	/* "+": stop at the command; its own options are its own. */
	while ((c = getopt_long(argc, argv, "+hV" CVM_COMMON_SHORTOPTS, opts, NULL)) != -1) {
		if (cvm_cli_common_opt(c))
			continue;
		switch (c) {
		case 'R':
			r = set_root(&ctx, optarg, &root_owned);
			break;
		case 'S':
			store_arg = optarg;
			break;
		case 'M':
			ctx.manifests = optarg;
			break;
		case 'U':
			ctx.mirror = optarg;
			break;
		case 'u':
			ctx.user = true;
			break;
		case 'N':
			ctx.lock_timeout = 0;
			break;
		case 'T':
			r = parse_seconds(optarg, &ctx.lock_timeout);
			break;
		case 'h':
			usage(stdout);
			goto out;
		case 'V':
			printf("cudnnvm %s\n", CVM_VERSION_STRING);
			goto out;
		default:
			r = cvm_usage_bad_option("cudnnvm", argv);
			break;
		}
		if (r < 0)
			goto out;
	}
	if (optind >= argc) {
		usage(stderr);
		r = -CVM_E_USAGE;
		goto out;
	}
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (!strcmp(argv[optind], commands[i].name))
			cmd = &commands[i];
	if (!cmd) {
		r = cvm_err(-CVM_E_USAGE, "unknown command '%s' (see 'cudnnvm --help')",
			    cvm_safe(argv[optind]));
		goto out;
	}
	if (cmd->flags & (CVM_CMD_STORE | CVM_CMD_WRITE)) {
		r = store_paths(&ctx, store_arg, spath, sizeof(spath), sdisplay, sizeof(sdisplay));
		if (r < 0)
			goto out;
		r = cvm_store_open(&ctx.store, spath, sdisplay, cmd->flags & CVM_CMD_WRITE);
		if (r == 0)
			ctx.store_open = true;
		else if (r == -ENOENT && !(cmd->flags & CVM_CMD_WRITE))
			r = 0;	/* no store yet: readers see it empty */
		else
			goto out;
		if (cmd->flags & CVM_CMD_WRITE) {
			r = cvm_store_check_safe(&ctx.store, NULL);
			if (r == 0)
				r = cvm_store_lock(&ctx.store, ctx.lock_timeout);
			if (r < 0)
				goto out;
		}
	}
	argv += optind;
	argc -= optind;
	optind = 0;	/* a full reset for the command's getopt */
	r = cmd->run(&ctx, argc, argv);
	/* A command's own positive status (doctor's 1: problems found) is its exit code. */
	if (r > 0) {
		if (cvm_out.json)
			cvm_json_finish(0, NULL);
		if (ctx.store_open)
			cvm_store_close(&ctx.store);
		free(root_owned);
		return r;
	}
out:
	if (cvm_out.json) {
		const char *msg = cvm_err_first();
		cvm_json_finish(cvm_exit_code(r), msg ? msg : cvm_strerror(r));
	}
	if (ctx.store_open)
		cvm_store_close(&ctx.store);
	free(root_owned);
	return cvm_exit_code(r);
}
