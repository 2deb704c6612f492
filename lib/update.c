/* SPDX-License-Identifier: MIT */
/*
 * update (update.h). A listing and the manifests it names are as untrusted
 * as any download: a listing can only name files of its own folder, sizes
 * are bounded, each manifest goes through the catalogue's strict parser and
 * must hold the release its name says, and a release already known may gain
 * builds but never see one of its archives change. Nothing is kept unless
 * every manifest passes.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "alloc.h"
#include "cache.h"
#include "error.h"
#include "fsutil.h"
#include "json.h"
#include "out.h"
#include "plan.h"
#include "store.h"
#include "update.h"

int cvm_update_catalogue(const struct cvm_ctx *ctx, struct cvm_catalogue *cat)
{
	char dir[4096];
	struct stat st;
	int r;

	r = cvm_catalogue_load(cat, NULL);
	if (r < 0)
		return r;
	if (ctx->store_open && ctx->store.fd >= 0 &&
	    fstatat(ctx->store.fd, "catalogue", &st, AT_SYMLINK_NOFOLLOW) == 0) {
		r = cvm_fmt(dir, sizeof(dir), "%s/catalogue", ctx->store.path);
		if (r == 0 && !S_ISDIR(st.st_mode))
			r = cvm_err(-CVM_E_NOTREG, "'%s/catalogue' is not a folder",
				    cvm_safe(ctx->store.display));
		else if (r == 0)
			r = cvm_catalogue_add_dir(cat, dir);
	}
	if (r == 0 && ctx->manifests)
		r = cvm_catalogue_add_dir(cat, ctx->manifests);
	if (r < 0)
		cvm_catalogue_release(cat);
	else
		cvm_catalogue_sort(cat);
	return r;
}

/* "redistrib_9.27.0.json" (n bytes at s): its label into label; false for any other name. */
static bool manifest_name(const char *s, size_t n, char *label, size_t llen)
{
	struct cvm_version v;
	size_t m;

	if (n < 16 || strncmp(s, "redistrib_", 10) || strncmp(s + n - 5, ".json", 5))
		return false;
	m = n - 15;
	if (m >= llen || m > 32)
		return false;
	memcpy(label, s + 10, m);
	label[m] = '\0';
	return strspn(label, "0123456789.") == m && cvm_version_parse(label, &v) == 0 && v.n == 3;
}

static bool mentions(const char *s, size_t n, const char *what)
{
	size_t k = strlen(what);

	for (size_t i = 0; i + k <= n; i++)
		if (!strncmp(s + i, what, k))
			return true;
	return false;
}

static int add_label(char ***v, size_t *n, size_t *cap, const char *label)
{
	for (size_t i = 0; i < *n; i++)
		if (!strcmp((*v)[i], label))
			return 0;
	if (CVM_GROW(*v, *n + 1, *cap) < 0 || !((*v)[*n] = strdup(label)))
		return cvm_err(-ENOMEM, "out of memory reading a listing");
	(*n)++;
	return 0;
}

/* The value of the href at p (after "href="): its start and length; 0 when there is none. */
static size_t href_value(const char *p, const char *end, const char **val)
{
	char q = p < end ? *p : '\0';
	const char *s;

	if (q == '"' || q == '\'') {
		for (s = ++p; s < end && *s != q; s++)
			;
	} else {
		for (s = p; s < end && *s != '>' && *s != ' ' && *s != '\t' && *s != '\n'; s++)
			;
	}
	*val = p;
	return (size_t)(s - p);
}

static bool href_at(const char *p, const char *end)
{
	static const char h[] = "href=";

	for (size_t i = 0; i < 5; i++)
		if (p + i >= end || (p[i] | 0x20) != h[i])
			return false;
	return true;
}

int cvm_update_parse_listing(const char *url, const char *buf, size_t len, char ***labels,
			     size_t *n)
{
	const char *p = buf, *end = buf + len, *val;
	size_t cap = *n, k;
	char label[40];
	int r = 0;

	for (; p < end && r == 0; p++) {
		if (!href_at(p, end))
			continue;
		k = href_value(p + 5, end, &val);
		if (manifest_name(val, k, label, sizeof(label))) {
			if (*n >= CVM_UPDATE_NAMES_MAX)
				return cvm_err(-CVM_E_UNSAFE, "listing of '%s': more than %d manifests: "
					       "refused", cvm_safe(url), CVM_UPDATE_NAMES_MAX);
			r = add_label(labels, n, &cap, label);
		} else if (mentions(val, k, "redistrib_")) {
			char name[201];

			/* A manifest elsewhere ("../", another host, an encoded name) is never fetched. */
			snprintf(name, sizeof(name), "%.*s", (int)(k > 200 ? 200 : k), val);
			return cvm_err(-CVM_E_UNSAFE, "listing of '%s': '%s' is not a manifest of that "
				       "folder (redistrib_X.Y.Z.json): refused, nothing was changed",
				       cvm_safe(url), cvm_safe(name));
		}
	}
	return r;
}

/* A folder's manifests (a file:// mirror): its names are the listing. */
static int list_folder(const char *url, const char *path, char ***labels, size_t *n)
{
	struct dirent *de;
	size_t cap = 0;
	char label[40];
	DIR *d;
	int r = 0;

	d = opendir(path);
	if (!d)
		return cvm_err(-errno, "cannot list '%s': %s", cvm_safe(url), strerror(errno));
	while (r == 0 && (de = readdir(d))) {
		if (!manifest_name(de->d_name, strlen(de->d_name), label, sizeof(label)))
			continue;
		if (*n >= CVM_UPDATE_NAMES_MAX)
			r = cvm_err(-CVM_E_UNSAFE, "listing of '%s': more than %d manifests: refused",
				    cvm_safe(url), CVM_UPDATE_NAMES_MAX);
		else
			r = add_label(labels, n, &cap, label);
	}
	closedir(d);
	return r;
}

static int by_version(const void *a, const void *b)
{
	struct cvm_version x, y;

	cvm_version_parse(*(char *const *)a, &x);
	cvm_version_parse(*(char *const *)b, &y);
	return cvm_version_cmp(&x, &y);
}

/* What one listed manifest brings. */
enum got_kind { GOT_SAME, GOT_NEW, GOT_MORE };

struct got {
	char label[40], name[64];
	enum got_kind kind;
	size_t builds;			/* its builds; GOT_MORE: those the catalogue lacks */
};

/* One update's state. */
struct run {
	struct cvm_ctx *ctx;
	struct cvm_fetch_opts fo;
	char mirror[2048];
	struct cvm_catalogue cat;	/* as it is before this update */
	char staged[256];		/* STORE/.staging/catalogue.XXXXXX */
	char tmp[4096];			/* or, in a dry run with no store yet, a temporary folder */
	int sfd;
	char **labels;
	size_t nlabels;
	struct got *got;
	size_t ngot, gotcap;
};

/* Where the listing and manifests are fetched: staging, or in a dry run (which writes nothing to the store) a temporary folder. */
static int stage(struct run *u)
{
	const char *t = getenv("TMPDIR");

	if (!cvm_plan_dry(&u->ctx->plan))
		return cvm_store_stage(&u->ctx->store, "catalogue", u->staged, sizeof(u->staged), &u->sfd);
	if (!t || !*t)
		t = getenv("TEMP");
	if (cvm_fmt(u->tmp, sizeof(u->tmp), "%s/cudnnvm-update.XXXXXX", t && *t ? t : "/tmp") < 0 ||
	    !mkdtemp(u->tmp) || (u->sfd = open(u->tmp, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
		return cvm_err(-errno, "cannot create a temporary folder '%s': %s", cvm_safe(u->tmp),
			       strerror(errno));
	return 0;
}

/* Fetches into the staging folder and reads (at most max bytes): *buf is the caller's. */
static int fetch_text(struct run *u, const char *url, const char *name, size_t max, char **buf,
		      size_t *len)
{
	int fd, r;

	u->fo.max_size = max;
	fd = cvm_fetch(url, u->sfd, name, 0, NULL, &u->fo);
	if (fd < 0)
		return fd;
	r = cvm_read_fd(fd, max, buf, len);
	close(fd);
	if (r < 0)
		return cvm_err(r, "cannot read what '%s' gave: %s", cvm_safe(url), cvm_strerror(r));
	return 0;
}

static int read_listing(struct run *u)
{
	char *buf = NULL;
	size_t len = 0;
	int r;

	if (!strncmp(u->mirror, "file://", 7))
		return list_folder(u->mirror, u->mirror + 7, &u->labels, &u->nlabels);
	r = fetch_text(u, u->mirror, "listing.html", CVM_UPDATE_LISTING_MAX, &buf, &len);
	if (r == 0)
		r = cvm_update_parse_listing(u->mirror, buf, len, &u->labels, &u->nlabels);
	free(buf);
	return r;
}

static const struct cvm_release *known(const struct cvm_catalogue *cat, const struct cvm_version *v)
{
	for (size_t i = 0; i < cat->n; i++)
		if (!cvm_version_cmp(&cat->rel[i].label_v, v))
			return &cat->rel[i];
	return NULL;
}

/*
 * A release the catalogue has already: each archive it names there must be
 * the same bytes (SHA-256, size); new archives make it GOT_MORE.
 */
static int compare(const char *url, const struct cvm_release *old, const struct cvm_release *fresh,
		   struct got *g)
{
	g->kind = GOT_SAME;
	g->builds = 0;
	for (size_t i = 0; i < fresh->nbuilds; i++) {
		const struct cvm_build *b = &fresh->builds[i];
		size_t j;

		for (j = 0; j < old->nbuilds; j++)
			if (!strcmp(old->builds[j].relative_path, b->relative_path))
				break;
		if (j == old->nbuilds) {
			g->kind = GOT_MORE;
			g->builds++;
			continue;
		}
		if (strcmp(old->builds[j].sha256, b->sha256) ||
		    (b->has_size && old->builds[j].has_size && b->size != old->builds[j].size))
			return cvm_err(-CVM_E_INTEGRITY, "'%s' changes cuDNN %s: %s is SHA-256 %s there "
				       "but %s in the catalogue (%s): refused, nothing was changed",
				       cvm_safe(url), old->label, cvm_safe(b->relative_path), b->sha256,
				       old->builds[j].sha256, cvm_safe(old->source));
	}
	return 0;
}

/* Fetches, parses and judges the manifest of one listed label. */
static int fetch_one(struct run *u, const char *label, struct got *g)
{
	struct cvm_catalogue one = { 0 };
	const struct cvm_release *old;
	char url[4096], *buf = NULL;
	size_t len = 0;
	int r;

	memset(g, 0, sizeof(*g));
	snprintf(g->label, sizeof(g->label), "%s", label);
	snprintf(g->name, sizeof(g->name), "redistrib_%s.json", label);
	r = cvm_fmt(url, sizeof(url), "%s%s", u->mirror, g->name);
	if (r == 0)
		r = fetch_text(u, url, g->name, CVM_UPDATE_MANIFEST_MAX, &buf, &len);
	if (r == 0)
		r = cvm_catalogue_add_buf(&one, url, buf, len);
	if (r < 0)
		goto out;
	/* Kept under its name, a manifest of another release would replace that one. */
	if (one.n != 1 || strcmp(one.rel[0].label, label)) {
		r = cvm_err(-CVM_E_MANIFEST, "'%s' holds %s, not release %s: refused, nothing was "
			    "changed", cvm_safe(url), one.n == 1 ? cvm_safe(one.rel[0].label) :
			    "several releases", label);
		goto out;
	}
	old = known(&u->cat, &one.rel[0].label_v);
	if (old) {
		r = compare(url, old, &one.rel[0], g);
	} else {
		g->kind = GOT_NEW;
		g->builds = one.rel[0].nbuilds;
	}
out:
	free(buf);
	cvm_catalogue_release(&one);
	return r;
}

/* Moves the manifests that add something from staging into STORE/catalogue (described in a dry run). */
static int keep(struct run *u)
{
	struct cvm_ctx *ctx = u->ctx;
	char shown[4096];
	int cfd = -1, r = 0;

	for (size_t i = 0; i < u->ngot && r == 0; i++) {
		const struct got *g = &u->got[i];

		if (g->kind == GOT_SAME)
			continue;
		snprintf(shown, sizeof(shown), "%s/catalogue/%s", ctx->store.display, g->name);
		if (cvm_plan_describe(&ctx->plan, "add", shown, NULL, "(cuDNN %s)", g->label))
			continue;
		if (cfd < 0) {
			snprintf(shown, sizeof(shown), "%s/catalogue", ctx->store.display);
			r = cvm_do_mkdir_at(&ctx->plan, ctx->store.fd, "catalogue", 0755, shown);
			cfd = r < 0 ? r : openat(ctx->store.fd, "catalogue",
						 O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (cfd < 0) {
				r = cvm_err(r < 0 ? r : -errno, "cannot open '%s': %s", cvm_safe(shown),
					    cvm_strerror(r < 0 ? r : -errno));
				break;
			}
		}
		if (renameat(u->sfd, g->name, cfd, g->name) < 0)
			r = cvm_err(-errno, "cannot keep '%s': %s", cvm_safe(shown), strerror(errno));
	}
	if (cfd >= 0) {
		(void)cvm_fsync_dir(cfd);
		close(cfd);
	}
	return r;
}

static const char *const kind_word[] = { "unchanged", "new", "more builds" };

static int report(const struct run *u)
{
	size_t news = 0;
	cvm_json *doc, *arr;
	int r;

	for (size_t i = 0; i < u->ngot; i++)
		news += u->got[i].kind != GOT_SAME;
	if (!cvm_out.json) {
		for (size_t i = 0; i < u->ngot; i++)
			if (u->got[i].kind != GOT_SAME)
				cvm_print("%s: cuDNN %s (%s, %zu builds)", kind_word[u->got[i].kind],
					  u->got[i].label, u->got[i].name, u->got[i].builds);
		if (!news)
			cvm_info("%zu manifests at %s: the catalogue is up to date", u->ngot, u->mirror);
		else
			cvm_info("%zu manifests at %s: %zu %s to the catalogue", u->ngot, u->mirror, news,
				 cvm_plan_dry(&u->ctx->plan) ? "would be added" : "added");
		return 0;
	}
	doc = cvm_json_object();
	arr = cvm_json_array();
	if (!doc || !arr || cvm_json_set(doc, "releases", arr) < 0) {
		cvm_json_free(doc);
		cvm_json_free(arr);
		return -ENOMEM;
	}
	cvm_json_set(doc, "mirror", cvm_json_string(u->mirror));
	for (size_t i = 0; i < u->ngot; i++) {
		cvm_json *o = cvm_json_object();

		cvm_json_set(o, "release", cvm_json_string(u->got[i].label));
		cvm_json_set(o, "manifest", cvm_json_string(u->got[i].name));
		cvm_json_set(o, "status", cvm_json_string(kind_word[u->got[i].kind]));
		cvm_json_set(o, "builds", cvm_json_integer((int64_t)u->got[i].builds));
		cvm_json_append(arr, o);
	}
	r = cvm_json_print(doc);
	cvm_json_free(doc);
	return r;
}

/* --offline: nothing read from the mirror; the stored catalogue checked (by loading it) and counted. */
static int offline(struct run *u)
{
	cvm_info("--offline: the mirror was not read; the catalogue has %zu releases "
		 "(built in and %s/catalogue)", u->cat.n, cvm_safe(u->ctx->store.display));
	if (cvm_out.json)
		return report(u);
	return 0;
}

int cvm_update(struct cvm_ctx *ctx, const struct cvm_update_opts *o)
{
	struct run u = { .ctx = ctx, .fo = o->fo, .sfd = -1 };
	int r;

	r = cvm_update_catalogue(ctx, &u.cat);
	if (r < 0)
		return r;
	r = cvm_mirror(ctx, u.mirror, sizeof(u.mirror));
	if (r == 0 && o->offline) {
		r = offline(&u);
		goto out;
	}
	if (r == 0 && !cvm_fetch_supported(u.mirror))
		r = cvm_err_usage("update", "--mirror '%s': expected an http://, https:// or file:// "
				  "URL", cvm_safe(u.mirror));
	/* Fetched into staging (swept after a crash), kept only when all of them pass. */
	if (r == 0)
		r = stage(&u);
	if (r == 0)
		r = read_listing(&u);
	if (r == 0 && u.nlabels > 1)
		qsort(u.labels, u.nlabels, sizeof(*u.labels), by_version);
	if (r == 0 && CVM_GROW(u.got, u.nlabels + 1, u.gotcap) < 0)
		r = -ENOMEM;
	for (size_t i = 0; r == 0 && i < u.nlabels; i++) {
		r = fetch_one(&u, u.labels[i], &u.got[i]);
		u.ngot = i + 1;
	}
	if (r == 0)
		r = keep(&u);
	if (r == 0)
		r = report(&u);
out:
	if (u.sfd >= 0)
		close(u.sfd);
	if (u.staged[0])
		(void)cvm_store_discard(&ctx->store, u.staged);
	if (u.tmp[0])
		(void)cvm_rm_rf_at(AT_FDCWD, u.tmp);
	free(u.got);
	cvm_strv_free(u.labels, u.nlabels);
	cvm_catalogue_release(&u.cat);
	return r;
}
