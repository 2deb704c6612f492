/* SPDX-License-Identifier: MIT */
#include <dirent.h>
#include <limits.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cudnnvm/fsutil.h"

int cvm_fmt(char *buf, size_t len, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, len, fmt, ap);
	va_end(ap);
	if (n < 0)
		return -EINVAL;
	if ((size_t)n >= len)
		return -ENAMETOOLONG;
	return 0;
}

int cvm_mkdir_p_at(int dirfd, const char *path, mode_t mode)
{
	char buf[4096];
	char *p;
	int r;

	r = cvm_fmt(buf, sizeof(buf), "%s", path);
	if (r < 0)
		return r;
	for (p = buf + 1; ; p++) {
		if (*p != '/' && *p != '\0')
			continue;
		char c = *p;
		*p = '\0';
		if (mkdirat(dirfd, buf, mode) < 0 && errno != EEXIST)
			return -errno;
		*p = c;
		if (!c)
			break;
	}
	return 0;
}

static int rm_contents(int fd)
{
	DIR *d;
	struct dirent *de;
	int r = 0;

	d = fdopendir(fd);
	if (!d) {
		close(fd);
		return -errno;
	}
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		int k = cvm_rm_rf_at(dirfd(d), de->d_name);
		if (k < 0 && !r)
			r = k;
	}
	closedir(d);
	return r;
}

int cvm_rm_rf_at(int dirfd, const char *name)
{
	struct stat st;
	int fd, r;

	if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return errno == ENOENT ? 0 : -errno;
	if (!S_ISDIR(st.st_mode))
		return unlinkat(dirfd, name, 0) < 0 && errno != ENOENT ? -errno : 0;
	fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	/* Read-only folders (0555 after an install) must become writable to empty them. */
	if ((st.st_mode & 0700) != 0700)
		(void)fchmod(fd, (st.st_mode & 07777) | 0700);
	r = rm_contents(fd);
	if (r < 0)
		return r;
	if (unlinkat(dirfd, name, AT_REMOVEDIR) < 0 && errno != ENOENT)
		return -errno;
	return 0;
}

int cvm_write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len) {
		ssize_t n = write(fd, p, len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int cvm_write_file_at(int dirfd, const char *name, const void *buf, size_t len, mode_t mode)
{
	char tmp[4096];
	int fd = -1, r;

	r = cvm_fmt(tmp, sizeof(tmp), "%s.tmp.%ld", name, (long)getpid());
	if (r < 0)
		return r;
	fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, mode);
	if (fd < 0)
		return -errno;
	r = cvm_write_all(fd, buf, len);
	if (r == 0 && fchmod(fd, mode) < 0)
		r = -errno;
	if (r == 0 && fsync(fd) < 0)
		r = -errno;
	if (close(fd) < 0 && r == 0)
		r = -errno;
	if (r == 0 && renameat(dirfd, tmp, dirfd, name) < 0)
		r = -errno;
	if (r < 0) {
		unlinkat(dirfd, tmp, 0);
		return r;
	}
	return cvm_fsync_dir(dirfd);
}

int cvm_read_file_at(int dirfd, const char *name, size_t max, char **buf, size_t *len)
{
	struct stat st;
	char *b = NULL;
	size_t n = 0;
	int fd, r = 0;

	fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0) {
		r = -errno;
		goto out;
	}
	if (!S_ISREG(st.st_mode)) {
		r = -EINVAL;
		goto out;
	}
	if ((uint64_t)st.st_size > max) {
		r = -EFBIG;
		goto out;
	}
	b = malloc((size_t)st.st_size + 1);
	if (!b) {
		r = -ENOMEM;
		goto out;
	}
	while (n < (size_t)st.st_size) {
		ssize_t k = read(fd, b + n, (size_t)st.st_size - n);
		if (k < 0) {
			if (errno == EINTR)
				continue;
			r = -errno;
			goto out;
		}
		if (k == 0)
			break;
		n += (size_t)k;
	}
	b[n] = '\0';
	*buf = b;
	b = NULL;
	if (len)
		*len = n;
out:
	free(b);
	close(fd);
	return r;
}

int cvm_symlink_replace_at(int dirfd, const char *target, const char *name)
{
	char tmp[4096];
	int r;

	r = cvm_fmt(tmp, sizeof(tmp), "%s.tmp.%ld", name, (long)getpid());
	if (r < 0)
		return r;
	unlinkat(dirfd, tmp, 0);
	if (symlinkat(target, dirfd, tmp) < 0)
		return -errno;
	if (renameat(dirfd, tmp, dirfd, name) < 0) {
		r = -errno;
		unlinkat(dirfd, tmp, 0);
		return r;
	}
	return 0;
}

int cvm_fsync_dir(int dirfd)
{
	if (fsync(dirfd) < 0 && errno != EINVAL && errno != EROFS)
		return -errno;
	return 0;
}

long long cvm_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/*
 * Resolves inner (an absolute path as seen inside the root) the way the
 * kernel would inside a chroot: every symlink is followed by hand and an
 * absolute target starts again at the root, never at the host's /. "..",
 * never climbs above the root. *out gets the resolved inner path.
 */
int cvm_resolve_in_root(const char *prefix, const char *inner, char *out, size_t outlen)
{
	char todo[PATH_MAX], done[PATH_MAX], host[PATH_MAX], target[PATH_MAX];
	char tmp[PATH_MAX];
	int hops = 0, r;
	size_t dlen = 0;

	r = cvm_fmt(todo, sizeof(todo), "%s", inner);
	if (r < 0)
		return r;
	done[0] = '\0';
	for (;;) {
		char *p = todo, *comp, *rest;
		struct stat st;
		ssize_t k;

		while (*p == '/')
			p++;
		if (!*p)
			break;
		comp = p;
		rest = strchr(p, '/');
		if (rest)
			*rest++ = '\0';
		else
			rest = p + strlen(p);
		if (strcmp(comp, ".") == 0) {
			memmove(todo, rest, strlen(rest) + 1);
			continue;
		}
		if (strcmp(comp, "..") == 0) {
			char *slash = strrchr(done, '/');

			dlen = slash ? (size_t)(slash - done) : 0;
			done[dlen] = '\0';
			memmove(todo, rest, strlen(rest) + 1);
			continue;
		}
		r = cvm_fmt(host, sizeof(host), "%s%s/%s", prefix, done, comp);
		if (r < 0)
			return r;
		if (lstat(host, &st) < 0)
			return -errno;
		if (!S_ISLNK(st.st_mode)) {
			r = cvm_fmt(done + dlen, sizeof(done) - dlen, "/%s", comp);
			if (r < 0)
				return r;
			dlen += strlen(done + dlen);
			memmove(todo, rest, strlen(rest) + 1);
			continue;
		}
		if (++hops > 16)
			return -ELOOP;
		k = readlink(host, target, sizeof(target) - 1);
		if (k < 0)
			return -errno;
		if ((size_t)k >= sizeof(target) - 1)
			return -ENAMETOOLONG;
		target[k] = '\0';
		/* Absolute: from the root; relative: from the link's folder (done). */
		if (target[0] == '/') {
			dlen = 0;
			done[0] = '\0';
		}
		r = cvm_fmt(tmp, sizeof(tmp), "%s/%s", target, rest);
		if (r < 0)
			return r;
		memcpy(todo, tmp, strlen(tmp) + 1);
	}
	return cvm_fmt(out, outlen, "%s", dlen ? done : "/");
}

