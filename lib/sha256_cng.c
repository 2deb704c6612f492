/* SPDX-License-Identifier: MIT */
/*
 * SHA-256 on Windows: the only interface to CNG (BCrypt), the backend of
 * digest.h's five context functions, as sha256_openssl.c is on Linux; the
 * file hashing above them is digest.c, once for both.
 */
#include <errno.h>
#include <stdlib.h>

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
