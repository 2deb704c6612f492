/* SPDX-License-Identifier: MIT */
#ifndef CUDNNVM_WINENV_H
#define CUDNNVM_WINENV_H

/*
 * Windows only (winenv.c, the one file that touches the registry): the
 * environment a program started now gets, kept in
 *   system: HKLM\SYSTEM\CurrentControlSet\Control\Session Manager\Environment
 *   user:   HKCU\Environment (--user)
 * PATH is edited as UTF-16, entry by entry: every entry that is not ours is
 * kept as it is, byte for byte, and ours is never written twice. Values are
 * written as REG_EXPAND_SZ. Paths compare as Windows compares them: case
 * ignored, '/' as '\', a trailing '\' dropped.
 */
#include <stdbool.h>
#include <stddef.h>

enum cvm_env_scope { CVM_ENV_SYSTEM, CVM_ENV_USER };

/* "HKLM\...\Environment" or "HKCU\Environment", for messages. */
const char *cvm_winenv_key_name(enum cvm_env_scope s);

/* name's value as stored (not expanded), UTF-8, malloc'd: 0, -ENOENT when unset, -errno. */
int cvm_winenv_get(enum cvm_env_scope s, const char *name, char **value);

/* Sets name to value (REG_EXPAND_SZ), or deletes it when value is NULL. -EACCES: not elevated. */
int cvm_winenv_set(enum cvm_env_scope s, const char *name, const char *value);

/*
 * Edits PATH of scope s: drops every entry that is the same path as one of
 * drop[0..ndrop), then, when add is not NULL, puts add just before the first
 * entry that is the same path as before (when given and present), else
 * first. *changed (may be NULL): whether PATH changes. Writes only when
 * write is true and PATH changes. *shown (may be NULL): the new PATH,
 * UTF-8, malloc'd. 0 or -errno.
 */
int cvm_winenv_path_edit(enum cvm_env_scope s, const char *const *drop, size_t ndrop,
			 const char *add, const char *before, bool write, bool *changed,
			 char **shown);

/* Whether PATH of scope s has an entry that is the same path as dir. */
bool cvm_winenv_path_has(enum cvm_env_scope s, const char *dir);

/* Tells running programs (Explorer, shells that listen) that the environment changed. */
void cvm_winenv_broadcast(void);

/*
 * The PATH a program started now gets: the system PATH, then the user's,
 * each expanded (%SystemRoot% and the like). UTF-8, malloc'd. 0 or -errno.
 */
int cvm_winenv_fresh_path(char **out);

/* One of the system folders, UTF-8: System32 (GetSystemDirectory) or the Windows folder. */
int cvm_winenv_system_dir(bool windows, char *buf, size_t len);

/*
 * The entry of a PATH value that starts at p: its length without a trailing
 * '\' or '/' ("C:\x\" is the folder "C:\x"; "C:\" keeps its own); *next
 * is where the entry after it starts (the value's end after the last).
 */
size_t cvm_winpath_entry(const char *p, const char **next);

/* Whether a and b name the same folder by Windows' rules (no file system access). */
bool cvm_winpath_same(const char *a, const char *b);

#endif
