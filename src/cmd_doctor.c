/* SPDX-License-Identifier: MIT */
/* doctor: every cuDNN the system has, which one programs load, and what is wrong. */
#include <getopt.h>
#include <stdio.h>

#include "cli.h"
#include "doctor.h"
#include "error.h"
#include "json.h"
#include "out.h"

int cvm_cmd_doctor(struct cvm_ctx *ctx, int argc, char **argv)
{
	static const struct option opts[] = { CVM_COMMON_LONGOPTS, { NULL, 0, NULL, 0 } };
	cvm_json *doc = NULL;
	int r;

	if (cvm_cli_getopt(argc, argv, opts) != -1)
		return cvm_usage_bad_option("doctor", argv);
	if (optind != argc)
		return cvm_usage_unexpected("doctor", argv);
	if (cvm_out.json)
		doc = cvm_json_object();
	r = cvm_doctor_run(ctx, doc);
	if (doc) {
		cvm_json_print(doc);
		cvm_json_free(doc);
	}
	/* 1: something needs fixing (the findings say what); not an error of doctor's own. */
	return r;
}
