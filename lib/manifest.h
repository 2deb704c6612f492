/* SPDX-License-Identifier: MIT */
#ifndef CUDNNVM_MANIFEST_H
#define CUDNNVM_MANIFEST_H

/*
 * The catalogue: NVIDIA's redistrib_*.json release manifests (and files of
 * several releases keyed by label, as spack-only-releases.json), loaded into
 * typed structs. Both platform shapes are accepted: nested
 * ({"linux-x86_64": {"cuda12": {...}}}) and flat ({"windows-arm64":
 * {"relative_path": ...}}), where the CUDA major is read from the file name.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "version.h"

struct cvm_build {
	char *platform;			/* "linux-x86_64" */
	int cuda_major;			/* 11, 12, 13 */
	int cuda_minor;			/* -1: any toolkit of the major; 4: only 13.4 and later */
	char cuda_variant[24];		/* as NVIDIA names it: "13", or "13.4" (a flat "_cuda13.4") */
	bool jit;			/* cudnn_jit (the Graph JIT library, 9.12+), not cudnn */
	char *relative_path;		/* below the mirror */
	char *file_name;		/* last part of relative_path */
	char sha256[65];		/* lowercase hex */
	uint64_t size;			/* bytes; valid when has_size */
	bool has_size;
	struct cvm_version version;	/* full version of this build, from the file name */
	char version_str[32];
};

struct cvm_release {
	char *label;			/* "8.9.7" */
	struct cvm_version label_v;
	char *release_date;		/* may be NULL */
	char *source;			/* manifest file name it came from */
	bool low_trust;			/* no sizes (spack table) */
	struct cvm_build *builds;
	size_t nbuilds;
	size_t builds_cap;		/* builds' allocated count (cvm_grow) */
};

struct cvm_catalogue {
	struct cvm_release *rel;	/* sorted, newest first */
	size_t n;
	size_t cap;			/* rel's allocated count (cvm_grow) */
};

/*
 * Loads the manifests compiled into the binary, then every redistrib_*.json
 * and *releases.json file of extra_dir (may be NULL). A release label seen
 * twice is taken from the later file. Errors name the file and the key.
 * 0, -CVM_E_MANIFEST, -errno. cat is cleared first; free with _release.
 */
int cvm_catalogue_load(struct cvm_catalogue *cat, const char *extra_dir);

/*
 * Adds every redistrib_*.json and *releases.json of dir (checked as
 * cvm_catalogue_load checks extra_dir); a label already there is replaced.
 * Not sorted: cvm_catalogue_sort after. 0 or negative (printed).
 */
int cvm_catalogue_add_dir(struct cvm_catalogue *cat, const char *dir);

/* Adds the release(s) of one document (name is used in messages). */
int cvm_catalogue_add_buf(struct cvm_catalogue *cat, const char *name,
			  const char *buf, size_t len);
/* Sorts newest first; called by _load, needed after _add_buf. */
void cvm_catalogue_sort(struct cvm_catalogue *cat);
void cvm_catalogue_release(struct cvm_catalogue *cat);

/*
 * Resolves spec ("9", "8.9", "8.9.7", "8.9.7.29") to the newest release
 * that matches and has a cudnn build for cuda_major on platform; of a
 * release's variants for that major, the newest one the toolkit's
 * cuda_minor takes (cuda13.4 from 13.4 on; cuda_minor < 0: "13" only). On failure prints
 * one line naming what exists instead ("cuDNN 8.6.0 has no build for CUDA 12
 * (linux-x86_64); builds exist for CUDA 10, 11") and returns -CVM_E_NOTFOUND,
 * or -CVM_E_VERSION for a malformed spec. Pointers borrow from cat.
 */
int cvm_catalogue_resolve(const struct cvm_catalogue *cat, const char *spec,
			  int cuda_major, int cuda_minor, const char *platform,
			  const struct cvm_release **rel, const struct cvm_build **build);

/* The store id a build installs as: "<version>-cuda<variant>-<platform>" (cvm_store_id's form). */
int cvm_build_id(const struct cvm_build *b, char *buf, size_t len);

/* The cudnn build of rel for (cuda_major, platform), the whole major's variant, or NULL. */
const struct cvm_build *cvm_release_build(const struct cvm_release *rel,
					  int cuda_major, const char *platform);

/*
 * The host's platform name: "linux-x86_64", "linux-sbsa", "linux-aarch64"
 * (a Jetson: ROOT/etc/nv_tegra_release exists), or NULL if unknown.
 */
const char *cvm_host_platform(void);

/* The --root under which cvm_host_platform looks for a Jetson's release file ("" or NULL: /). */
void cvm_host_root(const char *root);

#endif
