/* SPDX-License-Identifier: MIT */
#ifndef CUDNNVM_SMOKEVERDICT_H
#define CUDNNVM_SMOKEVERDICT_H

/*
 * The parts of the smoke test's parent that both platforms share
 * (smoke_verdict.c): the sequence of its steps (cvm_smoke_drive), the
 * child's report, the verdict on its GPU lines, and cvm_smoke_run, which
 * records each result (smokelog.h). What differs (the files checked, how the
 * child is started and what it loads) is each platform's operations
 * (struct cvm_smoke_os): smoke_linux.c, smoke_win.c.
 */
#include <stdbool.h>
#include <stddef.h>

#include "ccgate.h"
#include "context.h"
#include "json.h"
#include "record.h"
#include "smoke.h"
#include "toolkit.h"
#include "version.h"

/* What one run of the child gave: its "key value" lines and whatever else it wrote. */
struct cvm_smoke_report {
	char out[65536];	/* the child's lines and what cuDNN wrote to stderr */
	int status;		/* wait status, or -ETIMEDOUT / -errno */
	bool log_shown;		/* cuDNN's own lines were printed */
};

/* The platform's test, with cvm_smoke_run's contract; cvm_smoke_run records its result. */
int cvm_smoke_check(struct cvm_ctx *ctx, const struct cvm_toolkit *tk, const char *id,
		    const struct cvm_smoke_opts *o, cvm_json *json);

/* One test, as the steps of cvm_smoke_drive and the platform's operations share it. */
struct cvm_smoke_check {
	struct cvm_ctx *ctx;
	const struct cvm_toolkit *tk;
	const char *id;			/* the version tested, or NULL */
	struct cvm_record rec;		/* id's record */
	struct cvm_version hv;		/* the headers' version */
	struct cvm_smoke_report *res;
	char lib[4096];			/* the folder of the libraries (Linux's lib64, Windows' bin) */
	char shown[4096];		/* lib as messages show it */
	char inc[4096];			/* the headers' folder */
	char inc_shown[4096];		/* inc as messages show it */
	char name[64];			/* the dispatcher's file name */
	char loaded[4096];		/* the file the child's loader took */
	unsigned long header, libv, cudart;
};

/* The platform's steps of the test, in the order cvm_smoke_drive runs them. */
struct cvm_smoke_os {
	const char *tested;		/* id in words, "the active version" */
	/* lib, shown, inc and inc_shown; an error (said or not). */
	int (*paths)(struct cvm_smoke_check *c);
	/* The file name of sub-library sub (NULL: the dispatcher) of major. */
	void (*lib_name)(const char *sub, unsigned major, char *buf, size_t len);
	/* One library in dir: there and loadable; -CVM_E_SMOKE said. */
	int (*check_lib)(const char *dir, const char *name, const char *shown);
	/* What the child needs; argv[0..3] set (the rest is cvm_smoke_child_opts's). */
	int (*prepare)(struct cvm_smoke_check *c, char **argv);
	/* Runs the child (into c->res): libv, cudart and loaded from its answer. */
	int (*load)(struct cvm_smoke_check *c, char **argv);
	/* The summary's first lines and the checks of the library the child loaded. */
	int (*check_library)(struct cvm_smoke_check *c, cvm_json *json);
	/* The device code this build carries (ccgate.h). */
	void (*device_code)(const struct cvm_smoke_check *c, struct cvm_archs *archs);
	/* Each library the child mapped into mapped; r, the verdict so far, or the first problem. */
	int (*mapped)(const struct cvm_smoke_check *c, cvm_json *mapped, int r);
	/* The "loaded" line of the summary (r: the verdict; ndev: devices that ran). */
	void (*loaded_line)(const struct cvm_smoke_check *c, const cvm_json *mapped, int ndev, int r);
	/* Frees what prepare allocated (may be NULL). */
	void (*release)(struct cvm_smoke_check *c);
};

/*
 * The test over os: paths, the record, headers, files, the child, the
 * library, the GPU part; c has ctx, tk and id set, and is released (the
 * record, the report, os->release) before it returns. cvm_smoke_check's
 * contract.
 */
int cvm_smoke_drive(struct cvm_smoke_check *c, const struct cvm_smoke_os *os,
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
