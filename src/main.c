/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <limits.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "activate.h"
#include "cli.h"
#include "config.h"
#include "digest.h"
#include "error.h"
#include "fsutil.h"
#include "json.h"
#include "manifest.h"
#include "out.h"
#include "plan.h"
#include "select.h"
#include "smoke.h"
#include "store.h"
#include "version.h"

#define CVM_VERSION_STRING "0.1.0"

struct command {
	const char *name;
	int (*run)(struct cvm_ctx *ctx, int argc, char **argv);
	unsigned flags;
	const char *summary;
	const char *usage;	/* after "cudnnvm " */
	const char *options;	/* one "  --opt ARG   what" per line; NULL: none */
	const char *example;
};

#define CUDA_OPT "  --cuda X.Y           the CUDA toolkit (default: the one /usr/local/cuda points to)\n"
#define SMOKE_OPTS "  --no-smoke           skip the smoke test\n" \
		   "  --no-ldconfig        do not run ldconfig\n"
#define DRY_OPT "  --dry-run            print every change it would make, make none (checks run)\n"
#define FETCH_OPTS "  --connect-timeout S  seconds to wait for a connection (default 30)\n" \
		   "  --low-speed-time S   give up below 1 KiB/s for S seconds (default 60)\n" \
		   "  --retries N          retries of a transient download error (default 4)\n"

/*
 * The dispatcher opens and locks the store as each command's flags say.
 * This table is also every command's --help (and the man page follows it).
 */
static const struct command commands[] = {
	{ "install", cvm_cmd_install, CVM_CMD_WRITE | CVM_CMD_DRYRUN | CVM_CMD_HASH, "install a cuDNN release into the store",
	  "install [VERSION] [--cuda X.Y] [--archive FILE | --bundle FILE|URL] [--sha256 HEX] [--use [--no-smoke]] [--dry-run] [OPTIONS]",
	  CUDA_OPT
	  "  --archive FILE       the archive to install (default: the cache, else the mirror)\n"
	  "  --sha256 HEX         install an archive no manifest lists, checked against HEX\n"
	  "  --platform P         linux-x86_64, linux-sbsa, windows-x86_64... (default: this host)\n"
	  "  --force              reinstall an installed version, or install a different archive\n"
	  "                       over it\n"
	  "  --use                then activate it as 'cudnnvm use' does (smoke test included)\n"
	  "  --no-smoke           with --use: skip the smoke test\n"
	  "  --no-ldconfig        with --use: do not run ldconfig\n"
	  "  --jobs N             xz decoder threads, 1 to 256 (default: one per CPU; CUDNNVM_JOBS)\n"
	  "  --verify-first       hash the whole archive before decoding a byte\n"
	  "                       (CUDNNVM_VERIFY_FIRST=1)\n"
	  "  --offline            never download: the cache or --archive only\n"
	  "  --bundle FILE|URL    install a store bundle ('cudnnvm export'); a URL needs --sha256\n"
	  "  --prefer-bundles     first the mirror's bundles/<id>.tar.zst (or .tar), made by\n"
	  "                       'cudnnvm export' from NVIDIA's archive the catalogue names\n"
	  "  --for PY             the newest release the frameworks of PY's environment take\n"
	  DRY_OPT
	  FETCH_OPTS
	  "VERSION is 9, 9.1, 9.1.1 or 9.1.1.17 (the newest match); left out, .cudnn-version decides.\n",
	  "cudnnvm install 8.9.7 --cuda 11.8 --archive cudnn-linux-x86_64-8.9.7.29_cuda11-archive.tar.xz" },
	{ "fetch", cvm_cmd_fetch, CVM_CMD_WRITE | CVM_CMD_HASH, "download an archive into the cache only",
	  "fetch VERSION --cuda X.Y [--platform P] [OPTIONS]",
	  "  --cuda X.Y           the CUDA version the archive is for (required)\n"
	  "  --platform P         linux-x86_64, linux-sbsa, windows-x86_64... (default: this host)\n"
	  FETCH_OPTS,
	  "cudnnvm fetch 9.1 --cuda 12.4" },
	{ "update", cvm_cmd_update, CVM_CMD_WRITE | CVM_CMD_DRYRUN | CVM_CMD_HASH, "add the mirror's newer release manifests to the catalogue",
	  "update [--offline] [--dry-run] [OPTIONS]",
	  "  --offline            read nothing from the mirror: check STORE/catalogue\n"
	  DRY_OPT FETCH_OPTS
	  "Reads the mirror's folder listing, fetches each redistrib_X.Y.Z.json, checks it and\n"
	  "keeps those that add releases in STORE/catalogue (install never fetches manifests).\n"
	  "A manifest that changes an archive of a known release is refused (exit 3).\n",
	  "cudnnvm --mirror file:///srv/cudnn update" },
	{ "mirror", cvm_cmd_mirror, CVM_CMD_STORE | CVM_CMD_HASH, "a mirror folder for air-gapped machines",
	  "mirror DIR [VERSION...] [--cuda X.Y...] [--platform P...] [OPTIONS]",
	  "  --cuda X.Y           only builds for this CUDA major (repeatable)\n"
	  "  --platform P         only builds for this platform (repeatable)\n"
	  FETCH_OPTS
	  "Writes redistrib_<release>.json and each archive at its relative_path, as NVIDIA's\n"
	  "server does, verified; a second run fetches only what is missing. Other machines:\n"
	  "--mirror file://DIR (or DIR served over HTTP), then update and install.\n",
	  "cudnnvm mirror /srv/cudnn 9.27 --cuda 12.4 --platform linux-x86_64" },
	{ "cache", cvm_cmd_cache, CVM_CMD_WRITE | CVM_CMD_HASH, "the downloaded archives: cache list | cache clean [--all]",
	  "cache list | cache clean [--all]",
	  "  --all                clean: remove every archive, not only those of installed versions\n",
	  "cudnnvm cache clean" },
	{ "list", cvm_cmd_list, CVM_CMD_STORE, "installed versions (--available: the catalogue)",
	  "list [--available] [--cuda X.Y] [--platform P]",
	  "  --available          the catalogue (every release the manifests know)\n"
	  "  --cuda X.Y           only builds for this CUDA major\n"
	  "  --platform P         --available: builds for this platform (default: this host)\n",
	  "cudnnvm list --available --cuda 12.4" },
	{ "verify", cvm_cmd_verify, CVM_CMD_STORE | CVM_CMD_HASH, "re-hash installed files against their record",
	  "verify [VERSION] [--cuda X.Y]",
	  "  --cuda X.Y           only versions for this CUDA major\n",
	  "cudnnvm verify 8.9.7" },
	{ "uninstall", cvm_cmd_uninstall, CVM_CMD_WRITE | CVM_CMD_DRYRUN, "remove an installed version",
	  "uninstall VERSION [--cuda X.Y] [--platform P] [--force] [--dry-run]",
	  "  --cuda X.Y           the build for this CUDA major\n"
	  "  --platform P         the build for this platform\n"
	  "  --force              also when active (the most recently active other installed\n"
	  "                       version comes back, named first) or mapped by running processes\n"
	  DRY_OPT,
	  "cudnnvm uninstall 8.9.6 --cuda 11.8" },
	{ "use", cvm_cmd_use, CVM_CMD_WRITE | CVM_CMD_SYSTEM | CVM_CMD_DRYRUN, "activate an installed version for a CUDA toolkit",
	  "use [VERSION | --for PY] [--cuda X.Y] [--no-smoke] [--no-ldconfig] [--force] [--dry-run]",
	  CUDA_OPT SMOKE_OPTS
	  "  --force              also when the toolkit lacks a library the version needs to load\n"
	  DRY_OPT
	  "  --for PY             the newest installed version the frameworks of PY's\n"
	  "                       environment (PyTorch, TensorFlow, JAX...) all take\n"
	  "A version that needs a library the loader would not find (libcublasLt, libnvrtc...) is\n"
	  "refused (exit 4), naming it and where the loader would look.\n"
	  "Needs root (it changes the toolkit). Without root: 'cudnnvm env' or 'cudnnvm exec'.\n"
	  "VERSION left out: .cudnn-version (in this folder or a parent) decides.\n",
	  "cudnnvm use 9.1 --cuda 12.4" },
	{ "current", cvm_cmd_current, CVM_CMD_STORE, "the active version per toolkit",
	  "current [--cuda X.Y]",
	  "  --cuda X.Y           only this toolkit\n",
	  "cudnnvm current --json" },
	{ "rollback", cvm_cmd_rollback, CVM_CMD_WRITE | CVM_CMD_SYSTEM | CVM_CMD_DRYRUN, "re-activate the previous version",
	  "rollback [--cuda X.Y] [--no-smoke] [--no-ldconfig] [--dry-run]",
	  CUDA_OPT SMOKE_OPTS DRY_OPT,
	  "cudnnvm rollback --cuda 12.4" },
	{ "history", cvm_cmd_history, CVM_CMD_STORE, "the activation journal",
	  "history [--cuda X.Y]",
	  "  --cuda X.Y           only this toolkit's journal\n",
	  "cudnnvm history --cuda 11.8" },
	{ "env", cvm_cmd_env, CVM_CMD_STORE, "print the environment that selects a version",
	  "env [VERSION] [--cuda X.Y] [--shell sh|fish|pwsh] [--force]",
	  CUDA_OPT
	  "  --shell SH           sh (also bash, zsh), fish or pwsh (default sh)\n"
	  "  --force              even a version whose last smoke test failed\n"
	  "VERSION left out: .cudnn-version, else the version active for the toolkit. Of several\n"
	  "builds that match, the active one wins, then one whose last smoke test passed, then\n"
	  "the newest (-v says which and why). A version whose last smoke test failed is refused\n"
	  "(exit 4) unless --force.\n",
	  "eval \"$(cudnnvm --user env 9.1 --cuda 12.4)\"" },
	{ "exec", cvm_cmd_exec, CVM_CMD_STORE, "run a command with a version selected",
	  "exec [VERSION] [--cuda X.Y] [--force] -- CMD [ARGS...]",
	  CUDA_OPT
	  "  --force              even a version whose last smoke test failed\n"
	  "Exits with CMD's status; 127 when CMD is not found, 126 when it cannot be run.\n"
	  "The version is chosen as env chooses it (a failed last smoke test: exit 4 unless\n"
	  "--force). When CMD would load cuDNN from elsewhere first (LD_PRELOAD, or a Python\n"
	  "package's own copy under site-packages/nvidia/cudnn), it is said once on stderr.\n"
	  "When CMD is a Python (or a script whose shebang is) whose environment holds a\n"
	  "framework VERSION cannot serve, exec refuses (exit 1) unless --force.\n",
	  "cudnnvm exec 8.9.7 --cuda 11.8 -- python train.py" },
	{ "local", cvm_cmd_local, 0, "pin a version for this folder (.cudnn-version)",
	  "local [VERSION | --unset]",
	  "  --unset              remove the pin here (only one 'cudnnvm local' wrote)\n"
	  "Writes .cudnn-version here: env, exec, use and install in this folder and below\n"
	  "take their VERSION from it when none is given. Without VERSION: the pin in effect.\n",
	  "cudnnvm local 9.1" },
	{ "adopt", cvm_cmd_adopt, CVM_CMD_WRITE | CVM_CMD_SYSTEM | CVM_CMD_DRYRUN | CVM_CMD_HASH, "bring a hand-copied cuDNN under management",
	  "adopt [--cuda X.Y] [--no-ldconfig] [--dry-run]",
	  CUDA_OPT
	  "  --no-ldconfig        do not run ldconfig\n"
	  DRY_OPT,
	  "cudnnvm adopt --cuda 11.8" },
	{ "smoke", cvm_cmd_smoke, CVM_CMD_STORE, "the GPU smoke test of what programs load now",
	  "smoke [--cuda X.Y] [--no-gpu] [--device N | --all-devices]",
	  CUDA_OPT
	  "  --no-gpu             the loader part only\n"
	  "  --device N           run the GPU part on device N (default 0)\n"
	  "  --all-devices        run it on every device\n"
	  "Exit 4: failed; 77: the loader part passed, no usable GPU for the rest.\n",
	  "cudnnvm smoke --cuda 12.4" },
	{ "doctor", cvm_cmd_doctor, CVM_CMD_STORE, "every cuDNN copy, which one loads, and what is wrong",
	  "doctor [--python PY]...",
	  "  --python PY          check the frameworks of PY's environment (an interpreter or\n"
	  "                       its folder; repeatable); default: python3 on PATH, the\n"
	  "                       active venv and conda env, ~/.conda/envs, /opt/conda/envs\n"
	  "Exit 1 when it found something to fix; each finding says what and how.\n",
	  "cudnnvm doctor" },
	{ "toolkits", cvm_cmd_toolkits, 0, "the CUDA toolkits found",
	  "toolkits",
	  NULL,
	  "cudnnvm toolkits --json" },
	{ "export", cvm_cmd_export, CVM_CMD_WRITE | CVM_CMD_HASH, "write an installed version as a store bundle",
	  "export VERSION FILE [--cuda X.Y] [--format tar|tar.zst]",
	  "  --cuda X.Y           the CUDA major, when VERSION names builds for several\n"
	  "  --format F           tar or tar.zst (default: tar for a FILE ending in .tar, else tar.zst)\n"
	  "Every file is re-hashed against the version's record as it is written; the bundle's\n"
	  "SHA-256 is printed, for 'install --bundle FILE --sha256 HEX' on the next node.\n",
	  "cudnnvm export 8.9.7 --cuda 11.8 cudnn-8.9.7.29-cuda11.tar.zst" },
	{ "which", cvm_cmd_which, CVM_CMD_STORE, "the cuDNN library a toolkit's programs load, and why",
	  "which [--cuda X.Y]",
	  CUDA_OPT,
	  "cudnnvm which --cuda 12.4" },
	{ "ps", cvm_cmd_ps, CVM_CMD_STORE, "running processes that map cuDNN, and the copies they map",
	  "ps",
	  "Every process whose maps hold a libcudnn* file (on Windows: that has a cudnn*.dll loaded;\n"
	  "its image path stands for the command): its PID, command and the files grouped\n"
	  "by copy (store version, toolkit, wheel, conda env, system folder, unknown). A process\n"
	  "mapping more than one copy is flagged MIXED; a store version no toolkit has active,\n"
	  "NOT ACTIVE. Without root only your own processes can be read (the others are counted).\n",
	  "cudnnvm ps --json" },
	{ "prefix", cvm_cmd_prefix, CVM_CMD_STORE, "the folder of an installed version",
	  "prefix [VERSION] [--cuda X.Y]",
	  CUDA_OPT
	  "VERSION is resolved as env and exec do; left out, .cudnn-version or the active version.\n",
	  "cudnnvm prefix 9.1 --cuda 12.4" },
	{ "modulefiles", cvm_cmd_modulefiles, CVM_CMD_STORE | CVM_CMD_NOWIN,
	  "write Lmod/Tcl modulefiles of the installed versions",
	  "modulefiles DIR [--format lua|tcl] [--default ID]",
	  "  --format F           lua (Lmod, the default) or tcl (Environment Modules)\n"
	  "  --default ID         the version 'module load cudnn' picks\n"
	  "DIR is made when missing.\n",
	  "cudnnvm modulefiles /opt/modulefiles --default 9.1" },
	{ "help", NULL, 0, "help for a command: help COMMAND",
	  "help [COMMAND]",
	  NULL,
	  "cudnnvm help install" },
};

#define N_COMMANDS (sizeof(commands) / sizeof(commands[0]))

static void usage(FILE *f)
{
	if (f == stdout)
		cvm_out.json = false;	/* help is text: no document follows it */
	fprintf(f,
		"usage: cudnnvm [--root DIR] [--store DIR] [--user] [--manifests DIR] [--mirror URL]\n"
		"               [--json] [-q|-v] [--no-wait | --lock-timeout SEC] COMMAND [ARGS]\n"
		"\ncommands:\n");
	/* One column for the summaries, as wide as the longest name needs. */
	int w = 0;

	for (size_t i = 0; i < N_COMMANDS; i++)
		if ((int)strlen(commands[i].name) > w)
			w = (int)strlen(commands[i].name);
	for (size_t i = 0; i < N_COMMANDS; i++)
		fprintf(f, "  %-*s  %s\n", w, commands[i].name, commands[i].summary);
	fprintf(f, "\n'cudnnvm COMMAND --help' or 'cudnnvm help COMMAND': its options and an example;"
		   " 'man cudnnvm': all of it.\n"
		   "exit codes: 0 ok, 1 failure, 2 usage, 3 integrity, 4 smoke test, "
		   "5 locked, 77 GPU part skipped\n");
}

/* Prints the lines of text that are (indented) or are not (notes) option lines. */
static void print_lines(const char *text, bool indented)
{
	for (const char *p = text; p && *p;) {
		size_t n = strcspn(p, "\n");
		if ((p[0] == ' ') == indented)
			printf("%.*s\n", (int)n, p);
		p += n + (p[n] == '\n');
	}
}

static void command_help(const struct command *cmd)
{
	/* Help is text, --json or not: no document follows it. */
	cvm_out.json = false;
	printf("usage: cudnnvm [GLOBAL OPTIONS] %s\n\n%s.\n", cmd->usage, cmd->summary);
	printf("\noptions:\n");
	print_lines(cmd->options, true);
	printf("  --json, -q, -v       JSON on stdout, quieter, more verbose (here or before COMMAND)\n"
	       "  -h, --help           this help\n");
	/* Notes (lines not indented) after the options. */
	for (const char *p = cmd->options; p && *p; p = strchr(p, '\n') + 1) {
		if (*p != ' ') {
			putchar('\n');
			print_lines(cmd->options, false);
			break;
		}
	}
	printf("\nexample:\n  %s\n\nglobal options (--root, --store, --user, --lock-timeout...): "
	       "'cudnnvm --help'\n", cmd->example);
}

static const struct command *find_command(const char *name)
{
	for (size_t i = 0; i < N_COMMANDS; i++)
		if (!strcmp(name, commands[i].name))
			return &commands[i];
	return NULL;
}

/* --help or -h among a command's own arguments (not after "--": those are exec's CMD's). */
static bool wants_help(int argc, char **argv)
{
	for (int i = 1; i < argc && strcmp(argv[i], "--"); i++)
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h"))
			return true;
	return false;
}

/*
 * --dry-run among a command's own arguments, seen before the store is opened,
 * as getopt_long will see it: abbreviated too ("--dry"; "--d" is no other
 * option of the commands that take it).
 */
static bool wants_dry_run(int argc, char **argv)
{
	for (int i = 1; i < argc && strcmp(argv[i], "--"); i++) {
		size_t n = strlen(argv[i]);
		if (n >= 3 && !strncmp(argv[i], "--dry-run", n))
			return true;
	}
	return false;
}

/* The document of this run, with a dry run's changes, printed once. */
static void json_finish(struct cvm_plan *plan, int code, const char *msg)
{
	cvm_plan_json(plan, cvm_json_document());
	cvm_json_finish(code, msg);
}

static int help(int argc, char **argv)
{
	const struct command *cmd;

	if (argc < 2) {
		usage(stdout);
		return 0;
	}
	if (argc > 2)
		return cvm_usage("help", "one COMMAND at most");
	cmd = find_command(argv[1]);
	if (!cmd)
		return cvm_err(-CVM_E_USAGE, "unknown command '%s' (see 'cudnnvm --help')",
			       cvm_safe(argv[1]));
	command_help(cmd);
	return 0;
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
	case CVM_OPT_DRY_RUN:
		/* Set already: main saw it before the command ran (wants_dry_run). */
		return 1;
	default:
		return 0;
	}
}

/* An error cvm_cli_getopt said already: cvm_usage_bad_option returns it, unsaid again. */
static int getopt_said;
static int after_options(int argc, char **argv);

int cvm_cli_getopt(int argc, char **argv, const struct option *opts)
{
	int c, li, major;

	for (;;) {
		li = -1;
		c = getopt_long(argc, argv, CVM_COMMON_SHORTOPTS, opts, &li);
		if (c == -1)
			break;
		/* --cuda's form is checked here for every command: X.Y, X or X.x, else exit 2. */
		if (c != '?' && li >= 0 && !strcmp(opts[li].name, "cuda") &&
		    (getopt_said = cvm_cuda_arg(argv[0], optarg, &major)) < 0)
			return '?';
		if (!cvm_cli_common_opt(c))
			return c;
	}
	/* Only once the options are good is anything opened, made or locked. */
	getopt_said = after_options(argc, argv);
	return getopt_said < 0 ? '?' : -1;
}

int cvm_cli_cuda_only(const char *cmd, int argc, char **argv, const char **cuda)
{
	static const struct option opts[] = {
		{ "cuda", required_argument, NULL, 'c' },
		CVM_COMMON_LONGOPTS,
		{ NULL, 0, NULL, 0 }
	};
	int c;

	while ((c = cvm_cli_getopt(argc, argv, opts)) != -1) {
		if (c != 'c')
			return cvm_usage_bad_option(cmd, argv);
		*cuda = optarg;
	}
	return 0;
}

int cvm_usage(const char *cmd, const char *fmt, ...)
{
	va_list ap;
	int r;

	va_start(ap, fmt);
	/* A global option ("--root") points at the global help, a command at its own. */
	r = cvm_err_usagev(strcmp(cmd, "cudnnvm") ? cmd : NULL, cmd[0] == '-' || !find_command(cmd),
			   fmt, ap);
	va_end(ap);
	return r;
}

/*
 * After getopt_long returned '?' (opterr is 0: we word the message). A long
 * option named as typed: its value missing (optopt is its code) or unknown.
 */
int cvm_usage_bad_option(const char *cmd, char **argv)
{
	const char *typed = optind > 0 ? argv[optind - 1] : "";
	char name[64];
	int r = getopt_said;

	getopt_said = 0;
	if (r < 0)
		return r;
	if (strncmp(typed, "--", 2) || !typed[2])
		return cvm_usage(cmd, "unknown option '-%c'", optopt ? optopt : '?');
	snprintf(name, sizeof(name), "%.*s", (int)strcspn(typed, "="), typed);
	if (optopt && strchr(typed, '='))
		return cvm_usage(cmd, "option '%s' takes no value", cvm_safe(name));
	if (optopt)
		return cvm_usage(cmd, "option '%s' needs a value", cvm_safe(name));
	return cvm_usage(cmd, "unknown option '%s'", cvm_safe(name));
}

int cvm_usage_unexpected(const char *cmd, char **argv)
{
	return cvm_usage(cmd, "unexpected argument '%s'", cvm_safe(argv[optind]));
}

/* In main.c with cvm_usage, which it calls (select.c is the library's, and the fuzzers'). */
int cvm_pin_spec(const char *cmd, const char *given, char *buf, size_t len, const char **spec)
{
	char cwd[PATH_MAX], file[PATH_MAX];
	int r;

	*spec = given;
	if (given)
		return 0;
	if (!getcwd(cwd, sizeof(cwd)))
		return cvm_err(-errno, "%s: cannot tell the working folder: %s", cmd, strerror(errno));
	r = cvm_pin_find(cwd, buf, len, file, sizeof(file));
	if (r < 0)
		return r;
	if (r == 0)
		return cvm_usage(cmd, "a VERSION is needed, e.g. 9.1 (or a .cudnn-version file here "
				 "or in a parent folder: 'cudnnvm local VERSION')");
	cvm_info("%s: cuDNN %s, as %s says", cmd, buf, cvm_safe(file));
	*spec = buf;
	return 0;
}

int cvm_cli_refuse_user(const struct cvm_ctx *ctx, const char *cmd)
{
	/* Windows has a user's own environment to activate through: HKCU\Environment. */
	if (!ctx->user || CVM_WINDOWS)
		return 0;
	return cvm_err(-CVM_E_PERM, "%s: with --user nothing system-wide is changed: select a "
		       "version through the environment with 'cudnnvm env' or 'cudnnvm exec'", cmd);
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
	cvm_host_root(abs);
	return 0;
}

int cvm_cli_number(const char *cmd, const char *opt, const char *s, long min, long max, long *out)
{
	if (cvm_number_parse(s, min, max, out) == 0)
		return 0;
	return cvm_usage(cmd, "%s '%s': expected a whole number from %ld to %ld", opt, cvm_safe(s),
			 min, max);
}

int cvm_cli_activate_opt(int c, const char *arg, const char **cuda, struct cvm_activate_opts *o)
{
	switch (c) {
	case 'c':
		*cuda = arg;
		return 1;
	case 'S':
		o->no_smoke = true;
		return 1;
	case 'L':
		o->no_ldconfig = true;
		return 1;
	default:
		return 0;
	}
}

int cvm_cli_fetch_opt(const char *cmd, int c, const char *arg, struct cvm_fetch_opts *fo)
{
	long v = 0;
	int r;

	switch (c) {
	case 'C':
		r = cvm_cli_number(cmd, "--connect-timeout", arg, 1, 3600, &v);
		fo->connect_timeout_s = v;
		break;
	case 'L':
		r = cvm_cli_number(cmd, "--low-speed-time", arg, 1, 3600, &v);
		fo->low_speed_time_s = v;
		break;
	default:
		r = cvm_cli_number(cmd, "--retries", arg, 0, 100, &v);
		fo->retries = (int)v;
		break;
	}
	return r;
}

static int parse_seconds(const char *s, double *out)
{
	char *end;
	double d;

	/* Digits and a point ("0.5"); nothing else: no sign, spaces, hex, exponent, "inf", suffix. */
	if (!*s || s[strspn(s, "0123456789.")])
		goto bad;
	errno = 0;
	d = strtod(s, &end);
	if (!errno && !*end && d <= 86400 * 7) {
		*out = d;
		return 0;
	}
bad:
	return cvm_usage("cudnnvm", "--lock-timeout '%s': expected a number of seconds "
				 "from 0 to 604800", cvm_safe(s));
}

/* --store's value (the rest of the choice is the engine's: cvm_store_locate). */
static int store_paths(struct cvm_ctx *ctx, const char *store_arg, char *path, size_t plen,
		       char *display, size_t dlen)
{
	/* ldconfig ends a line of ld.so.conf.d at '#'; a control character ends it anywhere. */
	for (const char *c = store_arg ? store_arg : ""; *c; c++)
		if (*c == '#' || (unsigned char)*c < 0x20 || *c == 0x7f)
			return cvm_usage("cudnnvm", "--store '%s': a '#' or a control character in "
					 "the path (ldconfig would read the store's library "
					 "folder cut there)", cvm_safe(store_arg));
	/* Windows expands %NAME% in PATH (REG_EXPAND_SZ): a version's entry could name another folder. */
	if (CVM_WINDOWS && store_arg && strchr(store_arg, '%'))
		return cvm_usage("cudnnvm", "--store '%s': a '%%' in the path (Windows expands %%NAME%% "
				 "in PATH entries, so a version's entry could name another folder)",
				 cvm_safe(store_arg));
	return cvm_store_locate(ctx->root, store_arg, ctx->user, path, plen, display, dlen);
}

/*
 * A command that changes what programs load, run without the right to
 * write the store: say what does work instead (not --user, which such a
 * command refuses). 0 when the store (or where it would be made) is writable.
 */
static int check_system(const struct command *cmd, const struct cvm_ctx *ctx, const char *spath)
{
	char p[4096], *slash;

	if (!(cmd->flags & CVM_CMD_SYSTEM) || ctx->user || geteuid() == 0)
		return 0;
	snprintf(p, sizeof(p), "%s", spath);
	while (access(p, F_OK) < 0 && errno == ENOENT && (slash = strrchr(p, '/')) && slash != p)
		*slash = '\0';
	if (access(p, W_OK) == 0)
		return 0;
	return cvm_err(-CVM_E_PERM, "%s changes what every program of the toolkit loads, which needs "
		       "root: run 'sudo cudnnvm %s ...'; for this shell only: eval \"$(cudnnvm env "
		       "VERSION)\", for one command: cudnnvm exec VERSION -- CMD", cmd->name, cmd->name);
}

/*
 * "user = yes" in the configuration file: --user unless asked otherwise
 * (--user, or a store named by --store or CUDNNVM_STORE). For a machine
 * where nobody is root: every user gets a store of their own.
 */
static int config_user(struct cvm_ctx *ctx, const char *store_arg)
{
	char v[16];
	int r;

	if (ctx->user || (store_arg && *store_arg))
		return 0;
	r = cvm_config_get(ctx->root, "user", v, sizeof(v));
	if (r <= 0)
		return r;
	if (!strcmp(v, "yes") || !strcmp(v, "true") || !strcmp(v, "1"))
		ctx->user = true;
	else if (strcmp(v, "no") && strcmp(v, "false") && strcmp(v, "0"))
		return cvm_err(-CVM_E_USAGE, "'/etc/cudnnvm.conf': user '%s': expected yes or no",
			       cvm_safe(v));
	return 0;
}

/* What main sets up for the command and undoes after it. */
struct invocation {
	struct cvm_ctx ctx;
	const struct command *cmd;
	char *root_owned;
	const char *store_arg;
	char spath[4096], sdisplay[4096];
};

/* A set-up step's "nothing left to do" (help or the version printed): exit 0. */
#define SETUP_DONE 1

/* The options before COMMAND: 0, SETUP_DONE, or an error. */
static int global_options(struct invocation *inv, int argc, char **argv)
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
	struct cvm_ctx *ctx = &inv->ctx;
	int c, r = 0;

	opterr = 0;
	ctx->manifests = getenv("CUDNNVM_MANIFESTS");
	ctx->mirror = getenv("CUDNNVM_MIRROR");
	/* "+": stop at the command; its own options are its own. */
	while ((c = getopt_long(argc, argv, "+hV" CVM_COMMON_SHORTOPTS, opts, NULL)) != -1) {
		if (cvm_cli_common_opt(c))
			continue;
		switch (c) {
		case 'R':
			r = set_root(ctx, optarg, &inv->root_owned);
			break;
		case 'S':
			inv->store_arg = optarg;
			break;
		case 'M':
			ctx->manifests = optarg;
			break;
		case 'U':
			ctx->mirror = optarg;
			break;
		case 'u':
			ctx->user = true;
			break;
		case 'N':
			ctx->lock_timeout = 0;
			break;
		case 'T':
			r = parse_seconds(optarg, &ctx->lock_timeout);
			break;
		case 'h':
			usage(stdout);
			return SETUP_DONE;
		case 'V':
			cvm_out.json = false;
			printf("cudnnvm %s\n", CVM_VERSION_STRING);
			return SETUP_DONE;
		default:
			r = cvm_usage_bad_option("cudnnvm", argv);
			break;
		}
		if (r < 0)
			return r;
	}
	return 0;
}

/* COMMAND, found in the table; its help, or help's, printed here (SETUP_DONE). */
static int pick_command(struct invocation *inv, int argc, char **argv)
{
	int r;

	if (optind >= argc) {
		usage(stderr);
		return cvm_usage("cudnnvm", "a COMMAND is needed");
	}
	inv->cmd = find_command(argv[optind]);
	if (!inv->cmd)
		return cvm_err(-CVM_E_USAGE, "unknown command '%s' (see 'cudnnvm --help')",
			       cvm_safe(argv[optind]));
	/* Help needs no store, no lock and no root. */
	if (wants_help(argc - optind, argv + optind)) {
		command_help(inv->cmd);
		return SETUP_DONE;
	}
	if (!inv->cmd->run) {
		r = help(argc - optind, argv + optind);
		return r < 0 ? r : SETUP_DONE;
	}
#ifdef _WIN32
	if (inv->cmd->flags & CVM_CMD_NOWIN)
		return cvm_unavailable(inv->cmd->name);
#endif
	return 0;
}

/* The environment, the configuration file, --dry-run and libcrypto, before the store. */
static int check_settings(struct invocation *inv, int argc, char **argv)
{
	unsigned flags = inv->cmd->flags;
	int r;

	/* The environment's numbers, as strictly as options, before anything is read or touched. */
	r = cvm_config_env_check();
	if (r < 0)
		return r;
	r = config_user(&inv->ctx, inv->store_arg);
	if (r < 0)
		return r;
	/* Only where the command takes it: elsewhere its own getopt says it is unknown. */
	inv->ctx.plan.dry = (flags & CVM_CMD_DRYRUN) && wants_dry_run(argc - optind, argv + optind);
	/* Before the store is touched: a missing libcrypto is one error and no change. */
	if (flags & CVM_CMD_HASH) {
		r = cvm_sha256_load();
		if (r < 0)
			return r;
	}
	return 0;
}

/* The store as the command's flags say: opened; for a writer, checked, locked and repaired. */
static int open_store(struct invocation *inv)
{
	const struct command *cmd = inv->cmd;
	struct cvm_ctx *ctx = &inv->ctx;
	int r;

	if (!(cmd->flags & (CVM_CMD_STORE | CVM_CMD_WRITE)))
		return 0;
	r = store_paths(ctx, inv->store_arg, inv->spath, sizeof(inv->spath), inv->sdisplay,
			sizeof(inv->sdisplay));
	if (r < 0)
		return r;
	r = check_system(cmd, ctx, inv->spath);
	if (r < 0)
		return r;
	ctx->store.plan = &ctx->plan;
	r = cvm_store_open(&ctx->store, inv->spath, inv->sdisplay, cmd->flags & CVM_CMD_WRITE);
	if (r == 0)
		ctx->store_open = true;
	/* No store yet: readers see it empty. */
	else if (r != -ENOENT || (cmd->flags & CVM_CMD_WRITE))
		return r;
	if (!(cmd->flags & CVM_CMD_WRITE))
		return 0;
	r = cvm_store_check_safe(&ctx->store, NULL);
	if (r == 0)
		r = cvm_store_lock(&ctx->store, ctx->lock_timeout);
	if (r < 0)
		return r;
	/* A switch a crash cut short before its journal line gets it now. */
	(void)cvm_activate_repair(ctx);
	return 0;
}

/* The command whose store its cvm_cli_getopt opens after the last option; NULL once done. */
static struct invocation *pending;

/* A VERSION operand (a version or an installed id, cuDNN 8 or newer), before anything is touched. */
static int version_operand(const char *cmd, const char *arg)
{
	char spec[160], ver[64], plat[64];
	struct cvm_version v = { 0 };
	int major;

	if (strchr(arg, '\n') || cvm_pin_parse(arg, strlen(arg), spec, sizeof(spec)) < 0 ||
	    strcmp(spec, arg))
		return cvm_usage(cmd, "VERSION '%s': expected a cuDNN version such as 9.1, or an "
				 "installed id", cvm_safe(arg));
	if (cvm_version_parse(spec, &v) < 0 &&
	    cvm_store_parse_id(spec, ver, sizeof(ver), &major, plat, sizeof(plat)) == 0)
		(void)cvm_version_parse(ver, &v);
	if (v.part[0] < CVM_CUDNN_OLDEST_MAJOR)
		return cvm_usage(cmd, "VERSION '%s': cuDNN %u is older than any release cudnnvm "
				 "supports (%d and newer)", cvm_safe(arg), v.part[0],
				 CVM_CUDNN_OLDEST_MAJOR);
	return 0;
}

/*
 * After the command's options (cvm_cli_getopt): its VERSION operand checked,
 * where its usage line begins with one (not after exec's "--"), then the store.
 */
static int after_options(int argc, char **argv)
{
	struct invocation *inv = pending;
	const char *u;
	int dashes = 0, r;

	if (!inv)
		return 0;
	pending = NULL;
	u = inv->cmd->usage + strlen(inv->cmd->name);
	while (dashes < argc && strcmp(argv[dashes], "--"))
		dashes++;
	if ((!strncmp(u, " VERSION", 8) || !strncmp(u, " [VERSION", 9)) && optind < dashes) {
		r = version_operand(inv->cmd->name, argv[optind]);
		if (r < 0)
			return r;
	}
	return open_store(inv);
}

/* The exit code of r, said by the JSON document; the store closed. */
static int finish(struct invocation *inv, int r)
{
	const char *msg = cvm_err_first();
	int code = r > 0 ? r : cvm_exit_code(r);

	/*
	 * A command's own positive status (doctor's 1: problems found) is its exit code;
	 * with a message (exec's 127), the document says it as any failure does.
	 */
	if (cvm_out.json && r > 0)
		json_finish(&inv->ctx.plan, msg ? r : 0, msg);
	else if (cvm_out.json)
		json_finish(&inv->ctx.plan, code, msg ? msg : cvm_strerror(r));
	if (inv->ctx.store_open)
		cvm_store_close(&inv->ctx.store);
	cvm_plan_release(&inv->ctx.plan);
	free(inv->root_owned);
	return code;
}

int main(int argc, char **argv)
{
	struct invocation inv = { .ctx = { .root = "", .lock_timeout = -1 } };
	int r;

	inv.store_arg = getenv("CUDNNVM_STORE");
	/* What cudnnvm creates must be readable by every user, whatever the caller's umask. */
	umask(022);
	if (argc >= 2 && !strcmp(argv[1], "__smoke-child"))
		return cvm_smoke_child(argc - 1, argv + 1);
	r = global_options(&inv, argc, argv);
	if (r == 0)
		r = pick_command(&inv, argc, argv);
	if (r == 0)
		r = check_settings(&inv, argc, argv);
	if (r == SETUP_DONE) {
		r = 0;
	} else if (r == 0) {
		argv += optind;
		argc -= optind;
		optind = 0;	/* a full reset for the command's getopt */
		/* The store is opened after the command's options (after_options): a usage error touches nothing. */
		pending = &inv;
		r = inv.cmd->run(&inv.ctx, argc, argv);
		pending = NULL;
	}
	return finish(&inv, r);
}
