/* SPDX-License-Identifier: MIT */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "alloc.h"
#include "error.h"
#include "fsutil.h"
#include "json.h"
#include "out.h"
#include "record.h"

int cvm_filelist_add(struct cvm_filelist *l, const char *path, const char *link,
		     const char *sha256, uint64_t size, unsigned mode)
{
	struct cvm_file *f;
	int r = CVM_GROW(l->v, l->n + 1, l->cap);

	if (r < 0)
		return r;
	f = &l->v[l->n];
	memset(f, 0, sizeof(*f));
	f->path = strdup(path);
	f->link = link ? strdup(link) : NULL;
	if (!f->path || (link && !f->link)) {
		free(f->path);
		free(f->link);
		return -ENOMEM;
	}
	if (sha256)
		snprintf(f->sha256, sizeof(f->sha256), "%s", sha256);
	f->size = size;
	f->mode = mode;
	l->n++;
	return 0;
}

void cvm_filelist_release(struct cvm_filelist *l)
{
	for (size_t i = 0; i < l->n; i++) {
		free(l->v[i].path);
		free(l->v[i].link);
	}
	free(l->v);
	memset(l, 0, sizeof(*l));
}

/* A line "a<sep>b" of one of the two list files. */
static int text_add(struct cvm_strbuf *t, const char *a, const char *sep, const char *b)
{
	return cvm_strbuf_addf(t, "%s%s%s\n", a, sep, b);
}

static int set_str(cvm_json *o, const char *k, const char *v)
{
	return cvm_json_set(o, k, cvm_json_string(v));
}

int cvm_record_write(int dirfd, const struct cvm_record *r, const struct cvm_filelist *files)
{
	struct cvm_strbuf sums = { 0 }, links = { 0 };
	cvm_json *o = NULL, *sizes = NULL;
	char *doc = NULL;
	int meta = -1, e = 0;

	if (mkdirat(dirfd, ".cudnnvm", 0755) < 0 && errno != EEXIST)
		return -errno;
	meta = openat(dirfd, ".cudnnvm", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (meta < 0)
		return -errno;
	o = cvm_json_object();
	if (!o) {
		e = -ENOMEM;
		goto out;
	}
	e |= set_str(o, "id", r->id);
	e |= set_str(o, "version", r->version);
	e |= set_str(o, "release", r->release);
	e |= cvm_json_set(o, "cuda_major", cvm_json_integer(r->cuda_major));
	e |= set_str(o, "platform", r->platform);
	e |= set_str(o, "cuda_variant", r->cuda_variant);
	e |= cvm_json_set(o, "cudnn_version", cvm_json_integer((int64_t)r->cudnn_version));
	e |= set_str(o, "library", r->library);
	e |= set_str(o, "archive", r->archive);
	e |= set_str(o, "archive_sha256", r->archive_sha256);
	e |= cvm_json_set(o, "archive_size", cvm_json_integer((int64_t)r->archive_size));
	e |= set_str(o, "relative_path", r->relative_path);
	e |= set_str(o, "manifest", r->manifest);
	e |= cvm_json_set(o, "installed_at", cvm_json_integer(r->installed_at));
	e |= set_str(o, "installed_by", r->installed_by);
	e |= set_str(o, "bundle", r->bundle);
	e |= set_str(o, "bundle_sha256", r->bundle_sha256[0] ? r->bundle_sha256 : NULL);
	if (r->archs.known) {
		cvm_json *a = cvm_json_array(), *p = cvm_json_array();
		for (size_t i = 0; a && i < r->archs.n; i++)
			e |= cvm_json_append(a, cvm_json_integer(r->archs.sm[i]));
		for (size_t i = 0; p && i < r->archs.nptx; i++)
			e |= cvm_json_append(p, cvm_json_integer(r->archs.ptx[i]));
		e |= cvm_json_set(o, "archs", a);
		e |= cvm_json_set(o, "ptx_archs", p);
		e |= cvm_json_set(o, "ptx", cvm_json_bool(r->archs.nptx > 0));
	}
	/*
	 * "sizes": the bytes of each file of files.sha256, in its order (an
	 * array, as names need not be UTF-8): verify compares them before it
	 * hashes anything.
	 */
	sizes = cvm_json_array();
	e |= cvm_json_set(o, "sizes", sizes);
	if (e) {
		e = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < files->n && !e; i++) {
		const struct cvm_file *f = &files->v[i];
		/* Tab-separated: no name or body may hold a tab or a newline (entry.h). */
		e = f->link ? text_add(&links, f->path, "\t", f->link)
			    : text_add(&sums, f->sha256, "  ", f->path);
		if (!e && !f->link)
			e = cvm_json_append(sizes, cvm_json_integer((int64_t)f->size));
	}
	doc = cvm_json_dump(o);
	if (e || !doc) {
		e = -ENOMEM;
		goto out;
	}
	e = cvm_write_file_at(meta, "files.sha256", sums.buf ? sums.buf : "", sums.len, 0644);
	if (e == 0)
		e = cvm_write_file_at(meta, "links", links.buf ? links.buf : "", links.len, 0644);
	if (e == 0)
		e = cvm_write_file_at(meta, "record.json", doc, strlen(doc), 0644);
out:
	free(doc);
	cvm_strbuf_release(&sums);
	cvm_strbuf_release(&links);
	cvm_json_free(o);
	close(meta);
	return e;
}

static char *dup_str(const cvm_json *o, const char *key)
{
	const char *s = cvm_json_str(cvm_json_get(o, key));

	return s ? strdup(s) : NULL;
}

/* "archs" and "ptx_archs" (written from the files at install; absent before). */
static void read_archs(const cvm_json *o, struct cvm_archs *a)
{
	const cvm_json *sm = cvm_json_get(o, "archs"), *ptx = cvm_json_get(o, "ptx_archs");
	int64_t v;

	if (!cvm_json_is_array(sm))
		return;
	a->known = true;
	for (size_t i = 0; i < cvm_json_len(sm) && a->n < CVM_ARCHS_MAX; i++)
		if (cvm_json_int(cvm_json_at(sm, i), &v) == 0 && v > 0 && v < 10000)
			a->sm[a->n++] = (unsigned)v;
	for (size_t i = 0; cvm_json_is_array(ptx) && i < cvm_json_len(ptx) && a->nptx < CVM_ARCHS_MAX; i++)
		if (cvm_json_int(cvm_json_at(ptx, i), &v) == 0 && v > 0 && v < 10000)
			a->ptx[a->nptx++] = (unsigned)v;
}

/* The record's files, as they are named in messages: relative to the version. */
#define RECORD_JSON ".cudnnvm/record.json"
#define FILES_SHA256 ".cudnnvm/files.sha256"
#define LINKS ".cudnnvm/links"

/*
 * Says "'<name>/<file>'<rest>" (rest: " line N: what", ": why") and puts
 * "<file><rest>" in why when given. Returns code.
 */
static int fault(int code, const char *name, const char *file, char *why, size_t whylen,
		 const char *fmt, ...) __attribute__((format(printf, 6, 7)));

static int fault(int code, const char *name, const char *file, char *why, size_t whylen,
		 const char *fmt, ...)
{
	char rest[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(rest, sizeof(rest), fmt, ap);
	va_end(ap);
	if (why && whylen)
		snprintf(why, whylen, "%s%s", file, rest);
	return cvm_err(code, "'%s/%s'%s", cvm_safe(name), file, rest);
}

int cvm_record_read(int dirfd, const char *name, struct cvm_record *r)
{
	static const char *const needed[] = { "id", "version", "platform", "cuda_major" };
	cvm_json *o = NULL;
	char *buf = NULL;
	const char *sha;
	size_t len;
	int64_t n;
	int e;

	memset(r, 0, sizeof(*r));
	e = cvm_read_regular_at(dirfd, RECORD_JSON, O_NOFOLLOW, 1 << 20, &buf, &len);
	/* A missing or broken record is an integrity failure (exit 3) in every command. */
	if (e < 0)
		return fault(e == -ENOENT ? -CVM_E_INTEGRITY : e, name, RECORD_JSON, NULL, 0, ": %s",
			     cvm_strerror(e));
	{
		char label[4200];
		snprintf(label, sizeof(label), "%s/" RECORD_JSON, name);
		e = cvm_json_parse(buf, len, label, &o);
	}
	if (e < 0) {
		e = e == -ENOMEM ? e : -CVM_E_INTEGRITY;
		goto out;
	}
	r->id = dup_str(o, "id");
	r->version = dup_str(o, "version");
	r->release = dup_str(o, "release");
	r->platform = dup_str(o, "platform");
	r->cuda_variant = dup_str(o, "cuda_variant");
	r->archive = dup_str(o, "archive");
	r->relative_path = dup_str(o, "relative_path");
	r->manifest = dup_str(o, "manifest");
	r->installed_by = dup_str(o, "installed_by");
	r->library = dup_str(o, "library");
	r->bundle = dup_str(o, "bundle");
	sha = cvm_json_str(cvm_json_get(o, "bundle_sha256"));
	if (sha)
		snprintf(r->bundle_sha256, sizeof(r->bundle_sha256), "%s", sha);
	if (cvm_json_int(cvm_json_get(o, "cuda_major"), &n) == 0)
		r->cuda_major = (int)n;
	if (cvm_json_int(cvm_json_get(o, "cudnn_version"), &n) == 0)
		r->cudnn_version = (unsigned long)n;
	if (cvm_json_int(cvm_json_get(o, "archive_size"), &n) == 0)
		r->archive_size = (uint64_t)n;
	if (cvm_json_int(cvm_json_get(o, "installed_at"), &n) == 0)
		r->installed_at = n;
	read_archs(o, &r->archs);
	sha = cvm_json_str(cvm_json_get(o, "archive_sha256"));
	if (sha)
		snprintf(r->archive_sha256, sizeof(r->archive_sha256), "%s", sha);
	{
		const char *missing = !r->id ? needed[0] : !r->version ? needed[1] :
				      !r->platform ? needed[2] : !r->cuda_major ? needed[3] : NULL;
		if (missing) {
			e = fault(-CVM_E_INTEGRITY, name, RECORD_JSON, NULL, 0, ": no \"%s\" in it",
				  missing);
			cvm_record_release(r);
		}
	}
out:
	cvm_json_free(o);
	free(buf);
	return e;
}

static bool is_hex64(const char *s)
{
	for (int i = 0; i < 64; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	return true;
}

/* files.sha256: "<64 hex>  <path>"; returns 1 for a line not of that form. */
static int sum_line(char *line, struct cvm_filelist *files)
{
	if (strlen(line) < 67 || !is_hex64(line) || line[64] != ' ' || line[65] != ' ')
		return 1;
	line[64] = '\0';
	return cvm_filelist_add(files, line + 66, NULL, line, 0, 0);
}

/* links: "path<TAB>body"; before, "path -> body" (read as written then: first arrow). */
static int link_line(char *line, struct cvm_filelist *files)
{
	char *sep = strchr(line, '\t');
	size_t skip = 1;

	if (!sep) {
		sep = strstr(line, " -> ");
		skip = 4;
	}
	if (!sep || sep == line || !sep[skip])
		return 1;
	*sep = '\0';
	return cvm_filelist_add(files, line, sep + skip, NULL, 0, 0);
}

/*
 * One of the two lists into files, in the file's order, each line through
 * parse: the file whole (text with no NUL in it); a line parse refuses is a
 * fault naming its number and the form expected.
 */
static int read_list(int dirfd, const char *name, const char *file, const char *form,
		     int (*parse)(char *line, struct cvm_filelist *files),
		     struct cvm_filelist *files, char *why, size_t whylen)
{
	char *buf = NULL, *line, *save = NULL;
	size_t len, no = 0;
	int e = cvm_read_regular_at(dirfd, file, O_NOFOLLOW, 64 << 20, &buf, &len);

	if (e < 0)
		e = fault(e, name, file, why, whylen, ": %s", cvm_strerror(e));
	else if (memchr(buf, '\0', len))
		e = fault(-CVM_E_INTEGRITY, name, file, why, whylen, ": a NUL byte in it");
	for (line = e < 0 ? NULL : strtok_r(buf, "\n", &save); line && !e;
	     line = strtok_r(NULL, "\n", &save)) {
		no++;
		e = parse(line, files);
		if (e > 0)
			e = fault(-CVM_E_INTEGRITY, name, file, why, whylen, " line %zu: not '%s'",
				  no, form);
	}
	free(buf);
	return e;
}

/*
 * record.json's "sizes" onto files[0..n) (the lines of files.sha256). A
 * record written before it had none; one whose "sizes" is not a number of
 * bytes for each line (the list edited since) is not used either: sizes
 * stay unknown and the hashes decide. Whether record.json itself can be
 * read is cvm_record_read's to say.
 */
static void read_sizes(int dirfd, struct cvm_file *files, size_t n)
{
	const cvm_json *sizes;
	cvm_json *o = NULL;
	char *buf = NULL;
	size_t len, i;
	int64_t v;
	int e;

	if (cvm_read_regular_at(dirfd, RECORD_JSON, O_NOFOLLOW, 1 << 20, &buf, &len) < 0)
		return;
	e = cvm_json_parse(buf, len, NULL, &o);
	free(buf);
	if (e < 0)
		return;
	sizes = cvm_json_get(o, "sizes");
	for (i = 0; cvm_json_len(sizes) == n && i < n; i++)
		if (cvm_json_int(cvm_json_at(sizes, i), &v) < 0 || v < 0)
			break;
	for (size_t k = 0; i == n && cvm_json_len(sizes) == n && k < n; k++) {
		cvm_json_int(cvm_json_at(sizes, k), &v);
		files[k].size = (uint64_t)v;
		files[k].sized = true;
	}
	cvm_json_free(o);
}

int cvm_record_read_files(int dirfd, const char *name, struct cvm_filelist *files, char *why,
			  size_t whylen)
{
	size_t first = files->n, nsums;
	int e;

	if (why && whylen)
		why[0] = '\0';
	e = read_list(dirfd, name, FILES_SHA256, "<SHA-256 in lowercase hex>  <path>", sum_line,
		      files, why, whylen);
	nsums = files->n - first;
	if (e == 0)
		e = read_list(dirfd, name, LINKS, "<path><TAB><link body>", link_line, files, why,
			      whylen);
	if (e == 0)
		read_sizes(dirfd, files->v + first, nsums);
	return e;
}

void cvm_record_release(struct cvm_record *r)
{
	free(r->id);
	free(r->version);
	free(r->release);
	free(r->platform);
	free(r->cuda_variant);
	free(r->archive);
	free(r->relative_path);
	free(r->manifest);
	free(r->installed_by);
	free(r->library);
	free(r->bundle);
	memset(r, 0, sizeof(*r));
}

struct scan {
	struct cvm_filelist *out;
	bool hash;		/* regular files hashed (else sha256 "" and size 0) */
};

static int scan_one(void *arg, int dirfd, const char *name, const char *rel, const struct stat *st,
		    enum cvm_walk_event ev)
{
	struct scan *sc = arg;
	struct cvm_filelist *out = sc->out;
	char hex[CVM_SHA256_HEX], target[4096];
	uint64_t size = 0;
	ssize_t k;
	int r;

	/* A mount point is listed, marked, never read: what is mounted there is not the version's. */
	if (ev == CVM_WALK_MOUNT) {
		r = cvm_filelist_add(out, rel, "", NULL, 0, st->st_mode & 07777);
		if (r == 0)
			out->v[out->n - 1].mount = true;
		return r;
	}
	if (!strcmp(rel, ".cudnnvm"))
		return ev == CVM_WALK_DIR ? 1 : 0;
	if (ev != CVM_WALK_ENTRY)
		return 0;
	if (S_ISLNK(st->st_mode)) {
		k = readlinkat(dirfd, name, target, sizeof(target) - 1);
		if (k < 0)
			return -errno;
		target[k] = '\0';
		return cvm_filelist_add(out, rel, target, NULL, 0, st->st_mode & 07777);
	}
	if (S_ISREG(st->st_mode) && !sc->hash)
		return cvm_filelist_add(out, rel, NULL, "", (uint64_t)st->st_size, st->st_mode & 07777);
	if (S_ISREG(st->st_mode)) {
		r = cvm_sha256_at(dirfd, name, hex, &size);
		return r < 0 ? r : cvm_filelist_add(out, rel, NULL, hex, size, st->st_mode & 07777);
	}
	return cvm_filelist_add(out, rel, "", NULL, 0, st->st_mode & 07777);
}

static int scan_tree(int dirfd, struct cvm_filelist *out, bool hash)
{
	struct scan sc = { .out = out, .hash = hash };
	int r = cvm_walk_at(dirfd, scan_one, &sc);

	if (r == 0)
		cvm_filelist_sort(out);
	return r;
}

int cvm_tree_scan(int dirfd, struct cvm_filelist *out)
{
	return scan_tree(dirfd, out, true);
}

int cvm_tree_list(int dirfd, struct cvm_filelist *out)
{
	return scan_tree(dirfd, out, false);
}

static int cmp_file(const void *a, const void *b)
{
	return strcmp(((const struct cvm_file *)a)->path, ((const struct cvm_file *)b)->path);
}

void cvm_filelist_sort(struct cvm_filelist *l)
{
	if (l->n)
		qsort(l->v, l->n, sizeof(*l->v), cmp_file);
}
