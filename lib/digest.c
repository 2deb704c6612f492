/* SPDX-License-Identifier: MIT */
/*
 * The SHA-256 of a file, written once for Linux and Windows: over the SHA
 * backend (sha256_openssl.c, sha256_cng.c) and the platform layer's
 * positional read (cvm_pread, compat.h), with pthreads (winpthreads on
 * Windows).
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>

#include "compat.h"
#include "digest.h"

enum { BUFSZ = 256 << 10, NBUF = 4 };

/*
 * The threaded hashing reader: a thread reads the file ahead into NBUF
 * buffers while the caller hashes, so that reading (from the disk, when
 * the file is not cached) and hashing overlap.
 */
struct reader {
	int fd;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	unsigned char *buf[NBUF];
	size_t len[NBUF];
	unsigned head, filled;	/* next slot to hash, slots ready */
	bool eof, stop;
	int err;
};

static void *read_ahead(void *arg)
{
	struct reader *rd = arg;
	uint64_t off = 0;
	unsigned slot = 0;

	for (;;) {
		ssize_t n;

		pthread_mutex_lock(&rd->mu);
		while (rd->filled == NBUF && !rd->stop)
			pthread_cond_wait(&rd->cv, &rd->mu);
		if (rd->stop) {
			pthread_mutex_unlock(&rd->mu);
			return NULL;
		}
		pthread_mutex_unlock(&rd->mu);
		/* The slot is ours: the hasher only touches filled ones. */
		n = cvm_pread(rd->fd, rd->buf[slot], BUFSZ, off);
		pthread_mutex_lock(&rd->mu);
		if (n <= 0) {
			rd->err = n < 0 ? (int)n : 0;
			rd->eof = true;
			pthread_cond_broadcast(&rd->cv);
			pthread_mutex_unlock(&rd->mu);
			return NULL;
		}
		rd->len[slot] = (size_t)n;
		rd->filled++;
		pthread_cond_broadcast(&rd->cv);
		pthread_mutex_unlock(&rd->mu);
		off += (uint64_t)n;
		slot = (slot + 1) % NBUF;
	}
}

static int hash_threaded(int fd, struct cvm_sha256 *c, uint64_t *size,
			 void (*on_progress)(void *arg, uint64_t n), void *arg)
{
	struct reader rd = { .fd = fd };
	pthread_t tid;
	uint64_t off = 0;
	unsigned i;
	int r = 0;

	for (i = 0; i < NBUF; i++) {
		rd.buf[i] = malloc(BUFSZ);
		if (!rd.buf[i])
			r = -ENOMEM;
	}
	pthread_mutex_init(&rd.mu, NULL);
	pthread_cond_init(&rd.cv, NULL);
	if (r == 0 && pthread_create(&tid, NULL, read_ahead, &rd) != 0)
		r = -EAGAIN;
	if (r < 0)
		goto out;
	for (;;) {
		size_t n;

		pthread_mutex_lock(&rd.mu);
		while (rd.filled == 0 && !rd.eof)
			pthread_cond_wait(&rd.cv, &rd.mu);
		if (rd.filled == 0) {
			r = rd.err;
			pthread_mutex_unlock(&rd.mu);
			break;
		}
		pthread_mutex_unlock(&rd.mu);
		n = rd.len[rd.head];
		r = cvm_sha256_update(c, rd.buf[rd.head], n);
		if (r < 0)
			break;
		off += n;
		if (on_progress)
			on_progress(arg, n);
		pthread_mutex_lock(&rd.mu);
		rd.head = (rd.head + 1) % NBUF;
		rd.filled--;
		pthread_cond_broadcast(&rd.cv);
		pthread_mutex_unlock(&rd.mu);
	}
	pthread_mutex_lock(&rd.mu);
	rd.stop = true;
	pthread_cond_broadcast(&rd.cv);
	pthread_mutex_unlock(&rd.mu);
	pthread_join(tid, NULL);
	*size = off;
out:
	pthread_cond_destroy(&rd.cv);
	pthread_mutex_destroy(&rd.mu);
	for (i = 0; i < NBUF; i++)
		free(rd.buf[i]);
	return r;
}

/* From start to the end of the file; *size: the bytes hashed. */
static int hash_inline(int fd, struct cvm_sha256 *c, uint64_t start, uint64_t *size,
		       void (*on_progress)(void *arg, uint64_t n), void *arg)
{
	unsigned char *buf = malloc(BUFSZ);
	uint64_t off = start;
	int r = 0;

	if (!buf)
		return -ENOMEM;
	for (;;) {
		ssize_t n = cvm_pread(fd, buf, BUFSZ, off);
		if (n < 0) {
			r = (int)n;
			break;
		}
		if (n == 0)
			break;
		r = cvm_sha256_update(c, buf, (size_t)n);
		if (r < 0)
			break;
		off += (uint64_t)n;
		if (on_progress)
			on_progress(arg, (uint64_t)n);
	}
	*size = off - start;
	free(buf);
	return r;
}

/*
 * Hashing behind: the thread hashes piece by piece until the end of the file
 * or until the caller takes over (stop); off is what it has hashed.
 */
struct behind {
	int fd;
	struct cvm_sha256 *c;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	uint64_t off;
	bool stop, ended, eof;
	int err;
};

static void *hash_behind(void *arg)
{
	struct behind *b = arg;
	unsigned char *buf = malloc(BUFSZ);
	ssize_t n = buf ? 0 : -ENOMEM;

	cvm_thread_idle();
	pthread_mutex_lock(&b->mu);
	while (n == 0 && !b->eof && !b->stop) {
		uint64_t off = b->off;
		pthread_mutex_unlock(&b->mu);
		n = cvm_pread(b->fd, buf, BUFSZ, off);
		if (n > 0) {
			int k = cvm_sha256_update(b->c, buf, (size_t)n);
			n = k < 0 ? k : n;
		}
		pthread_mutex_lock(&b->mu);
		if (n > 0)
			b->off += (uint64_t)n;
		b->eof = n == 0;
		n = n > 0 ? 0 : n;
	}
	b->err = (int)n;
	b->ended = true;
	pthread_cond_signal(&b->cv);
	pthread_mutex_unlock(&b->mu);
	free(buf);
	return NULL;
}

/* Waits for the thread, asking tick every 100 ms; stops it when tick says so. */
static void wait_behind(struct behind *b, bool (*tick)(void *arg, uint64_t hashed), void *arg)
{
	pthread_mutex_lock(&b->mu);
	while (!b->ended) {
		struct timespec t = cvm_deadline(100);
		while (!b->ended && pthread_cond_timedwait(&b->cv, &b->mu, &t) == 0)
			;
		if (b->ended)
			break;
		uint64_t off = b->off;
		pthread_mutex_unlock(&b->mu);
		bool now = tick(arg, off);
		pthread_mutex_lock(&b->mu);
		b->stop = now;
		if (now)
			break;
	}
	pthread_mutex_unlock(&b->mu);
}

int cvm_sha256_fd_behind(int fd, uint8_t out[CVM_SHA256_LEN], uint64_t *size,
			 bool (*tick)(void *arg, uint64_t hashed), void *arg)
{
	struct behind b = { .fd = fd };
	pthread_t tid;
	uint64_t rest = 0;
	int r = 0;

	b.c = cvm_sha256_new();
	if (!b.c)
		return -ENOMEM;
	pthread_mutex_init(&b.mu, NULL);
	pthread_cond_init(&b.cv, NULL);
	/* Wanted at once: no thread. */
	if (!tick(arg, 0) && pthread_create(&tid, NULL, hash_behind, &b) == 0) {
		wait_behind(&b, tick, arg);
		pthread_join(tid, NULL);
		r = b.err;
	}
	/* What the thread left (all of it when none could start): here, from where it stopped. */
	if (r == 0 && !b.eof)
		r = hash_inline(fd, b.c, b.off, &rest, NULL, NULL);
	if (r == 0)
		r = cvm_sha256_final(b.c, out);
	if (r == 0 && size)
		*size = b.off + rest;
	pthread_cond_destroy(&b.cv);
	pthread_mutex_destroy(&b.mu);
	cvm_sha256_free(b.c);
	return r;
}

int cvm_sha256_fd(int fd, uint8_t out[CVM_SHA256_LEN], uint64_t *size,
		  void (*on_progress)(void *arg, uint64_t n), void *arg)
{
	struct cvm_sha256 *c = NULL;
	uint64_t off = 0;
	int r;

	c = cvm_sha256_new();
	if (!c)
		return -ENOMEM;
	if (cvm_fd_sequential(fd, 4 * BUFSZ))
		r = hash_threaded(fd, c, &off, on_progress, arg);
	else
		r = hash_inline(fd, c, 0, &off, on_progress, arg);
	if (r == 0)
		r = cvm_sha256_final(c, out);
	if (r == 0 && size)
		*size = off;
	cvm_sha256_free(c);
	return r;
}
