/* SPDX-License-Identifier: MIT */
/*
 * The libcurl transport of downloads (fetch.h): one request's bytes into the
 * .part, and how it ended. http://, https:// and file://; TLS verification
 * on; proxies from the environment (libcurl's defaults).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <curl/curl.h>

#include "dynlib.h"
#include "error.h"
#include "fetch.h"
#include "out.h"

/* One request: the .part it writes, and whether the server honoured Range (its first bytes tell). */
struct req {
	struct cvm_fetch_part *p;
	CURL *curl;
	uint64_t resumed_from;		/* what this request asked to skip */
	bool checked;			/* first write: did the server honour Range? */
};

/*
 * libcurl is loaded when the first download starts, not linked: a `use`,
 * `list` or `env` must not pay for its dependency tree (with libarchive's, it
 * made every start ~4x slower: bench/RESULTS.md). Only the major soname is
 * asked for, which is the ABI promise libcurl keeps; the header gives the types.
 */
static struct {
	__typeof__(curl_global_init) *global_init;
	__typeof__(curl_easy_init) *easy_init;
	CURLcode (*easy_setopt)(CURL *, CURLoption, ...);
	CURLcode (*easy_getinfo)(CURL *, CURLINFO, ...);
	__typeof__(curl_easy_perform) *easy_perform;
	__typeof__(curl_easy_cleanup) *easy_cleanup;
	__typeof__(curl_easy_strerror) *easy_strerror;
} cu;

static int load_curl(void)
{
	static const struct cvm_dynsym syms[] = {
		{ "curl_global_init", (void **)&cu.global_init },
		{ "curl_easy_init", (void **)&cu.easy_init },
		{ "curl_easy_setopt", (void **)&cu.easy_setopt },
		{ "curl_easy_getinfo", (void **)&cu.easy_getinfo },
		{ "curl_easy_perform", (void **)&cu.easy_perform },
		{ "curl_easy_cleanup", (void **)&cu.easy_cleanup },
		{ "curl_easy_strerror", (void **)&cu.easy_strerror },
	};
	static struct cvm_dynlib lib = {
		.soname = "libcurl.so.4",
		.test_env = "CVM_TEST_LIBCURL",
		.task = "download",
		.hint = "install it (Debian: apt-get install libcurl4), or give the archive with --archive",
		CVM_DYNSYMS(syms),
	};
	static int started;	/* 0 not tried, 1 ok, < 0 the error */
	int r = cvm_dynlib_load(&lib);

	if (r < 0)
		return r;
	if (!started)
		started = cu.global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK ? 1 :
			  cvm_err(-ENOMEM, "cannot download: libcurl did not start");
	return started < 0 ? started : 0;
}

static size_t on_data(char *buf, size_t sz, size_t n, void *arg)
{
	struct req *q = arg;
	size_t len = sz * n;
	long code = 0;
	int r;

	if (!q->checked) {
		q->checked = true;
		cu.easy_getinfo(q->curl, CURLINFO_RESPONSE_CODE, &code);
		/* 200 to a Range request: the whole file comes again. */
		if (q->resumed_from && code == 200) {
			cvm_verbose("the server ignored the Range request: starting over");
			r = cvm_fetch_restart(q->p);
			if (r < 0) {
				q->p->error = r;
				return 0;
			}
		}
	}
	return cvm_fetch_data(q->p, buf, len) < 0 ? 0 : len;
}

/*
 * Worth another try: timeouts, resets, 5xx. A name that does not resolve
 * is not (a typo in the mirror, or no DNS: the next try says the same).
 */
static bool transient(CURLcode c, long http)
{
	if (c == CURLE_HTTP_RETURNED_ERROR)
		return http >= 500 || http == 408 || http == 429;
	return c == CURLE_OPERATION_TIMEDOUT || c == CURLE_COULDNT_CONNECT ||
	       c == CURLE_RECV_ERROR || c == CURLE_SEND_ERROR || c == CURLE_PARTIAL_FILE ||
	       c == CURLE_GOT_NOTHING || c == CURLE_SSL_CONNECT_ERROR;
}

/* What went wrong, in words that name the step: resolving, connecting, or the transfer. */
static const char *what_failed(CURLcode c)
{
	switch (c) {
	case CURLE_COULDNT_RESOLVE_HOST:
		return "the host name does not resolve";
	case CURLE_COULDNT_RESOLVE_PROXY:
		return "the proxy's host name does not resolve";
	case CURLE_COULDNT_CONNECT:
		return "cannot connect";
	case CURLE_OPERATION_TIMEDOUT:
		return "timed out";
	case CURLE_SSL_CONNECT_ERROR:
	case CURLE_PEER_FAILED_VERIFICATION:
		return "the TLS connection failed";
	default:
		return "the transfer failed";
	}
}

/* Ctrl-C (see cvm_interrupts_catch): ends the transfer, also while no byte arrives. */
static int on_xfer(void *arg, curl_off_t dt, curl_off_t dn, curl_off_t ut, curl_off_t un)
{
	(void)arg, (void)dt, (void)dn, (void)ut, (void)un;
	return cvm_interrupted != 0;
}

/* How the request ended, in fetch.h's terms. */
static void result(CURLcode code, long http, const char *err, struct cvm_fetch_result *res)
{
	res->how = code == CURLE_OK ? CVM_FETCH_DONE :
		   code == CURLE_HTTP_RETURNED_ERROR ? CVM_FETCH_HTTP :
		   code == CURLE_FILE_COULDNT_READ_FILE ? CVM_FETCH_NOFILE : CVM_FETCH_FAILED;
	res->http = http;
	res->transient = transient(code, http);
	res->misfit = code == CURLE_RANGE_ERROR || http == 416;
	res->what = what_failed(code);
	snprintf(res->detail, sizeof(res->detail), "%s", err[0] ? err : cu.easy_strerror(code));
}

static int curl_request(void *state, const char *url, const struct cvm_fetch_opts *o,
			struct cvm_fetch_part *p, struct cvm_fetch_result *res)
{
	struct req q = { .p = p, .resumed_from = p->have };
	char err[CURL_ERROR_SIZE];
	CURLcode code;
	long http = 0;
	CURL *c = cu.easy_init();

	(void)state;
	if (!c)
		return -ENOMEM;
	q.curl = c;
	err[0] = '\0';
	cu.easy_setopt(c, CURLOPT_URL, url);
	cu.easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
	cu.easy_setopt(c, CURLOPT_WRITEDATA, &q);
	cu.easy_setopt(c, CURLOPT_FOLLOWLOCATION, 1L);
	cu.easy_setopt(c, CURLOPT_MAXREDIRS, 10L);
	cu.easy_setopt(c, CURLOPT_FAILONERROR, 1L);
	cu.easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	cu.easy_setopt(c, CURLOPT_ERRORBUFFER, err);
	cu.easy_setopt(c, CURLOPT_USERAGENT, "cudnnvm/0.1");
	cu.easy_setopt(c, CURLOPT_XFERINFOFUNCTION, on_xfer);
	cu.easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
	cu.easy_setopt(c, CURLOPT_CONNECTTIMEOUT, o->connect_timeout_s > 0 ? o->connect_timeout_s : 30L);
	cu.easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1024L);
	cu.easy_setopt(c, CURLOPT_LOW_SPEED_TIME, o->low_speed_time_s > 0 ? o->low_speed_time_s : 60L);
	/* Redirects may only go to the protocols we take (no ftp://, no scp://). */
#if LIBCURL_VERSION_NUM >= 0x075500
	cu.easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https,file");
	cu.easy_setopt(c, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
#endif
	if (p->have)
		cu.easy_setopt(c, CURLOPT_RESUME_FROM_LARGE, (curl_off_t)p->have);
	code = cu.easy_perform(c);
	cu.easy_getinfo(c, CURLINFO_RESPONSE_CODE, &http);
	cu.easy_cleanup(c);
	result(code, http, err, res);
	return 0;
}

static int curl_open(const char *url, void **state)
{
	(void)url;
	*state = NULL;
	return load_curl();
}

static void curl_close(void *state)
{
	(void)state;
}

const struct cvm_fetch_transport *cvm_fetch_transport(const char *url)
{
	static const struct cvm_fetch_transport curl = {
		.open = curl_open, .request = curl_request, .close = curl_close,
	};

	(void)url;		/* libcurl takes all three schemes */
	return &curl;
}
