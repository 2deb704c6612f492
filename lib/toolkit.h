/* SPDX-License-Identifier: MIT */
#ifndef CUDNNVM_TOOLKIT_H
#define CUDNNVM_TOOLKIT_H

/*
 * CUDA toolkit discovery under a root: ROOT/usr/local/cuda-* and ROOT/opt/cuda*.
 * The version comes from version.json, else include/cuda_runtime_api.h's
 * CUDART_VERSION, else `bin/nvcc --version` (run as a child, argv only).
 */
#include <stddef.h>

struct cvm_toolkit {
	char *path;		/* host path (under the root), malloc'd */
	char *display;		/* path as seen inside the root, malloc'd */
	int major, minor;
	const char *source;	/* "version.json", "cuda_runtime_api.h", "nvcc" (static) */
};

/*
 * Finds the toolkits under root ("" or "/" for the host), sorted by version,
 * each real folder once. *out is malloc'd: free with cvm_toolkits_free.
 * A folder whose version cannot be read is skipped with a warning under -v.
 */
int cvm_toolkits_find(const char *root, struct cvm_toolkit **out, size_t *n);
void cvm_toolkits_free(struct cvm_toolkit *t, size_t n);

/*
 * The toolkit for cuda ("X.Y"), or, when cuda is NULL, the default: "cuda =
 * X.Y" in ROOT/etc/cudnnvm.conf, else the one ROOT/usr/local/cuda points to. Copies into *out (free with
 * cvm_toolkit_release). -CVM_E_NOTFOUND with a message listing the toolkits found.
 */
int cvm_toolkit_select(const char *root, const char *cuda, struct cvm_toolkit *out);
void cvm_toolkit_release(struct cvm_toolkit *t);

/* "X.Y" of a toolkit into buf[16]. */
void cvm_toolkit_name(const struct cvm_toolkit *tk, char *buf, size_t len);

/*
 * Index in t of the default toolkit (as cvm_toolkit_select's), -ENOENT when
 * there is none (quietly), or -CVM_E_NOTFOUND (said) when the configuration
 * file names a CUDA version no toolkit has.
 */
int cvm_toolkit_default(const char *root, const struct cvm_toolkit *t, size_t n);

/* Reads the version of the toolkit at path. 0 or -CVM_E_NOTFOUND. */
int cvm_toolkit_version(const char *path, int *major, int *minor, const char **source);

/* Parsers of each source (pure). 0 or -CVM_E_NOTFOUND. */
int cvm_toolkit_parse_version_json(const char *text, size_t len, int *major, int *minor);
int cvm_toolkit_parse_cudart_header(const char *text, size_t len, int *major, int *minor);
int cvm_toolkit_parse_nvcc(const char *text, size_t len, int *major, int *minor);

#endif
