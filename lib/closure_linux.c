/* SPDX-License-Identifier: MIT */
/*
 * The load closure's Linux part (closure.h): ELF NEEDED entries and the
 * names cuDNN hands dlopen (elfinfo.c), the toolkit's library folders, the
 * loader cache ROOT/etc/ld.so.cache read as a file (glibc's format, every
 * offset checked), and the system folders ld.so searches by default.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "alloc.h"
#include "closure.h"
#include "elfinfo.h"
#include "error.h"
#include "fsutil.h"
#include "le.h"
#include "store.h"

/*
 * What cuDNN loads by name (docs/cudnn-facts.md: libcublasLt for some
 * engines and the legacy APIs, libnvrtc for the runtime-compiled engines):
 * the whole string starting so in a library's .rodata is the name asked for
 * ("libnvrtc.so.13"), so a release that does not load one asks for nothing.
 */
static const char *const probes[] = { "libcublasLt.so.", "libnvrtc.so.", NULL };

#if defined(__aarch64__)
#define TRIPLET "aarch64-linux-gnu"
#define TARGET "sbsa-linux"
#else
#define TRIPLET "x86_64-linux-gnu"
#define TARGET "x86_64-linux"
#endif

/* "libcudnn_ops.so.9": what the loader opens (the soname), not the .so link or the full version. */
static bool soname_file(const char *n)
{
	const char *p = strstr(n, ".so.");

	if (strncmp(n, "libcudnn", 8) || !p || !p[4])
		return false;
	for (p += 4; *p; p++)
		if (*p < '0' || *p > '9')
			return false;
	return true;
}

/* The needs of one library: its DT_NEEDED entries and the names it hands dlopen. */
static int needs(const char *path, const char *by, struct cvm_closure *c,
		 int (*add)(struct cvm_closure *c, const char *name, const char *by, bool by_name))
{
	struct cvm_elf_info *e = malloc(sizeof(*e));
	int r = 0;

	if (!e)
		return -ENOMEM;
	if (cvm_elf_read_deps(AT_FDCWD, path, probes, sizeof(probes) / sizeof(*probes) - 1, e) < 0)
		r = 1;
	for (size_t i = 0; r == 0 && i < e->nneeded; i++)
		r = add(c, e->needed[i], by, false);
	for (size_t i = 0; r == 0 && i < e->nloads; i++)
		r = add(c, e->loads[i], by, true);
	free(e);
	return r;
}

/* base+each of sub that is a folder, each real folder once (lib64 is often a link to lib). */
static size_t places(const char *base, const char *shown, const char *const *sub, size_t nsub,
		     struct cvm_closure_place *p, size_t max)
{
	struct stat st, seen[16];
	size_t n = 0;

	for (size_t i = 0; i < nsub && n < max && n < 16; i++) {
		size_t k;
		if (cvm_fmt(p[n].host, sizeof(p[n].host), "%s%s", base, sub[i]) < 0 ||
		    stat(p[n].host, &st) < 0 || !S_ISDIR(st.st_mode))
			continue;
		for (k = 0; k < n; k++)
			if (seen[k].st_dev == st.st_dev && seen[k].st_ino == st.st_ino)
				break;
		if (k < n)
			continue;
		seen[n] = st;
		snprintf(p[n].shown, sizeof(p[n].shown), "%s%s", shown, sub[i]);
		n++;
	}
	return n;
}

static size_t toolkit_places(const struct cvm_toolkit *tk, struct cvm_closure_place *p, size_t max)
{
	static const char *const sub[] = { "/lib64", "/lib", "/targets/" TARGET "/lib" };

	return places(tk->path, tk->display, sub, sizeof(sub) / sizeof(*sub), p, max);
}

/* ld.so's default folders after the cache (multiarch first, as Debian's glibc has them). */
static size_t system_places(const char *root, struct cvm_closure_place *p, size_t max)
{
	static const char *const sub[] = { "/lib/" TRIPLET, "/usr/lib/" TRIPLET, "/lib64",
					   "/usr/lib64", "/lib", "/usr/lib" };

	return places(root, "", sub, sizeof(sub) / sizeof(*sub), p, max);
}

struct ldcache {
	char *buf;
	size_t len;
	size_t base, nlibs;	/* the new-format header's offset; its entries */
};

/*
 * glibc's cache: "glibc-ld.so.cache1.1", then nlibs (u32), the string
 * table's length, flags, an extension offset and 12 unused bytes (48 in
 * all), then 24-byte entries of flags, key, value (offsets from that
 * header), ... An older file begins with "ld.so-1.7.0" and its 12-byte
 * entries, the new header after them, 8-aligned.
 */
static int cache_parse(struct ldcache *lc)
{
	static const char old[] = "ld.so-1.7.0", magic[] = "glibc-ld.so.cache1.1";
	size_t base = 0;

	if (lc->len >= 16 && !memcmp(lc->buf, old, sizeof(old))) {
		uint64_t n = cvm_le32(lc->buf + 12);
		if (n > lc->len / 12)
			return -CVM_E_LAYOUT;
		base = (size_t)((16 + n * 12 + 7) & ~(uint64_t)7);
	}
	if (base > lc->len || lc->len - base < 48 || memcmp(lc->buf + base, magic, sizeof(magic) - 1))
		return -CVM_E_LAYOUT;
	lc->base = base;
	lc->nlibs = cvm_le32(lc->buf + base + 20);
	if (lc->nlibs > (lc->len - base - 48) / 24)
		return -CVM_E_LAYOUT;
	return 0;
}

static void *cache_open(const char *root)
{
	struct ldcache *lc = calloc(1, sizeof(*lc));
	char path[4096];

	if (!lc || cvm_fmt(path, sizeof(path), "%s/etc/ld.so.cache", root) < 0 ||
	    cvm_read_file_at(AT_FDCWD, path, 64u << 20, &lc->buf, &lc->len) < 0 || cache_parse(lc) < 0) {
		if (lc)
			free(lc->buf);
		free(lc);
		return NULL;
	}
	return lc;
}

/* The NUL-terminated string at off from the header, or NULL. */
static const char *cache_str(const struct ldcache *lc, uint32_t off)
{
	size_t at = lc->base + off;

	if (off >= lc->len - lc->base || !memchr(lc->buf + at, '\0', lc->len - at))
		return NULL;
	return lc->buf + at;
}

static bool cache_has(void *cache, const char *root, const char *name)
{
	const struct ldcache *lc = cache;
	char path[4096];
	struct stat st;

	for (size_t i = 0; i < lc->nlibs; i++) {
		const char *e = lc->buf + lc->base + 48 + i * 24;
		const char *key = cache_str(lc, cvm_le32(e + 4)), *value = cache_str(lc, cvm_le32(e + 8));
		/* The cache can be stale: the file it names must still be there. */
		if (key && value && !strcmp(key, name) && value[0] == '/' &&
		    cvm_fmt(path, sizeof(path), "%s%s", root, value) == 0 && stat(path, &st) == 0 &&
		    S_ISREG(st.st_mode))
			return true;
	}
	return false;
}

static void cache_close(void *cache)
{
	struct ldcache *lc = cache;

	free(lc->buf);
	free(lc);
}

/* The CUDA toolkit component (and Debian package stem) of a library name, or NULL. */
static const char *component(const char *name)
{
	static const struct { const char *prefix, *comp; } t[] = {
		{ "libcudart.so.", "cuda-cudart" }, { "libcublasLt.so.", "libcublas" },
		{ "libcublas.so.", "libcublas" }, { "libnvrtc.so.", "cuda-nvrtc" },
		{ "libnvrtc-builtins.so.", "cuda-nvrtc" }, { "libnvJitLink.so.", "libnvjitlink" },
		{ "libcufft.so.", "libcufft" }, { "libcurand.so.", "libcurand" },
		{ "libcusparse.so.", "libcusparse" }, { "libcusolver.so.", "libcusolver" },
	};

	for (size_t i = 0; i < sizeof(t) / sizeof(*t); i++)
		if (!strncmp(name, t[i].prefix, strlen(t[i].prefix)))
			return t[i].comp;
	return NULL;
}

static const struct cvm_closure_os linux_os = {
	.libc = "libc.so.6",
	.is_lib = soname_file,
	.needs = needs,
	.toolkit_places = toolkit_places,
	.system_places = system_places,
	.cache_open = cache_open,
	.cache_has = cache_has,
	.cache_close = cache_close,
	.component = component,
	.package = "package %s-%d-%d",
	.version_dir = "lib",
	.cache_name = "the loader cache",
};

const struct cvm_closure_os *cvm_closure_os(void)
{
	return &linux_os;
}
