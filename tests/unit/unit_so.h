/* SPDX-License-Identifier: MIT */
#ifndef CUDNNVM_UNIT_SO_H
#define CUDNNVM_UNIT_SO_H

/*
 * For the tests of the ELF readers: a temporary folder of the test's own
 * (unit_tmp) and shared libraries built into it from C source by ${CC:-cc}.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char unit_tmp[256];

/* unit_tmp made as $TMPDIR/cvm-NAME.XXXXXX: 0, or -1 (said). */
static int unit_tmp_make(const char *name)
{
	const char *t = getenv("TMPDIR");

	snprintf(unit_tmp, sizeof(unit_tmp), "%s/cvm-%s.XXXXXX", t ? t : "/tmp", name);
	if (mkdtemp(unit_tmp))
		return 0;
	perror("mkdtemp");
	return -1;
}

static void unit_tmp_remove(void)
{
	char cmd[400];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", unit_tmp);
	if (system(cmd) != 0)
		printf("# cannot remove %s\n", unit_tmp);
}

/* file written with text: 0, or -1. */
static inline int unit_write(const char *file, const char *text)
{
	FILE *f = fopen(file, "w");

	if (!f)
		return -1;
	fputs(text, f);
	return fclose(f) == 0 ? 0 : -1;
}

/*
 * unit_tmp/PATH (its folder made) from C source src: a shared library with
 * soname SONAME, linked with the libraries extra names (quoted paths, or "").
 * 0 or -1.
 */
static inline int unit_build_so(const char *path, const char *soname, const char *src, const char *extra)
{
	char c[512], cmd[3072];

	snprintf(cmd, sizeof(cmd), "mkdir -p \"$(dirname '%s/%s')\"", unit_tmp, path);
	if (system(cmd) != 0)
		return -1;
	/* The source beside the folders, never among the libraries a test reads: unit_tmp/a_b.c. */
	snprintf(c, sizeof(c), "%s/%s.c", unit_tmp, path);
	for (char *s = c + strlen(unit_tmp) + 1; *s; s++)
		if (*s == '/')
			*s = '_';
	if (unit_write(c, src) < 0)
		return -1;
	snprintf(cmd, sizeof(cmd), "${CC:-cc} -O1 -shared -fPIC -Wl,-soname,%s -o '%s/%s' '%s' "
		 "-Wl,--no-as-needed %s", soname, unit_tmp, path, c, extra);
	return system(cmd) == 0 ? 0 : -1;
}

#endif
