/* SPDX-License-Identifier: MIT */
/*
 * What a program started now gets: loads the DLL named on the command line
 * (default cudnn64_9.dll) by name, through the normal DLL search, and prints
 * "<path>\t<cudnnGetVersion()>", or "none\t<error>" and exits 1. The Windows
 * tests start it after `wineserver -k`, so that its environment is the
 * registry's. "--exit N" only exits with N (for exec's exit code).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <windows.h>

int main(int argc, char **argv)
{
	const char *name = argc > 1 ? argv[1] : "cudnn64_9.dll";
	HMODULE m = argc > 2 ? NULL : LoadLibraryA(name);
	char path[MAX_PATH];
	size_t (*get_version)(void);

	if (argc > 2 && !strcmp(argv[1], "--exit"))
		return atoi(argv[2]);
	if (!m) {
		printf("none\t%lu\n", GetLastError());
		return 1;
	}
	GetModuleFileNameA(m, path, sizeof(path));
	get_version = (size_t(*)(void))(void *)GetProcAddress(m, "cudnnGetVersion");
	printf("%s\t%lu\n", path, get_version ? (unsigned long)get_version() : 0UL);
	return 0;
}
