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
#ifdef __linux__
#include <sys/sysmacros.h>
#endif

#include "alloc.h"
#include "error.h"
#include "fsutil.h"

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

/* One folder of a walk: its names (read at once), where it is, its path's length. */
struct walk_frame {
	char **names;
	size_t n, i;
	struct stat st;
	size_t rel_len;
};

static void free_names(struct walk_frame *f)
{
	for (size_t k = 0; k < f->n; k++)
		free(f->names[k]);
	free(f->names);
	f->names = NULL;
	f->n = f->i = 0;
}

/* Reads every name of the folder at fd (fd stays open and is not moved). */
static int read_names(int fd, struct walk_frame *f)
{
	size_t cap = 0;
	struct dirent *de;
	DIR *d;
	int rd, r = 0;

	rd = openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (rd < 0)
		return -errno;
	d = fdopendir(rd);
	if (!d) {
		close(rd);
		return -errno;
	}
	f->names = NULL;
	f->n = f->i = 0;
	while ((errno = 0, de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		r = CVM_GROW(f->names, f->n + 1, cap);
		if (r < 0)
			break;
		f->names[f->n] = strdup(de->d_name);
		if (!f->names[f->n]) {
			r = -ENOMEM;
			break;
		}
		f->n++;
	}
	if (!r && errno)
		r = -errno;
	closedir(d);
	if (r < 0)
		free_names(f);
	return r;
}

/* rel = the first len bytes of rel, "/", name (grown as needed). */
static int rel_set(char **rel, size_t *cap, size_t len, const char *name)
{
	size_t nl = strlen(name), need = len + 1 + nl + 1;
	int r = CVM_GROW(*rel, need, *cap);

	if (r < 0)
		return r;
	if (len)
		(*rel)[len++] = '/';
	memcpy(*rel + len, name, nl + 1);
	return 0;
}

static bool same_file(const struct stat *a, const struct stat *b)
{
	return a->st_dev == b->st_dev && a->st_ino == b->st_ino;
}

/* Which mount an object is on: its device, and (Linux 5.8+) the mount's id and whether it is its root. */
struct mnt_key {
	dev_t dev;
	uint64_t id;
	bool has_id, root;
};

#if defined(__linux__) && defined(STATX_MNT_ID)
static void stat_of_statx(const struct statx *x, struct stat *st)
{
	memset(st, 0, sizeof(*st));
	st->st_dev = makedev(x->stx_dev_major, x->stx_dev_minor);
	st->st_ino = x->stx_ino;
	st->st_mode = x->stx_mode;
	st->st_nlink = x->stx_nlink;
	st->st_uid = x->stx_uid;
	st->st_gid = x->stx_gid;
	st->st_rdev = makedev(x->stx_rdev_major, x->stx_rdev_minor);
	st->st_size = (off_t)x->stx_size;
	st->st_blksize = (blksize_t)x->stx_blksize;
	st->st_blocks = (blkcnt_t)x->stx_blocks;
	st->st_atim.tv_sec = x->stx_atime.tv_sec;
	st->st_atim.tv_nsec = x->stx_atime.tv_nsec;
	st->st_mtim.tv_sec = x->stx_mtime.tv_sec;
	st->st_mtim.tv_nsec = x->stx_mtime.tv_nsec;
	st->st_ctim.tv_sec = x->stx_ctime.tv_sec;
	st->st_ctim.tv_nsec = x->stx_ctime.tv_nsec;
}
#endif

/*
 * lstat of name below dirfd (name "": dirfd itself) and the mount it is on,
 * in one statx where the kernel has it. A bind mount of a folder of the same
 * file system has the same st_dev: only the mount id, or the mount-root
 * attribute, tells it apart. Without statx (old kernels, Windows) the device
 * is all there is.
 */
static int stat_at(int dirfd, const char *name, struct stat *st, struct mnt_key *k)
{
#if defined(__linux__) && defined(STATX_MNT_ID)
	struct statx x;

	if (statx(dirfd, name, AT_SYMLINK_NOFOLLOW | AT_NO_AUTOMOUNT | (*name ? 0 : AT_EMPTY_PATH),
		  STATX_BASIC_STATS | STATX_MNT_ID, &x) == 0) {
		stat_of_statx(&x, st);
		k->dev = st->st_dev;
		k->has_id = (x.stx_mask & STATX_MNT_ID) != 0;
		k->id = x.stx_mnt_id;
		k->root = (x.stx_attributes_mask & STATX_ATTR_MOUNT_ROOT) &&
			  (x.stx_attributes & STATX_ATTR_MOUNT_ROOT);
		return 0;
	}
	if (errno != ENOSYS)
		return -errno;
#endif
	if (*name ? fstatat(dirfd, name, st, AT_SYMLINK_NOFOLLOW) < 0 : fstat(dirfd, st) < 0)
		return -errno;
	k->dev = st->st_dev;
	k->has_id = k->root = false;
	k->id = 0;
	return 0;
}

/* Whether an object below top is on another mount than top (a mount point, or under one). */
static bool crosses(const struct mnt_key *top, const struct mnt_key *k)
{
	return k->dev != top->dev || k->root || (top->has_id && k->has_id && k->id != top->id);
}

int cvm_walk_at(int dirfd, cvm_walk_fn fn, void *arg)
{
	struct walk_frame *stack = NULL, *f;
	size_t depth = 0, cap = 0, rcap = 0;
	struct mnt_key top, key;
	char *rel = NULL;
	int cur, r;

	cur = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (cur < 0)
		return -errno;
	stack = calloc(cap = 16, sizeof(*stack));
	r = stack ? rel_set(&rel, &rcap, 0, "") : -ENOMEM;
	if (r == 0)
		r = stat_at(cur, "", &stack[0].st, &top);
	if (r == 0)
		r = read_names(cur, &stack[0]);
	if (r < 0)
		goto out;
	depth = 1;
	while (depth) {
		struct stat st;
		const char *name;
		int sub;

		f = &stack[depth - 1];
		if (f->i == f->n) {
			/* This folder is done: back up to its parent, the same one as before. */
			struct stat ust;
			size_t len = f->rel_len;
			free_names(f);
			if (--depth == 0)
				break;
			sub = openat(cur, "..", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
			if (sub < 0) {
				r = -errno;
				goto out;
			}
			r = fstat(sub, &ust) < 0 ? -errno
			    : !same_file(&ust, &stack[depth - 1].st) ? -ESTALE : 0;
			if (r < 0) {
				close(sub);
				goto out;
			}
			close(cur);
			cur = sub;
			rel[len] = '\0';
			r = fn(arg, cur, stack[depth - 1].names[stack[depth - 1].i - 1], rel, &f->st,
			       CVM_WALK_DIR_DONE);
			if (r < 0)
				goto out;
			continue;
		}
		name = f->names[f->i++];
		r = rel_set(&rel, &rcap, f->rel_len, name);
		if (r < 0)
			goto out;
		r = stat_at(cur, name, &st, &key);
		if (r == -ENOENT)
			continue;	/* gone since the folder was read */
		if (r < 0)
			goto out;
		/* Another file system's objects are not the tree's: told, never entered. */
		if (crosses(&top, &key)) {
			r = fn(arg, cur, name, rel, &st, CVM_WALK_MOUNT);
			if (r < 0)
				goto out;
			continue;
		}
		r = fn(arg, cur, name, rel, &st, S_ISDIR(st.st_mode) ? CVM_WALK_DIR : CVM_WALK_ENTRY);
		if (r < 0)
			goto out;
		if (!S_ISDIR(st.st_mode) || r == 1)
			continue;
		r = CVM_GROW(stack, depth + 1, cap);
		if (r < 0)
			goto out;
		sub = openat(cur, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (sub < 0) {
			r = -errno;
			goto out;
		}
		f = &stack[depth];
		memset(f, 0, sizeof(*f));
		/* Still the folder looked at: not one mounted or swapped in since. */
		r = fstat(sub, &f->st) < 0 ? -errno : !same_file(&f->st, &st) ? -ESTALE
		    : read_names(sub, f);
		if (r < 0) {
			close(sub);
			goto out;
		}
		f->rel_len = strlen(rel);
		depth++;
		close(cur);
		cur = sub;
	}
	r = 0;
out:
	while (depth)
		free_names(&stack[--depth]);
	free(stack);
	free(rel);
	close(cur);
	return r;
}

static int rm_one(void *arg, int dirfd, const char *name, const char *rel, const struct stat *st,
		  enum cvm_walk_event ev)
{
	(void)arg;
	(void)rel;
	switch (ev) {
	case CVM_WALK_MOUNT:
		/* Mounted since cvm_tree_mount looked: stop, delete nothing of it. */
		return -EXDEV;
	case CVM_WALK_DIR:
		/* Read-only folders (0555 after an install) must become writable to empty them. */
		if ((st->st_mode & 0700) != 0700 &&
		    fchmodat(dirfd, name, (st->st_mode & 07777) | 0700, 0) < 0)
			return -errno;
		return 0;
	case CVM_WALK_DIR_DONE:
		return unlinkat(dirfd, name, AT_REMOVEDIR) < 0 && errno != ENOENT ? -errno : 0;
	default:
		return unlinkat(dirfd, name, 0) < 0 && errno != ENOENT ? -errno : 0;
	}
}

/* cvm_tree_mount's callback: the first mount point met ends the walk. */
struct mount_find {
	const char *top;
	char *rel;
	size_t len;
	bool found;
};

static int find_mount(void *arg, int dirfd, const char *name, const char *rel,
		      const struct stat *st, enum cvm_walk_event ev)
{
	struct mount_find *m = arg;

	(void)dirfd;
	(void)name;
	(void)st;
	if (ev != CVM_WALK_MOUNT)
		return 0;
	m->found = true;
	if (cvm_fmt(m->rel, m->len, "%s/%s", m->top, rel) < 0)
		snprintf(m->rel, m->len, "%s", m->top);
	return -EXDEV;
}

int cvm_tree_mount(int dirfd, const char *name, char *rel, size_t len)
{
	struct mount_find m = { .top = name, .rel = rel, .len = len };
	struct mnt_key pk, k;
	struct stat pst, st, now;
	char parent[4096];
	const char *slash = strrchr(name, '/');
	int fd, r;

	if (len)
		rel[0] = '\0';
	/* name against the folder that holds it ("a/b": "a"; "/x": "/"; "x": dirfd). */
	r = !slash ? cvm_fmt(parent, sizeof(parent), ".")
	    : cvm_fmt(parent, sizeof(parent), "%.*s", slash == name ? 1 : (int)(slash - name), name);
	if (r == 0)
		r = stat_at(dirfd, parent, &pst, &pk);
	if (r == 0)
		r = stat_at(dirfd, name, &st, &k);
	if (r != 0)
		return r == -ENOENT ? 0 : r;
	if (crosses(&pk, &k)) {
		snprintf(rel, len, "%s", name);
		return 1;
	}
	if (!S_ISDIR(st.st_mode))
		return 0;
	fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? 0 : -errno;
	r = fstat(fd, &now) < 0 ? -errno : !same_file(&now, &st) ? -ESTALE
	    : cvm_walk_at(fd, find_mount, &m);
	close(fd);
	if (m.found)
		return 1;
	return r;
}

int cvm_rm_rf_at(int dirfd, const char *name)
{
	char mnt[64];
	struct stat st;
	int fd, r;

	/* Nothing is deleted from a tree with a file system mounted in it (fsutil.h). */
	r = cvm_tree_mount(dirfd, name, mnt, sizeof(mnt));
	if (r != 0)
		return r > 0 ? -EXDEV : r;
	if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return errno == ENOENT ? 0 : -errno;
	if (!S_ISDIR(st.st_mode))
		return unlinkat(dirfd, name, 0) < 0 && errno != ENOENT ? -errno : 0;
	fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if ((st.st_mode & 0700) != 0700)
		(void)fchmod(fd, (st.st_mode & 07777) | 0700);
	r = cvm_walk_at(fd, rm_one, NULL);
	close(fd);
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

/*
 * open(2) fails at once, with no file to fstat, for what O_NONBLOCK makes it
 * refuse (a FIFO without a reader when writing, a socket: ENXIO), a folder
 * opened to write (EISDIR) and a link under O_NOFOLLOW (ELOOP): whether
 * that was "not a regular file" is asked of the name itself.
 */
static int open_failed(int dirfd, const char *name, int e)
{
	struct stat st;

	if ((e == ENXIO || e == EISDIR || e == ELOOP || e == EOPNOTSUPP) &&
	    fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && !S_ISREG(st.st_mode))
		return -CVM_E_NOTREG;
	return -e;
}

static int open_regular(int dirfd, const char *name, int flags, mode_t mode, uint64_t *size)
{
	struct stat st;
	int fd;

	fd = openat(dirfd, name, flags | O_NONBLOCK | O_CLOEXEC | O_NOCTTY, mode);
	if (fd < 0)
		return open_failed(dirfd, name, errno);
	if (fstat(fd, &st) < 0) {
		int e = errno;
		close(fd);
		return -e;
	}
	if (!S_ISREG(st.st_mode)) {
		close(fd);
		return -CVM_E_NOTREG;
	}
	if (size)
		*size = st.st_size > 0 ? (uint64_t)st.st_size : 0;
	return fd;
}

int cvm_open_regular(int dirfd, const char *name, int flags, mode_t mode)
{
	return open_regular(dirfd, name, flags, mode, NULL);
}

int cvm_open_to_parse(int dirfd, const char *name, uint64_t *size)
{
	int fd = open_regular(dirfd, name, O_RDONLY, 0, size);

	return fd == -CVM_E_NOTREG ? -CVM_E_LAYOUT : fd;
}

void cvm_path_folder(const char *path, char *buf, size_t len)
{
	const char *a = strrchr(path, '/'), *b = CVM_WINDOWS ? strrchr(path, '\\') : NULL;
	const char *cut = a > b ? a : b;

	snprintf(buf, len, "%.*s", cut ? (int)(cut - path) : (int)strlen(path), path);
}

/* name is absent or a regular file: what cvm_write_file_at may replace. */
static int replaceable(int dirfd, const char *name)
{
	struct stat st;

	if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return errno == ENOENT ? 0 : -errno;
	return S_ISREG(st.st_mode) ? 0 : -CVM_E_NOTREG;
}

int cvm_write_file_at(int dirfd, const char *name, const void *buf, size_t len, mode_t mode)
{
	char tmp[4096];
	int fd = -1, r;

	r = cvm_fmt(tmp, sizeof(tmp), "%s.tmp.%ld", name, (long)getpid());
	if (r == 0)
		r = replaceable(dirfd, name);
	if (r < 0)
		return r;
	fd = cvm_open_regular(dirfd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW, mode);
	/* Not ours to remove: whatever took the temporary name stays. */
	if (fd < 0)
		return fd;
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

int cvm_read_fd(int fd, size_t max, char **buf, size_t *len)
{
	struct stat st;
	char *b = NULL;
	size_t n = 0;

	if (fstat(fd, &st) < 0)
		return -errno;
	if (!S_ISREG(st.st_mode))
		return -CVM_E_NOTREG;
	if ((uint64_t)st.st_size > max)
		return -EFBIG;
	b = malloc((size_t)st.st_size + 1);
	if (!b)
		return -ENOMEM;
	while (n < (size_t)st.st_size) {
		ssize_t k = read(fd, b + n, (size_t)st.st_size - n);
		if (k < 0) {
			if (errno == EINTR)
				continue;
			free(b);
			return -errno;
		}
		if (k == 0)
			break;
		n += (size_t)k;
	}
	b[n] = '\0';
	*buf = b;
	if (len)
		*len = n;
	return 0;
}

int cvm_read_regular_at(int dirfd, const char *name, int flags, size_t max, char **buf, size_t *len)
{
	int fd, r;

	fd = cvm_open_regular(dirfd, name, O_RDONLY | flags, 0);
	if (fd < 0)
		return fd;
	r = cvm_read_fd(fd, max, buf, len);
	close(fd);
	return r;
}

int cvm_read_file_at(int dirfd, const char *name, size_t max, char **buf, size_t *len)
{
	return cvm_read_regular_at(dirfd, name, 0, max, buf, len);
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

int cvm_opendir_at(int dirfd, const char *name, int flags, DIR **d)
{
	int fd, r;

	*d = NULL;
	fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC | flags);
	if (fd < 0)
		return -errno;
	*d = fdopendir(fd);
	if (!*d) {
		r = -errno;
		close(fd);
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

int cvm_abspath(const char *path, char *out, size_t outlen)
{
	char buf[PATH_MAX * 2], cwd[PATH_MAX];
	const char *p, *e;
	size_t o = 0;
	int r;

	if (*path == '/') {
		r = cvm_fmt(buf, sizeof(buf), "%s", path);
	} else {
		if (!getcwd(cwd, sizeof(cwd)))
			return -errno;
		r = cvm_fmt(buf, sizeof(buf), "%s/%s", cwd, path);
	}
	if (r < 0)
		return r;
	if (outlen < 2)
		return -ENAMETOOLONG;
	for (p = buf; *p; p = *e ? e + 1 : e) {
		e = strchrnul(p, '/');
		if (e == p || (e - p == 1 && *p == '.'))
			continue;
		if (e - p == 2 && p[0] == '.' && p[1] == '.') {
			while (o && out[o - 1] != '/')
				o--;
			if (o)
				o--;
			continue;
		}
		if (o + 1 + (size_t)(e - p) + 1 > outlen)
			return -ENAMETOOLONG;
		out[o++] = '/';
		memcpy(out + o, p, (size_t)(e - p));
		o += (size_t)(e - p);
	}
	if (!o)
		out[o++] = '/';
	out[o] = '\0';
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


const char *cvm_root_inside(const char *root, const char *host)
{
	size_t rl = strlen(root);

	return rl && !strncmp(host, root, rl) && host[rl] == '/' ? host + rl : host;
}
