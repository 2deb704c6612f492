/* SPDX-License-Identifier: MIT */
/*
 * The Linux activation backend: in the toolkit, include/cudnn*.h and
 * <libdir>/libcudnn* become symlinks through STORE/active/cuda-<X.Y>/, so a
 * switch between versions with the same file set is the one rename of that
 * link; ROOT/etc/ld.so.conf.d/cudnnvm-cuda-<X.Y>.conf names its lib folder,
 * and ldconfig runs only when that file or the set of sonames changes.
 * What cudnnvm created in each toolkit is listed in
 * STORE/toolkits/cuda-<X.Y>.links; nothing else is ever replaced or removed.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "activate.h"
#include "alloc.h"
#include "digest.h"
#include "error.h"
#include "fault.h"
#include "fsutil.h"
#include "out.h"
#include "plan.h"
#include "proc.h"
#include "store.h"
#include "trust.h"

/* A set of in-root paths, each with the link body it should have. */
struct links {
	char **path, **target;
	size_t n, cap, target_cap;	/* cap: path's; each array grows on its own */
};

static void links_free(struct links *l)
{
	for (size_t i = 0; i < l->n; i++) {
		free(l->path[i]);
		free(l->target[i]);
	}
	free(l->path);
	free(l->target);
	memset(l, 0, sizeof(*l));
}

static int links_add(struct links *l, const char *path, const char *target)
{
	int r = CVM_GROW(l->path, l->n + 1, l->cap);

	if (r == 0)
		r = CVM_GROW(l->target, l->n + 1, l->target_cap);
	if (r < 0)
		return r;
	l->path[l->n] = strdup(path);
	l->target[l->n] = target ? strdup(target) : NULL;
	if (!l->path[l->n] || (target && !l->target[l->n])) {
		free(l->path[l->n]);
		free(l->target[l->n]);
		return -ENOMEM;
	}
	l->n++;
	return 0;
}

static ssize_t links_find(const struct links *l, const char *path)
{
	for (size_t i = 0; i < l->n; i++)
		if (!strcmp(l->path[i], path))
			return (ssize_t)i;
	return -1;
}

/* Whether l lists path with exactly this body (a link cudnnvm wrote). */
static bool links_has(const struct links *l, const char *path, const char *body)
{
	for (size_t i = 0; i < l->n; i++)
		if (!strcmp(l->path[i], path) && l->target[i] && body && !strcmp(l->target[i], body))
			return true;
	return false;
}

/* Why text (len bytes) cannot be a line of a record: not UTF-8, a control character; or NULL. */
static const char *text_refused(const char *text, size_t len)
{
	for (size_t i = 0, n; i < len; i += n) {
		const unsigned char *c = (const unsigned char *)text + i;
		n = cvm_utf8_len(c);
		if (!n)
			return "not UTF-8";
		if (n == 1 && ((*c < 0x20 && *c != '\t') || *c == 0x7f))
			return "a control character";
	}
	return NULL;
}

/*
 * Whether name is one cudnnvm links into the toolkit's sub folder
 * ("include": cudnn*.h; "lib": libcudnn*), and one its record can hold.
 */
static bool cudnn_name(const char *sub, const char *name)
{
	bool inc = !strcmp(sub, "include");
	const char *pre = inc ? "cudnn" : "libcudnn";
	size_t n = strlen(name);

	return !strncmp(name, pre, strlen(pre)) && !strchr(name, '/') && !strchr(name, '\t') &&
	       (!inc || !strcmp(name + n - 2, ".h")) && !text_refused(name, n);
}

static int host_path(const struct cvm_switch *sw, char *buf, size_t len, const char *inner)
{
	return cvm_fmt(buf, len, "%s%s", sw->root, inner);
}

/* The toolkit's real include and library folders, as seen inside the root. */
static int toolkit_dirs(const struct cvm_switch *sw, char *inc, char *lib, size_t len)
{
	char p[PATH_MAX];
	int r;

	r = cvm_fmt(p, sizeof(p), "%s/include", sw->tk->display);
	if (r == 0)
		r = cvm_resolve_in_root(sw->root, p, inc, len);
	if (r < 0)
		return cvm_err(r, "toolkit '%s' has no include folder: %s",
			       cvm_safe(sw->tk->display), cvm_strerror(-r));
	r = cvm_fmt(p, sizeof(p), "%s/lib64", sw->tk->display);
	if (r == 0 && cvm_resolve_in_root(sw->root, p, lib, len) == 0)
		return 0;
	r = cvm_fmt(p, sizeof(p), "%s/lib", sw->tk->display);
	if (r == 0)
		r = cvm_resolve_in_root(sw->root, p, lib, len);
	if (r < 0)
		return cvm_err(r, "toolkit '%s' has no lib64 or lib folder: %s",
			       cvm_safe(sw->tk->display), cvm_strerror(-r));
	return 0;
}

/*
 * The body of a link at dir/<name> to STORE/active/cuda-X.Y/<sub>/<name>:
 * relative when the store lies inside the root (so that it resolves both
 * from inside and from outside the root), else the store's absolute path.
 */
static int link_body(const struct cvm_switch *sw, const char *dir, const char *sub,
		     const char *name, char *buf, size_t len)
{
	bool inside = !sw->root[0] || strcmp(sw->store->path, sw->store->display);
	size_t o = 0;

	if (!inside)
		return cvm_fmt(buf, len, "%s/active/cuda-%s/%s/%s", sw->store->path, sw->cuda,
			       sub, name);
	buf[0] = '\0';
	for (const char *p = dir; *p; p++) {
		if (*p != '/' || !p[1])
			continue;
		if (o + 4 >= len)
			return -ENAMETOOLONG;
		memcpy(buf + o, "../", 4);
		o += 3;
	}
	return cvm_fmt(buf + o, len - o, "%s/active/cuda-%s/%s/%s", sw->store->display + 1,
		       sw->cuda, sub, name);
}

/* The links a version needs in this toolkit. */
static int wanted(const struct cvm_switch *sw, const char *id, struct links *out)
{
	static const char *const parts[] = { "include", "lib" };
	char inc[PATH_MAX], lib[PATH_MAX], path[PATH_MAX], body[PATH_MAX], vdir[PATH_MAX];
	int r;

	if (!id || !*id)
		return 0;
	r = toolkit_dirs(sw, inc, lib, sizeof(inc));
	if (r < 0)
		return r;
	for (size_t i = 0; i < 2 && sw->files; i++) {
		/* A dry adopt: the names the version would have. */
		size_t sl = strlen(parts[i]);
		const char *dir = i ? lib : inc;
		for (size_t k = 0; k < sw->nfiles && r == 0; k++) {
			const char *f = sw->files[k];
			if (strncmp(f, parts[i], sl) || f[sl] != '/' || !cudnn_name(parts[i], f + sl + 1))
				continue;
			r = cvm_fmt(path, sizeof(path), "%s/%s", dir, f + sl + 1);
			if (r == 0)
				r = link_body(sw, dir, parts[i], f + sl + 1, body, sizeof(body));
			if (r == 0)
				r = links_add(out, path, body);
		}
		if (r < 0)
			return r;
	}
	for (size_t i = 0; i < 2 && !sw->files; i++) {
		DIR *d;
		struct dirent *de;
		const char *dir = i ? lib : inc;
		int fd;

		r = cvm_fmt(vdir, sizeof(vdir), "versions/%s/%s", id, parts[i]);
		if (r < 0)
			return r;
		fd = openat(sw->store->fd, vdir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (fd < 0)
			return cvm_err(-errno, "cannot read %s/%s: %s", id, parts[i], strerror(errno));
		d = fdopendir(fd);
		if (!d) {
			close(fd);
			return -errno;
		}
		while ((de = readdir(d))) {
			if (!cudnn_name(parts[i], de->d_name))
				continue;
			r = cvm_fmt(path, sizeof(path), "%s/%s", dir, de->d_name);
			if (r == 0)
				r = link_body(sw, dir, parts[i], de->d_name, body, sizeof(body));
			if (r == 0)
				r = links_add(out, path, body);
			if (r < 0)
				break;
		}
		closedir(d);
		if (r < 0)
			return r;
	}
	return 0;
}

/*
 * STORE/toolkits/cuda-<X.Y>.links, the record of what cudnnvm made in the
 * toolkit: one line per link, "<path inside the root>\t<its body>\n". A link
 * is cudnnvm's only while it is a symlink with exactly a recorded body:
 * anything else at the path (another body, a file, a folder, a FIFO) is not
 * replaced or removed. A path is listed with two bodies while a switch
 * replaces one of ours by another (a store that moved), so that a crash
 * leaves one that is known. A line of the first format (a path alone)
 * stands for the body cudnnvm writes there now. The file is cudnnvm's, but
 * root deletes what it lists: a line is acted on only when it names a
 * cuDNN file in the toolkit's include or library folder.
 */
static int record_name(const struct cvm_switch *sw, char *buf, size_t len)
{
	return cvm_fmt(buf, len, "cuda-%s.links", sw->cuda);
}

/*
 * Reads the record into *buf (NULL when there is none; the caller frees).
 * It must be a regular file of the store's owner that no one else can
 * write, in a real folder: a symlink, a FIFO (opened without blocking) or
 * a file another user could edit is refused with -CVM_E_PERM, and why
 * (whylen bytes) says so, as does any other error.
 */
static int record_load(const struct cvm_switch *sw, char **buf, size_t *len, char *why,
		       size_t whylen)
{
	char name[64];
	struct stat st, sst;
	int dfd, fd = -1, r;

	*buf = NULL;
	r = record_name(sw, name, sizeof(name));
	if (r < 0)
		return r;
	dfd = openat(sw->store->fd, "toolkits", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0 && errno == ENOENT)
		return 0;
	fd = dfd < 0 ? -errno : cvm_open_regular(dfd, name, O_RDONLY | O_NOFOLLOW, 0);
	if (dfd >= 0)
		close(dfd);
	if (fd == -ENOENT)
		return 0;
	if (fd < 0) {
		snprintf(why, whylen, "%s", fd == -ELOOP ? "its folder is a symlink" : cvm_strerror(fd));
		return fd == -ELOOP || fd == -CVM_E_NOTREG ? -CVM_E_PERM : fd;
	}
	if (fstat(fd, &st) < 0 || fstat(sw->store->fd, &sst) < 0) {
		r = -errno;
		snprintf(why, whylen, "%s", strerror(errno));
	} else if (st.st_uid != sst.st_uid || (st.st_mode & 022)) {
		r = -CVM_E_PERM;
		snprintf(why, whylen, "it is %s, so another user could choose what root removes",
			 st.st_uid != sst.st_uid ? "not owned by the store's owner" :
			 "writable by its group or others");
	} else {
		r = cvm_read_fd(fd, 16 << 20, buf, len);
		if (r < 0)
			snprintf(why, whylen, "%s", cvm_strerror(r));
	}
	close(fd);
	return r;
}

/* The folders a recorded path may be in: the toolkit's include, lib64 and lib, resolved ("" when absent). */
struct record_dirs {
	char dir[3][PATH_MAX];
};

static void record_dirs(const struct cvm_switch *sw, struct record_dirs *d)
{
	static const char *const sub[] = { "include", "lib64", "lib" };
	char p[PATH_MAX];

	for (size_t i = 0; i < 3; i++)
		if (cvm_fmt(p, sizeof(p), "%s/%s", sw->tk->display, sub[i]) < 0 ||
		    cvm_resolve_in_root(sw->root, p, d->dir[i], sizeof(d->dir[i])) < 0)
			d->dir[i][0] = '\0';
}

/*
 * Why the entry path (and body, NULL for a line of the first format) is
 * not one cudnnvm could have written, or NULL; *sub gets the folder's kind
 * ("include" or "lib").
 */
static const char *entry_refused(const struct cvm_switch *sw, const struct record_dirs *d,
				 const char *path, const char *body, const char **sub)
{
	const char *name = strrchr(path, '/');
	char tail[PATH_MAX];
	size_t dl, bl, tl;
	int k = -1;

	if (path[0] != '/')
		return "not an absolute path";
	for (const char *c = path; *c == '/';) {
		const char *e = strchrnul(c + 1, '/');
		size_t n = (size_t)(e - c - 1);
		if (!n || (n <= 2 && !strncmp(c + 1, "..", n)))
			return "an empty, '.' or '..' component in the path";
		c = e;
	}
	dl = (size_t)(name - path);
	for (int i = 0; i < 3 && k < 0; i++)
		if (d->dir[i][0] && strlen(d->dir[i]) == dl && !strncmp(path, d->dir[i], dl))
			k = i;
	if (k < 0)
		return "not in the toolkit's include or library folder";
	*sub = k ? "lib" : "include";
	if (!cudnn_name(*sub, name + 1))
		return "not named like a cuDNN file (cudnn*.h, libcudnn*)";
	if (!body)
		return NULL;
	bl = strlen(body);
	if (cvm_fmt(tail, sizeof(tail), "/active/cuda-%s/%s/%s", sw->cuda, *sub, name + 1) < 0 ||
	    bl < (tl = strlen(tail)) || strcmp(body + bl - tl, tail) || strchr(body, '\t'))
		return "its link body does not go through the store's active link";
	return NULL;
}

/*
 * One line of the record (NUL-terminated, len bytes, cut in place) into
 * out; returns why it is refused, or NULL. *r: an error of the adding.
 */
static const char *record_line(const struct cvm_switch *sw, const struct record_dirs *d,
			       char *line, size_t len, struct links *out, int *r)
{
	char body[PATH_MAX], *tab, *slash;
	const char *why = text_refused(line, len), *sub = NULL;

	*r = 0;
	if (why)
		return why;
	tab = strchr(line, '\t');
	if (tab)
		*tab++ = '\0';
	why = entry_refused(sw, d, line, tab, &sub);
	if (why)
		return why;
	if (!tab) {
		/* The first format: the body cudnnvm writes there now. */
		slash = strrchr(line, '/');
		*slash = '\0';
		*r = link_body(sw, line, sub, slash + 1, body, sizeof(body));
		*slash = '/';
		tab = body;
	}
	if (*r == 0)
		*r = links_add(out, line, tab);
	return NULL;
}

/* A refused line or record: warned, or kept in notes (doctor's) when given. */
static int note(struct links *notes, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int note(struct links *notes, const char *fmt, ...)
{
	char buf[2 * PATH_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (notes)
		return links_add(notes, buf, NULL);
	cvm_warn("%s", buf);
	return 0;
}

/*
 * The links cudnnvm made in this toolkit (a missing record is none). A
 * line that is not one cudnnvm could have written is refused: warned (or
 * added to notes) with the file, its number and why, and never acted on.
 * A record that cannot be trusted at all is an error (-CVM_E_PERM), printed
 * (or, with notes, noted and 0).
 */
static int read_record(const struct cvm_switch *sw, struct links *out, struct links *notes)
{
	char shown[PATH_MAX], why[256], text[1024], *buf = NULL;
	struct record_dirs d;
	size_t len = 0, no = 0;
	int r;

	r = cvm_fmt(shown, sizeof(shown), "%s/toolkits/cuda-%s.links", sw->store->display, sw->cuda);
	if (r == 0)
		r = record_load(sw, &buf, &len, why, sizeof(why));
	if (r < 0 && notes)
		return note(notes, "'%s' cannot be read: %s", cvm_safe(shown), why);
	if (r < 0)
		return cvm_err(r, "refusing to read '%s': %s; nothing changed (once it is removed, "
			       "cudnnvm records its links afresh)", cvm_safe(shown), why);
	record_dirs(sw, &d);
	for (char *line = buf, *nl; r == 0 && line && line < buf + len; line = nl ? nl + 1 : NULL) {
		size_t ll;
		const char *bad;
		nl = memchr(line, '\n', (size_t)(buf + len - line));
		ll = nl ? (size_t)(nl - line) : (size_t)(buf + len - line);
		if (nl)
			*nl = '\0';
		no++;
		snprintf(text, sizeof(text), "%s", cvm_safe(line));
		bad = !nl ? "the last line is cut short (no newline at its end)" :
		      !ll ? "an empty line" : record_line(sw, &d, line, ll, out, &r);
		if (bad)
			r = note(notes, "'%s', line %zu ('%s'): %s: ignored, nothing is done at the "
				 "path it names", cvm_safe(shown), no, text, bad);
	}
	free(buf);
	return r;
}

/*
 * Writes the record: the entries of a, then those of b (either may be
 * NULL), each (path, body) once; none at all removes it. An entry the
 * reader would refuse is never written: -EINVAL, and the caller makes no
 * link. Errors are printed.
 */
static int write_record(const struct cvm_switch *sw, const struct links *a, const struct links *b)
{
	char name[128], leaf[64], shown[PATH_MAX];
	struct cvm_strbuf text = { 0 };
	int r;

	r = record_name(sw, leaf, sizeof(leaf));
	if (r == 0)
		r = cvm_fmt(name, sizeof(name), "toolkits/%s", leaf);
	if (r == 0)
		r = cvm_fmt(shown, sizeof(shown), "%s/toolkits", sw->store->display);
	if (r == 0)
		r = cvm_do_mkdir_at(sw->store->plan, sw->store->fd, "toolkits", 0755, shown);
	if (r == 0)
		r = cvm_fmt(shown, sizeof(shown), "%s/%s", sw->store->display, name);
	for (int k = 0; k < 2 && r == 0; k++) {
		const struct links *l = k ? b : a;
		for (size_t i = 0; l && i < l->n && r == 0; i++) {
			const char *p = l->path[i], *t = l->target[i];
			bool seen = false;
			for (size_t j = 0; j < i && !seen; j++)
				seen = !strcmp(l->path[j], p) && !strcmp(l->target[j], t);
			if (seen || (k && a && links_has(a, p, t)))
				continue;
			if (strchr(p, '\t') || strchr(t, '\t') || text_refused(p, strlen(p)) ||
			    text_refused(t, strlen(t))) {
				r = cvm_err(-EINVAL, "cannot record the link '%s' -> '%s' in '%s': a tab, a "
					    "control character or bytes that are not UTF-8; nothing changed",
					    cvm_safe(p), cvm_safe(t), cvm_safe(shown));
				goto out;
			}
			r = cvm_strbuf_addf(&text, "%s\t%s\n", p, t);
		}
	}
	if (r == 0 && !text.len)
		r = cvm_do_unlink_at(sw->store->plan, sw->store->fd, name, shown);
	else if (r == 0)
		r = cvm_do_write_file_at(sw->store->plan, sw->store->fd, name, text.buf, text.len, 0644, shown);
	if (r < 0)
		r = cvm_err(r, "cannot record the links of CUDA %s: %s", sw->cuda, cvm_strerror(r));
out:
	cvm_strbuf_release(&text);
	return r;
}

/* What is at a path of the toolkit now. */
struct obj {
	int st;			/* 0: absent, 1: the link wanted, 2: not a link, 3: another link */
	mode_t mode;		/* its lstat's */
	char body[PATH_MAX];	/* a link's body */
};

/* What is at the in-root path, against the body wanted there (NULL: none): o->st, or -errno. */
static int link_state(const struct cvm_switch *sw, const char *path, const char *body,
		      struct obj *o)
{
	char host[PATH_MAX];
	struct stat st;
	ssize_t k;

	o->st = 0;
	o->body[0] = '\0';
	if (host_path(sw, host, sizeof(host), path) < 0)
		return -ENAMETOOLONG;
	if (lstat(host, &st) < 0)
		return errno == ENOENT ? 0 : -errno;
	o->mode = st.st_mode;
	if (!S_ISLNK(st.st_mode))
		return o->st = 2;
	k = readlink(host, o->body, sizeof(o->body) - 1);
	if (k < 0)
		return -errno;
	o->body[k] = '\0';
	return o->st = body && !strcmp(o->body, body) ? 1 : 3;
}

/* Whether path (as under the root) is a symbolic link that leads to nothing. */
static bool dangling(const struct cvm_switch *sw, const char *path)
{
	char host[PATH_MAX];
	struct stat st;

	return host_path(sw, host, sizeof(host), path) == 0 && lstat(host, &st) == 0 &&
	       S_ISLNK(st.st_mode) && stat(host, &st) < 0 && (errno == ENOENT || errno == ENOTDIR);
}

/* Whether o, at a path the record rec lists, is a link cudnnvm wrote there. */
static bool is_ours(const struct links *rec, const char *path, const struct obj *o)
{
	return o->st != 2 && links_has(rec, path, o->body);
}

/*
 * The object o at path, which rec lists as cudnnvm's, is something else
 * now (the admin's link or file): warned (or noted, for doctor) with what
 * it is and what cudnnvm wrote; it is never replaced or removed. A switch
 * counts it in *sw->untouched.
 */
static int untouched(const struct cvm_switch *sw, const struct links *rec, const char *path,
		     const struct obj *o, struct links *notes)
{
	ssize_t i = links_find(rec, path);
	bool link = o->st == 3, file = !link && S_ISREG(o->mode);
	const char *what = link ? "a link to '" : file ? "a regular file" :
			   S_ISDIR(o->mode) ? "a folder" : S_ISFIFO(o->mode) ? "a FIFO" :
			   "a special file";
	char hint[96] = "";

	if (sw->untouched && !notes)
		(*sw->untouched)++;
	if (file)
		snprintf(hint, sizeof(hint), " (an adopt cut short? 'cudnnvm adopt --cuda %s' "
			 "finishes it)", sw->cuda);
	return note(notes, "'%s' is %s%s%s, not the link cudnnvm wrote there (to '%s'): cudnnvm "
		    "leaves it as it is%s", cvm_safe(path), what, link ? cvm_safe(o->body) : "",
		    link ? "'" : "", cvm_safe(i >= 0 ? rec->target[i] : "?"), hint);
}

/*
 * adopt: whether the hand-copied object at path holds what the version has
 * under sub/name: the same link body for a link, the same bytes otherwise.
 */
static bool same_as_version(const struct cvm_switch *sw, const char *path, const char *body)
{
	char host[PATH_MAX], rel[PATH_MAX], mine[PATH_MAX], theirs[PATH_MAX];
	char a[CVM_SHA256_HEX], b[CVM_SHA256_HEX];
	const char *p = strstr(body, "/active/cuda-");
	ssize_t k1, k2;

	/* A dry adopt: the version would be copied from this very file. */
	if (sw->files)
		return true;
	/* body ends in ".../active/cuda-X.Y/<sub>/<name>": the same file in versions/<to>/. */
	p = p ? strchr(p + 13, '/') : NULL;
	if (!p || cvm_fmt(rel, sizeof(rel), "versions/%s%s", sw->to, p) < 0 ||
	    host_path(sw, host, sizeof(host), path) < 0)
		return false;
	k1 = readlinkat(sw->store->fd, rel, mine, sizeof(mine) - 1);
	if (k1 >= 0) {
		k2 = readlink(host, theirs, sizeof(theirs) - 1);
		if (k2 < 0)
			return false;
		mine[k1] = theirs[k2] = '\0';
		return !strcmp(mine, theirs);
	}
	return cvm_sha256_at(sw->store->fd, rel, a, NULL) == 0 && cvm_sha256_at(AT_FDCWD, host, b, NULL) == 0 &&
	       !strcmp(a, b);
}

/* adopt: keeps the original (a hard link: no copy) before it is replaced. */
static void backup(const struct cvm_switch *sw, const char *path)
{
	char host[PATH_MAX], dst[PATH_MAX], dir[PATH_MAX], shown[PATH_MAX];
	const char *name = path ? strrchr(path, '/') : NULL;
	const char *sub = path && strstr(path, "/include/") ? "include" : "lib";
	int r;

	if (!name || !sw->to || host_path(sw, host, sizeof(host), path) < 0 ||
	    cvm_fmt(dir, sizeof(dir), "%s/backups/%s/%s", sw->store->path, sw->to, sub) < 0 ||
	    cvm_fmt(dst, sizeof(dst), "%s%s", dir, name) < 0 ||
	    cvm_fmt(shown, sizeof(shown), "%s/backups/%s/%s%s", sw->store->display, sw->to, sub,
		    name) < 0 ||
	    cvm_do_mkdir_p(sw->store->plan, dir, 0755, sw->root) < 0)
		return;
	r = cvm_do_link(sw->store->plan, host, dst, path, shown);
	if (r < 0 && r != -EEXIST) {
		struct stat st;
		if (lstat(host, &st) == 0 && S_ISLNK(st.st_mode)) {
			char body[PATH_MAX];
			ssize_t k = readlink(host, body, sizeof(body) - 1);
			if (k >= 0) {
				body[k] = '\0';
				if (symlink(body, dst) == 0)
					return;
			}
		}
		cvm_verbose("no backup of '%s' (%s): the store's copy has the same bytes",
			    path, strerror(errno));
	}
}

static int replace_with_link(const struct cvm_switch *sw, const char *host, const char *body,
			     const char *shown)
{
	char dir[PATH_MAX], *slash;
	int dfd, r;

	snprintf(dir, sizeof(dir), "%s", host);
	slash = strrchr(dir, '/');
	if (!slash)
		return -EINVAL;
	*slash = '\0';
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return -errno;
	r = cvm_do_symlink_replace_at(sw->store->plan, dfd, body, slash + 1, shown);
	close(dfd);
	return r;
}

/*
 * A folder cudnnvm writes into (inner, inside the root; the nearest folder
 * above it that exists when it does not yet) must resolve to a place inside
 * within (the toolkit), or, with within NULL, to itself (no link on the
 * way: ld.so.conf.d), and no one but root or the caller may be able to
 * change it or any folder above it (trust.h). Otherwise a link planted in a
 * toolkit (include -> /etc) or a folder another user owns would have root
 * create links where they choose. -CVM_E_PERM (printed) or 0.
 */
static int check_write_dir(const struct cvm_switch *sw, const char *inner, const char *within)
{
	char cur[PATH_MAX], res[PATH_MAX], host[PATH_MAX];
	struct cvm_trust t;
	size_t wl;
	int r;

	r = cvm_fmt(cur, sizeof(cur), "%s", inner);
	while (r == 0) {
		r = cvm_resolve_in_root(sw->root, cur, res, sizeof(res));
		if (r != -ENOENT || !strcmp(cur, "/") || !strrchr(cur, '/'))
			break;
		*strrchr(cur, '/') = '\0';
		if (!cur[0])
			strcpy(cur, "/");
		r = 0;
	}
	if (r < 0)
		return cvm_err(r, "cannot resolve '%s': %s", cvm_safe(cur), cvm_strerror(-r));
	wl = within ? strlen(within) : 0;
	if (within ? strncmp(res, within, wl) || (res[wl] && res[wl] != '/') : strcmp(res, cur) != 0)
		return cvm_err(-CVM_E_PERM, "refusing to write into '%s': it leads to '%s', outside %s%s%s "
			       "(a symlink on the way?); nothing changed", cvm_safe(cur), cvm_safe(res),
			       within ? "the toolkit '" : "its documented place", within ? cvm_safe(within) : "",
			       within ? "'" : "");
	r = cvm_fmt(host, sizeof(host), "%s%s", sw->root, res);
	if (r == 0)
		r = cvm_trust_check(host, &t);
	if (r == -CVM_E_PERM)
		return cvm_err(r, "refusing to write into '%s': '%s': %s, so another user could "
			       "redirect what root writes there; nothing changed", cvm_safe(res),
			       cvm_safe(t.path), t.why);
	if (r < 0)
		return cvm_err(r, "cannot check '%s': '%s': %s", cvm_safe(res), cvm_safe(t.path), t.why);
	return 0;
}

/*
 * ld.so.conf.d/cudnnvm-cuda-X.Y.conf is absent or a regular file (ours): a
 * FIFO there would hang the read, a link or anything else is not ours to
 * replace. 0, or -CVM_E_NOTREG (printed).
 */
static int loader_file_ok(const struct cvm_switch *sw)
{
	char path[PATH_MAX];
	struct stat st;

	if (cvm_fmt(path, sizeof(path), "%s/etc/ld.so.conf.d/cudnnvm-cuda-%s.conf", sw->root,
		    sw->cuda) < 0 || lstat(path, &st) < 0 || S_ISREG(st.st_mode))
		return 0;
	return cvm_err(-CVM_E_NOTREG, "'/etc/ld.so.conf.d/cudnnvm-cuda-%s.conf': not a regular file "
		       "(left as it is; nothing changed): remove it, and the next switch writes it",
		       sw->cuda);
}

/* Every folder a switch of this toolkit writes into, checked before anything changes. */
static int check_write_dirs(const struct cvm_switch *sw)
{
	char inc[PATH_MAX], lib[PATH_MAX], p[PATH_MAX];
	int r;

	/* toolkit_dirs says which exist; the names as the toolkit has them are checked, for the message. */
	r = toolkit_dirs(sw, inc, lib, sizeof(inc));
	if (r == 0)
		r = cvm_fmt(p, sizeof(p), "%s/include", sw->tk->display);
	if (r == 0)
		r = check_write_dir(sw, p, sw->tk->display);
	if (r == 0)
		r = cvm_fmt(p, sizeof(p), "%s/lib64", sw->tk->display);
	if (r == 0 && cvm_resolve_in_root(sw->root, p, inc, sizeof(inc)) < 0)
		r = cvm_fmt(p, sizeof(p), "%s/lib", sw->tk->display);
	if (r == 0)
		r = check_write_dir(sw, p, sw->tk->display);
	if (r == 0)
		r = check_write_dir(sw, "/etc/ld.so.conf.d", NULL);
	return r < 0 ? r : loader_file_ok(sw);
}

/* What the new version needs, and what the record says cudnnvm made. */
static int load(const struct cvm_switch *sw, struct links *want, struct links *have)
{
	int r = wanted(sw, sw->to, want);

	return r < 0 ? r : read_record(sw, have, NULL);
}

static int prepare(const struct cvm_switch *sw)
{
	struct links want = { 0 }, have = { 0 };
	struct obj o;
	char host[PATH_MAX];
	const char *conflict = NULL;
	size_t conflicts = 0;
	int r;

	r = check_write_dirs(sw);
	if (r < 0)
		return r;
	r = load(sw, &want, &have);
	if (r < 0)
		goto out;
	for (size_t i = 0; i < want.n; i++) {
		int st = link_state(sw, want.path[i], want.target[i], &o);
		if (st < 0) {
			r = cvm_err(st, "cannot inspect '%s': %s", cvm_safe(want.path[i]), cvm_strerror(-st));
			goto out;
		}
		if (st >= 2 && sw->adopt && same_as_version(sw, want.path[i], want.target[i]))
			continue;
		if (st >= 2 && links_find(&have, want.path[i]) < 0) {
			if (!conflict)
				conflict = want.path[i];
			conflicts++;
		}
	}
	if (conflict && dangling(sw, conflict)) {
		/* A link leading nowhere holds no cuDNN for adopt to take: removing it is the fix. */
		r = cvm_err(-CVM_E_CONFLICT, "'%s'%s is a link cudnnvm did not create, and it leads "
			    "nowhere: nothing changed; remove that link, then run this again",
			    cvm_safe(conflict), conflicts > 1 ? " (and others in the way)" : "");
		goto out;
	}
	if (conflict) {
		r = cvm_err(-CVM_E_CONFLICT, "'%s'%s was not created by cudnnvm: nothing changed; "
			    "'cudnnvm adopt --cuda %s' brings a hand-copied cuDNN under management",
			    cvm_safe(conflict), conflicts > 1 ? " (and others)" : "", sw->cuda);
		goto out;
	}
	/* Recorded before made: a crash can leave a record of a link not made, never the reverse. */
	r = write_record(sw, &have, &want);
	if (r < 0)
		goto out;
	for (size_t i = 0; i < want.n; i++) {
		int st = link_state(sw, want.path[i], want.target[i], &o);
		if (st == 1)
			continue;
		r = host_path(sw, host, sizeof(host), want.path[i]);
		if (r == 0 && st == 0) {
			r = cvm_do_symlink_at(sw->store->plan, AT_FDCWD, want.target[i], host, want.path[i]);
		} else if (r == 0 && st >= 2 && sw->adopt &&
			   same_as_version(sw, want.path[i], want.target[i])) {
			/* The path never stops resolving to these bytes: rename over it. */
			backup(sw, want.path[i]);
			r = replace_with_link(sw, host, want.target[i], want.path[i]);
			cvm_fault("adopt-replacing");
		} else if (r == 0 && st == 3 && is_ours(&have, want.path[i], &o)) {
			/* One of ours with another body (a store that moved): replaced atomically. */
			r = replace_with_link(sw, host, want.target[i], want.path[i]);
		} else if (r == 0 && st >= 2) {
			/* Recorded, but the admin's now (another link, a file): never replaced. */
			r = untouched(sw, &have, want.path[i], &o, NULL);
		}
		if (r < 0) {
			r = cvm_err(r, "cannot create the link '%s': %s", cvm_safe(want.path[i]),
				    cvm_strerror(-r));
			goto out;
		}
	}
out:
	links_free(&want);
	links_free(&have);
	return r;
}

/* The sonames (libcudnn*.so.<N>) a version provides, as one sorted, comma-joined string. */
static void sonames(const struct cvm_switch *sw, const char *id, char *buf, size_t len)
{
	struct links l = { 0 };
	char dir[PATH_MAX];
	DIR *d;
	struct dirent *de;
	int fd;

	buf[0] = '\0';
	if (!id || !*id || cvm_fmt(dir, sizeof(dir), "versions/%s/lib", id) < 0)
		return;
	fd = openat(sw->store->fd, dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0 || !(d = fdopendir(fd))) {
		if (fd >= 0)
			close(fd);
		return;
	}
	while ((de = readdir(d))) {
		const char *so = strstr(de->d_name, ".so.");
		if (!so || strncmp(de->d_name, "libcudnn", 8) || !so[4] ||
		    strspn(so + 4, "0123456789") != strlen(so + 4))
			continue;
		links_add(&l, de->d_name, NULL);
	}
	closedir(d);
	/* Sorted, so that two versions with one set compare equal. */
	for (size_t i = 0; i < l.n; i++)
		for (size_t j = i + 1; j < l.n; j++)
			if (strcmp(l.path[j], l.path[i]) < 0) {
				char *t = l.path[i];
				l.path[i] = l.path[j];
				l.path[j] = t;
			}
	for (size_t i = 0, o = 0; i < l.n; i++) {
		int k = snprintf(buf + o, len - o, "%s%s", i ? "," : "", l.path[i]);
		if (k < 0 || (size_t)k >= len - o)
			break;
		o += (size_t)k;
	}
	links_free(&l);
}

/* ldconfig rebuilds the cache of every library folder: minutes at most, even on a slow disk. */
enum { LDCONFIG_TIMEOUT_MS = 300 * 1000 };

static int run_ldconfig(const struct cvm_switch *sw)
{
	const char *prog = getenv("CUDNNVM_LDCONFIG");
	char *argv[4] = { NULL }, what[PATH_MAX + 16], out[256];
	struct cvm_trust t;
	int status, r;

	if (!prog)
		prog = access("/sbin/ldconfig", X_OK) == 0 ? "/sbin/ldconfig" : "/usr/sbin/ldconfig";
	argv[0] = (char *)prog;
	if (sw->root[0]) {
		argv[1] = (char *)"-r";
		argv[2] = (char *)sw->root;
	}
	/* Never run what another user could have written (CUDNNVM_LDCONFIG may name anything). */
	r = cvm_trust_check(prog, &t);
	if (r == -CVM_E_PERM) {
		if (cvm_fmt(what, sizeof(what), "running '%s'", prog) == 0)
			cvm_trust_skip(what, &t);
		cvm_warn("the loader cache may be stale until ldconfig runs");
		return 0;
	}
	if (cvm_plan_describe(sw->store->plan, "run", prog, NULL, "%s%s%s(to rebuild the loader cache)",
			      sw->root[0] ? "-r " : "", sw->root, sw->root[0] ? " " : ""))
		return 0;
	cvm_verbose("running %s%s%s", prog, sw->root[0] ? " -r " : "", sw->root);
	/* Through the one spawn function: no descriptor of ours inherited, a deadline. */
	r = cvm_proc_capture(argv, NULL, true, LDCONFIG_TIMEOUT_MS, out, sizeof(out), &status);
	if (r == -ETIMEDOUT) {
		cvm_warn("'%s' ran past %d s and was stopped: the loader cache may be stale until "
			 "it runs", prog, LDCONFIG_TIMEOUT_MS / 1000);
		return 0;
	}
	if (r < 0)
		return r;
	if (!WIFEXITED(status) || WEXITSTATUS(status)) {
		cvm_warn("'%s' failed (status %d): the loader cache may be stale until it runs",
			 prog, WIFEXITED(status) ? WEXITSTATUS(status) : -1);
		return 0;
	}
	return 0;
}

/* Warns when another toolkit's active version provides one of the same sonames. */
static void warn_shared_sonames(const struct cvm_switch *sw, const char *mine)
{
	DIR *d;
	struct dirent *de;
	char theirs[4096], id[160], cuda[32];
	int fd;

	fd = openat(sw->store->fd, "active", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0 || !(d = fdopendir(fd))) {
		if (fd >= 0)
			close(fd);
		return;
	}
	while ((de = readdir(d))) {
		if (strncmp(de->d_name, "cuda-", 5) || !strcmp(de->d_name + 5, sw->cuda) ||
		    strchr(de->d_name, '.') == NULL || strstr(de->d_name, ".tmp."))
			continue;
		snprintf(cuda, sizeof(cuda), "%s", de->d_name + 5);
		if (cvm_active_get(sw->store, cuda, id, sizeof(id)) < 0)
			continue;
		struct cvm_switch other = *sw;
		other.cuda = cuda;
		sonames(&other, id, theirs, sizeof(theirs));
		for (char *p = theirs, *q; *p; p = *q ? q + 1 : q) {
			q = strchrnul(p, ',');
			char one[256];
			snprintf(one, sizeof(one), "%.*s", (int)(q - p), p);
			const char *hit = strstr(mine, one);
			size_t ol = strlen(one);
			if (!hit || (hit != mine && hit[-1] != ',') || (hit[ol] && hit[ol] != ','))
				continue;
			/* ld.so.conf.d is read in name order: the first folder with a soname wins. */
			bool first = strcmp(sw->cuda, cuda) < 0;
			cvm_warn("%s is provided by the active versions of both CUDA %s and CUDA %s; "
				 "the loader cache resolves it to CUDA %s's (cudnnvm-cuda-%s.conf "
				 "is read first); programs that need the other should use its "
				 "toolkit's lib folder or 'cudnnvm env'", one, sw->cuda, cuda,
				 first ? sw->cuda : cuda, first ? sw->cuda : cuda);
			break;
		}
	}
	closedir(d);
}

static int update_loader(const struct cvm_switch *sw)
{
	char dir[PATH_MAX], name[64], want[PATH_MAX], *have = NULL, before[4096], after[4096];
	char shown[PATH_MAX];
	bool changed = false;
	int dfd, r;

	r = cvm_fmt(dir, sizeof(dir), "%s/etc/ld.so.conf.d", sw->root);
	if (r == 0)
		r = cvm_fmt(name, sizeof(name), "cudnnvm-cuda-%s.conf", sw->cuda);
	if (r == 0)
		r = cvm_fmt(want, sizeof(want), "%s/active/cuda-%s/lib\n", sw->store->display, sw->cuda);
	if (r < 0)
		return r;
	r = cvm_do_mkdir_p(sw->store->plan, dir, 0755, sw->root);
	dfd = r < 0 ? -1 : open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	/* A dry run does not make the folder: then it holds no file of ours either. */
	if (dfd < 0 && !(r == 0 && errno == ENOENT && cvm_plan_dry(sw->store->plan)))
		return cvm_err(r < 0 ? r : -errno, "cannot open '%s/etc/ld.so.conf.d': %s",
			       cvm_safe(sw->root), cvm_strerror(r < 0 ? r : errno));
	r = loader_file_ok(sw);
	if (r == 0 && dfd >= 0 && cvm_read_regular_at(dfd, name, O_NOFOLLOW, 1 << 16, &have, NULL) < 0)
		have = NULL;
	if (cvm_fmt(shown, sizeof(shown), "/etc/ld.so.conf.d/%s", name) < 0)
		shown[0] = '\0';
	if (r < 0) {
		if (dfd >= 0)
			close(dfd);
		return r;
	}
	if (sw->to && *sw->to) {
		if (!have || strcmp(have, want)) {
			r = cvm_do_write_file_at(sw->store->plan, dfd, name, want, strlen(want), 0644, shown);
			changed = true;
		}
	} else if (have) {
		r = cvm_do_unlink_at(sw->store->plan, dfd, name, shown);
		changed = true;
	}
	free(have);
	if (dfd >= 0)
		close(dfd);
	if (r < 0)
		return cvm_err(r, "cannot write '/etc/ld.so.conf.d/%s': %s", name, cvm_strerror(r));
	sonames(sw, sw->from, before, sizeof(before));
	sonames(sw, sw->to, after, sizeof(after));
	if (after[0])
		warn_shared_sonames(sw, after);
	/* The cache records paths through the stable link: same sonames, nothing to redo. */
	if (!changed && !strcmp(before, after)) {
		cvm_verbose("loader cache unchanged (same sonames): ldconfig not needed");
		return 0;
	}
	if (!cvm_ldconfig_wanted(sw->no_ldconfig)) {
		cvm_verbose("ldconfig skipped");
		return 0;
	}
	return run_ldconfig(sw);
}

static int finish(const struct cvm_switch *sw)
{
	struct links want = { 0 }, have = { 0 }, kept = { 0 };
	struct obj o;
	char host[PATH_MAX];
	int r;

	r = load(sw, &want, &have);
	if (r < 0)
		goto out;
	for (size_t i = 0; i < have.n; i++) {
		const char *p = have.path[i];
		if (links_find(&want, p) >= 0 || links_find(&have, p) != (ssize_t)i)
			continue;
		r = link_state(sw, p, NULL, &o);
		if (r < 0) {
			r = cvm_err(r, "cannot inspect '%s': %s", cvm_safe(p), cvm_strerror(-r));
			goto out;
		}
		if (r == 0)
			continue;
		if (!is_ours(&have, p, &o)) {
			/* Still recorded, so that every switch names it and none takes it for a hand copy. */
			r = untouched(sw, &have, p, &o, NULL);
			for (size_t k = i; k < have.n && r == 0; k++)
				if (!strcmp(have.path[k], p))
					r = links_add(&kept, p, have.target[k]);
			if (r < 0)
				goto out;
			continue;
		}
		r = host_path(sw, host, sizeof(host), p);
		if (r == 0)
			r = cvm_do_unlink_at(sw->store->plan, AT_FDCWD, host, p);
		if (r < 0) {
			r = cvm_err(r, "cannot remove the link '%s': %s", cvm_safe(p), cvm_strerror(-r));
			goto out;
		}
		cvm_fault("use-unlinking");
	}
	r = write_record(sw, &want, &kept);
	if (r == 0)
		r = update_loader(sw);
out:
	links_free(&want);
	links_free(&have);
	links_free(&kept);
	return r;
}

static int managed(const struct cvm_switch *sw, char ***paths, size_t *n)
{
	struct links have = { 0 };
	int r = read_record(sw, &have, NULL);

	cvm_strv_free(have.target, have.n);
	*paths = r < 0 ? NULL : have.path;
	*n = r < 0 ? 0 : have.n;
	if (r < 0)
		cvm_strv_free(have.path, have.n);
	return r;
}

/* doctor: the refused lines of the record, and each recorded path that is not cudnnvm's link now. */
static int audit(const struct cvm_switch *sw, char ***what, size_t *n)
{
	struct links have = { 0 }, notes = { 0 };
	struct obj o;
	int r = read_record(sw, &have, &notes);

	for (size_t i = 0; i < have.n && r == 0; i++) {
		const char *p = have.path[i];
		if (links_find(&have, p) != (ssize_t)i || link_state(sw, p, NULL, &o) <= 0 ||
		    is_ours(&have, p, &o))
			continue;
		r = untouched(sw, &have, p, &o, &notes);
	}
	links_free(&have);
	free(notes.target);
	*what = r < 0 ? NULL : notes.path;
	*n = r < 0 ? 0 : notes.n;
	if (r < 0)
		cvm_strv_free(notes.path, notes.n);
	return r;
}

static const struct cvm_backend linux_backend = {
	.name = "linux",
	.prepare = prepare,
	.finish = finish,
	.managed = managed,
	.audit = audit,
	.dirs = toolkit_dirs,
};

/* The loader cache is this backend's: --no-ldconfig, or CUDNNVM_LDCONFIG set empty, say no. */
bool cvm_ldconfig_wanted(bool no_ldconfig)
{
	const char *e = getenv("CUDNNVM_LDCONFIG");

	return !no_ldconfig && !(e && !*e);
}

const struct cvm_backend *cvm_backend(void)
{
	return &linux_backend;
}
