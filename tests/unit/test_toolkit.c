/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "error.h"
#include "toolkit.h"
#include "unit.h"

#define S(lit) lit, sizeof(lit) - 1

static const char nvcc_banner[] =
	"nvcc: NVIDIA (R) Cuda compiler driver\n"
	"Copyright (c) 2005-2024 NVIDIA Corporation\n"
	"Built on Thu_Mar_28_02:18:24_PDT_2024\n"
	"Cuda compilation tools, release 12.4, V12.4.131\n"
	"Build cuda_12.4.r12.4/compiler.34097967_0\n";

static void test_version_json(void)
{
	int maj = -1, min = -1;

	CHECK_INT(cvm_toolkit_parse_version_json(
		S("{\"cuda\": {\"name\": \"CUDA SDK\", \"version\": \"11.8.0\"}}"), &maj, &min),
		0, "version.json 11.8.0 parses");
	CHECK_INT(maj, 11, "version.json major 11");
	CHECK_INT(min, 8, "version.json minor 8");
	CHECK_INT(cvm_toolkit_parse_version_json(
		S("{\"cuda\": {\"version\": \"12.4.1\"}, \"cuda_cudart\": {\"version\": \"12.4.127\"}}"),
		&maj, &min), 0, "version.json 12.4.1 parses");
	CHECK(maj == 12 && min == 4, "version.json 12.4.1 gives 12.4");
	CHECK_INT(cvm_toolkit_parse_version_json(S("{\"cuda\": {\"version\": \"13.0\"}}"), &maj, &min),
		  0, "version.json with two parts parses");
	CHECK(maj == 13 && min == 0, "version.json 13.0 gives 13.0");

	maj = min = -1;
	CHECK_INT(cvm_toolkit_parse_version_json(S("{\"cuda\": {\"version\": "), &maj, &min),
		  -CVM_E_NOTFOUND, "malformed version.json is refused");
	CHECK_INT(cvm_toolkit_parse_version_json(S(""), &maj, &min),
		  -CVM_E_NOTFOUND, "empty version.json is refused");
	CHECK_INT(cvm_toolkit_parse_version_json(S("{\"cuda\": {\"name\": \"CUDA SDK\"}}"), &maj, &min),
		  -CVM_E_NOTFOUND, "version.json without cuda.version is refused");
	CHECK_INT(cvm_toolkit_parse_version_json(S("{\"cuda_cudart\": {\"version\": \"12.4.1\"}}"),
					      &maj, &min),
		  -CVM_E_NOTFOUND, "version.json without a cuda member is refused");
	CHECK_INT(cvm_toolkit_parse_version_json(S("{\"cuda\": {\"version\": 12.4}}"), &maj, &min),
		  -CVM_E_NOTFOUND, "a number instead of a string is refused");
	CHECK_INT(cvm_toolkit_parse_version_json(S("{\"cuda\": \"12.4\"}"), &maj, &min),
		  -CVM_E_NOTFOUND, "cuda as a string, not an object, is refused");
	CHECK_INT(cvm_toolkit_parse_version_json(S("[1, 2]"), &maj, &min),
		  -CVM_E_NOTFOUND, "an array document is refused");
	CHECK_INT(cvm_toolkit_parse_version_json(S("{\"cuda\": {\"version\": \"12\"}}"), &maj, &min),
		  -CVM_E_NOTFOUND, "a version without minor is refused");
	CHECK_INT(cvm_toolkit_parse_version_json(S("{\"cuda\": {\"version\": \"12.x\"}}"), &maj, &min),
		  -CVM_E_NOTFOUND, "a non-numeric minor is refused");
	CHECK_INT(cvm_toolkit_parse_version_json(S("{\"cuda\": {\"version\": \"12.4rc\"}}"), &maj, &min),
		  -CVM_E_NOTFOUND, "trailing junk after X.Y is refused");
	CHECK(maj == -1 && min == -1, "failed parses leave the outputs alone");
}

static void test_cudart_header(void)
{
	int maj = -1, min = -1;

	CHECK_INT(cvm_toolkit_parse_cudart_header(S("/* x */\n#define CUDART_VERSION  11080\n"),
						&maj, &min), 0, "CUDART_VERSION 11080 parses");
	CHECK(maj == 11 && min == 8, "11080 gives 11.8");
	CHECK_INT(cvm_toolkit_parse_cudart_header(S("#if !defined(X)\n#  define CUDART_VERSION 12040\n#endif\n"),
						&maj, &min), 0, "indented CUDART_VERSION 12040 parses");
	CHECK(maj == 12 && min == 4, "12040 gives 12.4");
	CHECK_INT(cvm_toolkit_parse_cudart_header(S("#define CUDART_VERSION\t13000"), &maj, &min),
		  0, "CUDART_VERSION 13000 at end of text without newline parses");
	CHECK(maj == 13 && min == 0, "13000 gives 13.0");

	maj = min = -1;
	CHECK_INT(cvm_toolkit_parse_cudart_header(S("#include <cuda.h>\nint x;\n"), &maj, &min),
		  -CVM_E_NOTFOUND, "a header without CUDART_VERSION is refused");
	CHECK_INT(cvm_toolkit_parse_cudart_header(S(""), &maj, &min),
		  -CVM_E_NOTFOUND, "an empty header is refused");
	CHECK_INT(cvm_toolkit_parse_cudart_header(S("#if CUDART_VERSION >= 12000\n"), &maj, &min),
		  -CVM_E_NOTFOUND, "a use of CUDART_VERSION is not its definition");
	CHECK_INT(cvm_toolkit_parse_cudart_header(S("#define CUDART_VERSION_MAJOR 12\n"), &maj, &min),
		  -CVM_E_NOTFOUND, "a longer macro name does not count");
	CHECK_INT(cvm_toolkit_parse_cudart_header(S("#define CUDART_VERSION 12040x\n"), &maj, &min),
		  -CVM_E_NOTFOUND, "a value with junk glued on is refused");
	CHECK_INT(cvm_toolkit_parse_cudart_header(S("#define CUDART_VERSION 12\n"), &maj, &min),
		  -CVM_E_NOTFOUND, "a value below 1000 is refused");
	CHECK_INT(cvm_toolkit_parse_cudart_header(S("#define CUDART_VERSION 120"), &maj, &min),
		  -CVM_E_NOTFOUND, "a value cut short by the buffer end is refused");
	CHECK(maj == -1 && min == -1, "failed parses leave the outputs alone");
}

static void test_nvcc(void)
{
	int maj = -1, min = -1;

	CHECK_INT(cvm_toolkit_parse_nvcc(nvcc_banner, strlen(nvcc_banner), &maj, &min), 0,
		  "real nvcc 12.4 banner parses");
	CHECK(maj == 12 && min == 4, "nvcc banner gives 12.4");
	CHECK_INT(cvm_toolkit_parse_nvcc(S("Cuda compilation tools, release 13.0, V13.0.88"), &maj, &min),
		  0, "one-line nvcc 13.0 output parses");
	CHECK(maj == 13 && min == 0, "nvcc 13.0 output gives 13.0");

	maj = min = -1;
	CHECK_INT(cvm_toolkit_parse_nvcc(S("bash: nvcc: command not found\n"), &maj, &min),
		  -CVM_E_NOTFOUND, "garbage output is refused");
	CHECK_INT(cvm_toolkit_parse_nvcc(S(""), &maj, &min), -CVM_E_NOTFOUND, "empty output is refused");
	CHECK_INT(cvm_toolkit_parse_nvcc(S("release notes, release x.y"), &maj, &min),
		  -CVM_E_NOTFOUND, "release without a number is refused");
	CHECK_INT(cvm_toolkit_parse_nvcc(S("release 12"), &maj, &min),
		  -CVM_E_NOTFOUND, "release without minor is refused");
	CHECK_INT(cvm_toolkit_parse_nvcc(S("release 12.4beta"), &maj, &min),
		  -CVM_E_NOTFOUND, "release followed by junk is refused");
	CHECK(maj == -1 && min == -1, "failed parses leave the outputs alone");
}

/* ------------------------------------------------------------ fake root */

static char root[512];

/* mkdir -p of ROOT/rel. */
static int mkdirs(const char *rel)
{
	char dir[PATH_MAX];
	size_t skip = strlen(root) + 1;

	snprintf(dir, sizeof(dir), "%s/%s", root, rel);
	for (char *p = dir + skip; (p = strchr(p, '/')); p++) {
		*p = '\0';
		if (mkdir(dir, 0755) < 0 && errno != EEXIST)
			return -1;
		*p = '/';
	}
	return mkdir(dir, 0755) < 0 && errno != EEXIST ? -1 : 0;
}

static int put(const char *rel, const char *text, mode_t mode)
{
	char path[PATH_MAX], parent[PATH_MAX];
	char *slash;
	FILE *f;

	snprintf(parent, sizeof(parent), "%s", rel);
	slash = strrchr(parent, '/');
	if (slash) {
		*slash = '\0';
		if (mkdirs(parent) < 0)
			return -1;
	}
	snprintf(path, sizeof(path), "%s/%s", root, rel);
	f = fopen(path, "w");
	if (!f)
		return -1;
	fputs(text, f);
	if (fclose(f) != 0)
		return -1;
	return chmod(path, mode);
}

static int link_to(const char *target, const char *rel)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	unlink(path);
	return symlink(target, path);
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	return flag == FTW_DP ? rmdir(path) : unlink(path);
}

static void build_root(void)
{
	int r = 0;

	snprintf(root, sizeof(root), "%s/cvm-tk-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	CHECK(mkdtemp(root) != NULL, "temp root %s created", root);
	r |= put("usr/local/cuda-11.8/version.json",
		 "{\"cuda\": {\"name\": \"CUDA SDK\", \"version\": \"11.8.0\"}}\n", 0644);
	r |= put("usr/local/cuda-12.4/include/cuda_runtime_api.h",
		 "#ifndef __CUDA_RUNTIME_API_H__\n#define __CUDA_RUNTIME_API_H__\n"
		 "#define CUDART_VERSION  12040\n#endif\n", 0644);
	r |= put("opt/cuda-13.0/bin/nvcc",
		 "#!/bin/sh\n"
		 "echo 'nvcc: NVIDIA (R) Cuda compiler driver'\n"
		 "echo 'Cuda compilation tools, release 13.0, V13.0.88'\n", 0755);
	/* Broken sources: malformed version.json falls through to the header. */
	r |= put("usr/local/cuda-12.1/version.json", "{\"cuda\": ", 0644);
	r |= put("usr/local/cuda-12.1/include/cuda_runtime_api.h", "#define CUDART_VERSION 12010\n", 0644);
	r |= mkdirs("usr/local/cuda-empty");
	/* Nothing readable at all: an nvcc that prints garbage. */
	r |= put("usr/local/cuda-junk/bin/nvcc", "#!/bin/sh\necho hello\n", 0755);
	/* Aliases of folders found already: listed once, under the real name. */
	r |= link_to("cuda-11.8", "usr/local/cuda-11");
	r |= link_to("/usr/local/cuda-12.4", "opt/cuda");
	/* A dangling candidate: skipped. */
	r |= link_to("/nowhere", "usr/local/cuda-9.9");
	/* Absolute: means ROOT/usr/local/cuda-12.4, never the host's. */
	r |= link_to("/usr/local/cuda-12.4", "usr/local/cuda");
	CHECK_INT(r, 0, "fake toolkits written");
}

static void test_discovery(void)
{
	struct cvm_toolkit *t = NULL;
	char want[PATH_MAX], slash[PATH_MAX];
	size_t n = 0;
	int r;

	r = cvm_toolkits_find(root, &t, &n);
	CHECK_INT(r, 0, "find succeeds");
	CHECK_INT(n, 4, "four toolkits, each real folder once, empty and junk ones skipped");
	if (r == 0 && n == 4) {
		CHECK(t[0].major == 11 && t[0].minor == 8, "first is 11.8");
		CHECK_STR(t[0].display, "/usr/local/cuda-11.8", "11.8 under its real name");
		snprintf(want, sizeof(want), "%s/usr/local/cuda-11.8", root);
		CHECK_STR(t[0].path, want, "11.8 host path is under the root");
		CHECK_STR(t[0].source, "version.json", "11.8 read from version.json");
		CHECK(t[1].major == 12 && t[1].minor == 1, "second is 12.1");
		CHECK_STR(t[1].source, "cuda_runtime_api.h", "malformed version.json falls back to the header");
		CHECK(t[2].major == 12 && t[2].minor == 4, "third is 12.4");
		CHECK_STR(t[2].display, "/usr/local/cuda-12.4", "12.4 once, not also as /opt/cuda");
		CHECK_STR(t[2].source, "cuda_runtime_api.h", "12.4 read from the header");
		CHECK(t[3].major == 13 && t[3].minor == 0, "fourth is 13.0");
		CHECK_STR(t[3].display, "/opt/cuda-13.0", "13.0 found under /opt");
		CHECK_STR(t[3].source, "nvcc", "13.0 read from nvcc");
	}
	cvm_toolkits_free(t, n);

	/* A trailing slash on the root changes nothing. */
	snprintf(slash, sizeof(slash), "%s/", root);
	t = NULL;
	n = 0;
	CHECK_INT(cvm_toolkits_find(slash, &t, &n), 0, "find with 'ROOT/' succeeds");
	CHECK_INT(n, 4, "the same four toolkits with 'ROOT/'");
	if (n == 4)
		CHECK_STR(t[0].display, "/usr/local/cuda-11.8", "display has no doubled slash");
	cvm_toolkits_free(t, n);
}

static void test_select(void)
{
	struct cvm_toolkit t;
	char want[PATH_MAX];
	int r;

	r = cvm_toolkit_select(root, NULL, &t);
	CHECK_INT(r, 0, "select(NULL) follows the absolute usr/local/cuda link inside the root");
	CHECK(r == 0 && t.major == 12 && t.minor == 4, "select(NULL) gives 12.4");
	snprintf(want, sizeof(want), "%s/usr/local/cuda-12.4", root);
	CHECK_STR(r == 0 ? t.path : NULL, want, "select(NULL) host path");
	CHECK_STR(r == 0 ? t.display : NULL, "/usr/local/cuda-12.4", "select(NULL) display path");
	cvm_toolkit_release(&t);

	r = cvm_toolkit_select(root, "11.8", &t);
	CHECK_INT(r, 0, "select 11.8");
	CHECK_STR(r == 0 ? t.display : NULL, "/usr/local/cuda-11.8", "select 11.8 path");
	CHECK_STR(r == 0 ? t.source : NULL, "version.json", "select 11.8 source");
	cvm_toolkit_release(&t);

	r = cvm_toolkit_select(root, "13.0", &t);
	CHECK_INT(r, 0, "select 13.0 (under /opt)");
	CHECK_STR(r == 0 ? t.display : NULL, "/opt/cuda-13.0", "select 13.0 path");
	cvm_toolkit_release(&t);

	r = cvm_toolkit_select(root, "10.2", &t);
	CHECK_INT(r, -CVM_E_NOTFOUND, "select 10.2 fails with NOTFOUND");
	CHECK(t.path == NULL && t.display == NULL, "a failed select leaves nothing to free");
	cvm_toolkit_release(&t);

	/* A major alone (or X.x): the default toolkit when of that major, else the newest of it. */
	r = cvm_toolkit_select(root, "12", &t);
	CHECK_STR(r == 0 ? t.display : NULL, "/usr/local/cuda-12.4", "select '12' is the default 12.4");
	cvm_toolkit_release(&t);
	r = cvm_toolkit_select(root, "11.x", &t);
	CHECK_STR(r == 0 ? t.display : NULL, "/usr/local/cuda-11.8", "select '11.x' is the only 11");
	cvm_toolkit_release(&t);
	CHECK_INT(cvm_toolkit_select(root, "10", &t), -CVM_E_NOTFOUND, "select '10': no such major");
	CHECK_INT(cvm_toolkit_select(root, "12.4.1", &t), -CVM_E_USAGE, "select '12.4.1' is a usage error");

	/* Ubuntu's chain: /usr/local/cuda -> /etc/alternatives/cuda -> /usr/local/cuda-11.8. */
	CHECK_INT(mkdirs("etc/alternatives"), 0, "etc/alternatives created");
	link_to("/usr/local/cuda-11.8", "etc/alternatives/cuda");
	link_to("/etc/alternatives/cuda", "usr/local/cuda");
	r = cvm_toolkit_select(root, NULL, &t);
	CHECK_INT(r, 0, "select(NULL) through /etc/alternatives");
	CHECK_STR(r == 0 ? t.display : NULL, "/usr/local/cuda-11.8", "alternatives chain gives 11.8");
	cvm_toolkit_release(&t);

	/* Relative, with a ".." that must not climb out of the root. */
	link_to("../../../../../../opt/cuda-13.0", "usr/local/cuda");
	r = cvm_toolkit_select(root, NULL, &t);
	CHECK_INT(r, 0, "select(NULL) through a relative link with '..'");
	CHECK_STR(r == 0 ? t.display : NULL, "/opt/cuda-13.0", "relative link gives 13.0");
	cvm_toolkit_release(&t);

	/* A loop ends with an error, not a hang. */
	link_to("/usr/local/cuda", "usr/local/cuda");
	CHECK_INT(cvm_toolkit_select(root, NULL, &t), -CVM_E_NOTFOUND, "a link loop is NOTFOUND");

	/* Pointing at a folder that is no toolkit. */
	link_to("cuda-empty", "usr/local/cuda");
	CHECK_INT(cvm_toolkit_select(root, NULL, &t), -CVM_E_NOTFOUND, "a link to a non-toolkit is NOTFOUND");

	link_to("/usr/local/cuda-12.4", "usr/local/cuda");
}

static void test_nvcc_hang(void)
{
	const char *src = NULL;
	char path[PATH_MAX];
	struct timespec a, b;
	int maj, min, r;
	double s;

	put("hang/bin/nvcc", "#!/bin/sh\nsleep 30\necho 'release 1.0,'\n", 0755);
	snprintf(path, sizeof(path), "%s/hang", root);
	clock_gettime(CLOCK_MONOTONIC, &a);
	r = cvm_toolkit_version(path, &maj, &min, &src);
	clock_gettime(CLOCK_MONOTONIC, &b);
	s = (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) / 1e9;
	CHECK_INT(r, -CVM_E_NOTFOUND, "a hanging nvcc gives NOTFOUND");
	CHECK(s >= 4.5 && s < 8.0, "a hanging nvcc is killed after about 5 s (%.1f s)", s);
}

int main(void)
{
	test_version_json();
	test_cudart_header();
	test_nvcc();
	build_root();
	test_discovery();
	test_select();
	test_nvcc_hang();
	CHECK_INT(nftw(root, rm_entry, 16, FTW_DEPTH | FTW_PHYS), 0, "temp root removed");
	return unit_done();
}
