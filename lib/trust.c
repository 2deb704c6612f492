/* SPDX-License-Identifier: MIT */
/* Is this path, and everything the kernel looks at to reach it, writable only by root or us? */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "error.h"
#include "fsutil.h"
#include "json.h"
#include "out.h"
#include "trust.h"

/* As many links as the kernel follows in one lookup (MAXSYMLINKS). */
#define MAX_LINKS 40

static bool owner_ok(uid_t uid)
{
	return uid == 0 || uid == geteuid();
}

/* Someone other than the owner, root and us can write it. */
static const char *writers(const struct stat *st)
{
	if (st->st_mode & S_IWOTH)
		return "every user can write it";
	if ((st->st_mode & S_IWGRP) && st->st_gid != 0 && st->st_gid != getegid())
		return "another group can write it";
	return NULL;
}

const char *cvm_trust_stat_why(const struct stat *st)
{
	if (!owner_ok(st->st_uid))
		return "it belongs to another user";
	return writers(st);
}

const char *cvm_trust_installed_why(const struct stat *st, char *buf, size_t len)
{
	unsigned mode = (unsigned)(st->st_mode & 07777);
	const char *why;

	if (!S_ISREG(st->st_mode) && !S_ISDIR(st->st_mode) && !S_ISLNK(st->st_mode)) {
		snprintf(buf, len, "not a regular file, folder or symlink");
		return buf;
	}
	/* No owners or mode bits on Windows (trust.h): only what an object is counts there. */
	if (CVM_WINDOWS)
		return NULL;
	if (!owner_ok(st->st_uid)) {
		snprintf(buf, len, "it belongs to another user (uid %u)", (unsigned)st->st_uid);
		return buf;
	}
	/* A link's mode means nothing; its folder is checked. */
	if (S_ISLNK(st->st_mode))
		return NULL;
	why = writers(st);
	if (why)
		snprintf(buf, len, "%s (mode %04o)", why, mode);
	else if (mode & 07000)	/* set-uid, set-gid, sticky: mingw names none of them */
		snprintf(buf, len, "a set-id or sticky bit is set (mode %04o)", mode);
	else if (S_ISDIR(st->st_mode) && mode != 0755)
		snprintf(buf, len, "mode %04o, not the 0755 install gives a folder", mode);
	else if (S_ISREG(st->st_mode) && mode != 0644 && mode != 0755)
		snprintf(buf, len, "mode %04o, not the 0644 or 0755 install gives a file", mode);
	else
		return NULL;
	return buf;
}

int cvm_trust_obey(const char *path, const char *shown, const struct stat *st, const char *what)
{
	struct cvm_trust t = { "", "" };
	struct stat own;
	const char *why;

	if (CVM_WINDOWS)
		return 0;
	if (!st && stat(path, &own) == 0)
		st = &own;
	why = st ? cvm_trust_stat_why(st) : "it cannot be looked up";
	if (!why && cvm_trust_check(path, &t) == 0)
		return 0;
	if (why)
		cvm_warn("ignoring '%s' (owner uid %u, mode %04o): %s; %s is obeyed only when root or "
			 "you own it and no one else can write it", cvm_safe(shown),
			 st ? (unsigned)st->st_uid : 0u, st ? (unsigned)(st->st_mode & 07777) : 0u, why,
			 what);
	else
		cvm_warn("ignoring '%s' (owner uid %u, mode %04o): '%s' on the way to it: %s; %s is "
			 "obeyed only when it and the folders above it can be changed by no one but "
			 "root and you", cvm_safe(shown), (unsigned)st->st_uid,
			 (unsigned)(st->st_mode & 07777), cvm_safe(t.path), t.why, what);
	return 1;
}

static int untrusted(struct cvm_trust *t, const char *path, const struct stat *st, const char *why)
{
	snprintf(t->path, sizeof(t->path), "%s", path);
	if (!owner_ok(st->st_uid))
		snprintf(t->why, sizeof(t->why), "it belongs to another user (uid %u)",
			 (unsigned)st->st_uid);
	else
		snprintf(t->why, sizeof(t->why), "%s (mode %04o)", why, (unsigned)(st->st_mode & 07777));
	return -CVM_E_PERM;
}

static int lookup_failed(struct cvm_trust *t, const char *path, int e)
{
	snprintf(t->path, sizeof(t->path), "%s", path);
	snprintf(t->why, sizeof(t->why), "%s", strerror(e));
	return -e;
}

/* Drops the last component of an absolute path ("/" stays "/"). */
static void parent_of(char *p)
{
	char *s = strrchr(p, '/');

	if (s == p)
		p[1] = '\0';
	else if (s)
		*s = '\0';
}

int cvm_trust_check(const char *path, struct cvm_trust *t)
{
	/* todo: what is left to resolve; cur: the resolved part, every object on it checked. */
	char todo[PATH_MAX], cur[PATH_MAX], next[PATH_MAX], body[PATH_MAX], cwd[PATH_MAX];
	struct stat pst, st;
	int links = 0;

	t->path[0] = t->why[0] = '\0';
	/*
	 * Windows guards folders with ACLs, not owners and mode bits: what
	 * this walk checks does not exist there. Checking the ACLs of the
	 * path (no write for Users on %ProgramData%\cudnnvm) is not done yet.
	 */
	if (CVM_WINDOWS)
		return 0;
	if (path[0] != '/') {
		if (!getcwd(cwd, sizeof(cwd)))
			return lookup_failed(t, path, errno);
		if (cvm_fmt(todo, sizeof(todo), "%s/%s", cwd, path) < 0)
			return lookup_failed(t, path, ENAMETOOLONG);
	} else if (cvm_fmt(todo, sizeof(todo), "%s", path) < 0) {
		return lookup_failed(t, path, ENAMETOOLONG);
	}
	strcpy(cur, "/");
	if (lstat(cur, &pst) < 0)
		return lookup_failed(t, cur, errno);
	if (!owner_ok(pst.st_uid))
		return untrusted(t, cur, &pst, NULL);
	st = pst;
	for (;;) {
		char *p = todo, *comp, *rest;
		const char *why;

		while (*p == '/')
			p++;
		if (!*p)
			break;
		comp = p;
		rest = strchrnul(p, '/');
		if (*rest)
			*rest++ = '\0';
		if (!strcmp(comp, ".")) {
			memmove(todo, rest, strlen(rest) + 1);
			continue;
		}
		if (!strcmp(comp, "..")) {
			parent_of(cur);
			if (lstat(cur, &pst) < 0)
				return lookup_failed(t, cur, errno);
			st = pst;
			memmove(todo, rest, strlen(rest) + 1);
			continue;
		}
		/* cur is a folder looked in: trusted, or sticky and this entry ours or root's. */
		why = writers(&pst);
		if (cvm_fmt(next, sizeof(next), "%s%s%s", strcmp(cur, "/") ? cur : "",
			    "/", comp) < 0)
			return lookup_failed(t, path, ENAMETOOLONG);
		if (lstat(next, &st) < 0)
			return lookup_failed(t, next, errno);
		if (why && (pst.st_mode & S_ISVTX) && !owner_ok(st.st_uid)) {
			untrusted(t, cur, &pst, why);
			snprintf(t->why, sizeof(t->why), "%s (mode %04o), and '%.40s' in it belongs to "
				 "another user (uid %u)", why, (unsigned)(pst.st_mode & 07777), comp,
				 (unsigned)st.st_uid);
			return -CVM_E_PERM;
		}
		if (why && !(pst.st_mode & S_ISVTX))
			return untrusted(t, cur, &pst, why);
		if (S_ISLNK(st.st_mode)) {
			ssize_t k;

			if (++links > MAX_LINKS)
				return lookup_failed(t, next, ELOOP);
			k = readlink(next, body, sizeof(body) - 1);
			if (k < 0)
				return lookup_failed(t, next, errno);
			body[k] = '\0';
			/* The target, then what was left after the link. */
			if (cvm_fmt(next, sizeof(next), "%s/%s", body, rest) < 0)
				return lookup_failed(t, path, ENAMETOOLONG);
			memcpy(todo, next, strlen(next) + 1);
			if (body[0] == '/') {
				strcpy(cur, "/");
				if (lstat(cur, &pst) < 0)
					return lookup_failed(t, cur, errno);
			}
			st = pst;
			continue;
		}
		if (!owner_ok(st.st_uid))
			return untrusted(t, next, &st, NULL);
		memcpy(cur, next, strlen(next) + 1);
		pst = st;
		memmove(todo, rest, strlen(rest) + 1);
	}
	/* The object itself: no sticky exception. */
	if (!owner_ok(st.st_uid) || writers(&st))
		return untrusted(t, cur, &st, writers(&st));
	return 0;
}

/* What was skipped, for --json: a short list, kept (reachable) for the life of the process. */
static struct skipped {
	char *what, *path, *why;
} skipped[16];
static size_t nskipped;

void cvm_trust_skip(const char *what, const struct cvm_trust *t)
{
	struct skipped *k = &skipped[nskipped];

	/* Said once, however often a command looks (doctor finds the toolkits twice). */
	for (size_t i = 0; i < nskipped; i++)
		if (!strcmp(skipped[i].what, what) && !strcmp(skipped[i].path, t->path))
			return;
	cvm_warn("skipping %s: '%s': %s (cudnnvm runs and loads nothing that another user "
		 "could have written)", cvm_safe(what), cvm_safe(t->path), t->why);
	if (nskipped == sizeof(skipped) / sizeof(skipped[0]))
		return;
	k->what = strdup(what);
	k->path = strdup(t->path);
	k->why = strdup(t->why);
	if (!k->what || !k->path || !k->why) {
		free(k->what);
		free(k->path);
		free(k->why);
		return;
	}
	nskipped++;
}

void cvm_trust_skipped_json(cvm_json *obj)
{
	cvm_json *arr;

	if (!obj || !nskipped)
		return;
	arr = cvm_json_array();
	if (!arr || cvm_json_set(obj, "skipped", arr) < 0)
		return;
	for (size_t i = 0; i < nskipped; i++) {
		cvm_json *o = cvm_json_object();

		if (!o || cvm_json_append(arr, o) < 0)
			return;
		cvm_json_set(o, "what", cvm_json_string(skipped[i].what));
		cvm_json_set(o, "path", cvm_json_string(skipped[i].path));
		cvm_json_set(o, "why", cvm_json_string(skipped[i].why));
	}
}
