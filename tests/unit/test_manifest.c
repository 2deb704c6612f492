/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdlib.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "embedded.h"
#include "error.h"
#include "manifest.h"
#include "out.h"
#include "unit.h"

#define SHA_897_X86_CU11 "a3e2509028cecda0117ce5a0f42106346e82e86d390f4bb9475afc976c77402e"
#define SHA_897_SBSA_CU12 "e98b7c80010785e5d5ca01ee4ce9b5b0c8c73587ea6f8648be34d3f8d1d47bd1"
#define SHA_911_X86_CU12 "992b4be26899cc4c618bb1f6989261df7d0a9f9032b2217bf1fce9dd3228c904"
#define SHA_9270_ARM_FLAT "1fe473fc57095ac23ff39b2709edd5f8c3dec8376e6a6f3b812cf4617a29060d"
#define SHA_A "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"

/* stderr is sent to a file while a message is expected, to compare its text. */
static FILE *cap_file;
static int cap_saved = -1;
static char cap_buf[4096];

static void cap_start(void)
{
	fflush(stderr);
	cap_file = tmpfile();
	cap_saved = dup(STDERR_FILENO);
	if (!cap_file || cap_saved < 0 || dup2(fileno(cap_file), STDERR_FILENO) < 0) {
		perror("capture");
		exit(2);
	}
}

/* The captured text, without the prefix of the first line and the last newline. */
static const char *cap_end(void)
{
	static const char prefix[] = "cudnnvm: error: ";
	size_t n;

	fflush(stderr);
	dup2(cap_saved, STDERR_FILENO);
	close(cap_saved);
	rewind(cap_file);
	n = fread(cap_buf, 1, sizeof(cap_buf) - 1, cap_file);
	cap_buf[n] = '\0';
	fclose(cap_file);
	if (n && cap_buf[n - 1] == '\n')
		cap_buf[--n] = '\0';
	if (!strncmp(cap_buf, prefix, sizeof(prefix) - 1))
		return cap_buf + sizeof(prefix) - 1;
	return cap_buf;
}

static const struct cvm_release *find(const struct cvm_catalogue *cat, const char *label)
{
	size_t i;

	for (i = 0; i < cat->n; i++)
		if (!strcmp(cat->rel[i].label, label))
			return &cat->rel[i];
	return NULL;
}

static void test_embedded_files(void)
{
	const struct cvm_embedded *e;
	struct cvm_catalogue cat;
	int nredistrib = 0, nother = 0, r;
	bool spack = false;

	for (e = cvm_embedded_manifests; e->name; e++) {
		memset(&cat, 0, sizeof(cat));
		r = cvm_catalogue_add_buf(&cat, e->name, e->data, e->len);
		CHECK_INT(r, 0, "embedded %s loads", e->name);
		CHECK(cat.n >= 1, "embedded %s has releases", e->name);
		if (!strncmp(e->name, "redistrib_", 10)) {
			nredistrib++;
			CHECK_INT(cat.n, 1, "%s holds one release", e->name);
			CHECK(cat.n == 1 && !cat.rel[0].low_trust, "%s is not low-trust", e->name);
		} else {
			nother++;
		}
		if (!strcmp(e->name, "spack-only-releases.json")) {
			spack = true;
			CHECK_INT(cat.n, 14, "spack-only-releases.json holds 14 releases");
		}
		CHECK(strcmp(e->name, "legacy-archives.json") && strcmp(e->name, "provenance.json"),
		      "%s is a catalogue file", e->name);
		cvm_catalogue_release(&cat);
	}
	CHECK(nredistrib >= 30, "redistrib manifests are embedded (%d)", nredistrib);
	CHECK(spack, "spack-only-releases.json is embedded");
	CHECK_INT(nother, 1, "one *releases.json file is embedded");
}

static void test_load(struct cvm_catalogue *cat)
{
	const struct cvm_embedded *e;
	size_t i, nfiles = 0;
	bool sorted = true;

	for (e = cvm_embedded_manifests; e->name; e++)
		nfiles++;
	CHECK_INT(cvm_catalogue_load(cat, NULL), 0, "the embedded catalogue loads");
	CHECK_INT(cat->n, nfiles - 1 + 14, "one release per redistrib file plus 14 from spack");
	for (i = 1; i < cat->n; i++)
		if (cvm_version_cmp(&cat->rel[i - 1].label_v, &cat->rel[i].label_v) <= 0)
			sorted = false;
	CHECK(sorted, "releases are sorted newest first, labels unique");
	CHECK_STR(cat->n ? cat->rel[0].label : NULL, "9.27.0", "newest is 9.27.0");
	CHECK_STR(cat->n ? cat->rel[cat->n - 1].label : NULL, "8.5.0", "oldest is 8.5.0");
}

static void test_resolve_897(const struct cvm_catalogue *cat)
{
	static const char *const specs[] = { "8.9.7", "8.9.7.29", "8.9", "8" };
	const struct cvm_release *rel = NULL;
	const struct cvm_build *b = NULL;
	size_t i;

	for (i = 0; i < sizeof(specs) / sizeof(specs[0]); i++) {
		rel = NULL;
		b = NULL;
		CHECK_INT(cvm_catalogue_resolve(cat, specs[i], 11, -1, "linux-x86_64", &rel, &b), 0,
			  "resolve '%s' for CUDA 11", specs[i]);
		if (!b)
			continue;
		CHECK_STR(rel->label, "8.9.7", "'%s' -> release 8.9.7", specs[i]);
		CHECK_STR(b->version_str, "8.9.7.29", "'%s' -> build 8.9.7.29", specs[i]);
	}
	if (!b)
		return;
	CHECK_INT(b->cuda_major, 11, "8.9.7: cuda_major 11");
	CHECK_STR(b->platform, "linux-x86_64", "8.9.7: platform");
	CHECK_STR(b->sha256, SHA_897_X86_CU11, "8.9.7: sha256");
	CHECK(b->has_size, "8.9.7: has a size");
	CHECK_INT(b->size, 860967256, "8.9.7: size");
	CHECK_STR(b->file_name, "cudnn-linux-x86_64-8.9.7.29_cuda11-archive.tar.xz", "8.9.7: file name");
	CHECK_STR(b->relative_path, "cudnn/linux-x86_64/cudnn-linux-x86_64-8.9.7.29_cuda11-archive.tar.xz",
		  "8.9.7: relative path");
	CHECK(b->version.n == 4 && b->version.part[3] == 29, "8.9.7: version struct");
	CHECK_STR(rel->source, "redistrib_8.9.7.json", "8.9.7: source");
	CHECK(!rel->low_trust, "8.9.7: not low-trust");
	CHECK(rel->release_date != NULL, "8.9.7: has a release date");
	CHECK(cvm_release_build(rel, 11, "linux-x86_64") == b, "cvm_release_build finds the same build");
	CHECK(cvm_release_build(rel, 13, "linux-x86_64") == NULL, "8.9.7 has no cuda13 build");
	CHECK(cvm_release_build(rel, 12, "linux-ppc64le") != NULL, "8.9.7 has a ppc64le cuda12 build");

	CHECK_INT(cvm_catalogue_resolve(cat, "8", 12, -1, "linux-x86_64", &rel, &b), 0, "resolve '8' for CUDA 12");
	CHECK_STR(b->version_str, "8.9.7.29", "'8' + CUDA 12 -> 8.9.7.29");
	CHECK_INT(cvm_catalogue_resolve(cat, "8.9.7", 12, -1, "linux-sbsa", &rel, &b), 0,
		  "resolve 8.9.7 for CUDA 12 on linux-sbsa");
	CHECK_STR(b->platform, "linux-sbsa", "sbsa: platform");
	CHECK_STR(b->file_name, "cudnn-linux-sbsa-8.9.7.29_cuda12-archive.tar.xz", "sbsa: file name");
	CHECK_STR(b->sha256, SHA_897_SBSA_CU12, "sbsa: sha256");
	CHECK_INT(b->size, 863497272, "sbsa: size");
}

static void test_resolve_9(const struct cvm_catalogue *cat)
{
	const struct cvm_release *rel = NULL;
	const struct cvm_build *b = NULL, *arm;
	size_t i, narm = 0;

	CHECK_INT(cvm_catalogue_resolve(cat, "9.1", 12, -1, "linux-x86_64", &rel, &b), 0, "resolve 9.1 for CUDA 12");
	CHECK_STR(rel->label, "9.1.1", "9.1 -> release 9.1.1");
	CHECK_STR(b->version_str, "9.1.1.17", "9.1 -> build 9.1.1.17");
	CHECK_INT(b->cuda_major, 12, "9.1 -> cuda12");
	CHECK_STR(b->sha256, SHA_911_X86_CU12, "9.1.1 cuda12 sha256");

	CHECK_INT(cvm_catalogue_resolve(cat, "9", 13, -1, "linux-x86_64", &rel, &b), 0, "resolve 9 for CUDA 13");
	CHECK_STR(b->version_str, "9.27.0.42", "9 + CUDA 13 -> newest, 9.27.0.42");
	CHECK_INT(cvm_catalogue_resolve(cat, "9", 11, -1, "linux-x86_64", &rel, &b), 0, "resolve 9 for CUDA 11");
	CHECK_STR(rel->label, "9.10.2", "9 + CUDA 11 -> 9.10.2, the last with cuda11 builds");
	CHECK(rel->low_trust && !b->has_size, "9.10.2 comes from the spack table: low-trust, no size");
	CHECK_INT(cvm_catalogue_resolve(cat, "9.1.0", 11, -1, "linux-sbsa", &rel, &b), 0, "resolve 9.1.0 cuda11 sbsa");
	CHECK_STR(b->version_str, "9.1.0.70", "9.1.0 sbsa -> 9.1.0.70");

	/* 9.15.0: build numbers differ between the CUDA variants. */
	CHECK_INT(cvm_catalogue_resolve(cat, "9.15.0", 13, -1, "linux-x86_64", &rel, &b), 0, "resolve 9.15.0 cuda13");
	CHECK_STR(b->version_str, "9.15.0.58", "9.15.0 cuda13 -> .58");
	CHECK_STR(b->file_name, "cudnn-linux-x86_64-9.15.0.58_cuda13-archive.tar.xz", "9.15.0 cuda13 file name");
	CHECK_STR(rel->source, "spack-only-releases.json", "9.15.0 source");
	CHECK(rel->low_trust, "9.15.0 is low-trust");
	CHECK(!b->has_size, "9.15.0 has no size");
	CHECK_INT(cvm_catalogue_resolve(cat, "9.15.0", 12, -1, "linux-x86_64", &rel, &b), 0, "resolve 9.15.0 cuda12");
	CHECK_STR(b->version_str, "9.15.0.57", "9.15.0 cuda12 -> .57");
	CHECK_INT(cvm_catalogue_resolve(cat, "9.15.0.58", 13, -1, "linux-x86_64", &rel, &b), 0, "resolve 9.15.0.58 cuda13");
	CHECK_STR(rel->label, "9.15.0", "9.15.0.58 -> release 9.15.0");
	CHECK_INT(cvm_catalogue_resolve(cat, "9.15.0.57", 12, -1, "linux-sbsa", &rel, &b), 0, "resolve 9.15.0.57 cuda12 sbsa");
	CHECK_STR(b->file_name, "cudnn-linux-sbsa-9.15.0.57_cuda12-archive.tar.xz", "9.15.0.57 sbsa file name");

	/* 9.27.0 windows-arm64: a cuda13 object and a flat entry side by side. */
	rel = NULL;
	for (i = 0; i < cat->n; i++)
		if (!strcmp(cat->rel[i].label, "9.27.0"))
			rel = &cat->rel[i];
	CHECK(rel != NULL, "9.27.0 is in the catalogue");
	if (!rel)
		return;
	CHECK(cvm_release_build(rel, 13, "windows-arm64") != NULL, "9.27.0 has a windows-arm64 cuda13 build");
	arm = NULL;
	for (i = 0; i < rel->nbuilds; i++) {
		if (strcmp(rel->builds[i].platform, "windows-arm64"))
			continue;
		narm++;
		if (strstr(rel->builds[i].file_name, "_cuda13.4-"))
			arm = &rel->builds[i];
	}
	CHECK_INT(narm, 2, "9.27.0 windows-arm64: nested and flat entries both read");
	CHECK(arm != NULL, "9.27.0 windows-arm64 flat entry is present");
	if (arm) {
		CHECK_INT(arm->cuda_major, 13, "flat entry: CUDA major 13 from the file name");
		CHECK_STR(arm->sha256, SHA_9270_ARM_FLAT, "flat entry: sha256");
		CHECK_INT(arm->size, 481633269, "flat entry: size");
		CHECK_STR(arm->version_str, "9.27.0.42", "flat entry: version");
		CHECK_INT(arm->cuda_minor, 4, "flat entry: CUDA variant 13.4 from the file name");
		CHECK_STR(arm->cuda_variant, "13.4", "flat entry: cuda_variant as NVIDIA names it");
	}
	CHECK_INT(rel->nbuilds, 12, "9.27.0 has 8 cudnn and 4 cudnn_jit builds (samples ignored)");
	narm = 0;
	for (i = 0; i < rel->nbuilds; i++)
		narm += rel->builds[i].jit;
	CHECK_INT(narm, 4, "9.27.0: the 4 cudnn_jit builds are marked jit");
	{
		const struct cvm_build *pick = NULL;
		const struct cvm_release *pr = NULL;

		CHECK_INT(cvm_catalogue_resolve(cat, "9.27", 13, 0, "windows-arm64", &pr, &pick), 0,
			  "9.27 for CUDA 13.0 on windows-arm64 resolves");
		CHECK_STR(pick ? pick->cuda_variant : "", "13", "CUDA 13.0 takes the cuda13 build");
		CHECK_INT(cvm_catalogue_resolve(cat, "9.27", 13, 4, "windows-arm64", &pr, &pick), 0,
			  "9.27 for CUDA 13.4 on windows-arm64 resolves");
		CHECK_STR(pick ? pick->cuda_variant : "", "13.4", "CUDA 13.4 takes the cuda13.4 build");
		CHECK_INT(cvm_catalogue_resolve(cat, "9.27", 13, 0, "linux-x86_64", &pr, &pick), 0,
			  "9.27 for CUDA 13.0 on linux-x86_64 resolves");
		CHECK(pick && !pick->jit, "resolve never takes the cudnn_jit build");
	}
}

static void test_resolve_errors(const struct cvm_catalogue *cat)
{
	const struct cvm_release *rel = NULL;
	const struct cvm_build *b = NULL;
	const char *msg;
	int r;

	cap_start();
	r = cvm_catalogue_resolve(cat, "8.6.0", 12, -1, "linux-x86_64", &rel, &b);
	msg = cap_end();
	CHECK_INT(r, -CVM_E_NOTFOUND, "8.6.0 for CUDA 12: not found");
	CHECK_STR(msg, "cuDNN 8.6.0 has no build for CUDA 12 (linux-x86_64); builds exist for CUDA 10, 11",
		  "8.6.0 for CUDA 12: message lists the CUDA majors");

	cap_start();
	r = cvm_catalogue_resolve(cat, "9.22.0", 12, -1, "linux-aarch64", &rel, &b);
	msg = cap_end();
	CHECK_INT(r, -CVM_E_NOTFOUND, "9.22.0 on linux-aarch64: not found");
	CHECK_STR(msg, "cuDNN 9.22.0 has no build for CUDA 12 (linux-aarch64); "
		  "builds exist for linux-x86_64, linux-sbsa, windows-x86_64",
		  "9.22.0 on linux-aarch64: message lists the platforms");

	cap_start();
	r = cvm_catalogue_resolve(cat, "9.15.0.58", 12, -1, "linux-x86_64", &rel, &b);
	msg = cap_end();
	CHECK_INT(r, -CVM_E_NOTFOUND, "9.15.0.58 for CUDA 12: not found (that build is cuda13)");
	CHECK_STR(msg, "cuDNN 9.15.0.58 has no build for CUDA 12 (linux-x86_64); builds exist for CUDA 13",
		  "9.15.0.58 for CUDA 12: message");

	cap_start();
	r = cvm_catalogue_resolve(cat, "9", 10, -1, "linux-x86_64", &rel, &b);
	msg = cap_end();
	CHECK_INT(r, -CVM_E_NOTFOUND, "9 for CUDA 10: not found");
	CHECK_STR(msg, "cuDNN 9.27.0 has no build for CUDA 10 (linux-x86_64); builds exist for CUDA 12, 13",
		  "9 for CUDA 10: names the newest 9.x");

	cap_start();
	r = cvm_catalogue_resolve(cat, "7.6", 11, -1, "linux-x86_64", &rel, &b);
	msg = cap_end();
	CHECK_INT(r, -CVM_E_NOTFOUND, "7.6: not found");
	CHECK_STR(msg, "no cuDNN release matches '7.6'; newest releases: 9.27.0, 9.22.0, 9.21.0, 9.20.0, 9.19.1, ...",
		  "7.6: message suggests the newest releases");

	cap_start();
	r = cvm_catalogue_resolve(cat, "8.9.7.30", 11, -1, "linux-x86_64", &rel, &b);
	msg = cap_end();
	CHECK_INT(r, -CVM_E_NOTFOUND, "8.9.7.30: no such build");
	CHECK(!strncmp(msg, "no cuDNN release matches '8.9.7.30'", 35), "8.9.7.30: message");

	cap_start();
	r = cvm_catalogue_resolve(cat, "8.x", 11, -1, "linux-x86_64", &rel, &b);
	msg = cap_end();
	CHECK_INT(r, -CVM_E_VERSION, "8.x: malformed");
	CHECK_STR(msg, "invalid version '8.x': expected numbers such as 8.9.7", "8.x: message");

	cap_start();
	r = cvm_catalogue_resolve(cat, "9.\x1b[31m", 11, -1, "linux-x86_64", &rel, &b);
	msg = cap_end();
	CHECK_INT(r, -CVM_E_VERSION, "escape sequence in spec: malformed");
	CHECK(!strchr(msg, '\x1b'), "escape sequence in spec is not printed raw");

	cap_start();
	r = cvm_catalogue_resolve(cat, "8.9.7", 11, -1, "linux-mips", &rel, &b);
	msg = cap_end();
	CHECK_INT(r, -CVM_E_NOTFOUND, "unknown platform: not found");
}

static void test_host_platform(void)
{
	struct utsname u;
	const char *p = cvm_host_platform();

	CHECK(uname(&u) == 0, "uname");
	if (!strcmp(u.machine, "x86_64"))
		CHECK_STR(p, "linux-x86_64", "host platform on x86_64");
	else if (!strcmp(u.machine, "aarch64"))
		CHECK_STR(p, "linux-sbsa", "host platform on aarch64");
	else
		CHECK(p == NULL, "host platform unknown on %s", u.machine);
}

/* A small valid document; the malformed ones below are variations of it. */
#define DOC_HEAD "{\"release_label\": \"1.2.3\", \"cudnn\": {\"version\": \"1.2.3.4\", "
#define GOOD_BUILD "{\"relative_path\": \"cudnn/linux-x86_64/cudnn-linux-x86_64-1.2.3.4_cuda12-archive.tar.xz\", " \
	"\"sha256\": \"" SHA_A "\", \"size\": \"100\"}"

static void test_good_docs(void)
{
	struct cvm_catalogue cat = { 0 };
	const struct cvm_release *rel;
	const struct cvm_build *b;
	static const char doc1[] = DOC_HEAD "\"linux-x86_64\": {\"cuda12\": " GOOD_BUILD "}}}";
	/* Flat entry, CUDA major from the only cuda_variant, size as an integer, uppercase hex. */
	static const char doc2[] = "{\"release_label\": \"1.3.0\", \"release_date\": \"2030-01-01\", "
		"\"cudnn\": {\"cuda_variant\": [\"11\"], \"name\": \"x\", \"license\": \"x\", "
		"\"linux-sbsa\": {\"relative_path\": \"a/cudnn-linux-sbsa-1.3.0.7-archive.tar.xz\", "
		"\"sha256\": \"ABCDEF0123456789ABCDEF0123456789ABCDEF0123456789ABCDEF0123456789\", \"size\": 42}}}";
	/* Several releases keyed by label, no version anywhere but the label. */
	static const char doc3[] = "{\"1.2.3\": " DOC_HEAD "\"linux-x86_64\": {\"cuda11\": "
		"{\"relative_path\": \"x/replaced.tar.xz\", \"sha256\": \"" SHA_A "\"}}}}, "
		"\"1.4\": {\"cudnn\": {\"linux-x86_64\": {\"cuda13\": "
		"{\"relative_path\": \"x/y.tar.xz\", \"sha256\": \"" SHA_A "\"}}}}}";

	CHECK_INT(cvm_catalogue_add_buf(&cat, "doc1.json", doc1, strlen(doc1)), 0, "a minimal document loads");
	CHECK_INT(cvm_catalogue_add_buf(&cat, "doc2.json", doc2, strlen(doc2)), 0, "a flat document loads");
	CHECK_INT(cat.n, 2, "two releases");
	rel = find(&cat, "1.3.0");
	b = rel ? cvm_release_build(rel, 11, "linux-sbsa") : NULL;
	CHECK(b != NULL, "flat entry: CUDA major from cuda_variant");
	if (b) {
		CHECK_STR(b->sha256, "abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789",
			  "sha256 stored lowercase");
		CHECK(b->has_size && b->size == 42, "size given as an integer");
		CHECK_STR(b->version_str, "1.3.0.7", "version from the file name");
		CHECK_STR(b->file_name, "cudnn-linux-sbsa-1.3.0.7-archive.tar.xz", "file name");
		CHECK_STR(rel->release_date, "2030-01-01", "release date");
	}

	CHECK_INT(cvm_catalogue_add_buf(&cat, "doc3.json", doc3, strlen(doc3)), 0, "a document of several releases loads");
	CHECK_INT(cat.n, 3, "a release seen again is replaced, not added");
	rel = find(&cat, "1.2.3");
	CHECK(rel && !strcmp(rel->source, "doc3.json"), "the later file wins");
	b = rel ? cvm_release_build(rel, 11, "linux-x86_64") : NULL;
	CHECK(b && !strcmp(b->version_str, "1.2.3.4"), "version from cudnn.version when the name has none");
	CHECK(rel && rel->low_trust, "a release without sizes is low-trust");
	rel = find(&cat, "1.4");
	b = rel ? cvm_release_build(rel, 13, "linux-x86_64") : NULL;
	CHECK(b && !strcmp(b->version_str, "1.4"), "version from the label as a last resort");
	cvm_catalogue_sort(&cat);
	CHECK(cat.n == 3 && !strcmp(cat.rel[0].label, "1.4") && !strcmp(cat.rel[2].label, "1.2.3"),
	      "sorted newest first");
	CHECK_INT(cvm_catalogue_resolve(&cat, "1", 11, -1, "linux-x86_64", &rel, &b), 0, "resolve 1 for CUDA 11");
	CHECK_STR(rel->label, "1.2.3", "1 + CUDA 11 skips 1.4 and 1.3.0, which have none");
	cvm_catalogue_release(&cat);
	CHECK(cat.n == 0 && cat.rel == NULL, "release empties the catalogue");
}

static void test_bad_docs(void)
{
	static const struct {
		const char *what, *doc;
	} t[] = {
		{ "missing sha256", DOC_HEAD "\"linux-x86_64\": {\"cuda12\": {\"relative_path\": \"a/b.tar.xz\"}}}}" },
		{ "sha256 not a string", DOC_HEAD "\"linux-x86_64\": {\"cuda12\": {\"relative_path\": \"a/b\", \"sha256\": 5}}}}" },
		{ "sha256 with a non-hex digit", DOC_HEAD "\"linux-x86_64\": {\"cuda12\": {\"relative_path\": \"a/b\", "
		  "\"sha256\": \"gaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\"}}}}" },
		{ "sha256 of 63 digits", DOC_HEAD "\"linux-x86_64\": {\"cuda12\": {\"relative_path\": \"a/b\", "
		  "\"sha256\": \"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\"}}}}" },
		{ "size not a number", DOC_HEAD "\"linux-x86_64\": {\"cuda12\": {\"relative_path\": \"a/b\", "
		  "\"sha256\": \"" SHA_A "\", \"size\": \"12a\"}}}}" },
		{ "negative size", DOC_HEAD "\"linux-x86_64\": {\"cuda12\": {\"relative_path\": \"a/b\", "
		  "\"sha256\": \"" SHA_A "\", \"size\": -1}}}}" },
		{ "empty size", DOC_HEAD "\"linux-x86_64\": {\"cuda12\": {\"relative_path\": \"a/b\", "
		  "\"sha256\": \"" SHA_A "\", \"size\": \"\"}}}}" },
		{ "size past 2^64", DOC_HEAD "\"linux-x86_64\": {\"cuda12\": {\"relative_path\": \"a/b\", "
		  "\"sha256\": \"" SHA_A "\", \"size\": \"18446744073709551616\"}}}}" },
		{ "platform not an object", DOC_HEAD "\"linux-x86_64\": \"oops\"}}" },
		{ "platform with no builds", DOC_HEAD "\"linux-x86_64\": {}}}" },
		{ "two builds for one CUDA variant (nested cuda12 and a flat _cuda12)", DOC_HEAD "\"linux-x86_64\": "
		  "{\"cuda12\": " GOOD_BUILD ", \"relative_path\": \"a/x_cuda12-archive.tar.xz\", \"sha256\": \"" SHA_A "\"}}}" },
		{ "cudnn_jit not an object", DOC_HEAD "\"linux-x86_64\": {\"cuda12\": " GOOD_BUILD "}}, \"cudnn_jit\": 5}" },
		{ "cuda entry not an object", DOC_HEAD "\"linux-x86_64\": {\"cuda12\": [1]}}}" },
		{ "unknown object in a platform", DOC_HEAD "\"linux-x86_64\": {\"cudaX\": " GOOD_BUILD "}}}" },
		{ "platform name with a slash", DOC_HEAD "\"linux/x86_64\": {\"cuda12\": " GOOD_BUILD "}}}" },
		{ "relative_path with ..", DOC_HEAD "\"linux-x86_64\": {\"cuda12\": {\"relative_path\": \"a/../../b\", "
		  "\"sha256\": \"" SHA_A "\"}}}}" },
		{ "absolute relative_path", DOC_HEAD "\"linux-x86_64\": {\"cuda12\": {\"relative_path\": \"/etc/passwd\", "
		  "\"sha256\": \"" SHA_A "\"}}}}" },
		{ "relative_path with a control character", DOC_HEAD "\"linux-x86_64\": {\"cuda12\": {\"relative_path\": "
		  "\"a/b\\u001b[31m\", \"sha256\": \"" SHA_A "\"}}}}" },
		{ "flat entry with no CUDA major", DOC_HEAD "\"cuda_variant\": [\"11\", \"12\"], \"linux-x86_64\": "
		  "{\"relative_path\": \"a/b.tar.xz\", \"sha256\": \"" SHA_A "\"}}}" },
		{ "file of another release", DOC_HEAD "\"linux-x86_64\": {\"cuda12\": {\"relative_path\": "
		  "\"a/cudnn-linux-x86_64-9.1.0.70_cuda12-archive.tar.xz\", \"sha256\": \"" SHA_A "\"}}}}" },
		{ "cudnn.version of another release", "{\"release_label\": \"1.2.3\", \"cudnn\": {\"version\": \"2.0.0.1\", "
		  "\"linux-x86_64\": {\"cuda11\": {\"relative_path\": \"a/b\", \"sha256\": \"" SHA_A "\"}}}}" },
		{ "label not a version", "{\"release_label\": \"latest\", \"cudnn\": {\"linux-x86_64\": {\"cuda11\": "
		  "{\"relative_path\": \"a/b\", \"sha256\": \"" SHA_A "\"}}}}" },
		{ "missing label", "{\"cudnn\": {\"linux-x86_64\": {\"cuda11\": "
		  "{\"relative_path\": \"a/b\", \"sha256\": \"" SHA_A "\"}}}}" },
		{ "cudnn not an object", "{\"release_label\": \"1.2.3\", \"cudnn\": []}" },
		{ "no platforms", "{\"release_label\": \"1.2.3\", \"cudnn\": {\"version\": \"1.2.3.4\"}}" },
		{ "cuda_variant not a list", DOC_HEAD "\"cuda_variant\": \"12\", \"linux-x86_64\": {\"cuda12\": " GOOD_BUILD "}}}" },
		{ "invalid JSON", DOC_HEAD "\"linux-x86_64\": {\"cuda12\": " GOOD_BUILD ",}}}" },
		{ "truncated JSON", DOC_HEAD "\"linux-x86_64\": {" },
		{ "duplicate key", DOC_HEAD "\"linux-x86_64\": {\"cuda12\": " GOOD_BUILD ", \"cuda12\": " GOOD_BUILD "}}}" },
		{ "top level not an object", "[1, 2]" },
		{ "empty object", "{}" },
		{ "release of a multi-release file not an object", "{\"1.2.3\": 5}" },
		{ "label differing from its key", "{\"1.2.4\": " DOC_HEAD "\"linux-x86_64\": {\"cuda12\": " GOOD_BUILD "}}}}" },
		{ "a later bad release in a multi-release file", "{\"1.2.3\": " DOC_HEAD "\"linux-x86_64\": {\"cuda12\": "
		  GOOD_BUILD "}}}, \"1.2.5\": {\"cudnn\": {\"linux-x86_64\": 1}}}" },
	};
	static const char good[] = DOC_HEAD "\"linux-x86_64\": {\"cuda12\": " GOOD_BUILD "}}}";
	struct cvm_catalogue cat = { 0 };
	size_t i;
	int r;

	CHECK_INT(cvm_catalogue_add_buf(&cat, "good.json", good, strlen(good)), 0, "the base document loads");
	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		cap_start();
		r = cvm_catalogue_add_buf(&cat, "bad.json", t[i].doc, strlen(t[i].doc));
		cap_end();
		CHECK_INT(r, -CVM_E_MANIFEST, "%s: -CVM_E_MANIFEST", t[i].what);
		if (r != -CVM_E_MANIFEST)
			printf("#   %s\n", cap_buf);
		CHECK(strstr(cap_buf, "'bad.json'") && !strchr(cap_buf, '\x1b'),
		      "%s: message names the file, prints nothing raw", t[i].what);
	}
	CHECK(cat.n == 1 && !strcmp(cat.rel[0].source, "good.json") && cat.rel[0].nbuilds == 1,
	      "failed documents leave the catalogue as it was");
	cvm_catalogue_release(&cat);
}

static void test_messages(void)
{
	struct cvm_catalogue cat = { 0 };
	static const char doc[] = "{\"release_label\": \"9.1.0\", \"cudnn\": {\"linux-x86_64\": {\"cuda12\": "
		"{\"relative_path\": \"a/b\", \"sha256\": \"abc\"}}}}";
	static const char broken[] = "{\n  \"release_label\": \"9.1.0\",\n  \"cudnn\": {,\n}";
	static const char multi[] = "{\"1.0.0\": {\"cudnn\": {\"linux-x86_64\": {\"cuda12\": "
		"{\"relative_path\": \"a\", \"sha256\": \"" SHA_A "\", \"size\": \"x\"}}}}}";
	const char *msg;
	int r;

	cap_start();
	r = cvm_catalogue_add_buf(&cat, "redistrib_9.1.0.json", doc, strlen(doc));
	msg = cap_end();
	CHECK_INT(r, -CVM_E_MANIFEST, "short sha256 refused");
	CHECK_STR(msg, "manifest 'redistrib_9.1.0.json': key 'cudnn.linux-x86_64.cuda12.sha256': "
		  "expected 64 hex digits", "message names the file and the key path");

	cap_start();
	r = cvm_catalogue_add_buf(&cat, "x.json", broken, strlen(broken));
	msg = cap_end();
	CHECK_INT(r, -CVM_E_MANIFEST, "broken JSON refused");
	CHECK(!strncmp(msg, "cannot parse 'x.json': ", 23) && strstr(msg, " at line 3, column "),
	      "JSON error names the file, line and column");
	if (strncmp(msg, "cannot parse 'x.json': ", 23))
		printf("#   %s\n", msg);

	cap_start();
	r = cvm_catalogue_add_buf(&cat, "s.json", multi, strlen(multi));
	msg = cap_end();
	CHECK_INT(r, -CVM_E_MANIFEST, "bad size in a multi-release file refused");
	CHECK_STR(msg, "manifest 's.json': key '1.0.0.cudnn.linux-x86_64.cuda12.size': expected a number of bytes",
		  "key path of a multi-release file starts with the label");
	CHECK(cat.n == 0, "nothing was added");
	cvm_catalogue_release(&cat);
}

static int write_file(const char *dir, const char *name, const char *text)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	if (!f)
		return -1;
	fputs(text, f);
	return fclose(f);
}

static void remove_file(const char *dir, const char *name)
{
	char path[512];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	unlink(path);
}

static void test_extra_dir(void)
{
	static const char override[] = "{\"release_label\": \"8.9.7\", \"cudnn\": {\"version\": \"8.9.7.29\", "
		"\"linux-x86_64\": {\"cuda11\": {\"relative_path\": "
		"\"mine/cudnn-linux-x86_64-8.9.7.29_cuda11-archive.tar.xz\", \"sha256\": \"" SHA_A "\", "
		"\"size\": \"7\"}}}}";
	static const char newer[] = "{\"10.0.0\": {\"release_label\": \"10.0.0\", \"cudnn\": {\"linux-x86_64\": "
		"{\"cuda13\": {\"relative_path\": \"x/cudnn-linux-x86_64-10.0.0.1_cuda13-archive.tar.xz\", "
		"\"sha256\": \"" SHA_A "\"}}}}}";
	struct cvm_catalogue cat;
	const struct cvm_release *rel;
	const struct cvm_build *b;
	char dir[] = "/tmp/cvm-test-manifest.XXXXXX", want[600];
	int r;

	if (!mkdtemp(dir)) {
		CHECK(0, "mkdtemp");
		return;
	}
	CHECK(write_file(dir, "redistrib_8.9.7.json", override) == 0 &&
	      write_file(dir, "my-releases.json", newer) == 0 &&
	      write_file(dir, "notes.json", "not json at all") == 0 &&
	      write_file(dir, ".redistrib_1.0.0.json", "not json either") == 0, "write extra manifests");

	CHECK_INT(cvm_catalogue_load(&cat, dir), 0, "catalogue with an extra folder loads");
	CHECK_STR(cat.n ? cat.rel[0].label : NULL, "10.0.0", "a release from *releases.json is newest");
	CHECK_INT(cvm_catalogue_resolve(&cat, "8.9.7", 11, -1, "linux-x86_64", &rel, &b), 0, "8.9.7 resolves");
	CHECK_STR(b->sha256, SHA_A, "the extra folder's 8.9.7 replaces the built-in one");
	snprintf(want, sizeof(want), "%s/redistrib_8.9.7.json", dir);
	CHECK_STR(rel->source, want, "source is the extra file's path");
	CHECK(cvm_release_build(rel, 12, "linux-x86_64") == NULL, "the whole release is replaced");
	CHECK_INT(cvm_catalogue_resolve(&cat, "10", 13, -1, "linux-x86_64", &rel, &b), 0, "10 resolves");
	cvm_catalogue_release(&cat);

	CHECK(write_file(dir, "redistrib_9.99.0.json", "{\"release_label\": \"9.99.0\"}") == 0, "write a bad manifest");
	cap_start();
	r = cvm_catalogue_load(&cat, dir);
	cap_end();
	CHECK_INT(r, -CVM_E_MANIFEST, "a bad file in the extra folder fails the load");
	CHECK(cat.n == 0 && cat.rel == NULL, "a failed load leaves an empty catalogue");
	cvm_catalogue_release(&cat);

	remove_file(dir, "redistrib_8.9.7.json");
	remove_file(dir, "my-releases.json");
	remove_file(dir, "notes.json");
	remove_file(dir, ".redistrib_1.0.0.json");
	remove_file(dir, "redistrib_9.99.0.json");
	rmdir(dir);

	cap_start();
	r = cvm_catalogue_load(&cat, dir);
	cap_end();
	CHECK_INT(r, -ENOENT, "a missing extra folder: -ENOENT");
	cvm_catalogue_release(&cat);
}

int main(void)
{
	struct cvm_catalogue cat;

	test_embedded_files();
	test_load(&cat);
	test_resolve_897(&cat);
	test_resolve_9(&cat);
	test_resolve_errors(&cat);
	cvm_catalogue_release(&cat);
	test_host_platform();
	test_good_docs();
	test_bad_docs();
	test_messages();
	test_extra_dir();
	return unit_done();
}
