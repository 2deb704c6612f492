/* SPDX-License-Identifier: MIT */
#ifndef CUDNNVM_SELECT_H
#define CUDNNVM_SELECT_H

/*
 * Which installed version the environment-based commands (env, exec) mean:
 * the VERSION given, else a .cudnn-version file in the working folder or a
 * parent (like .nvmrc), else the version active for the toolkit.
 */
#include <stddef.h>

#include "cudnnvm/cli.h"

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

/* The largest .cudnn-version read (a bigger one is refused, naming it). */
#define CVM_PIN_MAX 4096

/*
 * The VERSION a command (use, install) works on: given, or else the one
 * .cudnn-version in the working folder or a parent pins (said on stdout,
 * naming the file; buf holds it). 0 and *spec set, or a negative code
 * (printed; -CVM_E_USAGE when there is neither).
 */
int cvm_pin_spec(const char *cmd, const char *given, char *buf, size_t len, const char **spec);

/*
 * Resolves what the user means (spec may be NULL) to an installed id and
 * its folder (host path). cuda may be NULL: then the default toolkit's major
 * decides, or, without one, the only CUDA major the matches have.
 */
int cvm_select_version(struct cvm_ctx *ctx, const char *spec, const char *cuda, char *id,
		       size_t id_len, char *dir, size_t dir_len);

#endif
