/* SPDX-License-Identifier: MIT */
/*
 * What a program started now finds as zlibwapi.dll through the normal DLL
 * search (no path given): "PATH<TAB>zlibVersion()" on stdout, exit 0; exit 1
 * when it does not load or has no zlibVersion.
 */
#include <stdio.h>
#include <windows.h>

int main(void)
{
	char path[MAX_PATH];
	HMODULE h = LoadLibraryA("zlibwapi.dll");
	const char *(*version)(void);

	if (!h || !GetModuleFileNameA(h, path, sizeof(path)))
		return 1;
	version = (const char *(*)(void))(void (*)(void))GetProcAddress(h, "zlibVersion");
	if (!version)
		return 1;
	printf("%s\t%s\n", path, version());
	return 0;
}
