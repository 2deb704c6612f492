/* SPDX-License-Identifier: MIT */
/* One release per version: the evidence each library file carries (release.h). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "alloc.h"
#include "elfinfo.h"
#include "error.h"
#include "fsutil.h"
#include "out.h"
#include "release.h"

struct list {
	struct cvm_release_odd *v;
	size_t n, cap;
};

static int add(struct list *l, const char *path, const char *found, const char *how)
{
	int r = CVM_GROW(l->v, l->n + 1, l->cap);

	if (r < 0)
		return r;
	snprintf(l->v[l->n].path, sizeof(l->v[0].path), "%s", path);
	snprintf(l->v[l->n].found, sizeof(l->v[0].found), "%s", found);
	snprintf(l->v[l->n].how, sizeof(l->v[0].how), "%s", how);
	l->n++;
	return 0;
}

/* "libcudnn_cnn.so.9.19.0" -> "9.19.0"; NULL when not a cuDNN library name. */
static const char *name_version(const char *name)
{
	const char *so;

	if (strncmp(name, "libcudnn", 8) || !(so = strstr(name, ".so.")))
		return NULL;
	so += 4;
	return *so && strspn(so, "0123456789.") == strlen(so) ? so : NULL;
}

/* The first odd piece of evidence of one file (a regular file at dirfd/path). */
static int check_file(int dirfd, const char *path, const char *name, const char *expected,
		      unsigned long want, const struct cvm_elf_cache *known, struct list *l)
{
	struct cvm_elf_info e;
	const char *nv = name_version(name), *dot;
	size_t major_len = strcspn(expected, ".");
	char v[32];
	int r;

	/* The name: a full version must be the release; a major alone, its major. */
	if (nv && strchr(nv, '.') && strcmp(nv, expected))
		return add(l, path, nv, "its file name");
	if (nv && !strchr(nv, '.') && (strlen(nv) != major_len || strncmp(nv, expected, major_len)))
		return add(l, path, nv, "its file name");
	r = cvm_elf_read_known(known, dirfd, path, &e);
	if (r == -CVM_E_LAYOUT)
		return 0;	/* not ELF: the smoke test's file checks say so */
	if (r < 0)
		return r;
	if (e.soname[0] && (dot = strstr(e.soname, ".so."))) {
		const char *sm = dot + 4;
		if (strlen(sm) < major_len || strncmp(sm, expected, major_len) ||
		    (sm[major_len] && sm[major_len] != '.'))
			return add(l, path, sm, "its soname");
	}
	if (e.tag[0] && strcmp(e.tag, expected))
		return add(l, path, e.tag, "its version string");
	if (e.check_version && want >= 90000 && e.check_version != want) {
		cvm_elf_version_str(e.check_version, v, sizeof(v));
		return add(l, path, v, e.check_sym);
	}
	return 0;
}

int cvm_release_check(int vfd, const char *expected, const struct cvm_elf_cache *known,
		      struct cvm_release_odd **odd, size_t *n)
{
	static const char *const dirs[] = { "lib", "lib64" };
	struct list l = { 0 };
	unsigned a = 0, b = 0, c = 0;
	unsigned long want;
	int r = 0;

	*odd = NULL;
	*n = 0;
	if (sscanf(expected, "%u.%u.%u", &a, &b, &c) != 3)
		return -EINVAL;
	want = a >= 9 ? a * 10000ul + b * 100ul + c : a * 1000ul + b * 100ul + c;
	for (size_t i = 0; i < 2 && r == 0; i++) {
		int fd = openat(vfd, dirs[i], O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		DIR *d;
		if (fd < 0)
			continue;
		d = fdopendir(fd);
		if (!d) {
			close(fd);
			continue;
		}
		/* In name order, so that messages come out the same every time. */
		struct dirent *de;
		size_t cnt = 0, cap = 0;
		char **ents = NULL;
		while (r == 0 && (de = readdir(d))) {
			struct stat st;
			if (!name_version(de->d_name) ||
			    fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
			    !S_ISREG(st.st_mode))
				continue;
			r = CVM_GROW(ents, cnt + 1, cap);
			if (r < 0)
				break;
			if (!(ents[cnt] = strdup(de->d_name)))
				r = -ENOMEM;
			else
				cnt++;
		}
		for (size_t j = 1; j < cnt; j++)
			for (size_t k = j; k > 0 && strcmp(ents[k - 1], ents[k]) > 0; k--) {
				char *t = ents[k];
				ents[k] = ents[k - 1];
				ents[k - 1] = t;
			}
		for (size_t j = 0; j < cnt; j++) {
			char path[512];
			if (r == 0 && cvm_fmt(path, sizeof(path), "%s/%s", dirs[i], ents[j]) == 0)
				r = check_file(vfd, path, ents[j], expected, want, known, &l);
			free(ents[j]);
		}
		free(ents);
		closedir(d);
	}
	if (r < 0) {
		free(l.v);
		return r;
	}
	*odd = l.v;
	*n = l.n;
	return 0;
}

int cvm_release_refuse(const char *what, const char *expected, const struct cvm_release_odd *odd,
		       size_t n)
{
	int r;

	r = cvm_err(-CVM_E_INTEGRITY, "'%s' mixes cuDNN releases: %s is cuDNN %s (%s), not %s%s",
		    cvm_safe(what), cvm_safe(odd[0].path), cvm_safe(odd[0].found),
		    cvm_safe(odd[0].how), expected, n > 1 ? "; also:" : "");
	for (size_t i = 1; i < n; i++)
		cvm_warn("'%s': %s is cuDNN %s (%s), not %s", cvm_safe(what), cvm_safe(odd[i].path),
			 cvm_safe(odd[i].found), cvm_safe(odd[i].how), expected);
	return r;
}
