/* SPDX-License-Identifier: MIT */
/*
 * procmap.h's part that both systems share: which copy a path is of (one
 * classifier over the system's answers, struct cvm_procmap_os), a process's
 * cuDNN files grouped by copy, and the list of processes. How processes are
 * found is each system's (procmap_linux.c: /proc; procmap_win.c: the loaded
 * modules).
 */
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "procmap.h"
#include "store.h"

static void dir_of(const char *path, char *out, size_t len)
{
	const char *slash = strrchr(path, '/');

	snprintf(out, len, "%.*s", (int)(slash ? slash - path : 0), path);
}

/* In a conda environment: below $CONDA_PREFIX, or a folder named as conda's are. */
static bool in_conda(const struct cvm_procmap_os *os, const char *path, const char *folded)
{
	static const char *const names[] = { "conda", "/envs/", "mamba", "miniforge" };
	const char *prefix = getenv("CONDA_PREFIX");

	if (prefix && *prefix && os->under(path, prefix))
		return true;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (strstr(folded, names[i]))
			return true;
	return false;
}

void cvm_procmap_classify(const char *store_real, const char *path, char *kind, size_t kind_len,
			  char *copy, size_t copy_len)
{
	const struct cvm_procmap_os *os = cvm_procmap_os();
	size_t sl = store_real ? strlen(store_real) : 0;
	char folded[4096], dir[4096];
	const char *k = "unknown";

	os->fold(path, folded, sizeof(folded));
	dir_of(path, dir, sizeof(dir));
	snprintf(copy, copy_len, "%s", dir);
	if (sl && os->under(path, store_real) && strlen(path) > sl &&
	    !strncmp(folded + sl, "/versions/", 10)) {
		const char *id = path + sl + 10;
		snprintf(kind, kind_len, "store");
		snprintf(copy, copy_len, "%.*s", (int)strcspn(id, "/"), id);
		return;
	}
	for (size_t i = 0; i < os->nwheels; i++) {
		const char *w = strstr(folded, os->wheels[i]);
		if (w) {
			/* The wheel's cudnn folder, as the path spells it. */
			snprintf(kind, kind_len, "wheel");
			snprintf(copy, copy_len, "%.*s",
				 (int)(w - folded + (ptrdiff_t)strlen(os->wheels[i]) - 1), path);
			return;
		}
	}
	if (in_conda(os, path, folded))
		k = "conda";
	else if (os->toolkit(path, folded))
		k = "toolkit";
	else if (os->system(path, dir))
		k = "system";
	snprintf(kind, kind_len, "%s", k);
}

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
