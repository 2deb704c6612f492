/* SPDX-License-Identifier: MIT */
/*
 * SHA-256 on Linux: the only interface to OpenSSL (EVP only), the backend of
 * digest.h's five context functions, as sha256_cng.c is on Windows; the
 * file hashing above them is digest.c, once for both.
 */
#include <errno.h>
#include <stdlib.h>

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
