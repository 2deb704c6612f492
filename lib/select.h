/* SPDX-License-Identifier: MIT */
#ifndef CUDNNVM_SELECT_H
#define CUDNNVM_SELECT_H

/*
 * Which installed version the environment-based commands (env, exec) mean:
 * the VERSION given, else a .cudnn-version file in the working folder or a
 * parent (like .nvmrc), else the version active for the toolkit.
 */
#include <stdbool.h>
#include <stddef.h>

#include "context.h"

/*
 * Parses a .cudnn-version text: the first line that is neither empty nor a
 * "#" comment, trimmed, must be a version ("9.1", "8.9.7.29") or a store id.
 * 0 and spec filled, or -CVM_E_VERSION (no message).
 */
int cvm_pin_parse(const char *text, size_t len, char *spec, size_t spec_len);

/*
 * Looks for .cudnn-version in dir and its parents. 1 and spec/file filled,
 * 0 when there is none, or a negative error (printed, naming the file).
 */
int cvm_pin_find(const char *dir, char *spec, size_t spec_len, char *file, size_t file_len);

/*
 * Removes dir/.cudnn-version (its path into file) when it is what 'cudnnvm
 * local' writes: a regular file of the caller's, holding one version and a
 * newline. 0, or a negative code printed naming the file (-CVM_E_NOTFOUND:
 * none; -CVM_E_CONFLICT: it holds more, so someone else wrote it).
 */
int cvm_pin_unset(const char *dir, char *file, size_t file_len);

/* The largest .cudnn-version read (a bigger one is refused, naming it). */
#define CVM_PIN_MAX 4096

/*
 * Resolves what the user means (spec may be NULL) to an installed id and
 * its folder (host path). cuda may be NULL: then the default toolkit's major
 * decides, or, without one, the only CUDA major the matches have.
 */
int cvm_select_version(struct cvm_ctx *ctx, const char *spec, const char *cuda, char *id,
		       size_t id_len, char *dir, size_t dir_len);

struct cvm_store;

/*
 * Which of several builds (ids, newest first) a partial version means: the
 * one active for toolkit ("12.4"; NULL: for any toolkit), else one whose last
 * smoke test passed (smokelog.h), else the newest. Returns its index; why
 * gets the reason, for -v.
 */
size_t cvm_select_best(struct cvm_store *s, char **ids, size_t n, const char *toolkit,
		       char *why, size_t why_len);

/*
 * As cvm_store_resolve (same errors, printed), choosing among the matches by
 * cvm_select_best and saying why under -v. cuda is the toolkit's "X.Y".
 */
int cvm_select_resolve(struct cvm_ctx *ctx, const char *spec, int cuda_major, const char *cuda,
		       char *id, size_t len);

/*
 * Refuses (-CVM_E_SMOKE, exit 4, printed naming cmd, id, when and why) a
 * version whose last smoke test failed; with force, warns and returns 0.
 */
int cvm_select_check_smoke(struct cvm_ctx *ctx, const char *cmd, const char *id, bool force);

/*
 * The variables that select a version for one shell or command (env, exec):
 * set to the version's folder (sub NULL), or with the folder's sub put in
 * front of the list, entries joined by cvm_env_sep. Linux: CUDNN_PATH,
 * CUDNN_HOME, LD_LIBRARY_PATH, LIBRARY_PATH, CPATH; Windows: CUDNN_PATH,
 * CUDNN_HOME, PATH (bin, where the DLLs are found), INCLUDE and LIB (what
 * MSVC reads).
 */
struct cvm_env_var {
	const char *var, *sub;
};
const struct cvm_env_var *cvm_env_vars(size_t *n);
extern const char cvm_env_sep;

/* dir/sub (or dir) as this platform writes paths ('\\' on Windows) into buf: 0 or -ENAMETOOLONG. */
int cvm_env_value(char *buf, size_t len, const char *dir, const char *sub);

/* p as this platform writes paths, for a message: buf (cvm_env_value's), or p when it does not fit. */
const char *cvm_path_shown(const char *p, char *buf, size_t len);

/*
 * The value v gets for the version in dir: cvm_env_value's, followed for a
 * list (v->sub) by cvm_env_sep and old when old is not empty (NULL: none).
 * 0 or -ENAMETOOLONG.
 */
int cvm_env_compose(char *buf, size_t len, const struct cvm_env_var *v, const char *dir,
		    const char *old);

/*
 * What env, exec and the Slurm plugin give a program: spec (or the pin, or
 * the active version: cvm_select_version) resolved to an installed id and
 * its folder, the folder checked (cvm_store_check_safe), and a version whose
 * last smoke test failed refused unless force (cvm_select_check_smoke, cmd
 * naming who asks). 0, or the error, printed.
 */
int cvm_env_select(struct cvm_ctx *ctx, const char *cmd, const char *spec, const char *cuda,
		   bool force, char *id, size_t id_len, char *dir, size_t dir_len);

#endif
