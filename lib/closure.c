/* SPDX-License-Identifier: MIT */
/*
 * The load closure's one resolver (closure.h): what the files need, looked
 * for in the folders the loader searches, in its order, over the
 * platform's part (closure_linux.c, closure_win.c); and what use, install
 * and doctor say of it.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "alloc.h"
#include "closure.h"
#include "error.h"
#include "findings.h"
#include "fsutil.h"
#include "out.h"
#include "select.h"
#include "store.h"

/* Windows' system places are its PATH's entries: a few dozen. */
#define MAX_PLACES 64

static int add_need(struct cvm_closure *c, const char *name, const char *by, bool by_name)
{
	struct cvm_closure_need *m;

	if (strlen(name) >= sizeof(m->name))
		return 0;
	for (size_t i = 0; i < c->n; i++)
		if (!strcmp(c->need[i].name, name))
			return 0;
	if (CVM_GROW(c->need, c->n + 1, c->cap) < 0)
		return -ENOMEM;
	m = &c->need[c->n++];
	memset(m, 0, sizeof(*m));
	snprintf(m->name, sizeof(m->name), "%s", name);
	snprintf(m->by, sizeof(m->by), "%s", by);
	m->by_name = by_name;
	m->toolkit = cvm_closure_os()->component(name) != NULL;
	return 0;
}

/* Whether folder/name is a file (a link to one counts, as for the loader). */
static bool has_file(const char *folder, const char *name)
{
	char p[1200];
	struct stat st;

	return cvm_fmt(p, sizeof(p), "%s/%s", folder, name) == 0 && stat(p, &st) == 0 &&
	       S_ISREG(st.st_mode);
}

static bool in_places(const struct cvm_closure_place *p, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (has_file(p[i].host, name))
			return true;
	return false;
}

/* The folders and caches, in the loader's order, said once into c->looked. */
struct search {
	const char *root, *dir;
	struct cvm_closure_place tk[MAX_PLACES], sys[MAX_PLACES], host[MAX_PLACES];
	size_t ntk, nsys, nhost;
	void *cache, *host_cache;
};

static void say_places(struct cvm_closure *c, const struct cvm_closure_place *p, size_t n)
{
	size_t len = strlen(c->looked);

	for (size_t i = 0; i < n && len + 2 < sizeof(c->looked); i++) {
		snprintf(c->looked + len, sizeof(c->looked) - len, "%s%s", len ? ", " : "", p[i].shown);
		len = strlen(c->looked);
	}
}

/* Drops from p the folder that is dir (a toolkit's lib64 holding the cuDNN checked): said once. */
static void drop_same(struct cvm_closure_place *p, size_t *n, const char *dir)
{
	struct stat a, b;

	if (stat(dir, &a) < 0)
		return;
	for (size_t i = 0; i < *n; i++) {
		if (stat(p[i].host, &b) < 0 || a.st_dev != b.st_dev || a.st_ino != b.st_ino)
			continue;
		memmove(&p[i], &p[i + 1], (*n - i - 1) * sizeof(*p));
		(*n)--;
		return;
	}
}

static void search_open(struct search *s, const char *root, const char *dir, const char *shown,
			const struct cvm_toolkit *tk, struct cvm_closure *c)
{
	const struct cvm_closure_os *os = cvm_closure_os();
	struct cvm_closure_place cache = { .host = "", .shown = "" };

	memset(s, 0, sizeof(*s));
	s->root = root;
	s->dir = dir;
	s->ntk = os->toolkit_places(tk, s->tk, MAX_PLACES);
	drop_same(s->tk, &s->ntk, dir);
	s->nsys = os->system_places(root, s->sys, MAX_PLACES);
	s->cache = os->cache_open(root);
	/*
	 * A root without a C library (a test's, an image being built) is no
	 * system a program runs in: the host's system libraries serve.
	 */
	if (root[0] && os->libc && !in_places(s->sys, s->nsys, os->libc) &&
	    !(s->cache && os->cache_has(s->cache, root, os->libc))) {
		s->nhost = os->system_places("", s->host, MAX_PLACES);
		s->host_cache = os->cache_open("");
	}
	cvm_env_value(c->looked, sizeof(c->looked), shown, NULL);
	say_places(c, s->tk, s->ntk);
	if (s->cache) {
		snprintf(cache.shown, sizeof(cache.shown), "%s", os->cache_name);
		say_places(c, &cache, 1);
	}
	say_places(c, s->sys, s->nsys);
	/* Said apart: a toolkit's library is never looked for there. */
	if (s->nhost || s->host_cache) {
		size_t len = strlen(c->looked);
		snprintf(c->looked + len, sizeof(c->looked) - len, "; for system libraries the host's %s",
			 s->host_cache ? "loader cache" : "folders");
		say_places(c, s->host, s->nhost);
	}
}

static bool search_find(const struct search *s, const struct cvm_closure_need *m)
{
	const struct cvm_closure_os *os = cvm_closure_os();

	if (has_file(s->dir, m->name) || in_places(s->tk, s->ntk, m->name) ||
	    (s->cache && os->cache_has(s->cache, s->root, m->name)) ||
	    in_places(s->sys, s->nsys, m->name))
		return true;
	/* A toolkit's library must be in the root: the host's would not be there at run time. */
	if (m->toolkit)
		return false;
	return (s->host_cache && os->cache_has(s->host_cache, "", m->name)) ||
	       in_places(s->host, s->nhost, m->name);
}

static void search_close(struct search *s)
{
	const struct cvm_closure_os *os = cvm_closure_os();

	if (s->cache)
		os->cache_close(s->cache);
	if (s->host_cache)
		os->cache_close(s->host_cache);
}

/* dir as seen inside root. */
static const char *inside(const char *root, const char *dir)
{
	size_t n = strlen(root);

	return n && !strncmp(dir, root, n) && dir[n] == '/' ? dir + n : dir;
}

static int by_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The cuDNN libraries of dir, sorted (so that each need is told as of the same file every time). */
static int list_dir(const struct cvm_closure_os *os, const char *dir, char ***names, size_t *n)
{
	struct dirent *de;
	size_t cap = 0;
	DIR *d = NULL;
	int r;

	*names = NULL;
	*n = 0;
	r = cvm_opendir_at(AT_FDCWD, dir, 0, &d);
	while (r == 0 && (de = readdir(d))) {
		if (!os->is_lib(de->d_name))
			continue;
		if (CVM_GROW(*names, *n + 1, cap) < 0 || !((*names)[*n] = strdup(de->d_name)))
			r = -ENOMEM;
		else
			(*n)++;
	}
	if (d)
		closedir(d);
	if (*n)
		qsort(*names, *n, sizeof(**names), by_name);
	return r;
}

/* Each library of dir, its needs added to c. 0 or -errno. */
static int read_dir(const struct cvm_closure_os *os, const char *dir, struct cvm_closure *c)
{
	char **names = NULL, path[4096];
	size_t n = 0;
	int r = list_dir(os, dir, &names, &n);

	for (size_t k = 0; r == 0 && k < n; k++) {
		if (cvm_fmt(path, sizeof(path), "%s/%s", dir, names[k]) < 0)
			continue;
		r = os->needs(path, names[k], c, add_need);
		if (r == 0)
			c->nlibs++;
		r = r > 0 ? 0 : r;
	}
	cvm_strv_free(names, n);
	return r;
}

int cvm_closure_check(const char *root, const char *dir, const struct cvm_toolkit *tk,
		      struct cvm_closure *c)
{
	const struct cvm_closure_os *os = cvm_closure_os();
	struct cvm_closure_need t;
	struct search *s;
	int r;

	memset(c, 0, sizeof(*c));
	r = read_dir(os, dir, c);
	if (r < 0)
		return r;
	/* Three lists of places: too large for a stack. */
	s = malloc(sizeof(*s));
	if (!s) {
		cvm_closure_release(c);
		return -ENOMEM;
	}
	search_open(s, root, dir, inside(root, dir), tk, c);
	/* The missing ones first, each in the order found. */
	for (size_t i = 0; i < c->n; i++) {
		if (search_find(s, &c->need[i]))
			continue;
		t = c->need[i];
		memmove(&c->need[c->missing + 1], &c->need[c->missing],
			(i - c->missing) * sizeof(t));
		c->need[c->missing++] = t;
	}
	search_close(s);
	free(s);
	return 0;
}

void cvm_closure_release(struct cvm_closure *c)
{
	free(c->need);
	memset(c, 0, sizeof(*c));
}

void cvm_closure_what(const struct cvm_closure_need *m, char *buf, size_t len)
{
	snprintf(buf, len, "%s (%s by %s)", m->name, m->by_name ? "loaded by name" : "needed",
		 m->by);
}

void cvm_closure_fix(const struct cvm_closure_need *m, const struct cvm_toolkit *tk, char *buf,
		     size_t len)
{
	const struct cvm_closure_os *os = cvm_closure_os();
	const char *comp = os->component(m->name), *advice = os->advice ? os->advice(m->name) : NULL;
	char pkg[128], where[512];

	if (comp) {
		snprintf(pkg, sizeof(pkg), os->package, comp, tk->major, tk->minor);
		snprintf(buf, len, "install the CUDA %d.%d component %s (%s) into %s", tk->major,
			 tk->minor, comp, pkg, cvm_path_shown(tk->display, where, sizeof(where)));
	} else if (advice)
		snprintf(buf, len, "%s", advice);
	else if (!strncmp(m->name, "libz.", 5) || !strncmp(m->name, "zlib", 4))
		snprintf(buf, len, "install zlib (package zlib1g on Debian and Ubuntu, zlib on RHEL)");
	else
		snprintf(buf, len, "install the system package that provides %s", m->name);
}

/* The missing ones as one list: "a (needed by x), b (loaded by name by y)". */
static void list_missing(const struct cvm_closure *c, struct cvm_strbuf *sb)
{
	char what[200];

	for (size_t i = 0; i < c->missing; i++) {
		cvm_closure_what(&c->need[i], what, sizeof(what));
		cvm_strbuf_addf(sb, "%s%s", i ? ", " : "", what);
	}
}

/* The closure of installed version id (STORE/versions/ID/lib, Windows' .../bin). */
static int version_closure(const struct cvm_ctx *ctx, const struct cvm_toolkit *tk, const char *id,
			   struct cvm_closure *c)
{
	char dir[4096];
	int r;

	r = cvm_fmt(dir, sizeof(dir), "%s/versions/%s/%s", ctx->store.path, id,
		    cvm_closure_os()->version_dir);
	if (r < 0)
		return r;
	return cvm_closure_check(ctx->root, dir, tk, c);
}

int cvm_closure_use(struct cvm_ctx *ctx, const struct cvm_toolkit *tk, const char *id, bool force)
{
	struct cvm_closure c;
	struct cvm_strbuf sb = { 0 };
	char cuda[16], fix[512];
	int r;

	cvm_toolkit_name(tk, cuda, sizeof(cuda));
	r = version_closure(ctx, tk, id, &c);
	if (r < 0) {
		cvm_warn("cannot read what %s needs to load: %s; the smoke test will tell",
			 cvm_safe(id), cvm_strerror(r));
		return 0;
	}
	if (!c.missing)
		goto out;
	list_missing(&c, &sb);
	if (force)
		cvm_warn("--force: activating %s for CUDA %s although the loader would not find %s; "
			 "looked in %s", cvm_safe(id), cuda, sb.buf ? sb.buf : "", c.looked);
	else
		r = cvm_err(-CVM_E_SMOKE, "refusing to activate %s for CUDA %s: the loader would not "
			    "find %s; looked in %s; nothing changed ('cudnnvm use --force' activates "
			    "it anyway)", cvm_safe(id), cuda, sb.buf ? sb.buf : "", c.looked);
	for (size_t i = 0; i < c.missing; i++) {
		cvm_closure_fix(&c.need[i], tk, fix, sizeof(fix));
		cvm_info("  fix for %s: %s", c.need[i].name, fix);
	}
out:
	cvm_strbuf_release(&sb);
	cvm_closure_release(&c);
	return r;
}

void cvm_closure_warn(const struct cvm_ctx *ctx, const char *cuda, int cuda_major, const char *id)
{
	struct cvm_toolkit *t = NULL;
	struct cvm_closure c = { 0 };
	struct cvm_strbuf sb = { 0 };
	char name[16], where[512];
	size_t n = 0;
	int k = -1;

	if (cvm_toolkits_find(ctx->root, &t, &n) < 0)
		return;
	for (size_t i = 0; cuda && i < n && k < 0; i++) {
		cvm_toolkit_name(&t[i], name, sizeof(name));
		if (!strcmp(name, cuda))
			k = (int)i;
	}
	if (!cuda)
		k = cvm_toolkit_default(ctx->root, t, n);
	if (k < 0 || t[k].major != cuda_major || version_closure(ctx, &t[k], id, &c) < 0)
		goto out;
	if (c.missing) {
		list_missing(&c, &sb);
		cvm_toolkit_name(&t[k], name, sizeof(name));
		cvm_warn("CUDA %s (%s) lacks what %s needs to load: %s; 'cudnnvm use' refuses it "
			 "there until it has them", name, cvm_path_shown(t[k].display, where, sizeof(where)), cvm_safe(id),
			 sb.buf ? sb.buf : "");
	}
out:
	cvm_strbuf_release(&sb);
	cvm_closure_release(&c);
	cvm_toolkits_free(t, n);
}

void cvm_closure_doctor(struct cvm_findings *f, const char *root, const struct cvm_toolkit *t,
			size_t n)
{
	struct cvm_closure_place p[MAX_PLACES];
	char what[200], fix[512];

	for (size_t i = 0; i < n; i++) {
		size_t np = cvm_closure_os()->toolkit_places(&t[i], p, MAX_PLACES);
		for (size_t k = 0; k < np; k++) {
			struct cvm_closure c;
			if (cvm_closure_check(root, p[k].host, &t[i], &c) < 0)
				continue;
			for (size_t j = 0; j < c.missing; j++) {
				cvm_closure_what(&c.need[j], what, sizeof(what));
				cvm_closure_fix(&c.need[j], &t[i], fix, sizeof(fix));
				cvm_findings_problem(f, fix, "the cuDNN in %s cannot load: %s is not "
						     "found (looked in %s)", p[k].shown, what, c.looked);
			}
			bool seen = c.nlibs > 0;
			cvm_closure_release(&c);
			/* lib64 and lib are often one folder: its cuDNN is told once. */
			if (seen)
				break;
		}
	}
}

void cvm_closure_doctor_active(struct cvm_findings *f, struct cvm_ctx *ctx, const struct cvm_toolkit *t,
			       size_t n)
{
	char cuda[16], id[256], what[200], fix[512];

	for (size_t i = 0; ctx->store_open && i < n; i++) {
		struct cvm_closure c;
		cvm_toolkit_name(&t[i], cuda, sizeof(cuda));
		if (cvm_active_get(&ctx->store, cuda, id, sizeof(id)) < 0 ||
		    version_closure(ctx, &t[i], id, &c) < 0)
			continue;
		for (size_t j = 0; j < c.missing; j++) {
			cvm_closure_what(&c.need[j], what, sizeof(what));
			cvm_closure_fix(&c.need[j], &t[i], fix, sizeof(fix));
			cvm_findings_problem(f, fix, "%s, active for CUDA %s, cannot load: %s is not "
					     "found (looked in %s)", cvm_safe(id), cuda, what, c.looked);
		}
		cvm_closure_release(&c);
	}
}
