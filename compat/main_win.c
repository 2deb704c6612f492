/* SPDX-License-Identifier: MIT */
/*
 * The Windows entry point, linked into the programs only (cudnnvm.exe, the
 * test build, the unit tests), never into libcvm.a: the library does not call
 * up into a program's main.
 */
#include <fcntl.h>
#include <io.h>
#include <stdio.h>
#include <stdlib.h>
#include <wchar.h>
#include <windows.h>

#include "compat.h"

int main(int argc, char **argv);

/*
 * The command line in UTF-8 (the narrow argv is in the ANSI code page,
 * which cannot name every file), and UTF-8 on the console.
 */
int wmain(int argc, wchar_t **wargv);
int wmain(int argc, wchar_t **wargv)
{
	char **argv = calloc((size_t)argc + 1, sizeof(*argv));
	int i;

	if (!argv)
		return 1;
	for (i = 0; i < argc; i++) {
		argv[i] = cvm_utf8(wargv[i]);
		if (!argv[i]) {
			fputs("cudnnvm: error: the command line is not valid UTF-16\n", stderr);
			return 2;
		}
	}
	SetConsoleOutputCP(CP_UTF8);
	/* Binary stdout: JSON and file contents as written, no CR added. */
	_setmode(_fileno(stdout), _O_BINARY);
	return main(argc, argv);
}
