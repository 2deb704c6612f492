/* SPDX-License-Identifier: MIT */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "alloc.h"
#include "config.h"
#include "error.h"
#include "fault.h"
#include "fsutil.h"
#include "lock.h"
#include "out.h"
#include "plan.h"
#include "store.h"
#include "trust.h"
#include "version.h"

static const char *const subdirs[] = { "versions", "active", "history", "cache", ".staging", ".trash" };

static int sys_err(const struct cvm_store *s, const char *what, int r)
{
	if ((r == -EACCES || r == -EPERM) && geteuid() != 0)
		return cvm_err(-CVM_E_PERM, "cannot %s in the store '%s': permission denied: this "
			       "needs root, or --user for a store of your own", what,
			       cvm_safe(s->display));
	return cvm_err(r, "cannot %s in the store '%s': %s", what, cvm_safe(s->display), cvm_strerror(-r));
}

/* The --root part of path, when display is path as seen inside it ("" otherwise). */
static const char *root_prefix(const char *path, const char *display)
{
	static char prefix[4096];
	size_t pl = strlen(path), dl = strlen(display);

	prefix[0] = '\0';
	if (pl > dl && !strcmp(path + pl - dl, display) && pl - dl < sizeof(prefix))
		snprintf(prefix, sizeof(prefix), "%.*s", (int)(pl - dl), path);
	return prefix;
}

/*
 * A dry run of a command that would create the store sees it as the real
 * run would after creating it: empty. The descriptor of a folder removed
 * as soon as it is open gives exactly that: every name in it is ENOENT,
 * and nothing can be created in it by mistake. fd, or -1 with errno set.
 */
static int empty_dir_fd(void)
{
	const char *tmp = getenv("TMPDIR");
	char path[4096];
	int fd;

	if (cvm_fmt(path, sizeof(path), "%s/cudnnvm-dry.XXXXXX", tmp && *tmp ? tmp : "/tmp") < 0 ||
	    !mkdtemp(path))
		return -1;
	fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	(void)rmdir(path);
	return fd;
}

int cvm_store_open(struct cvm_store *s, const char *path, const char *display, bool create)
{
	int r;

	s->fd = s->lock_fd = -1;
	s->behind = NULL;
	s->path = strdup(path);
	s->display = strdup(display);
	if (!s->path || !s->display) {
		r = -ENOMEM;
		goto fail;
	}
	if (create) {
		r = cvm_do_mkdir_p(s->plan, path, 0755, root_prefix(path, display));
		if (r < 0) {
			r = sys_err(s, "create folders", r);
			goto fail;
		}
	}
	s->fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (s->fd < 0 && errno == ENOENT && create && cvm_plan_dry(s->plan))
		s->fd = empty_dir_fd();
	if (s->fd < 0) {
		r = -errno;
		if (r != -ENOENT || create)
			r = sys_err(s, "open folders", r);
		goto fail;
	}
	if (create) {
		for (size_t i = 0; i < sizeof(subdirs) / sizeof(subdirs[0]); i++) {
			char shown[4096];
			snprintf(shown, sizeof(shown), "%s/%s", display, subdirs[i]);
			r = cvm_do_mkdir_at(s->plan, s->fd, subdirs[i], 0755, shown);
			if (r < 0) {
				r = sys_err(s, "create a folder", r);
				goto fail;
			}
		}
	}
	return 0;
fail:
	cvm_store_close(s);
	return r;
}

/* The flush behind a staged tree, if one runs, stopped (it waits for a flush in progress). */
static void stop_behind(struct cvm_store *s)
{
	cvm_flush_behind_stop(s->behind);
	s->behind = NULL;
}

void cvm_store_close(struct cvm_store *s)
{
	stop_behind(s);
	if (s->lock_fd >= 0)
		close(s->lock_fd);
	if (s->fd >= 0)
		close(s->fd);
	free(s->path);
	free(s->display);
	s->path = s->display = NULL;
	s->fd = s->lock_fd = -1;
}

/*
 * Replaces an old lock file (not 0600: made by an older cudnnvm, so any user
 * may have it open) whose inode old describes by a fresh 0600 one, locked
 * before it is renamed into place. Replacements are serialised by the
 * O_EXCL creation of .lock.new (only the store's owner can make it), and
 * done only while .lock is still that old file. The new descriptor, or
 * -EAGAIN when another process replaced it or is replacing it (start again).
 */
static int lock_replace(struct cvm_store *s, const struct stat *old)
{
	struct stat now;
	int fd, r;

	fd = openat(s->fd, ".lock.new", O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0 && errno == EEXIST) {
		/* Left by a run killed while replacing it, when no one holds it. */
		fd = openat(s->fd, ".lock.new", O_RDWR | O_CLOEXEC | O_NOFOLLOW);
		if (fd >= 0 && cvm_lock_try(fd) == 0)
			(void)unlinkat(s->fd, ".lock.new", 0);
		if (fd >= 0)
			close(fd);
		return -EAGAIN;
	}
	if (fd < 0)
		return sys_err(s, "replace the lock", -errno);
	if (cvm_lock_try(fd) < 0 ||
	    fstatat(s->fd, ".lock", &now, AT_SYMLINK_NOFOLLOW) < 0 ||
	    now.st_dev != old->st_dev || now.st_ino != old->st_ino) {
		r = -EAGAIN;
		goto fail;
	}
	if (renameat(s->fd, ".lock.new", s->fd, ".lock") < 0) {
		r = errno == ENOENT ? -EAGAIN : sys_err(s, "replace the lock", -errno);
		goto fail;
	}
	cvm_verbose("replaced the lock file (mode %04o) by one of mode 0600",
		    (unsigned)(old->st_mode & 07777));
	return fd;
fail:
	(void)unlinkat(s->fd, ".lock.new", 0);
	close(fd);
	return r;
}

/* The open lock file must be a regular file of ours (st: what it is). */
static int lock_file_ok(struct cvm_store *s, int fd, const char *path, struct stat *st)
{
	if (fstat(fd, st) < 0)
		return sys_err(s, "open the lock", -errno);
	if (!S_ISREG(st->st_mode) || st->st_uid != geteuid())
		return cvm_err(-CVM_E_PERM, "refusing the lock '%s': %s; remove it (the next command "
			       "makes a new one)", cvm_safe(path), !S_ISREG(st->st_mode) ?
			       "it is not a regular file" : "it belongs to another user");
	return 0;
}

/*
 * The lock is ours (fd; -1 where a dry run found no lock file), kept until
 * cvm_store_close; only now may the leftovers of crashed runs go.
 */
static int lock_held(struct cvm_store *s, int fd)
{
	s->lock_fd = fd;
	return cvm_store_sweep(s);
}

/*
 * A dry run creates no lock file and writes nothing into one: an existing
 * one is locked as the real run would lock it (so that what it plans is
 * what the store holds, and it waits, or exits 5, as the real run would);
 * where there is none, no cudnnvm holds the store. 0 with *held the locked
 * file, or -1 where there is none; or a negative code, printed.
 */
static int lock_dry(struct cvm_store *s, const char *path, double timeout_s, int *held)
{
	struct stat st;
	int fd, r;

	*held = -1;
	fd = openat(s->fd, ".lock", O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	/* None yet: the real run would make it, which needs the right to. */
	if (fd < 0 && errno == ENOENT)
		return faccessat(s->fd, ".", W_OK, AT_EACCESS) < 0 ?
		       sys_err(s, "open the lock", -errno) : 0;
	if (fd < 0 && errno == ELOOP)
		return cvm_err(-CVM_E_PERM, "refusing the lock '%s': it is not a regular file; remove "
			       "it (the next command makes a new one)", cvm_safe(path));
	if (fd < 0)
		return sys_err(s, "open the lock", -errno);
	r = lock_file_ok(s, fd, path, &st);
	if (r == 0)
		r = cvm_lock_take(fd, path, timeout_s);
	if (r < 0) {
		close(fd);
		return r;
	}
	if (!CVM_WINDOWS && (st.st_mode & 07777) != 0600)
		cvm_plan_describe(s->plan, "replace", path, NULL, "(mode %04o) by a lock file of mode 0600",
				  (unsigned)(st.st_mode & 07777));
	*held = fd;
	return 0;
}

/*
 * The lock is a flock on STORE/.lock, a file of mode 0600 owned by the
 * store's owner (root for the system store), opened O_NOFOLLOW: no other
 * user can open it, so no other user can hold it and lock root out. An old
 * 0644 one is replaced (lock_replace) once we hold it, or at once when only
 * other users' processes hold it. After the flock, the file must still be
 * the one named .lock; otherwise we locked a replaced file and start again.
 */
int cvm_store_lock(struct cvm_store *s, double timeout_s)
{
	long long deadline = cvm_now_ms() + (long long)(timeout_s * 1000);
	char buf[64], path[4096];
	struct stat st, now;
	int fd = -1, nfd, r;

	r = cvm_fmt(path, sizeof(path), "%s/.lock", s->display);
	if (r < 0)
		return sys_err(s, "open the lock", r);
	if (cvm_plan_dry(s->plan)) {
		r = lock_dry(s, path, timeout_s, &fd);
		return r < 0 ? r : lock_held(s, fd);
	}
	for (;;) {
		fd = openat(s->fd, ".lock", O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0600);
		if (fd < 0)
			return sys_err(s, "open the lock", -errno);
		r = lock_file_ok(s, fd, path, &st);
		if (r < 0)
			goto fail;
		/* Windows has no modes to fix (ACLs): its lock file is never replaced. */
		if (!CVM_WINDOWS && (st.st_mode & 07777) != 0600 && cvm_lock_try(fd) < 0 &&
		    cvm_lock_held_by_others_only(fd)) {
			nfd = lock_replace(s, &st);
		} else {
			long long left = deadline - cvm_now_ms();

			r = cvm_lock_take(fd, path, timeout_s < 0 ? -1 : left > 0 ? (double)left / 1000 : 0);
			if (r < 0)
				goto fail;
			if (fstatat(s->fd, ".lock", &now, AT_SYMLINK_NOFOLLOW) < 0 ||
			    now.st_dev != st.st_dev || now.st_ino != st.st_ino)
				nfd = -EAGAIN;
			else if (!CVM_WINDOWS && (st.st_mode & 07777) != 0600)
				nfd = lock_replace(s, &st);
			else
				break;
		}
		if (nfd >= 0) {
			close(fd);
			fd = nfd;
			break;
		}
		if (nfd != -EAGAIN) {
			r = nfd;
			goto fail;
		}
		close(fd);
		if (timeout_s >= 0 && cvm_now_ms() >= deadline)
			return cvm_err(-CVM_E_LOCKED, "the store is locked by another cudnnvm ('%s'); "
				       "try again later", cvm_safe(path));
		nanosleep(&(struct timespec){ .tv_nsec = 20 * 1000 * 1000 }, NULL);
	}
	/* For people: who holds it. The lock itself is the flock, not this text. */
	snprintf(buf, sizeof(buf), "%ld\n", (long)getpid());
	if (ftruncate(fd, 0) == 0)
		(void)!pwrite(fd, buf, strlen(buf), 0);
	return lock_held(s, fd);
fail:
	if (fd >= 0)
		close(fd);
	return r;
}

static int empty_dir(struct cvm_store *s, const char *name)
{
	DIR *d;
	struct dirent *de;
	int r;

	r = cvm_opendir_at(s->fd, name, O_NOFOLLOW, &d);
	if (r < 0)
		return r == -ENOENT ? 0 : sys_err(s, "open a work folder", r);
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		char shown[4096];
		snprintf(shown, sizeof(shown), "%s/%s/%s", s->display, name, de->d_name);
		cvm_verbose("removing leftover %s/%s", name, de->d_name);
		char mnt[4096];
		int k = cvm_tree_mount(dirfd(d), de->d_name, mnt, sizeof(mnt));
		/* A leftover with a file system mounted in it harms nothing: it stays, said. */
		if (k > 0) {
			cvm_warn("leaving %s: '%s/%s/%s' is a mount point, and cudnnvm deletes nothing "
				 "in a file system it did not make: unmount it", cvm_safe(shown),
				 cvm_safe(s->display), name, cvm_safe(mnt));
			continue;
		}
		if (k == 0)
			k = cvm_do_rm_rf_at(s->plan, dirfd(d), de->d_name, shown);
		/* Windows: a DLL that a program still has loaded cannot go yet; a later run deletes it. */
		if (k == -EACCES && CVM_WINDOWS && !strcmp(name, ".trash")) {
			cvm_verbose("%s/%s is still in use: left for a later run", name, de->d_name);
			continue;
		}
		if (k < 0 && !r)
			r = sys_err(s, "clean a work folder", k);
	}
	closedir(d);
	return r;
}

int cvm_store_sweep(struct cvm_store *s)
{
	int r = empty_dir(s, ".staging");

	return r < 0 ? r : empty_dir(s, ".trash");
}

int cvm_store_stage(struct cvm_store *s, const char *id, char *name, size_t len, int *dirfd)
{
	char path[4096];
	int r, fd;

	r = cvm_fmt(name, len, "%s.XXXXXX", id);
	if (r == 0)
		r = cvm_fmt(path, sizeof(path), "%s/.staging/%s", s->path, name);
	if (r < 0)
		return sys_err(s, "name a staging folder", r);
	if (!mkdtemp(path))
		return sys_err(s, "create a staging folder", -errno);
	memcpy(name, strrchr(path, '/') + 1, strlen(strrchr(path, '/') + 1) + 1);
	fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return sys_err(s, "open the staging folder", -errno);
	/* mkdtemp makes it 0700; the version must be readable by every user. */
	if (fchmod(fd, 0755) < 0) {
		int r2 = sys_err(s, "open the staging folder", -errno);
		close(fd);
		return r2;
	}
	*dirfd = fd;
	return 0;
}

/*
 * A version installed again, or removed, has no smoke result yet: the last one
 * (smokelog.h, STORE/smoke/<id>.json) was of the files that are gone.
 */
static void forget_smoke(struct cvm_store *s, const char *id)
{
	char p[4096], shown[4096];
	int r;

	if (cvm_fmt(p, sizeof(p), "smoke/%s.json", id) == 0 &&
	    cvm_fmt(shown, sizeof(shown), "%s/%s", s->display, p) == 0 &&
	    (r = cvm_do_unlink_at(s->plan, s->fd, p, shown)) < 0)
		cvm_warn("cannot remove %s/%s: %s", s->display, p, cvm_strerror(-r));
}

/*
 * Refuses (-CVM_E_BUSY, printed) to delete the tree name (below the store)
 * when a file system is mounted in it: the walk that deletes would stop at
 * the mount point (fsutil.h), but only after the rest of the tree was gone;
 * this says so before anything is moved or deleted.
 */
static int refuse_mounted(struct cvm_store *s, const char *name, const char *verb)
{
	char rel[4096];
	int r = cvm_tree_mount(s->fd, name, rel, sizeof(rel));

	if (r > 0)
		return cvm_err(-CVM_E_BUSY, "refusing to %s %s/%s: '%s/%s' is a mount point (another "
			       "file system is mounted there), and cudnnvm deletes nothing in a "
			       "file system it did not make; nothing was changed: unmount it first",
			       verb, cvm_safe(s->display), cvm_safe(name), cvm_safe(s->display),
			       cvm_safe(rel));
	if (r < 0)
		return sys_err(s, "look for mount points", r);
	return 0;
}

int cvm_store_commit(struct cvm_store *s, const char *staged, const char *id, bool replace)
{
	char from[4096], to[4096], old[4096];
	int r;

	r = cvm_fmt(from, sizeof(from), ".staging/%s", staged);
	if (r == 0)
		r = cvm_fmt(to, sizeof(to), "versions/%s", id);
	if (r < 0)
		return sys_err(s, "name a version", r);
	/* One flush of everything extracted instead of an fsync per file. */
	stop_behind(s);
	r = cvm_syncfs(s->fd);
	if (r < 0)
		return sys_err(s, "sync", r);
	r = cvm_rename_noreplace(s->fd, from, to);
	if (r == 0)
		goto done;
	if (r != -EEXIST && r != -ENOTEMPTY)
		return sys_err(s, "commit the version", r);
	if (!replace)
		return cvm_err(-CVM_E_EXISTS, "%s is already installed", cvm_safe(id));
	r = refuse_mounted(s, to, "replace");
	if (r < 0)
		return r;
	/* --force: the old tree is swapped out in one step, then deleted. */
	r = cvm_rename_exchange(s->fd, from, to);
	if (r == -EOPNOTSUPP)
		return cvm_err(r, "%s is installed, and replacing it in one step is not available "
			       "here (no atomic exchange of folders on Windows yet): uninstall it "
			       "first", cvm_safe(id));
	if (r < 0)
		return sys_err(s, "replace the version", r);
	cvm_fault("install-exchanged");
	r = cvm_fmt(old, sizeof(old), ".trash/%s", staged);
	if (r == 0 && renameat(s->fd, from, s->fd, old) < 0)
		r = -errno;
	if (r == 0)
		r = cvm_rm_rf_at(s->fd, old);
	if (r < 0)
		cvm_warn("cannot remove the replaced copy of %s: %s", id, cvm_strerror(-r));
done:
	cvm_fault("install-committed");
	forget_smoke(s, id);
	r = openat(s->fd, "versions", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (r >= 0) {
		(void)cvm_fsync_dir(r);
		close(r);
	}
	return 0;
}

int cvm_store_discard(struct cvm_store *s, const char *staged)
{
	int fd, r;

	stop_behind(s);
	fd = openat(s->fd, ".staging", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	r = cvm_rm_rf_at(fd, staged);
	close(fd);
	return r;
}

void cvm_store_flush_behind(struct cvm_store *s)
{
	if (!s->behind && s->fd >= 0)
		s->behind = cvm_flush_behind_start(s->fd);
}

/*
 * Names in .trash for id that are not taken: to, and aside (to.bin, for
 * remove_around_loaded). What an earlier run could not delete (a DLL still
 * loaded, on Windows) may stay there under a PID that Windows has given again.
 */
static int trash_names(struct cvm_store *s, const char *id, char *to, char *aside, size_t len)
{
	struct stat st;
	int r = 0;

	for (int k = 0; r == 0; k++) {
		r = k > 100 ? -EEXIST : k ? cvm_fmt(to, len, ".trash/%s.%ld.%d", id, (long)getpid(), k)
					  : cvm_fmt(to, len, ".trash/%s.%ld", id, (long)getpid());
		if (r == 0)
			r = cvm_fmt(aside, len, "%s.bin", to);
		if (r == 0 && fstatat(s->fd, to, &st, AT_SYMLINK_NOFOLLOW) < 0 &&
		    fstatat(s->fd, aside, &st, AT_SYMLINK_NOFOLLOW) < 0)
			break;
	}
	return r;
}

/* Renames each name of from_fd's list into to_fd; on failure, those moved go back. */
static int move_names(int from_fd, int to_fd, char **names, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (renameat(from_fd, names[i], to_fd, names[i]) < 0)
			break;
	if (i == n)
		return 0;
	int r = -errno;
	while (i--)
		(void)renameat(to_fd, names[i], from_fd, names[i]);
	return r;
}

/*
 * Windows (NTFS) will not rename a folder while a program has a DLL under
 * it loaded, but will rename the loaded DLL itself (wine renames both). So
 * when versions/<id> cannot be renamed, the files of its bin/ go aside
 * first, into aside (<to>.bin), and it is renamed again; if it still cannot be, they
 * go back and nothing has changed. Not atomic: a crash between leaves a
 * version without its DLLs, which verify reports. 0 or -errno.
 */
static int remove_around_loaded(struct cvm_store *s, const char *from, const char *to,
				const char *aside)
{
	char bin[4096], **names = NULL;
	int bfd = -1, afd = -1, r;
	size_t n = 0, cap = 0;
	struct dirent *de;
	DIR *d;

	r = cvm_fmt(bin, sizeof(bin), "%s/bin", from);
	if (r < 0)
		return r;
	bfd = openat(s->fd, bin, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (bfd < 0)
		return -errno;
	/* The names first (on a descriptor of their own): renaming while reading could skip some. */
	r = cvm_opendir_at(bfd, ".", 0, &d);
	if (r < 0)
		goto out;
	while (r == 0 && (de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		r = CVM_GROW(names, n + 1, cap);
		if (r < 0)
			break;
		names[n] = strdup(de->d_name);
		if (!names[n]) {
			r = -ENOMEM;
			break;
		}
		n++;
	}
	closedir(d);
	if (r < 0)
		goto out;
	if (mkdirat(s->fd, aside, 0700) < 0) {
		r = -errno;
		goto out;
	}
	afd = openat(s->fd, aside, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	r = afd < 0 ? -errno : move_names(bfd, afd, names, n);
	if (r == 0 && renameat(s->fd, from, s->fd, to) < 0) {
		r = -errno;
		if (move_names(afd, bfd, names, n) < 0)
			cvm_warn("cannot put the DLLs of %s back from %s/%s: move them back into "
				 "its bin folder before the next cudnnvm command deletes them",
				 from, s->display, aside);
	}
	if (r < 0 && afd >= 0)
		(void)unlinkat(s->fd, aside, AT_REMOVEDIR);	/* only when empty */
out:
	if (afd >= 0)
		close(afd);
	close(bfd);
	cvm_strv_free(names, n);
	return r;
}

int cvm_store_remove(struct cvm_store *s, const char *id)
{
	char from[4096], to[4096], aside[4096];
	int r, k;

	r = cvm_fmt(from, sizeof(from), "versions/%s", id);
	if (r == 0)
		r = trash_names(s, id, to, aside, sizeof(to));
	if (r < 0)
		return sys_err(s, "name a version", r);
	r = refuse_mounted(s, from, "remove");
	if (r < 0)
		return r;
	if (cvm_plan_dry(s->plan)) {
		char shown[4096];
		snprintf(shown, sizeof(shown), "%s/versions/%s", s->display, id);
		cvm_plan_describe(s->plan, "remove", shown, NULL, "(the whole version)");
		forget_smoke(s, id);
		return 0;
	}
	if (renameat(s->fd, from, s->fd, to) < 0) {
		r = -errno;
		if (r == -EACCES && CVM_WINDOWS)
			r = remove_around_loaded(s, from, to, aside);
		if (r == -EACCES && CVM_WINDOWS)
			return cvm_err(-CVM_E_BUSY, "cannot remove %s: Windows does not let its folder "
				       "be moved while a program uses a file in it (loaded, or open "
				       "without delete sharing); nothing was changed: stop that "
				       "program first", id);
		if (r < 0)
			return sys_err(s, "remove a version", r);
	}
	cvm_fault("uninstall-trashed");
	forget_smoke(s, id);
	r = openat(s->fd, "versions", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (r >= 0) {
		(void)cvm_fsync_dir(r);
		close(r);
	}
	r = cvm_rm_rf_at(s->fd, to);
	k = cvm_rm_rf_at(s->fd, aside);
	r = r < 0 ? r : k;
	/* The version is gone from versions/: what cannot be deleted yet is the sweep's. */
	if (r == -EACCES && CVM_WINDOWS) {
		cvm_warn("%s is removed, but DLLs that running programs have loaded cannot be deleted "
			 "on Windows: they stay in %s/.trash until a later cudnnvm command finds them "
			 "unused", id, s->display);
		return 0;
	}
	return r < 0 ? sys_err(s, "delete a removed version", r) : 0;
}

bool cvm_store_has(struct cvm_store *s, const char *id)
{
	char p[4096];
	struct stat st;

	return cvm_fmt(p, sizeof(p), "versions/%s", id) == 0 &&
	       fstatat(s->fd, p, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode);
}

int cvm_store_open_version(struct cvm_store *s, const char *id)
{
	char p[4096];
	int fd, r;

	r = cvm_fmt(p, sizeof(p), "versions/%s", id);
	if (r < 0)
		return r;
	fd = openat(s->fd, p, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

struct idv {
	char *id;
	struct cvm_version v;
	int major;
	char platform[64];
};

static int cmp_idv(const void *a, const void *b)
{
	const struct idv *x = a, *y = b;
	int c = cvm_version_cmp(&y->v, &x->v);

	if (c)
		return c;
	if (x->major != y->major)
		return y->major - x->major;
	return strcmp(x->id, y->id);
}

int cvm_store_list(struct cvm_store *s, char ***ids, size_t *n)
{
	struct idv *v = NULL;
	size_t cnt = 0, cap = 0;
	DIR *d = NULL;
	struct dirent *de;
	char ver[64];
	int r;

	*ids = NULL;
	*n = 0;
	r = cvm_opendir_at(s->fd, "versions", 0, &d);
	if (r < 0)
		return r == -ENOENT ? 0 : sys_err(s, "list versions", r);
	while ((de = readdir(d))) {
		struct idv x = { 0 };
		if (de->d_name[0] == '.')
			continue;
		if (cvm_store_parse_id(de->d_name, ver, sizeof(ver), &x.major, x.platform,
				       sizeof(x.platform)) < 0 ||
		    cvm_version_parse(ver, &x.v) < 0)
			continue;
		r = CVM_GROW(v, cnt + 1, cap);
		if (r < 0)
			goto out;
		x.id = strdup(de->d_name);
		if (!x.id) {
			r = -ENOMEM;
			goto out;
		}
		v[cnt++] = x;
	}
	if (cnt)
		qsort(v, cnt, sizeof(*v), cmp_idv);
	*ids = calloc(cnt + 1, sizeof(char *));
	if (!*ids) {
		r = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < cnt; i++)
		(*ids)[i] = v[i].id;
	*n = cnt;
	cnt = 0;
out:
	for (size_t i = 0; i < cnt; i++)
		free(v[i].id);
	free(v);
	closedir(d);
	return r;
}

void cvm_strv_free(char **v, size_t n)
{
	if (!v)
		return;
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

int cvm_store_id(char *buf, size_t len, const char *version, int cuda_major, const char *platform)
{
	return cvm_fmt(buf, len, "%s-cuda%d-%s", version, cuda_major, platform);
}

int cvm_store_parse_id(const char *id, char *version, size_t vlen, int *cuda_major,
		       char *platform, size_t plen)
{
	const char *c = strstr(id, "-cuda");
	const char *dash;
	char *end;
	long m;

	if (!c || (size_t)(c - id) >= vlen)
		return -CVM_E_VERSION;
	m = strtol(c + 5, &end, 10);
	/* NVIDIA's "cuda13.4" variant (a build for 13.4 and later) is of major 13. */
	if (end != c + 5 && *end == '.' && end[1] >= '0' && end[1] <= '9')
		for (end++; *end >= '0' && *end <= '9';)
			end++;
	if (end == c + 5 || *end != '-' || m <= 0 || m > 99)
		return -CVM_E_VERSION;
	dash = end + 1;
	if (!*dash || strlen(dash) >= plen)
		return -CVM_E_VERSION;
	memcpy(version, id, (size_t)(c - id));
	version[c - id] = '\0';
	memcpy(platform, dash, strlen(dash) + 1);
	*cuda_major = (int)m;
	return 0;
}

int cvm_store_match(struct cvm_store *s, const char *spec, int cuda_major, const char *platform,
		    char ***ids, size_t *n)
{
	struct cvm_version want, v;
	char **all = NULL, **out = NULL, ver[64], plat[64];
	size_t nall = 0, k = 0;
	int r, major;
	bool by_id = strstr(spec, "-cuda") != NULL;

	*ids = NULL;
	*n = 0;
	if (!by_id && cvm_version_parse(spec, &want) < 0)
		return -CVM_E_VERSION;
	r = cvm_store_list(s, &all, &nall);
	if (r < 0)
		return r;
	out = calloc(nall + 1, sizeof(char *));
	if (!out) {
		cvm_strv_free(all, nall);
		return -ENOMEM;
	}
	for (size_t i = 0; i < nall; i++) {
		bool keep;
		if (cvm_store_parse_id(all[i], ver, sizeof(ver), &major, plat, sizeof(plat)) < 0 ||
		    cvm_version_parse(ver, &v) < 0)
			continue;
		keep = by_id ? !strcmp(all[i], spec) : cvm_version_matches(&want, &v);
		keep = keep && (!cuda_major || major == cuda_major) &&
		       (!platform || !strcmp(platform, plat));
		if (keep) {
			out[k++] = all[i];
			all[i] = NULL;
		}
	}
	cvm_strv_free(all, nall);
	*ids = out;
	*n = k;
	return 0;
}

int cvm_store_active_for(struct cvm_store *s, const char *id, char *buf, size_t len)
{
	DIR *d;
	struct dirent *de;
	char target[4096], want[4096];
	size_t o = 0;
	int r;

	buf[0] = '\0';
	r = cvm_fmt(want, sizeof(want), "../versions/%s", id);
	if (r < 0)
		return r;
	r = cvm_opendir_at(s->fd, "active", 0, &d);
	if (r < 0)
		return r == -ENOENT ? 0 : r;
	while ((de = readdir(d))) {
		ssize_t k;
		if (strncmp(de->d_name, "cuda-", 5))
			continue;
		k = readlinkat(dirfd(d), de->d_name, target, sizeof(target) - 1);
		if (k < 0)
			continue;
		target[k] = '\0';
		if (strcmp(target, want))
			continue;
		k = snprintf(buf + o, len - o, "%s%s", o ? "," : "", de->d_name + 5);
		if (k < 0 || (size_t)k >= len - o)
			break;
		o += (size_t)k;
	}
	closedir(d);
	return 0;
}

int cvm_store_resolve(struct cvm_store *s, const char *spec, int cuda_major, const char *cuda,
		      const char *platform, char *id, size_t len)
{
	char **ids = NULL, **any = NULL, ver[64], plat[64];
	size_t n = 0, nany = 0;
	int r, m;

	r = cvm_store_match(s, spec, cuda_major, platform, &ids, &n);
	if (r == -CVM_E_VERSION)
		return cvm_err(r, "invalid version '%s': expected numbers such as 8.9.7 or an id",
			       cvm_safe(spec));
	if (r < 0)
		return r;
	if (n) {
		r = cvm_fmt(id, len, "%s", ids[0]);
		goto out;
	}
	/* install takes a version, not an id (whose CUDA major is the wrong one here): its version. */
	if (cvm_store_parse_id(spec, ver, sizeof(ver), &m, plat, sizeof(plat)) < 0)
		snprintf(ver, sizeof(ver), "%s", spec);
	r = cvm_store_match(s, spec, 0, platform, &any, &nany);
	if (r == 0 && nany)
		r = cvm_err(-CVM_E_NOTFOUND, "cuDNN %s is installed only as %s, a build for another "
			    "CUDA major: CUDA %s needs a cuda%d build ('cudnnvm install %s --cuda %s')",
			    cvm_safe(spec), any[0], cuda, cuda_major, cvm_safe(ver), cuda);
	else if (r == 0)
		r = cvm_err(-CVM_E_NOTFOUND, "cuDNN %s is not installed for CUDA %s ('cudnnvm install "
			    "%s --cuda %s')", cvm_safe(spec), cuda, cvm_safe(ver), cuda);
out:
	cvm_strv_free(ids, n);
	cvm_strv_free(any, nany);
	return r;
}

/* A dry run of a store not made yet: the folder it would be made in. */
static int check_parent(const char *path, struct cvm_trust *t)
{
	char p[4096], *slash;
	int r = -ENOENT;

	snprintf(p, sizeof(p), "%s", path);
	while (r == -ENOENT && (slash = strrchr(p, '/')) && slash != p) {
		*slash = '\0';
		r = cvm_trust_check(p, t);
	}
	return r;
}

int cvm_store_check_safe(struct cvm_store *s, const char *id)
{
	static const char *const subs[] = { "versions", "active", "toolkits", "history", "cache",
					    "backups", ".staging", ".trash" };
	char ver[3][4096];
	const char *names[sizeof(subs) / sizeof(subs[0]) + 3], *why;
	size_t n = 0;
	struct cvm_trust t;
	struct stat st;
	int r;

	/* The store folder and everything on its path from "/", links and their folders included. */
	r = cvm_trust_check(s->path, &t);
	if (r == -ENOENT && cvm_plan_dry(s->plan))
		r = check_parent(s->path, &t);
	if (r == -CVM_E_PERM)
		return cvm_err(r, "refusing the store '%s': '%s' on its path: %s, so the libraries in "
			       "it could be replaced under their users; make every folder on the path "
			       "root's and not writable by others (chmod go-w), or use --user",
			       cvm_safe(s->display), cvm_safe(t.path), t.why);
	if (r < 0)
		return cvm_err(r, "cannot check the store '%s': '%s': %s", cvm_safe(s->display),
			       cvm_safe(t.path), t.why);
	for (size_t i = 0; i < sizeof(subs) / sizeof(subs[0]); i++)
		names[n++] = subs[i];
	if (id && cvm_fmt(ver[0], sizeof(ver[0]), "versions/%s", id) == 0 &&
	    cvm_fmt(ver[1], sizeof(ver[1]), "versions/%s/lib", id) == 0 &&
	    cvm_fmt(ver[2], sizeof(ver[2]), "versions/%s/include", id) == 0) {
		names[n++] = ver[0];
		names[n++] = ver[1];
		names[n++] = ver[2];
	}
	/* Below it, every folder cudnnvm reads or writes: real folders, ours or root's alone. */
	for (size_t i = 0; i < n; i++) {
		if (fstatat(s->fd, names[i], &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		why = S_ISLNK(st.st_mode) ? "it is a symlink" : cvm_trust_stat_why(&st);
		if (why)
			return cvm_err(-CVM_E_PERM, "refusing the store folder '%s/%s': %s, so the "
				       "libraries in it could be replaced under their users; make it "
				       "root's and not writable by others (chmod go-w), or use --user",
				       cvm_safe(s->display), names[i], why);
	}
	return 0;
}

int cvm_active_get(struct cvm_store *s, const char *cuda, char *id, size_t len)
{
	char name[64], target[4096];
	ssize_t k;

	if (len)
		id[0] = '\0';
	if (cvm_fmt(name, sizeof(name), "active/cuda-%s", cuda) < 0)
		return -ENAMETOOLONG;
	k = readlinkat(s->fd, name, target, sizeof(target) - 1);
	if (k < 0)
		return -errno;
	target[k] = '\0';
	if (strncmp(target, "../versions/", 12) || strchr(target + 12, '/'))
		return -ENOENT;
	return cvm_fmt(id, len, "%s", target + 12);
}

int cvm_active_check(struct cvm_store *s, const char *cuda, char *id, size_t len,
		     const char **broken)
{
	char name[64];
	struct stat st;
	int r;

	*broken = NULL;
	if (len)
		id[0] = '\0';
	if (cvm_fmt(name, sizeof(name), "active/cuda-%s", cuda) < 0)
		return -ENAMETOOLONG;
	if (fstatat(s->fd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return -errno;
	if (!S_ISLNK(st.st_mode)) {
		*broken = S_ISDIR(st.st_mode) ? "it is a folder, not the link 'use' writes"
			: S_ISREG(st.st_mode) ? "it is a regular file, not the link 'use' writes"
			: "it is not the link 'use' writes";
		return 0;
	}
	r = cvm_active_get(s, cuda, id, len);
	if (r == -ENOENT) {
		*broken = "it points outside the store's versions folder";
		return 0;
	}
	if (r < 0)
		return r;
	if (!strcmp(id, ".") || !strcmp(id, "..") || !id[0]) {
		*broken = "it points outside the store's versions folder";
		id[0] = '\0';
	} else if (!cvm_store_has(s, id))
		*broken = "the version it names is not installed";
	return 0;
}

/* The toolkits ("11.8") with an entry in STORE/active/, whatever it is. */
static int active_list(struct cvm_store *s, char ***cudas, size_t *n)
{
	struct dirent *de;
	char **v = NULL;
	size_t cap = 0;
	DIR *d;
	int r = 0;

	*cudas = NULL;
	*n = 0;
	r = cvm_opendir_at(s->fd, "active", O_NOFOLLOW, &d);
	if (r < 0)
		return r == -ENOENT ? 0 : r;
	while ((de = readdir(d))) {
		/* What use names them: cuda-X.Y (its temporary names hold more dots). */
		if (strncmp(de->d_name, "cuda-", 5) ||
		    strspn(de->d_name + 5, "0123456789.") != strlen(de->d_name + 5) || !de->d_name[5])
			continue;
		r = CVM_GROW(v, *n + 1, cap);
		if (r < 0)
			break;
		v[*n] = strdup(de->d_name + 5);
		if (!v[*n]) {
			r = -ENOMEM;
			break;
		}
		(*n)++;
	}
	closedir(d);
	*cudas = v;
	if (r < 0) {
		cvm_strv_free(v, *n);
		*cudas = NULL;
		*n = 0;
	}
	return r;
}

int cvm_active_each_broken(struct cvm_store *s, cvm_active_broken_fn fn, void *arg)
{
	char **cudas = NULL, id[160];
	const char *broken;
	size_t n = 0;
	int r, bad = 0;

	r = active_list(s, &cudas, &n);
	for (size_t i = 0; r == 0 && i < n; i++) {
		int k = cvm_active_check(s, cudas[i], id, sizeof(id), &broken);
		if (k == -ENOENT)
			continue;	/* deactivated meanwhile */
		if (k < 0)
			broken = cvm_strerror(-k);
		if (!broken)
			continue;
		bad++;
		fn(arg, cudas[i], id, broken);
	}
	cvm_strv_free(cudas, n);
	return r < 0 ? r : bad;
}

void cvm_store_first(void *arg, const char *rel, const char *why, bool mount)
{
	struct cvm_store_first *f = arg;

	if (f->n++)
		return;
	snprintf(f->rel, sizeof(f->rel), "%s", rel);
	snprintf(f->why, sizeof(f->why), "%s", why);
	f->mount = mount;
}

/* cvm_store_check_version's walk: each object against the rule of trust.h. */
struct version_walk {
	cvm_store_problem_fn fn;
	void *arg;
	int bad;
};

static int check_object(void *arg, int dirfd, const char *name, const char *rel,
			const struct stat *st, enum cvm_walk_event ev)
{
	struct version_walk *w = arg;
	char why[192];

	(void)dirfd;
	(void)name;
	if (ev == CVM_WALK_DIR_DONE)
		return 0;
	if (ev == CVM_WALK_MOUNT) {
		w->fn(w->arg, rel, "a mount point: another file system is mounted there (not entered)",
		      true);
		w->bad++;
	} else if (cvm_trust_installed_why(st, why, sizeof(why))) {
		w->fn(w->arg, rel, why, false);
		w->bad++;
	}
	return 0;
}

int cvm_store_check_version(struct cvm_store *s, const char *id, cvm_store_problem_fn fn, void *arg)
{
	struct version_walk w = { .fn = fn, .arg = arg };
	char path[4096], why[1024];
	struct cvm_trust t;
	struct stat st;
	int fd, r;

	/* The folders above it, as the smoke test's loader would reach them. */
	r = cvm_fmt(path, sizeof(path), "%s/versions", s->path);
	if (r == 0)
		r = cvm_trust_check(path, &t);
	if (r == -CVM_E_PERM) {
		snprintf(why, sizeof(why), "'%.600s' on its path: %s", cvm_safe(t.path), t.why);
		fn(arg, ".", why, false);
		w.bad++;
	} else if (r < 0) {
		return r;
	}
	fd = cvm_store_open_version(s, id);
	if (fd < 0)
		return fd;
	if (fstat(fd, &st) < 0) {
		r = -errno;
		close(fd);
		return r;
	}
	if (cvm_trust_installed_why(&st, why, sizeof(why))) {
		fn(arg, ".", why, false);
		w.bad++;
	}
	r = cvm_walk_at(fd, check_object, &w);
	close(fd);
	return r < 0 ? r : w.bad;
}

int cvm_store_locate(const char *root, const char *given, bool user, char *path, size_t plen,
		     char *display, size_t dlen)
{
	const char *home, *xdg = getenv("XDG_DATA_HOME");
	char conf[4096];
	size_t rl = strlen(root);
	int r;

	if (given && *given) {
#ifdef _WIN32
		/* C:\x or \\host\share: as given (the Windows API makes it absolute). */
		r = cvm_fmt(path, plen, "%s", given);
	} else {
		/* %ProgramData%\cudnnvm, or %LOCALAPPDATA%\cudnnvm for one user. */
		const char *var = user ? "LOCALAPPDATA" : "ProgramData";
		const char *base = getenv(var);

		(void)home;
		(void)xdg;
		(void)conf;
		if (!base || !*base)
			return cvm_err(-ENOENT, "%%%s%% is not set: give --store DIR", var);
		r = cvm_fmt(path, plen, "%s\\cudnnvm", base);
	}
#else
		/* Relative: the toolkit's links and the ld.so.conf.d line must not depend on where we ran. */
		r = cvm_abspath(given, path, plen);
	} else if (!user && (r = cvm_config_get(root, "store", conf, sizeof(conf))) != 0) {
		if (r < 0)
			return r;
		if (conf[0] != '/')
			return cvm_err(-CVM_E_USAGE, "'/etc/cudnnvm.conf': store '%s' is not an absolute "
				       "path", cvm_safe(conf));
		if (strpbrk(conf, "#"))
			return cvm_err(-CVM_E_USAGE, "'/etc/cudnnvm.conf': store '%s': a '#' in the path "
				       "(ldconfig would read the store's library folder cut there)",
				       cvm_safe(conf));
		r = cvm_fmt(path, plen, "%s%s", root, conf);
	} else if (user) {
		home = getenv("HOME");
		if (!home || !*home)
			return cvm_err(-ENOENT, "--user: HOME is not set");
		r = xdg && *xdg ? cvm_fmt(path, plen, "%s/cudnnvm", xdg)
				: cvm_fmt(path, plen, "%s/.local/share/cudnnvm", home);
	} else {
		r = cvm_fmt(path, plen, "%s%s", root, "/opt/cudnnvm");
	}
#endif
	if (r < 0)
		return cvm_err(r, "store path too long");
#ifdef _WIN32
	/* One separator inside, '/' (the Windows API takes both). */
	for (char *c = path; *c; c++)
		if (*c == '\\')
			*c = '/';
#endif
	/* Shown as seen inside the root when it lies there. */
	if (rl && !strncmp(path, root, rl) && path[rl] == '/')
		return cvm_fmt(display, dlen, "%s", path + rl);
	return cvm_fmt(display, dlen, "%s", path);
}
