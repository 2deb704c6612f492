/* SPDX-License-Identifier: MIT */
/*
 * The catalogue of cuDNN releases, read from NVIDIA's redistrib manifests.
 * Everything in a manifest is untrusted input: a name ends up in a store path
 * and a URL, a digest decides whether an archive is believed. So each field
 * is checked here, once, and the rest of the program can rely on the structs.
 */
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
#include "compat.h"
#include "embedded.h"
#include "error.h"
#include "fsutil.h"
#include "json.h"
#include "manifest.h"
#include "out.h"
#include "trust.h"

/* NVIDIA's manifests are a few kB; anything this large is not one. */
#define MANIFEST_MAX ((off_t)64 << 20)
#define KEY_MAX 512
/* How many labels a "no such release" message offers instead. */
#define SUGGEST 5

/* Fields of "cudnn" that describe the product rather than a platform. */
static const char *const meta_keys[] = {
	"name", "license", "license_path", "version", "cuda_variant", NULL,
};

/* The state of one release document being read. */
struct doc {
	const char *file;		/* for messages */
	struct cvm_release *rel;	/* being filled */
	struct cvm_version fallback;	/* cudnn.version, else the label */
	int variant_major;		/* the only cuda_variant, or -1 */
	bool jit;			/* reading cudnn_jit rather than cudnn */
};

static int bad(const char *file, const char *key, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* One message naming the file and the key path; callers cvm_safe() what they quote. */
static int bad(const char *file, const char *key, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return cvm_err(-CVM_E_MANIFEST, "manifest '%s': key '%s': %s",
		       cvm_safe(file), cvm_safe(key), msg);
}

static int nomem(void)
{
	return cvm_err(-ENOMEM, "out of memory reading the catalogue");
}

/* Key paths exist only for messages: a silly long one is cut and marked "...". */
static void key_join(char *dst, size_t len, const char *base, const char *key)
{
	size_t bl = base ? strlen(base) : 0, kl = strlen(key), o = 0;

	if (bl + kl + 2 > len) {
		snprintf(dst, len, "%.*s...", (int)(len > 4 ? len - 4 : 0), base ? base : key);
		return;
	}
	if (bl) {
		memcpy(dst, base, bl);	/* NOLINT(bugprone-not-null-terminated-result): the key and its NUL follow */
		dst[bl] = '.';
		o = bl + 1;
	}
	memcpy(dst + o, key, kl + 1);
}

static bool is_meta_key(const char *k)
{
	size_t i;

	for (i = 0; meta_keys[i]; i++)
		if (!strcmp(k, meta_keys[i]))
			return true;
	return false;
}

static void build_free(struct cvm_build *b)
{
	free(b->platform);
	free(b->relative_path);
	free(b->file_name);
}

static void release_free(struct cvm_release *r)
{
	size_t i;

	for (i = 0; i < r->nbuilds; i++)
		build_free(&r->builds[i]);
	free(r->builds);
	free(r->label);
	free(r->release_date);
	free(r->source);
	memset(r, 0, sizeof(*r));
}

/* A platform name becomes part of a store folder's name: keep it boring. */
static bool platform_name_ok(const char *s)
{
	size_t i;

	for (i = 0; s[i]; i++) {
		char c = s[i];

		if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
		      (i && (c == '-' || c == '_'))))
			return false;
	}
	return i > 0 && i <= 64;
}

/*
 * relative_path is appended to the mirror URL and its last part names the
 * cached archive: no absolute path, no "..", no empty or "." parts, nothing
 * a terminal or a URL would read differently.
 */
static bool relative_path_ok(const char *p)
{
	const char *part = p, *s;
	size_t n;

	if (!*p || strlen(p) > 1024)
		return false;
	for (s = p; *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f || *s == '\\' ||
		    *s == '?' || *s == '#' || *s == '%')
			return false;
	for (;;) {
		s = strchr(part, '/');
		n = s ? (size_t)(s - part) : strlen(part);
		if (!n || (n == 1 && part[0] == '.') ||
		    (n == 2 && part[0] == '.' && part[1] == '.'))
			return false;
		if (!s)
			return true;
		part = s + 1;
	}
}

static bool is_hex64(const char *s)
{
	size_t i;

	for (i = 0; s[i]; i++) {
		char c = s[i];

		if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')))
			return false;
	}
	return i == 64;
}

/* NVIDIA writes sizes as strings of digits; a plain integer is accepted too. */
static int parse_size(const cvm_json *v, uint64_t *out)
{
	const char *s = cvm_json_str(v);
	uint64_t n = 0;
	int64_t i;

	if (!s) {
		if (cvm_json_int(v, &i) < 0 || i < 0)
			return -1;
		*out = (uint64_t)i;
		return 0;
	}
	if (!*s)
		return -1;
	for (; *s; s++) {
		if (*s < '0' || *s > '9')
			return -1;
		if (n > (UINT64_MAX - (uint64_t)(*s - '0')) / 10)
			return -1;
		n = n * 10 + (uint64_t)(*s - '0');
	}
	*out = n;
	return 0;
}

/*
 * The build's full version as written in its file name: the first run of
 * digits and dots that is a 4-part version ("x86_64-9.15.0.58_cuda13" gives
 * 9.15.0.58, "-v8.2.1.32.tgz" gives 8.2.1.32). Builds of one release may
 * differ in it, so it is never rebuilt from cudnn.version.
 */
static int version_from_name(const char *name, struct cvm_version *v)
{
	const char *p = name, *start;
	char tok[40];
	size_t n;

	while (*p) {
		if (!((*p >= '0' && *p <= '9') || *p == '.')) {
			p++;
			continue;
		}
		start = p;
		while ((*p >= '0' && *p <= '9') || *p == '.')
			p++;
		while (start < p && *start == '.')
			start++;
		n = (size_t)(p - start);
		while (n && start[n - 1] == '.')
			n--;
		if (!n || n >= sizeof(tok))
			continue;
		memcpy(tok, start, n);
		tok[n] = '\0';
		if (cvm_version_parse(tok, v) == 0 && v->n == 4)
			return 0;
	}
	return -1;
}

/* "..._cuda13.4-archive.zip" → 13 and *minor 4 ("_cuda13-": -1), or -1. */
static int cuda_from_name(const char *name, int *minor)
{
	const char *p = name;
	int major, n, m;

	while ((p = strstr(p, "_cuda"))) {
		p += 5;
		for (major = 0, n = 0; p[n] >= '0' && p[n] <= '9' && n < 3; n++)
			major = major * 10 + (p[n] - '0');
		if (!n || major <= 0 || (p[n] >= '0' && p[n] <= '9'))
			continue;
		*minor = -1;
		if (p[n] == '.' && p[n + 1] >= '0' && p[n + 1] <= '9') {
			for (m = 0, n++; p[n] >= '0' && p[n] <= '9' && m < 100; n++)
				m = m * 10 + (p[n] - '0');
			*minor = m;
		}
		return major;
	}
	return -1;
}

/* "cuda12" → 12. */
static bool cuda_key(const char *k, int *major)
{
	int n, m = 0;

	if (strncmp(k, "cuda", 4))
		return false;
	for (n = 0; k[4 + n]; n++) {
		if (k[4 + n] < '0' || k[4 + n] > '9' || n == 3)
			return false;
		m = m * 10 + (k[4 + n] - '0');
	}
	if (!n || !m)
		return false;
	*major = m;
	return true;
}

static int add_build(struct doc *d, const char *key, struct cvm_build *b)
{
	struct cvm_release *rel = d->rel;
	int r;

	/* Two archives for one (component, platform, variant): which one install takes would be chance. */
	for (size_t i = 0; i < rel->nbuilds; i++)
		if (rel->builds[i].jit == b->jit && !strcmp(rel->builds[i].platform, b->platform) &&
		    !strcmp(rel->builds[i].cuda_variant, b->cuda_variant))
			return bad(d->file, key, "a second build for CUDA %s on %s", b->cuda_variant,
				   cvm_safe(b->platform));
	r = CVM_GROW(rel->builds, rel->nbuilds + 1, rel->builds_cap);
	if (r < 0)
		return nomem();
	rel->builds[rel->nbuilds++] = *b;
	return 0;
}

/* Reads one {relative_path, sha256, md5, size} object at key. */
static int parse_build(struct doc *d, const char *key, const cvm_json *obj,
		       const char *platform, int cuda_major, int cuda_minor)
{
	struct cvm_build b;
	char k[KEY_MAX], vs[32];
	const char *path, *sha, *slash;
	const cvm_json *v;
	size_t i;
	int r;

	memset(&b, 0, sizeof(b));
	key_join(k, sizeof(k), key, "relative_path");
	v = cvm_json_get(obj, "relative_path");
	path = cvm_json_str(v);
	if (!path)
		return bad(d->file, k, v ? "expected a string" : "missing");
	if (!relative_path_ok(path))
		return bad(d->file, k, "unsafe path '%s'", cvm_safe(path));
	slash = strrchr(path, '/');

	if (version_from_name(slash ? slash + 1 : path, &b.version) < 0)
		b.version = d->fallback;
	/* A file of another release filed under this label is a broken manifest. */
	if (!cvm_version_matches(&d->rel->label_v, &b.version)) {
		cvm_version_format(&b.version, vs, sizeof(vs));
		return bad(d->file, k, "version %s is not of release %s",
			   vs, cvm_safe(d->rel->label));
	}

	key_join(k, sizeof(k), key, "sha256");
	v = cvm_json_get(obj, "sha256");
	sha = cvm_json_str(v);
	if (!sha)
		return bad(d->file, k, v ? "expected a string" : "missing");
	if (!is_hex64(sha))
		return bad(d->file, k, "expected 64 hex digits");
	for (i = 0; i < 64; i++)
		b.sha256[i] = (char)(sha[i] >= 'A' && sha[i] <= 'F' ? sha[i] - 'A' + 'a' : sha[i]);
	b.sha256[64] = '\0';

	v = cvm_json_get(obj, "size");
	if (v) {
		key_join(k, sizeof(k), key, "size");
		if (parse_size(v, &b.size) < 0)
			return bad(d->file, k, "expected a number of bytes");
		b.has_size = true;
	}

	b.cuda_major = cuda_major;
	b.cuda_minor = cuda_minor;
	b.jit = d->jit;
	if (cuda_minor >= 0)
		snprintf(b.cuda_variant, sizeof(b.cuda_variant), "%d.%d", cuda_major, cuda_minor);
	else
		snprintf(b.cuda_variant, sizeof(b.cuda_variant), "%d", cuda_major);
	/* Cannot fail: 4 parts of at most 6 digits. */
	cvm_version_format(&b.version, b.version_str, sizeof(b.version_str));
	b.platform = strdup(platform);
	b.relative_path = strdup(path);
	b.file_name = strdup(slash ? slash + 1 : path);
	if (!b.platform || !b.relative_path || !b.file_name) {
		r = nomem();
		goto out;
	}
	r = add_build(d, key, &b);
out:
	if (r < 0)
		build_free(&b);
	return r;
}

/* Reads cudnn.<platform>: cuda<N> objects, a flat build, or both. */
static int parse_platform(struct doc *d, const char *base, const char *pkey,
			  const cvm_json *pobj)
{
	char k[KEY_MAX], k2[KEY_MAX];
	size_t before = d->rel->nbuilds;
	const cvm_json *v;
	const char *path, *slash;
	void *it;
	int major, minor = -1, r;

	key_join(k, sizeof(k), base, pkey);
	if (!platform_name_ok(pkey))
		return bad(d->file, k, "invalid platform name");
	for (it = cvm_json_iter(pobj); it; it = cvm_json_iter_next(pobj, it)) {
		const char *ck = cvm_json_iter_key(it);

		v = cvm_json_iter_value(it);
		key_join(k2, sizeof(k2), k, ck);
		if (cuda_key(ck, &major)) {
			if (!cvm_json_is_object(v))
				return bad(d->file, k2, "expected an object");
			r = parse_build(d, k2, v, pkey, major, -1);
			if (r < 0)
				return r;
		} else if (cvm_json_is_object(v)) {
			return bad(d->file, k2, "expected cuda<N> or a build's fields");
		}
		/* Other scalars (md5, the flat entry's fields) are read below or not needed. */
	}

	/*
	 * A flat entry says nothing of its CUDA major but in the file name
	 * ("_cuda13.4-archive"), or in cuda_variant when there is only one.
	 */
	v = cvm_json_get(pobj, "relative_path");
	if (v) {
		path = cvm_json_str(v);
		if (!path) {
			key_join(k2, sizeof(k2), k, "relative_path");
			return bad(d->file, k2, "expected a string");
		}
		slash = strrchr(path, '/');
		major = cuda_from_name(slash ? slash + 1 : path, &minor);
		if (major < 0)
			major = d->variant_major;
		if (major < 0)
			return bad(d->file, k, "cannot tell which CUDA major '%s' is for",
				   cvm_safe(path));
		r = parse_build(d, k, pobj, pkey, major, minor);
		if (r < 0)
			return r;
	}
	if (d->rel->nbuilds == before)
		return bad(d->file, k, "no builds: expected cuda<N> objects or a relative_path");
	return 0;
}

/* cuda_variant: ["11", "12"]; only a single entry is of use (for flat builds). */
static int parse_variants(struct doc *d, const char *base, const cvm_json *cv)
{
	char k[KEY_MAX];
	size_t i, n = cvm_json_len(cv);
	int major = -1;

	key_join(k, sizeof(k), base, "cuda_variant");
	if (!cvm_json_is_array(cv))
		return bad(d->file, k, "expected a list of CUDA majors");
	for (i = 0; i < n; i++) {
		const cvm_json *e = cvm_json_at(cv, i);
		const char *s = cvm_json_str(e);
		int64_t m = 0;

		if (s) {
			if (!*s || strlen(s) > 3 || strspn(s, "0123456789") != strlen(s))
				m = 0;
			else
				m = strtol(s, NULL, 10);
		} else if (cvm_json_int(e, &m) < 0 || m > 999) {
			m = 0;
		}
		if (m <= 0)
			return bad(d->file, k, "expected a list of CUDA majors");
		major = (int)m;
	}
	d->variant_major = n == 1 ? major : -1;
	return 0;
}

/* Reads the component comp ("cudnn", "cudnn_jit") of a release document: its builds into d->rel. */
static int parse_component(struct doc *d, const char *prefix, const cvm_json *doc, const char *comp)
{
	char k[KEY_MAX], base[KEY_MAX], vs[32];
	const cvm_json *v, *cudnn;
	const char *ver;
	size_t before = d->rel->nbuilds;
	void *it;
	int r;

	key_join(base, sizeof(base), prefix, comp);
	cudnn = cvm_json_get(doc, comp);
	if (!cvm_json_is_object(cudnn))
		return bad(d->file, base, cudnn ? "expected an object" : "missing");

	/* The fallback for builds whose file name carries no full version. */
	d->fallback = d->rel->label_v;
	v = cvm_json_get(cudnn, "version");
	if (v) {
		key_join(k, sizeof(k), base, "version");
		ver = cvm_json_str(v);
		if (!ver || cvm_version_parse(ver, &d->fallback) < 0)
			return bad(d->file, k, "expected a version such as 9.1.0.70");
		if (!cvm_version_matches(&d->rel->label_v, &d->fallback)) {
			cvm_version_format(&d->fallback, vs, sizeof(vs));
			return bad(d->file, k, "version %s is not of release %s", vs,
				   cvm_safe(d->rel->label));
		}
	}
	v = cvm_json_get(cudnn, "cuda_variant");
	if (v) {
		r = parse_variants(d, base, v);
		if (r < 0)
			return r;
	}

	for (it = cvm_json_iter(cudnn); it; it = cvm_json_iter_next(cudnn, it)) {
		const char *pk = cvm_json_iter_key(it);

		if (is_meta_key(pk))
			continue;
		v = cvm_json_iter_value(it);
		/* Fields NVIDIA may add later are no error; a platform that is no object is. */
		if (!cvm_json_is_object(v) && strncmp(pk, "linux-", 6) && strncmp(pk, "windows-", 8))
			continue;
		if (!cvm_json_is_object(v)) {
			key_join(k, sizeof(k), base, pk);
			return bad(d->file, k, "expected a platform object");
		}
		r = parse_platform(d, base, pk, v);
		if (r < 0)
			return r;
	}
	if (d->rel->nbuilds == before)
		return bad(d->file, base, "no platform entries");
	return 0;
}

/*
 * Reads one release document into *rel (cleared first, freed on failure).
 * prefix is the key it sits under in a document of several releases ("" for
 * a single one), member_key that key (or NULL).
 */
static int parse_release(const char *file, const char *prefix, const char *member_key,
			 const cvm_json *doc, struct cvm_release *rel)
{
	struct doc d = { .file = file, .rel = rel, .variant_major = -1 };
	char k[KEY_MAX];
	const cvm_json *v;
	const char *label, *date;
	size_t i;
	int r;

	memset(rel, 0, sizeof(*rel));
	key_join(k, sizeof(k), prefix, "release_label");
	v = cvm_json_get(doc, "release_label");
	label = cvm_json_str(v);
	if (v && !label) {
		r = bad(file, k, "expected a string");
		goto out;
	}
	if (!label)
		label = member_key;
	if (!label) {
		r = bad(file, k, "missing");
		goto out;
	}
	if (cvm_version_parse(label, &rel->label_v) < 0) {
		r = bad(file, k, "expected a version such as 9.1.0, not '%s'", cvm_safe(label));
		goto out;
	}
	if (member_key && strcmp(label, member_key)) {
		r = bad(file, k, "'%s' differs from the key it is filed under", cvm_safe(label));
		goto out;
	}
	rel->label = strdup(label);
	rel->source = strdup(file);
	if (!rel->label || !rel->source) {
		r = nomem();
		goto out;
	}

	v = cvm_json_get(doc, "release_date");
	if (v) {
		date = cvm_json_str(v);
		if (!date) {
			key_join(k, sizeof(k), prefix, "release_date");
			r = bad(file, k, "expected a string");
			goto out;
		}
		rel->release_date = strdup(date);
		if (!rel->release_date) {
			r = nomem();
			goto out;
		}
	}

	r = parse_component(&d, prefix, doc, "cudnn");
	/* The Graph JIT library (9.12 on): its own archives, listed and mirrored, never installed as cudnn. */
	if (r == 0 && cvm_json_get(doc, "cudnn_jit")) {
		d.jit = true;
		d.variant_major = -1;
		r = parse_component(&d, prefix, doc, "cudnn_jit");
	}
	if (r < 0)
		goto out;
	/* Without a size an archive can only be judged after hashing all of it. */
	for (i = 0; i < rel->nbuilds; i++)
		if (!rel->builds[i].has_size)
			rel->low_trust = true;
	r = 0;
out:
	if (r < 0)
		release_free(rel);
	return r;
}

/* Moves the n releases of add into cat; a label already there is replaced. */
static int merge(struct cvm_catalogue *cat, struct cvm_release *add, size_t *n)
{
	size_t i, j;

	if (CVM_GROW(cat->rel, cat->n + *n, cat->cap) < 0)
		return nomem();
	for (i = 0; i < *n; i++) {
		for (j = 0; j < cat->n; j++)
			if (!cvm_version_cmp(&cat->rel[j].label_v, &add[i].label_v))
				break;
		if (j < cat->n)
			release_free(&cat->rel[j]);
		else
			cat->n++;
		cat->rel[j] = add[i];
	}
	*n = 0;
	return 0;
}

int cvm_catalogue_add_buf(struct cvm_catalogue *cat, const char *name,
			  const char *buf, size_t len)
{
	struct cvm_release *tmp = NULL;
	size_t ntmp = 0, count = 0, i;
	cvm_json *doc = NULL;
	void *it;
	int r;

	r = cvm_json_parse(buf, len, name, &doc);
	if (r < 0)
		return r;
	if (!cvm_json_is_object(doc)) {
		r = cvm_err(-CVM_E_MANIFEST, "manifest '%s': expected a JSON object",
			    cvm_safe(name));
		goto out;
	}

	/*
	 * Everything is read into tmp first, so that a bad document leaves the
	 * catalogue as it was.
	 */
	if (cvm_json_get(doc, "cudnn")) {
		count = 1;
	} else {
		for (it = cvm_json_iter(doc); it; it = cvm_json_iter_next(doc, it))
			count++;
		if (!count) {
			r = cvm_err(-CVM_E_MANIFEST, "manifest '%s': no releases", cvm_safe(name));
			goto out;
		}
	}
	tmp = calloc(count, sizeof(*tmp));
	if (!tmp) {
		r = nomem();
		goto out;
	}
	if (cvm_json_get(doc, "cudnn")) {
		r = parse_release(name, "", NULL, doc, &tmp[0]);
		if (r < 0)
			goto out;
		ntmp = 1;
	} else {
		for (it = cvm_json_iter(doc); it; it = cvm_json_iter_next(doc, it)) {
			const char *key = cvm_json_iter_key(it);
			const cvm_json *v = cvm_json_iter_value(it);

			if (!cvm_json_is_object(v)) {
				r = bad(name, key, "expected a release object");
				goto out;
			}
			r = parse_release(name, key, key, v, &tmp[ntmp]);
			if (r < 0)
				goto out;
			ntmp++;
		}
	}
	r = merge(cat, tmp, &ntmp);
out:
	for (i = 0; i < ntmp; i++)
		release_free(&tmp[i]);
	free(tmp);
	cvm_json_free(doc);
	return r;
}

static int newest_first(const void *a, const void *b)
{
	const struct cvm_release *x = a, *y = b;
	int c = cvm_version_cmp(&y->label_v, &x->label_v);

	return c ? c : strcmp(x->label, y->label);
}

void cvm_catalogue_sort(struct cvm_catalogue *cat)
{
	if (cat->n > 1)
		qsort(cat->rel, cat->n, sizeof(*cat->rel), newest_first);
}

void cvm_catalogue_release(struct cvm_catalogue *cat)
{
	size_t i;

	for (i = 0; i < cat->n; i++)
		release_free(&cat->rel[i]);
	free(cat->rel);
	cat->rel = NULL;
	cat->n = 0;
	cat->cap = 0;
}

static bool ends_with(const char *s, const char *suffix)
{
	size_t l = strlen(s), k = strlen(suffix);

	return l >= k && !strcmp(s + l - k, suffix);
}

/* redistrib_*.json or *releases.json (fnmatch's, which Windows lacks). */
static bool wanted_name(const char *n)
{
	/* Hidden files are editors' and rsync's temporaries, never manifests. */
	return n[0] != '.' && ((!strncmp(n, "redistrib_", 10) && strlen(n) >= 15 &&
				ends_with(n, ".json")) || ends_with(n, "releases.json"));
}

static int by_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/*
 * The catalogue's hashes decide what install accepts: a manifest, and the
 * folder it is read from, must be changeable only by root or the caller
 * (trust.h), the path to it included; st (the open file) when given.
 */
static int trusted(const char *path, const struct stat *st)
{
	struct cvm_trust t;
	const char *why = st ? cvm_trust_stat_why(st) : NULL;
	int r = 0;

	if (why) {
		snprintf(t.path, sizeof(t.path), "%s", path);
		snprintf(t.why, sizeof(t.why), "%s", why);
		r = -CVM_E_PERM;
	} else {
		r = cvm_trust_check(path, &t);
	}
	if (r == -CVM_E_PERM)
		return cvm_err(r, "refusing the manifests in '%s': '%s': %s, so another user could "
			       "change the hashes that install trusts; make it root's and not "
			       "writable by others (chmod go-w)", cvm_safe(path), cvm_safe(t.path), t.why);
	if (r < 0)
		return cvm_err(r, "cannot open '%s': %s", cvm_safe(t.path), t.why);
	return 0;
}

/* Reads a whole manifest, NUL-terminated, into *buf (caller frees). */
static int read_at(int dfd, const char *name, const char *path, char **buf, size_t *len)
{
	struct stat st;
	char *b = NULL;
	size_t got = 0;
	ssize_t n;
	int fd, r = 0, e;

	fd = cvm_open_regular(dfd, name, O_RDONLY, 0);
	if (fd == -CVM_E_NOTREG)
		return cvm_err(-CVM_E_MANIFEST, "cannot read '%s': not a regular file", cvm_safe(path));
	if (fd < 0)
		return cvm_err(fd, "cannot open '%s': %s", cvm_safe(path), cvm_strerror(fd));
	if (fstat(fd, &st) < 0) {
		e = errno;
		r = cvm_err(-e, "cannot stat '%s': %s", cvm_safe(path), strerror(e));
		goto out;
	}
	r = trusted(path, &st);
	if (r < 0)
		goto out;
	if (st.st_size > MANIFEST_MAX) {
		r = cvm_err(-CVM_E_MANIFEST, "cannot read '%s': larger than 64 MiB", cvm_safe(path));
		goto out;
	}
	b = malloc((size_t)st.st_size + 1);
	if (!b) {
		r = nomem();
		goto out;
	}
	/* Up to the size seen by fstat: a file that grows meanwhile is cut there. */
	while (got < (size_t)st.st_size) {
		n = read(fd, b + got, (size_t)st.st_size - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			e = errno;
			r = cvm_err(-e, "cannot read '%s': %s", cvm_safe(path), strerror(e));
			goto out;
		}
		if (!n)
			break;
		got += (size_t)n;
	}
	b[got] = '\0';
	*buf = b;
	*len = got;
	b = NULL;
out:
	free(b);
	close(fd);
	return r;
}

int cvm_catalogue_add_dir(struct cvm_catalogue *cat, const char *dir)
{
	char **names = NULL, path[4096], *buf = NULL;
	size_t n = 0, cap = 0, i, len = 0;
	struct dirent *de;
	DIR *d;
	int r = 0, e, w;

	r = trusted(dir, NULL);
	if (r < 0)
		return r;
	d = opendir(dir);
	if (!d) {
		e = errno;
		return cvm_err(-e, "cannot open '%s': %s", cvm_safe(dir), strerror(e));
	}
	for (;;) {
		errno = 0;
		de = readdir(d);
		if (!de) {
			if (errno) {
				e = errno;
				r = cvm_err(-e, "cannot read '%s': %s", cvm_safe(dir), strerror(e));
				goto out;
			}
			break;
		}
		if (!wanted_name(de->d_name))
			continue;
		if (CVM_GROW(names, n + 1, cap) < 0) {
			r = nomem();
			goto out;
		}
		names[n] = strdup(de->d_name);
		if (!names[n]) {
			r = nomem();
			goto out;
		}
		n++;
	}
	/* Sorted, so that "the later file wins" means the same on every file system. */
	if (n > 1)
		qsort(names, n, sizeof(*names), by_name);
	for (i = 0; i < n; i++) {
		w = snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
		if (w < 0 || (size_t)w >= sizeof(path)) {
			r = cvm_err(-ENAMETOOLONG, "cannot open '%s/%s': %s", cvm_safe(dir),
				    cvm_safe(names[i]), strerror(ENAMETOOLONG));
			goto out;
		}
		r = read_at(dirfd(d), names[i], path, &buf, &len);
		if (r < 0)
			goto out;
		r = cvm_catalogue_add_buf(cat, path, buf, len);
		free(buf);
		if (r < 0)
			goto out;
	}
out:
	for (i = 0; i < n; i++)
		free(names[i]);
	free(names);
	closedir(d);
	return r;
}

int cvm_catalogue_load(struct cvm_catalogue *cat, const char *extra_dir)
{
	const struct cvm_embedded *e;
	int r = 0;

	memset(cat, 0, sizeof(*cat));
	for (e = cvm_embedded_manifests; e->name; e++) {
		r = cvm_catalogue_add_buf(cat, e->name, e->data, e->len);
		if (r < 0)
			goto out;
	}
	if (extra_dir)
		r = cvm_catalogue_add_dir(cat, extra_dir);
out:
	if (r < 0)
		cvm_catalogue_release(cat);
	else
		cvm_catalogue_sort(cat);
	return r;
}

/* A 4-part spec names a build; shorter ones name releases by label. cudnn_jit is never a fit. */
static bool build_fits(const struct cvm_build *b, const struct cvm_version *want,
		       int cuda_major, const char *platform)
{
	if (b->jit)
		return false;
	if (want->n == 4 && cvm_version_cmp(&b->version, want))
		return false;
	if (cuda_major >= 0 && b->cuda_major != cuda_major)
		return false;
	return !platform || !strcmp(b->platform, platform);
}

static bool release_matches(const struct cvm_release *r, const struct cvm_version *want)
{
	size_t i;

	if (want->n < 4)
		return cvm_version_matches(want, &r->label_v);
	for (i = 0; i < r->nbuilds; i++)
		if (build_fits(&r->builds[i], want, -1, NULL))
			return true;
	return false;
}

/* Appends ", s" (or s) to a message list; truncation only shortens a message. */
static void list_add(char *buf, size_t len, const char *s)
{
	size_t o = strlen(buf);

	if (o + 1 < len)
		snprintf(buf + o, len - o, "%s%s", o ? ", " : "", s);
}

/* "cuDNN 8.6.0 has no build for CUDA 12 (linux-x86_64); builds exist for CUDA 10, 11" */
static int no_build(const struct cvm_release *r, const struct cvm_version *want,
		    const char *spec, int cuda_major, const char *platform)
{
	char list[512] = "", num[16];
	int last = 0, next;
	size_t i, j;

	for (;;) {
		next = 0;
		for (i = 0; i < r->nbuilds; i++) {
			int m = r->builds[i].cuda_major;

			if (build_fits(&r->builds[i], want, -1, platform) && m > last &&
			    (!next || m < next))
				next = m;
		}
		if (!next)
			break;
		snprintf(num, sizeof(num), "%d", next);
		list_add(list, sizeof(list), num);
		last = next;
	}
	if (list[0])
		return cvm_err(-CVM_E_NOTFOUND,
			       "cuDNN %s has no build for CUDA %d (%s); builds exist for CUDA %s",
			       want->n == 4 ? cvm_safe(spec) : r->label, cuda_major,
			       cvm_safe(platform), list);

	/* Nothing on this platform: say where the release does exist. */
	for (i = 0; i < r->nbuilds; i++) {
		if (!build_fits(&r->builds[i], want, -1, NULL))
			continue;
		for (j = 0; j < i; j++)
			if (build_fits(&r->builds[j], want, -1, NULL) &&
			    !strcmp(r->builds[j].platform, r->builds[i].platform))
				break;
		if (j == i)
			list_add(list, sizeof(list), r->builds[i].platform);
	}
	return cvm_err(-CVM_E_NOTFOUND,
		       "cuDNN %s has no build for CUDA %d (%s); builds exist for %s",
		       want->n == 4 ? cvm_safe(spec) : r->label, cuda_major,
		       cvm_safe(platform), list);
}

/* "no cuDNN release matches '7.6'; newest releases: 9.27.0, 9.22.0, ..." */
static int no_match(const struct cvm_catalogue *cat, const char *spec)
{
	char list[512] = "";
	size_t i;

	if (!cat->n)
		return cvm_err(-CVM_E_NOTFOUND,
			       "no cuDNN release matches '%s'; the catalogue is empty",
			       cvm_safe(spec));
	for (i = 0; i < cat->n && i < SUGGEST; i++)
		list_add(list, sizeof(list), cat->rel[i].label);
	if (cat->n > SUGGEST)
		list_add(list, sizeof(list), "...");
	return cvm_err(-CVM_E_NOTFOUND, "no cuDNN release matches '%s'; newest releases: %s",
		       cvm_safe(spec), list);
}

/*
 * Of r's builds that fit, the one for the newest variant the toolkit takes:
 * "cuda13" for any 13.x, "cuda13.4" only from 13.4 on (NVIDIA builds it
 * with 13.4). NULL when none.
 */
static const struct cvm_build *best_variant(const struct cvm_release *r, const struct cvm_version *want,
					    int cuda_major, int cuda_minor, const char *platform)
{
	const struct cvm_build *best = NULL;

	for (size_t j = 0; j < r->nbuilds; j++) {
		const struct cvm_build *b = &r->builds[j];

		if (!build_fits(b, want, cuda_major, platform) || b->cuda_minor > cuda_minor)
			continue;
		if (!best || b->cuda_minor > best->cuda_minor)
			best = b;
	}
	return best;
}

int cvm_build_id(const struct cvm_build *b, char *buf, size_t len)
{
	return cvm_fmt(buf, len, "%s-cuda%s-%s", b->version_str, b->cuda_variant, b->platform);
}

int cvm_catalogue_resolve(const struct cvm_catalogue *cat, const char *spec,
			  int cuda_major, int cuda_minor, const char *platform,
			  const struct cvm_release **rel, const struct cvm_build **build)
{
	const struct cvm_release *first = NULL;
	struct cvm_version want;
	size_t i;

	if (cvm_version_parse(spec, &want) < 0)
		return cvm_err(-CVM_E_VERSION,
			       "invalid version '%s': expected numbers such as 8.9.7",
			       cvm_safe(spec));
	if (!platform)
		platform = cvm_host_platform();
	if (!platform)
		return cvm_err(-CVM_E_NOTFOUND,
			       "NVIDIA publishes no cuDNN build for this machine's architecture");
	/* The catalogue is newest first, so the first fit is the newest. */
	for (i = 0; i < cat->n; i++) {
		const struct cvm_release *r = &cat->rel[i];

		if (!release_matches(r, &want))
			continue;
		if (!first)
			first = r;
		*build = best_variant(r, &want, cuda_major, cuda_minor, platform);
		if (*build) {
			*rel = r;
			return 0;
		}
	}
	if (!first)
		return no_match(cat, spec);
	return no_build(first, &want, spec, cuda_major, platform);
}

const struct cvm_build *cvm_release_build(const struct cvm_release *rel,
					  int cuda_major, const char *platform)
{
	size_t i;

	for (i = 0; i < rel->nbuilds; i++)
		if (rel->builds[i].cuda_major == cuda_major && rel->builds[i].cuda_minor < 0 &&
		    !rel->builds[i].jit && !strcmp(rel->builds[i].platform, platform))
			return &rel->builds[i];
	return NULL;
}

static const char *host_root = "";

void cvm_host_root(const char *root)
{
	host_root = root ? root : "";
}

/* L4T writes /etc/nv_tegra_release on every Jetson; servers (sbsa) have none. */
static bool is_jetson(void)
{
	char path[4096];
	struct stat st;

	return cvm_fmt(path, sizeof(path), "%s/etc/nv_tegra_release", host_root) == 0 &&
	       stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

const char *cvm_host_platform(void)
{
	char m[64];

	if (CVM_WINDOWS)
		return "windows-x86_64";
	if (cvm_machine(m, sizeof(m)) < 0)
		return NULL;
#ifdef CVM_FAULT_INJECTION
	/* Test builds only: another machine's uname (an aarch64 server, a Jetson) on this one. */
	if (getenv("CUDNNVM_TEST_MACHINE"))
		snprintf(m, sizeof(m), "%s", getenv("CUDNNVM_TEST_MACHINE"));
#endif
	if (!strcmp(m, "x86_64"))
		return "linux-x86_64";
	/* Jetson boards (linux-aarch64, 9.12-9.20) and servers (linux-sbsa) are both aarch64. */
	if (!strcmp(m, "aarch64"))
		return is_jetson() ? "linux-aarch64" : "linux-sbsa";
	return NULL;
}
