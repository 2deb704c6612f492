/* SPDX-License-Identifier: MIT */
/*
 * Downloads on Windows: the only interface to WinHTTP, behind fetch.h, with
 * fetch.c's rules (resume into <name>.part with Range, retries with backoff,
 * hashing while the bytes arrive, the hooks, the same messages and codes).
 * Windows' own settings apply: the system proxy (WINHTTP_ACCESS_TYPE_
 * AUTOMATIC_PROXY, or the current user's Internet Options before Windows
 * 8.1) and the system certificate store. file:// URLs are read directly.
 */
#include <errno.h>
#include <io.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <wchar.h>

#include <windows.h>
#include <winhttp.h>

#include "cudnnvm/compat.h"
#include "cudnnvm/digest.h"
#include "cudnnvm/error.h"
#include "cudnnvm/fault.h"
#include "cudnnvm/fetch.h"
#include "cudnnvm/fsutil.h"
#include "cudnnvm/out.h"

#define USER_AGENT L"cudnnvm/0.1"
enum { BUFSZ = 256 << 10 };

struct xfer {
	int fd;
	struct cvm_sha256 *sha;
	volatile uint64_t have;		/* bytes in the .part (hashed); read by the watcher */
	int error;			/* -errno from a write */
	struct cvm_progress pr;
	const struct cvm_fetch_hooks *hooks;	/* never NULL (no_hooks) */
	unsigned char *buf;
};

/* How one request ended (what curl's CURLcode and response code say in fetch.c). */
enum outcome {
	DONE,		/* the body is complete */
	HTTP_ERROR,	/* a status >= 400 (http) */
	NET_ERROR,	/* WinHTTP failed (win) */
	PARTIAL,	/* the connection closed before Content-Length bytes */
	TIMED_OUT,	/* below 1 KiB/s for low_speed_time_s */
	NOT_FOUND,	/* file:// that cannot be opened */
	STOPPED,	/* a write failed (x->error) or Ctrl-C */
};

struct result {
	enum outcome how;
	long http;
	DWORD win;
	char detail[256];
};

static const struct cvm_fetch_hooks no_hooks;

bool cvm_fetch_supported(const char *url)
{
	return !strncmp(url, "http://", 7) || !strncmp(url, "https://", 8) ||
	       !strncmp(url, "file://", 7);
}

/* Starts the .part over: truncated, hash reset. */
static int restart(struct xfer *x)
{
	if (x->hooks->restarted)
		x->hooks->restarted(x->hooks->arg);
	cvm_sha256_free(x->sha);
	x->sha = cvm_sha256_new();
	x->have = 0;
	if (!x->sha)
		return -ENOMEM;
	if (_chsize_s(x->fd, 0) != 0 || _lseeki64(x->fd, 0, SEEK_SET) < 0)
		return -errno;
	return 0;
}

/* Bytes of the body: written, hashed, told to the hooks. false: stop (x->error). */
static bool on_data(struct xfer *x, const void *buf, size_t len)
{
	int r = cvm_write_all(x->fd, buf, len);

	if (r == 0)
		r = cvm_sha256_update(x->sha, buf, len);
	if (r < 0) {
		x->error = r;
		return false;
	}
	x->have += len;
	if (x->hooks->hashed)
		x->hooks->hashed(x->hooks->arg, x->have);
	cvm_progress_add(&x->pr, len);
	cvm_fault("fetch-receiving");
	return true;
}

/* Hashes what an earlier run left in the .part, so that the download resumes after it. */
static int hash_part(struct xfer *x)
{
	uint64_t off = 0;
	ssize_t k;
	int r = 0;

	while ((k = pread(x->fd, x->buf, BUFSZ, (off_t)off)) > 0) {
		r = cvm_sha256_update(x->sha, x->buf, (size_t)k);
		if (r < 0)
			break;
		off += (uint64_t)k;
	}
	if (k < 0)
		r = -errno;
	x->have = off;
	if (r == 0 && _lseeki64(x->fd, (__int64)off, SEEK_SET) < 0)
		r = -errno;
	return r;
}

/* WinHTTP's words for code (its message table), else the number. */
static void win_detail(DWORD code, char *buf, size_t len)
{
	wchar_t w[256];
	char *u = NULL;
	DWORD n = FormatMessageW(FORMAT_MESSAGE_FROM_HMODULE | FORMAT_MESSAGE_FROM_SYSTEM |
				 FORMAT_MESSAGE_IGNORE_INSERTS, GetModuleHandleW(L"winhttp.dll"),
				 code, 0, w, 256, NULL);

	while (n && (w[n - 1] == L'\n' || w[n - 1] == L'\r' || w[n - 1] == L' ' ||
		     w[n - 1] == L'.'))
		w[--n] = 0;
	if (n)
		u = cvm_utf8(w);
	if (u)
		snprintf(buf, len, "%s, error %lu", u, (unsigned long)code);
	else
		snprintf(buf, len, "WinHTTP error %lu", (unsigned long)code);
	free(u);
}

/*
 * Worth another try: timeouts, resets, 5xx, a cut body. A name that does not
 * resolve is not, nor a TLS failure (a certificate that does not verify is
 * ERROR_WINHTTP_SECURE_CHANNEL_ERROR under wine, SECURE_FAILURE on Windows).
 */
static bool transient(const struct result *res)
{
	switch (res->how) {
	case HTTP_ERROR:
		return res->http >= 500 || res->http == 408 || res->http == 429;
	case PARTIAL:
	case TIMED_OUT:
		return true;
	case NET_ERROR:
		return res->win == ERROR_WINHTTP_TIMEOUT || res->win == ERROR_WINHTTP_CANNOT_CONNECT ||
		       res->win == ERROR_WINHTTP_CONNECTION_ERROR ||
		       res->win == ERROR_WINHTTP_INVALID_SERVER_RESPONSE;
	default:
		return false;
	}
}

/* What went wrong, in words that name the step (fetch.c's). */
static const char *what_failed(const struct result *res)
{
	if (res->how == TIMED_OUT)
		return "timed out";
	if (res->how != NET_ERROR)
		return "the transfer failed";
	switch (res->win) {
	case ERROR_WINHTTP_NAME_NOT_RESOLVED:
		return "the host name does not resolve";
	case ERROR_WINHTTP_CANNOT_CONNECT:
		return "cannot connect";
	case ERROR_WINHTTP_TIMEOUT:
		return "timed out";
	case ERROR_WINHTTP_SECURE_FAILURE:
	case ERROR_WINHTTP_SECURE_CHANNEL_ERROR:
	case ERROR_WINHTTP_SECURE_INVALID_CA:
	case ERROR_WINHTTP_SECURE_CERT_CN_INVALID:
	case ERROR_WINHTTP_SECURE_CERT_DATE_INVALID:
	case ERROR_WINHTTP_SECURE_INVALID_CERT:
	case ERROR_WINHTTP_SECURE_CERT_REVOKED:
	case ERROR_WINHTTP_SECURE_CERT_REV_FAILED:
	case ERROR_WINHTTP_SECURE_CERT_WRONG_USAGE:
		return "the TLS connection failed";
	default:
		return "the transfer failed";
	}
}

/* The session: one per process, with the system's proxy settings. */
static HINTERNET session(void)
{
	static HINTERNET s;
	WINHTTP_CURRENT_USER_IE_PROXY_CONFIG ie = { 0 };

	if (s)
		return s;
	/* Windows 8.1 and later: the system proxy, WPAD and PAC scripts included. */
	s = WinHttpOpen(USER_AGENT, WINHTTP_ACCESS_TYPE_AUTOMATIC_PROXY, WINHTTP_NO_PROXY_NAME,
			WINHTTP_NO_PROXY_BYPASS, 0);
	if (s)
		return s;
	/* Older: the proxy of the user's Internet Options, if one is set. */
	if (WinHttpGetIEProxyConfigForCurrentUser(&ie) && ie.lpszProxy)
		s = WinHttpOpen(USER_AGENT, WINHTTP_ACCESS_TYPE_NAMED_PROXY, ie.lpszProxy,
				ie.lpszProxyBypass ? ie.lpszProxyBypass : WINHTTP_NO_PROXY_BYPASS, 0);
	if (!s)
		s = WinHttpOpen(USER_AGENT, WINHTTP_ACCESS_TYPE_DEFAULT_PROXY, WINHTTP_NO_PROXY_NAME,
				WINHTTP_NO_PROXY_BYPASS, 0);
	if (ie.lpszProxy)
		GlobalFree(ie.lpszProxy);
	if (ie.lpszProxyBypass)
		GlobalFree(ie.lpszProxyBypass);
	if (ie.lpszAutoConfigUrl)
		GlobalFree(ie.lpszAutoConfigUrl);
	return s;
}

/*
 * The watcher of one request: WinHTTP's synchronous calls block, so a thread
 * of its own ends the request on Ctrl-C by closing its handle (which WinHTTP
 * allows from another thread). The low-speed limit is the reading loop's.
 */
struct watch {
	HINTERNET req;
	volatile LONG closed;
	HANDLE done;
};

static void close_once(struct watch *w)
{
	if (InterlockedExchange(&w->closed, 1) == 0)
		WinHttpCloseHandle(w->req);
}

static DWORD WINAPI watcher(void *arg)
{
	struct watch *w = arg;

	while (WaitForSingleObject(w->done, 100) == WAIT_TIMEOUT) {
		if (cvm_interrupted) {
			close_once(w);
			break;
		}
	}
	return 0;
}

static void fail_win(struct result *res, DWORD code)
{
	res->how = NET_ERROR;
	res->win = code;
	win_detail(code, res->detail, sizeof(res->detail));
}

/* One GET of url from x->have on: the body goes through on_data. */
static int http_request(struct xfer *x, const wchar_t *wurl, const struct cvm_fetch_opts *o,
			struct result *res)
{
	URL_COMPONENTS uc = { .dwStructSize = sizeof(uc) };
	wchar_t host[256], *path = NULL, hdr[64], num[32];
	HINTERNET s = session(), conn = NULL;
	struct watch w = { 0 };
	long low_speed_s = o->low_speed_time_s > 0 ? o->low_speed_time_s : 60;
	ULONGLONG t0;
	uint64_t have0;
	HANDLE tid = NULL;
	DWORD status = 0, len = sizeof(status), redirects = 10, connect_ms;
	uint64_t clen = 0, got = 0, start = x->have;
	bool have_clen;
	int r = 0;

	if (!s) {
		fail_win(res, GetLastError());
		return 0;
	}
	connect_ms = (DWORD)(o->connect_timeout_s > 0 ? o->connect_timeout_s : 30) * 1000;
	/*
	 * libcurl's low-speed limit (below 1 KiB/s for low_speed_s ends the try):
	 * a send or a read that waits that long ends by WinHTTP's timeouts, a
	 * trickle by the check in the reading loop.
	 */
	WinHttpSetTimeouts(s, (int)connect_ms, (int)connect_ms, (int)(low_speed_s * 1000),
			   (int)(low_speed_s * 1000));
	uc.dwHostNameLength = (DWORD)-1;
	uc.dwUrlPathLength = (DWORD)-1;
	uc.dwExtraInfoLength = (DWORD)-1;
	if (!WinHttpCrackUrl(wurl, 0, 0, &uc) || uc.dwHostNameLength >= 256) {
		fail_win(res, GetLastError());
		return 0;
	}
	wmemcpy(host, uc.lpszHostName, uc.dwHostNameLength);
	host[uc.dwHostNameLength] = 0;
	/* Path and query, up to the end of the URL (no fragment is sent). */
	path = _wcsdup(uc.dwUrlPathLength ? uc.lpszUrlPath : L"/");
	if (!path)
		return -ENOMEM;
	path[wcscspn(path, L"#")] = 0;
	conn = WinHttpConnect(s, host, uc.nPort, 0);
	if (conn)
		w.req = WinHttpOpenRequest(conn, L"GET", path, NULL, WINHTTP_NO_REFERER,
					   WINHTTP_DEFAULT_ACCEPT_TYPES,
					   uc.nScheme == INTERNET_SCHEME_HTTPS ? WINHTTP_FLAG_SECURE : 0);
	if (!conn || !w.req) {
		fail_win(res, GetLastError());
		goto out;
	}
	WinHttpSetOption(w.req, WINHTTP_OPTION_MAX_HTTP_AUTOMATIC_REDIRECTS, &redirects,
			 sizeof(redirects));
	if (x->have)
		swprintf(hdr, 64, L"Range: bytes=%llu-", (unsigned long long)x->have);
	w.done = CreateEventW(NULL, TRUE, FALSE, NULL);
	if (!w.done || !(tid = CreateThread(NULL, 0, watcher, &w, 0, NULL))) {
		r = -EAGAIN;
		goto out;
	}
	if (!WinHttpSendRequest(w.req, x->have ? hdr : WINHTTP_NO_ADDITIONAL_HEADERS,
				x->have ? (DWORD)-1L : 0, WINHTTP_NO_REQUEST_DATA, 0, 0, 0) ||
	    !WinHttpReceiveResponse(w.req, NULL) ||
	    !WinHttpQueryHeaders(w.req, WINHTTP_QUERY_STATUS_CODE | WINHTTP_QUERY_FLAG_NUMBER,
				 WINHTTP_HEADER_NAME_BY_INDEX, &status, &len, WINHTTP_NO_HEADER_INDEX)) {
		fail_win(res, GetLastError());
		goto out;
	}
	res->http = (long)status;
	if (status >= 400) {
		res->how = HTTP_ERROR;
		snprintf(res->detail, sizeof(res->detail), "HTTP %lu", (unsigned long)status);
		goto out;
	}
	/* 200 to a Range request: the whole file comes again. */
	if (start && status == 200) {
		cvm_verbose("the server ignored the Range request: starting over");
		r = restart(x);
		if (r < 0)
			goto out;
		start = 0;
	}
	/* As text: WINHTTP_QUERY_FLAG_NUMBER64 is newer than some WinHTTPs (wine's). */
	len = sizeof(num);
	have_clen = WinHttpQueryHeaders(w.req, WINHTTP_QUERY_CONTENT_LENGTH,
					WINHTTP_HEADER_NAME_BY_INDEX, num, &len,
					WINHTTP_NO_HEADER_INDEX) && num[0] >= L'0' && num[0] <= L'9';
	if (have_clen)
		clen = wcstoull(num, NULL, 10);
	t0 = GetTickCount64();
	have0 = x->have;
	for (;;) {
		DWORD n = 0, avail = 0;
		ULONGLONG now;

		/* What has arrived, then that: a read of a whole buffer may wait
		 * for all of it (wine's does), past the low-speed check. */
		if (!WinHttpQueryDataAvailable(w.req, &avail) ||
		    !WinHttpReadData(w.req, x->buf, avail < BUFSZ ? avail : BUFSZ, &n)) {
			fail_win(res, GetLastError());
			goto out;
		}
		if (n == 0)
			break;
		if (!on_data(x, x->buf, n) || cvm_interrupted) {
			res->how = STOPPED;
			goto out;
		}
		got += n;
		now = GetTickCount64();
		if (now - t0 >= (ULONGLONG)low_speed_s * 1000) {
			if (x->have - have0 < (uint64_t)low_speed_s * 1024) {
				res->how = TIMED_OUT;
				snprintf(res->detail, sizeof(res->detail), "less than 1024 bytes a "
					 "second over the last %ld seconds", low_speed_s);
				goto out;
			}
			t0 = now;
			have0 = x->have;
		}
	}
	if (have_clen && got < clen) {
		res->how = PARTIAL;
		snprintf(res->detail, sizeof(res->detail), "transfer closed with %llu bytes "
			 "remaining to read", (unsigned long long)(clen - got));
	} else {
		res->how = DONE;
	}
out:
	if (tid) {
		SetEvent(w.done);
		WaitForSingleObject(tid, INFINITE);
		CloseHandle(tid);
	}
	if (w.done)
		CloseHandle(w.done);
	/* The watcher closed the request: a Ctrl-C, not "the handle is invalid". */
	if (w.closed && res->how != DONE)
		res->how = STOPPED;
	if (w.req)
		close_once(&w);
	if (conn)
		WinHttpCloseHandle(conn);
	free(path);
	return r;
}

/* A hex digit's value, or -1. */
static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c |= 0x20;
	return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/*
 * file://[localhost]/C:/dir/f, file:///C:/dir/f and file://server/share/f
 * as a path: percent escapes decoded, '/' kept (the API takes both).
 */
static char *file_path(const char *url)
{
	const char *p = url + 7;
	char *out = malloc(strlen(url) + 3), *q = out;

	if (!out)
		return NULL;
	if (!strncmp(p, "localhost/", 10))
		p += 9;
	if (*p != '/') {		/* a host: a UNC path */
		*q++ = '/';
		*q++ = '/';
	} else if (((p[1] | 0x20) >= 'a' && (p[1] | 0x20) <= 'z') && (p[2] == ':' || p[2] == '|')) {
		p++;			/* /C:/... -> C:/... */
	}
	for (; *p; p++) {
		if (*p == '%' && hexval(p[1]) >= 0 && hexval(p[2]) >= 0) {
			*q++ = (char)(hexval(p[1]) << 4 | hexval(p[2]));
			p += 2;
		} else if (*p == '?' || *p == '#') {
			break;
		} else {
			*q++ = *p == '|' ? ':' : *p;
		}
	}
	*q = '\0';
	return out;
}

/* A file:// URL: its bytes from x->have on, as a server that honours Range. */
static int file_request(struct xfer *x, const char *url, struct result *res)
{
	char *path = file_path(url);
	int fd, e;
	int64_t size;

	if (!path)
		return -ENOMEM;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		e = errno;
		res->how = NOT_FOUND;
		snprintf(res->detail, sizeof(res->detail), "Couldn't open file %s: %s", path,
			 strerror(e));
		free(path);
		return 0;
	}
	free(path);
	size = _lseeki64(fd, 0, SEEK_END);
	if (size >= 0 && (uint64_t)size < x->have) {
		/* The .part is longer than the file: once from the start. */
		int r = restart(x);
		if (r < 0) {
			close(fd);
			return r;
		}
	}
	if (size < 0 || _lseeki64(fd, (__int64)x->have, SEEK_SET) < 0) {
		e = errno;
		close(fd);
		res->how = NOT_FOUND;
		snprintf(res->detail, sizeof(res->detail), "Couldn't read file: %s", strerror(e));
		return 0;
	}
	for (;;) {
		int n = read(fd, x->buf, BUFSZ);

		if (cvm_interrupted || (n > 0 && !on_data(x, x->buf, (size_t)n))) {
			res->how = STOPPED;
			break;
		}
		if (n < 0) {
			res->how = NOT_FOUND;
			snprintf(res->detail, sizeof(res->detail), "Couldn't read file: %s",
				 strerror(errno));
			break;
		}
		if (n == 0) {
			res->how = DONE;
			break;
		}
	}
	close(fd);
	return 0;
}

/* Removes the .part: closed first, since Windows deletes an open file only
 * at its last close. */
static void drop_part(struct xfer *x, int dirfd, const char *part)
{
	close(x->fd);
	x->fd = -1;
	unlinkat(dirfd, part, 0);
}

/* Sleeps ms, ending early on Ctrl-C (as fetch.c's nanosleep does on Linux). */
static void pause_ms(long ms)
{
	while (ms > 0 && !cvm_interrupted) {
		Sleep(ms < 50 ? (DWORD)ms : 50);
		ms -= 50;
	}
}

int cvm_fetch(const char *url, int dirfd, const char *name, uint64_t size, const char *sha256,
	      const struct cvm_fetch_opts *o)
{
	struct xfer x = { .fd = -1, .hooks = o->hooks ? o->hooks : &no_hooks };
	char part[512], hex[CVM_SHA256_HEX];
	uint8_t d[CVM_SHA256_LEN];
	int tries = o->retries >= 0 ? o->retries : 4, r = 0, fd;
	long delay_ms = 500;
	bool is_file = !strncmp(url, "file://", 7);
	wchar_t *wurl = NULL;

	if (!cvm_fetch_supported(url))
		return cvm_err(-CVM_E_USAGE, "cannot download '%s': only http://, https:// and file:// "
			       "mirrors are supported", cvm_safe(url));
	r = cvm_fmt(part, sizeof(part), "%s.part", name);
	if (r < 0)
		return cvm_err(r, "cannot download '%s': name too long", cvm_safe(url));
	if (!is_file && !(wurl = cvm_wide(url)))
		return cvm_err(-ENOMEM, "cannot download '%s': %s", cvm_safe(url), strerror(ENOMEM));
	x.buf = malloc(BUFSZ);
	x.fd = cvm_open_regular(dirfd, part, O_RDWR | O_CREAT | O_NOFOLLOW, 0644);
	x.sha = cvm_sha256_new();
	if (x.fd < 0 || !x.sha || !x.buf) {
		r = cvm_err(x.fd < 0 ? x.fd : -ENOMEM, "cannot write '%s' in the cache: %s", part,
			    cvm_strerror(x.fd < 0 ? x.fd : -ENOMEM));
		goto out;
	}
	r = hash_part(&x);
	if (r < 0) {
		r = cvm_err(r, "cannot read '%s' in the cache: %s", part, strerror(-r));
		goto out;
	}
	/* A .part as long as the file or longer cannot be resumed: start over. */
	if (size && x.have >= size && x.have != size)
		r = restart(&x);
	if (r == 0 && x.hooks->opened) {
		x.hooks->opened(x.hooks->arg, x.fd);
		if (x.hooks->hashed && x.have)
			x.hooks->hashed(x.hooks->arg, x.have);
	}
	if (x.have)
		cvm_info("resuming the download of %s after %llu bytes", name,
			 (unsigned long long)x.have);
	cvm_progress_start(&x.pr, "download", size);
	x.pr.done = x.have;
	while (r == 0 && !(size && x.have == size)) {
		struct result res = { .how = DONE };
		uint64_t before = x.have;

		r = is_file ? file_request(&x, url, &res) : http_request(&x, wurl, o, &res);
		if (r < 0)
			break;
		if (cvm_interrupted) {
			cvm_progress_stop(&x.pr);
			if (x.have)
				cvm_warn("download of '%s' stopped after %llu bytes: they are kept in the "
					 "cache (%s) for the next run to resume", cvm_safe(url),
					 (unsigned long long)x.have, part);
			r = -EINTR;
			goto out;
		}
		if (x.error) {
			r = cvm_err(x.error, "cannot write '%s' in the cache: %s", part, strerror(-x.error));
			break;
		}
		if (res.how == DONE)
			break;
		if (res.how == HTTP_ERROR && res.http == 416) {
			/* The .part does not fit what the server has: once from the start. */
			r = restart(&x);
			if (r == 0 && tries-- > 0)
				continue;
		}
		if (!transient(&res) || tries-- <= 0) {
			cvm_progress_stop(&x.pr);
			if (res.how == HTTP_ERROR)
				r = cvm_err(res.http == 404 || res.http == 410 ? -CVM_E_NOTFOUND : -EIO,
					    "cannot download '%s': HTTP %ld", cvm_safe(url), res.http);
			else if (res.how == NOT_FOUND)
				r = cvm_err(-CVM_E_NOTFOUND, "cannot download '%s': %s", cvm_safe(url),
					    cvm_safe(res.detail));
			else
				r = cvm_err(-EIO, "cannot download '%s': %s (%s)", cvm_safe(url),
					    what_failed(&res), cvm_safe(res.detail));
			goto out;
		}
		if (x.have > before)
			cvm_warn("download of '%s' interrupted after %llu bytes (%s); retrying in %ld ms",
				 cvm_safe(url), (unsigned long long)x.have, cvm_safe(res.detail),
				 delay_ms);
		else
			cvm_warn("download of '%s' failed: %s (%s); retrying in %ld ms", cvm_safe(url),
				 what_failed(&res), cvm_safe(res.detail), delay_ms);
		pause_ms(delay_ms);
		if (x.have > before)
			delay_ms = 500;		/* progress: back to a short pause */
		else if (delay_ms < 8000)
			delay_ms *= 2;
	}
	if (r < 0) {
		cvm_progress_stop(&x.pr);
		goto out;
	}
	cvm_progress_end(&x.pr);
	if (size && x.have != size) {
		r = cvm_err(-CVM_E_INTEGRITY, "'%s' gave %llu bytes, the catalogue says %llu",
			    cvm_safe(url), (unsigned long long)x.have, (unsigned long long)size);
		drop_part(&x, dirfd, part);
		goto out;
	}
	r = cvm_sha256_final(x.sha, d);
	if (r < 0)
		goto out;
	cvm_hex_encode(d, sizeof(d), hex);
	if (strcmp(hex, sha256)) {
		r = cvm_err(-CVM_E_INTEGRITY, "'%s': SHA-256 mismatch: expected %s, got %s "
			    "(the download is removed)", cvm_safe(url), sha256, hex);
		drop_part(&x, dirfd, part);
		goto out;
	}
	if (fsync(x.fd) < 0 || renameat(dirfd, part, dirfd, name) < 0) {
		r = cvm_err(-errno, "cannot keep '%s' in the cache: %s", name, strerror(errno));
		goto out;
	}
	(void)cvm_fsync_dir(dirfd);
	cvm_verbose("downloaded %s (%llu bytes, SHA-256 matches)", name, (unsigned long long)x.have);
	fd = cvm_open_regular(dirfd, name, O_RDONLY | O_NOFOLLOW, 0);
	r = fd < 0 ? cvm_err(fd, "cannot open '%s' in the cache: %s", name, cvm_strerror(fd)) : fd;
out:
	/* Nothing came: nothing is left behind. Something came: kept for the next run to resume. */
	if (r < 0 && x.fd >= 0 && x.have == 0)
		drop_part(&x, dirfd, part);
	if (x.fd >= 0)
		close(x.fd);
	cvm_sha256_free(x.sha);
	free(x.buf);
	free(wurl);
	return r;
}
