/* SPDX-License-Identifier: MIT */
/*
 * doctor's one sequence, the same on both platforms: the copies found, the
 * store's own state, the driver, each copy, each toolkit, what runs now,
 * the closing line. Where to look and what a program loads is the
 * platform's (doctor_os.h: doctor_linux.c, doctor_win.c).
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "alloc.h"
#include "closure.h"
#include "compat.h"
#include "cudnn.h"
#include "doctor.h"
#include "frameworks.h"
#include "doctor_os.h"
#include "error.h"
#include "fsutil.h"
#include "out.h"
#include "version.h"

struct cvm_doctor_copy *cvm_doctor_copy_find(const struct cvm_doctor_report *rp, const char *real)
{
	for (size_t i = 0; i < rp->n; i++)
		if (!(CVM_WINDOWS ? strcasecmp(rp->c[i].real, real) : strcmp(rp->c[i].real, real)))
			return &rp->c[i];
	return NULL;
}

struct cvm_doctor_copy *cvm_doctor_copy_add(struct cvm_doctor_report *rp, const char *real,
					    const char *where)
{
	struct cvm_doctor_copy *c;

	if (cvm_doctor_copy_find(rp, real) || CVM_GROW(rp->c, rp->n + 1, rp->cap) < 0)
		return NULL;
	c = &rp->c[rp->n++];
	memset(c, 0, sizeof(*c));
	snprintf(c->real, sizeof(c->real), "%s", real);
	snprintf(c->where, sizeof(c->where), "%s", where);
	return c;
}

void cvm_doctor_version_str(unsigned long v, char *buf, size_t len)
{
	struct cvm_version x;

	/* Windows' listing says "-" for what a copy does not have (no headers, no resource). */
	if (!v) {
		snprintf(buf, len, "%s", CVM_WINDOWS ? "-" : "?");
		return;
	}
	cvm_version_decode(v, &x);
	cvm_version_format(&x, buf, len);
}

unsigned long cvm_doctor_header(const char *dir, const char *const *rel, size_t n, const char *arg)
{
	char path[4096], sub[256], *text = NULL;
	struct cvm_version v;
	size_t len;

	for (size_t i = 0; i < n; i++) {
		if (cvm_fmt(sub, sizeof(sub), rel[i], arg) < 0 ||
		    cvm_fmt(path, sizeof(path), "%s/%s", dir, sub) < 0 ||
		    cvm_read_file_at(AT_FDCWD, path, 1 << 20, &text, &len) < 0)
			continue;
		int r = cvm_cudnn_header_version(text, len, &v);
		free(text);
		if (r == 0)
			return cvm_version_encode(&v);
	}
	return 0;
}

static bool older(const char *have, const char *need)
{
	struct cvm_version a, b;

	return cvm_version_parse(have, &a) == 0 && cvm_version_parse(need, &b) == 0 &&
	       cvm_version_cmp(&a, &b) < 0;
}

void cvm_doctor_check_driver(struct cvm_doctor_report *rp, const char *drv, int cuda_major,
			     const char *what)
{
	const char *need = cvm_doctor_min_driver(cuda_major);
	char fix[128];

	if (!drv[0] || !need || !older(drv, need))
		return;
	snprintf(fix, sizeof(fix), "upgrade the NVIDIA driver to %s or newer", need);
	cvm_findings_problem(&rp->f, fix, cvm_doctor_os()->driver_problem, what, cuda_major, need, drv);
}

void cvm_doctor_line_add(struct cvm_doctor_line *l, const char *s)
{
	size_t used = l->n ? l->at[l->n - 1] + strlen(l->text + l->at[l->n - 1]) + 1 : 0;

	if (l->n == CVM_DOCTOR_COLS || used >= sizeof(l->text))
		return;
	l->at[l->n++] = used;
	snprintf(l->text + used, sizeof(l->text) - used, "%s", s);
}

/* A line per copy, each column as wide as its widest. */
static void print_lines(const struct cvm_doctor_report *rp, const struct cvm_doctor_os *os)
{
	struct cvm_doctor_line *l = calloc(rp->n ? rp->n : 1, sizeof(*l));
	int w[CVM_DOCTOR_COLS] = { 0 };
	struct cvm_strbuf sb = { 0 };

	if (!l) {
		cvm_warn("cannot list the copies: %s", cvm_strerror(-ENOMEM));
		return;
	}
	for (size_t i = 0; i < rp->n; i++) {
		os->row(rp, &rp->c[i], NULL, &l[i]);
		for (size_t k = 0; k + 1 < l[i].n; k++)
			if ((int)strlen(l[i].text + l[i].at[k]) > w[k])
				w[k] = (int)strlen(l[i].text + l[i].at[k]);
	}
	for (size_t i = 0; i < rp->n; i++) {
		sb.len = 0;
		if (sb.buf)
			sb.buf[0] = '\0';
		for (size_t k = 0; k < l[i].n; k++)
			cvm_strbuf_addf(&sb, k + 1 < l[i].n ? "%-*s " : "%*s", k + 1 < l[i].n ? w[k] : 0,
					l[i].text + l[i].at[k]);
		cvm_info("  %s", sb.buf ? sb.buf : "");
	}
	cvm_strbuf_release(&sb);
	free(l);
}

/* What was found: a line per copy, or the "copies" array (the platform adds its own fields). */
static void list_copies(const struct cvm_doctor_report *rp, const struct cvm_doctor_os *os,
			cvm_json *jcopies)
{
	char file[4096];

	if (!jcopies) {
		cvm_info("cuDNN copies found: %zu", rp->n);
		print_lines(rp, os);
		return;
	}
	for (size_t i = 0; i < rp->n; i++) {
		const struct cvm_doctor_copy *c = &rp->c[i];
		cvm_json *o;

		o = cvm_json_object();
		cvm_json_set(o, "path", cvm_json_string(os->shown(rp, c->real, file, sizeof(file))));
		cvm_json_set(o, "where", cvm_json_string(c->where));
		cvm_json_set(o, "managed", cvm_json_bool(c->managed));
		cvm_json_set(o, "header_version", cvm_json_integer((int64_t)c->header));
		cvm_json_set(o, "library_version", cvm_json_integer((int64_t)c->library));
		cvm_json_set(o, "cudart_version", cvm_json_integer((int64_t)c->cudart));
		os->row(rp, c, o, NULL);
		cvm_json_append(jcopies, o);
	}
}

/* The driver, said, then against what each copy's build needs. */
static void check_copies(struct cvm_doctor_report *rp, const struct cvm_doctor_os *os,
			 cvm_json *json, char *drv, size_t len)
{
	os->driver(drv, len);
	if (json)
		cvm_json_set(json, "driver", cvm_json_string(drv[0] ? drv : NULL));
	else
		cvm_info("NVIDIA driver: %s", drv[0] ? drv : os->no_driver);
	if (!drv[0])
		cvm_findings_unchecked(&rp->f, "whether the driver is new enough for each copy",
				       "no NVIDIA driver found");
	for (size_t i = 0; i < rp->n; i++)
		os->check_copy(rp, &rp->c[i], drv);
}

int cvm_doctor_run(struct cvm_ctx *ctx, cvm_json *json, char *const *pys, size_t npy)
{
	const struct cvm_doctor_os *os = cvm_doctor_os();
	struct cvm_doctor_report rp = { .ctx = ctx };
	struct cvm_toolkit *t = NULL;
	cvm_json *jcopies = NULL, *jtk = NULL;
	char drv[64] = "";
	size_t nt = 0;
	int r;

	if (json) {
		jcopies = cvm_json_array();
		jtk = cvm_json_array();
		cvm_json_set(json, "copies", jcopies);
		cvm_json_set(json, "toolkits", jtk);
	}
	cvm_findings_init(&rp.f, json);
	r = os->begin(&rp);
	if (r < 0)
		goto out;
	if (cvm_toolkits_find(ctx->root, &t, &nt) < 0)
		nt = 0;
	os->find(&rp, t, nt);
	list_copies(&rp, os, jcopies);
	/* The store itself: its active links, and what its versions are made of. */
	if (ctx->store_open)
		cvm_findings_store(&rp.f, &ctx->store);
	check_copies(&rp, os, json, drv, sizeof(drv));
	/* What each toolkit's cuDNN needs to load and the loader would not find. */
	cvm_closure_doctor(&rp.f, ctx->root, t, nt);
	if (os->intro)
		os->intro(&rp, nt, json);
	for (size_t i = 0; i < nt; i++) {
		cvm_json *o = jtk ? cvm_json_object() : NULL;
		os->check_toolkit(&rp, &t[i], drv, o);
		if (o)
			cvm_json_append(jtk, o);
	}
	os->end(&rp, t, nt, json);
	r = cvm_frameworks_doctor(ctx, &rp.f, json, pys, npy);
	if (r < 0)
		goto out;
	cvm_findings_summary(&rp.f);
	r = rp.f.problems ? 1 : 0;
out:
	cvm_toolkits_free(t, nt);
	os->release(&rp);
	free(rp.c);
	return r;
}
