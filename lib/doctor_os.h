/* SPDX-License-Identifier: MIT */
#ifndef CUDNNVM_DOCTOR_OS_H
#define CUDNNVM_DOCTOR_OS_H

/*
 * Between doctor's one sequence (doctor.c: the copies, the store, the
 * driver, each copy, each toolkit, the summary, as text or JSON) and its
 * platform part, as activate.c's backend: doctor_linux.c (the loader's
 * order: LD_LIBRARY_PATH, the toolkit's lib folder, ldconfig's cache; ELF
 * libraries and their links) and doctor_win.c (the DLL search order:
 * System32, the Windows folder, PATH; junctions and version resources).
 * Nothing here is for callers outside doctor: they have doctor.h.
 */
#include <stdbool.h>
#include <stddef.h>

#include "context.h"
#include "findings.h"
#include "json.h"
#include "toolkit.h"

/* One cuDNN copy found: a folder holding the main library (Windows: or headers alone). */
struct cvm_doctor_copy {
	char dir[4096];		/* the folder: Linux, a host path; Windows, as Windows writes it */
	char real[4096];	/* what its main library resolves to: its identity */
	char where[64];		/* "store", "CUDA 12.4 toolkit", "LD_LIBRARY_PATH", "PATH", ... */
	int major;		/* of the library's name (soname, cudnn64_N.dll); 0: headers alone */
	unsigned long header;	/* CUDNN_VERSION of the headers beside it, 0 when none */
	unsigned long library;	/* the library's own version when known, else 0 */
	unsigned long cudart;	/* the CUDA runtime it reports (Linux; Windows never loads it: 0) */
	bool managed;		/* the store's */
	bool untrusted;		/* Linux: not loaded, another user could have written it */
	bool empty;		/* Windows: a DLL of 0 bytes */
	int cuda_major;		/* Windows: of the build, from its store id, else 0 */
	char dll[64];		/* Windows: "cudnn64_9.dll"; "" for headers alone */
	char id[160];		/* Windows: the store's version it is, or "" */
	char resource[48];	/* Windows: the DLL's version resource as read, "" when none */
};

/*
 * A copy's line of the listing as columns (cvm_doctor_line_add), which the
 * listing aligns over all copies: the widths follow what was found (a
 * version such as 8.6.17.163), the last column is not padded.
 */
#define CVM_DOCTOR_COLS 8
struct cvm_doctor_line {
	size_t n;
	size_t at[CVM_DOCTOR_COLS];	/* where each column starts in text */
	char text[4096 + 512];
};

/* Appends a column (cut short when text is full, dropped past CVM_DOCTOR_COLS). */
void cvm_doctor_line_add(struct cvm_doctor_line *l, const char *s);

/* The platform's own state for one run (the loader cache; the PATHs): its begin's, its release's. */
struct cvm_doctor_os_state;

/* One run of doctor. */
struct cvm_doctor_report {
	struct cvm_ctx *ctx;
	struct cvm_doctor_copy *c;	/* in the order found; each real once */
	size_t n, cap;
	struct cvm_findings f;
	struct cvm_doctor_os_state *os;
};

/*
 * The platform part: each hook is called once per run, in the order listed,
 * unless it says otherwise; NULL where the platform has nothing to do.
 */
struct cvm_doctor_os {
	/* The text's words after "NVIDIA driver: " when none is found. */
	const char *no_driver;
	/* The problem of a driver too old for a build: takes what (a string), the build's CUDA
	 * major (int), the driver it needs and the one found (strings), in that order. */
	const char *driver_problem;
	/* Before the toolkits are looked for: sets rp->os up; 0 or -ENOMEM (nothing else printed). */
	int (*begin)(struct cvm_doctor_report *rp);
	/* Every copy of the system (cvm_doctor_copy_add), toolkits t[nt] included. */
	void (*find)(struct cvm_doctor_report *rp, const struct cvm_toolkit *t, size_t nt);
	/* path as its user knows it (in buf, or path itself): inside the root; with '\'. Any time. */
	const char *(*shown)(const struct cvm_doctor_report *rp, const char *path, char *buf, size_t len);
	/* Per copy, listing it: with o, the JSON fields after the shared ones; else its text columns. */
	void (*row)(const struct cvm_doctor_report *rp, const struct cvm_doctor_copy *c, cvm_json *o,
		    struct cvm_doctor_line *line);
	/* The driver's version into drv ("" when none; drv starts ""). */
	void (*driver)(char *drv, size_t len);
	/* Per copy, the checks of the copy alone, and the driver against what it needs. */
	void (*check_copy)(struct cvm_doctor_report *rp, const struct cvm_doctor_copy *c, const char *drv);
	/* Before the toolkits: what the reader needs to read them (text only). */
	void (*intro)(struct cvm_doctor_report *rp, size_t nt, cvm_json *json);
	/* Per toolkit: which copy its programs load and why, into jt when JSON. */
	void (*check_toolkit)(struct cvm_doctor_report *rp, const struct cvm_toolkit *tk, const char *drv,
			      cvm_json *jt);
	/* After the toolkits: what the system runs now (GPUs, processes). */
	void (*end)(struct cvm_doctor_report *rp, const struct cvm_toolkit *t, size_t nt, cvm_json *json);
	/* Frees rp->os (may be NULL: begin failed). */
	void (*release)(struct cvm_doctor_report *rp);
};

/* This platform's part (doctor_linux.c, doctor_win.c). */
const struct cvm_doctor_os *cvm_doctor_os(void);

/* The copy whose identity is real (case ignored on Windows), or NULL. */
struct cvm_doctor_copy *cvm_doctor_copy_find(const struct cvm_doctor_report *rp, const char *real);

/*
 * A new copy of rp (zeroed, real and where set), NULL when real is known
 * already or memory ran out: a copy is listed once, where it is first found.
 */
struct cvm_doctor_copy *cvm_doctor_copy_add(struct cvm_doctor_report *rp, const char *real,
					    const char *where);

/* An encoded cuDNN version as text; 0 (unknown) is "?" on Linux, "-" on Windows. */
void cvm_doctor_version_str(unsigned long v, char *buf, size_t len);

/*
 * CUDNN_VERSION of the first of dir/rel[i] (each a printf format of arg:
 * Debian's headers have the triplet in their path) that has one, encoded,
 * or 0 when none does.
 */
unsigned long cvm_doctor_header(const char *dir, const char *const *rel, size_t n, const char *arg);

/*
 * A problem (the platform's driver_problem) when drv is a driver older than
 * what a build for cuda_major needs (cvm_doctor_min_driver); nothing when drv
 * is "" or the major has no figure. what names the build.
 */
void cvm_doctor_check_driver(struct cvm_doctor_report *rp, const char *drv, int cuda_major,
			     const char *what);

#endif
