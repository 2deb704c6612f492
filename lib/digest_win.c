/* SPDX-License-Identifier: MIT */
/*
 * SHA-256 on Windows: the only interface to CNG (BCrypt), behind digest.h,
 * as digest.c is to OpenSSL on Linux. Descriptors are the C runtime's.
 */
#include <errno.h>
#include <io.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <windows.h>
#include <bcrypt.h>

#include "digest.h"

struct cvm_sha256 {
	BCRYPT_ALG_HANDLE alg;
	BCRYPT_HASH_HANDLE hash;
	unsigned char *object;		/* the hash object's memory */
};

/* CNG is part of Windows: nothing to load. */
int cvm_sha256_load(void)
{
	return 0;
}

struct cvm_sha256 *cvm_sha256_new(void)
{
	struct cvm_sha256 *c = calloc(1, sizeof(*c));
	DWORD objlen = 0, got = 0;

	if (!c)
		return NULL;
	if (!BCRYPT_SUCCESS(BCryptOpenAlgorithmProvider(&c->alg, BCRYPT_SHA256_ALGORITHM, NULL, 0)))
		goto fail;
	if (!BCRYPT_SUCCESS(BCryptGetProperty(c->alg, BCRYPT_OBJECT_LENGTH, (PUCHAR)&objlen,
					      sizeof(objlen), &got, 0)))
		goto fail;
	c->object = malloc(objlen ? objlen : 1);
	if (!c->object ||
	    !BCRYPT_SUCCESS(BCryptCreateHash(c->alg, &c->hash, c->object, objlen, NULL, 0, 0)))
		goto fail;
	return c;
fail:
	cvm_sha256_free(c);
	return NULL;
}

int cvm_sha256_update(struct cvm_sha256 *c, const void *buf, size_t len)
{
	const unsigned char *p = buf;

	/* BCryptHashData takes a ULONG length. */
	while (len) {
		ULONG n = len > 0x40000000 ? 0x40000000 : (ULONG)len;
		if (!BCRYPT_SUCCESS(BCryptHashData(c->hash, (PUCHAR)p, n, 0)))
			return -EIO;
		p += n;
		len -= n;
	}
	return 0;
}

int cvm_sha256_final(struct cvm_sha256 *c, uint8_t out[CVM_SHA256_LEN])
{
	return BCRYPT_SUCCESS(BCryptFinishHash(c->hash, out, CVM_SHA256_LEN, 0)) ? 0 : -EIO;
}

void cvm_sha256_free(struct cvm_sha256 *c)
{
	if (!c)
		return;
	if (c->hash)
		BCryptDestroyHash(c->hash);
	if (c->alg)
		BCryptCloseAlgorithmProvider(c->alg, 0);
	free(c->object);
	free(c);
}

enum { BUFSZ = 256 << 10, NBUF = 4 };

/*
 * Reads len bytes at off: ReadFile with an offset. On a synchronous handle
 * that moves the file pointer, which cvm_sha256_fd puts back at the end.
 */
static long read_at(HANDLE h, void *buf, size_t len, uint64_t off)
{
	OVERLAPPED ov = { .Offset = (DWORD)off, .OffsetHigh = (DWORD)(off >> 32) };
	DWORD n = 0;

	if (!ReadFile(h, buf, (DWORD)len, &n, &ov)) {
		DWORD e = GetLastError();
		if (e == ERROR_HANDLE_EOF)
			return 0;
		return e == ERROR_NOT_ENOUGH_MEMORY ? -ENOMEM : -EIO;
	}
	return (long)n;
}

/*
 * The threaded hashing reader, as in digest.c: a thread reads the file
 * ahead into NBUF buffers while the caller hashes.
 */
struct reader {
	HANDLE h;
	SRWLOCK mu;
	CONDITION_VARIABLE cv;
	unsigned char *buf[NBUF];
	size_t len[NBUF];
	unsigned head, filled;	/* next slot to hash, slots ready */
	bool eof, stop;
	int err;
};

static DWORD WINAPI read_ahead(void *arg)
{
	struct reader *rd = arg;
	uint64_t off = 0;
	unsigned slot = 0;

	for (;;) {
		long n;

		AcquireSRWLockExclusive(&rd->mu);
		while (rd->filled == NBUF && !rd->stop)
			SleepConditionVariableSRW(&rd->cv, &rd->mu, INFINITE, 0);
		if (rd->stop) {
			ReleaseSRWLockExclusive(&rd->mu);
			return 0;
		}
		ReleaseSRWLockExclusive(&rd->mu);
		/* The slot is ours: the hasher only touches filled ones. */
		n = read_at(rd->h, rd->buf[slot], BUFSZ, off);
		AcquireSRWLockExclusive(&rd->mu);
		if (n <= 0) {
			rd->err = n < 0 ? (int)n : 0;
			rd->eof = true;
			WakeAllConditionVariable(&rd->cv);
			ReleaseSRWLockExclusive(&rd->mu);
			return 0;
		}
		rd->len[slot] = (size_t)n;
		rd->filled++;
		WakeAllConditionVariable(&rd->cv);
		ReleaseSRWLockExclusive(&rd->mu);
		off += (uint64_t)n;
		slot = (slot + 1) % NBUF;
	}
}

static int hash_threaded(HANDLE h, struct cvm_sha256 *c, uint64_t *size,
			 void (*on_progress)(void *arg, uint64_t n), void *arg)
{
	struct reader rd = { .h = h };
	HANDLE tid = NULL;
	uint64_t off = 0;
	unsigned i;
	int r = 0;

	InitializeSRWLock(&rd.mu);
	InitializeConditionVariable(&rd.cv);
	for (i = 0; i < NBUF; i++) {
		rd.buf[i] = malloc(BUFSZ);
		if (!rd.buf[i])
			r = -ENOMEM;
	}
	if (r == 0 && !(tid = CreateThread(NULL, 0, read_ahead, &rd, 0, NULL)))
		r = -EAGAIN;
	if (r < 0)
		goto out;
	for (;;) {
		size_t n;

		AcquireSRWLockExclusive(&rd.mu);
		while (rd.filled == 0 && !rd.eof)
			SleepConditionVariableSRW(&rd.cv, &rd.mu, INFINITE, 0);
		if (rd.filled == 0) {
			r = rd.err;
			ReleaseSRWLockExclusive(&rd.mu);
			break;
		}
		ReleaseSRWLockExclusive(&rd.mu);
		n = rd.len[rd.head];
		r = cvm_sha256_update(c, rd.buf[rd.head], n);
		if (r < 0)
			break;
		off += n;
		if (on_progress)
			on_progress(arg, n);
		AcquireSRWLockExclusive(&rd.mu);
		rd.head = (rd.head + 1) % NBUF;
		rd.filled--;
		WakeAllConditionVariable(&rd.cv);
		ReleaseSRWLockExclusive(&rd.mu);
	}
	AcquireSRWLockExclusive(&rd.mu);
	rd.stop = true;
	WakeAllConditionVariable(&rd.cv);
	ReleaseSRWLockExclusive(&rd.mu);
	WaitForSingleObject(tid, INFINITE);
	CloseHandle(tid);
	*size = off;
out:
	for (i = 0; i < NBUF; i++)
		free(rd.buf[i]);
	return r;
}

static int hash_inline(HANDLE h, struct cvm_sha256 *c, uint64_t *size,
		       void (*on_progress)(void *arg, uint64_t n), void *arg)
{
	unsigned char *buf = malloc(BUFSZ);
	uint64_t off = 0;
	int r = 0;

	if (!buf)
		return -ENOMEM;
	for (;;) {
		long n = read_at(h, buf, BUFSZ, off);
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
	HANDLE h = (HANDLE)_get_osfhandle(fd);
	LARGE_INTEGER pos = { 0 }, zero = { 0 }, len = { 0 };
	struct cvm_sha256 *c;
	uint64_t off = 0;
	bool restore;
	int r;

	if (h == INVALID_HANDLE_VALUE)
		return -EBADF;
	c = cvm_sha256_new();
	if (!c)
		return -ENOMEM;
	restore = SetFilePointerEx(h, zero, &pos, FILE_CURRENT) != 0;
	if (GetFileType(h) == FILE_TYPE_DISK && GetFileSizeEx(h, &len) &&
	    len.QuadPart > 4 * BUFSZ)
		r = hash_threaded(h, c, &off, on_progress, arg);
	else
		r = hash_inline(h, c, &off, on_progress, arg);
	if (restore)
		SetFilePointerEx(h, pos, NULL, FILE_BEGIN);
	if (r == 0)
		r = cvm_sha256_final(c, out);
	if (r == 0 && size)
		*size = off;
	cvm_sha256_free(c);
	return r;
}
