/* SPDX-License-Identifier: MIT */
#ifndef CUDNNVM_CLI_H
#define CUDNNVM_CLI_H

/* The CLI: main() fills the engine's context (context.h) from the global options and hands it to each command. */
#include <stdbool.h>
#include <stddef.h>

#include "context.h"
#include "fetch.h"
#include "json.h"


/* Flags of the command table: what main() sets up before calling. */
#define CVM_CMD_STORE	(1u << 0)	/* open the store if it exists (readers) */
#define CVM_CMD_WRITE	(1u << 1)	/* create and lock the store */
#define CVM_CMD_SYSTEM	(1u << 2)	/* changes what programs load: root, or a writable --root */
#define CVM_CMD_DRYRUN	(1u << 3)	/* takes --dry-run */
#define CVM_CMD_NOWIN	(1u << 4)	/* needs activation or the loader: not on Windows yet */
#define CVM_CMD_HASH	(1u << 5)	/* hashes files: SHA-256 is made ready (libcrypto loaded) first */

/* Each command: 0 or a negative code (its message already printed). */
int cvm_cmd_install(struct cvm_ctx *ctx, int argc, char **argv);
int cvm_cmd_list(struct cvm_ctx *ctx, int argc, char **argv);
int cvm_cmd_verify(struct cvm_ctx *ctx, int argc, char **argv);
int cvm_cmd_uninstall(struct cvm_ctx *ctx, int argc, char **argv);
int cvm_cmd_toolkits(struct cvm_ctx *ctx, int argc, char **argv);
int cvm_cmd_use(struct cvm_ctx *ctx, int argc, char **argv);
int cvm_cmd_current(struct cvm_ctx *ctx, int argc, char **argv);
int cvm_cmd_rollback(struct cvm_ctx *ctx, int argc, char **argv);
int cvm_cmd_history(struct cvm_ctx *ctx, int argc, char **argv);
int cvm_cmd_env(struct cvm_ctx *ctx, int argc, char **argv);
int cvm_cmd_exec(struct cvm_ctx *ctx, int argc, char **argv);
int cvm_cmd_adopt(struct cvm_ctx *ctx, int argc, char **argv);
int cvm_cmd_smoke(struct cvm_ctx *ctx, int argc, char **argv);
int cvm_cmd_doctor(struct cvm_ctx *ctx, int argc, char **argv);
int cvm_cmd_fetch(struct cvm_ctx *ctx, int argc, char **argv);
int cvm_cmd_update(struct cvm_ctx *ctx, int argc, char **argv);
int cvm_cmd_mirror(struct cvm_ctx *ctx, int argc, char **argv);
int cvm_cmd_cache(struct cvm_ctx *ctx, int argc, char **argv);
int cvm_cmd_export(struct cvm_ctx *ctx, int argc, char **argv);
int cvm_cmd_which(struct cvm_ctx *ctx, int argc, char **argv);
int cvm_cmd_ps(struct cvm_ctx *ctx, int argc, char **argv);
int cvm_cmd_prefix(struct cvm_ctx *ctx, int argc, char **argv);
int cvm_cmd_modulefiles(struct cvm_ctx *ctx, int argc, char **argv);

int cvm_cmd_local(struct cvm_ctx *ctx, int argc, char **argv);

/* With --user, system activation is refused: -CVM_E_PERM (printed) or 0. */
int cvm_cli_refuse_user(const struct cvm_ctx *ctx, const char *cmd);

/*
 * Shared option handling: the output options accepted after the command
 * too (--json, -q, -v). Returns 1 when c was one of them.
 */
int cvm_cli_common_opt(int c);
#define CVM_COMMON_LONGOPTS \
	{ "json", no_argument, NULL, 'J' }, \
	{ "quiet", no_argument, NULL, 'q' }, \
	{ "verbose", no_argument, NULL, 'v' }
#define CVM_COMMON_SHORTOPTS "qv"
/*
 * --dry-run, for the commands that change things (install, use, rollback,
 * uninstall, adopt): main() sees it before the store is opened (plan.h);
 * cvm_cli_common_opt() accepts it.
 */
#define CVM_OPT_DRY_RUN 0x100	/* no letter: a command's own 'n' (smoke --no-gpu) stays its own */
#define CVM_DRYRUN_LONGOPT { "dry-run", no_argument, NULL, CVM_OPT_DRY_RUN }

/*
 * A command's own next option: getopt_long over CVM_COMMON_SHORTOPTS and opts
 * (which hold CVM_COMMON_LONGOPTS), the common options taken on the way
 * (cvm_cli_common_opt). -1 after the last, '?' for an unknown option or a
 * missing argument (cvm_usage_bad_option words it); optarg as getopt sets it.
 */
struct option;
int cvm_cli_getopt(int argc, char **argv, const struct option *opts);

/*
 * The options of a command whose only own one is --cuda X.Y (current, which,
 * prefix): its text into *cuda, unchecked (the toolkit selection checks it),
 * *cuda left as it is when not given. 0, or -CVM_E_USAGE printed.
 */
int cvm_cli_cuda_only(const char *cmd, int argc, char **argv, const char **cuda);

/* Prints "<cmd>: <what>" usage error and returns -CVM_E_USAGE. */
int cvm_usage_bad_option(const char *cmd, char **argv);
/* After the options of a command that takes no operand, when argv[optind] is one. */
int cvm_usage_unexpected(const char *cmd, char **argv);
int cvm_usage(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/*
 * The one parser of numeric options: s must be a decimal integer (digits
 * only, '-' only when min < 0) from min to max. 0 and *out set, or
 * -CVM_E_USAGE printed as "<cmd>: <opt> '<s>': expected a whole number ...".
 */
int cvm_cli_number(const char *cmd, const char *opt, const char *s, long min, long max, long *out);

/*
 * use's and rollback's options: --cuda X.Y (into *cuda), --no-smoke,
 * --no-ldconfig (into o). Returns 1 when c was one of them.
 */
struct cvm_activate_opts;
#define CVM_ACTIVATE_LONGOPTS \
	{ "cuda", required_argument, NULL, 'c' }, \
	{ "no-smoke", no_argument, NULL, 'S' }, \
	{ "no-ldconfig", no_argument, NULL, 'L' }
int cvm_cli_activate_opt(int c, const char *arg, const char **cuda, struct cvm_activate_opts *o);

/*
 * use's work after its options (cmd_use.c), also install --use's: spec (a
 * VERSION or an id) resolved to an installed version, activated for tk with
 * o (the smoke test, rollback on failure: activate.c), and the result said
 * (use's JSON document with --json). 0 or a negative code, printed.
 */
struct cvm_toolkit;
int cvm_cli_use(struct cvm_ctx *ctx, const struct cvm_toolkit *tk, const char *spec,
		const struct cvm_activate_opts *o);

/*
 * use's and rollback's JSON document (cuda, toolkit, id, previous, smoke),
 * made this run's document. *smoke, the smoke test's (cvm_activate_opts), is
 * taken when the test ran (then NULL), else "smoke" is null. 0 or -ENOMEM.
 */
int cvm_cli_use_json(const char *cuda, const struct cvm_toolkit *tk, const char *id,
		     const char *previous, cvm_json **smoke);

/* install's and fetch's --connect-timeout ('C'), --low-speed-time ('L'), --retries ('R'). */
/* The download options cvm_cli_fetch_opt takes, for every command that downloads. */
#define CVM_FETCH_LONGOPTS \
	{ "connect-timeout", required_argument, NULL, 'C' }, \
	{ "low-speed-time", required_argument, NULL, 'L' }, \
	{ "retries", required_argument, NULL, 'R' }
int cvm_cli_fetch_opt(const char *cmd, int c, const char *arg, struct cvm_fetch_opts *fo);

/*
 * An active link that names no whole installed version (cvm_active_each_broken)
 * into doc's "broken_active" array, made at the first: list and verify --json
 * keep their documented shape while every link is whole. doc may be NULL.
 */
void cvm_cli_broken_json(cvm_json *doc, const char *cuda, const char *id, const char *why);


/*
 * The VERSION a command (use, install) works on: given, or else the one
 * .cudnn-version in the working folder or a parent pins (said on stdout,
 * naming the file; buf holds it). 0 and *spec set, or a negative code
 * (printed; -CVM_E_USAGE when there is neither). In main.c, beside cvm_usage.
 */
int cvm_pin_spec(const char *cmd, const char *given, char *buf, size_t len, const char **spec);

#endif
