/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "cudnnvm/digest.h"
#include "cudnnvm/error.h"

struct cvm_sha256 {
	EVP_MD_CTX *md;
};

struct cvm_sha256 *cvm_sha256_new(void)
{
	struct cvm_sha256 *c = calloc(1, sizeof(*c));

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

int cvm_sha256_fd(int fd, uint8_t out[CVM_SHA256_LEN], uint64_t *size,
		  void (*on_progress)(void *arg, uint64_t n), void *arg)
{
	enum { BUFSZ = 1 << 20 };
	struct cvm_sha256 *c = NULL;
	unsigned char *buf = NULL;
	uint64_t off = 0;
	int r = 0;

	c = cvm_sha256_new();
	buf = malloc(BUFSZ);
	if (!c || !buf) {
		r = -ENOMEM;
		goto out;
	}
	for (;;) {
		ssize_t n = pread(fd, buf, BUFSZ, (off_t)off);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			r = -errno;
			goto out;
		}
		if (n == 0)
			break;
		r = cvm_sha256_update(c, buf, (size_t)n);
		if (r < 0)
			goto out;
		off += (uint64_t)n;
		if (on_progress)
			on_progress(arg, (uint64_t)n);
	}
	r = cvm_sha256_final(c, out);
	if (size)
		*size = off;
out:
	free(buf);
	cvm_sha256_free(c);
	return r;
}

void cvm_hex_encode(const uint8_t *bin, size_t len, char *hex)
{
	static const char digits[] = "0123456789abcdef";
	size_t i;

	for (i = 0; i < len; i++) {
		hex[2 * i] = digits[bin[i] >> 4];
		hex[2 * i + 1] = digits[bin[i] & 15];
	}
	hex[2 * len] = '\0';
}

static int nibble(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

int cvm_hex_decode(const char *hex, uint8_t *bin, size_t len)
{
	size_t i;

	for (i = 0; i < len; i++) {
		int hi = nibble(hex[2 * i]), lo;
		if (hi < 0)
			return -CVM_E_USAGE;
		lo = nibble(hex[2 * i + 1]);
		if (lo < 0)
			return -CVM_E_USAGE;
		bin[i] = (uint8_t)(hi << 4 | lo);
	}
	return hex[2 * len] == '\0' ? 0 : -CVM_E_USAGE;
}
