/* SPDX-License-Identifier: MIT */
#ifndef CUDNNVM_SMOKE_H
#define CUDNNVM_SMOKE_H

/*
 * The smoke test. Its loader part runs in a child (a re-exec of cudnnvm,
 * killed after a timeout) with the environment a program using the toolkit
 * would have: it dlopens libcudnn.so.<major> through the toolkit's lib
 * folder and compares cudnnGetVersion() with the store's record.
 */
#include "cudnnvm/cli.h"
#include "cudnnvm/toolkit.h"

/* 0 when it loads and reports the recorded version; -CVM_E_SMOKE (printed) when not. */
int cvm_smoke_loader(struct cvm_ctx *ctx, const struct cvm_toolkit *tk, const char *id);

/* The child's side: main() calls it for "cudnnvm __smoke-child LIBRARY". */
int cvm_smoke_child(int argc, char **argv);

#endif
