/* SPDX-License-Identifier: MIT */
/*
 * The transports of downloads on Windows (fetch.h): the only interface to
 * WinHTTP, and file:// URLs read directly; each moves one request's bytes
 * into the .part and says how it ended (resuming, retries, hashing and
 * verifying are cvm_fetch's, fetch_loop.c). Windows' own settings apply: the system proxy (WINHTTP_ACCESS_TYPE_
 * AUTOMATIC_PROXY, or the current user's Internet Options before Windows
 * 8.1) and the system certificate store.
 */
#include <errno.h>
#include <io.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <wchar.h>

#include <windows.h>
#include <winhttp.h>

#include "compat.h"
#include "error.h"
#include "fetch.h"
#include "out.h"

#define USER_AGENT L"cudnnvm/0.1"
enum { BUFSZ = 256 << 10 };

/* A download's transport: the body's buffer, and the URL as WinHTTP takes it (NULL: file://). */
struct win {
	unsigned char *buf;
	wchar_t *wurl;
};

/* How one request ended, finer than fetch.h's (for transient and what_failed). */
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

/* What went wrong, in words that name the step (fetch_curl.c's). */
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
static int send_request(struct request *q, struct cvm_fetch_part *x, struct result *res)
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
		r = cvm_fetch_restart(x);
		if (r < 0)
			return r;
	}
	return 0;
}

/*
 * Reads the body through cvm_fetch_data until it ends (PARTIAL when short of its
 * Content-Length), a write or Ctrl-C stops it, or it trickles below 1 KiB/s.
 */
static void read_body(HINTERNET req, struct cvm_fetch_part *x, unsigned char *buf,
		      long low_speed_s, struct result *res)
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
		    !WinHttpReadData(req, buf, avail < BUFSZ ? avail : BUFSZ, &n)) {
			fail_win(res, GetLastError());
			return;
		}
		if (n == 0)
			break;
		if (cvm_fetch_data(x, buf, n) < 0 || cvm_interrupted) {
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

/* One GET of url from x->have on: the body goes through cvm_fetch_data. */
static int http_request(struct cvm_fetch_part *x, const struct win *t,
			const struct cvm_fetch_opts *o, struct result *res)
{
	struct request q = { 0 };
	long low_speed_s = o->low_speed_time_s > 0 ? o->low_speed_time_s : 60;
	HINTERNET s = timed_session(o, low_speed_s);
	int r;

	if (!s) {
		fail_win(res, GetLastError());
		return 0;
	}
	r = open_request(&q, s, t->wurl, res);
	if (r == 0)
		r = send_request(&q, x, res);
	if (r == 0)
		read_body(q.w.req, x, t->buf, low_speed_s, res);
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
static int file_request(struct cvm_fetch_part *x, unsigned char *buf, const char *url,
			struct result *res)
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
		int r = cvm_fetch_restart(x);
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
		int n = read(fd, buf, BUFSZ);

		if (cvm_interrupted || (n > 0 && cvm_fetch_data(x, buf, (size_t)n) < 0)) {
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

/* How the request ended, in fetch.h's terms. */
static void result(const struct result *r, struct cvm_fetch_result *res)
{
	res->how = r->how == DONE ? CVM_FETCH_DONE : r->how == HTTP_ERROR ? CVM_FETCH_HTTP :
		   r->how == NOT_FOUND ? CVM_FETCH_NOFILE : CVM_FETCH_FAILED;
	res->http = r->http;
	res->transient = transient(r);
	res->misfit = r->how == HTTP_ERROR && r->http == 416;
	res->what = what_failed(r);
	snprintf(res->detail, sizeof(res->detail), "%s", r->detail);
}

static int win_http(void *state, const char *url, const struct cvm_fetch_opts *o,
		    struct cvm_fetch_part *p, struct cvm_fetch_result *res)
{
	struct result r = { .how = DONE };
	int k = http_request(p, state, o, &r);

	(void)url;
	result(&r, res);
	return k;
}

static int win_file(void *state, const char *url, const struct cvm_fetch_opts *o,
		    struct cvm_fetch_part *p, struct cvm_fetch_result *res)
{
	struct result r = { .how = DONE };
	const struct win *t = state;
	int k = file_request(p, t->buf, url, &r);

	(void)o;
	result(&r, res);
	return k;
}

static void win_close(void *state)
{
	struct win *t = state;

	if (t) {
		free(t->buf);
		free(t->wurl);
		free(t);
	}
}

/* The body's buffer, and for http(s) the URL as WinHTTP takes it. */
static int win_open(const char *url, void **state)
{
	struct win *t = calloc(1, sizeof(*t));

	*state = t;
	if (t)
		t->buf = malloc(BUFSZ);
	if (!t || !t->buf || (strncmp(url, "file://", 7) && !(t->wurl = cvm_wide(url)))) {
		win_close(t);
		*state = NULL;
		return cvm_err(-ENOMEM, "cannot download '%s': %s", cvm_safe(url), strerror(ENOMEM));
	}
	return 0;
}

const struct cvm_fetch_transport *cvm_fetch_transport(const char *url)
{
	static const struct cvm_fetch_transport http = {
		.open = win_open, .request = win_http, .close = win_close,
	};
	static const struct cvm_fetch_transport file = {
		.open = win_open, .request = win_file, .close = win_close,
	};

	return strncmp(url, "file://", 7) ? &http : &file;
}
