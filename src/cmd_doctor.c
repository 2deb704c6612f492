/* SPDX-License-Identifier: MIT */
/* doctor: every cuDNN the system has, which one programs load, and what is wrong. */
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <stdio.h>

#include "cli.h"
#include "doctor.h"
#include "error.h"
#include "json.h"
#include "out.h"

int cvm_cmd_doctor(struct cvm_ctx *ctx, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "python", required_argument, NULL, 'P' },
		CVM_COMMON_LONGOPTS,
		{ NULL, 0, NULL, 0 }
	};
	cvm_json *doc = NULL;
	char **pys = NULL;
	size_t npy = 0;
	int c, r;

	/* --python PY, repeatable: only those environments' frameworks are checked. */
	pys = calloc((size_t)argc + 1, sizeof(*pys));
	if (!pys)
		return -ENOMEM;
	while ((c = cvm_cli_getopt(argc, argv, opts)) != -1) {
		if (c != 'P') {
			free(pys);
			return cvm_usage_bad_option("doctor", argv);
		}
		if (!*optarg) {
			free(pys);
			return cvm_usage("doctor", "--python needs a path to a Python interpreter or environment");
		}
		pys[npy++] = optarg;
	}
	if (optind != argc) {
		free(pys);
		return cvm_usage_unexpected("doctor", argv);
	}
	if (cvm_out.json)
		doc = cvm_json_object();
	r = cvm_doctor_run(ctx, doc, npy ? pys : NULL, npy);
	free(pys);
	if (doc) {
		cvm_json_print(doc);
		cvm_json_free(doc);
	}
	/* 1: something needs fixing (the findings say what); not an error of doctor's own. */
	return r;
}
