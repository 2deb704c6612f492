/* SPDX-License-Identifier: MIT */
/* Hex digests, shared by sha256_openssl.c (OpenSSL) and sha256_cng.c (CNG). */
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "compat.h"
#include "digest.h"
#include "error.h"
#include "fsutil.h"

int cvm_sha256_at(int dirfd, const char *path, char hex[CVM_SHA256_HEX], uint64_t *size)
{
	uint8_t d[CVM_SHA256_LEN];
	int fd, r;

	/* A file of a version or a hand copy: never through a link, never waiting on a FIFO. */
	fd = cvm_open_regular(dirfd, path, O_RDONLY | O_NOFOLLOW, 0);
	if (fd < 0)
		return fd;
	r = cvm_sha256_fd(fd, d, size, NULL, NULL);
	close(fd);
	if (r == 0)
		cvm_hex_encode(d, sizeof(d), hex);
	return r;
}

int cvm_sha256_buf(const void *buf, size_t len, char hex[CVM_SHA256_HEX])
{
	struct cvm_sha256 *c = cvm_sha256_new();
	uint8_t d[CVM_SHA256_LEN];
	int r = c ? cvm_sha256_update(c, buf, len) : -ENOMEM;

	if (r == 0)
		r = cvm_sha256_final(c, d);
	cvm_sha256_free(c);
	if (r == 0)
		cvm_hex_encode(d, sizeof(d), hex);
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
