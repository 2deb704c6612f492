/* SPDX-License-Identifier: MIT */
/*
 * procmap.h on Windows: the processes that have a cudnn*.dll loaded (from
 * their module lists, proc_win.h), and which copy each DLL is of. Windows
 * names ignore case, so every folder is compared as Windows compares it.
 */
#define WIN32_LEAN_AND_MEAN
#include <windows.h>

#include "compat.h"
#include "proc_win.h"
#include "procmap.h"
#include "store.h"

/* s with ASCII letters lowered, for finding the folder names below (cut to len-1). */
static void lower(const char *s, char *out, size_t len)
{
	size_t i;

	for (i = 0; s[i] && i + 1 < len; i++)
		out[i] = s[i] >= 'A' && s[i] <= 'Z' ? (char)(s[i] - 'A' + 'a') : s[i];
	out[i] = '\0';
}

/* Whether path lies below the folder named by the environment variable var. */
static bool under_env(const char *path, const char *var)
{
	const char *v = getenv(var);

	return v && *v && cvm_path_under(path, v);
}

/* Whether path lies below the folder the API call get returns (GetSystemDirectoryW, ...). */
static bool under_api(const char *path, UINT (WINAPI *get)(LPWSTR, UINT))
{
	wchar_t w[MAX_PATH + 1];
	UINT n = get(w, MAX_PATH + 1);
	char *s;
	bool r;

	if (!n || n > MAX_PATH)
		return false;
	s = cvm_utf8(w);
	r = s && cvm_path_under(path, s);
	free(s);
	return r;
}

/* The installer's CUDA_PATH, or its default folder: ...\NVIDIA GPU Computing Toolkit\CUDA\vX.Y. */
static bool toolkit(const char *path, const char *folded)
{
	return under_env(path, "CUDA_PATH") || strstr(folded, "/nvidia gpu computing toolkit/cuda/");
}

/* A cuDNN copied into System32 (or SysWOW64) is found by every program. */
static bool system_dir(const char *path, const char *dir)
{
	(void)dir;
	return under_api(path, GetSystemDirectoryW) || under_api(path, GetSystemWow64DirectoryW);
}

/* Windows' part of the classifier (procmap.c): names compared without case. */
const struct cvm_procmap_os *cvm_procmap_os(void)
{
	static const char *const wheels[] = { "/site-packages/nvidia/cudnn/" };
	static const struct cvm_procmap_os os = {
		.fold = lower, .under = cvm_path_under, .wheels = wheels, .nwheels = 1,
		.toolkit = toolkit, .system = system_dir,
	};

	return &os;
}

/* cuDNN's DLLs: cudnn64_9.dll, cudnn_ops64_9.dll, ... */
static bool is_cudnn(const char *path)
{
	const char *b = strrchr(path, '/');
	size_t l;

	b = b ? b + 1 : path;
	l = strlen(b);
	return l >= 9 && !_strnicmp(b, "cudnn", 5) && !_stricmp(b + l - 4, ".dll");
}

struct scan {
	struct cvm_store *store;
	const char *store_real, *root;
	struct cvm_proc_cudnn *v;
	size_t n, cap;
};

static int one(void *arg, unsigned long pid, const char *image, char **mods, size_t n)
{
	struct scan *s = arg;
	char **paths = NULL;
	size_t np = 0;
	int r;

	for (size_t i = 0; i < n; i++)
		if (is_cudnn(mods[i]) && (!s->root || cvm_path_under(mods[i], s->root)))
			np++;
	if (!np)
		return 0;
	paths = calloc(np, sizeof(*paths));
	if (!paths)
		return -ENOMEM;
	np = 0;
	for (size_t i = 0; i < n; i++)
		if (is_cudnn(mods[i]) && (!s->root || cvm_path_under(mods[i], s->root))) {
			paths[np++] = mods[i];
			mods[i] = NULL;
		}
	/* Another process's command line is not in the documented API: its image path is. */
	r = cvm_procmap_add(s->store, s->store_real, (pid_t)pid, image, paths, np, &s->v, &s->n, &s->cap);
	cvm_procmap_paths_free(paths, np);
	return r;
}

int cvm_procmap_scan(struct cvm_store *store, const char *root, struct cvm_proc_cudnn **out,
		     size_t *n, size_t *unreadable)
{
	char store_real[4096], root_real[4096];
	struct scan s = { store, NULL, NULL, NULL, 0, 0 };
	int r;

	*out = NULL;
	*n = 0;
	*unreadable = 0;
	if (store && store->path && realpath(store->path, store_real))
		s.store_real = store_real;
	if (root && *root)
		s.root = realpath(root, root_real) ? root_real : root;
	r = cvm_proc_each_modules(one, &s, unreadable);
	if (r < 0) {
		cvm_procmap_free(s.v, s.n);
		return r;
	}
	cvm_procmap_sort(s.v, s.n);
	*out = s.v;
	*n = s.n;
	return 0;
}
