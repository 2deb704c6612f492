/* SPDX-License-Identifier: MIT */
#ifndef CUDNNVM_XZ_H
#define CUDNNVM_XZ_H

/*
 * Parallel .xz decoding: the only interface to liblzma (xz.c). The file's
 * index (read from its end) names every block; worker threads decode blocks
 * in parallel with pread, and the reader gets the output in order. The
 * block being read streams through a few 1 MiB chunks; the blocks after it
 * are buffered up to a fixed budget, so memory is bounded by threads x
 * (dictionary + block size), never by the size of the archive. A file of
 * one block (single-threaded xz) decodes in one worker, still in parallel
 * with the reader.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct cvm_xz;

struct cvm_xz_info {
	unsigned threads;	/* workers started */
	uint64_t blocks;	/* blocks in the file */
	uint64_t uncompressed;	/* bytes the file decodes to (from its index) */
	uint64_t memlimit;	/* what the threads were sized against */
	uint64_t memory;	/* the estimate for the threads chosen */
};

/* Whether buf (the first len bytes of a file) starts an .xz stream. */
bool cvm_xz_magic(const void *buf, size_t len);

/*
 * The memory limit for threading when none is given: 1/16 of physical
 * memory, at least 64 MiB, at most 1 GiB.
 */
uint64_t cvm_xz_default_memlimit(void);

/*
 * Starts decoding fd (size bytes, read with pread; the descriptor stays the
 * caller's) with at most threads workers (at least 1), fewer when the
 * blocks are fewer or when more would need over memlimit bytes (0: the
 * default). 0, -ENOMEM, or -CVM_E_CORRUPT with *why set to a static text.
 * Free with cvm_xz_free.
 */
int cvm_xz_open(int fd, uint64_t size, unsigned threads, uint64_t memlimit, struct cvm_xz **out,
		const char **why);

/*
 * Decodes fd while it is still being written (a download), in one worker:
 * each read first asks gate how many bytes from off may be read now (as
 * archive.h's cvm_archive_opts.gate: it waits, returns > 0, 0 at the end,
 * or -errno). Without the index, the output is checked block by block and
 * against the index at its end by liblzma's stream decoder. The same
 * returns and cvm_xz_read as cvm_xz_open; info has threads 1, blocks and
 * uncompressed 0 (not known).
 */
int cvm_xz_follow(int fd, ssize_t (*gate)(void *arg, uint64_t off, size_t want), void *arg,
		  struct cvm_xz **out, const char **why);

/*
 * The next piece of decoded data, in order: its length with *buf set
 * (valid until the next call), 0 at the end, or a negative code
 * (-CVM_E_CORRUPT, -errno) with cvm_xz_strerror saying why.
 */
ssize_t cvm_xz_read(struct cvm_xz *z, const void **buf);
const char *cvm_xz_strerror(const struct cvm_xz *z);

/* Compressed bytes consumed so far (approximate within a block; for progress). */
uint64_t cvm_xz_position(const struct cvm_xz *z);
void cvm_xz_get_info(const struct cvm_xz *z, struct cvm_xz_info *info);

/* Stops the workers and frees everything. NULL is allowed. */
void cvm_xz_free(struct cvm_xz *z);

#endif
