/* SPDX-License-Identifier: MIT */
#ifndef CUDNNVM_ARCHIVE_H
#define CUDNNVM_ARCHIVE_H

/*
 * Reading release archives: the only interface to libarchive (archive.c).
 * Only the formats cuDNN ships are enabled: tar (ustar, pax, gnu) with xz or
 * gzip, and zip. Entries are returned as plain structs; nothing is written.
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

/*
 * Opens the archive readable from fd, starting at offset 0 (the descriptor
 * stays the caller's). name is for messages. 0, -ENOMEM, -CVM_E_CORRUPT.
 */
int cvm_archive_open_fd(int fd, const char *name, struct cvm_archive **out);
/* Next entry: 1 and *e filled, 0 at the end, -CVM_E_CORRUPT (message printed). */
int cvm_archive_next(struct cvm_archive *a, struct cvm_entry *e);
/* Reads entry data: bytes read (0 at the end of the entry) or -CVM_E_CORRUPT. */
ssize_t cvm_archive_read(struct cvm_archive *a, void *buf, size_t len);
/* Bytes of the archive file consumed so far (for progress). */
uint64_t cvm_archive_position(struct cvm_archive *a);
/* A short name of the format and filter, as "tar.xz" ("" before the first entry). */
const char *cvm_archive_format(struct cvm_archive *a);
void cvm_archive_free(struct cvm_archive *a);

#endif
