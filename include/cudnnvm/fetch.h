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

#endif
