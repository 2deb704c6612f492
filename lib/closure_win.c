/* SPDX-License-Identifier: MIT */
/*
 * The load closure's Windows part (closure.h): the import and delay-load
 * tables of each cudnn*.dll and the names it hands LoadLibrary (peinfo.c),
 * resolved through the DLL search order a program started now gets (after
 * the DLL's own folder, which closure.c looks in first, and the toolkit's
 * bin): System32, the Windows folder, then each entry of the PATH in the
 * registry (winenv.c). The API sets (api-ms-win-*, ext-ms-*) are no files:
 * the loader maps them itself, so they are always found.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "alloc.h"
#include "closure.h"
#include "compat.h"
#include "fsutil.h"
#include "peinfo.h"
#include "select.h"
#include "store.h"
#include "winenv.h"

/*
 * What cuDNN loads by name (docs/cudnn-facts.md): zlibwapi.dll (8.3 to
 * 8.x), nvrtc64_* for the runtime-compiled engines, cublasLt64_* for some
 * engines; a whole string of .rdata that starts so and ends in ".dll".
 */
static const char *const probes[] = { "zlibwapi.dll", "nvrtc64_", "cublasLt64_" };

/* "cudnn64_9.dll", "cudnn_ops64_9.dll": what a program of cuDNN loads. */
static bool cudnn_dll(const char *n)
{
	size_t len = strlen(n);

	return !strncasecmp(n, "cudnn", 5) && len > 4 && !strcasecmp(n + len - 4, ".dll");
}

/* The needs of one DLL: its imports, its delay-load imports and the names it loads. */
static int needs(const char *path, const char *by, struct cvm_closure *c,
		 int (*add)(struct cvm_closure *c, const char *name, const char *by, bool by_name))
{
	struct cvm_pe_info *e = malloc(sizeof(*e));
	int r = 0;

	if (!e)
		return -ENOMEM;
	if (cvm_pe_read_at(AT_FDCWD, path, probes, sizeof(probes) / sizeof(*probes), e) < 0)
		r = 1;
	for (size_t i = 0; r == 0 && i < e->nimports; i++)
		r = add(c, e->imports[i], by, false);
	/* A delay-load import is loaded at its first call: as needed as the others. */
	for (size_t i = 0; r == 0 && i < e->ndelay; i++)
		r = add(c, e->delay[i], by, false);
	for (size_t i = 0; r == 0 && i < e->nloads; i++)
		r = add(c, e->loads[i], by, true);
	free(e);
	return r;
}

/* p[n] = host (a folder), shown as shown, when it is one and not among p[0..n); the count after. */
static size_t place(struct cvm_closure_place *p, size_t n, size_t max, const char *host,
		    const char *shown)
{
	struct stat st;

	if (n >= max || stat(host, &st) < 0 || !S_ISDIR(st.st_mode))
		return n;
	/* System32 is on PATH too: each folder once, where it comes first. */
	for (size_t i = 0; i < n; i++)
		if (cvm_winpath_same(p[i].host, host))
			return n;
	if (cvm_fmt(p[n].host, sizeof(p[n].host), "%s", host) < 0)
		return n;
	cvm_env_value(p[n].shown, sizeof(p[n].shown), shown, NULL);
	return n + 1;
}

/* The toolkit's bin (CUDA 13 puts its DLLs in bin\x64). */
static size_t toolkit_places(const struct cvm_toolkit *tk, struct cvm_closure_place *p, size_t max)
{
	static const char *const sub[] = { "/bin", "/bin/x64" };
	char host[1024], shown[512];
	size_t n = 0;

	for (size_t i = 0; i < sizeof(sub) / sizeof(*sub); i++)
		if (cvm_fmt(host, sizeof(host), "%s%s", tk->path, sub[i]) == 0 &&
		    cvm_fmt(shown, sizeof(shown), "%s%s", tk->display, sub[i]) == 0)
			n = place(p, n, max, host, shown);
	return n;
}

/*
 * System32 and the Windows folder (under a root: ROOT\Windows\System32 and
 * ROOT\Windows), then, for the host, the PATH's entries in order.
 */
static size_t system_places(const char *root, struct cvm_closure_place *p, size_t max)
{
	char dir[1024], *path = NULL;
	size_t n = 0;

	for (int windows = 0; windows < 2; windows++) {
		if (root[0] ? cvm_fmt(dir, sizeof(dir), "%s/Windows%s", root, windows ? "" : "/System32")
			    : cvm_winenv_system_dir(windows, dir, sizeof(dir)))
			continue;
		n = place(p, n, max, dir, root[0] ? dir + strlen(root) : dir);
	}
	if (root[0] || cvm_winenv_fresh_path(&path) < 0)
		return n;
	for (const char *s = path, *q; *s; s = q) {
		size_t l = cvm_winpath_entry(s, &q);
		if (l && cvm_fmt(dir, sizeof(dir), "%.*s", (int)l, s) == 0)
			n = place(p, n, max, dir, dir);
	}
	free(path);
	return n;
}

/* The API sets: answered by the loader from its schema, never from a file. */
static void *api_sets(const char *root)
{
	static int sets;

	(void)root;
	return &sets;
}

static bool api_set(void *cache, const char *root, const char *name)
{
	(void)cache;
	(void)root;
	return !strncasecmp(name, "api-ms-win-", 11) || !strncasecmp(name, "ext-ms-", 7);
}

static void api_sets_close(void *cache)
{
	(void)cache;
}

/* The CUDA toolkit component (the installer's subpackage) of a DLL name, or NULL. */
static const char *component(const char *name)
{
	static const struct { const char *prefix, *comp; } t[] = {
		{ "cudart64_", "cudart" }, { "cublasLt64_", "cublas" }, { "cublas64_", "cublas" },
		{ "nvrtc64_", "nvrtc" }, { "nvrtc-builtins64_", "nvrtc" }, { "nvJitLink_", "nvjitlink" },
		{ "cufft64_", "cufft" }, { "curand64_", "curand" }, { "cusparse64_", "cusparse" },
		{ "cusolver64_", "cusolver" },
	};

	for (size_t i = 0; i < sizeof(t) / sizeof(*t); i++)
		if (!strncasecmp(name, t[i].prefix, strlen(t[i].prefix)))
			return t[i].comp;
	return NULL;
}

static const char *advice(const char *name)
{
	if (!strcasecmp(name, "zlibwapi.dll"))
		return "cudnnvm provides it: 'cudnnvm adopt' makes a copy in a toolkit a version "
		       "with it in its bin folder ('cudnnvm install' puts it in every version that "
		       "loads it); or copy the zlibwapi.dll beside cudnnvm.exe into the DLLs' folder";
	return NULL;
}

static const struct cvm_closure_os win_os = {
	.libc = "kernel32.dll",
	.is_lib = cudnn_dll,
	.needs = needs,
	.toolkit_places = toolkit_places,
	.system_places = system_places,
	.cache_open = api_sets,
	.cache_has = api_set,
	.cache_close = api_sets_close,
	.component = component,
	.package = "the installer's subpackage %s_%d.%d",
	.version_dir = "bin",
	.cache_name = "the API sets",
	.advice = advice,
};

const struct cvm_closure_os *cvm_closure_os(void)
{
	return &win_os;
}
