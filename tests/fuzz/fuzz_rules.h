/* SPDX-License-Identifier: MIT */
#ifndef CVM_FUZZ_RULES_H
#define CVM_FUZZ_RULES_H

/*
 * An independent reading of the entry rules of entry.h, written from the
 * header's words rather than from entry.c, for the entry and archive targets:
 * a model of cvm_entry_check to compare against, and the invariants that any
 * accepted entry must meet whatever the model says.
 */
#include "fuzz.h"

#include "archive.h"
#include "entry.h"
#include "error.h"

/* Calls fn on each component of s that is neither empty nor "."; stops when fn returns false. */
static inline bool fuzz_each_part(const char *s, bool (*fn)(const char *p, size_t n, void *arg),
				  void *arg)
{
	while (*s) {
		size_t n = strcspn(s, "/");

		if (n && !(n == 1 && s[0] == '.') && !fn(s, n, arg))
			return false;
		s += n;
		if (*s == '/')
			s++;
	}
	return true;
}

static inline bool fuzz_is_dotdot(const char *p, size_t n)
{
	return n == 2 && p[0] == '.' && p[1] == '.';
}

static bool part_not_dotdot(const char *p, size_t n, void *arg)
{
	(void)arg;
	return !fuzz_is_dotdot(p, n);
}

static bool part_count(const char *p, size_t n, void *arg)
{
	(void)p;
	(void)n;
	++*(size_t *)arg;
	return true;
}

/* The name rule: not empty, no control character, not absolute, no ".." part. */
static inline bool fuzz_name_ok(const char *path)
{
	return *path && !fuzz_has_control(path) && path[0] != '/' &&
	       fuzz_each_part(path, part_not_dotdot, NULL);
}

struct link_walk {
	size_t ups;
	bool named, bad;
};

static bool part_link(const char *p, size_t n, void *arg)
{
	struct link_walk *w = arg;

	if (fuzz_is_dotdot(p, n)) {
		if (w->named)
			w->bad = true;
		w->ups++;
	} else {
		w->named = true;
	}
	return !w->bad;
}

/*
 * The symlink rule of entry.h: relative, its only ".." parts lead it, and
 * there are no more of them than the link's own depth (the folders above
 * it inside the version). rel is a normalised name.
 */
static inline bool fuzz_link_ok(const char *rel, const char *target)
{
	struct link_walk w = { 0, false, false };
	size_t parts = 0;

	if (!*target || fuzz_has_control(target) || target[0] == '/')
		return false;
	fuzz_each_part(rel, part_count, &parts);
	if (!fuzz_each_part(target, part_link, &w))
		return false;
	return w.ups + 1 <= (parts ? parts : 1);
}

struct lex {
	long level;
	bool out;
};

static bool part_lex(const char *p, size_t n, void *arg)
{
	struct lex *l = arg;

	l->level += fuzz_is_dotdot(p, n) ? -1 : 1;
	if (l->level < 0)
		l->out = true;
	return !l->out;
}

/*
 * The property the rule exists for, checked in another way: resolving
 * target by hand from the link's folder never climbs above the version root.
 */
static inline bool fuzz_link_stays_inside(const char *rel, const char *target)
{
	struct lex l = { 0, false };
	size_t parts = 0;

	if (target[0] == '/')
		return false;
	fuzz_each_part(rel, part_count, &parts);
	l.level = parts ? (long)parts - 1 : 0;
	fuzz_each_part(target, part_lex, &l);
	return !l.out;
}

static bool part_plain(const char *p, size_t n, void *arg)
{
	(void)arg;
	return !fuzz_is_dotdot(p, n);
}

/* What any rel that cvm_entry_check accepted must be, whatever the rules say otherwise. */
static inline void fuzz_assert_accepted(const struct cvm_entry *e, const char *rel)
{
	const char *p;

	FUZZ_ASSERT(e->type == CVM_ENTRY_FILE || e->type == CVM_ENTRY_DIR ||
		    e->type == CVM_ENTRY_SYMLINK, "accepted type %d of '%s'", (int)e->type, e->path);
	FUZZ_ASSERT(rel[0] != '\0', "empty rel from '%s'", e->path);
	FUZZ_ASSERT(rel[0] != '/', "absolute rel '%s' from '%s'", rel, e->path);
	FUZZ_ASSERT(!fuzz_has_control(rel), "control character in rel from '%s'", e->path);
	FUZZ_ASSERT(fuzz_each_part(rel, part_plain, NULL), "'..' in rel '%s'", rel);
	/* Normalised: no empty and no "." parts, so no "//", no trailing "/". */
	for (p = rel; *p; p += strcspn(p, "/"), p += *p == '/') {
		size_t n = strcspn(p, "/");

		FUZZ_ASSERT(n && !(n == 1 && *p == '.'), "unnormalised rel '%s'", rel);
	}
	FUZZ_ASSERT(rel[strlen(rel) - 1] != '/', "trailing slash in rel '%s'", rel);
	FUZZ_ASSERT(strcmp(rel, ".cudnnvm") && strncmp(rel, ".cudnnvm/", 9),
		    "reserved rel '%s'", rel);
	if (e->type == CVM_ENTRY_SYMLINK) {
		FUZZ_ASSERT(e->link && e->link[0] != '/', "absolute link of '%s'", rel);
		FUZZ_ASSERT(!fuzz_has_control(e->link), "control character in link of '%s'", rel);
		FUZZ_ASSERT(fuzz_link_stays_inside(rel, e->link), "'%s' -> '%s' escapes", rel,
			    e->link);
	}
}

/* The state and outcome of one cvm_entry_check call, as the rules of entry.h describe them. */
struct fuzz_model {
	int r;			/* 0, 1, -CVM_E_UNSAFE */
	bool exact;		/* false where a length limit makes the outcome a matter of detail */
	char rel[8192];
	struct cvm_entry_state st;
};

static inline void fuzz_model_entry(struct fuzz_model *m, const struct cvm_entry_state *st,
				    const struct cvm_entry *e, size_t rel_len)
{
	size_t len = strlen(e->path), o = 0, nparts = 0, toplen;
	char *norm = malloc(len + 1);
	const char *s, *rest;

	if (!norm)
		abort();
	m->st = *st;
	m->exact = true;
	m->rel[0] = '\0';
	m->r = -CVM_E_UNSAFE;
	/* The bounds (entry.h): entries of one archive, bytes of a component, depth. */
	if (++m->st.entries > CVM_ENTRY_MAX_ENTRIES)
		goto out;
	if (!fuzz_name_ok(e->path) || e->type == CVM_ENTRY_HARDLINK || e->type == CVM_ENTRY_OTHER)
		goto out;
	for (s = e->path; *s;) {
		size_t n = strcspn(s, "/");

		if (n && !(n == 1 && *s == '.')) {
			if (n > CVM_ENTRY_MAX_COMPONENT || nparts > CVM_ENTRY_MAX_DEPTH)
				goto out;
			if (o)
				norm[o++] = '/';
			memcpy(norm + o, s, n);
			o += n;
			nparts++;
		}
		s += n;
		if (*s == '/')
			s++;
	}
	norm[o] = '\0';
	if (!o) {
		m->r = 1;
		goto out;
	}
	/* entry.c's buffer is 4096 bytes: near that, refusing is right and either cut-off is. */
	if (o >= 4094) {
		m->exact = false;
		goto out;
	}
	toplen = strcspn(norm, "/");
	if (toplen >= sizeof(st->top))
		goto out;
	if (nparts == 1 && e->type != CVM_ENTRY_DIR)
		goto out;
	if (!m->st.have_top) {
		memcpy(m->st.top, norm, toplen);
		m->st.top[toplen] = '\0';
		m->st.have_top = true;
		m->st.layout = strcmp(m->st.top, "cuda") ? CVM_LAYOUT_NVIDIA : CVM_LAYOUT_LEGACY;
		m->st.windows = m->st.windows || !strncmp(m->st.top, "cudnn-windows-", 14);
	} else if (strlen(m->st.top) != toplen || memcmp(m->st.top, norm, toplen)) {
		goto out;
	}
	/* A Windows archive's names also follow Windows' rules (test_entry has them one by one). */
	if (m->st.windows && cvm_entry_windows_problem(e->path))
		goto out;
	if (nparts == 1) {
		m->r = 1;
		goto out;
	}
	rest = norm + toplen + 1;
	if (m->st.layout == CVM_LAYOUT_LEGACY && !strncmp(rest, "lib64", 5) &&
	    (rest[5] == '/' || rest[5] == '\0'))
		snprintf(m->rel, sizeof(m->rel), "lib%s", rest + 5);
	else
		snprintf(m->rel, sizeof(m->rel), "%s", rest);
	if (strlen(m->rel) >= rel_len)
		goto out;
	if (!strcmp(m->rel, ".cudnnvm") || !strncmp(m->rel, ".cudnnvm/", 9))
		goto out;
	if (e->type == CVM_ENTRY_SYMLINK && !fuzz_link_ok(m->rel, e->link))
		goto out;
	m->r = 0;
out:
	if (m->r != 0)
		m->rel[0] = '\0';
	free(norm);
}

#endif
