/* SPDX-License-Identifier: MIT */
/*
 * proc.h on Windows: a child runs in a job object that kills it and every
 * process it starts when the deadline passes (or when we die: the job is
 * closed with us), its output read from a pipe.
 */
#define WIN32_LEAN_AND_MEAN
#include <windows.h>
#include <wchar.h>

#include "cudnnvm/fsutil.h"
#include "cudnnvm/proc.h"

int cvm_proc_users(const char *dir, struct cvm_proc_user **out, size_t *n)
{
	/*
	 * Windows refuses to delete a DLL a process has loaded, so an
	 * uninstall of a version in use fails on its own (sharing violation);
	 * naming the processes (Restart Manager) is the next issue's.
	 */
	(void)dir;
	*out = NULL;
	*n = 0;
	return 0;
}

/* argv as one command line, quoted as CommandLineToArgvW reads it. */
static wchar_t *command_line(char *const argv[])
{
	size_t cap = 1, i, len = 0;
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
		const wchar_t *a = w[i];
		size_t bs = 0;

		if (i)
			line[len++] = L' ';
		line[len++] = L'"';
		for (; *a; a++) {
			if (*a == L'\\') {
				bs++;
				continue;
			}
			/* Backslashes are literal, except before a quote: doubled, and the quote escaped. */
			for (bs = *a == L'"' ? 2 * bs + 1 : bs; bs; bs--)
				line[len++] = L'\\';
			line[len++] = *a;
		}
		for (bs *= 2; bs; bs--)
			line[len++] = L'\\';
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
