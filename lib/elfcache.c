/* SPDX-License-Identifier: MIT */
/* What the extraction read of each library, for the checks after it (elfinfo.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "alloc.h"
#include "compat.h"
#include "elfinfo.h"

int cvm_elf_cache_add(struct cvm_elf_cache *c, uint64_t dev, uint64_t ino, int r,
		      const struct cvm_elf_info *e)
{
	int k = CVM_GROW(c->v, c->n + 1, c->cap);

	if (k < 0)
		return k;
	c->v[c->n].dev = dev;
	c->v[c->n].ino = ino;
	c->v[c->n].r = r;
	c->v[c->n].e = *e;
	c->n++;
	return 0;
}

int cvm_elf_read_known(const struct cvm_elf_cache *c, int dirfd, const char *path,
		       struct cvm_elf_info *out)
{
	struct stat st;

	if (c && c->n && fstatat(dirfd, path, &st, 0) == 0)
		for (size_t i = 0; i < c->n; i++)
			if (c->v[i].dev == (uint64_t)st.st_dev && c->v[i].ino == (uint64_t)st.st_ino) {
				*out = c->v[i].e;
				return c->v[i].r;
			}
	return cvm_elf_read_at(dirfd, path, out);
}

void cvm_elf_cache_free(struct cvm_elf_cache *c)
{
	free(c->v);
	memset(c, 0, sizeof(*c));
}
