/* SPDX-License-Identifier: MIT */
/*
 * Downloads (fetch.h), over the platform's transport (fetch_curl.c,
 * fetch_winhttp.c), which only moves the bytes of one request: the .part
 * and its resumption, the retries and their pauses, the hash, the checks and
 * the rename of a complete file are here, once.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "digest.h"
#include "error.h"
#include "fault.h"
#include "fetch.h"
#include "fsutil.h"
#include "out.h"

static const struct cvm_fetch_hooks no_hooks;

bool cvm_fetch_supported(const char *url)
{
	return !strncmp(url, "http://", 7) || !strncmp(url, "https://", 8) ||
	       !strncmp(url, "file://", 7);
}

int cvm_fetch_restart(struct cvm_fetch_part *p)
{
	if (p->hooks->restarted)
		p->hooks->restarted(p->hooks->arg);
	cvm_sha256_free(p->sha);
	p->sha = cvm_sha256_new();
	p->have = 0;
	if (!p->sha)
		return -ENOMEM;
	if (ftruncate(p->fd, 0) < 0 || lseek(p->fd, 0, SEEK_SET) < 0)
		return -errno;
	return 0;
}

int cvm_fetch_data(struct cvm_fetch_part *p, const void *buf, size_t len)
{
	int r = p->max && p->have + len > p->max ? -EFBIG : cvm_write_all(p->fd, buf, len);

	if (r == 0)
		r = cvm_sha256_update(p->sha, buf, len);
	if (r < 0) {
		p->error = r;
		return r;
	}
	p->have += len;
	if (p->hooks->hashed)
		p->hooks->hashed(p->hooks->arg, p->have);
	cvm_progress_add(&p->pr, len);
	cvm_fault("fetch-receiving");
	return 0;
}

/* Hashes what an earlier run left in the .part, so that the download resumes after it. */
static int hash_part(struct cvm_fetch_part *p)
{
	unsigned char *buf = malloc(1 << 20);
	uint64_t off = 0;
	ssize_t k;
	int r = 0;

	if (!buf)
		return -ENOMEM;
	while ((k = pread(p->fd, buf, 1 << 20, (off_t)off)) > 0) {
		r = cvm_sha256_update(p->sha, buf, (size_t)k);
		if (r < 0)
			break;
		off += (uint64_t)k;
	}
	if (k < 0)
		r = -errno;
	free(buf);
	p->have = off;
	if (r == 0 && lseek(p->fd, (off_t)off, SEEK_SET) < 0)
		r = -errno;
	return r;
}

/* Ctrl-C during a request: the progress line stopped, what is kept said. -EINTR. */
static int stopped(struct cvm_progress *pr, const char *url, uint64_t have, const char *part)
{
	cvm_progress_stop(pr);
	if (have)
		cvm_warn("download of '%s' stopped after %llu bytes: they are kept in the "
			 "cache (%s) for the next run to resume", cvm_safe(url),
			 (unsigned long long)have, part);
	return -EINTR;
}

/* Says that the request is tried again after delay_ms; returns the pause for
 * the next time (short again after progress, else doubled, up to 8 s). */
static long retrying(const char *url, uint64_t have, bool progressed, const char *what,
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

/* A complete .part against size (0: any) and sha256 (NULL: not compared); hex
 * (CVM_SHA256_HEX bytes) gets its SHA-256. -CVM_E_INTEGRITY: the caller removes the .part. */
static int verify(const char *url, uint64_t have, uint64_t size, struct cvm_sha256 *sha,
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

/* The verified .part (open as fd) synced and renamed to name: name opened read-only. */
static int keep(int dirfd, const char *part, const char *name, int fd, uint64_t have,
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

/* One download: the .part and its transport, the retries and pauses left. */
struct fetch {
	struct cvm_fetch_part p;
	const struct cvm_fetch_transport *t;
	void *state;			/* the transport's */
	const char *url, *name;
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
	struct cvm_fetch_part *p = &f->p;
	int r;

	p->fd = cvm_open_regular(f->dirfd, f->part, O_RDWR | O_CREAT | O_NOFOLLOW, 0644);
	p->sha = cvm_sha256_new();
	if (p->fd < 0 || !p->sha)
		return cvm_err(p->fd < 0 ? p->fd : -ENOMEM, "cannot write '%s' in the cache: %s",
			       f->part, cvm_strerror(p->fd < 0 ? p->fd : -ENOMEM));
	r = hash_part(p);
	if (r < 0)
		return cvm_err(r, "cannot read '%s' in the cache: %s", f->part, cvm_strerror(-r));
	/* A .part as long as the file or longer cannot be resumed: start over. */
	if (f->size && p->have >= f->size && p->have != f->size)
		r = cvm_fetch_restart(p);
	if (r == 0 && p->hooks->opened) {
		p->hooks->opened(p->hooks->arg, p->fd);
		if (p->hooks->hashed && p->have)
			p->hooks->hashed(p->hooks->arg, p->have);
	}
	if (p->have)
		cvm_info("resuming the download of %s after %llu bytes", f->name,
			 (unsigned long long)p->have);
	cvm_progress_start(&p->pr, "download", f->size);
	p->pr.done = p->have;
	return r;
}

/* The last request failed and no try is left: its error (none said for a probe's missing file). */
static int give_up(const struct fetch *f, const struct cvm_fetch_result *res)
{
	bool gone = res->how == CVM_FETCH_NOFILE ||
		    (res->how == CVM_FETCH_HTTP && (res->http == 404 || res->http == 410));

	if (f->o->quiet_notfound && gone)
		return -CVM_E_NOTFOUND;
	if (res->how == CVM_FETCH_HTTP)
		return cvm_err(gone ? -CVM_E_NOTFOUND : -EIO, "cannot download '%s': HTTP %ld",
			       cvm_safe(f->url), res->http);
	if (res->how == CVM_FETCH_NOFILE)
		return cvm_err(-CVM_E_NOTFOUND, "cannot download '%s': %s", cvm_safe(f->url),
			       cvm_safe(res->detail));
	return cvm_err(-EIO, "cannot download '%s': %s (%s)", cvm_safe(f->url), res->what,
		       cvm_safe(res->detail));
}

/* Says why the request is tried again and waits; Ctrl-C ends the pause early. */
static void pause_before_retry(struct fetch *f, const struct cvm_fetch_result *res,
			       uint64_t before)
{
	long ms = f->delay_ms;

	f->delay_ms = retrying(f->url, f->p.have, f->p.have > before, res->what,
			       cvm_safe(res->detail), ms);
	/* In steps: a signal need not end a sleep (Windows), cvm_interrupted is looked at. */
	while (ms > 0 && !cvm_interrupted) {
		long step = ms < 50 ? ms : 50;
		nanosleep(&(struct timespec){ .tv_nsec = step * 1000000 }, NULL);
		ms -= step;
	}
}

/*
 * One request from the end of the .part and what follows from it:
 * BODY_DONE, 0 for another request, or an error (the caller stops the
 * progress line, if the error did not).
 */
static int fetch_once(struct fetch *f)
{
	struct cvm_fetch_part *p = &f->p;
	struct cvm_fetch_result res = { .how = CVM_FETCH_DONE, .what = "the transfer failed" };
	uint64_t before = p->have;
	int r = f->t->request(f->state, f->url, f->o, p, &res);

	if (r < 0)
		return r;
	if (cvm_interrupted)
		return stopped(&p->pr, f->url, p->have, f->part);
	if (p->error == -EFBIG && p->max)
		return cvm_err(-CVM_E_UNSAFE, "'%s' is larger than %llu bytes: refused", cvm_safe(f->url),
			       (unsigned long long)p->max);
	if (p->error)
		return cvm_err(p->error, "cannot write '%s' in the cache: %s", f->part,
			       cvm_strerror(-p->error));
	if (res.how == CVM_FETCH_DONE)
		return BODY_DONE;
	if (res.misfit) {
		/* The .part does not fit what the server has: once from the start. */
		r = cvm_fetch_restart(p);
		if (r == 0 && f->tries-- > 0)
			return 0;
	}
	if (!res.transient || f->tries-- <= 0) {
		cvm_progress_stop(&p->pr);
		return give_up(f, &res);
	}
	pause_before_retry(f, &res, before);
	return r;
}

/* Removes the .part: closed first, since Windows deletes an open file only at its last close. */
static void drop_part(struct fetch *f)
{
	close(f->p.fd);
	f->p.fd = -1;
	unlinkat(f->dirfd, f->part, 0);
}

int cvm_fetch(const char *url, int dirfd, const char *name, uint64_t size, const char *sha256,
	      const struct cvm_fetch_opts *o)
{
	struct fetch f = {
		.p = { .fd = -1, .hooks = o->hooks ? o->hooks : &no_hooks, .max = o->max_size },
		.url = url, .name = name, .dirfd = dirfd, .size = size, .o = o,
		.tries = o->retries >= 0 ? o->retries : 4, .delay_ms = 500,
	};
	char hex[CVM_SHA256_HEX];
	int r;

	if (!cvm_fetch_supported(url))
		return cvm_err(-CVM_E_USAGE, "cannot download '%s': only http://, https:// and file:// "
			       "mirrors are supported", cvm_safe(url));
	f.t = cvm_fetch_transport(url);
	r = f.t->open(url, &f.state);
	if (r < 0)
		return r;
	r = cvm_fmt(f.part, sizeof(f.part), "%s.part", name);
	if (r < 0) {
		r = cvm_err(r, "cannot download '%s': name too long", cvm_safe(url));
		goto out;
	}
	r = open_part(&f);
	while (r == 0 && !(size && f.p.have == size))
		r = fetch_once(&f);
	if (r < 0) {
		cvm_progress_stop(&f.p.pr);	/* a no-op where it is stopped already */
		goto out;
	}
	cvm_progress_end(&f.p.pr);
	r = verify(url, f.p.have, size, f.p.sha, sha256, hex);
	if (r == -CVM_E_INTEGRITY)
		drop_part(&f);
	if (r == 0)
		r = keep(dirfd, f.part, name, f.p.fd, f.p.have, sha256, hex);
out:
	/* Nothing came: nothing is left behind. Something came: kept for the next run to resume. */
	if (r < 0 && f.p.fd >= 0 && f.p.have == 0)
		drop_part(&f);
	if (f.p.fd >= 0)
		close(f.p.fd);
	cvm_sha256_free(f.p.sha);
	f.t->close(f.state);
	return r;
}
