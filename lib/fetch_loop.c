/* SPDX-License-Identifier: MIT */
/*
 * The steps of a download that do not depend on the transfer, for fetch.c
 * (libcurl) and fetch_win.c (WinHTTP): what a stop or a retry says, and the
 * checks and the rename of a complete .part.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "digest.h"
#include "error.h"
#include "fetch.h"
#include "fsutil.h"
#include "out.h"

int cvm_fetch_stopped(struct cvm_progress *pr, const char *url, uint64_t have, const char *part)
{
	cvm_progress_stop(pr);
	if (have)
		cvm_warn("download of '%s' stopped after %llu bytes: they are kept in the "
			 "cache (%s) for the next run to resume", cvm_safe(url),
			 (unsigned long long)have, part);
	return -EINTR;
}

long cvm_fetch_retrying(const char *url, uint64_t have, bool progressed, const char *what,
			const char *detail, long delay_ms)
{
	if (progressed)
		cvm_warn("download of '%s' interrupted after %llu bytes (%s); retrying in %ld ms",
			 cvm_safe(url), (unsigned long long)have, detail, delay_ms);
	else
		cvm_warn("download of '%s' failed: %s (%s); retrying in %ld ms", cvm_safe(url),
			 what, detail, delay_ms);
	if (progressed)
		return 500;		/* progress: back to a short pause */
	return delay_ms < 8000 ? delay_ms * 2 : delay_ms;
}

int cvm_fetch_verify(const char *url, uint64_t have, uint64_t size, struct cvm_sha256 *sha,
		     const char *sha256, char *hex)
{
	uint8_t d[CVM_SHA256_LEN];
	int r;

	if (size && have != size)
		return cvm_err(-CVM_E_INTEGRITY, "'%s' gave %llu bytes, the catalogue says %llu",
			       cvm_safe(url), (unsigned long long)have, (unsigned long long)size);
	r = cvm_sha256_final(sha, d);
	if (r < 0)
		return r;
	cvm_hex_encode(d, sizeof(d), hex);
	if (sha256 && strcmp(hex, sha256))
		return cvm_err(-CVM_E_INTEGRITY, "'%s': SHA-256 mismatch: expected %s, got %s "
			       "(the download is removed)", cvm_safe(url), sha256, hex);
	return 0;
}

int cvm_fetch_keep(int dirfd, const char *part, const char *name, int fd, uint64_t have,
		   const char *sha256, const char *hex)
{
	int ro;

	if (fsync(fd) < 0 || renameat(dirfd, part, dirfd, name) < 0)
		return cvm_err(-errno, "cannot keep '%s' in the cache: %s", name, strerror(errno));
	(void)cvm_fsync_dir(dirfd);
	cvm_verbose("downloaded %s (%llu bytes, SHA-256 %s)", name, (unsigned long long)have,
		    sha256 ? "matches" : hex);
	ro = cvm_open_regular(dirfd, name, O_RDONLY | O_NOFOLLOW, 0);
	return ro < 0 ? cvm_err(ro, "cannot open '%s' in the cache: %s", name, cvm_strerror(ro)) : ro;
}
