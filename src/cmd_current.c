/* SPDX-License-Identifier: MIT */
/* current: the active version per toolkit. A reader: never locks. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "activate.h"
#include "cli.h"
#include "error.h"
#include "json.h"
#include "trust.h"
#include "out.h"
#include "store.h"
#include "toolkit.h"

int cvm_cmd_current(struct cvm_ctx *ctx, int argc, char **argv)
{
	struct cvm_toolkit *t = NULL;
	const char *cuda_arg = NULL;
	cvm_json *doc = NULL, *arr = NULL;
	size_t n = 0, shown = 0, nbroken = 0;
	char cuda[16], id[160], ver[64], plat[64], first[16] = "";
	const char *broken, *first_why = NULL;
	int r, major;

	r = cvm_cli_cuda_only("current", argc, argv, &cuda_arg);
	if (r < 0)
		return r;
	if (optind != argc)
		return cvm_usage_unexpected("current", argv);
	if (cuda_arg) {
		t = calloc(1, sizeof(*t));
		if (!t)
			return -ENOMEM;
		r = cvm_toolkit_select(ctx->root, cuda_arg, t);
		if (r < 0) {
			free(t);
			return r;
		}
		n = 1;
	} else {
		r = cvm_toolkits_find(ctx->root, &t, &n);
		if (r < 0)
			return r;
	}
	if (cvm_out.json) {
		doc = cvm_json_object();
		arr = cvm_json_array();
		if (!doc || !arr || cvm_json_set(doc, "active", arr) < 0) {
			cvm_json_free(arr);
			r = -ENOMEM;
			goto out;
		}
	}
	for (size_t i = 0; i < n; i++) {
		cvm_toolkit_name(&t[i], cuda, sizeof(cuda));
		/* What the active link is, not only what it names: a broken one is said (store.h). */
		r = ctx->store_open ? cvm_active_check(&ctx->store, cuda, id, sizeof(id), &broken)
				    : -ENOENT;
		if (r < 0) {
			id[0] = '\0';
			broken = r == -ENOENT ? NULL : cvm_strerror(-r);
		}
		if (!id[0] && !broken && !cuda_arg)
			continue;
		shown++;
		if (broken && !nbroken++) {
			snprintf(first, sizeof(first), "%s", cuda);
			first_why = broken;
		}
		if (id[0] && cvm_store_parse_id(id, ver, sizeof(ver), &major, plat, sizeof(plat)) < 0)
			ver[0] = '\0';
		if (!cvm_out.json) {
			cvm_print("CUDA %-6s %-28s %s%s%s%s", cuda, t[i].display, id[0] ? id : "(none)",
				  broken ? " (broken: " : "", broken ? broken : "", broken ? ")" : "");
			continue;
		}
		cvm_json *o = cvm_json_object();
		cvm_json_set(o, "cuda", cvm_json_string(cuda));
		cvm_json_set(o, "toolkit", cvm_json_string(t[i].display));
		cvm_json_set(o, "id", cvm_json_string(id[0] ? id : NULL));
		cvm_json_set(o, "version", cvm_json_string(id[0] ? ver : NULL));
		/* Only when broken: the documented shape of a working entry stays as it is. */
		if (broken)
			cvm_json_set(o, "broken", cvm_json_string(broken));
		cvm_json_append(arr, o);
	}
	cvm_trust_skipped_json(doc);
	r = 0;
	if (doc)
		r = cvm_json_print(doc);
	else if (!shown)
		cvm_info("no cuDNN is active for any toolkit (see 'cudnnvm use')");
	/* Listed, and not a success: programs of that toolkit find no cuDNN through it. */
	if (r == 0 && nbroken)
		r = cvm_err(-CVM_E_NOTFOUND, "the active link of CUDA %s is broken: %s%s; activate an "
			    "installed version ('cudnnvm use VERSION --cuda %s'), 'cudnnvm doctor' "
			    "says more", first, first_why, nbroken > 1 ? " (and others: see the list)" : "",
			    first);
out:
	cvm_json_free(doc);
	cvm_toolkits_free(t, n);
	return r;
}
