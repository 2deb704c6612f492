/* SPDX-License-Identifier: MIT */
/*
 * The catalogue: a document is read with cvm_catalogue_add_buf (twice: the
 * second time every label is replaced, so the count must stay), sorted, and
 * then every promise of manifest.c about its structs is checked: fields that
 * end up in paths and URLs are safe, digests are 64 lowercase hex digits,
 * each build is of its release, labels are unique and newest first. Then
 * specs are resolved, among them each build's own version, which must be
 * found, and each answer is checked against a scan of the catalogue.
 */
#include <errno.h>
#include <regex.h>

#include "fuzz.h"

#include "error.h"
#include "manifest.h"
#include "version.h"

static regex_t re_platform, re_sha;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	fuzz_quiet();
	if (regcomp(&re_platform, "^[a-z0-9][a-z0-9_-]{0,63}$", REG_EXTENDED | REG_NOSUB) ||
	    regcomp(&re_sha, "^[0-9a-f]{64}$", REG_EXTENDED | REG_NOSUB))
		abort();
	return 0;
}

static bool matches(regex_t *re, const char *s)
{
	return regexec(re, s, 0, NULL, 0) == 0;
}

/* Below a mirror and in a cache folder: relative, no "..", ".", empty part, nothing odd. */
static bool path_safe(const char *p)
{
	const char *s;

	if (!*p || strlen(p) > 1024 || strpbrk(p, "\\?#%"))
		return false;
	for (s = p; *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			return false;
	for (s = p;;) {
		size_t n = strcspn(s, "/");

		if (!n || (n == 1 && s[0] == '.') || (n == 2 && s[0] == '.' && s[1] == '.'))
			return false;
		if (!s[n])
			return true;
		s += n + 1;
	}
}

static void check_build(const struct cvm_release *r, const struct cvm_build *b)
{
	struct cvm_version v;
	const char *slash;
	char vs[32];

	FUZZ_ASSERT(b->platform && matches(&re_platform, b->platform), "%s: platform '%s'", r->label,
		    b->platform ? b->platform : "(null)");
	FUZZ_ASSERT(b->relative_path && path_safe(b->relative_path), "%s: unsafe path '%s'",
		    r->label, b->relative_path ? b->relative_path : "(null)");
	slash = strrchr(b->relative_path, '/');
	FUZZ_ASSERT(b->file_name && !strcmp(b->file_name, slash ? slash + 1 : b->relative_path),
		    "%s: file name '%s' of '%s'", r->label, b->file_name, b->relative_path);
	FUZZ_ASSERT(memchr(b->sha256, '\0', sizeof(b->sha256)) && matches(&re_sha, b->sha256),
		    "%s: sha256 '%.65s'", r->label, b->sha256);
	FUZZ_ASSERT(b->cuda_major >= 1 && b->cuda_major <= 999, "%s: CUDA %d", r->label,
		    b->cuda_major);
	FUZZ_ASSERT(b->version.n >= 1 && b->version.n <= 4, "%s: %d parts", r->label, b->version.n);
	FUZZ_ASSERT(cvm_version_format(&b->version, vs, sizeof(vs)) == 0 &&
		    !strcmp(vs, b->version_str), "%s: version_str '%s' for %s", r->label,
		    b->version_str, vs);
	FUZZ_ASSERT(cvm_version_parse(b->version_str, &v) == 0 && !cvm_version_cmp(&v, &b->version),
		    "%s: version_str '%s' does not parse back", r->label, b->version_str);
	FUZZ_ASSERT(cvm_version_matches(&r->label_v, &b->version), "%s: build %s is of another release",
		    r->label, b->version_str);
}

static void check_catalogue(const struct cvm_catalogue *cat)
{
	size_t i, j;

	for (i = 0; i < cat->n; i++) {
		const struct cvm_release *r = &cat->rel[i];
		struct cvm_version lv;
		bool any_unsized = false;

		FUZZ_ASSERT(r->label && r->source, "release %zu without label or source", i);
		FUZZ_ASSERT(cvm_version_parse(r->label, &lv) == 0 && lv.n == r->label_v.n &&
			    !cvm_version_cmp(&lv, &r->label_v), "label '%s' and label_v differ",
			    r->label);
		FUZZ_ASSERT(r->nbuilds >= 1 && r->builds, "release %s without builds", r->label);
		for (j = 0; j < r->nbuilds; j++) {
			check_build(r, &r->builds[j]);
			any_unsized |= !r->builds[j].has_size;
		}
		FUZZ_ASSERT(r->low_trust == any_unsized, "release %s: low_trust %d", r->label,
			    r->low_trust);
		if (i)
			FUZZ_ASSERT(cvm_version_cmp(&cat->rel[i - 1].label_v, &r->label_v) > 0,
				    "%s before %s: not newest first, or the same twice",
				    cat->rel[i - 1].label, r->label);
	}
}

static bool fits(const struct cvm_build *b, const struct cvm_version *want, int cuda, int minor,
		 const char *platform)
{
	/* cudnn_jit is a component of its own: never what a cuDNN version resolves to. */
	if (b->jit || (want->n == 4 && cvm_version_cmp(&b->version, want)))
		return false;
	/* A build NVIDIA made for X.Y on (cuda13.4) fits a toolkit from X.Y; minor -1 (unknown): none. */
	return (cuda < 0 || b->cuda_major == cuda) && b->cuda_minor <= minor &&
	       !strcmp(b->platform, platform);
}

/* Resolves and checks the answer; returns cvm_catalogue_resolve's result. */
static int resolve(const struct cvm_catalogue *cat, const char *spec, int cuda, int minor,
		   const char *platform)
{
	const struct cvm_release *rel = NULL, *best = NULL;
	const struct cvm_build *build = NULL;
	struct cvm_version want;
	const char *plat = platform ? platform : cvm_host_platform();
	int r = cvm_catalogue_resolve(cat, spec, cuda, minor, platform, &rel, &build);
	size_t i, j;

	FUZZ_ASSERT(r == 0 || r == -CVM_E_NOTFOUND || r == -CVM_E_VERSION, "resolve '%s': %d",
		    spec, r);
	if (cvm_version_parse(spec, &want) < 0) {
		FUZZ_ASSERT(r == -CVM_E_VERSION, "resolve '%s' took a bad spec", spec);
		return r;
	}
	if (!plat)
		return r;
	/* The newest release that matches and has a fitting build, found by a plain scan. */
	for (i = 0; i < cat->n; i++) {
		const struct cvm_release *c = &cat->rel[i];
		bool label_ok = want.n < 4 ? cvm_version_matches(&want, &c->label_v) : true;

		for (j = 0; label_ok && j < c->nbuilds; j++)
			if (fits(&c->builds[j], &want, cuda, minor, plat) &&
			    (!best || cvm_version_cmp(&c->label_v, &best->label_v) > 0))
				best = c;
	}
	if (r < 0) {
		FUZZ_ASSERT(!best, "resolve '%s' cuda %d %s failed, but %s has a build", spec, cuda,
			    plat, best->label);
		return r;
	}
	FUZZ_ASSERT(rel >= cat->rel && rel < cat->rel + cat->n, "release outside the catalogue");
	FUZZ_ASSERT(build >= rel->builds && build < rel->builds + rel->nbuilds,
		    "build outside its release");
	FUZZ_ASSERT(fits(build, &want, cuda, minor, plat), "resolve '%s' gave an unfitting build %s",
		    spec, build->version_str);
	FUZZ_ASSERT(want.n == 4 || cvm_version_matches(&want, &rel->label_v),
		    "resolve '%s' gave release %s", spec, rel->label);
	FUZZ_ASSERT(best == rel, "resolve '%s' gave %s, not the newest fit %s", spec, rel->label,
		    best ? best->label : "(none)");
	return r;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const specs[] = { "9", "8.9", "8.9.7", "8.9.7.29", "9.1.0.70", "0",
					     "x", "", NULL };
	struct cvm_catalogue cat;
	size_t i, j, n;
	int r;

	memset(&cat, 0, sizeof(cat));
	r = cvm_catalogue_add_buf(&cat, "redistrib_fuzz.json", (const char *)data, size);
	FUZZ_ASSERT(r == 0 || r == -CVM_E_MANIFEST || r == -ENOMEM, "add_buf gave %d", r);
	if (r < 0) {
		/* A bad document leaves the catalogue as it was. */
		FUZZ_ASSERT(cat.n == 0, "a refused document left %zu releases", cat.n);
		cvm_catalogue_release(&cat);
		return 0;
	}
	n = cat.n;
	FUZZ_ASSERT(n >= 1, "an accepted document gave no release");
	r = cvm_catalogue_add_buf(&cat, "redistrib_fuzz2.json", (const char *)data, size);
	FUZZ_ASSERT(r == 0 && cat.n == n, "the same document again: %d, %zu releases, was %zu", r,
		    cat.n, n);
	cvm_catalogue_sort(&cat);
	check_catalogue(&cat);

	for (i = 0; specs[i]; i++) {
		resolve(&cat, specs[i], -1, -1, "linux-x86_64");
		resolve(&cat, specs[i], 12, -1, NULL);
	}
	for (i = 0; i < cat.n && i < 8; i++) {
		const struct cvm_release *rel = &cat.rel[i];

		for (j = 0; j < rel->nbuilds && j < 8; j++) {
			const struct cvm_build *b = &rel->builds[j];
			char *label, *ver, *plat;

			if (b->jit) /* listed, never resolved: the oracle's fits() skips it too */
				continue;
			/* Copies: resolve's messages must not depend on borrowing from cat. */
			label = strdup(rel->label);
			ver = strdup(b->version_str);
			plat = strdup(b->platform);
			if (!label || !ver || !plat)
				abort();
			FUZZ_ASSERT(resolve(&cat, label, b->cuda_major, b->cuda_minor, plat) == 0,
				    "release %s has a CUDA %d build for %s that resolve cannot find",
				    label, b->cuda_major, plat);
			FUZZ_ASSERT(resolve(&cat, ver, b->cuda_major, b->cuda_minor, plat) == 0,
				    "build %s (CUDA %d, %s) cannot be resolved", ver, b->cuda_major,
				    plat);
			resolve(&cat, ver, -1, -1, plat);
			resolve(&cat, label, b->cuda_major + 1, -1, plat);
			resolve(&cat, label, b->cuda_major, -1, "linux-nowhere");
			free(label);
			free(ver);
			free(plat);
		}
	}
	cvm_catalogue_release(&cat);
	return 0;
}
