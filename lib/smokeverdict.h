/* SPDX-License-Identifier: MIT */
#ifndef CUDNNVM_SMOKEVERDICT_H
#define CUDNNVM_SMOKEVERDICT_H

/*
 * The parts of the smoke test's parent that both platforms share
 * (smoke_verdict.c): the child's report, the verdict on its GPU lines, and
 * cvm_smoke_run, which records each result (smokelog.h). What differs (the
 * files checked, how the child is started and what it loads) is each
 * platform's cvm_smoke_check: smoke.c on Linux, smoke_win.c on Windows.
 */
#include <stdbool.h>
#include <stddef.h>

#include "ccgate.h"
#include "context.h"
#include "json.h"
#include "smoke.h"
#include "toolkit.h"

struct cvm_record;
struct cvm_version;

/* What one run of the child gave: its "key value" lines and whatever else it wrote. */
struct cvm_smoke_report {
	char out[65536];	/* the child's lines and what cuDNN wrote to stderr */
	int status;		/* wait status, or -ETIMEDOUT / -errno */
	bool log_shown;		/* cuDNN's own lines were printed */
};

/* The platform's test, with cvm_smoke_run's contract; cvm_smoke_run records its result. */
int cvm_smoke_check(struct cvm_ctx *ctx, const struct cvm_toolkit *tk, const char *id,
		    const struct cvm_smoke_opts *o, cvm_json *json);

/* How long the child may run: CUDNNVM_SMOKE_TIMEOUT seconds, else 120. */
double cvm_smoke_timeout_s(void);

/* The sub-libraries every release of a major has ("ops", "cnn_infer", ...; NULL-terminated). */
const char *const *cvm_smoke_sublibs(unsigned major);

/* The record of version id, into rec (cvm_record_release it); 0, or the error (said where opening fails). */
int cvm_smoke_read_record(struct cvm_ctx *ctx, const char *id, struct cvm_record *rec);

/* The cuDNN version inc/cudnn_version.h says, encoded (hv: its parts); 0 when missing or unreadable. */
unsigned long cvm_smoke_header_version(const char *inc, struct cvm_version *hv);

/*
 * Appends the child's options of o (--no-gpu, --all-devices or --device N,
 * N written into devarg) to argv from index argc, then a NULL; returns the
 * new argc. argv needs room for argc + 4 entries.
 */
size_t cvm_smoke_child_opts(const struct cvm_smoke_opts *o, char **argv, size_t argc, char *devarg,
			    size_t len);

/* The value of the first "key value" line of res, copied into val; NULL when there is none. */
const char *cvm_smoke_get(const struct cvm_smoke_report *res, const char *key, char *val,
			  size_t len);

/*
 * The child's answer: false when it gave no "version"; else *libv, *cudart
 * (left as is when not given) and the path the loader took into path
 * (fallback when not given).
 */
bool cvm_smoke_versions(const struct cvm_smoke_report *res, unsigned long *libv,
			unsigned long *cudart, char *path, size_t len, const char *fallback);

/* The lines that are not the child's keys (what cuDNN or the loader said), once; not with --json. */
void cvm_smoke_show_log(struct cvm_smoke_report *res);

/*
 * The summary's first line (not with --json): the library the child loaded
 * (id: the version tested, or NULL), its cuDNN version, the headers' and
 * the CUDA runtime it was built for; the same into json (may be NULL) as
 * "library", "header_version", "library_version", "cudart_version".
 */
void cvm_smoke_library(const struct cvm_toolkit *tk, const char *id, const char *library,
		       unsigned long header, unsigned long libv, unsigned long cudart, cvm_json *json);

/*
 * Judges every device the child ran on ("ran N"): one line each (not with
 * --json), and into gpu (a JSON object: the "gpu" of docs/cli.md's smoke
 * shape) the first device's name, algo and compute capability, the worst
 * error, the first time and "devices". 0, or the first failure
 * (-CVM_E_SMOKE, said). *ndev: how many ran.
 */
int cvm_smoke_gpu_judge(struct cvm_smoke_report *res, unsigned long cudnn, unsigned long cudart,
			const struct cvm_archs *archs, cvm_json *gpu, int *ndev);

/*
 * Ends the GPU part once the caller has judged the rest (r: its verdict so
 * far). When no device ran and r is 0: the child's "error" fails the test
 * (-CVM_E_SMOKE, said), else the part was skipped (-CVM_E_SKIPPED; the
 * reason said and in "skipped"). Fills the rest of gpu (the same keys
 * whether the part ran or not, null where unknown). Returns the verdict.
 */
int cvm_smoke_gpu_end(struct cvm_smoke_report *res, int r, int ndev, cvm_json *gpu);

#endif
