/* SPDX-License-Identifier: MIT */
/* What doctor found, as text or JSON (findings.h): one voice for both platforms' doctors. */
#include <stdio.h>

#include "cudnnvm/findings.h"
#include "cudnnvm/out.h"

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
