/* SPDX-License-Identifier: MIT */
#ifndef CUDNNVM_EMBEDDED_H
#define CUDNNVM_EMBEDDED_H

#include <stddef.h>

/* The manifests/ files compiled into the binary; the table ends with a NULL name. */
struct cvm_embedded {
	const char *name;
	const char *data;	/* NUL-terminated */
	size_t len;
};
extern const struct cvm_embedded cvm_embedded_manifests[];

#endif
