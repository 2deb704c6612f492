/* SPDX-License-Identifier: MIT */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cudnnvm/proc.h"

static int maps_file(pid_t pid, const char *dir, char *file, size_t len)
{
	char path[64], line[4096];
	size_t dl = strlen(dir);
	FILE *f;
	int hit = 0;

	snprintf(path, sizeof(path), "/proc/%ld/maps", (long)pid);
	f = fopen(path, "re");
	if (!f)
		return 0;
	while (!hit && fgets(line, sizeof(line), f)) {
		/* "addr perms offset dev inode   path": the path starts at the first '/'. */
		char *p = strchr(line, '/');
		if (!p || strncmp(p, dir, dl) || p[dl] != '/')
			continue;
		p[strcspn(p, "\n")] = '\0';
		snprintf(file, len, "%s", p);
		hit = 1;
	}
	fclose(f);
	return hit;
}

int cvm_proc_users(const char *dir, struct cvm_proc_user **out, size_t *n)
{
	struct cvm_proc_user *v = NULL, u;
	size_t cnt = 0, cap = 0;
	struct dirent *de;
	DIR *d;

	*out = NULL;
	*n = 0;
	d = opendir("/proc");
	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		char path[64];
		FILE *f;
		if (!isdigit((unsigned char)de->d_name[0]))
			continue;
		memset(&u, 0, sizeof(u));
		u.pid = (pid_t)strtol(de->d_name, NULL, 10);
		if (u.pid == getpid() || !maps_file(u.pid, dir, u.file, sizeof(u.file)))
			continue;
		snprintf(path, sizeof(path), "/proc/%ld/comm", (long)u.pid);
		f = fopen(path, "re");
		if (f) {
			if (fgets(u.comm, sizeof(u.comm), f))
				u.comm[strcspn(u.comm, "\n")] = '\0';
			fclose(f);
		}
		if (cnt == cap) {
			cap = cap ? cap * 2 : 8;
			struct cvm_proc_user *nv = realloc(v, cap * sizeof(*v));
			if (!nv) {
				free(v);
				closedir(d);
				return -ENOMEM;
			}
			v = nv;
		}
		v[cnt++] = u;
	}
	closedir(d);
	*out = v;
	*n = cnt;
	return 0;
}
