/* SPDX-License-Identifier: MIT */
#ifndef CUDNNVM_EXTRACT_H
#define CUDNNVM_EXTRACT_H

/*
 * Extraction of a verified archive into a staging folder. Every entry passes
 * cvm_entry_check first; every path is created component by component with
 * O_NOFOLLOW, so nothing is ever written through a symlink; files get mode
 * 0644 (0755 when the archive marks them executable), folders 0755, never
 * owners or set-id bits. Each file is hashed as it is written.
 */
#include <stdint.h>

#include "cudnnvm/entry.h"
#include "cudnnvm/record.h"

struct cvm_extract {
	struct cvm_entry_state state;	/* top folder and layout found */
	struct cvm_filelist files;	/* what was written (caller releases) */
	uint64_t bytes;			/* bytes of file data written */
	char format[64];		/* "GNU tar format+xz" */
};

/*
 * Extracts the archive readable from fd (read from offset 0) into dirfd.
 * max_bytes bounds the data written (a decompression bomb gives
 * -CVM_E_UNSAFE). Messages printed; on failure the caller discards dirfd.
 */
int cvm_extract_fd(int fd, const char *name, uint64_t archive_size, uint64_t max_bytes,
		   int dirfd, struct cvm_extract *x);

#endif
