/* SPDX-License-Identifier: MIT */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "entry.h"
#include "error.h"
#include "out.h"

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

const char *cvm_entry_windows_problem(const char *path)
{
	const char *p = path, *e;

	if (strchr(path, '\\'))
		return "backslash in the name (a path separator on Windows)";
	if (strchr(path, ':'))
		return "':' in the name (a drive letter or an alternate data stream on Windows)";
	if (strpbrk(path, "<>\"|?*"))
		return "a character Windows does not allow in names (<>\"|?*)";
	while (*p) {
		e = strchrnul(p, '/');
		if (e > p && (e[-1] == '.' || e[-1] == ' ') &&
		    !(e - p == 1 && p[0] == '.') && !(e - p == 2 && p[0] == '.' && p[1] == '.'))
			return "a name that ends in a dot or a space (Windows drops them)";
		if (reserved(p, (size_t)(e - p)))
			return "a reserved Windows device name (CON, PRN, AUX, NUL, COM1-9, LPT1-9)";
		p = *e ? e + 1 : e;
	}
	return NULL;
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
