/* SPDX-License-Identifier: MIT */
/*
 * SHA-256 (digest.h): known answers, incremental updates, cvm_sha256_fd on
 * the inline and the read-ahead path, and the hex helpers. The same checks
 * run against sha256_openssl.c (OpenSSL) on Linux and, cross-built, against
 * sha256_cng.c (CNG) on Windows or under wine; digest.c above both.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "compat.h"
#include "digest.h"
#include "fsutil.h"
#include "unit.h"

#ifndef O_BINARY
#define O_BINARY 0
#endif

static const char *hex_of(const void *buf, size_t len)
{
	static char hex[CVM_SHA256_HEX];
	uint8_t d[CVM_SHA256_LEN];
	struct cvm_sha256 *c = cvm_sha256_new();

	if (!c || cvm_sha256_update(c, buf, len) < 0 || cvm_sha256_final(c, d) < 0)
		strcpy(hex, "(failed)");
	else
		cvm_hex_encode(d, sizeof(d), hex);
	cvm_sha256_free(c);
	return hex;
}

static void test_known(void)
{
	struct cvm_sha256 *c = cvm_sha256_new();
	uint8_t d[CVM_SHA256_LEN];
	char hex[CVM_SHA256_HEX], a[1000];
	int i, r = 0;

	CHECK_STR(hex_of("", 0), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
		  "SHA-256 of nothing");
	CHECK_STR(hex_of("abc", 3), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
		  "SHA-256 of abc");
	memset(a, 'a', sizeof(a));
	for (i = 0; i < 1000 && r == 0; i++)
		r = cvm_sha256_update(c, a, sizeof(a));
	CHECK_INT(r, 0, "a million 'a' in 1000 updates");
	CHECK_INT(cvm_sha256_final(c, d), 0, "final");
	cvm_hex_encode(d, sizeof(d), hex);
	CHECK_STR(hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0",
		  "SHA-256 of a million 'a'");
	cvm_sha256_free(c);
}

static uint64_t progressed;

static void on_progress(void *arg, uint64_t n)
{
	(void)arg;
	progressed += n;
}

/* The tick of cvm_sha256_fd_behind: urges the rest at once, or never (for 30 s). */
struct ticks {
	bool urge;
	unsigned n;
	uint64_t first;
};

static bool tick(void *arg, uint64_t hashed)
{
	struct ticks *t = arg;

	if (t->n++ == 0)
		t->first = hashed;
	return t->urge || t->n > 300;
}

/* cvm_sha256_fd_behind on fd (of len bytes, digest want): left to its thread, then taken over at once. */
static void test_behind(int fd, size_t len, const char *want, const char *what)
{
	struct ticks t = { 0 };
	uint8_t d[CVM_SHA256_LEN];
	char hex[CVM_SHA256_HEX];
	uint64_t size = 0;

	CHECK_INT(cvm_sha256_fd_behind(fd, d, &size, tick, &t), 0, "%s: hashed behind", what);
	cvm_hex_encode(d, sizeof(d), hex);
	CHECK_STR(hex, want, "%s: behind, the same digest", what);
	CHECK_INT(size, len, "%s: behind, the size", what);
	CHECK(t.n >= 1 && t.n <= 300 && t.first == 0, "%s: asked at once, then its thread ended on its own (%u ticks)",
	      what, t.n);
	memset(&t, 0, sizeof(t));
	t.urge = true;
	CHECK_INT(cvm_sha256_fd_behind(fd, d, &size, tick, &t), 0, "%s: taken over at once", what);
	cvm_hex_encode(d, sizeof(d), hex);
	CHECK_STR(hex, want, "%s: taken over, the same digest", what);
	CHECK(t.n == 1 && t.first == 0 && size == len, "%s: asked once, before anything was hashed; all of it hashed", what);
}

/* A file of len pseudo-random bytes: cvm_sha256_fd must agree with hex_of. */
static void test_fd(const char *dir, size_t len, const char *what)
{
	char path[4096], hex[CVM_SHA256_HEX], want[CVM_SHA256_HEX];
	unsigned char *buf = malloc(len ? len : 1);
	uint8_t d[CVM_SHA256_LEN];
	uint64_t size = 0, x = 88172645463325252ull;
	int fd;

	for (size_t i = 0; i < len; i++) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		buf[i] = (unsigned char)x;
	}
	strcpy(want, hex_of(buf, len));
	snprintf(path, sizeof(path), "%s/f", dir);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_BINARY, 0644);
	CHECK(fd >= 0 && cvm_write_all(fd, buf, len) == 0, "%s: file written", what);
	lseek(fd, 7, SEEK_SET);
	progressed = 0;
	CHECK_INT(cvm_sha256_fd(fd, d, &size, on_progress, NULL), 0, "%s: cvm_sha256_fd", what);
	cvm_hex_encode(d, sizeof(d), hex);
	CHECK_STR(hex, want, "%s: the file's digest is its bytes'", what);
	CHECK_INT(size, len, "%s: size hashed", what);
	CHECK_INT(progressed, len, "%s: progress adds up to the size", what);
	CHECK_INT(lseek(fd, 0, SEEK_CUR), 7, "%s: the file offset is untouched", what);
	test_behind(fd, len, want, what);
	close(fd);
	unlink(path);
	free(buf);
}

static void test_hex(void)
{
	uint8_t bin[4], back[4] = { 0xde, 0xad, 0xbe, 0xef };
	char hex[9];

	cvm_hex_encode(back, 4, hex);
	CHECK_STR(hex, "deadbeef", "hex encode");
	CHECK_INT(cvm_hex_decode("DeadBeef", bin, 4), 0, "hex decode, either case");
	CHECK(!memcmp(bin, back, 4), "hex decode gives the bytes");
	CHECK(cvm_hex_decode("deadbee", bin, 4) < 0, "hex decode: too short refused");
	CHECK(cvm_hex_decode("deadbeef0", bin, 4) < 0, "hex decode: too long refused");
	CHECK(cvm_hex_decode("deadbeeg", bin, 4) < 0, "hex decode: not hex refused");
}

int main(void)
{
	const char *tmp = getenv("TMPDIR");
	char dir[4096];

	snprintf(dir, sizeof(dir), "%s/cvm-test-digest.XXXXXX", tmp && *tmp ? tmp : ".");
	if (!mkdtemp(dir)) {
		printf("not ok - mkdtemp %s: %s\n", dir, strerror(errno));
		return 1;
	}
	test_known();
	test_fd(dir, 0, "empty file");
	test_fd(dir, 1000, "small file (inline)");
	test_fd(dir, (3 << 20) + 12345, "3 MiB file (read ahead)");
	test_hex();
	rmdir(dir);
	return unit_done();
}
