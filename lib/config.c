/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "error.h"
#include "fsutil.h"
#include "out.h"
#include "trust.h"

static const char *trim(const char *s, const char *e, const char **end)
{
	while (s < e && (*s == ' ' || *s == '\t'))
		s++;
	while (e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r'))
		e--;
	*end = e;
	return s;
}

int cvm_config_parse(const char *text, size_t len, const char *key, char *val, size_t vlen,
		     int *bad_line)
{
	const char *p = text, *end = text + len;
	size_t kl = strlen(key);
	int line = 0, found = 0;

	while (p < end) {
		const char *eol = memchr(p, '\n', (size_t)(end - p)), *s, *e, *eq, *ke, *vs, *ve;
		if (!eol)
			eol = end;
		line++;
		s = trim(p, eol, &e);
		p = eol + 1;
		if (s == e || *s == '#')
			continue;
		eq = memchr(s, '=', (size_t)(e - s));
		if (!eq || memchr(s, '\0', (size_t)(e - s))) {
			if (bad_line)
				*bad_line = line;
			return -CVM_E_USAGE;
		}
		s = trim(s, eq, &ke);
		vs = trim(eq + 1, e, &ve);
		if (s == ke) {
			if (bad_line)
				*bad_line = line;
			return -CVM_E_USAGE;
		}
		if ((size_t)(ke - s) != kl || strncmp(s, key, kl))
			continue;
		if ((size_t)(ve - vs) >= vlen) {
			if (bad_line)
				*bad_line = line;
			return -CVM_E_USAGE;
		}
		/* The last one wins, as in most configuration files. */
		memcpy(val, vs, (size_t)(ve - vs));
		val[ve - vs] = '\0';
		found = 1;
	}
	return found;
}

/* The keys this cudnnvm knows (the man page's FILES lists them). */
static const char *const known[] = { "mirror", "store", "user", "cuda", "modules",
				      "modules_format" };
#define CVM_CONFIG_KEYS "mirror, store, user, cuda, modules, modules_format"

/* Warns, once per run, about each key this cudnnvm does not know (a typo, or a newer cudnnvm's). */
static void check_keys(const char *text, size_t len)
{
	static bool checked;
	const char *p = text, *end = text + len;
	int line = 0;

	if (checked)
		return;
	checked = true;
	while (p < end) {
		const char *eol = memchr(p, '\n', (size_t)(end - p)), *s, *e, *eq, *ke;
		bool ok = false;

		if (!eol)
			eol = end;
		line++;
		s = trim(p, eol, &e);
		p = eol + 1;
		if (s == e || *s == '#' || !(eq = memchr(s, '=', (size_t)(e - s))))
			continue;
		s = trim(s, eq, &ke);
		for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++)
			ok |= strlen(known[i]) == (size_t)(ke - s) && !strncmp(s, known[i], (size_t)(ke - s));
		if (!ok && ke > s) {
			char k[128];
			snprintf(k, sizeof(k), "%.*s", (int)(ke - s), s);
			cvm_warn("'/etc/cudnnvm.conf' line %d: unknown key '%s', ignored (known keys: %s)",
				 line, cvm_safe(k), CVM_CONFIG_KEYS);
		}
	}
}

/* Whether ROOT/etc/cudnnvm.conf (path) may decide: trust.h's rule, asked once per run. */
static bool obeyed(const char *path)
{
	static int verdict = -1;

	if (verdict < 0)
		verdict = cvm_trust_obey(path, "/etc/cudnnvm.conf", NULL, "the configuration file") == 0;
	return verdict;
}

int cvm_config_get(const char *root, const char *key, char *val, size_t vlen)
{
	char path[4096], *text = NULL;
	size_t len;
	int r, line = 0;

	r = cvm_fmt(path, sizeof(path), "%s/etc/cudnnvm.conf", root);
	if (r < 0)
		return r;
	r = cvm_read_file_at(AT_FDCWD, path, 1 << 20, &text, &len);
	if (r == -ENOENT)
		return 0;
	if (r < 0)
		return cvm_err(r, "cannot read '/etc/cudnnvm.conf': %s", cvm_strerror(r));
	/* Another user's words never decide: as if there were no file (said once). */
	if (!obeyed(path)) {
		free(text);
		return 0;
	}
	r = cvm_config_parse(text, len, key, val, vlen, &line);
	if (r >= 0)
		check_keys(text, len);
	free(text);
	if (r < 0)
		return cvm_err(-CVM_E_USAGE, "'/etc/cudnnvm.conf' line %d: expected 'key = value'", line);
	return r;
}

int cvm_number_parse(const char *s, long min, long max, long *out)
{
	const char *p = s;
	char *end;
	long v;

	if (*p == '-' && min < 0)
		p++;
	if (*p < '0' || *p > '9')
		return -CVM_E_USAGE;
	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || *end || v < min || v > max)
		return -CVM_E_USAGE;
	*out = v;
	return 0;
}

/* The numbers cudnnvm reads from the environment, and their bounds (the man page's ENVIRONMENT). */
static const struct env_number {
	const char *name;
	long min, max;
	const char *unit;
} env_numbers[] = {
	/* A day: a smoke test that takes longer is hung; the bound keeps ms in range everywhere. */
	{ "CUDNNVM_SMOKE_TIMEOUT", 1, 86400, "seconds" },
	{ "CUDNNVM_JOBS", 1, 256, "decoder threads" },
	{ "CUDNNVM_VERIFY_FIRST", 0, 1, "1: hash the archive first" },
};

int cvm_config_env_number(const char *name, long dflt, long *out)
{
	const struct env_number *n = NULL;
	const char *v = getenv(name);

	for (size_t i = 0; i < sizeof(env_numbers) / sizeof(env_numbers[0]); i++)
		if (!strcmp(env_numbers[i].name, name))
			n = &env_numbers[i];
	*out = dflt;
	if (!n || !v || !*v)
		return 0;
	if (cvm_number_parse(v, n->min, n->max, out) < 0)
		return cvm_err(-CVM_E_USAGE, "%s '%s': expected a whole number from %ld to %ld (%s)",
			       name, cvm_safe(v), n->min, n->max, n->unit);
	return 0;
}

int cvm_config_env_check(void)
{
	long v;

	for (size_t i = 0; i < sizeof(env_numbers) / sizeof(env_numbers[0]); i++)
		if (cvm_config_env_number(env_numbers[i].name, 0, &v) < 0)
			return -CVM_E_USAGE;
	return 0;
}
