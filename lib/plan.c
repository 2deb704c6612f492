/* SPDX-License-Identifier: MIT */
/*
 * --dry-run (plan.h): every change cudnnvm makes goes through here, where
 * it is either made or described. One line per change on stdout, or the
 * "changes" of the --json document.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "alloc.h"
#include "fsutil.h"
#include "json.h"
#include "out.h"
#include "plan.h"

/* Whether text was described already; otherwise it is remembered. */
static bool seen(struct cvm_plan *p, const char *text)
{
	char *t;

	for (size_t i = 0; i < p->nsaid; i++)
		if (!strcmp(p->said[i], text))
			return true;
	if (CVM_GROW(p->said, p->nsaid + 1, p->said_cap) < 0)
		return false;
	t = strdup(text);
	if (!t)
		return false;
	p->said[p->nsaid++] = t;
	return false;
}

bool cvm_plan_dry(const struct cvm_plan *p)
{
	return p && p->dry;
}

void cvm_plan_release(struct cvm_plan *p)
{
	for (size_t i = 0; i < p->nsaid; i++)
		free(p->said[i]);
	free(p->said);
	cvm_json_free(p->changes);
	p->said = NULL;
	p->nsaid = p->said_cap = 0;
	p->changes = NULL;
}

bool cvm_plan_describe(struct cvm_plan *p, const char *action, const char *path, const char *target,
		       const char *detail, ...)
{
	char more[1024] = "", text[4096];
	va_list ap;

	if (!cvm_plan_dry(p))
		return false;
	if (detail) {
		va_start(ap, detail);
		vsnprintf(more, sizeof(more), detail, ap);
		va_end(ap);
	}
	snprintf(text, sizeof(text), "would %s %s%s%s%s%s", action, cvm_safe(path),
		 target ? " -> " : "", target ? cvm_safe(target) : "", more[0] ? " " : "", more);
	/* A file written twice in one run (a record before and after a switch) is one change. */
	if (seen(p, text))
		return true;
	if (!cvm_out.json) {
		cvm_print("%s", text);
		return true;
	}
	if (!p->changes)
		p->changes = cvm_json_array();
	cvm_json *c = cvm_json_object();
	if (!p->changes || !c) {
		cvm_json_free(c);
		return true;
	}
	cvm_json_set(c, "action", cvm_json_string(action));
	cvm_json_set(c, "path", cvm_json_string(path));
	cvm_json_set(c, "target", cvm_json_string(target));
	cvm_json_set(c, "detail", cvm_json_string(more[0] ? more : NULL));
	cvm_json_set(c, "text", cvm_json_string(text));
	cvm_json_append(p->changes, c);
	return true;
}

void cvm_plan_json(struct cvm_plan *p, cvm_json *doc)
{
	if (!cvm_plan_dry(p) || !doc)
		return;
	cvm_json_set(doc, "dry_run", cvm_json_bool(true));
	cvm_json_set(doc, "changes", p->changes ? p->changes : cvm_json_array());
	p->changes = NULL;
}

static bool exists_at(int dirfd, const char *name)
{
	struct stat st;

	return fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0;
}

int cvm_do_mkdir_at(struct cvm_plan *p, int dirfd, const char *name, mode_t mode, const char *shown)
{
	if (cvm_plan_dry(p)) {
		if (!exists_at(dirfd, name))
			cvm_plan_describe(p, "create folder", shown, NULL, NULL);
		return 0;
	}
	return mkdirat(dirfd, name, mode) < 0 && errno != EEXIST ? -errno : 0;
}

/* 0 when the folder that path would be made in may be written, else -errno. */
static int writable_parent(const char *path)
{
	char dir[4096], *slash;

	snprintf(dir, sizeof(dir), "%s", path);
	slash = strrchr(dir, '/');
	if (!slash)
		return 0;
	if (slash == dir)
		slash[1] = '\0';
	else
		*slash = '\0';
	return access(dir, W_OK) < 0 ? -errno : 0;
}

int cvm_do_mkdir_p(struct cvm_plan *p, const char *host, mode_t mode, const char *shown_root)
{
	size_t rl = strlen(shown_root);
	char buf[4096];
	int r;

	bool first = true;

	if (!cvm_plan_dry(p))
		return cvm_mkdir_p_at(AT_FDCWD, host, mode);
	if (cvm_fmt(buf, sizeof(buf), "%s", host) < 0)
		return -ENAMETOOLONG;
	/* Each missing folder, from the top down. */
	for (char *q = buf + 1;; q++) {
		if (*q != '/' && *q != '\0')
			continue;
		char c = *q;
		*q = '\0';
		if (!exists_at(AT_FDCWD, buf)) {
			/* Where the real run could not make it, neither does the plan. */
			if (first && (r = writable_parent(buf)) < 0)
				return r;
			first = false;
			if (strlen(buf) > rl)
				cvm_plan_describe(p, "create folder", rl && !strncmp(buf, shown_root, rl) ?
						  buf + rl : buf, NULL, NULL);
		}
		*q = c;
		if (!c)
			break;
	}
	return 0;
}

int cvm_do_symlink_at(struct cvm_plan *p, int dirfd, const char *target, const char *name,
		      const char *shown)
{
	if (cvm_plan_describe(p, "create link", shown, target, NULL))
		return 0;
	return symlinkat(target, dirfd, name) < 0 ? -errno : 0;
}

int cvm_do_symlink_replace_at(struct cvm_plan *p, int dirfd, const char *target, const char *name,
			      const char *shown)
{
	char have[4096];
	ssize_t k;

	if (!cvm_plan_dry(p))
		return cvm_symlink_replace_at(dirfd, target, name);
	k = readlinkat(dirfd, name, have, sizeof(have) - 1);
	if (k >= 0) {
		have[k] = '\0';
		/* The real run renames an equal link over it: nothing a reader could tell. */
		if (strcmp(have, target))
			cvm_plan_describe(p, "replace link", shown, target, "(was -> %s)", cvm_safe(have));
	} else if (exists_at(dirfd, name)) {
		cvm_plan_describe(p, "replace", shown, target, "(a file now, by a link)");
	} else {
		cvm_plan_describe(p, "create link", shown, target, NULL);
	}
	return 0;
}

int cvm_do_unlink_at(struct cvm_plan *p, int dirfd, const char *name, const char *shown)
{
	if (cvm_plan_dry(p)) {
		if (exists_at(dirfd, name))
			cvm_plan_describe(p, "remove", shown, NULL, NULL);
		return 0;
	}
	return unlinkat(dirfd, name, 0) < 0 && errno != ENOENT ? -errno : 0;
}

int cvm_do_write_file_at(struct cvm_plan *p, int dirfd, const char *name, const void *buf,
			 size_t len, mode_t mode, const char *shown)
{
	char *have = NULL;
	size_t hl = 0;

	if (!cvm_plan_dry(p))
		return cvm_write_file_at(dirfd, name, buf, len, mode);
	/* The same bytes again change nothing a reader could tell (dirfd -1: a folder not made). */
	if ((dirfd >= 0 || dirfd == AT_FDCWD) && cvm_read_file_at(dirfd, name, len + 1, &have, &hl) < 0)
		have = NULL;
	if (!have || hl != len || memcmp(have, buf, len))
		cvm_plan_describe(p, "write", shown, NULL, "(%zu bytes)", len);
	free(have);
	return 0;
}

int cvm_do_link(struct cvm_plan *p, const char *from, const char *to, const char *shown_from,
		const char *shown_to)
{
	if (cvm_plan_describe(p, "keep", shown_from, NULL, "as %s (a hard link)", cvm_safe(shown_to)))
		return 0;
	return link(from, to) < 0 ? -errno : 0;
}

int cvm_do_rename(struct cvm_plan *p, const char *from, const char *to, const char *shown_from,
		  const char *shown_to)
{
	if (cvm_plan_describe(p, "move", shown_from, NULL, "to %s", cvm_safe(shown_to)))
		return 0;
	return rename(from, to) < 0 ? -errno : 0;
}

int cvm_do_rm_rf_at(struct cvm_plan *p, int dirfd, const char *name, const char *shown)
{
	if (cvm_plan_describe(p, "remove", shown, NULL, NULL))
		return 0;
	return cvm_rm_rf_at(dirfd, name);
}
