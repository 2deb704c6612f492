/* SPDX-License-Identifier: MIT */
#ifndef CUDNNVM_RECORD_H
#define CUDNNVM_RECORD_H

/*
 * What install writes into versions/<id>/.cudnnvm/: record.json (what was
 * installed, from which archive, when) and files.sha256 (every regular file,
 * in sha256sum format, so `sha256sum -c` works in the version folder) plus
 * links (every symlink, "path<TAB>target"; the older "path -> target" is
 * still read). verify re-reads both.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ccgate.h"
#include "digest.h"

struct cvm_record {
	char *id, *version, *release, *platform;
	int cuda_major;
	char *cuda_variant;		/* NVIDIA's name of the build's CUDA ("13", "13.4"), or NULL */
	char *archive;			/* file name of the archive */
	char *relative_path;		/* manifest path, or NULL */
	char *manifest;			/* manifest file it was resolved from, or NULL */
	char archive_sha256[CVM_SHA256_HEX];
	uint64_t archive_size;
	int64_t installed_at;		/* seconds since the epoch */
	char *installed_by;		/* user name */
	unsigned long cudnn_version;	/* CUDNN_VERSION of the headers, e.g. 8907 */
	char *library;			/* "lib/libcudnn.so.8" */
	char *bundle;			/* installed from this store bundle (file name), or NULL */
	char bundle_sha256[CVM_SHA256_HEX];	/* its SHA-256 when it was checked, or "" */
	struct cvm_archs archs;		/* device code read at install ("archs", "ptx_archs") */
};

/* One extracted object: a regular file with its hash, or a symlink. */
struct cvm_file {
	char *path;			/* relative to the version root */
	char *link;			/* symlink body, or NULL for a file */
	char sha256[CVM_SHA256_HEX];
	uint64_t size;
	unsigned mode;
	bool mount;			/* cvm_tree_scan: a mount point, not entered */
	bool sized;			/* cvm_record_read_files: size is the record's */
};

struct cvm_filelist {
	struct cvm_file *v;
	size_t n, cap;
};

int cvm_filelist_add(struct cvm_filelist *l, const char *path, const char *link,
		     const char *sha256, uint64_t size, unsigned mode);
void cvm_filelist_release(struct cvm_filelist *l);

/* Writes .cudnnvm/{record.json,files.sha256,links} into the version at dirfd. */
int cvm_record_write(int dirfd, const struct cvm_record *r, const struct cvm_filelist *files);

/*
 * Reads .cudnnvm/record.json of the version at dirfd. Errors name the file
 * ("'<name>/.cudnnvm/record.json': ...", printed): -errno when it cannot be
 * read, -CVM_E_MANIFEST when it is not JSON or lacks a key it must have.
 */
int cvm_record_read(int dirfd, const char *name, struct cvm_record *r);
/*
 * Appends files.sha256's files (with record.json's "sizes", sized set, when
 * the record has them: versions installed before have none) and the links
 * file's links to files. An error is printed naming the file, its line and
 * what is wrong ("'<name>/.cudnnvm/links' line 3: ..."); why (NULL, or
 * whylen bytes) gets the same without the name (".cudnnvm/links line 3:
 * ..."). -errno when a file cannot be read, -CVM_E_MANIFEST when malformed.
 */
int cvm_record_read_files(int dirfd, const char *name, struct cvm_filelist *files, char *why,
			  size_t whylen);
void cvm_record_release(struct cvm_record *r);

/*
 * Lists the tree at dirfd as it is now (regular files hashed, symlinks with
 * their bodies; folders and .cudnnvm/ left out), sorted by path. Anything
 * else (a fifo, a device) is listed with link "" and no hash; so is a mount
 * point (the walk never enters one, fsutil.h), with mount set.
 */
int cvm_tree_scan(int dirfd, struct cvm_filelist *out);
/*
 * The same list without reading any file: regular files with sha256 "" and
 * their size now (for who compares sizes first and hashes later, as verify
 * does, or hashes while it writes them, as export does).
 * 0 or -errno; *out is the caller's to release.
 */
int cvm_tree_list(int dirfd, struct cvm_filelist *out);

/* Sorts a list by path (for comparing two lists). */
void cvm_filelist_sort(struct cvm_filelist *l);

#endif
