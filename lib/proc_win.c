/* SPDX-License-Identifier: MIT */
/*
 * proc.h on Windows. Which processes use a version: the Restart Manager
 * first, the loaded modules of every process second (proc_win.h). A child
 * runs in a job object that kills it and every process it starts when the
 * deadline passes (or when we die: the job is closed with us), its output
 * read from a pipe.
 */
#define WIN32_LEAN_AND_MEAN
#include <windows.h>
#include <psapi.h>
#include <restartmanager.h>
#include <wchar.h>

#include "alloc.h"
#include "compat.h"
#include "error.h"
#include "fsutil.h"
#include "out.h"
#include "proc.h"
#include "proc_win.h"

/* The longest path the API returns (with the \\?\ prefix). */
enum { WPATH_MAX = 32768 };

/* A path from the API as the core writes paths: UTF-8, '/', no \\?\ (malloc'd; NULL, errno set). */
static char *core_path(const wchar_t *w)
{
	char *s = cvm_utf8(w), *p;

	if (!s)
		return NULL;
	p = s;
	if (!strncmp(p, "\\\\?\\UNC\\", 8)) {	/* \\?\UNC\host\share -> //host/share */
		p += 6;
		p[0] = '\\';
	} else if (!strncmp(p, "\\\\?\\", 4)) {
		p += 4;
	}
	memmove(s, p, strlen(p) + 1);
	for (p = s; *p; p++)
		if (*p == '\\')
			*p = '/';
	return s;
}

/* A core path as a plain wide one: '\' only, no \\?\ prefix (malloc'd; NULL, errno set). */
static wchar_t *plain_wide(const char *s)
{
	wchar_t *w = cvm_wide(s), *p;

	if (!w)
		return NULL;
	for (p = w; *p; p++)
		if (*p == L'/')
			*p = L'\\';
	if (!wcsncmp(w, L"\\\\?\\UNC\\", 8)) {
		memmove(w + 2, w + 8, (wcslen(w + 8) + 1) * sizeof(*w));
	} else if (!wcsncmp(w, L"\\\\?\\", 4)) {
		memmove(w, w + 4, (wcslen(w + 4) + 1) * sizeof(*w));
	}
	return w;
}

bool cvm_path_under(const char *path, const char *dir)
{
	wchar_t *p = plain_wide(path), *d = plain_wide(dir);
	size_t pl, dl;
	bool r = false;

	if (p && d) {
		pl = wcslen(p);
		dl = wcslen(d);
		while (dl && d[dl - 1] == L'\\')
			dl--;
		/* Ordinal, case folded as the file system folds it; not the locale's collation. */
		r = dl && pl > dl + 1 && p[dl] == L'\\' &&
		    CompareStringOrdinal(p, (int)dl, d, (int)dl, TRUE) == CSTR_EQUAL;
	}
	free(p);
	free(d);
	return r;
}

static void free_strv(char **v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

/* The exe of process h (UTF-8, '/'; malloc'd), or NULL. */
static char *image_of(HANDLE h, wchar_t *buf)
{
	DWORD len = WPATH_MAX;

	return QueryFullProcessImageNameW(h, 0, buf, &len) ? core_path(buf) : NULL;
}

/* The paths of h's modules (UTF-8, '/'; each and the array malloc'd). 0 or -errno. */
static int modules_of(HANDLE h, wchar_t *buf, char ***out, size_t *n)
{
	HMODULE *m = NULL;
	DWORD cb = 0, need = 128 * sizeof(*m);
	char **v = NULL;
	size_t cnt = 0, k, mcap = 0;
	int r = 0;

	*out = NULL;
	*n = 0;
	/* The list may grow between two calls: ask again until it fits. */
	while (need > cb) {
		r = CVM_GROW(m, need / sizeof(*m) + 16, mcap);
		if (r < 0)
			goto out;
		cb = (DWORD)(mcap * sizeof(*m));
		if (!EnumProcessModulesEx(h, m, cb, &need, LIST_MODULES_ALL)) {
			r = -cvm_errno_from_win(GetLastError());
			goto out;
		}
	}
	k = need / sizeof(*m);
	v = calloc(k ? k : 1, sizeof(*v));
	if (!v) {
		r = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < k; i++) {
		/* 0: unloaded meanwhile. */
		if (!GetModuleFileNameExW(h, m[i], buf, WPATH_MAX))
			continue;
		v[cnt] = core_path(buf);
		if (!v[cnt]) {
			r = -ENOMEM;
			goto out;
		}
		cnt++;
	}
	*out = v;
	*n = cnt;
	v = NULL;
out:
	if (v)
		free_strv(v, cnt);
	free(m);
	return r;
}

int cvm_proc_each_modules(int (*fn)(void *arg, unsigned long pid, const char *image, char **mods,
				    size_t n),
			  void *arg, size_t *unreadable)
{
	DWORD *pids = NULL, got = 0, self = GetCurrentProcessId();
	size_t cap = 0, want = 512;
	wchar_t *buf = NULL;
	int r = 0;

	if (unreadable)
		*unreadable = 0;
	buf = malloc(WPATH_MAX * sizeof(*buf));
	if (!buf)
		return -ENOMEM;
	/* A full buffer may have cut the list: grow it until it is not full. */
	for (;;) {
		r = CVM_GROW(pids, want, cap);
		if (r < 0)
			goto out;
		if (!EnumProcesses(pids, (DWORD)(cap * sizeof(*pids)), &got)) {
			r = -cvm_errno_from_win(GetLastError());
			goto out;
		}
		if (got < cap * sizeof(*pids))
			break;
		want = cap * 2;
	}
	for (size_t i = 0; r == 0 && i < got / sizeof(*pids); i++) {
		char **mods = NULL, *image;
		size_t n = 0;
		HANDLE h;
		int k;

		if (pids[i] == self || pids[i] == 0)
			continue;
		h = OpenProcess(PROCESS_QUERY_LIMITED_INFORMATION | PROCESS_VM_READ, FALSE, pids[i]);
		if (!h) {
			if (GetLastError() == ERROR_ACCESS_DENIED && unreadable) {
				cvm_verbose("process %lu: it cannot be opened: access denied",
					    (unsigned long)pids[i]);
				(*unreadable)++;
			}
			continue;	/* or gone meanwhile */
		}
		k = modules_of(h, buf, &mods, &n);
		image = k == 0 ? image_of(h, buf) : NULL;
		CloseHandle(h);
		if (k == -ENOMEM) {
			r = k;
			break;
		}
		if (k == -EACCES && unreadable) {
			cvm_verbose("process %lu: its modules cannot be read: access denied",
				    (unsigned long)pids[i]);
			(*unreadable)++;
		}
		/* Otherwise (ERROR_PARTIAL_COPY): starting or ending, nothing loaded to tell. */
		if (k == 0)
			r = fn(arg, pids[i], image ? image : "", mods, n);
		free(image);
		free_strv(mods, n);
	}
out:
	free(pids);
	free(buf);
	return r;
}

static const char *base_name(const char *path)
{
	const char *s = strrchr(path, '/');

	return s ? s + 1 : path;
}

static int add_user(struct cvm_proc_user **v, size_t *n, size_t *cap, unsigned long pid,
		    const char *comm, const char *file)
{
	struct cvm_proc_user *nv;
	int r = CVM_GROW(*v, *n + 1, *cap);

	if (r < 0)
		return r;
	nv = *v;
	memset(&nv[*n], 0, sizeof(nv[*n]));
	nv[*n].pid = (pid_t)pid;
	snprintf(nv[*n].comm, sizeof(nv[*n].comm), "%s", comm);
	snprintf(nv[*n].file, sizeof(nv[*n].file), "%s", file);
	(*n)++;
	return 0;
}

struct walk {
	const char *dir;
	struct cvm_proc_user *v;
	size_t n, cap;
};

static int walk_one(void *arg, unsigned long pid, const char *image, char **mods, size_t n)
{
	struct walk *w = arg;

	for (size_t i = 0; i < n; i++)
		if (cvm_path_under(mods[i], w->dir))
			return add_user(&w->v, &w->n, &w->cap, pid, *image ? base_name(image) : "?", mods[i]);
	return 0;
}

/* The wide paths of the regular files in dir/bin, for the Restart Manager. 0 or -errno. */
static int bin_files(const char *dir, wchar_t ***out, size_t *n)
{
	char bin[4096], path[4096];
	wchar_t **v = NULL;
	size_t cnt = 0, cap = 0;
	struct dirent *de;
	DIR *d;
	int r = 0;

	*out = NULL;
	*n = 0;
	r = cvm_fmt(bin, sizeof(bin), "%s/bin", dir);
	if (r < 0)
		return r;
	d = opendir(bin);
	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		struct stat st;

		if (cvm_fmt(path, sizeof(path), "%s/%s", bin, de->d_name) < 0 ||
		    lstat(path, &st) < 0 || !S_ISREG(st.st_mode))
			continue;
		r = CVM_GROW(v, cnt + 1, cap);
		if (r < 0)
			break;
		v[cnt] = plain_wide(path);
		if (!v[cnt]) {
			r = -errno;
			break;
		}
		cnt++;
	}
	closedir(d);
	if (r < 0) {
		for (size_t i = 0; i < cnt; i++)
			free(v[i]);
		free(v);
		return r;
	}
	*out = v;
	*n = cnt;
	return 0;
}

/*
 * The Restart Manager's answer: the processes using a file of dir/bin, by
 * PID; named by their image (strAppName, a display name, when the process
 * cannot be opened), with the first of their modules under dir. 0 or -errno.
 */
static int rm_users(const char *dir, struct cvm_proc_user **out, size_t *n)
{
	WCHAR key[CCH_RM_SESSION_KEY + 1] = { 0 };
	RM_PROCESS_INFO *info = NULL;
	UINT need = 0, have = 0;
	DWORD session = 0, reasons = 0, e;
	wchar_t **files = NULL, *buf = NULL;
	size_t nf = 0, info_cap = 0, ucap = 0;
	bool started = false;
	int r;

	r = bin_files(dir, &files, &nf);
	if (r < 0 || !nf)
		goto out;
	buf = malloc(WPATH_MAX * sizeof(*buf));
	if (!buf) {
		r = -ENOMEM;
		goto out;
	}
	e = RmStartSession(&session, 0, key);
	if (e == ERROR_SUCCESS) {
		started = true;
		e = RmRegisterResources(session, (UINT)nf, (LPCWSTR *)files, 0, NULL, 0, NULL);
	}
	/* Asked with no room first; ERROR_MORE_DATA again: the list grew meanwhile. */
	if (e == ERROR_SUCCESS)
		e = RmGetList(session, &need, &have, NULL, &reasons);
	for (int tries = 0; e == ERROR_MORE_DATA && tries < 5; tries++) {
		r = CVM_GROW(info, need ? need : 1, info_cap);
		if (r < 0)
			goto out;
		have = need;
		e = RmGetList(session, &need, &have, info, &reasons);
	}
	if (e != ERROR_SUCCESS) {
		r = -cvm_errno_from_win(e);
		goto out;
	}
	for (UINT i = 0; info && i < have; i++) {
		DWORD pid = info[i].Process.dwProcessId;
		char *image = NULL, *app = NULL, **mods = NULL, file[256] = "";
		size_t nm = 0;
		HANDLE h;

		if (pid == GetCurrentProcessId())
			continue;
		h = OpenProcess(PROCESS_QUERY_LIMITED_INFORMATION | PROCESS_VM_READ, FALSE, pid);
		if (h) {
			image = image_of(h, buf);
			if (modules_of(h, buf, &mods, &nm) == 0)
				for (size_t k = 0; k < nm && !file[0]; k++)
					if (cvm_path_under(mods[k], dir))
						snprintf(file, sizeof(file), "%s", mods[k]);
			CloseHandle(h);
		}
		if (!image)
			app = cvm_utf8(info[i].strAppName);
		r = add_user(out, n, &ucap, pid, image ? base_name(image) : app ? app : "?", file);
		free(image);
		free(app);
		free_strv(mods, nm);
		if (r < 0)
			goto out;
	}
out:
	if (started)
		RmEndSession(session);
	free(info);
	free(buf);
	for (size_t i = 0; i < nf; i++)
		free(files[i]);
	free(files);
	return r;
}

int cvm_proc_users(const char *dir, struct cvm_proc_user **out, size_t *n)
{
	struct walk w = { dir, NULL, 0, 0 };
	int r;

	*out = NULL;
	*n = 0;
	/*
	 * The Restart Manager is the API made for "who has this file": it also
	 * sees a DLL mapped by a process we may not read. But wine's (8.0,
	 * measured) is a stub that answers every call with success and no
	 * process, and no answer there may not mean no user: when it fails or
	 * names nobody, the modules of every process we can read are looked at
	 * instead. That walk costs a few milliseconds and can only add users
	 * that really have a module under dir.
	 */
	r = rm_users(dir, out, n);
	if (r == 0 && *n) {
		cvm_verbose("the Restart Manager names %zu process%s using %s", *n, *n == 1 ? "" : "es",
			    dir);
		return 0;
	}
	cvm_verbose("the Restart Manager %s%s for %s: looking at the modules of every process",
		    r < 0 ? "failed: " : "names no process", r < 0 ? cvm_strerror(-r) : "", dir);
	free(*out);
	*out = NULL;
	*n = 0;
	r = cvm_proc_each_modules(walk_one, &w, NULL);
	if (r < 0) {
		free(w.v);
		return r;
	}
	*out = w.v;
	*n = w.n;
	return 0;
}

/*
 * One argument onto line at len, as the C runtime splits a command line
 * (CommandLineToArgvW's rules): in quotes only when it is empty or holds a
 * space, a tab or a quote; backslashes literal except before a quote, where
 * they are doubled and the quote escaped. plain: the program's name, and
 * cmd.exe's own line after /c, which know no escapes: quoted when they
 * hold a space or a tab, as they are otherwise. The new length.
 */
static size_t put_arg(wchar_t *line, size_t len, const wchar_t *a, bool plain)
{
	bool q = !*a || wcspbrk(a, plain ? L" \t" : L" \t\"") != NULL;
	size_t bs = 0;

	if (q)
		line[len++] = L'"';
	for (; *a; a++) {
		if (*a == L'\\' && !plain) {
			bs++;
			continue;
		}
		for (bs = *a == L'"' && !plain ? 2 * bs + 1 : bs; bs; bs--)
			line[len++] = L'\\';
		line[len++] = *a;
	}
	for (bs *= q ? 2 : 1; bs; bs--)
		line[len++] = L'\\';
	if (q)
		line[len++] = L'"';
	return len;
}

/* Whether w names cmd.exe (cmd, CMD.EXE, C:\Windows\System32\cmd.exe), which reads its line its own way. */
static bool is_cmd(const wchar_t *w)
{
	const wchar_t *b = w;

	for (const wchar_t *p = w; *p; p++)
		if (*p == L'\\' || *p == L'/' || *p == L':')
			b = p + 1;
	return !_wcsicmp(b, L"cmd") || !_wcsicmp(b, L"cmd.exe");
}

/*
 * argv as one command line. For cmd.exe what follows /c (or /k) is its own
 * command line, joined as typed at a prompt: cmd strips the first and the
 * last quote of it when it begins with one and holds more than two, so
 * such a line goes in one more pair (`cmd /c ""a b.bat" "x y""` runs
 * "a b.bat" with "x y"); `cmd /c "echo a& echo b"` stays cmd's to parse.
 */
static wchar_t *command_line(char *const argv[])
{
	size_t cap = 5, i, len = 0, own = 0, at = 0, quotes = 0;
	wchar_t *line, **w;
	int argc = 0;

	while (argv[argc])
		argc++;
	w = calloc((size_t)argc + 1, sizeof(*w));
	if (!w)
		return NULL;
	for (i = 0; i < (size_t)argc; i++) {
		w[i] = cvm_wide(argv[i]);
		if (!w[i])
			goto fail;
		cap += 2 * wcslen(w[i]) + 3;
	}
	line = malloc(cap * sizeof(*line));
	if (!line)
		goto fail;
	for (i = 0; i < (size_t)argc; i++) {
		if (i)
			line[len++] = L' ';
		if (own && i == own)
			at = len;
		len = put_arg(line, len, w[i], i == 0 || (own && i >= own));
		if (!own && i && is_cmd(w[0]) && (!_wcsicmp(w[i], L"/c") || !_wcsicmp(w[i], L"/k")))
			own = i + 1;
	}
	for (i = at; own && at && i < len; i++)
		quotes += line[i] == L'"';
	if (quotes > 2 && line[at] == L'"') {
		memmove(line + at + 1, line + at, (len - at) * sizeof(*line));
		line[at] = L'"';
		len++;
		line[len++] = L'"';
	}
	line[len] = L'\0';
	for (i = 0; i < (size_t)argc; i++)
		free(w[i]);
	free(w);
	return line;
fail:
	for (i = 0; i < (size_t)argc; i++)
		free(w[i]);
	free(w);
	return NULL;
}

/* Writes a then b, NUL-terminated, at to; their length with the NUL. */
static size_t put(wchar_t *to, const wchar_t *a, const wchar_t *b)
{
	wcscpy(to, a);
	wcscpy(to + wcslen(a), b);
	return wcslen(a) + wcslen(b) + 1;
}

/*
 * Our environment with PATH set to path, as CreateProcessW takes it (a
 * block of "NAME=value" strings, then an empty one). PATH stays where it
 * was in the block, so that the block keeps its order. malloc'd, NULL on
 * failure.
 */
static wchar_t *env_with_path(const char *path)
{
	wchar_t *wpath = cvm_wide(path), *env = GetEnvironmentStringsW(), *block = NULL;
	size_t len = 0, at = 0;
	bool done = false;

	if (!wpath || !env)
		goto out;
	for (const wchar_t *e = env; *e; e += wcslen(e) + 1)
		len += wcslen(e) + 1;
	block = malloc((len + wcslen(wpath) + 7) * sizeof(*block));
	if (!block)
		goto out;
	for (const wchar_t *e = env; *e; e += wcslen(e) + 1) {
		/* Names ignore case (Path, PATH); a second one would be ambiguous: dropped. */
		if (_wcsnicmp(e, L"PATH=", 5)) {
			at += put(block + at, L"", e);
		} else if (!done) {
			at += put(block + at, L"PATH=", wpath);
			done = true;
		}
	}
	if (!done)
		at += put(block + at, L"PATH=", wpath);
	block[at] = L'\0';
out:
	free(wpath);
	if (env)
		FreeEnvironmentStringsW(env);
	return block;
}

int cvm_proc_capture(char *const argv[], const char *ld_path, bool keep_stderr, long timeout_ms,
		     char *out, size_t len, int *status)
{
	long long deadline = cvm_now_ms() + timeout_ms;
	SECURITY_ATTRIBUTES sa = { sizeof(sa), NULL, TRUE };
	JOBOBJECT_EXTENDED_LIMIT_INFORMATION lim = { 0 };
	STARTUPINFOW si = { 0 };
	PROCESS_INFORMATION pi = { 0 };
	HANDLE rd = NULL, wr = NULL, nul = INVALID_HANDLE_VALUE, job = NULL;
	wchar_t *line = NULL, *env = NULL;
	size_t n = 0;
	DWORD code;
	int r = 0;

	out[0] = '\0';
	line = command_line(argv);
	/* The loader's search path here is PATH (after the exe's folder and the system's). */
	if (line && ld_path && !(env = env_with_path(ld_path))) {
		free(line);
		line = NULL;
	}
	if (!line)
		return -ENOMEM;
	if (!CreatePipe(&rd, &wr, &sa, 0)) {
		r = -cvm_errno_from_win(GetLastError());
		goto out;
	}
	SetHandleInformation(rd, HANDLE_FLAG_INHERIT, 0);
	nul = CreateFileW(L"NUL", GENERIC_READ | GENERIC_WRITE, FILE_SHARE_READ | FILE_SHARE_WRITE, &sa,
			  OPEN_EXISTING, 0, NULL);
	job = CreateJobObjectW(NULL, NULL);
	if (!job) {
		r = -cvm_errno_from_win(GetLastError());
		goto out;
	}
	lim.BasicLimitInformation.LimitFlags = JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE;
	SetInformationJobObject(job, JobObjectExtendedLimitInformation, &lim, sizeof(lim));
	si.cb = sizeof(si);
	si.dwFlags = STARTF_USESTDHANDLES;
	si.hStdInput = nul;
	si.hStdOutput = wr;
	si.hStdError = keep_stderr ? GetStdHandle(STD_ERROR_HANDLE) : nul;
	/* Suspended until it is in the job, so that nothing it starts escapes the kill. */
	if (!CreateProcessW(NULL, line, NULL, NULL, TRUE,
			    CREATE_SUSPENDED | CREATE_NO_WINDOW | CREATE_UNICODE_ENVIRONMENT, env, NULL,
			    &si, &pi)) {
		DWORD e = GetLastError();

		r = e == ERROR_FILE_NOT_FOUND || e == ERROR_PATH_NOT_FOUND ? -ENOENT : -cvm_errno_from_win(e);
		goto out;
	}
	AssignProcessToJobObject(job, pi.hProcess);
	ResumeThread(pi.hThread);
	CloseHandle(wr);
	wr = NULL;
	for (;;) {
		char sink[4096];
		DWORD avail = 0, k = 0;
		long long left = deadline - cvm_now_ms();

		if (left <= 0) {
			r = -ETIMEDOUT;
			goto out;
		}
		if (!PeekNamedPipe(rd, NULL, 0, NULL, &avail, NULL))
			break;		/* the child closed its end: EOF */
		if (!avail) {
			if (WaitForSingleObject(pi.hProcess, 10) == WAIT_OBJECT_0 &&
			    PeekNamedPipe(rd, NULL, 0, NULL, &avail, NULL) && !avail) {
				/* It ended; what is left in the pipe was read. */
				if (!PeekNamedPipe(rd, NULL, 0, NULL, &avail, NULL) || !avail)
					break;
			}
			continue;
		}
		if (n + 1 < len) {
			if (!ReadFile(rd, out + n, (DWORD)(len - 1 - n < avail ? len - 1 - n : avail), &k, NULL))
				break;
			n += k;
		} else if (!ReadFile(rd, sink, avail < sizeof(sink) ? avail : sizeof(sink), &k, NULL)) {
			break;
		}
	}
	out[n] = '\0';
	for (;;) {
		long long left = deadline - cvm_now_ms();

		if (left <= 0) {
			r = -ETIMEDOUT;
			goto out;
		}
		if (WaitForSingleObject(pi.hProcess, (DWORD)(left > 1000 ? 1000 : left)) == WAIT_OBJECT_0)
			break;
	}
	GetExitCodeProcess(pi.hProcess, &code);
	/* As a wait status: WIFEXITED, WEXITSTATUS = code & 0xff. */
	*status = (int)((code & 0xff) << 8);
out:
	if (job) {
		if (r == -ETIMEDOUT)
			TerminateJobObject(job, 1);
		CloseHandle(job);
	}
	if (pi.hProcess) {
		if (r == -ETIMEDOUT)
			WaitForSingleObject(pi.hProcess, 5000);
		CloseHandle(pi.hThread);
		CloseHandle(pi.hProcess);
	}
	if (nul != INVALID_HANDLE_VALUE)
		CloseHandle(nul);
	if (wr)
		CloseHandle(wr);
	if (rd)
		CloseHandle(rd);
	free(line);
	free(env);
	return r;
}

int cvm_proc_exec(char *const argv[])
{
	STARTUPINFOW si = { .cb = sizeof(si) };
	PROCESS_INFORMATION pi;
	wchar_t *line = command_line(argv);
	DWORD code = 1, e;

	if (!line)
		return -ENOMEM;
	fflush(NULL);
	if (!CreateProcessW(NULL, line, NULL, NULL, TRUE, 0, NULL, NULL, &si, &pi)) {
		e = GetLastError();
		free(line);
		return e == ERROR_FILE_NOT_FOUND || e == ERROR_PATH_NOT_FOUND ? -ENOENT
									      : -cvm_errno_from_win(e);
	}
	free(line);
	CloseHandle(pi.hThread);
	/* Ctrl-C goes to the whole console: the child decides; we only wait for it. */
	SetConsoleCtrlHandler(NULL, TRUE);
	WaitForSingleObject(pi.hProcess, INFINITE);
	GetExitCodeProcess(pi.hProcess, &code);
	CloseHandle(pi.hProcess);
	exit((int)code);
}
