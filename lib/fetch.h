/* SPDX-License-Identifier: MIT */
#ifndef CUDNNVM_FETCH_H
#define CUDNNVM_FETCH_H

/*
 * Downloads: the only interface to libcurl (fetch.c). http://, https:// and
 * file:// URLs; TLS verification always on; proxies from the environment
 * (libcurl's defaults).
 */
#include <stdbool.h>
#include <stdint.h>

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
 * The steps of cvm_fetch that do not depend on the transfer (fetch_loop.c),
 * for fetch.c and fetch_win.c only.
 */
struct cvm_progress;
struct cvm_sha256;

/* Ctrl-C during a request: the progress line stopped, what is kept said. -EINTR. */
int cvm_fetch_stopped(struct cvm_progress *pr, const char *url, uint64_t have, const char *part);
/* Says that the request is tried again after delay_ms; returns the pause for
 * the next time (short again after progress, else doubled, up to 8 s). */
long cvm_fetch_retrying(const char *url, uint64_t have, bool progressed, const char *what,
			const char *detail, long delay_ms);
/* A complete .part against size (0: any) and sha256 (NULL: not compared); hex
 * (CVM_SHA256_HEX bytes) gets its SHA-256. -CVM_E_INTEGRITY: the caller removes the .part. */
int cvm_fetch_verify(const char *url, uint64_t have, uint64_t size, struct cvm_sha256 *sha,
		     const char *sha256, char *hex);
/* The verified .part (open as fd) synced and renamed to name: name opened read-only. */
int cvm_fetch_keep(int dirfd, const char *part, const char *name, int fd, uint64_t have,
		   const char *sha256, const char *hex);

#endif
