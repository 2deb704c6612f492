/* SPDX-License-Identifier: MIT */
/*
 * which: the cuDNN library file a program of a toolkit loads, and why (like
 * `pyenv which`), by doctor's reasoning. A reader: never locks.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "activate.h"
#include "cli.h"
#include "compat.h"
#include "cudnn.h"
#include "doctor.h"
#include "error.h"
#include "fsutil.h"
#include "json.h"
#include "out.h"
#include "toolkit.h"

/* The path as the user knows it (inside the root). */
static const char *inside(const struct cvm_ctx *ctx, const char *host)
{
	return cvm_root_inside(ctx->root, host);
}

static void explain(const struct cvm_ctx *ctx, const struct cvm_which *w, const char *cuda,
		    char *buf, size_t len)
{
	const char *name = inside(ctx, w->name);

	/* Windows says the whole why itself (the DLL search order's place and folder). */
	if (w->reason[0])
		snprintf(buf, len, "%s", w->reason);
	else if (!strcmp(w->why, "LD_LIBRARY_PATH"))
		snprintf(buf, len, "LD_LIBRARY_PATH comes first and holds %s", name);
	else if (!strcmp(w->why, "active link"))
		snprintf(buf, len, "%s is cudnnvm's link through %s/active/cuda-%s (%s)", name,
			 ctx->store.display, cuda, *w->id ? w->id : "?");
	else if (!strcmp(w->why, "toolkit lib64"))
		snprintf(buf, len, "%s is the toolkit's own copy, not managed by cudnnvm "
			 "(see 'cudnnvm adopt')", name);
	else
		snprintf(buf, len, "the loader cache (ldconfig) names %s", name);
}

int cvm_cmd_which(struct cvm_ctx *ctx, int argc, char **argv)
{
	struct cvm_toolkit tk = { 0 };
	struct cvm_which w;
	const char *cuda_arg = NULL;
	char cuda[16], reason[8400], name[48];
	cvm_json *doc = NULL;
	int r;

	r = cvm_cli_cuda_only("which", argc, argv, &cuda_arg);
	if (r < 0)
		return r;
	if (optind != argc)
		return cvm_usage_unexpected("which", argv);
	r = cvm_toolkit_select(ctx->root, cuda_arg, &tk);
	if (r < 0)
		return r;
	cvm_toolkit_name(&tk, cuda, sizeof(cuda));
	r = cvm_doctor_which(ctx, &tk, &w);
	/* The major the toolkit's headers or active version say; 0: nothing says, any was looked for. */
	if (w.major)
		cvm_cudnn_main_name(w.major, name, sizeof(name));
	else
		snprintf(name, sizeof(name), CVM_WINDOWS ? "cudnn64_N.dll of any major (7 to 9)"
			 : "libcudnn.so.N of any major (7 to 9)");
	if (r == -CVM_E_NOTFOUND)
		r = cvm_err(r, CVM_WINDOWS ? "a program using CUDA %s (%s) finds no %s: not in System32, "
			    "the Windows folder or any entry of the PATH a program started now gets (see "
			    "'cudnnvm use')" : "a program using CUDA %s (%s) finds no %s: not on "
			    "LD_LIBRARY_PATH, in the toolkit, or in the loader cache (see 'cudnnvm use')",
			    cuda, cvm_safe(tk.display), name);
	if (r < 0)
		goto out;
	explain(ctx, &w, cuda, reason, sizeof(reason));
	if (!cvm_out.json) {
		/* The file alone on the first line, even with -q, for "$(cudnnvm -q which)". */
		printf("%s\n", cvm_safe(inside(ctx, w.library)));
		cvm_info("  %s", cvm_safe(reason));
		goto out;
	}
	doc = cvm_json_object();
	if (!doc) {
		r = -ENOMEM;
		goto out;
	}
	cvm_json_set(doc, "cuda", cvm_json_string(cuda));
	cvm_json_set(doc, "toolkit", cvm_json_string(tk.display));
	cvm_json_set(doc, "library", cvm_json_string(inside(ctx, w.library)));
	cvm_json_set(doc, "name", cvm_json_string(inside(ctx, w.name)));
	cvm_json_set(doc, "why", cvm_json_string(w.why));
	cvm_json_set(doc, "reason", cvm_json_string(reason));
	cvm_json_set(doc, "id", cvm_json_string(*w.id ? w.id : NULL));
	r = cvm_json_print(doc);
out:
	cvm_json_free(doc);
	cvm_toolkit_release(&tk);
	return r;
}
