/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "entry.h"
#include "error.h"
#include "out.h"

static int unsafe(const char *archive, const char *entry, const char *why);

static bool has_control(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			return true;
	return false;
}

const char *cvm_entry_name_problem(const char *path)
{
	const char *p = path, *e;

	if (!*path)
		return "empty name";
	if (has_control(path))
		return "control character in the name";
	if (*path == '/')
		return "absolute name";
	while (*p) {
		e = strchrnul(p, '/');
		if (e - p == 2 && p[0] == '.' && p[1] == '.')
			return "'..' in the name";
		p = *e ? e + 1 : e;
	}
	return NULL;
}

static bool reserved(const char *p, size_t n)
{
	static const char *const names[] = { "CON", "PRN", "AUX", "NUL", "CONIN$", "CONOUT$" };
	size_t base = 0;

	/* "nul.txt" and "nul .txt" are NUL too: the name up to its first dot, spaces dropped. */
	while (base < n && p[base] != '.')
		base++;
	while (base && p[base - 1] == ' ')
		base--;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (strlen(names[i]) == base && !strncasecmp(p, names[i], base))
			return true;
	/* COM1-COM9, LPT1-LPT9 (and the superscript digits Windows also reserves: ¹ ² ³). */
	if ((base == 4 || base == 5) && (!strncasecmp(p, "COM", 3) || !strncasecmp(p, "LPT", 3)))
		return base == 4 ? p[3] >= '1' && p[3] <= '9'
				 : (unsigned char)p[3] == 0xc2 &&
				   ((unsigned char)p[4] == 0xb9 || (unsigned char)p[4] == 0xb2 ||
				    (unsigned char)p[4] == 0xb3);
	return false;
}

/*
 * The form of an 8.3 short name that NTFS makes up for a long one
 * (CUDNN6~1.DLL, PROGRA~1): at most 8 bytes, '~' and digits ending them,
 * then at most one dot and 3 bytes. With short names on, such a name can
 * already be another file's alias, and writing it writes that file.
 */
static bool short_alias(const char *p, size_t n)
{
	const char *dot = memchr(p, '.', n);
	size_t base = dot ? (size_t)(dot - p) : n, d = base;

	if (base > 8 || (dot && (n - base - 1 > 3 || memchr(dot + 1, '.', n - base - 1))))
		return false;
	while (d && p[d - 1] >= '0' && p[d - 1] <= '9')
		d--;
	return d < base && d > 1 && p[d - 1] == '~';
}

const char *cvm_entry_windows_problem(const char *path)
{
	const char *p = path, *e;

	if (strchr(path, '\\'))
		return "backslash in the name (a path separator on Windows)";
	if (strchr(path, ':'))
		return "':' in the name (a drive letter or an alternate data stream on Windows)";
	if (strpbrk(path, "<>\"|?*"))
		return "a character Windows does not allow in names (<>\"|?*)";
	if (!cvm_utf8_valid(path))
		return "a name that is not UTF-8 (Windows names are Unicode)";
	while (*p) {
		e = strchrnul(p, '/');
		if (e > p && (e[-1] == '.' || e[-1] == ' ') &&
		    !(e - p == 1 && p[0] == '.') && !(e - p == 2 && p[0] == '.' && p[1] == '.'))
			return "a name that ends in a dot or a space (Windows drops them)";
		if (reserved(p, (size_t)(e - p)))
			return "a reserved Windows device name (CON, PRN, AUX, NUL, COM1-9, LPT1-9, "
			       "COM\xc2\xb9-\xc2\xb3, LPT\xc2\xb9-\xc2\xb3)";
		if (short_alias(p, (size_t)(e - p)))
			return "a name of the 8.3 short-name form (NAME~N.EXT: on Windows it can be "
			       "another file's short name)";
		p = *e ? e + 1 : e;
	}
	return NULL;
}

/*
 * The next code point of a UTF-8 name, as NTFS's upcase table compares it:
 * ASCII, Latin-1, Latin Extended-A, Greek and Cyrillic letters upper-cased
 * (the scripts a file name in an archive plausibly uses; elsewhere names
 * compare exactly, and on Windows the extractor's exclusive create still
 * sees a twin file). Bytes that are no UTF-8 stand for themselves.
 */
static uint32_t next_upper(const unsigned char **s)
{
	const unsigned char *p = *s;
	size_t n = cvm_utf8_len(p);
	uint32_t c;

	if (n <= 1) {
		*s = p + 1;
		return n ? (p[0] >= 'a' && p[0] <= 'z' ? p[0] - 0x20u : p[0]) : 0x110000u + p[0];
	}
	c = p[0] & (0x7fu >> n);
	for (size_t i = 1; i < n; i++)
		c = c << 6 | (p[i] & 0x3fu);
	*s = p + n;
	if ((c >= 0xe0 && c <= 0xfe && c != 0xf7) || (c >= 0x3b1 && c <= 0x3cb && c != 0x3c2) ||
	    (c >= 0x430 && c <= 0x44f))
		return c - 0x20;
	if (c == 0xff)
		return 0x178;
	if (c == 0x3c2)
		return 0x3a3;
	if (c >= 0x450 && c <= 0x45f)
		return c - 0x50;
	/* Latin Extended-A pairs: even upper, odd lower, but odd upper in 0139-0148 and 0179-017E. */
	if ((c >= 0x100 && c <= 0x12f) || (c >= 0x132 && c <= 0x137) || (c >= 0x14a && c <= 0x177))
		return c & ~1u;
	if ((c >= 0x139 && c <= 0x148) || (c >= 0x179 && c <= 0x17e))
		return c - !(c & 1);
	return c;
}

/* Whether the n bytes at a and at b are one name to NTFS. */
static bool same_upper(const char *a, const char *b, size_t n)
{
	const unsigned char *p = (const unsigned char *)a, *q = (const unsigned char *)b;
	const unsigned char *pe = p + n, *qe = q + n;

	while (p < pe && q < qe)
		if (next_upper(&p) != next_upper(&q))
			return false;
	return p == pe && q == qe;
}

static uint64_t hash_upper(const char *s, size_t n)
{
	const unsigned char *p = (const unsigned char *)s, *e = p + n;
	uint64_t h = 1469598103934665603u;

	while (p < e)
		h = (h ^ next_upper(&p)) * 1099511628211u;
	return h;
}

/* Every name a Windows archive used so far (the folders its files imply too). */
struct cvm_entry_names {
	struct seen {
		char *path;	/* NULL: a free slot */
		size_t len;
		bool dir;
	} *v;
	size_t cap, n;
};

void cvm_entry_state_free(struct cvm_entry_state *st)
{
	if (!st->names)
		return;
	for (size_t i = 0; i < st->names->cap; i++)
		free(st->names->v[i].path);
	free(st->names->v);
	free(st->names);
	st->names = NULL;
}

/* The slot of the name NTFS would take s (n bytes) for, or the free slot where it goes. */
static struct seen *seen_slot(struct cvm_entry_names *t, const char *s, size_t n)
{
	size_t i = (size_t)hash_upper(s, n) & (t->cap - 1);

	while (t->v[i].path && !(t->v[i].len == n && same_upper(t->v[i].path, s, n)))
		i = (i + 1) & (t->cap - 1);
	return &t->v[i];
}

static int seen_grow(struct cvm_entry_names *t)
{
	struct cvm_entry_names b = { calloc(t->cap ? 2 * t->cap : 256, sizeof(*b.v)),
				     t->cap ? 2 * t->cap : 256, t->n };

	if (!b.v)
		return -ENOMEM;
	for (size_t i = 0; i < t->cap; i++)
		if (t->v[i].path)
			*seen_slot(&b, t->v[i].path, t->v[i].len) = t->v[i];
	free(t->v);
	*t = b;
	return 0;
}

/*
 * rest (below the top folder) against the names used before it, each of
 * its folders and then itself: NTFS takes names that differ only in case
 * for one, so such a twin would merge into the first (and the record
 * name what is not on disk). Refused rather than merged: the same archive
 * gives the same version on Linux (--platform windows-x86_64) and on
 * Windows, and no cuDNN archive has one. A second file of one name, or a
 * file and a folder, are refused as what they are.
 */
static int check_seen(struct cvm_entry_state *st, const char *archive_name, const char *path,
		      const char *rest, bool dir)
{
	char msg[2 * 4096 + 64];
	const char *e = rest;
	struct seen *s;

	if (!st->names && !(st->names = calloc(1, sizeof(*st->names))))
		return -ENOMEM;
	do {
		size_t n;
		bool here_dir;

		e = strchrnul(e + (e != rest), '/');
		n = (size_t)(e - rest);
		here_dir = *e || dir;
		if (2 * (st->names->n + 1) > st->names->cap && seen_grow(st->names) < 0)
			return -ENOMEM;
		s = seen_slot(st->names, rest, n);
		if (!s->path) {
			if (!(s->path = strndup(rest, n)))
				return -ENOMEM;
			s->len = n;
			s->dir = here_dir;
			st->names->n++;
			continue;
		}
		if (memcmp(s->path, rest, n))
			snprintf(msg, sizeof(msg), "'%.*s' and '%s' differ only in case (one name on "
				 "Windows)", (int)n, rest, cvm_safe(s->path));
		else if (s->dir && here_dir)
			continue;
		else if (s->dir != here_dir)
			snprintf(msg, sizeof(msg), "a file and a folder both named '%s'", cvm_safe(s->path));
		else
			snprintf(msg, sizeof(msg), "a second entry named '%s'", cvm_safe(s->path));
		return unsafe(archive_name, path, msg);
	} while (*e);
	return 0;
}

const char *cvm_entry_link_problem(const char *rel, const char *target)
{
	const char *p = target, *e;
	unsigned depth = 0, up = 0;
	bool down = false;

	if (!target || !*target)
		return "empty symlink target";
	if (has_control(target))
		return "control character in the symlink target";
	if (*target == '/')
		return "symlink to an absolute path";
	for (e = rel; *e; e++)
		depth += *e == '/';
	/*
	 * Leading ".." components climb from the link's own folder, which the
	 * extractor created without following any symlink, so counting them
	 * against its depth is exact; after the first downward component a
	 * ".." could climb out through another symlink, so it is refused.
	 */
	while (*p) {
		e = strchrnul(p, '/');
		if (e - p == 2 && p[0] == '.' && p[1] == '.') {
			if (down)
				return "'..' after a folder name in the symlink target";
			if (++up > depth)
				return "symlink target outside the version";
		} else if (e - p && !(e - p == 1 && p[0] == '.')) {
			down = true;
		}
		p = *e ? e + 1 : e;
	}
	return NULL;
}

static int unsafe(const char *archive, const char *entry, const char *why)
{
	return cvm_err(-CVM_E_UNSAFE, "unsafe archive '%s': entry '%s': %s", cvm_safe(archive),
		       cvm_safe(entry), why);
}

int cvm_entry_check(struct cvm_entry_state *st, const char *archive_name,
		    const struct cvm_entry *e, char *rel, size_t rel_len)
{
	char norm[4096], top[256], msg[96];
	const char *p, *q, *why, *rest;
	size_t o = 0, toplen;
	unsigned depth = 0;

	if (++st->entries > CVM_ENTRY_MAX_ENTRIES) {
		snprintf(msg, sizeof(msg), "more than %d entries (no cuDNN archive has as many)",
			 CVM_ENTRY_MAX_ENTRIES);
		return unsafe(archive_name, e->path, msg);
	}
	why = cvm_entry_name_problem(e->path);
	if (why)
		return unsafe(archive_name, e->path, why);
	if (e->type == CVM_ENTRY_HARDLINK)
		return unsafe(archive_name, e->path, "hard links are not allowed");
	if (e->type == CVM_ENTRY_OTHER)
		return unsafe(archive_name, e->path, "not a regular file, folder or symlink");

	/* Normalise: drop empty and "." components. */
	for (p = e->path; *p; p = *q ? q + 1 : q) {
		q = strchrnul(p, '/');
		if (q == p || (q - p == 1 && *p == '.'))
			continue;
		if (q - p > CVM_ENTRY_MAX_COMPONENT) {
			snprintf(msg, sizeof(msg), "a name component of %zu bytes (at most %d)",
				 (size_t)(q - p), CVM_ENTRY_MAX_COMPONENT);
			return unsafe(archive_name, e->path, msg);
		}
		if (depth++ > CVM_ENTRY_MAX_DEPTH) {
			snprintf(msg, sizeof(msg), "more than %d folders deep", CVM_ENTRY_MAX_DEPTH);
			return unsafe(archive_name, e->path, msg);
		}
		if (o + (size_t)(q - p) + 2 > sizeof(norm))
			return unsafe(archive_name, e->path, "name too long");
		if (o)
			norm[o++] = '/';
		memcpy(norm + o, p, (size_t)(q - p));
		o += (size_t)(q - p);
	}
	norm[o] = '\0';
	if (!o)
		return 1;	/* "./" */

	q = strchrnul(norm, '/');
	toplen = (size_t)(q - norm);
	if (toplen >= sizeof(top))
		return unsafe(archive_name, e->path, "top folder name too long");
	memcpy(top, norm, toplen);
	top[toplen] = '\0';
	if (!*q && e->type != CVM_ENTRY_DIR)
		return unsafe(archive_name, e->path, "outside the top folder");
	if (!st->have_top) {
		memcpy(st->top, top, toplen + 1);
		st->have_top = true;
		st->layout = strcmp(top, "cuda") || st->bundle ? CVM_LAYOUT_NVIDIA : CVM_LAYOUT_LEGACY;
		st->windows = st->windows || CVM_WINDOWS || !strncmp(top, "cudnn-windows-", 14);
	} else if (strcmp(st->top, top)) {
		return unsafe(archive_name, e->path, "a second top folder");
	}
	if (st->windows && (why = cvm_entry_windows_problem(e->path)))
		return unsafe(archive_name, e->path, why);
	if (!*q)
		return 1;	/* the top folder itself */

	rest = q + 1;
	if (st->windows) {
		int r = check_seen(st, archive_name, e->path, rest, e->type == CVM_ENTRY_DIR);

		if (r < 0)
			return r;
	}
	/* The legacy layout keeps libraries in lib64; the store always says lib. */
	if (st->layout == CVM_LAYOUT_LEGACY && !strncmp(rest, "lib64", 5) &&
	    (rest[5] == '/' || !rest[5])) {
		if (snprintf(rel, rel_len, "lib%s", rest + 5) >= (int)rel_len)
			return unsafe(archive_name, e->path, "name too long");
	} else if (snprintf(rel, rel_len, "%s", rest) >= (int)rel_len) {
		return unsafe(archive_name, e->path, "name too long");
	}
	if (st->bundle && (!strcmp(rel, ".cudnnvm") ? e->type == CVM_ENTRY_DIR
			   : e->type == CVM_ENTRY_FILE && (!strcmp(rel, ".cudnnvm/record.json") ||
							   !strcmp(rel, ".cudnnvm/files.sha256") ||
							   !strcmp(rel, ".cudnnvm/links"))))
		return 0;
	if (!strcmp(rel, ".cudnnvm") || !strncmp(rel, ".cudnnvm/", 9))
		return unsafe(archive_name, e->path, st->bundle ? "not a file of cudnnvm's records"
				: "name reserved for cudnnvm's records (a store bundle? install it "
				  "with --bundle)");
	if (e->type == CVM_ENTRY_SYMLINK) {
		why = cvm_entry_link_problem(rel, e->link);
		if (why) {
			char lmsg[1200];
			snprintf(lmsg, sizeof(lmsg), "%s ('%s')", why, cvm_safe(e->link));
			return unsafe(archive_name, e->path, lmsg);
		}
	}
	return 0;
}

int cvm_entry_top_version(const char *top, char *version, size_t vlen,
			  int *cuda_major, char *platform, size_t plen)
{
	const char *body, *cu, *dash, *end;
	size_t n;
	char *num_end;
	long major;

	if (strncmp(top, "cudnn-", 6))
		return -CVM_E_NOTFOUND;
	body = top + 6;
	end = top + strlen(top);
	if (end - body < 8 || strcmp(end - 8, "-archive"))
		return -CVM_E_NOTFOUND;
	end -= 8;
	cu = NULL;
	for (const char *s = body; s + 5 <= end; s++)
		if (!strncmp(s, "_cuda", 5))
			cu = s;
	if (!cu)
		return -CVM_E_NOTFOUND;
	/* 1-2 plain digits, then the end or ".minor" (cuda13.4): nothing strtol would also take. */
	if (cu[5] < '1' || cu[5] > '9')
		return -CVM_E_NOTFOUND;
	major = strtol(cu + 5, &num_end, 10);
	if (num_end - (cu + 5) > 2)
		return -CVM_E_NOTFOUND;
	if (num_end != end) {
		if (*num_end != '.' || num_end + 1 == end)
			return -CVM_E_NOTFOUND;
		for (const char *d = num_end + 1; d < end; d++)
			if (*d < '0' || *d > '9')
				return -CVM_E_NOTFOUND;
	}
	dash = NULL;
	for (const char *s = body; s < cu; s++)
		if (*s == '-')
			dash = s;
	if (!dash || dash == body || dash + 1 == cu)
		return -CVM_E_NOTFOUND;
	n = (size_t)(cu - dash - 1);
	if (n >= vlen || (size_t)(dash - body) >= plen)
		return -CVM_E_NOTFOUND;
	memcpy(version, dash + 1, n);
	version[n] = '\0';
	/* The platform becomes part of a store id: the catalogue's rule, [a-z0-9_-]. */
	for (const char *c = body; c < dash; c++)
		if (!((*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9') || *c == '_' || *c == '-'))
			return -CVM_E_NOTFOUND;
	memcpy(platform, body, (size_t)(dash - body));
	platform[dash - body] = '\0';
	*cuda_major = (int)major;
	return 0;
}
