/* SPDX-License-Identifier: MIT */
/*
 * The load closure's Windows part (closure.h), not written yet: no PE
 * import tables are read, so a version needs nothing here and every check
 * passes; the smoke test still loads the DLLs.
 */
#include <stddef.h>

#include "closure.h"

static int read_dir(const char *dir, struct cvm_closure *c,
		    int (*add)(struct cvm_closure *c, const char *name, const char *by, bool by_name))
{
	(void)dir;
	(void)c;
	(void)add;
	return 0;
}

static size_t no_places(const struct cvm_toolkit *tk, struct cvm_closure_place *p, size_t max)
{
	(void)tk;
	(void)p;
	(void)max;
	return 0;
}

static size_t no_system(const char *root, struct cvm_closure_place *p, size_t max)
{
	(void)root;
	(void)p;
	(void)max;
	return 0;
}

static void *no_cache(const char *root)
{
	(void)root;
	return NULL;
}

static bool cache_has(void *cache, const char *root, const char *name)
{
	(void)cache;
	(void)root;
	(void)name;
	return false;
}

static void cache_close(void *cache)
{
	(void)cache;
}

static const char *component(const char *name)
{
	(void)name;
	return NULL;
}

static const struct cvm_closure_os win_os = {
	.read = read_dir,
	.toolkit_places = no_places,
	.system_places = no_system,
	.cache_open = no_cache,
	.cache_has = cache_has,
	.cache_close = cache_close,
	.component = component,
};

const struct cvm_closure_os *cvm_closure_os(void)
{
	return &win_os;
}
