/* SPDX-License-Identifier: MIT */
#ifndef CUDNNVM_DOCTOR_H
#define CUDNNVM_DOCTOR_H

/*
 * doctor: every cuDNN copy the system has (the store, each toolkit, the
 * loader's folders and cache, LD_LIBRARY_PATH, conda environments, pip
 * wheels), which one a program using each toolkit would load and why, and
 * each problem found with its fix.
 */
#include "cudnnvm/cli.h"
#include "cudnnvm/json.h"

/* Prints the report (or fills json). 0 when clean, 1 when something needs fixing, or < 0. */
int cvm_doctor_run(struct cvm_ctx *ctx, cvm_json *json);

/* Driver version "580.159.04" from /proc/driver/nvidia/version text: 0 or -CVM_E_NOTFOUND. */
int cvm_doctor_parse_driver(const char *text, char *out, size_t len);

/* The oldest Linux driver a build for cuda_major needs (docs/cudnn-facts.md), or NULL. */
const char *cvm_doctor_min_driver(int cuda_major);

#endif
