/* SPDX-License-Identifier: MIT */
/*
 * procmap.h's part that both systems share: a process's cuDNN files grouped
 * by copy, and the list of processes. Which copy a path is of
 * (cvm_procmap_classify) and how processes are found are each system's
 * (procmap.c: /proc; procmap_win.c: the loaded modules).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "procmap.h"
#include "store.h"

void cvm_procmap_paths_free(char **paths, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(paths[i]);
	free(paths);
}

static void free_groups(struct cvm_copy_group *g, size_t n)
{
	for (size_t i = 0; i < n; i++)
		cvm_procmap_paths_free(g[i].files, g[i].nfiles);
	free(g);
}

void cvm_procmap_free(struct cvm_proc_cudnn *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free_groups(v[i].g, v[i].ng);
	free(v);
}

/* Groups one process's paths by copy. 0 or -ENOMEM (-EOVERFLOW: cvm_grow). */
static int group(struct cvm_store *store, const char *store_real, char **paths, size_t n,
		 struct cvm_proc_cudnn *p)
{
	for (size_t i = 0; i < n; i++) {
		char kind[16], copy[4096];
		size_t k;
		int r;
		cvm_procmap_classify(store_real, paths[i], kind, sizeof(kind), copy, sizeof(copy));
		for (k = 0; k < p->ng && (strcmp(p->g[k].kind, kind) || strcmp(p->g[k].copy, copy)); k++)
			;
		if (k == p->ng) {
			struct cvm_copy_group *g;
			r = CVM_GROW(p->g, p->ng + 1, p->g_cap);
			if (r < 0)
				return r;
			g = p->g;
			memset(&g[k], 0, sizeof(g[k]));
			snprintf(g[k].kind, sizeof(g[k].kind), "%s", kind);
			snprintf(g[k].copy, sizeof(g[k].copy), "%s", copy);
			if (store && !strcmp(kind, "store")) {
				cvm_store_active_for(store, copy, g[k].active_for, sizeof(g[k].active_for));
				if (!g[k].active_for[0])
					p->not_active = true;
			}
			p->ng++;
		}
		r = CVM_GROW(p->g[k].files, p->g[k].nfiles + 1, p->g[k].files_cap);
		if (r < 0)
			return r;
		p->g[k].files[p->g[k].nfiles++] = paths[i];
		paths[i] = NULL;
	}
	p->mixed = p->ng > 1;
	return 0;
}

int cvm_procmap_add(struct cvm_store *store, const char *store_real, pid_t pid, const char *command,
		    char **paths, size_t n, struct cvm_proc_cudnn **v, size_t *cnt, size_t *cap)
{
	struct cvm_proc_cudnn *nv;
	int r = CVM_GROW(*v, *cnt + 1, *cap);

	if (r < 0)
		return r;
	nv = *v;
	memset(&nv[*cnt], 0, sizeof(nv[*cnt]));
	nv[*cnt].pid = pid;
	snprintf(nv[*cnt].command, sizeof(nv[*cnt].command), "%s", command);
	/* Counted even when grouping fails, so that what it holds is freed with the list. */
	return group(store, store_real, paths, n, &nv[(*cnt)++]);
}

void cvm_procmap_sort(struct cvm_proc_cudnn *v, size_t n)
{
	for (size_t i = 1; i < n; i++)
		for (size_t j = i; j > 0 && v[j - 1].pid > v[j].pid; j--) {
			struct cvm_proc_cudnn t = v[j];
			v[j] = v[j - 1];
			v[j - 1] = t;
		}
}
