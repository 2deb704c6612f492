/* SPDX-License-Identifier: MIT */
#ifndef CUDNNVM_ZLIBWAPI_H
#define CUDNNVM_ZLIBWAPI_H

/*
 * zlibwapi.dll for the Windows releases that load it (cuDNN 8.3 to 8.x,
 * docs/cudnn-facts.md): the build ships one beside cudnnvm.exe (zlib,
 * cross-built from Debian's source, named so: x64 has one calling
 * convention), and install and adopt put a copy in the version's bin folder, where
 * the activated PATH finds it, listed in the version's record like its own
 * files (verify checks it, uninstall removes it with the version).
 */
#include <stdbool.h>

#include "record.h"
#include "version.h"

/*
 * Whether cudnnvm, on Windows, puts zlibwapi.dll in a version: a Windows
 * tree (windows) of cuDNN 8.3 to 8.x (v), which loads it at run time.
 */
bool cvm_zlibwapi_needed(bool windows, const struct cvm_version *v);

/*
 * Copies zlibwapi.dll from beside this program into bin/ of the version
 * being staged at vfd and adds it to files, unless the version has one. A
 * program with none beside it (a build without it): a warning naming what
 * the version will lack, 0. 0 or -errno (said).
 */
int cvm_zlibwapi_place(int vfd, const char *id, struct cvm_filelist *files);

#endif
