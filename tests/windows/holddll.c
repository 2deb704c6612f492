/* SPDX-License-Identifier: MIT */
/*
 * holddll PATH READY GO [SECONDS]: a test helper for t_proc.sh. Loads PATH,
 * a DLL (LoadLibraryW: mapped as an image, as a program's cuDNN is), or,
 * when PATH is a folder, holds it open without FILE_SHARE_DELETE, so that it
 * cannot be renamed (what NTFS does to a folder holding a loaded DLL, and
 * wine does not). Writes its Windows PID into READY (the shell sees another
 * PID under wine and MSYS2), then waits until GO exists, at most SECONDS
 * (60), so that a test that dies never leaves it behind for long. Exit 0
 * when GO appeared, 2 when PATH could not be held, 3 when READY could not
 * be written, 4 on timeout.
 */
#define WIN32_LEAN_AND_MEAN
#include <windows.h>
#include <stdio.h>
#include <wchar.h>

int wmain(int argc, wchar_t **argv)
{
	DWORD limit_ms = 60000, waited = 0, written = 0;
	wchar_t tmp[32768];
	char pid[32];
	HMODULE dll = NULL;
	HANDLE ready, folder = INVALID_HANDLE_VALUE;
	DWORD attr;
	BOOL ok;
	int len;

	if (argc < 4) {
		fprintf(stderr, "usage: holddll PATH READY GO [SECONDS]\n");
		return 1;
	}
	if (argc > 4)
		limit_ms = (DWORD)wcstoul(argv[4], NULL, 10) * 1000;
	attr = GetFileAttributesW(argv[1]);
	if (attr != INVALID_FILE_ATTRIBUTES && (attr & FILE_ATTRIBUTE_DIRECTORY))
		folder = CreateFileW(argv[1], GENERIC_READ, FILE_SHARE_READ | FILE_SHARE_WRITE, NULL,
				     OPEN_EXISTING, FILE_FLAG_BACKUP_SEMANTICS, NULL);
	else
		dll = LoadLibraryW(argv[1]);
	if (!dll && folder == INVALID_HANDLE_VALUE) {
		fprintf(stderr, "holddll: cannot hold %ls: error %lu\n", argv[1], GetLastError());
		return 2;
	}
	/* Under another name first, so that READY never exists without the PID in it. */
	swprintf(tmp, sizeof(tmp) / sizeof(tmp[0]), L"%ls.tmp", argv[2]);
	len = snprintf(pid, sizeof(pid), "%lu\n", GetCurrentProcessId());
	ready = CreateFileW(tmp, GENERIC_WRITE, 0, NULL, CREATE_ALWAYS, 0, NULL);
	if (ready == INVALID_HANDLE_VALUE)
		return 3;
	ok = WriteFile(ready, pid, (DWORD)len, &written, NULL) && written == (DWORD)len;
	CloseHandle(ready);
	if (!ok || !MoveFileExW(tmp, argv[2], MOVEFILE_REPLACE_EXISTING))
		return 3;
	/* No change notification: polling a name is what works the same under wine. */
	while (GetFileAttributesW(argv[3]) == INVALID_FILE_ATTRIBUTES) {
		if (waited >= limit_ms)
			return 4;
		Sleep(50);
		waited += 50;
	}
	if (dll)
		FreeLibrary(dll);
	if (folder != INVALID_HANDLE_VALUE)
		CloseHandle(folder);
	return 0;
}
