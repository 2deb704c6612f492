/* SPDX-License-Identifier: MIT */
#ifndef CUDNNVM_ARCHIVE_H
#define CUDNNVM_ARCHIVE_H

/*
 * Reading release archives: the only interface to libarchive (archive.c).
 * Only the formats cuDNN ships are enabled: tar (ustar, pax, gnu) with xz or
 * gzip, and zip. Entries are returned as plain structs; nothing is written.
 * An .xz file is decoded by xz.h (in parallel, bounded memory) and only its
 * tar stream reaches libarchive; anything else is libarchive's to decode.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

enum cvm_entry_type {
	CVM_ENTRY_FILE,
	CVM_ENTRY_DIR,
	CVM_ENTRY_SYMLINK,
	CVM_ENTRY_HARDLINK,
	CVM_ENTRY_OTHER		/* device, fifo, socket, unknown */
};

struct cvm_entry {
	const char *path;	/* as stored, borrowed until the next _next */
	const char *link;	/* symlink body or hardlink target, or NULL */
	enum cvm_entry_type type;
	mode_t mode;		/* permission bits as stored, incl. set-id */
	int64_t size;		/* -1 when unknown */
};

struct cvm_archive;

struct cvm_archive_opts {
	unsigned threads;	/* xz decoder threads at most; 0 or 1: one */
	uint64_t memlimit;	/* memory the xz threads may take; 0: xz.h's default */
	/*
	 * Following a file that is still being written (a download): every read
	 * first asks gate how many bytes from off may be read now; it waits as
	 * long as it must and returns that number (> 0), 0 at the end, or
	 * -errno; with want 0 it does not wait, and 0 means none yet (or the
	 * end). Reads are sequential: an .xz is decoded by xz.h's follow
	 * mode (in a thread of its own, as from a file), anything else by
	 * libarchive's filters.
	 */
	ssize_t (*gate)(void *arg, uint64_t off, size_t want);
	void *gate_arg;
};

/*
 * Loads libarchive (it is not linked: archive.c). Done by cvm_archive_open;
 * call it first where the opener will be confined and unable to read the
 * library. 0, or -CVM_E_NOTFOUND with the message printed (once).
 */
int cvm_archive_load(void);

/*
 * Opens the archive readable from fd, starting at offset 0 (the descriptor
 * stays the caller's). name is for messages; o may be NULL (one thread).
 * 0, -ENOMEM, -CVM_E_CORRUPT (message printed).
 */
int cvm_archive_open(int fd, const char *name, const struct cvm_archive_opts *o,
		     struct cvm_archive **out);
/* The same with one decoder thread. */
int cvm_archive_open_fd(int fd, const char *name, struct cvm_archive **out);
/* Next entry: 1 and *e filled, 0 at the end, -CVM_E_CORRUPT (message printed). */
int cvm_archive_next(struct cvm_archive *a, struct cvm_entry *e);
/* Reads entry data: bytes read (0 at the end of the entry) or -CVM_E_CORRUPT. */
ssize_t cvm_archive_read(struct cvm_archive *a, void *buf, size_t len);
/*
 * Entry data without a copy: 1 with *buf (valid until the next call), *len
 * and *offset (the offset of the piece in the file: beyond the end of the
 * previous piece for a hole of a sparse file) set; 0 at the end of the
 * entry; -CVM_E_CORRUPT (message printed).
 */
int cvm_archive_read_block(struct cvm_archive *a, const void **buf, size_t *len, int64_t *offset);
/* Bytes of the archive file consumed so far (for progress). */
uint64_t cvm_archive_position(struct cvm_archive *a);
/* A short name of the format and filter, as "tar.xz" ("" before the first entry). */
const char *cvm_archive_format(struct cvm_archive *a);
/* How it is decoded, as "xz: 20 blocks, 2 threads" ("" when libarchive decodes it all). */
const char *cvm_archive_decoder(struct cvm_archive *a);
void cvm_archive_free(struct cvm_archive *a);

/*
 * Writing a pax tar (zstd-compressed when zstd) into fd, for store bundles.
 * Every byte written is hashed: cvm_archive_writer_close gives the SHA-256
 * and size of the whole output. Names are written as UTF-8 when they are,
 * else as their bytes (pax hdrcharset=BINARY; refused with -EILSEQ on
 * Windows). Errors are printed, naming
 * name (the output) or the entry; -errno or -EIO.
 */
struct cvm_archive_writer;

int cvm_archive_writer_open(int fd, const char *name, bool zstd, struct cvm_archive_writer **out);
int cvm_archive_writer_dir(struct cvm_archive_writer *w, const char *path, int64_t mtime);
int cvm_archive_writer_link(struct cvm_archive_writer *w, const char *path, const char *target,
			    int64_t mtime);
/* A regular file from memory. */
int cvm_archive_writer_data(struct cvm_archive_writer *w, const char *path, unsigned mode,
			    const void *buf, size_t len, int64_t mtime);
/*
 * A regular file of size bytes read from in; digest is what was read.
 * -EINTR (not printed) once cvm_interrupted is set.
 */
int cvm_archive_writer_file(struct cvm_archive_writer *w, const char *path, unsigned mode, int in,
			    uint64_t size, int64_t mtime, uint8_t digest[32]);
int cvm_archive_writer_close(struct cvm_archive_writer *w, uint8_t digest[32], uint64_t *bytes);
void cvm_archive_writer_free(struct cvm_archive_writer *w);

#endif
