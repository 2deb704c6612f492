/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "digest.h"
#include "dynlib.h"
#include "error.h"

/*
 * libcrypto is loaded at the first hash, not linked: mapping and relocating
 * it (and running its initialisers) cost ~2 ms at every start of the binary,
 * a fifth of a `use` that hashes nothing (bench/RESULTS.md). The commands that
 * hash load it before they start (CVM_CMD_HASH), so that its absence is one
 * error before anything is done. The names below are OpenSSL's own.
 */
#define EVP_FUNCS(X) \
	X(EVP_DigestFinal_ex) \
	X(EVP_DigestInit_ex) \
	X(EVP_DigestUpdate) \
	X(EVP_MD_CTX_free) \
	X(EVP_MD_CTX_new) \
	X(EVP_sha256)

#define X(f) __typeof__(f) *(f);
static struct { EVP_FUNCS(X) } evp;
#undef X

int cvm_sha256_load(void)
{
#define X(f) CVM_DYNSYM(evp, f),
	static const struct cvm_dynsym syms[] = { EVP_FUNCS(X) };
#undef X
	static struct cvm_dynlib lib = {
		.soname = "libcrypto.so.3",
		.test_env = "CVM_TEST_LIBCRYPTO",
		.task = "compute SHA-256",
		.hint = "install it (Debian: apt-get install libssl3)",
		CVM_DYNSYMS(syms),
	};

	return cvm_dynlib_load(&lib);
}

#define EVP_DigestFinal_ex evp.EVP_DigestFinal_ex
#define EVP_DigestInit_ex evp.EVP_DigestInit_ex
#define EVP_DigestUpdate evp.EVP_DigestUpdate
#define EVP_MD_CTX_free evp.EVP_MD_CTX_free
#define EVP_MD_CTX_new evp.EVP_MD_CTX_new
#define EVP_sha256 evp.EVP_sha256

struct cvm_sha256 {
	EVP_MD_CTX *md;
};

struct cvm_sha256 *cvm_sha256_new(void)
{
	struct cvm_sha256 *c;

	if (cvm_sha256_load() < 0)
		return NULL;
	c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->md = EVP_MD_CTX_new();
	if (!c->md || EVP_DigestInit_ex(c->md, EVP_sha256(), NULL) != 1) {
		cvm_sha256_free(c);
		return NULL;
	}
	return c;
}

int cvm_sha256_update(struct cvm_sha256 *c, const void *buf, size_t len)
{
	return EVP_DigestUpdate(c->md, buf, len) == 1 ? 0 : -EIO;
}

int cvm_sha256_final(struct cvm_sha256 *c, uint8_t out[CVM_SHA256_LEN])
{
	unsigned n = 0;

	if (EVP_DigestFinal_ex(c->md, out, &n) != 1 || n != CVM_SHA256_LEN)
		return -EIO;
	return 0;
}

void cvm_sha256_free(struct cvm_sha256 *c)
{
	if (!c)
		return;
	EVP_MD_CTX_free(c->md);
	free(c);
}

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

static ssize_t pread_retry(int fd, void *buf, size_t len, uint64_t off)
{
	ssize_t n;

	do
		n = pread(fd, buf, len, (off_t)off);
	while (n < 0 && errno == EINTR);
	return n < 0 ? -errno : n;
}

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
		n = pread_retry(rd->fd, rd->buf[slot], BUFSZ, off);
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

static int hash_inline(int fd, struct cvm_sha256 *c, uint64_t *size,
		       void (*on_progress)(void *arg, uint64_t n), void *arg)
{
	unsigned char *buf = malloc(BUFSZ);
	uint64_t off = 0;
	int r = 0;

	if (!buf)
		return -ENOMEM;
	for (;;) {
		ssize_t n = pread_retry(fd, buf, BUFSZ, off);
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
	*size = off;
	free(buf);
	return r;
}

int cvm_sha256_fd(int fd, uint8_t out[CVM_SHA256_LEN], uint64_t *size,
		  void (*on_progress)(void *arg, uint64_t n), void *arg)
{
	struct cvm_sha256 *c = NULL;
	struct stat st;
	uint64_t off = 0;
	int r;

	c = cvm_sha256_new();
	if (!c)
		return -ENOMEM;
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 4 * BUFSZ) {
		posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
		r = hash_threaded(fd, c, &off, on_progress, arg);
	} else {
		r = hash_inline(fd, c, &off, on_progress, arg);
	}
	if (r == 0)
		r = cvm_sha256_final(c, out);
	if (r == 0 && size)
		*size = off;
	cvm_sha256_free(c);
	return r;
}
