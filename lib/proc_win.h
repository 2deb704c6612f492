/* SPDX-License-Identifier: MIT */
#ifndef CUDNNVM_PROC_WIN_H
#define CUDNNVM_PROC_WIN_H

/*
 * Windows only (proc_win.c): the DLLs running processes have loaded, which
 * is what Windows has instead of /proc/PID/maps. proc.h's cvm_proc_users
 * and procmap_win.c's ps are built on it.
 */
#include <stdbool.h>
#include <stddef.h>

/*
 * Calls fn once for every running process but this one whose modules can
 * be read (EnumProcesses, EnumProcessModulesEx, GetModuleFileNameExW):
 * its PID, its image (the exe's path, "" when not known) and the paths of
 * its modules, UTF-8 with '/'. fn may keep a path (it sets mods[i] to NULL
 * and frees it later); the rest is freed after it returns. A nonzero return
 * of fn ends the walk and is returned. *unreadable (may be NULL) counts the
 * processes we may not read (access denied: another user's, or protected).
 * 0, fn's value, or -errno.
 */
int cvm_proc_each_modules(int (*fn)(void *arg, unsigned long pid, const char *image, char **mods,
				    size_t n),
			  void *arg, size_t *unreadable);

/*
 * Whether path lies below dir (not dir itself), compared as Windows
 * compares names: case-insensitively (CompareStringOrdinal), '/' and '\'
 * alike, a \\?\ prefix ignored. Both UTF-8.
 */
bool cvm_path_under(const char *path, const char *dir);

#endif
