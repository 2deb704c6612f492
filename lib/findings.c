/* SPDX-License-Identifier: MIT */
/* What doctor found, as text or JSON (findings.h): one voice for both platforms' doctors. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "findings.h"
#include "fsutil.h"
#include "out.h"
#include "store.h"

void cvm_findings_init(struct cvm_findings *f, cvm_json *json)
{
	*f = (struct cvm_findings){ 0 };
	if (!json)
		return;
	f->jproblems = cvm_json_array();
	f->junchecked = cvm_json_array();
	cvm_json_set(json, "problems", f->jproblems);
	cvm_json_set(json, "not_checked", f->junchecked);
}

void cvm_findings_vproblem(struct cvm_findings *f, const char *fix, const char *fmt, va_list ap)
{
	char msg[1024];

	vsnprintf(msg, sizeof(msg), fmt, ap);
	f->problems++;
	if (f->jproblems) {
		cvm_json *o = cvm_json_object();
		cvm_json_set(o, "problem", cvm_json_string(msg));
		cvm_json_set(o, "fix", cvm_json_string(fix));
		cvm_json_append(f->jproblems, o);
	} else if (cvm_out.verbosity < 0) {
		/* -q: the problems, and nothing else. */
		cvm_print("problem: %s\n    fix: %s", msg, fix);
	} else {
		cvm_info("  problem: %s\n      fix: %s", msg, fix);
	}
}

void cvm_findings_problem(struct cvm_findings *f, const char *fix, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	cvm_findings_vproblem(f, fix, fmt, ap);
	va_end(ap);
}

void cvm_findings_unchecked(struct cvm_findings *f, const char *what, const char *why)
{
	f->unchecked++;
	if (f->junchecked) {
		cvm_json *o = cvm_json_object();
		cvm_json_set(o, "what", cvm_json_string(what));
		cvm_json_set(o, "why", cvm_json_string(why));
		cvm_json_append(f->junchecked, o);
	} else {
		cvm_info("  not checked: %s: %s", what, why);
	}
}

void cvm_findings_summary(const struct cvm_findings *f)
{
	if (f->jproblems)
		return;
	if (f->problems)
		cvm_info("%zu problem%s found", f->problems, f->problems == 1 ? "" : "s");
	else if (f->unchecked)
		cvm_info("no problems found in what was checked (%zu thing%s not checked: see above)",
			 f->unchecked, f->unchecked == 1 ? "" : "s");
	else
		cvm_info("no problems found");
}

/* cvm_findings_store's context: the findings and the store, for the fixes' text. */
struct store_check {
	struct cvm_findings *f;
	struct cvm_store *s;
};

static void active_broken(void *arg, const char *cuda, const char *id, const char *why)
{
	struct store_check *c = arg;
	char fix[512];

	/* id names the version exactly when the link leads to one that is not installed (store.h). */
	if (id[0])
		snprintf(fix, sizeof(fix), "install %s again ('cudnnvm install <its version> --cuda "
			 "%s'), or activate an installed version ('cudnnvm use VERSION --cuda %s')",
			 cvm_safe(id), cuda, cuda);
	else
		snprintf(fix, sizeof(fix), "move it away (cudnnvm does not delete what it did not "
			 "write), then activate an installed version ('cudnnvm use VERSION --cuda %s')",
			 cuda);
	cvm_findings_problem(c->f, fix, "%s/active/cuda-%s is broken: %s%s%s%s: the toolkit's "
			     "cuDNN links lead nowhere", cvm_safe(c->s->display), cuda, why,
			     id[0] ? " (" : "", id[0] ? cvm_safe(id) : "", id[0] ? ")" : "");
}

void cvm_findings_store(struct cvm_findings *f, struct cvm_store *s)
{
	struct store_check c = { .f = f, .s = s };
	char **ids = NULL, fix[512], path[4200];
	size_t n = 0;

	if (cvm_active_each_broken(s, active_broken, &c) < 0)
		cvm_findings_unchecked(f, "the store's active links", "its active folder cannot be read");
	if (cvm_store_list(s, &ids, &n) < 0) {
		cvm_findings_unchecked(f, "the installed versions' owners and modes",
				       "the store's versions folder cannot be read");
		return;
	}
	for (size_t i = 0; i < n; i++) {
		struct cvm_store_first first = { .n = 0 };

		if (cvm_store_check_version(s, ids[i], cvm_store_first, &first) <= 0)
			continue;
		snprintf(path, sizeof(path), "%s/versions/%s%s%s", s->display, ids[i],
			 strcmp(first.rel, ".") ? "/" : "", strcmp(first.rel, ".") ? first.rel : "");
		snprintf(fix, sizeof(fix), "%s, or reinstall it ('cudnnvm install %s --force'); "
			 "'cudnnvm verify %s' lists every difference",
			 first.mount ? "unmount it" : "make it root's and not writable "
			 "by others again (chown, chmod go-w, chmod -s)", cvm_safe(ids[i]),
			 cvm_safe(ids[i]));
		cvm_findings_problem(f, fix, "%s: %s%s: the smoke test of 'cudnnvm use' does not load "
				     "what another user could have changed", cvm_safe(path), first.why,
				     first.n > 1 ? " (and more in the same version)" : "");
	}
	cvm_strv_free(ids, n);
}
