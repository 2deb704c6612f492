/* SPDX-License-Identifier: MIT */
#ifndef CUDNNVM_DIGEST_H
#define CUDNNVM_DIGEST_H

/*
 * SHA-256: the five context functions are the backend, the only interface to
 * OpenSSL (sha256_openssl.c, EVP only) or, on Windows, to CNG (sha256_cng.c);
 * cvm_sha256_fd is digest.c, once for both; the hex helpers are hex.c.
 */
#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>

#define CVM_SHA256_LEN 32
#define CVM_SHA256_HEX 65

struct cvm_sha256;	/* opaque */

/*
 * Makes SHA-256 ready: on Linux, loads libcrypto (sha256_openssl.c); 0, or
 * -CVM_E_NOTFOUND after one error naming the library. Called by the commands
 * that hash before they start; cvm_sha256_new calls it too.
 */
int cvm_sha256_load(void);
/* New context, or NULL (ENOMEM, or libcrypto not loadable). Free with _free. */
struct cvm_sha256 *cvm_sha256_new(void);
int cvm_sha256_update(struct cvm_sha256 *c, const void *buf, size_t len);
/* Writes the digest and resets nothing: free the context afterwards. */
int cvm_sha256_final(struct cvm_sha256 *c, uint8_t out[CVM_SHA256_LEN]);
void cvm_sha256_free(struct cvm_sha256 *c);

/*
 * Hashes fd from offset 0 to EOF with pread (the file offset is untouched);
 * *size receives the bytes hashed. on_progress may be NULL (it is called
 * in the caller's thread). A file of more than 4 MiB is read ahead by a
 * thread of its own while the caller hashes. 0 or -errno.
 */
int cvm_sha256_fd(int fd, uint8_t out[CVM_SHA256_LEN], uint64_t *size,
		  void (*on_progress)(void *arg, uint64_t n), void *arg);

/*
 * The same, hashed behind other work: by a thread that runs only when a CPU
 * would otherwise idle (cvm_thread_idle), while the caller waits. At once
 * and every 100 ms, the caller's tick(arg, bytes hashed so far) says whether
 * the rest is wanted now: it is then hashed in the calling thread, at its priority.
 * For a hash with slack (one that a decoding child does not wait for).
 */
int cvm_sha256_fd_behind(int fd, uint8_t out[CVM_SHA256_LEN], uint64_t *size,
			 bool (*tick)(void *arg, uint64_t hashed), void *arg);

/*
 * The SHA-256 of the regular file path below dirfd, as lowercase hex, and
 * its size in *size (when size is not NULL): 0 or -errno; -CVM_E_NOTREG
 * when path is a link (never followed) or not a regular file (a FIFO is not
 * waited on: cvm_open_regular).
 */
int cvm_sha256_at(int dirfd, const char *path, char hex[CVM_SHA256_HEX], uint64_t *size);

/* The SHA-256 of len bytes at buf, as lowercase hex: 0 or -ENOMEM. */
int cvm_sha256_buf(const void *buf, size_t len, char hex[CVM_SHA256_HEX]);

/* Lowercase hex of a digest into hex[65]. */
void cvm_hex_encode(const uint8_t *bin, size_t len, char *hex);
/* Decodes exactly 2*len hex digits (either case): 0 or -CVM_E_USAGE. */
int cvm_hex_decode(const char *hex, uint8_t *bin, size_t len);

#endif
