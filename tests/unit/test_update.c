/* SPDX-License-Identifier: MIT */
/* The folder listings update reads: which names are manifests, which refuse the listing. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "store.h"
#include "unit.h"
#include "update.h"

static int parse(const char *html, char ***v, size_t *n)
{
	*v = NULL;
	*n = 0;
	return cvm_update_parse_listing("http://mirror/", html, strlen(html), v, n);
}

/* An index as NVIDIA's redist server and Apache write it, and python3 -m http.server's. */
static void test_good(void)
{
	static const char nvidia[] =
		"<html><head><title>Index of /compute/cudnn/redist</title></head><body>\n"
		"<h1>Index of /compute/cudnn/redist</h1><pre><a href=\"?C=N;O=D\">Name</a>\n"
		"<a href=\"../\">../</a>\n<a href=\"cudnn/\">cudnn/</a>\n"
		"<a href=\"cudnn_jit/\">cudnn_jit/</a>\n"
		"<A HREF='redistrib_9.27.0.json'>redistrib_9.27.0.json</A> 29-Sep-2026 16:01  4871\n"
		"<a href=\"redistrib_8.9.7.json\">redistrib_8.9.7.json</a>\n"
		"<a href=\"redistrib_8.9.7.json\">again</a>\n"
		"<a href=redistrib_9.30.0.json>unquoted</a></pre></body></html>\n";
	static const char python[] =
		"<ul>\n<li><a href=\"cudnn/\">cudnn/</a></li>\n"
		"<li><a href=\"redistrib_9.1.0.json\">redistrib_9.1.0.json</a></li>\n</ul>\n";
	char **v;
	size_t n;

	CHECK_INT(parse(nvidia, &v, &n), 0, "NVIDIA's index is read");
	CHECK_INT(n, 3, "three manifests, each once; folders and sort links ignored");
	if (n == 3) {
		CHECK_STR(v[0], "9.27.0", "single quotes, upper-case HREF");
		CHECK_STR(v[1], "8.9.7", "double quotes");
		CHECK_STR(v[2], "9.30.0", "an unquoted href");
	}
	cvm_strv_free(v, n);
	CHECK_INT(parse(python, &v, &n), 0, "python3 -m http.server's listing is read");
	CHECK(n == 1 && !strcmp(v[0], "9.1.0"), "its one manifest");
	cvm_strv_free(v, n);
}

static void test_hostile(void)
{
	static const char *const bad[] = {
		"<a href=\"../redistrib_9.31.0.json\">x</a>",
		"<a href=\"http://evil.example/redistrib_9.31.0.json\">x</a>",
		"<a href=\"//evil.example/redistrib_9.31.0.json\">x</a>",
		"<a href=\"/redistrib_9.31.0.json\">x</a>",
		"<a href=\"redistrib_9.31.0.json?x=1\">x</a>",
		"<a href=\"redistrib_9.31.0%2ejson\">x</a>",
		"<a href=\"redistrib_..%2f9.json\">x</a>",
		"<a href=\"sub/redistrib_9.31.0.json\">x</a>",
		NULL,
	};
	char **v;
	size_t n;

	for (size_t i = 0; bad[i]; i++) {
		CHECK_INT(parse(bad[i], &v, &n), -CVM_E_UNSAFE, "refused: %s", bad[i]);
		cvm_strv_free(v, n);
	}
}

static void test_many(void)
{
	size_t cap = (CVM_UPDATE_NAMES_MAX + 1) * 48, o = 0;
	char *html = malloc(cap), **v;
	size_t n;

	if (!html)
		return;
	for (int i = 0; i <= CVM_UPDATE_NAMES_MAX; i++)
		o += (size_t)snprintf(html + o, cap - o, "<a href=\"redistrib_9.%d.0.json\">x</a>\n", i);
	CHECK_INT(cvm_update_parse_listing("http://mirror/", html, o, &v, &n), -CVM_E_UNSAFE,
		  "a listing of more than %d manifests is refused", CVM_UPDATE_NAMES_MAX);
	cvm_strv_free(v, n);
	free(html);
}

int main(void)
{
	test_good();
	test_hostile();
	test_many();
	return unit_done();
}
