/* SPDX-License-Identifier: MIT */
#ifndef CUDNNVM_FRAMEWORKS_H
#define CUDNNVM_FRAMEWORKS_H

/*
 * Framework truth: which cuDNN the frameworks of a Python environment need
 * and which copy they would load, read from files alone (no interpreter, no
 * framework code is run): the environment's site-packages (*.dist-info/
 * METADATA Requires-Dist on nvidia-cudnn-cuXX, with its markers evaluated for
 * this host), TensorFlow's build_info.py, the nvidia/cudnn wheel beside them,
 * conda-meta's records, and a table for the frameworks that publish no pin
 * (ONNX Runtime, CTranslate2). Only the METADATA of the frameworks' families
 * (torch*, tensorflow*, jax*, onnxruntime*, cupy*, paddle*...) is read, so
 * that an environment of thousands of distributions reads in milliseconds
 * (bench/frameworks.sh). Every file read is a regular file of bounded size
 * (cvm_open_regular: no FIFO, no device). Used by doctor --python, exec's refusal, and
 * use/install --for.
 */
#include <stdbool.h>
#include <stddef.h>

#include "context.h"
#include "findings.h"
#include "json.h"
#include "version.h"

/* What one framework needs. */
struct cvm_fw {
	char name[64];			/* the distribution, as its metadata names it: "torch" */
	char version[64];		/* its version, "" when unknown */
	char requires[192];		/* the pin or range as written, or the table's entry */
	const char *rule;		/* the rule it applies, in words */
	int major;			/* the cuDNN major it needs (0: unknown) */
	struct cvm_version min;		/* the oldest it takes (n 0: none) */
	struct cvm_version below;	/* exclusive upper bound (n 0: none) */
	/* Its own copy's folder (host path), loaded before any other; "" when none. */
	char bundled[4096];
};

#define CVM_PYENV_SITES 4

/* One Python environment. Paths are host paths (with the root in front). */
struct cvm_pyenv {
	char python[4096];		/* as given (inside the root) */
	char prefix[4096];		/* the environment's folder */
	char site[CVM_PYENV_SITES][4096];	/* its site-packages folders */
	size_t nsite;
	char copy[4096];		/* the folder of its own cuDNN (wheel or conda), "" when none */
	char copy_version[64];		/* that copy's version from its metadata, "" when unknown */
	const char *copy_kind;		/* "wheel" or "conda" */
	struct cvm_fw *fw;		/* the frameworks found, in the order read */
	size_t n, cap;
};

/*
 * Reads the environment of python (a path inside root: an interpreter, or
 * the environment's folder): its prefix, site-packages and frameworks into
 * e (release with cvm_pyenv_release). 0; -CVM_E_NOTFOUND said as
 * "<opt> 'PY': ..." when no site-packages is found there; -ENOMEM.
 */
int cvm_pyenv_read(const char *root, const char *opt, const char *python, struct cvm_pyenv *e);
void cvm_pyenv_release(struct cvm_pyenv *e);

/*
 * The environments doctor looks at without --python: python3 on PATH, the
 * active VIRTUAL_ENV and CONDA_PREFIX, ~/.conda/envs/<name>, /opt/conda/envs/
 * <name> (all under root), as paths inside root (malloc'd: cvm_strv_free).
 * 0 or -ENOMEM.
 */
int cvm_pyenv_discover(const char *root, char ***pys, size_t *n);

/*
 * The interpreter a command runs (a python by its name, or a script whose
 * shebang names one, found through PATH as exec would), into out (host
 * path). 0, or -CVM_E_NOTFOUND when cmd is not a Python program.
 */
int cvm_pyenv_of_command(const char *cmd, char *out, size_t len);

/* Whether cuDNN have satisfies f; why (when it does not) as "older", "other major", "newer". */
bool cvm_fw_accepts(const struct cvm_fw *f, const struct cvm_version *have, const char **why);

/* "cuDNN 9.19 or a newer 9.x" (or the range, or "cuDNN 9.x") into buf. */
void cvm_fw_need(const struct cvm_fw *f, char *buf, size_t len);

/*
 * doctor --python: each framework of each environment (pys, paths inside
 * ctx->root; NULL: cvm_pyenv_discover's), what it needs, the copy it would
 * load and why, a problem (with its fix) into f when that copy cannot serve
 * it; with json, doc's "frameworks" list. 0, or < 0 (printed) when a given
 * --python is no environment.
 */
int cvm_frameworks_doctor(struct cvm_ctx *ctx, struct cvm_findings *f, cvm_json *json,
			  char *const *pys, size_t npy);

/*
 * exec's check: when cmd is a Python program whose environment holds a
 * framework that cuDNN id (an installed id) cannot serve, -CVM_E_CONFLICT
 * naming them (exit 1); with force, a warning and 0. 0 otherwise.
 */
int cvm_frameworks_exec_check(const char *cmd, const char *id, bool force);

/*
 * use/install --for PY: the newest of versions (n full versions) that
 * satisfies every framework of python's environment, its index into *pick.
 * -CVM_E_CONFLICT said when two frameworks disagree (naming them),
 * -CVM_E_NOTFOUND said when none of versions serves them (what is needed,
 * what there is: what), or when the environment has no framework.
 */
int cvm_frameworks_pick(const char *root, const char *python, const struct cvm_version *versions,
			size_t n, const char *what, size_t *pick);

/*
 * use --for: the newest installed id for cuda_major that python's frameworks
 * all take (cvm_frameworks_pick), into id. 0 or a negative code (said).
 */
int cvm_frameworks_installed(struct cvm_ctx *ctx, const char *python, int cuda_major, char *id,
			     size_t len);

/*
 * install --for: the newest catalogue release with a build for cuda_major
 * and platform (NULL: this host's) that they all take, its label into spec.
 */
int cvm_frameworks_release(struct cvm_ctx *ctx, const char *python, int cuda_major,
			   const char *platform, char *spec, size_t len);

#endif
