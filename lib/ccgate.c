/* SPDX-License-Identifier: MIT */
/* The compute-capability gate: the device code a build carries (ccgate.h). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "alloc.h"
#include "ccgate.h"
#include "elfinfo.h"
#include "error.h"

struct seen {
	struct {
		dev_t dev;
		ino_t ino;
	} *v;
	size_t n, cap;
};

/* Keeps in v only what w also has. */
static void intersect(unsigned *v, size_t *n, const unsigned *w, size_t m)
{
	size_t k = 0;

	for (size_t i = 0; i < *n; i++)
		for (size_t j = 0; j < m; j++)
			if (v[i] == w[j]) {
				v[k++] = v[i];
				break;
			}
	*n = k;
}

/*
 * Whether st's file was read already (and notes it): NVIDIA's names
 * (libcudnn_cnn.so -> .so.9 -> .so.9.x.y) are three ways to one file, each
 * of them hundreds of megabytes to walk.
 */
static int seen_before(struct seen *s, const struct stat *st)
{
	for (size_t i = 0; i < s->n; i++)
		if (s->v[i].dev == st->st_dev && s->v[i].ino == st->st_ino)
			return 1;
	if (CVM_GROW(s->v, s->n + 1, s->cap) < 0)
		return -ENOMEM;
	s->v[s->n].dev = st->st_dev;
	s->v[s->n++].ino = st->st_ino;
	return 0;
}

bool cvm_ccgate_reads(const char *name)
{
	return !strncmp(name, "libcudnn", 8) && strstr(name, ".so");
}

static int scan_dir(int libfd, const struct cvm_elf_cache *known, struct cvm_archs *out)
{
	struct seen seen = { 0 };
	struct dirent *de;
	DIR *d;
	int fd, r = 0;

	memset(out, 0, sizeof(*out));
	fd = dup(libfd);
	if (fd < 0)
		return -errno;
	d = fdopendir(fd);
	if (!d) {
		r = -errno;
		close(fd);
		return r;
	}
	while ((de = readdir(d))) {
		struct cvm_elf_info e;
		struct stat st;
		/* Links followed: a toolkit's names may be links into the store. */
		if (!cvm_ccgate_reads(de->d_name) ||
		    fstatat(dirfd(d), de->d_name, &st, 0) < 0 || !S_ISREG(st.st_mode))
			continue;
		r = seen_before(&seen, &st);
		if (r < 0)
			break;
		if (r == 1) {
			r = 0;
			continue;
		}
		r = cvm_elf_read_known(known, dirfd(d), de->d_name, &e);
		if (r == -CVM_E_LAYOUT) {
			r = 0;
			continue;
		}
		if (r < 0)
			break;
		if (!e.fatbin || (!e.narchs && !e.nptx))
			continue;
		if (!out->known) {
			out->known = true;
			memcpy(out->sm, e.archs, e.narchs * sizeof(e.archs[0]));
			out->n = e.narchs;
			memcpy(out->ptx, e.ptx, e.nptx * sizeof(e.ptx[0]));
			out->nptx = e.nptx;
		} else {
			intersect(out->sm, &out->n, e.archs, e.narchs);
			intersect(out->ptx, &out->nptx, e.ptx, e.nptx);
		}
	}
	closedir(d);
	free(seen.v);
	return r;
}

int cvm_ccgate_scan_dir(int libfd, struct cvm_archs *out)
{
	return scan_dir(libfd, NULL, out);
}

int cvm_ccgate_scan(int vfd, const struct cvm_elf_cache *known, struct cvm_archs *out)
{
	int fd, r;

	memset(out, 0, sizeof(*out));
	fd = openat(vfd, "lib", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? 0 : -errno;
	r = scan_dir(fd, known, out);
	close(fd);
	return r;
}

void cvm_ccgate_format(const struct cvm_archs *a, char *buf, size_t len)
{
	size_t off = 0;

	buf[0] = '\0';
	if (!a || !a->known) {
		snprintf(buf, len, "unknown");
		return;
	}
	for (size_t i = 0; i < a->n && off < len; i++)
		off += (size_t)snprintf(buf + off, len - off, "%ssm_%u", i ? " " : "", a->sm[i]);
	for (size_t i = 0; i < a->nptx && off < len; i++)
		off += (size_t)snprintf(buf + off, len - off, "%sPTX %u", off ? (i ? " " : ", ") : "",
					a->ptx[i]);
	if (!a->nptx && off < len)
		snprintf(buf + off, len - off, "%sno PTX", off ? ", " : "");
}

/*
 * docs/cudnn-facts.md: 5.0 is the floor; cuda13 builds need 7.5+; 8.9 and
 * 9.0-9.6 stop at 9.0; Blackwell (10.x, 12.x) came with 9.7.0 in its
 * CUDA 12.8+ builds.
 */
static const char *table(unsigned long cudnn, unsigned long cudart, int cc, char *why, size_t len)
{
	if (cc < 50)
		snprintf(why, len, "below 5.0, the oldest any cuDNN 8 or 9 supports");
	else if (cudart >= 13000 && cc < 75)
		snprintf(why, len, "below 7.5, which builds for CUDA 13 need");
	else if (cc > 90 && cudnn < 90700)
		snprintf(why, len, "newer than 9.0, the newest this cuDNN (before 9.7.0) supports");
	else if (cc > 90 && cudart && cudart < 12080)
		snprintf(why, len, "newer than 9.0: Blackwell needs a build for CUDA 12.8 or later, "
			 "this one is for CUDA runtime %lu", cudart);
	else
		return NULL;
	return why;
}

const char *cvm_ccgate_check(const struct cvm_archs *a, unsigned long cudnn, unsigned long cudart,
			     int major, int minor, char *why, size_t len)
{
	int cc = major * 10 + minor;
	char have[512];

	if (!a || !a->known)
		return table(cudnn, cudart, cc, why, len);
	for (size_t i = 0; i < a->n; i++)
		if ((int)a->sm[i] / 10 == major && (int)a->sm[i] % 10 <= minor)
			return NULL;
	for (size_t i = 0; i < a->nptx; i++)
		if ((int)a->ptx[i] <= cc)
			return NULL;
	cvm_ccgate_format(a, have, sizeof(have));
	snprintf(why, len, "which this build's device code does not serve (it has %s)", have);
	return why;
}
