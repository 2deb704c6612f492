/* SPDX-License-Identifier: MIT */
/*
 * adopt: a cuDNN copied into a toolkit by hand becomes a version in the
 * store, and its files in the toolkit become managed links to the same
 * bytes, so that use and rollback work from then on. Order: copy into
 * staging, commit the version, then replace each toolkit file by a link
 * with one rename: at every instant every path resolves to the same bytes,
 * and running adopt again finishes an interrupted one.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "activate.h"
#include "alloc.h"
#include "cli.h"
#include "cudnn.h"
#include "digest.h"
#include "error.h"
#include "fault.h"
#include "fsutil.h"
#include "journal.h"
#include "manifest.h"
#include "out.h"
#include "plan.h"
#include "record.h"
#include "release.h"
#include "ccgate.h"
#include "compat.h"
#include "store.h"
#include "trust.h"
#include "zlibwapi.h"

/*
 * The cuDNN objects found in the toolkit's folders: names[i] ("include/cudnn.h",
 * "lib/libcudnn.so.8"; an array of its own, for cvm_activate_opts.files) and
 * obj[i], what lstat said of it when it was found. Owned here (found_release).
 */
struct found_obj {
	struct stat st;
	char *body;		/* a link's body; NULL for anything else */
	size_t file;		/* the found regular file it is, or its links lead to (check_found) */
};

struct found {
	char **names;
	struct found_obj *obj;
	size_t n, cap, obj_cap;	/* cap: names'; each array grows on its own */
};

/*
 * Where a hand install puts cuDNN in a toolkit, and where the same files go
 * in the version: include/ and lib/ (libcudnn*) on Linux; include\, bin\
 * (the DLLs) and lib\x64\ (the import .libs) on Windows.
 */
struct hand_dir {
	const char *sub, *prefix;
	char dir[PATH_MAX];	/* the toolkit's, as seen inside the root */
};

/* The toolkit folder that found name ("bin/cudnn64_9.dll") came from, and the name in it. */
static const char *source_of(const struct hand_dir *hd, size_t nhd, const char *name,
			     const char **leaf)
{
	for (size_t i = 0; i < nhd; i++) {
		size_t l = strlen(hd[i].sub);
		if (!strncmp(name, hd[i].sub, l) && name[l] == '/' && !strchr(name + l + 1, '/')) {
			*leaf = name + l + 1;
			return hd[i].dir;
		}
	}
	*leaf = name;
	return "";
}

/* The hand copy of one toolkit: its folders, what was found there, and where it goes. */
struct hand_copy {
	const char *root;		/* the --root prefix, "" for none */
	const struct hand_dir *hd;
	size_t nhd;
	struct found *f;
	int store_fd;
	const char *cuda;		/* "12.4" */
};

static int found_add(struct found *f, const char *sub, const char *name, const struct stat *st,
		     const char *body)
{
	char buf[512];
	int r;

	if (snprintf(buf, sizeof(buf), "%s/%s", sub, name) >= (int)sizeof(buf))
		return -ENAMETOOLONG;
	r = CVM_GROW(f->names, f->n + 1, f->cap);
	if (r == 0)
		r = CVM_GROW(f->obj, f->n + 1, f->obj_cap);
	if (r < 0)
		return r;
	struct found_obj o = { .st = *st };
	char *n = strdup(buf);
	o.body = body ? strdup(body) : NULL;
	if (!n || (body && !o.body)) {
		free(n);
		free(o.body);
		return -ENOMEM;
	}
	/* In name order, whatever readdir's: the first refusal, and every message, is the same each run. */
	size_t at = f->n;
	while (at > 0 && strcmp(f->names[at - 1], n) > 0)
		at--;
	memmove(f->names + at + 1, f->names + at, (f->n - at) * sizeof(*f->names));
	memmove(f->obj + at + 1, f->obj + at, (f->n - at) * sizeof(*f->obj));
	f->names[at] = n;
	f->obj[at] = o;
	f->n++;
	return 0;
}

static void found_release(struct found *f)
{
	for (size_t i = 0; i < f->n; i++) {
		free(f->names[i]);
		free(f->obj[i].body);
	}
	free(f->names);
	free(f->obj);
}

static bool is_managed(char **managed, size_t n, const char *path)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(managed[i], path))
			return true;
	return false;
}

/* The cuDNN objects in one toolkit folder that cudnnvm did not make, as they are now. */
static int scan(const char *root, const char *dir, const char *sub, const char *prefix,
		char **managed, size_t nm, struct found *f)
{
	char host[PATH_MAX], inner[PATH_MAX], body[PATH_MAX];
	struct dirent *de;
	DIR *d;
	int r = 0;

	if (cvm_fmt(host, sizeof(host), "%s%s", root, dir) < 0)
		return -ENAMETOOLONG;
	d = opendir(host);
	if (!d)
		return errno == ENOENT ? 0 : -errno;
	while (r == 0 && (de = readdir(d))) {
		struct stat st;
		ssize_t k = 0;

		if (strncmp(de->d_name, prefix, strlen(prefix)) || strstr(de->d_name, ".tmp."))
			continue;
		if (cvm_fmt(inner, sizeof(inner), "%s/%s", dir, de->d_name) < 0)
			continue;
		if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
			r = errno == ENOENT ? 0 : -errno;
			continue;
		}
		/* A recorded path that is a file again is what an interrupted adopt left. */
		if (S_ISLNK(st.st_mode) && is_managed(managed, nm, inner))
			continue;
		if (S_ISLNK(st.st_mode) &&
		    (k = readlinkat(dirfd(d), de->d_name, body, sizeof(body) - 1)) < 0) {
			r = -errno;
			continue;
		}
		body[k] = '\0';
		r = found_add(f, sub, de->d_name, &st, S_ISLNK(st.st_mode) ? body : NULL);
	}
	closedir(d);
	return r;
}

/* The toolkit path of found name, as seen inside the root, for messages. */
static const char *tk_path(const struct hand_copy *hc, const char *name, char *buf, size_t len)
{
	const char *leaf, *dir = source_of(hc->hd, hc->nhd, name, &leaf);

	snprintf(buf, len, "%s/%s", dir, leaf);
	return buf;
}

/* A refusal of the object found as name, and why: -CVM_E_UNSAFE, printed. */
static int refuse(const struct hand_copy *hc, const char *name, const char *why)
{
	char path[PATH_MAX];

	return cvm_err(-CVM_E_UNSAFE, "refusing to adopt '%s': %s; nothing changed",
		       cvm_safe(tk_path(hc, name, path, sizeof(path))), why);
}

/* The found object in the same folder as name whose name there is leaf, or f->n. */
static size_t sibling(const struct found *f, const char *name, const char *leaf)
{
	size_t dl = (size_t)(strrchr(name, '/') - name) + 1;

	for (size_t j = 0; j < f->n; j++)
		if (!strncmp(f->names[j], name, dl) && !strcmp(f->names[j] + dl, leaf))
			return j;
	return f->n;
}

/*
 * Whether st is also STORE/backups/<id>/<name>: the original that an adopt
 * kept (a hard link, activate_linux.c) before it was interrupted.
 */
static bool backed_up(const struct hand_copy *hc, const char *name, const struct stat *st)
{
	char rel[PATH_MAX];
	struct dirent *de;
	struct stat b;
	bool yes = false;
	int fd = openat(hc->store_fd, "backups", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;

	if (!d) {
		if (fd >= 0)
			close(fd);
		return false;
	}
	while (!yes && (de = readdir(d)))
		yes = de->d_name[0] != '.' &&
		      cvm_fmt(rel, sizeof(rel), "%s/%s", de->d_name, name) == 0 &&
		      fstatat(dirfd(d), rel, &b, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(b.st_mode) &&
		      b.st_dev == st->st_dev && b.st_ino == st->st_ino;
	closedir(d);
	return yes;
}

/* Why found object i, not a link, cannot be adopted as a file (NULL: it can). */
static const char *file_why(const struct hand_copy *hc, size_t i, char *buf, size_t len)
{
	const struct found *f = hc->f;
	const struct stat *st = &f->obj[i].st;
	uintmax_t inside = 0;
	const char *why;

	if (S_ISDIR(st->st_mode))
		return "a folder, not a regular file";
	if (S_ISFIFO(st->st_mode))
		return "a FIFO, not a regular file";
	if (S_ISCHR(st->st_mode) || S_ISBLK(st->st_mode))
		return "a device, not a regular file";
	if (!S_ISREG(st->st_mode))
		return "a socket or another special file, not a regular file";
	why = cvm_trust_stat_why(st);
	if (why) {
		snprintf(buf, len, "%s (uid %u, mode %04o)", why, (unsigned)st->st_uid,
			 (unsigned)(st->st_mode & 07777));
		return buf;
	}
	/* The store gives every user what it holds (0644/0755, as verify and use require). */
	if ((st->st_mode & 0444) != 0444) {
		snprintf(buf, len, "mode %04o: not every user may read it, and the store would let "
			 "them ('chmod a+r' it first if every user is meant to load it)",
			 (unsigned)(st->st_mode & 07777));
		return buf;
	}
	for (size_t j = 0; j < f->n; j++)
		inside += S_ISREG(f->obj[j].st.st_mode) && f->obj[j].st.st_dev == st->st_dev &&
			  f->obj[j].st.st_ino == st->st_ino;
	if ((uintmax_t)st->st_nlink > inside && backed_up(hc, f->names[i], st))
		inside++;
	if ((uintmax_t)st->st_nlink > inside) {
		snprintf(buf, len, "a file with %ju names (hard links), %ju of them in the hand copy: "
			 "the others could be any file", (uintmax_t)st->st_nlink, inside);
		return buf;
	}
	return NULL;
}

/* Why link i cannot be adopted as it is (NULL: it names another found object beside it). */
static const char *link_why(const struct found *f, size_t i, char *buf, size_t len)
{
	const char *body = f->obj[i].body;

	if (CVM_WINDOWS)
		return "a link (a symbolic link, junction or link file), which no hand copy of cuDNN "
		       "has on Windows";
	if (strchr(body, '/'))
		snprintf(buf, len, "a link pointing outside the hand copy (to '%s')", cvm_safe(body));
	else if (sibling(f, f->names[i], body) == f->n)
		snprintf(buf, len, "a link to '%s', which is not a file of the hand copy",
			 cvm_safe(body));
	else
		return NULL;
	return buf;
}

/*
 * adopt takes what NVIDIA's layout has and nothing else, before it reads or
 * copies anything: regular files owned by root or the caller that no one
 * else can write (trust.h), all of whose names (hard links) are in the hand
 * copy (or the backup an interrupted adopt kept), and links whose body names another of them in the same folder
 * (libcudnn.so -> libcudnn.so.9 -> libcudnn.so.9.1.0). Anything else could
 * have root publish what nobody chose: a link's target or a hard link's
 * other name may be a file only root can reach (/etc/shadow, or a 0644 file
 * in a 0700 folder), whose bytes would then be in the store; a FIFO would
 * hang adopt with the store locked; a file another user can write holds
 * what that user chose, for every program of the toolkit to load. Links are
 * resolved here, one name at a time (obj[].file), and the kernel never
 * follows one. On Windows a hand copy has no links: every one is refused.
 * Files first, then each link's own body, then the chains, so that the
 * refusal names the object at fault. 0, or -CVM_E_UNSAFE (printed).
 */
static int check_found(const struct hand_copy *hc)
{
	struct found *f = hc->f;
	char buf[PATH_MAX + 128];
	const char *why;

	for (size_t i = 0; i < f->n; i++)
		if (!S_ISLNK(f->obj[i].st.st_mode) && (why = file_why(hc, i, buf, sizeof(buf))))
			return refuse(hc, f->names[i], why);
	for (size_t i = 0; i < f->n; i++)
		if (S_ISLNK(f->obj[i].st.st_mode) && (why = link_why(f, i, buf, sizeof(buf))))
			return refuse(hc, f->names[i], why);
	for (size_t i = 0; i < f->n; i++) {
		size_t cur = i, hops = 0;
		while (S_ISLNK(f->obj[cur].st.st_mode) && hops++ <= f->n)
			cur = sibling(f, f->names[cur], f->obj[cur].body);
		if (S_ISLNK(f->obj[cur].st.st_mode))
			return refuse(hc, f->names[i], "a loop of links");
		f->obj[i].file = cur;
	}
	return 0;
}

/* Whether a and b are one file, unchanged: the same inode, owner, mode, names, size and time. */
static bool same_file(const struct stat *a, const struct stat *b)
{
	return a->st_dev == b->st_dev && a->st_ino == b->st_ino && a->st_mode == b->st_mode &&
	       a->st_uid == b->st_uid && a->st_gid == b->st_gid && a->st_nlink == b->st_nlink &&
	       a->st_size == b->st_size && a->st_mtim.tv_sec == b->st_mtim.tv_sec &&
	       a->st_mtim.tv_nsec == b->st_mtim.tv_nsec;
}

/*
 * Opens the regular file found object i is, or leads to (check_found), for
 * reading: never through a link (O_NOFOLLOW), never waiting (O_NONBLOCK),
 * and only when it is still the file check_found took (same_file: nothing
 * was renamed, linked or written in between). *fd, or -CVM_E_UNSAFE or an
 * error, printed.
 */
static int open_found(const struct hand_copy *hc, size_t i, int *fd)
{
	const struct found *f = hc->f;
	char path[PATH_MAX];
	size_t k = f->obj[i].file;
	const char *leaf, *dir = source_of(hc->hd, hc->nhd, f->names[k], &leaf);
	struct stat st;
	int r;

	*fd = -1;
	r = cvm_fmt(path, sizeof(path), "%s%s/%s", hc->root, dir, leaf);
	if (r == 0)
		*fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (r == 0)
		r = *fd < 0 ? -errno : fstat(*fd, &st) < 0 ? -errno : 0;
	if (r == -ELOOP)
		return refuse(hc, f->names[k], "a link or another reparse point, not a "
			      "regular file");
	if (r == 0 && !same_file(&st, &f->obj[k].st))
		r = refuse(hc, f->names[k], "it changed while cudnnvm was adopting it");
	else if (r < 0)
		r = cvm_err(r, "cannot open '%s': %s", cvm_safe(tk_path(hc, f->names[k], path,
									 sizeof(path))), cvm_strerror(-r));
	if (r < 0 && *fd >= 0) {
		close(*fd);
		*fd = -1;
	}
	return r;
}

/*
 * The mode of the store's copy of a file of mode st: what install gives
 * (0755 when the source may be run, else 0644), never a write bit for
 * others nor a set-id bit; file_why refused a source not every user reads.
 */
static mode_t copy_mode(const struct stat *src)
{
	return src->st_mode & 0111 ? 0755 : 0644;
}

/*
 * Copies found object i into staging: a link stays the link check_found
 * took (its body then, not whatever is there now); a file is copied and
 * hashed from the descriptor open_found checked, and refused when it
 * changed while it was read. Prints its errors.
 */
static int copy_one(const struct hand_copy *hc, size_t i, int sfd, struct cvm_filelist *files)
{
	const struct found *f = hc->f;
	const char *rel = f->names[i], *body = f->obj[i].body;
	char hex[CVM_SHA256_HEX], shown[PATH_MAX];
	struct cvm_sha256 *sha = NULL;
	uint8_t d[CVM_SHA256_LEN], *buf = NULL;
	uint64_t size = 0;
	struct stat st;
	int in = -1, out = -1, r = 0;
	ssize_t k;
	mode_t mode;

	if (body) {
		r = symlinkat(body, sfd, rel) < 0 ? -errno : cvm_filelist_add(files, rel, body, NULL, 0,
									     0777);
		return r < 0 ? cvm_err(r, "cannot copy the link '%s' into the store: %s",
				       cvm_safe(tk_path(hc, rel, shown, sizeof(shown))), cvm_strerror(-r)) : 0;
	}
	cvm_fault("adopt-open");
	r = open_found(hc, i, &in);
	if (r < 0)
		return r;
	cvm_fault("adopt-read");
	/* Private until its mode is set: the copy is never readable by more than the source. */
	out = openat(sfd, rel, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	sha = cvm_sha256_new();
	buf = malloc(1 << 20);
	if (out < 0 || !sha || !buf) {
		r = out < 0 ? -errno : -ENOMEM;
		goto out;
	}
	while ((k = read(in, buf, 1 << 20)) > 0) {
		r = cvm_sha256_update(sha, buf, (size_t)k);
		if (r == 0)
			r = cvm_write_all(out, buf, (size_t)k);
		if (r < 0)
			goto out;
		size += (uint64_t)k;
	}
	if (k < 0 || fstat(in, &st) < 0) {
		r = -errno;
		goto out;
	}
	if (!same_file(&st, &f->obj[i].st) || size != (uint64_t)st.st_size) {
		r = refuse(hc, rel, "it changed while cudnnvm was copying it");
		goto out;
	}
	mode = copy_mode(&st);
	r = fchmod(out, mode) < 0 ? -errno : cvm_sha256_final(sha, d);
	if (r == 0) {
		cvm_hex_encode(d, sizeof(d), hex);
		r = cvm_filelist_add(files, rel, NULL, hex, size, mode);
	}
out:
	/* A refusal is printed already. */
	if (r < 0 && r != -CVM_E_UNSAFE)
		r = cvm_err(r, "cannot copy '%s' into the store: %s",
			    cvm_safe(tk_path(hc, rel, shown, sizeof(shown))), cvm_strerror(-r));
	free(buf);
	cvm_sha256_free(sha);
	if (out >= 0)
		close(out);
	close(in);
	return r;
}

/* Windows: cudnn64_<major>.dll is there, and every cudnn*64_<N>.dll has the headers' major. */
static int identify_dlls(const char *bin, const struct found *f, const struct cvm_version *v)
{
	char want[32];
	bool have_main = false;

	snprintf(want, sizeof(want), "bin/cudnn64_%u.dll", v->part[0]);
	for (size_t i = 0; i < f->n; i++) {
		const char *u = strrchr(f->names[i], '_');
		unsigned m = 0;
		char tail[8] = "";

		if (strncmp(f->names[i], "bin/", 4))
			continue;
		if (!strcasecmp(f->names[i], want))
			have_main = true;
		if (u && sscanf(u + 1, "%u.%7s", &m, tail) == 2 && !strcasecmp(tail, "dll") &&
		    m != v->part[0])
			return cvm_err(-CVM_E_LAYOUT, "'%s/%s' is cuDNN %u, but the headers say %u.%u.%u: "
				       "a mixed copy; put one version back by hand first", cvm_safe(bin),
				       cvm_safe(f->names[i] + 4), m, v->part[0], v->part[1], v->part[2]);
	}
	if (!have_main)
		return cvm_err(-CVM_E_LAYOUT, "the headers say cuDNN %u.%u.%u but '%s' has no "
			       "cudnn64_%u.dll: nothing whole to adopt", v->part[0], v->part[1],
			       v->part[2], cvm_safe(bin), v->part[0]);
	return 0;
}

/*
 * The version the header include/<name> declares: read from the found file
 * (open_found), or, where the toolkit has a link cudnnvm recorded there (an
 * interrupted adopt), from the store's active version, which that link
 * leads to. 0, -CVM_E_NOTFOUND (no such header, or no macros), or a refusal
 * or error of open_found (printed).
 */
static int header_version(const struct hand_copy *hc, const char *name, struct cvm_version *v)
{
	const struct found *f = hc->f;
	char rel[PATH_MAX], *text = NULL;
	size_t i, len = 0;
	int fd, r;

	for (i = 0; i < f->n && strcmp(f->names[i], name); i++)
		;
	if (i < f->n) {
		r = open_found(hc, i, &fd);
		if (r < 0)
			return r;
		r = cvm_read_fd(fd, 1 << 20, &text, &len);
		close(fd);
	} else {
		r = cvm_fmt(rel, sizeof(rel), "active/cuda-%s/%s", hc->cuda, name);
		if (r == 0)
			r = cvm_read_file_at(hc->store_fd, rel, 1 << 20, &text, &len);
	}
	if (r == 0)
		r = cvm_cudnn_header_version(text, len, v);
	free(text);
	return r < 0 ? -CVM_E_NOTFOUND : 0;
}

/* Headers and sonames must tell one story before anything is adopted. */
static int identify(const struct hand_copy *hc, struct cvm_version *v)
{
	const struct found *f = hc->f;
	const char *inc = hc->hd[0].dir, *lib = hc->hd[1].dir, *root = hc->root;
	char path[PATH_MAX], want[32];
	int r;

	r = header_version(hc, "include/cudnn_version.h", v);
	if (r == -CVM_E_NOTFOUND)
		r = header_version(hc, "include/cudnn.h", v);
	if (r == -CVM_E_NOTFOUND)
		return cvm_err(-CVM_E_LAYOUT, "no cuDNN version macros in '%s/cudnn_version.h' or "
			       "'cudnn.h': nothing to adopt", cvm_safe(inc));
	if (r < 0)
		return r;
	if (CVM_WINDOWS)
		return identify_dlls(lib, f, v);
	snprintf(want, sizeof(want), "libcudnn.so.%u", v->part[0]);
	bool have_main = false;
	for (size_t i = 0; i < f->n; i++) {
		const char *name = f->names[i] + 4, *so = strstr(name, ".so.");
		if (strncmp(f->names[i], "lib/", 4) || !so)
			continue;
		if (!strcmp(name, want))
			have_main = true;
		unsigned a = 0, b = 0, c = 0;
		int got = sscanf(so + 4, "%u.%u.%u", &a, &b, &c);
		if (got >= 1 && a != v->part[0])
			return cvm_err(-CVM_E_LAYOUT, "'%s/%s' is cuDNN %u, but the headers in '%s' say "
				       "%u.%u.%u: a mixed copy; put one version back by hand first",
				       cvm_safe(lib), cvm_safe(name), a, cvm_safe(inc), v->part[0],
				       v->part[1], v->part[2]);
		if (got == 3 && (b != v->part[1] || c != v->part[2]))
			return cvm_err(-CVM_E_LAYOUT, "'%s/%s' is cuDNN %u.%u.%u, but the headers say "
				       "%u.%u.%u: a mixed copy; put one version back by hand first",
				       cvm_safe(lib), cvm_safe(name), a, b, c, v->part[0], v->part[1],
				       v->part[2]);
	}
	/* On a second run (an interrupted adopt) it may be one of our links already. */
	if (!have_main && cvm_fmt(path, sizeof(path), "%s%s/%s", root, lib, want) == 0 &&
	    access(path, R_OK) == 0)
		have_main = true;
	if (!have_main)
		return cvm_err(-CVM_E_LAYOUT, "the headers in '%s' say cuDNN %u.%u.%u but '%s' has no "
			       "%s: nothing whole to adopt", cvm_safe(inc), v->part[0], v->part[1],
			       v->part[2], cvm_safe(lib), want);
	return 0;
}

/* A dry run: each copy into the store, and the version it makes. */
static int plan_copy(struct cvm_ctx *ctx, const struct hand_copy *hc, const char *id)
{
	const struct found *f = hc->f;
	char src[PATH_MAX], dst[PATH_MAX];

	for (size_t i = 0; i < f->n; i++) {
		const char *leaf, *dir = source_of(hc->hd, hc->nhd, f->names[i], &leaf);
		if (cvm_fmt(src, sizeof(src), "%s/%s", dir, leaf) < 0 ||
		    cvm_fmt(dst, sizeof(dst), "%s/versions/%s/%s", ctx->store.display, id,
			    f->names[i]) < 0)
			return -ENAMETOOLONG;
		cvm_plan_describe(&ctx->plan, "copy", src, NULL, "to %s", cvm_safe(dst));
	}
	if (cvm_fmt(dst, sizeof(dst), "%s/versions/%s", ctx->store.display, id) < 0)
		return -ENAMETOOLONG;
	cvm_plan_describe(&ctx->plan, "create", dst, NULL, "(the %zu files above, with its record)", f->n);
	return 0;
}

static int stage_copy(struct cvm_ctx *ctx, const struct cvm_toolkit *tk, const struct hand_copy *hc,
		      const char *id, const struct cvm_version *v, const char *release)
{
	const char *lib = hc->hd[1].dir;
	struct cvm_filelist files = { 0 };
	struct cvm_cudnn_tree tree;
	struct cvm_record rec = { 0 };
	char staged[256] = "", from[PATH_MAX + 32];
	int sfd = -1, r;

	if (cvm_plan_dry(&ctx->plan))
		return plan_copy(ctx, hc, id);
	r = cvm_store_stage(&ctx->store, id, staged, sizeof(staged), &sfd);
	if (r < 0)
		return r;
	for (size_t i = 0; i < hc->nhd; i++) {
		r = cvm_mkdir_p_at(sfd, hc->hd[i].sub, 0755);
		if (r < 0) {
			r = cvm_err(r, "cannot create the staging folders: %s", cvm_strerror(-r));
			goto out;
		}
	}
	for (size_t i = 0; r == 0 && i < hc->f->n; i++)
		r = copy_one(hc, i, sfd, &files);
	if (r < 0)
		goto out;
	r = cvm_cudnn_check_tree(sfd, tk->display, &tree);
	if (r < 0)
		goto out;
	/* One release per version: the copy in the toolkit must not mix releases (ELF: Linux's). */
	if (!tree.windows) {
		struct cvm_release_odd *odd = NULL;
		size_t nodd = 0;
		r = cvm_release_check(sfd, release, NULL, &odd, &nodd);
		if (r < 0)
			r = cvm_err(r, "cannot read the libraries in '%s': %s", cvm_safe(lib),
				    cvm_strerror(-r));
		else if (nodd)
			r = cvm_release_refuse(lib, release, odd, nodd);
		free(odd);
		if (r < 0)
			goto out;
	}
	r = tree.windows ? 0 : cvm_ccgate_scan(sfd, NULL, &rec.archs);
	if (r < 0) {
		r = cvm_err(r, "cannot read the libraries in '%s': %s", cvm_safe(lib), cvm_strerror(-r));
		goto out;
	}
	/* cuDNN 8.3 to 8.x on Windows loads zlibwapi.dll, which a hand copy seldom has. */
	if (cvm_zlibwapi_needed(tree.windows, v)) {
		r = cvm_zlibwapi_place(sfd, id, &files);
		if (r < 0)
			goto out;
	}
	snprintf(from, sizeof(from), "adopted from %s", tk->display);
	rec.id = (char *)id;
	rec.version = (char *)release;
	rec.release = (char *)release;
	rec.platform = (char *)cvm_host_platform();
	rec.cuda_major = tk->major;
	rec.archive = from;
	rec.installed_at = (int64_t)time(NULL);
	rec.installed_by = (char *)cvm_user_name();
	rec.cudnn_version = cvm_version_encode(v);
	rec.library = tree.library;
	r = cvm_record_write(sfd, &rec, &files);
	if (r < 0) {
		r = cvm_err(r, "cannot write the record of %s: %s", id, cvm_strerror(-r));
		goto out;
	}
	cvm_fault("adopt-staged");
	r = cvm_store_commit(&ctx->store, staged, id, false);
	if (r == 0)
		staged[0] = '\0';
out:
	if (staged[0])
		cvm_store_discard(&ctx->store, staged);
	if (sfd >= 0)
		close(sfd);
	cvm_filelist_release(&files);
	return r;
}

int cvm_cmd_adopt(struct cvm_ctx *ctx, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "cuda", required_argument, NULL, 'c' },
		{ "no-ldconfig", no_argument, NULL, 'L' },
		CVM_DRYRUN_LONGOPT,
		CVM_COMMON_LONGOPTS,
		{ NULL, 0, NULL, 0 }
	};
	struct cvm_activate_opts o = { .kind = "adopt", .no_smoke = true, .adopt = true,
				       .argc = argc, .argv = argv };
	const struct cvm_backend *be = cvm_backend();
	struct cvm_toolkit tk = { 0 };
	struct cvm_version v;
	struct found f = { 0 };
	char **managed = NULL, cuda[16], release[32], id[160];
	char active[160];
	const char *cuda_arg = NULL;
	size_t nm = 0;
	int c, r;

	while ((c = cvm_cli_getopt(argc, argv, opts)) != -1) {
		if (c == 'c')
			cuda_arg = optarg;
		else if (c == 'L')
			o.no_ldconfig = true;
		else
			return cvm_usage_bad_option("adopt", argv);
	}
	if (optind != argc)
		return cvm_usage_unexpected("adopt", argv);
	/* The hand copy is the machine's (a toolkit's folders), on Windows too. */
	r = CVM_WINDOWS && ctx->user ? cvm_err(-CVM_E_PERM, "adopt: a toolkit's files are the "
					       "machine's: run it without --user, elevated")
				     : cvm_cli_refuse_user(ctx, "adopt");
	if (r == 0)
		r = cvm_toolkit_select(ctx->root, cuda_arg, &tk);
	if (r < 0)
		return r;
	cvm_toolkit_name(&tk, cuda, sizeof(cuda));
	struct cvm_switch sw = { .store = &ctx->store, .root = ctx->root, .tk = &tk, .cuda = cuda };
	struct hand_dir hd[3] = { { "include", "cudnn", "" }, { CVM_WINDOWS ? "bin" : "lib",
				  CVM_WINDOWS ? "cudnn" : "libcudnn", "" }, { "lib/x64", "cudnn", "" } };
	size_t nhd = CVM_WINDOWS ? 3 : 2;
	struct hand_copy hc = { .root = ctx->root, .hd = hd, .nhd = nhd, .f = &f,
				.store_fd = ctx->store.fd, .cuda = cuda };
	r = be->dirs(&sw, hd[0].dir, hd[1].dir, sizeof(hd[0].dir));
	if (r == 0 && CVM_WINDOWS)
		r = cvm_fmt(hd[2].dir, sizeof(hd[2].dir), "%s/lib/x64", tk.display);
	if (r == 0)
		r = be->managed(&sw, &managed, &nm);
	for (size_t i = 0; r == 0 && i < nhd; i++)
		r = scan(ctx->root, hd[i].dir, hd[i].sub, hd[i].prefix, managed, nm, &f);
	if (r < 0) {
		if (r != -CVM_E_NOTFOUND)
			r = cvm_err(r, "cannot read the toolkit '%s': %s", cvm_safe(tk.display),
				    cvm_strerror(-r));
		goto out;
	}
	if (!f.n) {
		r = cvm_err(-CVM_E_NOTFOUND, "CUDA %s (%s) holds no hand-copied cuDNN: nothing to adopt",
			    cuda, tk.display);
		goto out;
	}
	/* Before anything is read, planned or copied, a dry run too. */
	r = check_found(&hc);
	if (r < 0)
		goto out;
	r = identify(&hc, &v);
	if (r < 0)
		goto out;
	cvm_version_format(&v, release, sizeof(release));
	r = cvm_store_id(id, sizeof(id), release, tk.major, cvm_host_platform());
	if (r < 0)
		goto out;
	if (cvm_active_get(&ctx->store, cuda, active, sizeof(active)) == 0 && strcmp(active, id)) {
		r = cvm_err(-CVM_E_CONFLICT, "CUDA %s already has %s active through cudnnvm, and "
			    "hand-copied cuDNN files beside it (e.g. '%s'): remove those by hand",
			    cuda, active, f.names[0]);
		goto out;
	}
	/* Already in the store: an adopt that was interrupted after the copy; finish it. */
	if (!cvm_store_has(&ctx->store, id)) {
		r = stage_copy(ctx, &tk, &hc, id, &v, release);
		if (r < 0)
			goto out;
		/* A dry run copied nothing: the switch is planned from the toolkit's names. */
		if (cvm_plan_dry(&ctx->plan)) {
			o.files = f.names;
			o.nfiles = f.n;
		} else {
			cvm_verbose("copied %zu files of cuDNN %s into %s", f.n, release, id);
		}
	}
	r = cvm_activate(ctx, &tk, id, &o);
	if (r < 0)
		goto out;
	if (cvm_plan_dry(&ctx->plan))
		cvm_info("dry run: cuDNN %s of CUDA %s (%s) would be adopted as %s (%zu files); "
			 "nothing was changed", release, cuda, tk.display, id, f.n);
	else if (CVM_WINDOWS)
		cvm_info("adopted cuDNN %s of CUDA %s (%s) as %s: its %zu files moved to %s/backups/%s, "
			 "and PATH finds the store's copy of the same bytes", release, cuda, tk.display,
			 id, f.n, ctx->store.display, id);
	else
		cvm_info("adopted cuDNN %s of CUDA %s (%s) as %s: its %zu files are links into the "
			 "store now (originals kept in %s/backups/%s)", release, cuda, tk.display, id,
			 f.n, ctx->store.display, id);
out:
	found_release(&f);
	cvm_strv_free(managed, nm);
	cvm_toolkit_release(&tk);
	return r;
}
