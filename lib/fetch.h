/* SPDX-License-Identifier: MIT */
#ifndef CUDNNVM_FETCH_H
#define CUDNNVM_FETCH_H

/*
 * Downloads: http://, https:// and file:// URLs; TLS verification always on;
 * the system's proxies (libcurl's defaults from the environment, on Windows
 * WinHTTP's). cvm_fetch (fetch_loop.c) over one transport per platform.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "out.h"

/*
 * For a caller that works on the download while it arrives (install's
 * pipelined decode): told about every byte the SHA-256 covers, in order.
 * All may be NULL.
 */
struct cvm_fetch_hooks {
	void *arg;
	/* The .part is open as fd (read-write; callee may reopen it read-only). */
	void (*opened)(void *arg, int fd);
	/* The first total bytes of the .part are written and hashed: they do not
	 * change again, unless restarted() comes first. */
	void (*hashed)(void *arg, uint64_t total);
	/* The .part was emptied: its bytes are about to be written again. */
	void (*restarted)(void *arg);
};

struct cvm_fetch_opts {
	long connect_timeout_s;		/* 0: 30 s */
	long low_speed_time_s;		/* abort below 1 KiB/s for this long; 0: 60 s */
	int retries;			/* transient errors (timeouts, 5xx, resets); < 0: 4 */
	const struct cvm_fetch_hooks *hooks;	/* or NULL */
	bool quiet_notfound;		/* a missing file (HTTP 404/410, no such file://) is
					 * -CVM_E_NOTFOUND with no message: a probe */
	uint64_t max_size;		/* of a file whose size is not known (a listing, a
					 * manifest): more is -CVM_E_UNSAFE, said; 0: no limit */
};

/*
 * Downloads url into dirfd/<name>, through dirfd/<name>.part: a .part left
 * by an interrupted run is resumed with a Range request (its bytes are
 * hashed first; a server that ignores Range restarts cleanly). The data is
 * hashed as it arrives; only a complete download whose size (when size is
 * not 0) and SHA-256 (64 hex digits) match is renamed to <name>. A NULL
 * sha256 is not compared: only for a caller that checks the content file by
 * file itself (a store bundle from a mirror, bundle.c). Returns an
 * open read-only descriptor of the verified file (the caller closes it), or
 * -CVM_E_INTEGRITY (mismatch; the .part is removed), -CVM_E_NOTFOUND (HTTP
 * 404/410) or another negative code; every message names the URL.
 */
int cvm_fetch(const char *url, int dirfd, const char *name, uint64_t size, const char *sha256,
	      const struct cvm_fetch_opts *o);

/* Whether url is one cvm_fetch takes (http, https, file). */
bool cvm_fetch_supported(const char *url);

/*
 * The transports below cvm_fetch (fetch_loop.c), for fetch_curl.c (libcurl)
 * and fetch_winhttp.c (WinHTTP, file://) only: a transport moves the bytes
 * of one request into the .part; resuming, retrying, hashing, verifying and
 * keeping the file are cvm_fetch's, the same on every platform.
 */

struct cvm_sha256;

/* The .part of one download, which a transport's bytes go into. */
struct cvm_fetch_part {
	int fd;
	struct cvm_sha256 *sha;
	uint64_t have;			/* bytes in the .part (hashed) */
	int error;			/* -errno from a write; -EFBIG: past max */
	uint64_t max;			/* cvm_fetch_opts.max_size */
	struct cvm_progress pr;
	const struct cvm_fetch_hooks *hooks;	/* never NULL */
};

/* How one request ended: what decides its message and whether it is tried again. */
enum cvm_fetch_end {
	CVM_FETCH_DONE,			/* the body is complete */
	CVM_FETCH_HTTP,			/* a status >= 400, in http */
	CVM_FETCH_NOFILE,		/* a file:// that cannot be read */
	CVM_FETCH_FAILED,		/* anything else: what and detail say */
};

struct cvm_fetch_result {
	enum cvm_fetch_end how;
	long http;			/* the status, 0 where none came */
	bool transient;			/* worth another try: timeouts, resets, 5xx */
	bool misfit;			/* the .part does not fit what the server has (416) */
	const char *what;		/* the step that failed, in words */
	char detail[256];		/* the transport's own words */
};

struct cvm_fetch_transport {
	/* Ready for url: *state (NULL or the transport's) for request and close; or an error, said. */
	int (*open)(const char *url, void **state);
	/*
	 * One request of url from p->have on: each byte through cvm_fetch_data,
	 * how it ended into res. < 0 only for an error of the transport's own
	 * (a write's is p->error); Ctrl-C (cvm_interrupted) ends it early.
	 */
	int (*request)(void *state, const char *url, const struct cvm_fetch_opts *o,
		       struct cvm_fetch_part *p, struct cvm_fetch_result *res);
	void (*close)(void *state);
};

/* The transport of this platform for url (one that cvm_fetch_supported takes). */
const struct cvm_fetch_transport *cvm_fetch_transport(const char *url);

/* Bytes of the body: written to the .part, hashed, told to the hooks. 0, or the error (also in p->error). */
int cvm_fetch_data(struct cvm_fetch_part *p, const void *buf, size_t len);

/* Starts the .part over (the server sent the whole file again): truncated, hash reset. 0 or -errno. */
int cvm_fetch_restart(struct cvm_fetch_part *p);

#endif
