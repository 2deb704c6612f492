/* SPDX-License-Identifier: MIT */
/*
 * The registry's Environment values (winenv.h): the only file that calls the
 * registry API. PATH is split and joined as UTF-16, so that an entry that is
 * not ours goes back exactly as it came.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <wchar.h>
#include <windows.h>

#include "compat.h"
#include "fsutil.h"
#include "out.h"
#include "winenv.h"

static const wchar_t SYSTEM_KEY[] = L"SYSTEM\\CurrentControlSet\\Control\\Session Manager\\Environment";

const char *cvm_winenv_key_name(enum cvm_env_scope s)
{
	return s == CVM_ENV_USER ? "HKCU\\Environment"
				 : "HKLM\\SYSTEM\\CurrentControlSet\\Control\\Session Manager\\Environment";
}

static int open_key(enum cvm_env_scope s, REGSAM sam, HKEY *k)
{
	LONG e;

	if (s == CVM_ENV_USER)
		e = RegCreateKeyExW(HKEY_CURRENT_USER, L"Environment", 0, NULL, 0, sam, NULL, k, NULL);
	else
		e = RegOpenKeyExW(HKEY_LOCAL_MACHINE, SYSTEM_KEY, 0, sam, k);
	return e == ERROR_SUCCESS ? 0 : -cvm_errno_from_win((unsigned long)e);
}

/* The value as UTF-16, NUL-terminated, malloc'd, and its type (may be NULL): 0, -ENOENT, -errno. */
static int get_typed(enum cvm_env_scope s, const wchar_t *name, wchar_t **out, DWORD *vtype)
{
	HKEY k;
	DWORD type, size = 0;
	wchar_t *buf = NULL;
	LONG e;
	int r;

	*out = NULL;
	r = open_key(s, KEY_QUERY_VALUE, &k);
	if (r < 0)
		return r;
	for (;;) {
		e = RegQueryValueExW(k, name, NULL, &type, (BYTE *)buf, &size);
		if (e == ERROR_FILE_NOT_FOUND) {
			r = -ENOENT;
			break;
		}
		if (e == ERROR_MORE_DATA || (e == ERROR_SUCCESS && !buf)) {
			free(buf);
			buf = malloc(size + 2 * sizeof(wchar_t));
			if (!buf) {
				r = -ENOMEM;
				break;
			}
			continue;
		}
		if (e != ERROR_SUCCESS) {
			r = -cvm_errno_from_win((unsigned long)e);
			break;
		}
		if (type != REG_SZ && type != REG_EXPAND_SZ) {
			r = -EINVAL;
			break;
		}
		buf[size / sizeof(wchar_t)] = L'\0';
		*out = buf;
		buf = NULL;
		if (vtype)
			*vtype = type;
		r = 0;
		break;
	}
	free(buf);
	RegCloseKey(k);
	return r;
}

static int get_wide(enum cvm_env_scope s, const wchar_t *name, wchar_t **out)
{
	return get_typed(s, name, out, NULL);
}

static int set_typed(enum cvm_env_scope s, const wchar_t *name, const wchar_t *value, DWORD type)
{
	HKEY k;
	LONG e;
	int r;

	r = open_key(s, KEY_SET_VALUE, &k);
	if (r < 0)
		return r;
	if (value)
		e = RegSetValueExW(k, name, 0, type, (const BYTE *)value,
				   (DWORD)((wcslen(value) + 1) * sizeof(wchar_t)));
	else
		e = RegDeleteValueW(k, name);
	RegCloseKey(k);
	if (!value && e == ERROR_FILE_NOT_FOUND)
		return 0;
	return e == ERROR_SUCCESS ? 0 : -cvm_errno_from_win((unsigned long)e);
}

static int set_wide(enum cvm_env_scope s, const wchar_t *name, const wchar_t *value)
{
	return set_typed(s, name, value, REG_EXPAND_SZ);
}

int cvm_winenv_get(enum cvm_env_scope s, const char *name, char **value)
{
	wchar_t *wn = cvm_wide(name), *w = NULL;
	int r;

	*value = NULL;
	if (!wn)
		return -ENOMEM;
	r = get_wide(s, wn, &w);
	free(wn);
	if (r == 0 && !(*value = cvm_utf8(w)))
		r = -ENOMEM;
	free(w);
	return r;
}

int cvm_winenv_set(enum cvm_env_scope s, const char *name, const char *value)
{
	wchar_t *wn = cvm_wide(name), *wv = value ? cvm_wide(value) : NULL;
	int r = !wn || (value && !wv) ? -ENOMEM : set_wide(s, wn, wv);

	free(wn);
	free(wv);
	return r;
}

/* Folds one path character as Windows compares names (ASCII case; '/' is '\'). */
static wchar_t fold(wchar_t c)
{
	if (c == L'/')
		return L'\\';
	return (wchar_t)towlower(c);
}

/* a[0..an) and b[0..bn) name the same path: case ignored, trailing '\' dropped. */
static bool same_wide(const wchar_t *a, size_t an, const wchar_t *b, size_t bn)
{
	while (an > 3 && (a[an - 1] == L'\\' || a[an - 1] == L'/'))
		an--;
	while (bn > 3 && (b[bn - 1] == L'\\' || b[bn - 1] == L'/'))
		bn--;
	if (an != bn)
		return false;
	for (size_t i = 0; i < an; i++)
		if (fold(a[i]) != fold(b[i]))
			return false;
	return true;
}

bool cvm_winpath_same(const char *a, const char *b)
{
	wchar_t *wa = cvm_wide(a), *wb = cvm_wide(b);
	bool same = wa && wb && same_wide(wa, wcslen(wa), wb, wcslen(wb));

	free(wa);
	free(wb);
	return same;
}

/* One entry of a PATH: [start, start+len), without its ';'. */
struct span {
	size_t start, len;
};

static bool matches(const wchar_t *path, struct span e, wchar_t *const *w, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (w[i] && same_wide(path + e.start, e.len, w[i], wcslen(w[i])))
			return true;
	return false;
}

/*
 * The new PATH: the entries of old in order, less those in drop, with add
 * before the first entry the same as before (else first). malloc'd.
 */
static wchar_t *edit(const wchar_t *old, wchar_t *const *drop, size_t ndrop, const wchar_t *add,
		     const wchar_t *before)
{
	size_t len = wcslen(old), cap = len + (add ? wcslen(add) : 0) + 2, at = 0, i = 0;
	wchar_t *out = malloc(cap * sizeof(wchar_t));
	bool placed = !add, first = true;
	/* put add first when before is not there */
	bool has_before = false;

	if (!out)
		return NULL;
	if (add && before) {
		for (size_t s = 0; s <= len;) {
			size_t e = s;
			while (e < len && old[e] != L';')
				e++;
			if (same_wide(old + s, e - s, before, wcslen(before)))
				has_before = true;
			s = e + 1;
		}
	}
	if (add && !has_before) {
		wcscpy(out, add);
		at = wcslen(add);
		first = false;
		placed = true;
	}
	while (len && i <= len) {
		struct span e = { i, 0 };
		while (i + e.len < len && old[i + e.len] != L';')
			e.len++;
		i += e.len + 1;
		if (matches(old, e, drop, ndrop) || (add && same_wide(old + e.start, e.len, add, wcslen(add))))
			continue;
		if (!placed && same_wide(old + e.start, e.len, before, wcslen(before))) {
			if (!first)
				out[at++] = L';';
			wcscpy(out + at, add);
			at += wcslen(add);
			first = false;
			placed = true;
		}
		if (!first)
			out[at++] = L';';
		wmemcpy(out + at, old + e.start, e.len);
		at += e.len;
		first = false;
	}
	out[at] = L'\0';
	return out;
}

/*
 * What a new PATH value means beyond its entries. Its type stays as found
 * (REG_SZ is read as it is written; REG_EXPAND_SZ expands %VAR%): the
 * entries cudnnvm adds are plain folders (main.c refuses a '%' in --store).
 * A value longer than Windows passes to a new program (32,767 characters
 * with its NUL) is said when it is written (the plan of a dry run computes
 * the value too: said once).
 */
static void path_notes(enum cvm_env_scope s, const wchar_t *neu, bool write)
{
	size_t n = wcslen(neu);

	if (n > 32766 && write)
		cvm_warn("%s\\Path is now %zu characters long: Windows passes at most 32,767 "
			 "characters of a variable to a new program, which will not see its end",
			 cvm_winenv_key_name(s), n);
}

int cvm_winenv_path_edit(enum cvm_env_scope s, const char *const *drop, size_t ndrop,
			 const char *add, const char *before, bool write, bool *changed,
			 char **shown)
{
	wchar_t *old = NULL, *neu = NULL, *wadd = NULL, *wbefore = NULL, **wdrop;
	DWORD type = REG_EXPAND_SZ;
	int r;

	if (changed)
		*changed = false;
	if (shown)
		*shown = NULL;
	wdrop = calloc(ndrop + 1, sizeof(*wdrop));
	if (!wdrop)
		return -ENOMEM;
	r = 0;
	for (size_t i = 0; r == 0 && i < ndrop; i++)
		if (drop[i] && !(wdrop[i] = cvm_wide(drop[i])))
			r = -ENOMEM;
	if (r == 0 && add && !(wadd = cvm_wide(add)))
		r = -ENOMEM;
	if (r == 0 && before && !(wbefore = cvm_wide(before)))
		r = -ENOMEM;
	if (r == 0) {
		r = get_typed(s, L"Path", &old, &type);
		if (r == -ENOENT) {
			old = calloc(1, sizeof(wchar_t));
			r = old ? 0 : -ENOMEM;
		}
	}
	if (r == 0 && !(neu = edit(old, wdrop, ndrop, wadd, wbefore)))
		r = -ENOMEM;
	if (r == 0 && wcscmp(old, neu)) {
		if (changed)
			*changed = true;
		path_notes(s, neu, write);
		/* An empty PATH is deleted rather than left as "" (a user PATH of ours alone). */
		if (write)
			r = set_typed(s, L"Path", neu[0] || s == CVM_ENV_SYSTEM ? neu : NULL, type);
	}
	if (r == 0 && shown && !(*shown = cvm_utf8(neu)))
		r = -ENOMEM;
	for (size_t i = 0; i < ndrop; i++)
		free(wdrop[i]);
	free(wdrop);
	free(wadd);
	free(wbefore);
	free(old);
	free(neu);
	return r;
}

bool cvm_winenv_path_has(enum cvm_env_scope s, const char *dir)
{
	wchar_t *old = NULL, *w = cvm_wide(dir);
	bool has = false;

	if (w && get_wide(s, L"Path", &old) == 0) {
		size_t len = wcslen(old);
		for (size_t i = 0; !has && i <= len;) {
			size_t e = i;
			while (e < len && old[e] != L';')
				e++;
			has = same_wide(old + i, e - i, w, wcslen(w));
			i = e + 1;
		}
	}
	free(old);
	free(w);
	return has;
}

void cvm_winenv_broadcast(void)
{
	DWORD_PTR res;

	/* Programs that do not answer within 2 s are not waited for. */
	SendMessageTimeoutW(HWND_BROADCAST, WM_SETTINGCHANGE, 0, (LPARAM)L"Environment",
			    SMTO_ABORTIFHUNG, 2000, &res);
}

/* s's PATH expanded, or an empty string when unset. malloc'd, NULL on ENOMEM. */
static wchar_t *expanded(enum cvm_env_scope s)
{
	wchar_t *v = NULL, *x;
	DWORD n;

	if (get_wide(s, L"Path", &v) < 0)
		return calloc(1, sizeof(wchar_t));
	n = ExpandEnvironmentStringsW(v, NULL, 0);
	x = n ? malloc((n + 1) * sizeof(wchar_t)) : NULL;
	if (x && !ExpandEnvironmentStringsW(v, x, n + 1)) {
		free(x);
		x = NULL;
	}
	if (!x && n == 0)
		return v;
	free(v);
	return x;
}

int cvm_winenv_fresh_path(char **out)
{
	wchar_t *sys = expanded(CVM_ENV_SYSTEM), *usr = expanded(CVM_ENV_USER), *all = NULL;
	int r = -ENOMEM;

	*out = NULL;
	if (sys && usr && (all = malloc((wcslen(sys) + wcslen(usr) + 2) * sizeof(wchar_t)))) {
		wcscpy(all, sys);
		if (sys[0] && usr[0])
			wcscat(all, L";");
		wcscat(all, usr);
		*out = cvm_utf8(all);
		r = *out ? 0 : -ENOMEM;
	}
	free(sys);
	free(usr);
	free(all);
	return r;
}

size_t cvm_winpath_entry(const char *p, const char **next)
{
	const char *q = strchrnul(p, ';');
	size_t l = (size_t)(q - p);

	*next = *q ? q + 1 : q;
	while (l > 1 && (p[l - 1] == '\\' || p[l - 1] == '/') && p[l - 2] != ':')
		l--;
	return l;
}

int cvm_winenv_system_dir(bool windows, char *buf, size_t len)
{
	wchar_t w[MAX_PATH + 1];
	UINT n = windows ? GetWindowsDirectoryW(w, MAX_PATH + 1) : GetSystemDirectoryW(w, MAX_PATH + 1);
	char *s;
	int r;

	if (!n || n > MAX_PATH)
		return -ENOENT;
	s = cvm_utf8(w);
	if (!s)
		return -ENOMEM;
	r = cvm_fmt(buf, len, "%s", s);
	free(s);
	return r;
}
