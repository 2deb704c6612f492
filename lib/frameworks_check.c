/* SPDX-License-Identifier: MIT */
/*
 * What the frameworks' needs mean for each command (frameworks.h): doctor's
 * report, exec's refusal, use/install --for's choice. The reading is
 * frameworks.c's; which copy a program loads is doctor's (cvm_doctor_which),
 * so that `which`, `doctor` and this say the same.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "alloc.h"
#include "compat.h"
#include "cudnn.h"
#include "doctor.h"
#include "error.h"
#include "frameworks.h"
#include "fsutil.h"
#include "manifest.h"
#include "out.h"
#include "select.h"
#include "store.h"
#include "toolkit.h"
#include "update.h"

#define SHEBANG_MAX 512

static int push(char ***v, size_t *n, size_t *cap, const char *s)
{
	for (size_t i = 0; i < *n; i++)
		if (!strcmp((*v)[i], s))
			return 0;
	if (CVM_GROW(*v, *n + 1, *cap) < 0 || !((*v)[*n] = strdup(s)))
		return -ENOMEM;
	(*n)++;
	return 0;
}

/* Each folder of root+dir (inside the root) as an environment. */
static int push_envs(const char *root, const char *dir, char ***v, size_t *n, size_t *cap)
{
	char host[PATH_MAX], p[PATH_MAX];
	DIR *d = NULL;
	struct dirent *de;
	int r = 0;

	if (cvm_fmt(host, sizeof(host), "%s%s", root, dir) < 0 || cvm_opendir_at(AT_FDCWD, host, 0, &d) < 0)
		return 0;
	while (r == 0 && (de = readdir(d)))
		if (de->d_name[0] != '.' && cvm_fmt(p, sizeof(p), "%s/%s", dir, de->d_name) == 0)
			r = push(v, n, cap, p);
	closedir(d);
	return r;
}

/* The first name in the PATH list that is an executable under root, into out (inside root). */
static bool on_path(const char *root, const char *name, char *out, size_t len)
{
	const char *path = getenv("PATH");
	char host[PATH_MAX];

	for (const char *p = path ? path : "", *q; *p; p = *q ? q + 1 : q) {
		q = strchr(p, cvm_env_sep);
		if (!q)
			q = p + strlen(p);
		for (int exe = 0; exe < 1 + CVM_WINDOWS; exe++)
			if (q > p && cvm_fmt(out, len, "%.*s/%s%s", (int)(q - p), p, name,
					     exe ? ".exe" : "") == 0 &&
			    cvm_fmt(host, sizeof(host), "%s%s", root, out) == 0 && access(host, X_OK) == 0)
				return true;
	}
	return false;
}

int cvm_pyenv_discover(const char *root, char ***pys, size_t *n)
{
	static const char *const vars[] = { "VIRTUAL_ENV", "CONDA_PREFIX" };
	const char *home = getenv("HOME");
	char p[PATH_MAX];
	size_t cap = 0;
	int r = 0;

	*pys = NULL;
	*n = 0;
	if (on_path(root, CVM_WINDOWS ? "python" : "python3", p, sizeof(p)))
		r = push(pys, n, &cap, p);
	for (size_t i = 0; i < 2 && r == 0; i++) {
		const char *v = getenv(vars[i]);
		if (v && *v)
			r = push(pys, n, &cap, v);
	}
	if (r == 0 && home && *home && cvm_fmt(p, sizeof(p), "%s/.conda/envs", home) == 0)
		r = push_envs(root, p, pys, n, &cap);
	if (r == 0)
		r = push_envs(root, "/opt/conda/envs", pys, n, &cap);
	if (r < 0) {
		cvm_strv_free(*pys, *n);
		*pys = NULL;
		*n = 0;
	}
	return r;
}

/* The interpreter a shebang line names ("#!/usr/bin/env python3", "#!/x/bin/python"). */
static bool shebang_python(const char *file, char *out, size_t len)
{
	char head[SHEBANG_MAX], word[2][PATH_MAX];
	const char *base;
	ssize_t k;
	int fd = cvm_open_regular(AT_FDCWD, file, O_RDONLY, 0), nw;

	if (fd < 0)
		return false;
	k = read(fd, head, sizeof(head) - 1);
	close(fd);
	if (k < 3 || head[0] != '#' || head[1] != '!')
		return false;
	head[k] = '\0';
	head[strcspn(head, "\r\n")] = '\0';
	nw = sscanf(head + 2, " %4095s %4095s", word[0], word[1]);
	if (nw < 1)
		return false;
	base = strrchr(word[0], '/') ? strrchr(word[0], '/') + 1 : word[0];
	if (!strcmp(base, "env") && nw == 2)
		return !strncmp(word[1], "python", 6) && on_path("", word[1], out, len);
	return !strncmp(base, "python", 6) && cvm_fmt(out, len, "%s", word[0]) == 0;
}

int cvm_pyenv_of_command(const char *cmd, char *out, size_t len)
{
	char file[PATH_MAX];
	const char *base = strrchr(cmd, '/') ? strrchr(cmd, '/') + 1 : cmd;

	if (CVM_WINDOWS && strrchr(base, '\\'))
		base = strrchr(base, '\\') + 1;
	if (strchr(cmd, '/') || (CVM_WINDOWS && strchr(cmd, '\\')))
		snprintf(file, sizeof(file), "%s", cmd);
	else if (!on_path("", cmd, file, sizeof(file)))
		return -CVM_E_NOTFOUND;
	if (!strncmp(base, "python", 6))
		return cvm_fmt(out, len, "%s", file) < 0 ? -CVM_E_NOTFOUND : 0;
	return shebang_python(file, out, len) ? 0 : -CVM_E_NOTFOUND;
}

/* What a framework of e would load, and why. */
struct load {
	char path[PATH_MAX];
	char version[64];
	const char *why;
	bool own;	/* the copy the framework bundles: it serves it by construction */
};

/*
 * The framework's own copy, else the environment's, of libcudnn.so.<major>
 * (Windows cudnn64_<major>.dll).
 */
static bool env_copy(const struct cvm_pyenv *e, const struct cvm_fw *f, int major, struct load *l)
{
	const char *dir = f->bundled[0] ? f->bundled : e->copy;
	char name[PATH_MAX], lib[32];

	if (!dir[0] || cvm_fmt(name, sizeof(name), "%s/%s", dir,
			       cvm_cudnn_main_name(major, lib, sizeof(lib))) < 0 || access(name, F_OK) < 0)
		return false;
	/* As Windows writes it, like which's answers there. */
	cvm_env_value(l->path, sizeof(l->path), name, NULL);
	l->own = f->bundled[0] != '\0';
	if (l->own) {
		l->why = "its own copy, bundled with it, which it loads before any other";
		return true;
	}
	snprintf(l->version, sizeof(l->version), "%s", e->copy_version);
	l->why = !strcmp(e->copy_kind, "wheel") ? "the environment's nvidia-cudnn wheel, which the "
		 "framework loads by its own path" : "the conda environment's own copy";
	return true;
}

/* The version of what which found: the store's id, else the file's name (libcudnn.so.9.14.0). */
static void which_version(const struct cvm_which *w, char *out, size_t len)
{
	char v[64], so[64];
	const char *dot;
	int m;

	out[0] = '\0';
	if (*w->id && cvm_store_parse_id(w->id, v, sizeof(v), &m, so, sizeof(so)) == 0) {
		snprintf(out, len, "%s", v);
		return;
	}
	dot = strstr(w->library, ".so.");
	if (dot && strchr(dot + 4, '.'))
		snprintf(out, len, "%s", dot + 4);
}

/*
 * As a program of the default toolkit would (cvm_doctor_which): LD_LIBRARY_PATH
 * first on Linux (exec's, too: it comes before a RUNPATH), then the
 * framework's or the environment's own copy, then the toolkit and the
 * loader cache. On Windows the framework adds its DLL folder first
 * (os.add_dll_directory).
 */
static bool loads(struct cvm_ctx *ctx, const struct cvm_pyenv *e, const struct cvm_fw *f,
		  struct load *l)
{
	int major = f->major;
	struct cvm_toolkit *t = NULL;
	struct cvm_which *w = calloc(1, sizeof(*w));
	size_t nt = 0;
	int d = -1;
	bool found = false, which = false;

	memset(l, 0, sizeof(*l));
	if (!w)
		return false;
	cvm_err_mute(true);
	if (cvm_toolkits_find(ctx->root, &t, &nt) == 0 && nt)
		d = cvm_toolkit_default(ctx->root, t, nt);
	cvm_err_mute(false);
	which = d >= 0 && cvm_doctor_which_major(ctx, &t[d], major, w) == 0;
	if (which && !CVM_WINDOWS && !strcmp(w->why, "LD_LIBRARY_PATH"))
		goto which;
	found = env_copy(e, f, major, l);
	if (found || !which)
		goto out;
which:
	snprintf(l->path, sizeof(l->path), "%s", w->library);
	which_version(w, l->version, sizeof(l->version));
	l->why = w->why;
	found = true;
out:
	cvm_toolkits_free(t, nt);
	free(w);
	return found;
}

/* The path as its user knows it: inside the root. */
static const char *inside(const struct cvm_ctx *ctx, const char *host)
{
	size_t rl = strlen(ctx->root);

	return rl && !strncmp(host, ctx->root, rl) && host[rl] == '/' ? host + rl : host;
}

/* One framework: its line or JSON object, and its problem. */
static void report(struct cvm_ctx *ctx, struct cvm_findings *fd, const struct cvm_pyenv *e,
		   const struct cvm_fw *f, cvm_json *arr)
{
	char need[96] = "", problem[PATH_MAX + 512] = "", fix[1024] = "";
	struct cvm_version have;
	struct load l = { 0 };
	const char *why = NULL;
	bool found = f->major && loads(ctx, e, f, &l), known;

	known = found && cvm_version_parse(l.version, &have) == 0;
	if (f->major)
		cvm_fw_need(f, need, sizeof(need));
	if (!f->major) {
		cvm_fmt(fix, sizeof(fix), "%s %s in %s", f->name, f->version, e->python);
		cvm_findings_unchecked(fd, fix, "it publishes no cuDNN pin and cudnnvm's table has no "
				       "entry for it (no pin known)");
	} else if (!found) {
		cvm_fmt(problem, sizeof(problem), "%s %s (%s) needs %s (%s) and finds no cuDNN %d",
			 f->name, f->version, e->python, need, f->requires, f->major);
	} else if (!known && !l.own) {
		cvm_fmt(fix, sizeof(fix), "whether %s serves %s %s", inside(ctx, l.path), f->name,
			 f->version);
		cvm_findings_unchecked(fd, fix, "its version is not known");
	} else if (known && !cvm_fw_accepts(f, &have, &why)) {
		cvm_fmt(problem, sizeof(problem), "%s %s (%s) needs %s (%s; rule: %s), but loads %s, "
			 "cuDNN %s (%s): %s", f->name, f->version, e->python, need, f->requires, f->rule,
			 inside(ctx, l.path), l.version, l.why, why);
	}
	if (*problem) {
		cvm_fmt(fix, sizeof(fix), "%s'cudnnvm use --for %s' activates the newest installed "
			 "version it takes ('cudnnvm install --for %s' installs one)",
			 found && !strcmp(l.why, "LD_LIBRARY_PATH") ?
			 "take that folder out of LD_LIBRARY_PATH, which comes before the framework's "
			 "own copy, or " : "", e->python, e->python);
		cvm_findings_problem(fd, fix, "%s", problem);
	} else if (f->major && !arr) {
		cvm_info("  %s %s (%s): needs %s (%s); loads %s, cuDNN %s (%s): %s", f->name, f->version,
			 e->python, need, f->requires, inside(ctx, l.path), known ? l.version : "?",
			 l.why, known || l.own ? "ok" : "not checked");
	}
	if (arr) {
		cvm_json *o = cvm_json_object(), *lo = found ? cvm_json_object() : NULL;
		cvm_json_set(o, "name", cvm_json_string(f->name));
		cvm_json_set(o, "version", cvm_json_string(*f->version ? f->version : NULL));
		cvm_json_set(o, "python", cvm_json_string(e->python));
		cvm_json_set(o, "requires", cvm_json_string(f->major ? f->requires : NULL));
		cvm_json_set(o, "needs", cvm_json_string(f->major ? need : NULL));
		cvm_json_set(o, "rule", cvm_json_string(f->major ? f->rule : NULL));
		if (lo) {
			cvm_json_set(lo, "path", cvm_json_string(inside(ctx, l.path)));
			cvm_json_set(lo, "version", cvm_json_string(known ? l.version : NULL));
			cvm_json_set(lo, "why", cvm_json_string(l.why));
		}
		cvm_json_set(o, "loads", lo);
		cvm_json_set(o, "problem", cvm_json_string(*problem ? problem : NULL));
		cvm_json_append(arr, o);
	}
}

/* Whether the environment of e was reported already (two names of one folder). */
static bool seen(char ***prefixes, size_t *n, size_t *cap, const char *prefix)
{
	char real[PATH_MAX];
	const char *key = realpath(prefix, real) ? real : prefix;
	size_t before = *n;

	return push(prefixes, n, cap, key) == 0 && *n == before;
}

int cvm_frameworks_doctor(struct cvm_ctx *ctx, struct cvm_findings *fd, cvm_json *json,
			  char *const *pys, size_t npy)
{
	char **found = NULL, **prefixes = NULL;
	size_t nfound = 0, np = 0, cap = 0;
	cvm_json *arr = json ? cvm_json_array() : NULL;
	bool header = false, given = pys != NULL;
	int r = 0;

	if (json)
		cvm_json_set(json, "frameworks", arr);
	if (!pys) {
		r = cvm_pyenv_discover(ctx->root, &found, &nfound);
		pys = found;
		npy = nfound;
	}
	for (size_t i = 0; i < npy && r == 0; i++) {
		struct cvm_pyenv e;
		/* Those doctor found by itself need not be environments: only a given one is said. */
		if (!given)
			cvm_err_mute(true);
		r = cvm_pyenv_read(ctx->root, "--python", pys[i], &e);
		if (!given)
			cvm_err_mute(false);
		if (r < 0 && !given)
			r = 0;
		else if (r == 0 && !seen(&prefixes, &np, &cap, e.prefix))
			for (size_t k = 0; k < e.n; k++) {
				if (!header && !json)
					cvm_info("Frameworks (Python environments):");
				header = true;
				report(ctx, fd, &e, &e.fw[k], arr);
			}
		cvm_pyenv_release(&e);
	}
	if (r == 0 && !header && !json && given)
		cvm_info("Frameworks: none that uses cuDNN in %s%s", pys[0], npy > 1 ? " and the others" : "");
	cvm_strv_free(found, nfound);
	cvm_strv_free(prefixes, np);
	return r;
}

/* The version part of an installed id. */
static int id_version(const char *id, struct cvm_version *v)
{
	char ver[64], plat[64];
	int m;

	if (cvm_store_parse_id(id, ver, sizeof(ver), &m, plat, sizeof(plat)) < 0)
		return -CVM_E_VERSION;
	return cvm_version_parse(ver, v);
}

/*
 * Whether f's need bears on which cuDNN to give it: one that loads the copy
 * bundled with it (torch\lib on Windows) takes none other, whatever is active.
 */
static bool pins(const struct cvm_fw *f)
{
	return f->major && !f->bundled[0];
}

int cvm_frameworks_exec_check(const char *cmd, const char *id, bool force)
{
	struct cvm_strbuf sb = { 0 };
	struct cvm_pyenv e = { 0 };
	struct cvm_version have;
	char py[PATH_MAX], need[96];
	const char *why;
	int r = 0;

	if (cvm_pyenv_of_command(cmd, py, sizeof(py)) < 0 || id_version(id, &have) < 0)
		return 0;
	cvm_err_mute(true);
	r = cvm_pyenv_read("", "exec", py, &e);
	cvm_err_mute(false);
	if (r < 0) {
		r = 0;
		goto out;
	}
	for (size_t i = 0; i < e.n; i++) {
		if (!pins(&e.fw[i]) || cvm_fw_accepts(&e.fw[i], &have, &why))
			continue;
		cvm_fw_need(&e.fw[i], need, sizeof(need));
		if (cvm_strbuf_addf(&sb, "%s%s %s needs %s (%s; %s)", sb.len ? ", " : "", e.fw[i].name,
				    e.fw[i].version, need, e.fw[i].requires, why) < 0) {
			r = -ENOMEM;
			goto out;
		}
	}
	if (!sb.len)
		goto out;
	if (force)
		cvm_warn("exec: the environment of '%s' (%s) cannot use cuDNN %s: %s; running it anyway "
			 "(--force)", cvm_safe(cmd), cvm_safe(e.prefix), id, cvm_safe(sb.buf));
	else
		r = cvm_err(-CVM_E_CONFLICT, "exec: the environment of '%s' (%s) cannot use cuDNN %s: "
			    "%s; exec's LD_LIBRARY_PATH would come before any copy of its own "
			    "('cudnnvm exec --force' runs it anyway)", cvm_safe(cmd), cvm_safe(e.prefix),
			    id, cvm_safe(sb.buf));
out:
	cvm_strbuf_release(&sb);
	cvm_pyenv_release(&e);
	return r;
}

/* Two frameworks no one cuDNN serves: other majors, or ranges that do not meet. */
static bool disagree(const struct cvm_fw *a, const struct cvm_fw *b)
{
	const char *why;

	if (a->major != b->major)
		return true;
	return (a->min.n && !cvm_fw_accepts(b, &a->min, &why) && why && strcmp(why, "older")) ||
	       (b->min.n && !cvm_fw_accepts(a, &b->min, &why) && why && strcmp(why, "older"));
}

/* "torch 2.11.0 (cuDNN 9.19 or a newer 9.x), ..." of every framework with a need. */
static int needs_text(const struct cvm_pyenv *e, struct cvm_strbuf *sb)
{
	char need[96];

	for (size_t i = 0; i < e->n; i++) {
		if (!pins(&e->fw[i]))
			continue;
		cvm_fw_need(&e->fw[i], need, sizeof(need));
		if (cvm_strbuf_addf(sb, "%s%s %s needs %s", sb->len ? ", " : "", e->fw[i].name,
				    e->fw[i].version, need) < 0)
			return -ENOMEM;
	}
	return 0;
}

int cvm_frameworks_pick(const char *root, const char *python, const struct cvm_version *versions,
			size_t n, const char *what, size_t *pick)
{
	struct cvm_strbuf sb = { 0 };
	struct cvm_pyenv e;
	const char *why;
	size_t best = n, nfw = 0;
	int r = cvm_pyenv_read(root, "--for", python, &e);

	if (r < 0)
		goto out;
	for (size_t i = 0; i < e.n; i++)
		for (size_t j = i + 1; j < e.n && pins(&e.fw[i]); j++)
			if (pins(&e.fw[j]) && disagree(&e.fw[i], &e.fw[j])) {
				r = needs_text(&e, &sb);
				if (r == 0)
					r = cvm_err(-CVM_E_CONFLICT, "--for '%s': its frameworks "
						    "disagree, no cuDNN serves them all: %s",
						    cvm_safe(python), sb.buf);
				goto out;
			}
	for (size_t i = 0; i < n; i++) {
		bool all = true;
		for (size_t k = 0; k < e.n && all; k++)
			all = !pins(&e.fw[k]) || cvm_fw_accepts(&e.fw[k], &versions[i], &why);
		if (all && (best == n || cvm_version_cmp(&versions[i], &versions[best]) > 0))
			best = i;
	}
	for (size_t k = 0; k < e.n; k++)
		nfw += pins(&e.fw[k]);
	for (size_t k = 0; k < e.n && !nfw; k++)
		if (e.fw[k].bundled[0]) {
			r = cvm_err(-CVM_E_NOTFOUND, "--for '%s': %s %s loads the cuDNN %d bundled with it "
				    "(%s), whatever is active: there is nothing to choose for it",
				    cvm_safe(python), e.fw[k].name, e.fw[k].version, e.fw[k].major,
				    CVM_WINDOWS ? "torch\\lib" : "torch/lib");
			goto out;
		}
	if (!nfw) {
		r = cvm_err(-CVM_E_NOTFOUND, "--for '%s': no framework there says which cuDNN it needs "
			    "(see 'cudnnvm doctor --python %s')", cvm_safe(python), cvm_safe(python));
		goto out;
	}
	if (best == n) {
		r = needs_text(&e, &sb);
		if (r == 0)
			r = cvm_err(-CVM_E_NOTFOUND, "--for '%s': %s; none of %s does",
				    cvm_safe(python), sb.buf, what);
		goto out;
	}
	*pick = best;
out:
	cvm_strbuf_release(&sb);
	cvm_pyenv_release(&e);
	return r;
}

/* Candidates for --for: versions and the names (store ids, labels) they stand for. */
struct candidates {
	struct cvm_version *v;
	const char **name;
	size_t k;
};

static int candidates_init(struct candidates *c, size_t n)
{
	c->k = 0;
	c->v = calloc(n + 1, sizeof(*c->v));
	c->name = calloc(n + 1, sizeof(*c->name));
	return c->v && c->name ? 0 : -ENOMEM;
}

/* The one candidate python's frameworks all take (cvm_frameworks_pick), its name into out. */
static int candidates_pick(struct candidates *c, const char *root, const char *python,
			   const char *what, char *out, size_t len)
{
	size_t pick;
	int r = cvm_frameworks_pick(root, python, c->v, c->k, what, &pick);

	if (r == 0 && cvm_fmt(out, len, "%s", c->name[pick]) < 0)
		r = -ENAMETOOLONG;
	return r;
}

static void candidates_release(struct candidates *c)
{
	free(c->v);
	free(c->name);
}

int cvm_frameworks_installed(struct cvm_ctx *ctx, const char *python, int cuda_major, char *id,
			     size_t len)
{
	struct candidates c = { 0 };
	char **ids = NULL, what[64];
	size_t n = 0;
	int r;

	r = ctx->store_open ? cvm_store_list(&ctx->store, &ids, &n) : 0;
	if (r < 0)
		return cvm_err(r, "cannot list %s: %s", ctx->store.display, cvm_strerror(r));
	r = candidates_init(&c, n);
	for (size_t i = 0; i < n && r == 0; i++) {
		char ver[64], plat[64];
		int m;
		if (cvm_store_parse_id(ids[i], ver, sizeof(ver), &m, plat, sizeof(plat)) == 0 &&
		    m == cuda_major && cvm_version_parse(ver, &c.v[c.k]) == 0)
			c.name[c.k++] = ids[i];
	}
	snprintf(what, sizeof(what), "the installed versions for CUDA %d", cuda_major);
	if (r == 0)
		r = candidates_pick(&c, ctx->root, python, what, id, len);
	candidates_release(&c);
	cvm_strv_free(ids, n);
	return r;
}

int cvm_frameworks_release(struct cvm_ctx *ctx, const char *python, int cuda_major,
			   const char *platform, char *spec, size_t len)
{
	struct cvm_catalogue cat = { 0 };
	struct candidates c = { 0 };
	char what[96];
	int r;

	if (!platform)
		platform = cvm_host_platform();
	/* Without --cuda, the default toolkit's major, as install itself takes it. */
	if (!cuda_major) {
		struct cvm_toolkit tk = { 0 };
		r = cvm_toolkit_select(ctx->root, NULL, &tk);
		if (r < 0)
			return r;
		cuda_major = tk.major;
		cvm_toolkit_release(&tk);
	}
	/* Built-in, then what update kept in the store, then --manifests: as install resolves. */
	r = cvm_update_catalogue(ctx, &cat);
	if (r == 0)
		r = candidates_init(&c, cat.n);
	for (size_t i = 0; i < cat.n && r == 0; i++)
		if (platform && cvm_release_build(&cat.rel[i], cuda_major, platform)) {
			c.v[c.k] = cat.rel[i].label_v;
			c.name[c.k++] = cat.rel[i].label;
		}
	snprintf(what, sizeof(what), "the catalogue's releases for CUDA %d (%s)", cuda_major,
		 platform ? platform : "this machine");
	if (r == 0)
		r = candidates_pick(&c, ctx->root, python, what, spec, len);
	candidates_release(&c);
	cvm_catalogue_release(&cat);
	return r;
}
