/* SPDX-License-Identifier: MIT */
/* zlibwapi.dll beside the program, into a staged Windows version (zlibwapi.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "compat.h"
#include "digest.h"
#include "error.h"
#include "fsutil.h"
#include "out.h"
#include "zlibwapi.h"

#define DLL "zlibwapi.dll"
#define MAX_DLL (16u << 20)	/* zlib's DLL is some 100 kB */

bool cvm_zlibwapi_needed(bool windows, const struct cvm_version *v)
{
	return CVM_WINDOWS && windows && v->part[0] == 8 && v->part[1] >= 3;
}

/* DLL beside this program into path[len]. */
static int beside_us(char *path, size_t len)
{
	char exe[4096], dir[4096];
	int r = cvm_self_exe(exe, sizeof(exe));

	if (r < 0)
		return r;
	cvm_path_folder(exe, dir, sizeof(dir));
	return cvm_fmt(path, len, "%s/%s", dir, DLL);
}

int cvm_zlibwapi_place(int vfd, const char *id, struct cvm_filelist *files)
{
	char src[4200], hex[CVM_SHA256_HEX], *buf = NULL;
	size_t len = 0;
	struct stat st;
	int r;

	/* The archive's own (none of NVIDIA's has one) stays as it is. */
	if (fstatat(vfd, "bin/" DLL, &st, AT_SYMLINK_NOFOLLOW) == 0)
		return 0;
	r = beside_us(src, sizeof(src));
	if (r == 0)
		r = cvm_read_file_at(AT_FDCWD, src, MAX_DLL, &buf, &len);
	if (r < 0) {
		cvm_warn("%s needs " DLL " at run time and none is beside cudnnvm (%s): put one "
			 "on PATH", cvm_safe(id), r == -ENOENT ? "this build has none" : cvm_strerror(r));
		return 0;
	}
	/* The record's hash is of the bytes written, hashed as they are in memory. */
	r = cvm_sha256_buf(buf, len, hex);
	if (r == 0)
		r = cvm_write_file_at(vfd, "bin/" DLL, buf, len, 0644);
	if (r == 0)
		r = cvm_filelist_add(files, "bin/" DLL, NULL, hex, len, 0644);
	free(buf);
	if (r < 0)
		return cvm_err(r, "cannot put " DLL " into %s: %s", cvm_safe(id), cvm_strerror(r));
	cvm_verbose("%s: " DLL " from %s put in its bin folder", cvm_safe(id), src);
	return 0;
}
