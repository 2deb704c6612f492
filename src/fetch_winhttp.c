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

/* One request's handles: its connection, the request with its watcher, the path it asks for. */
struct request {
	HINTERNET conn;
	struct watch w;
	HANDLE tid;
	wchar_t *path;
};

enum { ENDED = 1 };	/* a step of http_request: the request is over, res says how */

/* The session, with o's timeouts. */
static HINTERNET timed_session(const struct cvm_fetch_opts *o, long low_speed_s)
{
	HINTERNET s = session();
	DWORD connect_ms;

	if (!s)
		return NULL;
	connect_ms = (DWORD)(o->connect_timeout_s > 0 ? o->connect_timeout_s : 30) * 1000;
	/*
	 * libcurl's low-speed limit (below 1 KiB/s for low_speed_s ends the try):
	 * a send or a read that waits that long ends by WinHTTP's timeouts, a
	 * trickle by the check in the reading loop.
	 */
	WinHttpSetTimeouts(s, (int)connect_ms, (int)connect_ms, (int)(low_speed_s * 1000),
			   (int)(low_speed_s * 1000));
	return s;
}

/* Connects to the URL's host and opens a GET of its path (redirects followed, 10 at most). */
static int open_request(struct request *q, HINTERNET s, const wchar_t *wurl, struct result *res)
{
	URL_COMPONENTS uc = { .dwStructSize = sizeof(uc) };
	wchar_t host[256];
	DWORD redirects = 10;

	uc.dwHostNameLength = (DWORD)-1;
	uc.dwUrlPathLength = (DWORD)-1;
	uc.dwExtraInfoLength = (DWORD)-1;
	if (!WinHttpCrackUrl(wurl, 0, 0, &uc) || uc.dwHostNameLength >= 256) {
		fail_win(res, GetLastError());
		return ENDED;
	}
	wmemcpy(host, uc.lpszHostName, uc.dwHostNameLength);
	host[uc.dwHostNameLength] = 0;
	/* Path and query, up to the end of the URL (no fragment is sent). */
	q->path = _wcsdup(uc.dwUrlPathLength ? uc.lpszUrlPath : L"/");
	if (!q->path)
		return -ENOMEM;
	q->path[wcscspn(q->path, L"#")] = 0;
	q->conn = WinHttpConnect(s, host, uc.nPort, 0);
	if (q->conn)
		q->w.req = WinHttpOpenRequest(q->conn, L"GET", q->path, NULL, WINHTTP_NO_REFERER,
					      WINHTTP_DEFAULT_ACCEPT_TYPES,
					      uc.nScheme == INTERNET_SCHEME_HTTPS ? WINHTTP_FLAG_SECURE : 0);
	if (!q->conn || !q->w.req) {
		fail_win(res, GetLastError());
		return ENDED;
	}
	WinHttpSetOption(q->w.req, WINHTTP_OPTION_MAX_HTTP_AUTOMATIC_REDIRECTS, &redirects,
			 sizeof(redirects));
	return 0;
}

/*
 * Sends the GET, from x->have on, with the watcher started, and reads the
 * status into res->http: a status >= 400 ends the request.
 */
static int send_request(struct request *q, struct xfer *x, struct result *res)
{
	wchar_t hdr[64];
	DWORD status = 0, len = sizeof(status);
	int r;

	if (x->have)
		swprintf(hdr, 64, L"Range: bytes=%llu-", (unsigned long long)x->have);
	q->w.done = CreateEventW(NULL, TRUE, FALSE, NULL);
	if (!q->w.done || !(q->tid = CreateThread(NULL, 0, watcher, &q->w, 0, NULL)))
		return -EAGAIN;
	if (!WinHttpSendRequest(q->w.req, x->have ? hdr : WINHTTP_NO_ADDITIONAL_HEADERS,
				x->have ? (DWORD)-1L : 0, WINHTTP_NO_REQUEST_DATA, 0, 0, 0) ||
	    !WinHttpReceiveResponse(q->w.req, NULL) ||
	    !WinHttpQueryHeaders(q->w.req, WINHTTP_QUERY_STATUS_CODE | WINHTTP_QUERY_FLAG_NUMBER,
				 WINHTTP_HEADER_NAME_BY_INDEX, &status, &len, WINHTTP_NO_HEADER_INDEX)) {
		fail_win(res, GetLastError());
		return ENDED;
	}
	res->http = (long)status;
	if (status >= 400) {
		res->how = HTTP_ERROR;
		snprintf(res->detail, sizeof(res->detail), "HTTP %lu", (unsigned long)status);
		return ENDED;
	}
	/* 200 to a Range request: the whole file comes again. */
	if (x->have && status == 200) {
		cvm_verbose("the server ignored the Range request: starting over");
		r = restart(x);
		if (r < 0)
			return r;
	}
	return 0;
}

/*
 * Reads the body through on_data until it ends (PARTIAL when short of its
 * Content-Length), a write or Ctrl-C stops it, or it trickles below 1 KiB/s.
 */
static void read_body(HINTERNET req, struct xfer *x, long low_speed_s, struct result *res)
{
	wchar_t num[32];
	DWORD len = sizeof(num);
	ULONGLONG t0;
	uint64_t have0, clen = 0, got = 0;
	bool have_clen;

	/* As text: WINHTTP_QUERY_FLAG_NUMBER64 is newer than some WinHTTPs (wine's). */
	have_clen = WinHttpQueryHeaders(req, WINHTTP_QUERY_CONTENT_LENGTH,
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
		if (!WinHttpQueryDataAvailable(req, &avail) ||
		    !WinHttpReadData(req, x->buf, avail < BUFSZ ? avail : BUFSZ, &n)) {
			fail_win(res, GetLastError());
			return;
		}
		if (n == 0)
			break;
		if (!on_data(x, x->buf, n) || cvm_interrupted) {
			res->how = STOPPED;
			return;
		}
		got += n;
		now = GetTickCount64();
		if (now - t0 < (ULONGLONG)low_speed_s * 1000)
			continue;
		if (x->have - have0 < (uint64_t)low_speed_s * 1024) {
			res->how = TIMED_OUT;
			snprintf(res->detail, sizeof(res->detail), "less than 1024 bytes a "
				 "second over the last %ld seconds", low_speed_s);
			return;
		}
		t0 = now;
		have0 = x->have;
	}
	if (have_clen && got < clen) {
		res->how = PARTIAL;
		snprintf(res->detail, sizeof(res->detail), "transfer closed with %llu bytes "
			 "remaining to read", (unsigned long long)(clen - got));
	} else {
		res->how = DONE;
	}
}

/* Stops the watcher, then closes the request's handles. */
static void close_request(struct request *q, struct result *res)
{
	if (q->tid) {
		SetEvent(q->w.done);
		WaitForSingleObject(q->tid, INFINITE);
		CloseHandle(q->tid);
	}
	if (q->w.done)
		CloseHandle(q->w.done);
	/* The watcher closed the request: a Ctrl-C, not "the handle is invalid". */
	if (q->w.closed && res->how != DONE)
		res->how = STOPPED;
	if (q->w.req)
		close_once(&q->w);
	if (q->conn)
		WinHttpCloseHandle(q->conn);
	free(q->path);
}

/* One GET of url from x->have on: the body goes through on_data. */
static int http_request(struct xfer *x, const wchar_t *wurl, const struct cvm_fetch_opts *o,
			struct result *res)
{
	struct request q = { 0 };
	long low_speed_s = o->low_speed_time_s > 0 ? o->low_speed_time_s : 60;
	HINTERNET s = timed_session(o, low_speed_s);
	int r;

	if (!s) {
		fail_win(res, GetLastError());
		return 0;
	}
	r = open_request(&q, s, wurl, res);
	if (r == 0)
		r = send_request(&q, x, res);
	if (r == 0)
		read_body(q.w.req, x, low_speed_s, res);
	close_request(&q, res);
	return r < 0 ? r : 0;
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

/* One download: the .part and its request, the retries and pauses left. */
struct fetch {
	struct xfer x;
	const char *url, *name;
	wchar_t *wurl;			/* an http(s) URL, for WinHTTP */
	bool is_file;
	int dirfd;
	uint64_t size;
	const struct cvm_fetch_opts *o;
	int tries;
	long delay_ms;
	char part[512];
};

enum { BODY_DONE = 1 };		/* fetch_once: the body is complete */

/*
 * Opens the .part and hashes what an earlier run left in it (told to the
 * hooks), then starts the progress line from there.
 */
static int open_part(struct fetch *f)
{
	struct xfer *x = &f->x;
	int r;

	x->buf = malloc(BUFSZ);
	x->fd = cvm_open_regular(f->dirfd, f->part, O_RDWR | O_CREAT | O_NOFOLLOW, 0644);
	x->sha = cvm_sha256_new();
	if (x->fd < 0 || !x->sha || !x->buf)
		return cvm_err(x->fd < 0 ? x->fd : -ENOMEM, "cannot write '%s' in the cache: %s",
			       f->part, cvm_strerror(x->fd < 0 ? x->fd : -ENOMEM));
	r = hash_part(x);
	if (r < 0)
		return cvm_err(r, "cannot read '%s' in the cache: %s", f->part, strerror(-r));
	/* A .part as long as the file or longer cannot be resumed: start over. */
	if (f->size && x->have >= f->size && x->have != f->size)
		r = restart(x);
	if (r == 0 && x->hooks->opened) {
		x->hooks->opened(x->hooks->arg, x->fd);
		if (x->hooks->hashed && x->have)
			x->hooks->hashed(x->hooks->arg, x->have);
	}
	if (x->have)
		cvm_info("resuming the download of %s after %llu bytes", f->name,
			 (unsigned long long)x->have);
	cvm_progress_start(&x->pr, "download", f->size);
	x->pr.done = x->have;
	return r;
}

/* The last request failed and no try is left: its error. */
static int give_up(const struct fetch *f, const struct result *res)
{
	if (res->how == HTTP_ERROR)
		return cvm_err(res->http == 404 || res->http == 410 ? -CVM_E_NOTFOUND : -EIO,
			       "cannot download '%s': HTTP %ld", cvm_safe(f->url), res->http);
	if (res->how == NOT_FOUND)
		return cvm_err(-CVM_E_NOTFOUND, "cannot download '%s': %s", cvm_safe(f->url),
			       cvm_safe(res->detail));
	return cvm_err(-EIO, "cannot download '%s': %s (%s)", cvm_safe(f->url), what_failed(res),
		       cvm_safe(res->detail));
}

/* Says why the request is tried again and waits (Ctrl-C ends the pause early). */
static void pause_before_retry(struct fetch *f, const struct result *res, uint64_t before)
{
	long ms = f->delay_ms;

	f->delay_ms = cvm_fetch_retrying(f->url, f->x.have, f->x.have > before, what_failed(res),
					 cvm_safe(res->detail), ms);
	pause_ms(ms);
}

/*
 * One request from the end of the .part and what follows from it:
 * BODY_DONE, 0 for another request, or an error (the caller stops the
 * progress line, if the error did not).
 */
static int fetch_once(struct fetch *f)
{
	struct xfer *x = &f->x;
	struct result res = { .how = DONE };
	uint64_t before = x->have;
	int r = f->is_file ? file_request(x, f->url, &res) : http_request(x, f->wurl, f->o, &res);

	if (r < 0)
		return r;
	if (cvm_interrupted)
		return cvm_fetch_stopped(&x->pr, f->url, x->have, f->part);
	if (x->error)
		return cvm_err(x->error, "cannot write '%s' in the cache: %s", f->part,
			       strerror(-x->error));
	if (res.how == DONE)
		return BODY_DONE;
	if (res.how == HTTP_ERROR && res.http == 416) {
		/* The .part does not fit what the server has: once from the start. */
		r = restart(x);
		if (r == 0 && f->tries-- > 0)
			return 0;
	}
	if (!transient(&res) || f->tries-- <= 0) {
		cvm_progress_stop(&x->pr);
		return give_up(f, &res);
	}
	pause_before_retry(f, &res, before);
	return r;
}

int cvm_fetch(const char *url, int dirfd, const char *name, uint64_t size, const char *sha256,
	      const struct cvm_fetch_opts *o)
{
	struct fetch f = {
		.x = { .fd = -1, .hooks = o->hooks ? o->hooks : &no_hooks },
		.url = url, .name = name, .is_file = !strncmp(url, "file://", 7), .dirfd = dirfd,
		.size = size, .o = o, .tries = o->retries >= 0 ? o->retries : 4, .delay_ms = 500,
	};
	char hex[CVM_SHA256_HEX];
	int r;

	if (!cvm_fetch_supported(url))
		return cvm_err(-CVM_E_USAGE, "cannot download '%s': only http://, https:// and file:// "
			       "mirrors are supported", cvm_safe(url));
	r = cvm_fmt(f.part, sizeof(f.part), "%s.part", name);
	if (r < 0)
		return cvm_err(r, "cannot download '%s': name too long", cvm_safe(url));
	if (!f.is_file && !(f.wurl = cvm_wide(url)))
		return cvm_err(-ENOMEM, "cannot download '%s': %s", cvm_safe(url), strerror(ENOMEM));
	r = open_part(&f);
	while (r == 0 && !(size && f.x.have == size))
		r = fetch_once(&f);
	if (r < 0) {
		cvm_progress_stop(&f.x.pr);	/* a no-op where it is stopped already */
		goto out;
	}
	cvm_progress_end(&f.x.pr);
	r = cvm_fetch_verify(url, f.x.have, size, f.x.sha, sha256, hex);
	if (r == -CVM_E_INTEGRITY)
		drop_part(&f.x, dirfd, f.part);
	if (r == 0)
		r = cvm_fetch_keep(dirfd, f.part, name, f.x.fd, f.x.have, sha256, hex);
out:
	/* Nothing came: nothing is left behind. Something came: kept for the next run to resume. */
	if (r < 0 && f.x.fd >= 0 && f.x.have == 0)
		drop_part(&f.x, dirfd, f.part);
	if (f.x.fd >= 0)
		close(f.x.fd);
	cvm_sha256_free(f.x.sha);
	free(f.x.buf);
	free(f.wurl);
	return r;
}
