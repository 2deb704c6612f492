/* SPDX-License-Identifier: MIT */
#ifndef CUDNNVM_FINDINGS_H
#define CUDNNVM_FINDINGS_H

/*
 * What doctor found, told the same way on both platforms (doctor.c over
 * doctor_linux.c or doctor_win.c): each problem with its fix, each thing it
 * could not check with the reason (so that "no problems" means what it
 * says), and the closing line. As text on stderr (-q: the problems alone,
 * on stdout), or into the JSON document's "problems" and "not_checked".
 */
#include <stdarg.h>
#include <stddef.h>

#include "json.h"

struct cvm_findings {
	size_t problems, unchecked;
	cvm_json *jproblems, *junchecked;	/* borrowed from the document; NULL: text */
};

/* Starts f; with json, adds its "problems" and "not_checked" arrays to it. */
void cvm_findings_init(struct cvm_findings *f, cvm_json *json);

/* One problem: what is wrong (printf format) and how to fix it. */
void cvm_findings_problem(struct cvm_findings *f, const char *fix, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
void cvm_findings_vproblem(struct cvm_findings *f, const char *fix, const char *fmt, va_list ap)
	__attribute__((format(printf, 3, 0)));

/* What could not be checked, and why. */
void cvm_findings_unchecked(struct cvm_findings *f, const char *what, const char *why);

struct cvm_store;

/*
 * The store's own state, the same on both platforms: each entry of
 * STORE/active/ that is not the link use writes to an installed version
 * (cvm_active_check), and each installed version with an object that
 * fails the rule of cvm_store_check_version (the first one named), as
 * problems with their fixes.
 */
void cvm_findings_store(struct cvm_findings *f, struct cvm_store *s);

/* The closing line (text only): how many problems, or that there are none in what was checked. */
void cvm_findings_summary(const struct cvm_findings *f);

#endif
