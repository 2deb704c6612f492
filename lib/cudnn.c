/* SPDX-License-Identifier: MIT */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "compat.h"
#include "cudnn.h"
#include "error.h"
#include "fsutil.h"
#include "out.h"

/* Finds "#define NAME <number>" at the start of a line (spaces allowed). */
static int define_value(const char *text, size_t len, const char *name, unsigned *out)
{
	const char *p = text, *end = text + len;
	size_t nl = strlen(name);

	while (p < end) {
		const char *line = p, *eol = memchr(p, '\n', (size_t)(end - p));
		if (!eol)
			eol = end;
		p = eol + 1;
		while (line < eol && (*line == ' ' || *line == '\t'))
			line++;
		if (line >= eol || *line != '#')
			continue;
		line++;
		while (line < eol && (*line == ' ' || *line == '\t'))
			line++;
		if ((size_t)(eol - line) < 7 + nl || strncmp(line, "define", 6))
			continue;
		line += 6;
		if (*line != ' ' && *line != '\t')
			continue;
		while (line < eol && (*line == ' ' || *line == '\t'))
			line++;
		if ((size_t)(eol - line) <= nl || strncmp(line, name, nl) ||
		    (line[nl] != ' ' && line[nl] != '\t'))
			continue;
		line += nl;
		while (line < eol && (*line == ' ' || *line == '\t'))
			line++;
		if (line >= eol || !isdigit((unsigned char)*line))
			continue;
		unsigned long v = 0;
		while (line < eol && isdigit((unsigned char)*line) && v < 1000000)
			v = v * 10 + (unsigned long)(*line++ - '0');
		*out = (unsigned)v;
		return 0;
	}
	return -CVM_E_NOTFOUND;
}

/*
 * The text as the preprocessor's first phases leave it: a backslash-newline
 * joins two lines, a comment becomes one space (a block comment may span
 * lines), string and character literals are kept whole. malloc'd; *olen set.
 */
static char *preprocess(const char *text, size_t len, size_t *olen)
{
	/* Zeroed: every byte define_value may look at is defined, as the analysers can tell. */
	char *j = calloc(len + 1, 1), *o = calloc(len + 1, 1);
	size_t n = 0, m = 0, i;

	if (!j || !o) {
		free(j);
		free(o);
		return NULL;
	}
	for (i = 0; i < len; i++) {
		if (text[i] == '\\' && i + 1 < len && text[i + 1] == '\n') {
			i++;
			continue;
		}
		if (text[i] == '\\' && i + 2 < len && text[i + 1] == '\r' && text[i + 2] == '\n') {
			i += 2;
			continue;
		}
		j[n++] = text[i];
	}
	for (i = 0; i < n; i++) {
		char c = j[i];
		if (c == '"' || c == '\'') {
			o[m++] = j[i++];
			while (i < n && j[i] != c && j[i] != '\n') {
				if (j[i] == '\\' && i + 1 < n && j[i + 1] != '\n')
					o[m++] = j[i++];
				o[m++] = j[i++];
			}
			if (i < n)
				o[m++] = j[i];
			continue;
		}
		if (c == '/' && i + 1 < n && j[i + 1] == '*') {
			for (i += 2; i + 1 < n && !(j[i] == '*' && j[i + 1] == '/'); i++)
				;
			i = i + 1 < n ? i + 1 : n;
			o[m++] = ' ';
			continue;
		}
		if (c == '/' && i + 1 < n && j[i + 1] == '/') {
			while (i + 1 < n && j[i + 1] != '\n')
				i++;
			o[m++] = ' ';
			continue;
		}
		o[m++] = c;
	}
	o[m] = '\0';
	free(j);
	*olen = m;
	return o;
}

int cvm_cudnn_header_version(const char *text, size_t len, struct cvm_version *v)
{
	unsigned maj, min, pat;
	size_t plen = 0;
	char *pp = preprocess(text, len, &plen);
	int r;

	if (!pp)
		return -ENOMEM;
	r = define_value(pp, plen, "CUDNN_MAJOR", &maj) < 0 ||
	    define_value(pp, plen, "CUDNN_MINOR", &min) < 0 ||
	    define_value(pp, plen, "CUDNN_PATCHLEVEL", &pat) < 0 ? -CVM_E_NOTFOUND : 0;
	free(pp);
	if (r < 0)
		return r;
	memset(v, 0, sizeof(*v));
	v->part[0] = maj;
	v->part[1] = min;
	v->part[2] = pat;
	v->n = 3;
	return 0;
}

static bool is_file(int dirfd, const char *path)
{
	struct stat st;

	return fstatat(dirfd, path, &st, 0) == 0 && S_ISREG(st.st_mode);
}

int cvm_cudnn_check_src(const struct cvm_cudnn_src *src, const char *name, struct cvm_cudnn_tree *t)
{
	static const char *const headers[] = { "include/cudnn_version.h", "include/cudnn.h" };
	char *text = NULL;
	size_t len = 0;
	int r = -CVM_E_NOTFOUND;

	memset(t, 0, sizeof(*t));
	for (size_t i = 0; i < sizeof(headers) / sizeof(headers[0]) && r < 0; i++) {
		if (src->read(src->arg, headers[i], &text, &len) < 0)
			continue;
		r = cvm_cudnn_header_version(text, len, &t->header);
		free(text);
		text = NULL;
	}
	if (r < 0)
		return cvm_err(-CVM_E_LAYOUT,
			       "'%s' does not look like cuDNN: no version macros in "
			       "include/cudnn_version.h or include/cudnn.h", cvm_safe(name));
	t->windows = src->is_file(src->arg, "lib/x64/cudnn.lib") || src->exists(src->arg, "bin");
	if (t->windows)
		snprintf(t->library, sizeof(t->library), "bin/cudnn64_%u.dll", t->header.part[0]);
	else
		snprintf(t->library, sizeof(t->library), "lib/libcudnn.so.%u", t->header.part[0]);
	if (!src->is_file(src->arg, t->library))
		return cvm_err(-CVM_E_LAYOUT, "'%s' does not look like cuDNN %u: %s is missing",
			       cvm_safe(name), t->header.part[0], t->library);
	return 0;
}

static int dir_read(void *arg, const char *rel, char **text, size_t *len)
{
	return cvm_read_file_at(*(int *)arg, rel, 1 << 20, text, len);
}

static bool dir_is_file(void *arg, const char *rel)
{
	return is_file(*(int *)arg, rel);
}

static bool dir_exists(void *arg, const char *rel)
{
	return faccessat(*(int *)arg, rel, F_OK, AT_SYMLINK_NOFOLLOW) == 0;
}

int cvm_cudnn_check_tree(int dirfd, const char *name, struct cvm_cudnn_tree *t)
{
	struct cvm_cudnn_src src = { dir_read, dir_is_file, dir_exists, &dirfd };

	return cvm_cudnn_check_src(&src, name, t);
}

const char *cvm_cudnn_main_name(int major, char *buf, size_t len)
{
	snprintf(buf, len, CVM_WINDOWS ? "cudnn64_%d.dll" : "libcudnn.so.%d", major);
	return buf;
}
