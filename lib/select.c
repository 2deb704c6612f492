/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "activate.h"
#include "compat.h"
#include "error.h"
#include "fsutil.h"
#include "manifest.h"
#include "out.h"
#include "select.h"
#include "smokelog.h"
#include "store.h"
#include "toolkit.h"
#include "trust.h"
#include "version.h"

int cvm_pin_parse(const char *text, size_t len, char *spec, size_t spec_len)
{
	const char *p = text, *end = text + len;

	while (p < end) {
		const char *eol = memchr(p, '\n', (size_t)(end - p)), *s, *e;
		struct cvm_version v;
		char buf[160], ver[64], plat[64];
		int major;

		if (!eol)
			eol = end;
		s = p;
		e = eol;
		p = eol + 1;
		while (s < e && (*s == ' ' || *s == '\t' || *s == '\r'))
			s++;
		while (e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r'))
			e--;
		if (s == e || *s == '#')
			continue;
		if ((size_t)(e - s) >= sizeof(buf) || (size_t)(e - s) >= spec_len)
			return -CVM_E_VERSION;
		memcpy(buf, s, (size_t)(e - s));
		buf[e - s] = '\0';
		if (memchr(buf, '\0', (size_t)(e - s)) ||
		    (cvm_version_parse(buf, &v) < 0 &&
		     cvm_store_parse_id(buf, ver, sizeof(ver), &major, plat, sizeof(plat)) < 0) ||
		    (strchr(buf, '/') || strchr(buf, ' ')))
			return -CVM_E_VERSION;
		memcpy(spec, buf, (size_t)(e - s) + 1);
		return 0;
	}
	return -CVM_E_VERSION;
}

/*
 * Reads a pin file without ever blocking or following a link: a FIFO, a
 * device or a symlink named .cudnn-version is refused, not opened for
 * reading. A pin that another user could have written (trust.h: the file
 * or a folder on the way to it) is ignored, with a warning: 1, as if there
 * were none here. 0 and *buf (malloc'd), -ENOENT/-ENOTDIR when there is
 * none, or another negative code (printed, naming the file).
 */
static int read_pin(const char *f, char **buf, size_t *len)
{
	struct stat st;
	ssize_t k;
	char *b = NULL;
	int fd, r;

	fd = cvm_open_regular(AT_FDCWD, f, O_RDONLY | O_NOFOLLOW, 0);
	if (fd == -ENOENT || fd == -ENOTDIR)
		return fd;
	if (fd == -CVM_E_NOTREG)
		return cvm_err(-CVM_E_USAGE, "'%s': not a regular file (a .cudnn-version must be one, "
			       "never a link, a FIFO or a folder)", cvm_safe(f));
	if (fd < 0)
		return cvm_err(fd, "cannot read '%s': %s", cvm_safe(f), cvm_strerror(fd));
	if (fstat(fd, &st) < 0) {
		r = cvm_err(-errno, "cannot read '%s': %s", cvm_safe(f), strerror(errno));
		goto out;
	}
	r = cvm_trust_obey(f, f, &st, "a .cudnn-version");
	if (r)
		goto out;
	if (st.st_size > CVM_PIN_MAX) {
		r = cvm_err(-CVM_E_USAGE, "'%s' has %lld bytes: a .cudnn-version holds one version "
			    "(at most %d bytes)", cvm_safe(f), (long long)st.st_size, CVM_PIN_MAX);
		goto out;
	}
	b = malloc(CVM_PIN_MAX + 1);
	if (!b) {
		r = -ENOMEM;
		goto out;
	}
	/* One read: a regular file of this size needs no more (a later append is cut off). */
	k = pread(fd, b, CVM_PIN_MAX, 0);
	if (k < 0) {
		r = cvm_err(-errno, "cannot read '%s': %s", cvm_safe(f), strerror(errno));
		goto out;
	}
	b[k] = '\0';
	*len = (size_t)k;
	*buf = b;
	b = NULL;
	r = 0;
out:
	free(b);
	close(fd);
	return r;
}

int cvm_pin_unset(const char *dir, char *file, size_t file_len)
{
	char spec[160], line[170], *buf = NULL;
	size_t len = 0;
	int r;

	snprintf(file, file_len, "%s/.cudnn-version", strcmp(dir, "/") ? dir : "");
	r = read_pin(file, &buf, &len);
	if (r == -ENOENT || r == -ENOTDIR)
		return cvm_err(-CVM_E_NOTFOUND, "no '%s' to remove", cvm_safe(file));
	if (r == 1)
		return cvm_err(-CVM_E_PERM, "'%s' is not yours: not removed", cvm_safe(file));
	if (r < 0)
		return r;
	/* Only what 'cudnnvm local' writes (the version and a newline): never a file someone edited. */
	if (cvm_pin_parse(buf, len, spec, sizeof(spec)) < 0 ||
	    snprintf(line, sizeof(line), "%s\n", spec) != (int)len || memcmp(line, buf, len))
		r = cvm_err(-CVM_E_CONFLICT, "'%s' holds more than the version 'cudnnvm local' "
			    "writes: not removed (edit or remove it yourself)", cvm_safe(file));
	else if (unlink(file) < 0)
		r = cvm_err(-errno, "cannot remove '%s': %s", cvm_safe(file), strerror(errno));
	free(buf);
	return r;
}

int cvm_pin_find(const char *dir, char *spec, size_t spec_len, char *file, size_t file_len)
{
	char path[PATH_MAX], *buf = NULL;
	size_t len = 0;
	int r;

	r = cvm_fmt(path, sizeof(path), "%s", dir);
	if (r < 0)
		return 0;
	for (;;) {
		char f[PATH_MAX + 32];
		char *slash;
		snprintf(f, sizeof(f), "%s/.cudnn-version", strcmp(path, "/") ? path : "");
		r = read_pin(f, &buf, &len);
		if (r == 0) {
			r = cvm_pin_parse(buf, len, spec, spec_len);
			free(buf);
			if (r < 0)
				return cvm_err(-CVM_E_USAGE, "'%s': expected a cuDNN version such as 9.1 "
					       "on its first line", cvm_safe(f));
			snprintf(file, file_len, "%s", f);
			return 1;
		}
		if (r < 0 && r != -ENOENT && r != -ENOTDIR)
			return r;
		slash = strrchr(path, '/');
		if (!slash || !strcmp(path, "/"))
			return 0;
		if (slash == path)
			slash[1] = '\0';
		else
			*slash = '\0';
	}
}

/* Whether toolkit (or, NULL, any toolkit) has id active. */
static bool is_active(struct cvm_store *s, const char *id, const char *toolkit)
{
	char buf[256];
	size_t tl;

	if (cvm_store_active_for(s, id, buf, sizeof(buf)) < 0 || !buf[0])
		return false;
	if (!toolkit)
		return true;
	tl = strlen(toolkit);
	for (const char *p = buf; *p; p += strcspn(p, ",") + (p[strcspn(p, ",")] ? 1 : 0)) {
		while (*p == ' ')
			p++;
		if (!strncmp(p, toolkit, tl) && (!p[tl] || p[tl] == ','))
			return true;
	}
	return false;
}

static int smoke_rank(enum cvm_smoke_result r)
{
	return r == CVM_SMOKE_PASSED ? 3 : r == CVM_SMOKE_SKIPPED ? 2 : r == CVM_SMOKE_NONE ? 1 : 0;
}

size_t cvm_select_best(struct cvm_store *s, char **ids, size_t n, const char *toolkit,
		       char *why, size_t why_len)
{
	size_t best = 0;
	int best_a = -1, best_s = -1;

	snprintf(why, why_len, "the only build that matches");
	if (n < 2)
		return 0;
	/* ids are newest first: on a tie the earlier one wins. */
	for (size_t i = 0; i < n; i++) {
		struct cvm_smokelog l;
		int a = is_active(s, ids[i], toolkit);
		cvm_smokelog_read(s, ids[i], &l);
		int k = smoke_rank(l.result);
		if (a > best_a || (a == best_a && k > best_s)) {
			best = i;
			best_a = a;
			best_s = k;
		}
	}
	if (best_a > 0)
		snprintf(why, why_len, "it is the active one%s%s", toolkit ? " for CUDA " : "",
			 toolkit ? toolkit : "");
	else if (best != 0)
		snprintf(why, why_len, "its last smoke test %s, and newer builds' did not",
			 best_s == 3 ? "passed" : best_s == 2 ? "passed its loader part" : "is not a failure");
	else
		snprintf(why, why_len, "none is active, so the newest (its last smoke test: %s)",
			 best_s == 3 ? "passed" : best_s == 2 ? "loader part passed" :
			 best_s == 1 ? "never run" : "failed");
	return best;
}

int cvm_select_resolve(struct cvm_ctx *ctx, const char *spec, int cuda_major, const char *cuda,
		       char *id, size_t len)
{
	char **ids = NULL, why[160];
	size_t n = 0, b;
	int r;

	r = cvm_store_match(&ctx->store, spec, cuda_major, cvm_host_platform(), &ids, &n);
	if (r < 0 || !n) {
		cvm_strv_free(ids, n);
		return cvm_store_resolve(&ctx->store, spec, cuda_major, cuda, cvm_host_platform(), id,
					 len);
	}
	b = cvm_select_best(&ctx->store, ids, n, cuda, why, sizeof(why));
	if (n > 1)
		cvm_verbose("cuDNN %s matches %zu builds; %s wins: %s", spec, n, ids[b], why);
	r = cvm_fmt(id, len, "%s", ids[b]);
	cvm_strv_free(ids, n);
	return r;
}

int cvm_select_check_smoke(struct cvm_ctx *ctx, const char *cmd, const char *id, bool force)
{
	struct cvm_smokelog l;
	char when[64] = "?";
	time_t t;
	struct tm tm;

	cvm_smokelog_read(&ctx->store, id, &l);
	if (l.result != CVM_SMOKE_FAILED)
		return 0;
	t = (time_t)l.time;
	if (gmtime_r(&t, &tm))
		strftime(when, sizeof(when), "%Y-%m-%d %H:%M UTC", &tm);
	if (force) {
		cvm_warn("%s: cuDNN %s failed its last smoke test (%s): %s; going on (--force)", cmd, id,
			 when, cvm_safe(l.reason[0] ? l.reason : "no reason recorded"));
		return 0;
	}
	/* Inside another program (a Slurm job) there is no --force to pass: another version is the way. */
	return cvm_err(-CVM_E_SMOKE, "%s: cuDNN %s failed its last smoke test (%s%s%s): %s; fix it "
		       "and run 'cudnnvm smoke' again, or %s", cmd, id, when,
		       l.toolkit[0] ? ", CUDA " : "", l.toolkit,
		       cvm_safe(l.reason[0] ? l.reason : "no reason recorded"),
		       ctx->embedded ? "ask for another version" : "pass --force");
}

int cvm_select_version(struct cvm_ctx *ctx, const char *spec, const char *cuda, char *id,
		       size_t id_len, char *dir, size_t dir_len)
{
	struct cvm_toolkit *all = NULL, tk = { 0 };
	char pin[160], file[PATH_MAX], cwd[PATH_MAX], name[16];
	char **ids = NULL;
	size_t n = 0, nall = 0;
	bool have_tk = false;
	int r, def;

	if (!ctx->store_open)
		return cvm_err(-CVM_E_NOTFOUND, "nothing is installed yet: there is no store (see "
			       "'cudnnvm install --help')");
	if (cuda) {
		r = cvm_toolkit_select(ctx->root, cuda, &tk);
		if (r < 0)
			return r;
		have_tk = true;
	} else if (cvm_toolkits_find(ctx->root, &all, &nall) == 0) {
		def = cvm_toolkit_default(ctx->root, all, nall);
		/* The configuration file names a toolkit that is not there (said). */
		if (def < 0 && def != -ENOENT) {
			r = def;
			goto out;
		}
		if (def >= 0) {
			tk = all[def];
			memset(&all[def], 0, sizeof(all[def]));
			have_tk = true;
		}
	}
	if (!spec && getcwd(cwd, sizeof(cwd))) {
		r = cvm_pin_find(cwd, pin, sizeof(pin), file, sizeof(file));
		if (r < 0)
			goto out;
		if (r == 1) {
			spec = pin;
			cvm_verbose("%s pins cuDNN %s", file, pin);
		}
	}
	if (!spec) {
		if (!have_tk) {
			r = cvm_err(-CVM_E_USAGE, "which cuDNN? give a VERSION, a .cudnn-version file, "
				    "or --cuda for the toolkit whose active version to use");
			goto out;
		}
		cvm_toolkit_name(&tk, name, sizeof(name));
		r = cvm_active_get(&ctx->store, name, id, id_len);
		if (r < 0) {
			r = cvm_err(-CVM_E_NOTFOUND, "no cuDNN is active for CUDA %s: give a VERSION",
				    name);
			goto out;
		}
	} else if (have_tk) {
		cvm_toolkit_name(&tk, name, sizeof(name));
		r = cvm_select_resolve(ctx, spec, tk.major, name, id, id_len);
		if (r < 0)
			goto out;
	} else {
		/* No toolkit to ask: the matches must agree on one CUDA major. */
		char ver[64], plat[64];
		int m0 = 0, m;
		r = cvm_store_match(&ctx->store, spec, 0, cvm_host_platform(), &ids, &n);
		if (r == -CVM_E_VERSION)
			r = cvm_err(r, "invalid version '%s'", cvm_safe(spec));
		if (r < 0)
			goto out;
		if (!n) {
			r = cvm_err(-CVM_E_NOTFOUND, "cuDNN %s is not installed", cvm_safe(spec));
			goto out;
		}
		for (size_t i = 0; i < n; i++) {
			cvm_store_parse_id(ids[i], ver, sizeof(ver), &m, plat, sizeof(plat));
			if (i && m != m0) {
				r = cvm_err(-CVM_E_USAGE, "cuDNN %s is installed for CUDA %d and %d: "
					    "give --cuda", cvm_safe(spec), m0, m);
				goto out;
			}
			m0 = m;
		}
		char why[160];
		size_t b = cvm_select_best(&ctx->store, ids, n, NULL, why, sizeof(why));
		if (n > 1)
			cvm_verbose("cuDNN %s matches %zu builds; %s wins: %s", spec, n, ids[b], why);
		r = cvm_fmt(id, id_len, "%s", ids[b]);
		if (r < 0)
			goto out;
	}
	r = cvm_fmt(dir, dir_len, "%s/versions/%s", ctx->store.path, id);
out:
	cvm_strv_free(ids, n);
	cvm_toolkits_free(all, nall);
	cvm_toolkit_release(&tk);
	return r;
}

static const struct cvm_env_var linux_vars[] = {
	{ "CUDNN_PATH", NULL }, { "CUDNN_HOME", NULL }, { "LD_LIBRARY_PATH", "lib" },
	{ "LIBRARY_PATH", "lib" }, { "CPATH", "include" },
};
static const struct cvm_env_var windows_vars[] = {
	{ "CUDNN_PATH", NULL }, { "CUDNN_HOME", NULL }, { "PATH", "bin" },
	{ "INCLUDE", "include" }, { "LIB", "lib/x64" },
};
const char cvm_env_sep = CVM_WINDOWS ? ';' : ':';

const struct cvm_env_var *cvm_env_vars(size_t *n)
{
	*n = CVM_WINDOWS ? sizeof(windows_vars) / sizeof(windows_vars[0])
			 : sizeof(linux_vars) / sizeof(linux_vars[0]);
	return CVM_WINDOWS ? windows_vars : linux_vars;
}

int cvm_env_value(char *buf, size_t len, const char *dir, const char *sub)
{
	int r = sub ? cvm_fmt(buf, len, "%s/%s", dir, sub) : cvm_fmt(buf, len, "%s", dir);

	for (char *c = buf; r == 0 && CVM_WINDOWS && *c; c++)
		if (*c == '/')
			*c = '\\';
	return r;
}

const char *cvm_path_shown(const char *p, char *buf, size_t len)
{
	return cvm_env_value(buf, len, p, NULL) == 0 ? buf : p;
}

int cvm_env_compose(char *buf, size_t len, const struct cvm_env_var *v, const char *dir,
		    const char *old)
{
	char head[PATH_MAX];
	const char sep[2] = { cvm_env_sep, '\0' };
	bool more = v->sub && old && *old;

	if (cvm_env_value(head, sizeof(head), dir, v->sub) < 0)
		return -ENAMETOOLONG;
	return cvm_fmt(buf, len, "%s%s%s", head, more ? sep : "", more ? old : "");
}

int cvm_env_select(struct cvm_ctx *ctx, const char *cmd, const char *spec, const char *cuda,
		   bool force, char *id, size_t id_len, char *dir, size_t dir_len)
{
	int r = cvm_select_version(ctx, spec, cuda, id, id_len, dir, dir_len);

	if (r == 0)
		r = cvm_store_check_safe(&ctx->store, id);
	if (r == 0)
		r = cvm_select_check_smoke(ctx, cmd, id, force);
	return r;
}
