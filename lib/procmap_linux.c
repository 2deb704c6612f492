/* SPDX-License-Identifier: MIT */
/* Processes that map cuDNN, from /proc, and Linux's part of the classifier (procmap.h). */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "alloc.h"
#include "out.h"
#include "proc.h"
#include "procmap.h"
#include "store.h"

int cvm_procmap_parse(const char *text, size_t len, char ***paths, size_t *n)
{
	const char *p = text, *end = text + len;
	char **v = NULL;
	size_t cnt = 0, cap = 0;

	*paths = NULL;
	*n = 0;
	while (p < end) {
		const char *eol = memchr(p, '\n', (size_t)(end - p)), *slash, *base;
		size_t l;
		if (!eol)
			eol = end;
		/* "addr perms offset dev inode   /path": the path starts at the first '/'. */
		slash = memchr(p, '/', (size_t)(eol - p));
		if (slash) {
			l = (size_t)(eol - slash);
			base = slash;
			for (const char *q = slash; q < eol; q++)
				if (*q == '/')
					base = q + 1;
			if ((size_t)(eol - base) >= 8 && !memcmp(base, "libcudnn", 8)) {
				size_t i;
				for (i = 0; i < cnt && (strlen(v[i]) != l || memcmp(v[i], slash, l)); i++)
					;
				if (i == cnt) {
					if (CVM_GROW(v, cnt + 1, cap) < 0)
						goto nomem;
					if (!(v[cnt] = strndup(slash, l)))
						goto nomem;
					cnt++;
				}
			}
		}
		p = eol + 1;
	}
	*paths = v;
	*n = cnt;
	return 0;
nomem:
	cvm_procmap_paths_free(v, cnt);
	return -ENOMEM;
}

/* Linux's part of the classifier (cvm_procmap_classify, procmap.c): names as they are. */
static void fold(const char *path, char *out, size_t len)
{
	snprintf(out, len, "%s", path);
}

static bool under(const char *path, const char *dir)
{
	size_t l = strlen(dir);

	return !strncmp(path, dir, l) && path[l] == '/';
}

static bool toolkit(const char *path, const char *folded)
{
	(void)folded;
	return !strncmp(path, "/usr/local/cuda", 15) || strstr(path, "/cuda-") || strstr(path, "/cuda/");
}

/* The loader's folders, or their multiarch folder (/usr/lib/x86_64-linux-gnu). */
static bool system_dir(const char *path, const char *dir)
{
	static const char *const sys[] = { "/lib", "/lib64", "/usr/lib", "/usr/lib64", "/usr/local/lib" };

	(void)path;
	for (size_t i = 0; i < sizeof(sys) / sizeof(sys[0]); i++) {
		size_t l = strlen(sys[i]);
		if (!strncmp(dir, sys[i], l) && (!dir[l] || (dir[l] == '/' && !strchr(dir + l + 1, '/'))))
			return true;
	}
	return false;
}

const struct cvm_procmap_os *cvm_procmap_os(void)
{
	static const char *const wheels[] = { "/site-packages/nvidia/cudnn/", "/dist-packages/nvidia/cudnn/" };
	static const struct cvm_procmap_os os = {
		.fold = fold, .under = under, .wheels = wheels, .nwheels = 2,
		.toolkit = toolkit, .system = system_dir,
	};

	return &os;
}

static void read_command(pid_t pid, char *out, size_t len)
{
	char path[64], *buf = NULL;
	size_t n = 0;

	out[0] = '\0';
	snprintf(path, sizeof(path), "/proc/%ld/cmdline", (long)pid);
	if (cvm_proc_read(path, 1 << 16, &buf, &n) == 0 && buf && n) {
		for (size_t i = 0; i + 1 < n; i++)
			if (buf[i] == '\0')
				buf[i] = ' ';
		snprintf(out, len, "%s", buf);
	}
	free(buf);
	buf = NULL;
	if (!out[0]) {
		snprintf(path, sizeof(path), "/proc/%ld/comm", (long)pid);
		if (cvm_proc_read(path, 4096, &buf, &n) == 0 && buf) {
			buf[strcspn(buf, "\n")] = '\0';
			snprintf(out, len, "[%s]", buf);
		}
		free(buf);
	}
}

/* Keeps only the paths under root (a --root's processes are those mapping its files). */
static void keep_under(const char *root, char **paths, size_t *n)
{
	size_t k = 0, rl = root ? strlen(root) : 0;

	if (!rl)
		return;
	for (size_t i = 0; i < *n; i++) {
		if (!strncmp(paths[i], root, rl) && paths[i][rl] == '/')
			paths[k++] = paths[i];
		else
			free(paths[i]);
	}
	*n = k;
}

int cvm_procmap_scan(struct cvm_store *store, const char *root, struct cvm_proc_cudnn **out,
		     size_t *n, size_t *unreadable)
{
	char store_real[PATH_MAX], *sr = NULL;
	struct cvm_proc_cudnn *v = NULL;
	size_t cnt = 0, cap = 0;
	struct dirent *de;
	DIR *d;
	int r = 0;

	*out = NULL;
	*n = 0;
	*unreadable = 0;
	char root_real[PATH_MAX];
	if (store && store->path && realpath(store->path, store_real))
		sr = store_real;
	if (root && *root && realpath(root, root_real))
		root = root_real;
	d = opendir("/proc");
	if (!d)
		return -errno;
	while (r == 0 && (de = readdir(d))) {
		char path[64], *text = NULL, **paths = NULL;
		size_t len = 0, np = 0;
		long pid;
		char *e;
		pid = strtol(de->d_name, &e, 10);
		if (*e || pid <= 0 || pid == (long)getpid())
			continue;
		snprintf(path, sizeof(path), "/proc/%ld/maps", pid);
		int k = cvm_proc_read(path, 64u << 20, &text, &len);
		if (k == -EACCES || k == -EPERM) {
			char command[512];

			/* Counted for ps; named under -v (its command line is readable to all). */
			read_command((pid_t)pid, command, sizeof(command));
			cvm_verbose("process %ld (%s): its maps cannot be read: %s", pid,
				    cvm_safe(command), strerror(-k));
			(*unreadable)++;
			continue;
		}
		if (k < 0)
			continue;	/* gone meanwhile */
		r = cvm_procmap_parse(text, len, &paths, &np);
		free(text);
		if (r == 0)
			keep_under(root, paths, &np);
		if (r < 0 || !np) {
			free(paths);
			continue;
		}
		char command[512];
		read_command((pid_t)pid, command, sizeof(command));
		r = cvm_procmap_add(store, sr, (pid_t)pid, command, paths, np, &v, &cnt, &cap);
		cvm_procmap_paths_free(paths, np);
	}
	closedir(d);
	if (r < 0) {
		cvm_procmap_free(v, cnt);
		return r;
	}
	cvm_procmap_sort(v, cnt);
	*out = v;
	*n = cnt;
	return 0;
}
