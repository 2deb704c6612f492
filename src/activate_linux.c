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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cudnnvm/activate.h"
#include "cudnnvm/digest.h"
#include "cudnnvm/error.h"
#include "cudnnvm/fault.h"
#include "cudnnvm/fsutil.h"
#include "cudnnvm/out.h"
#include "cudnnvm/plan.h"
#include "cudnnvm/proc.h"
#include "cudnnvm/store.h"
#include "cudnnvm/trust.h"

/* A set of in-root paths, each with the link body it should have. */
struct links {
	char **path, **target;
	size_t n, cap;
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
	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 32;
		char **p = realloc(l->path, cap * sizeof(*p));
		if (!p)
			return -ENOMEM;
		l->path = p;
		p = realloc(l->target, cap * sizeof(*p));
		if (!p)
			return -ENOMEM;
		l->target = p;
		l->cap = cap;
	}
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
			       cvm_safe(sw->tk->display), strerror(-r));
	r = cvm_fmt(p, sizeof(p), "%s/lib64", sw->tk->display);
	if (r == 0 && cvm_resolve_in_root(sw->root, p, lib, len) == 0)
		return 0;
	r = cvm_fmt(p, sizeof(p), "%s/lib", sw->tk->display);
	if (r == 0)
		r = cvm_resolve_in_root(sw->root, p, lib, len);
	if (r < 0)
		return cvm_err(r, "toolkit '%s' has no lib64 or lib folder: %s",
			       cvm_safe(sw->tk->display), strerror(-r));
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
	static const struct { const char *sub, *prefix; } parts[] = {
		{ "include", "cudnn" }, { "lib", "libcudnn" },
	};
	char inc[PATH_MAX], lib[PATH_MAX], path[PATH_MAX], body[PATH_MAX], vdir[PATH_MAX];
	int r;

	if (!id || !*id)
		return 0;
	r = toolkit_dirs(sw, inc, lib, sizeof(inc));
	if (r < 0)
		return r;
	for (size_t i = 0; i < 2 && sw->files; i++) {
		/* A dry adopt: the names the version would have. */
		size_t sl = strlen(parts[i].sub);
		const char *dir = i ? lib : inc;
		for (size_t k = 0; k < sw->nfiles && r == 0; k++) {
			const char *f = sw->files[k];
			if (strncmp(f, parts[i].sub, sl) || f[sl] != '/' ||
			    strncmp(f + sl + 1, parts[i].prefix, strlen(parts[i].prefix)))
				continue;
			r = cvm_fmt(path, sizeof(path), "%s/%s", dir, f + sl + 1);
			if (r == 0)
				r = link_body(sw, dir, parts[i].sub, f + sl + 1, body, sizeof(body));
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

		r = cvm_fmt(vdir, sizeof(vdir), "versions/%s/%s", id, parts[i].sub);
		if (r < 0)
			return r;
		fd = openat(sw->store->fd, vdir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (fd < 0)
			return cvm_err(-errno, "cannot read %s/%s: %s", id, parts[i].sub, strerror(errno));
		d = fdopendir(fd);
		if (!d) {
			close(fd);
			return -errno;
		}
		while ((de = readdir(d))) {
			if (strncmp(de->d_name, parts[i].prefix, strlen(parts[i].prefix)))
				continue;
			r = cvm_fmt(path, sizeof(path), "%s/%s", dir, de->d_name);
			if (r == 0)
				r = link_body(sw, dir, parts[i].sub, de->d_name, body, sizeof(body));
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

static int record_name(const struct cvm_switch *sw, char *buf, size_t len)
{
	return cvm_fmt(buf, len, "toolkits/cuda-%s.links", sw->cuda);
}

/* The links cudnnvm made in this toolkit (a missing record is none). */
static int read_record(const struct cvm_switch *sw, struct links *out)
{
	char name[128], *buf = NULL, *line, *save = NULL;
	int r;

	r = record_name(sw, name, sizeof(name));
	if (r < 0)
		return r;
	r = cvm_read_regular_at(sw->store->fd, name, O_NOFOLLOW, 16 << 20, &buf, NULL);
	if (r == -ENOENT)
		return 0;
	if (r < 0)
		return cvm_err(r, "cannot read '%s/%s': %s", cvm_safe(sw->store->display), name,
			       cvm_strerror(r));
	for (line = strtok_r(buf, "\n", &save); line && r == 0; line = strtok_r(NULL, "\n", &save))
		if (line[0] == '/')
			r = links_add(out, line, NULL);
	free(buf);
	return r;
}

static int write_record(const struct cvm_switch *sw, const struct links *a, const struct links *b)
{
	char name[128], shown[PATH_MAX], *text = NULL;
	size_t len = 0, cap = 0;
	int r;

	r = record_name(sw, name, sizeof(name));
	if (r == 0)
		r = cvm_fmt(shown, sizeof(shown), "%s/toolkits", sw->store->display);
	if (r < 0)
		return r;
	r = cvm_do_mkdir_at(sw->store->fd, "toolkits", 0755, shown);
	if (r == 0)
		r = cvm_fmt(shown, sizeof(shown), "%s/%s", sw->store->display, name);
	if (r < 0)
		return r;
	for (int k = 0; k < 2; k++) {
		const struct links *l = k ? b : a;
		for (size_t i = 0; l && i < l->n; i++) {
			size_t need = strlen(l->path[i]) + 2;
			if (k && a && links_find(a, l->path[i]) >= 0)
				continue;
			if (len + need + 1 > cap) {
				cap = (len + need + 1) * 2;
				char *t = realloc(text, cap);
				if (!t) {
					free(text);
					return -ENOMEM;
				}
				text = t;
			}
			len += (size_t)sprintf(text + len, "%s\n", l->path[i]);
		}
	}
	if (!len) {
		free(text);
		return cvm_do_unlink_at(sw->store->fd, name, shown);
	}
	r = cvm_do_write_file_at(sw->store->fd, name, text, len, 0644, shown);
	free(text);
	return r;
}

/* Whether the object at the in-root path is a symlink with the given body. */
static int link_state(const struct cvm_switch *sw, const char *path, const char *body)
{
	char host[PATH_MAX], got[PATH_MAX];
	struct stat st;
	ssize_t k;

	if (host_path(sw, host, sizeof(host), path) < 0)
		return -ENAMETOOLONG;
	if (lstat(host, &st) < 0)
		return errno == ENOENT ? 0 : -errno;	/* 0: absent */
	if (!S_ISLNK(st.st_mode))
		return 2;				/* 2: something else */
	k = readlink(host, got, sizeof(got) - 1);
	if (k < 0)
		return -errno;
	got[k] = '\0';
	return body && !strcmp(got, body) ? 1 : 3;	/* 1: ours as wanted, 3: another link */
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
	return cvm_sha256_at(sw->store->fd, rel, a) == 0 && cvm_sha256_at(AT_FDCWD, host, b) == 0 &&
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
	    cvm_do_mkdir_p(dir, 0755, sw->root) < 0)
		return;
	r = cvm_do_link(host, dst, path, shown);
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

static int replace_with_link(const char *host, const char *body, const char *shown)
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
	r = cvm_do_symlink_replace_at(dfd, body, slash + 1, shown);
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
		return cvm_err(r, "cannot resolve '%s': %s", cvm_safe(cur), strerror(-r));
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

	return r < 0 ? r : read_record(sw, have);
}

static int prepare(const struct cvm_switch *sw)
{
	struct links want = { 0 }, have = { 0 };
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
		int st = link_state(sw, want.path[i], want.target[i]);
		if (st < 0) {
			r = cvm_err(st, "cannot inspect '%s': %s", cvm_safe(want.path[i]), strerror(-st));
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
	if (conflict) {
		r = cvm_err(-CVM_E_CONFLICT, "'%s'%s was not created by cudnnvm: nothing changed; "
			    "'cudnnvm adopt --cuda %s' brings a hand-copied cuDNN under management",
			    cvm_safe(conflict), conflicts > 1 ? " (and others)" : "", sw->cuda);
		goto out;
	}
	/* Recorded before made: a crash can leave a record of a link not made, never the reverse. */
	r = write_record(sw, &have, &want);
	if (r < 0) {
		r = cvm_err(r, "cannot record the links of CUDA %s: %s", sw->cuda, cvm_strerror(r));
		goto out;
	}
	for (size_t i = 0; i < want.n; i++) {
		int st = link_state(sw, want.path[i], want.target[i]);
		if (st == 1)
			continue;
		r = host_path(sw, host, sizeof(host), want.path[i]);
		if (r == 0 && st == 0) {
			r = cvm_do_symlink_at(AT_FDCWD, want.target[i], host, want.path[i]);
		} else if (r == 0 && st >= 2 && sw->adopt &&
			   same_as_version(sw, want.path[i], want.target[i])) {
			/* The path never stops resolving to these bytes: rename over it. */
			backup(sw, want.path[i]);
			r = replace_with_link(host, want.target[i], want.path[i]);
			cvm_fault("adopt-replacing");
		} else if (r == 0 && st == 3) {
			/* One of ours with another body (a store that moved): replaced atomically. */
			r = replace_with_link(host, want.target[i], want.path[i]);
		} else if (r == 0 && st == 2) {
			/* Recorded as ours but a file now: never overwritten. */
			r = cvm_err(-CVM_E_CONFLICT, "'%s' is a file, not the link cudnnvm made there "
				    "(an interrupted adopt?): 'cudnnvm adopt --cuda %s' finishes it",
				    cvm_safe(want.path[i]), sw->cuda);
			goto out;
		}
		if (r < 0) {
			r = cvm_err(r, "cannot create the link '%s': %s", cvm_safe(want.path[i]),
				    strerror(-r));
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
	if (cvm_plan_describe("run", prog, NULL, "%s%s%s(to rebuild the loader cache)",
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
	r = cvm_do_mkdir_p(dir, 0755, sw->root);
	dfd = r < 0 ? -1 : open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	/* A dry run does not make the folder: then it holds no file of ours either. */
	if (dfd < 0 && !(r == 0 && errno == ENOENT && cvm_plan_dry()))
		return cvm_err(r < 0 ? r : -errno, "cannot open '%s/etc/ld.so.conf.d': %s",
			       cvm_safe(sw->root), strerror(r < 0 ? -r : errno));
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
			r = cvm_do_write_file_at(dfd, name, want, strlen(want), 0644, shown);
			changed = true;
		}
	} else if (have) {
		r = cvm_do_unlink_at(dfd, name, shown);
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
	struct links want = { 0 }, have = { 0 };
	char host[PATH_MAX];
	int r;

	r = load(sw, &want, &have);
	if (r < 0)
		goto out;
	for (size_t i = 0; i < have.n; i++) {
		if (links_find(&want, have.path[i]) >= 0)
			continue;
		/* Only links: a file that took the place of one of ours is not ours. */
		int st = link_state(sw, have.path[i], NULL);
		if (st == 2) {
			cvm_warn("'%s' is no longer a link made by cudnnvm: left as it is",
				 cvm_safe(have.path[i]));
			continue;
		}
		if (st == 3 && host_path(sw, host, sizeof(host), have.path[i]) == 0 &&
		    (r = cvm_do_unlink_at(AT_FDCWD, host, have.path[i])) < 0) {
			r = cvm_err(r, "cannot remove the link '%s': %s", cvm_safe(have.path[i]),
				    strerror(-r));
			goto out;
		}
		cvm_fault("use-unlinking");
	}
	r = write_record(sw, NULL, &want);
	if (r < 0) {
		r = cvm_err(r, "cannot record the links of CUDA %s: %s", sw->cuda, cvm_strerror(r));
		goto out;
	}
	r = update_loader(sw);
out:
	links_free(&want);
	links_free(&have);
	return r;
}

static int managed(const struct cvm_switch *sw, char ***paths, size_t *n)
{
	struct links have = { 0 };
	int r = read_record(sw, &have);

	free(have.target);
	*paths = r < 0 ? NULL : have.path;
	*n = r < 0 ? 0 : have.n;
	if (r < 0)
		cvm_strv_free(have.path, have.n);
	return r;
}

static const struct cvm_backend linux_backend = {
	.name = "linux",
	.prepare = prepare,
	.finish = finish,
	.managed = managed,
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
