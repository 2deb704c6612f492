/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cudnnvm/archive.h"
#include "cudnnvm/digest.h"
#include "cudnnvm/error.h"
#include "cudnnvm/extract.h"
#include "cudnnvm/fault.h"
#include "cudnnvm/fsutil.h"
#include "cudnnvm/out.h"

enum { BUFSZ = 1 << 20 };

static int unsafe(const char *archive, const char *entry, const char *why)
{
	return cvm_err(-CVM_E_UNSAFE, "unsafe archive '%s': entry '%s': %s", cvm_safe(archive),
		       cvm_safe(entry), why);
}

static int write_error(const char *rel, int r)
{
	return cvm_err(r, "cannot write '%s' in the staging folder: %s", cvm_safe(rel),
		       strerror(-r));
}

/*
 * Opens the folder that will hold rel, creating missing folders, never
 * following a symlink: returns its fd and points *leaf at the last part.
 */
static int open_parent(int root, const char *name, const char *rel, const char **leaf)
{
	char buf[4096];
	char *p, *slash;
	int fd, next;

	if (strlen(rel) >= sizeof(buf))
		return unsafe(name, rel, "name too long");
	strcpy(buf, rel);
	fd = dup(root);
	if (fd < 0)
		return -errno;
	for (p = buf; (slash = strchr(p, '/')); p = slash + 1) {
		*slash = '\0';
		/* The umask must not make a folder unreadable for other users. */
		int made = mkdirat(fd, p, 0755) == 0 ? 1 : errno == EEXIST ? 0 : -1;
		if (made < 0 || (made && fchmodat(fd, p, 0755, 0) < 0)) {
			int r = write_error(rel, -errno);
			close(fd);
			return r;
		}
		next = openat(fd, p, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (next < 0) {
			int e = errno;
			close(fd);
			if (e == ELOOP || e == ENOTDIR)
				return unsafe(name, rel, "its folder is a symlink or a file");
			return write_error(rel, -e);
		}
		close(fd);
		fd = next;
	}
	*leaf = rel + (p - buf);
	return fd;
}

static int write_file(struct cvm_archive *ar, const char *name, int pfd, const char *leaf,
		      const char *rel, mode_t mode, uint64_t max_bytes, struct cvm_extract *x,
		      unsigned char *buf, struct cvm_progress *pr)
{
	struct cvm_sha256 *sha = NULL;
	uint8_t digest[CVM_SHA256_LEN];
	char hex[CVM_SHA256_HEX];
	uint64_t size = 0, pos0 = cvm_archive_position(ar), pos;
	int fd = -1, r = 0;

	fd = openat(pfd, leaf, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
	if (fd < 0) {
		if (errno == EEXIST)
			return unsafe(name, rel, "a second entry of the same name");
		return write_error(rel, -errno);
	}
	sha = cvm_sha256_new();
	if (!sha) {
		r = -ENOMEM;
		goto out;
	}
	for (;;) {
		ssize_t n = cvm_archive_read(ar, buf, BUFSZ);
		if (n < 0) {
			r = (int)n;
			goto out;
		}
		if (n == 0)
			break;
		size += (uint64_t)n;
		x->bytes += (uint64_t)n;
		if (x->bytes > max_bytes) {
			r = unsafe(name, rel, "the archive expands beyond a sane size");
			goto out;
		}
		r = cvm_sha256_update(sha, buf, (size_t)n);
		if (r == 0)
			r = cvm_write_all(fd, buf, (size_t)n);
		if (r < 0) {
			if (r != -ENOMEM)
				r = write_error(rel, r);
			goto out;
		}
		pos = cvm_archive_position(ar);
		cvm_progress_add(pr, pos - pos0);
		pos0 = pos;
	}
	/* The umask must not make a file unreadable for other users. */
	if (fchmod(fd, mode) < 0) {
		r = write_error(rel, -errno);
		goto out;
	}
	r = cvm_sha256_final(sha, digest);
	if (r < 0)
		goto out;
	cvm_hex_encode(digest, sizeof(digest), hex);
	r = cvm_filelist_add(&x->files, rel, NULL, hex, size, mode);
out:
	cvm_sha256_free(sha);
	if (fd >= 0 && close(fd) < 0 && r == 0)
		r = write_error(rel, -errno);
	return r;
}

int cvm_extract_fd(int fd, const char *name, uint64_t archive_size, uint64_t max_bytes,
		   int dirfd, struct cvm_extract *x)
{
	struct cvm_archive *ar = NULL;
	struct cvm_progress pr;
	struct cvm_entry e;
	unsigned char *buf = NULL;
	char rel[4096];
	const char *leaf = NULL;
	int r, pfd = -1;
	bool first_file = true;

	buf = malloc(BUFSZ);
	if (!buf)
		return -ENOMEM;
	r = cvm_archive_open_fd(fd, name, &ar);
	if (r < 0)
		goto out;
	cvm_progress_start(&pr, "extracting", archive_size);
	while ((r = cvm_archive_next(ar, &e)) > 0) {
		if (!x->format[0])
			strncpy(x->format, cvm_archive_format(ar), sizeof(x->format) - 1);
		r = cvm_entry_check(&x->state, name, &e, rel, sizeof(rel));
		if (r < 0)
			goto out;
		if (r == 1)
			continue;
		pfd = open_parent(dirfd, name, rel, &leaf);
		if (pfd < 0) {
			r = pfd;
			goto out;
		}
		switch (e.type) {
		case CVM_ENTRY_DIR:
			if (mkdirat(pfd, leaf, 0755) == 0) {
				if (fchmodat(pfd, leaf, 0755, 0) < 0) {
					r = write_error(rel, -errno);
					goto out;
				}
			} else {
				struct stat st;
				if (errno != EEXIST) {
					r = write_error(rel, -errno);
					goto out;
				}
				if (fstatat(pfd, leaf, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
				    !S_ISDIR(st.st_mode)) {
					r = unsafe(name, rel, "a second entry of the same name");
					goto out;
				}
			}
			break;
		case CVM_ENTRY_SYMLINK:
			if (symlinkat(e.link, pfd, leaf) < 0) {
				r = errno == EEXIST ? unsafe(name, rel, "a second entry of the same name")
						    : write_error(rel, -errno);
				goto out;
			}
			r = cvm_filelist_add(&x->files, rel, e.link, NULL, 0, 0777);
			if (r < 0)
				goto out;
			break;
		default:
			r = write_file(ar, name, pfd, leaf, rel, (e.mode & 0111) ? 0755 : 0644,
				       max_bytes, x, buf, &pr);
			if (r < 0)
				goto out;
			if (first_file) {
				first_file = false;
				cvm_fault("install-extracting");
			}
			break;
		}
		close(pfd);
		pfd = -1;
	}
	cvm_progress_end(&pr);
	if (r == 0 && !x->state.have_top)
		r = cvm_err(-CVM_E_LAYOUT, "'%s' is empty", cvm_safe(name));
out:
	if (pfd >= 0)
		close(pfd);
	cvm_archive_free(ar);
	free(buf);
	return r;
}
