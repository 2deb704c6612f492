/* SPDX-License-Identifier: MIT */
#ifndef CUDNNVM_CONFIG_H
#define CUDNNVM_CONFIG_H

/*
 * ROOT/etc/cudnnvm.conf: "key = value" lines, "#" comments, blank lines.
 * Known keys: mirror (cache.c); store, user (the default store, and whether it
 * is the per-user one, main.c); cuda (the
 * default toolkit, before /usr/local/cuda, toolkit.c); modules, modules_format
 * (the modulefiles tree rewritten after install and uninstall, cmd_modulefiles.c). An unknown key is warned about once
 * (file and line; a typo, or a newer cudnnvm's key) and otherwise ignored.
 * A file that another user could have written (trust.h: owned by neither
 * root nor the caller, writable by others, or in a folder they can change)
 * is ignored as a whole, with one warning naming it, its owner and mode: as
 * if there were none. A FIFO or anything but a regular file is an error.
 *
 * The environment's numbers are parsed here too, as strictly as options.
 */
#include <stddef.h>

/* The value of key in text: 1 and val filled, 0 when absent, -CVM_E_USAGE for a malformed line. */
int cvm_config_parse(const char *text, size_t len, const char *key, char *val, size_t vlen,
		     int *bad_line);

/* The same from ROOT/etc/cudnnvm.conf (a missing file is empty); errors name the file and line. */
int cvm_config_get(const char *root, const char *key, char *val, size_t vlen);

/*
 * The one parser of whole numbers, the options' (cvm_cli_number) and the
 * environment's: s is decimal digits only (a leading '-' only when min < 0;
 * no spaces, '+', hex, exponent or suffix) from min to max, without
 * overflow. 0 and *out set, or -CVM_E_USAGE; prints nothing.
 */
int cvm_number_parse(const char *s, long min, long max, long *out);

/*
 * The number in the environment variable name, one of those cudnnvm reads
 * (CUDNNVM_SMOKE_TIMEOUT: seconds, 1 to 86400; CUDNNVM_JOBS: 1 to 256):
 * 0 and *out (dflt when unset or empty), or -CVM_E_USAGE printed as
 * "CUDNNVM_X '<value>': expected a whole number from MIN to MAX (unit)".
 */
int cvm_config_env_number(const char *name, long dflt, long *out);

/*
 * Checks every number of the environment: main() calls it before anything
 * is touched, so a bad one is a usage error (exit 2) and no change.
 */
int cvm_config_env_check(void);

#endif
