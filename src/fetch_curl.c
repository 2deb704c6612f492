/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>

#include "cudnnvm/digest.h"
#include "cudnnvm/dynlib.h"
#include "cudnnvm/error.h"
#include "cudnnvm/fault.h"
#include "cudnnvm/fetch.h"
#include "cudnnvm/fsutil.h"
#include "cudnnvm/out.h"

struct xfer {
	int fd;
	struct cvm_sha256 *sha;
	uint64_t have;			/* bytes in the .part (hashed) */
	uint64_t resumed_from;		/* what this request asked to skip */
	bool checked;			/* first write: did the server honour Range? */
	bool restarted;			/* it did not: started over */
	int error;			/* -errno from a write */
	struct cvm_progress pr;
	CURL *curl;
	const struct cvm_fetch_hooks *hooks;	/* never NULL (no_hooks) */
};

static const struct cvm_fetch_hooks no_hooks;

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
	if (ftruncate(x->fd, 0) < 0 || lseek(x->fd, 0, SEEK_SET) < 0)
		return -errno;
	return 0;
}

static size_t on_data(char *buf, size_t sz, size_t n, void *arg)
{
	struct xfer *x = arg;
	size_t len = sz * n;
	long code = 0;
	int r;

	if (!x->checked) {
		x->checked = true;
		cu.easy_getinfo(x->curl, CURLINFO_RESPONSE_CODE, &code);
		/* 200 to a Range request: the whole file comes again. */
		if (x->resumed_from && code == 200) {
			cvm_verbose("the server ignored the Range request: starting over");
			r = restart(x);
			if (r < 0) {
				x->error = r;
				return 0;
			}
			x->restarted = true;
		}
	}
	r = cvm_write_all(x->fd, buf, len);
	if (r == 0)
		r = cvm_sha256_update(x->sha, buf, len);
	if (r < 0) {
		x->error = r;
		return 0;
	}
	x->have += len;
	if (x->hooks->hashed)
		x->hooks->hashed(x->hooks->arg, x->have);
	cvm_progress_add(&x->pr, len);
	cvm_fault("fetch-receiving");
	return len;
}

/* Hashes what an earlier run left in the .part, so that the download resumes after it. */
static int hash_part(struct xfer *x)
{
	unsigned char *buf = malloc(1 << 20);
	uint64_t off = 0;
	ssize_t k;
	int r = 0;

	if (!buf)
		return -ENOMEM;
	while ((k = pread(x->fd, buf, 1 << 20, (off_t)off)) > 0) {
		r = cvm_sha256_update(x->sha, buf, (size_t)k);
		if (r < 0)
			break;
		off += (uint64_t)k;
	}
	if (k < 0)
		r = -errno;
	free(buf);
	x->have = off;
	if (r == 0 && lseek(x->fd, (off_t)off, SEEK_SET) < 0)
		r = -errno;
	return r;
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

static int one_request(struct xfer *x, const char *url, const struct cvm_fetch_opts *o,
		       CURLcode *code, long *http, char *err)
{
	CURL *c = cu.easy_init();

	if (!c)
		return -ENOMEM;
	x->curl = c;
	x->checked = false;
	x->resumed_from = x->have;
	err[0] = '\0';
	cu.easy_setopt(c, CURLOPT_URL, url);
	cu.easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
	cu.easy_setopt(c, CURLOPT_WRITEDATA, x);
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
	if (x->have)
		cu.easy_setopt(c, CURLOPT_RESUME_FROM_LARGE, (curl_off_t)x->have);
	*code = cu.easy_perform(c);
	*http = 0;
	cu.easy_getinfo(c, CURLINFO_RESPONSE_CODE, http);
	cu.easy_cleanup(c);
	x->curl = NULL;
	return 0;
}

/* One download: the .part and its request, the retries and pauses left. */
struct fetch {
	struct xfer x;
	const char *url, *name, *sha256;
	int dirfd;
	uint64_t size;
	const struct cvm_fetch_opts *o;
	int tries;
	long delay_ms;
	char part[512], err[CURL_ERROR_SIZE];
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

	x->fd = cvm_open_regular(f->dirfd, f->part, O_RDWR | O_CREAT | O_NOFOLLOW, 0644);
	x->sha = cvm_sha256_new();
	if (x->fd < 0 || !x->sha)
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

/* The last request failed and no try is left: its error (none said for a probe's missing file). */
static int give_up(const struct fetch *f, CURLcode code, long http)
{
	const char *url = f->url, *err = f->err;

	if (f->o->quiet_notfound && (code == CURLE_FILE_COULDNT_READ_FILE ||
				     (code == CURLE_HTTP_RETURNED_ERROR && (http == 404 || http == 410))))
		return -CVM_E_NOTFOUND;
	if (code == CURLE_HTTP_RETURNED_ERROR)
		return cvm_err(http == 404 || http == 410 ? -CVM_E_NOTFOUND : -EIO,
			       "cannot download '%s': HTTP %ld", cvm_safe(url), http);
	if (code == CURLE_FILE_COULDNT_READ_FILE)
		return cvm_err(-CVM_E_NOTFOUND, "cannot download '%s': %s", cvm_safe(url),
			       cvm_safe(err[0] ? err : cu.easy_strerror(code)));
	return cvm_err(-EIO, "cannot download '%s': %s (%s)", cvm_safe(url), what_failed(code),
		       cvm_safe(err[0] ? err : cu.easy_strerror(code)));
}

/* Says why the request is tried again and waits (a signal ends the pause early). */
static void pause_before_retry(struct fetch *f, CURLcode code, uint64_t before)
{
	long ms = f->delay_ms;

	f->delay_ms = cvm_fetch_retrying(f->url, f->x.have, f->x.have > before, what_failed(code),
					 f->err[0] ? cvm_safe(f->err) : cu.easy_strerror(code), ms);
	nanosleep(&(struct timespec){ .tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000 }, NULL);
}

/*
 * One request from the end of the .part and what follows from it:
 * BODY_DONE, 0 for another request, or an error (the caller stops the
 * progress line, if the error did not).
 */
static int fetch_once(struct fetch *f)
{
	struct xfer *x = &f->x;
	uint64_t before = x->have;
	CURLcode code;
	long http;
	int r = one_request(x, f->url, f->o, &code, &http, f->err);

	if (r < 0)
		return r;
	if (cvm_interrupted)
		return cvm_fetch_stopped(&x->pr, f->url, x->have, f->part);
	if (x->error)
		return cvm_err(x->error, "cannot write '%s' in the cache: %s", f->part,
			       strerror(-x->error));
	if (code == CURLE_OK)
		return BODY_DONE;
	if (code == CURLE_RANGE_ERROR || http == 416) {
		/* The .part does not fit what the server has: once from the start. */
		r = restart(x);
		if (r == 0 && f->tries-- > 0)
			return 0;
	}
	if (!transient(code, http) || f->tries-- <= 0) {
		cvm_progress_stop(&x->pr);
		return give_up(f, code, http);
	}
	pause_before_retry(f, code, before);
	return r;
}

int cvm_fetch(const char *url, int dirfd, const char *name, uint64_t size, const char *sha256,
	      const struct cvm_fetch_opts *o)
{
	struct fetch f = {
		.x = { .fd = -1, .hooks = o->hooks ? o->hooks : &no_hooks },
		.url = url, .name = name, .sha256 = sha256, .dirfd = dirfd, .size = size, .o = o,
		.tries = o->retries >= 0 ? o->retries : 4, .delay_ms = 500,
	};
	char hex[CVM_SHA256_HEX];
	int r;

	if (!cvm_fetch_supported(url))
		return cvm_err(-CVM_E_USAGE, "cannot download '%s': only http://, https:// and file:// "
			       "mirrors are supported", cvm_safe(url));
	r = load_curl();
	if (r < 0)
		return r;
	r = cvm_fmt(f.part, sizeof(f.part), "%s.part", name);
	if (r < 0)
		return cvm_err(r, "cannot download '%s': name too long", cvm_safe(url));
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
		unlinkat(dirfd, f.part, 0);
	if (r == 0)
		r = cvm_fetch_keep(dirfd, f.part, name, f.x.fd, f.x.have, sha256, hex);
out:
	/* Nothing came: nothing is left behind. Something came: kept for the next run to resume. */
	if (r < 0 && f.x.fd >= 0 && f.x.have == 0)
		unlinkat(dirfd, f.part, 0);
	cvm_sha256_free(f.x.sha);
	if (f.x.fd >= 0)
		close(f.x.fd);
	return r;
}
