/* SPDX-License-Identifier: MIT */
/* mirror (mirror.h): the catalogue's manifests and archives, as NVIDIA's server lays them out. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cache.h"
#include "embedded.h"
#include "error.h"
#include "fsutil.h"
#include "json.h"
#include "mirror.h"
#include "out.h"
#include "update.h"

/* One mirror run's state. */
struct mrun {
	struct cvm_ctx *ctx;
	const struct cvm_mirror_opts *o;
	char source[2048];		/* where archives come from */
	int dfd;			/* DIR */
	cvm_json *arr;			/* --json: the archives */
	size_t fetched, present, manifests;
};

static bool release_wanted(const struct cvm_mirror_opts *o, const struct cvm_release *r)
{
	struct cvm_version v;

	if (!o->nspecs)
		return true;
	for (size_t i = 0; i < o->nspecs; i++)
		if (cvm_version_parse(o->specs[i], &v) == 0 && cvm_version_matches(&v, &r->label_v))
			return true;
	return false;
}

static bool build_wanted(const struct cvm_mirror_opts *o, const struct cvm_build *b)
{
	bool cuda = !o->ncuda, plat = !o->nplatforms;

	for (size_t i = 0; i < o->ncuda; i++)
		cuda = cuda || o->cuda[i] == b->cuda_major;
	for (size_t i = 0; i < o->nplatforms; i++)
		plat = plat || !strcmp(o->platforms[i], b->platform);
	return cuda && plat;
}

/*
 * The folder of relative_path (below DIR), made as needed; each part opened
 * without following a link, so that the mirror's tree stays inside DIR.
 */
static int open_parent(int dfd, const char *rel, const char **base)
{
	char part[1100];
	const char *p = rel, *s;
	int fd = dup(dfd), nfd;

	if (fd < 0)
		return -errno;
	while ((s = strchr(p, '/'))) {
		snprintf(part, sizeof(part), "%.*s", (int)(s - p), p);
		if (mkdirat(fd, part, 0755) < 0 && errno != EEXIST) {
			nfd = -errno;
		} else {
			nfd = openat(fd, part, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (nfd < 0)
				nfd = -errno;
		}
		close(fd);
		if (nfd < 0)
			return nfd;
		fd = nfd;
		p = s + 1;
	}
	*base = p;
	return fd;
}

/* The bytes of the manifest rel came from, when it is one of NVIDIA's redistrib_<label>.json. */
static int manifest_bytes(const struct cvm_release *rel, char **buf, size_t *len, bool *found)
{
	const char *slash = strrchr(rel->source, '/');
	const char *name = slash ? slash + 1 : rel->source;
	char want[64];

	*found = false;
	snprintf(want, sizeof(want), "redistrib_%s.json", rel->label);
	if (strcmp(name, want))
		return 0;
	*found = true;
	if (slash)
		return cvm_read_file_at(AT_FDCWD, rel->source, CVM_UPDATE_MANIFEST_MAX, buf, len);
	for (const struct cvm_embedded *e = cvm_embedded_manifests; e->name; e++) {
		if (strcmp(e->name, name))
			continue;
		*buf = malloc(e->len + 1);
		if (!*buf)
			return -ENOMEM;
		memcpy(*buf, e->data, e->len + 1);
		*len = e->len;
		return 0;
	}
	*found = false;
	return 0;
}

static int put_manifest(struct mrun *m, const struct cvm_release *rel)
{
	char *buf = NULL, name[64];
	size_t len = 0;
	bool found;
	int r;

	r = manifest_bytes(rel, &buf, &len, &found);
	if (r < 0)
		return cvm_err(r, "cannot read '%s': %s", cvm_safe(rel->source), cvm_strerror(r));
	if (!found) {
		cvm_verbose("cuDNN %s has no manifest of NVIDIA's (%s): its archives only", rel->label,
			    cvm_safe(rel->source));
		return 0;
	}
	snprintf(name, sizeof(name), "redistrib_%s.json", rel->label);
	r = cvm_write_file_at(m->dfd, name, buf, len, 0644);
	free(buf);
	if (r < 0)
		return cvm_err(r, "cannot write '%s/%s': %s", cvm_safe(m->o->dir), name, cvm_strerror(r));
	m->manifests++;
	return 0;
}

static void note(struct mrun *m, const struct cvm_build *b, const char *status)
{
	cvm_json *e;

	if (!m->arr || !(e = cvm_json_object()))
		return;
	cvm_json_set(e, "relative_path", cvm_json_string(b->relative_path));
	cvm_json_set(e, "status", cvm_json_string(status));
	cvm_json_append(m->arr, e);
}

/* One archive: kept when it is there and verifies, else fetched (resuming a .part). */
static int put_archive(struct mrun *m, const struct cvm_build *b)
{
	char path[4096], url[4096];
	const char *base = NULL;
	int pfd, fd, r;

	r = cvm_fmt(path, sizeof(path), "%s/%s", m->o->dir, b->relative_path);
	if (r == 0)
		r = cvm_fmt(url, sizeof(url), "%s%s", m->source, b->relative_path);
	if (r < 0)
		return cvm_err(r, "cannot mirror '%s': name too long", cvm_safe(b->relative_path));
	pfd = open_parent(m->dfd, b->relative_path, &base);
	if (pfd < 0)
		return cvm_err(pfd, "cannot make the folder of '%s': %s", cvm_safe(path), cvm_strerror(pfd));
	fd = cvm_open_regular(pfd, base, O_RDONLY | O_NOFOLLOW, 0);
	if (fd >= 0) {
		r = cvm_cache_check(fd, b, path);
		close(fd);
		/* Someone else's file at the catalogue's path: said (by the check), never replaced. */
		if (r < 0)
			cvm_info("'%s' is left as it is: remove it and run again", cvm_safe(path));
		else
			m->present++, note(m, b, "present");
		goto out;
	}
	if (fd != -ENOENT) {
		r = cvm_err(fd, "cannot open '%s': %s", cvm_safe(path), cvm_strerror(fd));
		goto out;
	}
	cvm_info("downloading %s", url);
	fd = cvm_fetch(url, pfd, base, b->has_size ? b->size : 0, b->sha256, &m->o->fo);
	r = fd < 0 ? fd : 0;
	if (fd >= 0) {
		close(fd);
		m->fetched++;
		note(m, b, "fetched");
	}
out:
	close(pfd);
	return r;
}

static int mirror_release(struct mrun *m, const struct cvm_release *rel)
{
	size_t kept = 0;
	int r = 0;

	for (size_t j = 0; j < rel->nbuilds && r == 0; j++) {
		if (!build_wanted(m->o, &rel->builds[j]))
			continue;
		kept++;
		r = put_archive(m, &rel->builds[j]);
	}
	/* The manifest last: a mirror never names an archive it does not have yet. */
	if (r == 0 && kept)
		r = put_manifest(m, rel);
	return r;
}

static int report(struct mrun *m)
{
	cvm_json *doc;
	int r;

	if (!cvm_out.json) {
		cvm_info("%s: %zu manifests, %zu archives downloaded, %zu already there (verified)",
			 cvm_safe(m->o->dir), m->manifests, m->fetched, m->present);
		return 0;
	}
	doc = cvm_json_object();
	if (!doc)
		return -ENOMEM;
	cvm_json_set(doc, "dir", cvm_json_string(m->o->dir));
	cvm_json_set(doc, "manifests", cvm_json_integer((int64_t)m->manifests));
	cvm_json_set(doc, "archives", m->arr);
	m->arr = NULL;
	r = cvm_json_print(doc);
	cvm_json_free(doc);
	return r;
}

int cvm_mirror_make(struct cvm_ctx *ctx, const struct cvm_mirror_opts *o)
{
	struct mrun m = { .ctx = ctx, .o = o, .dfd = -1 };
	struct cvm_catalogue cat = { 0 };
	size_t chosen = 0;
	int r;

	r = cvm_update_catalogue(ctx, &cat);
	if (r == 0)
		r = cvm_mirror(ctx, m.source, sizeof(m.source));
	if (r < 0)
		goto out;
	if (cvm_mkdir_p_at(AT_FDCWD, o->dir, 0755) < 0 ||
	    (m.dfd = open(o->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0) {
		r = cvm_err(-errno, "cannot open '%s': %s", cvm_safe(o->dir), strerror(errno));
		goto out;
	}
	if (cvm_out.json && !(m.arr = cvm_json_array())) {
		r = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < cat.n && r == 0; i++) {
		if (!release_wanted(o, &cat.rel[i]))
			continue;
		chosen++;
		r = mirror_release(&m, &cat.rel[i]);
	}
	if (r == 0 && !chosen)
		r = cvm_err(-CVM_E_NOTFOUND, "no cuDNN release in the catalogue matches '%s'",
			    cvm_safe(o->specs[0]));
	if (r == 0)
		r = report(&m);
out:
	cvm_json_free(m.arr);
	if (m.dfd >= 0)
		close(m.dfd);
	cvm_catalogue_release(&cat);
	return r;
}
