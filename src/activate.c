/* SPDX-License-Identifier: MIT */
/*
 * The platform-neutral half of activation: the STORE/active/cuda-<X.Y> link,
 * the journal, the smoke check and the automatic rollback. What else a
 * version needs to be seen by programs is the backend's (activate_linux.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cudnnvm/activate.h"
#include "cudnnvm/error.h"
#include "cudnnvm/fault.h"
#include "cudnnvm/fsutil.h"
#include "cudnnvm/journal.h"
#include "cudnnvm/out.h"
#include "cudnnvm/plan.h"
#include "cudnnvm/smoke.h"

void cvm_toolkit_name(const struct cvm_toolkit *tk, char *buf, size_t len)
{
	snprintf(buf, len, "%d.%d", tk->major, tk->minor);
}

int cvm_active_get(struct cvm_store *s, const char *cuda, char *id, size_t len)
{
	char name[64], target[4096];
	ssize_t k;

	if (cvm_fmt(name, sizeof(name), "active/cuda-%s", cuda) < 0)
		return -ENAMETOOLONG;
	k = readlinkat(s->fd, name, target, sizeof(target) - 1);
	if (k < 0)
		return -errno;
	target[k] = '\0';
	if (strncmp(target, "../versions/", 12) || strchr(target + 12, '/'))
		return -ENOENT;
	return cvm_fmt(id, len, "%s", target + 12);
}

bool cvm_ldconfig_wanted(bool no_ldconfig)
{
	const char *e = getenv("CUDNNVM_LDCONFIG");

	return !no_ldconfig && !(e && !*e);
}

static int set_active(struct cvm_store *s, const char *cuda, const char *to)
{
	char name[64], target[256], shown[4096], dir[4096];
	int r;

	r = cvm_fmt(name, sizeof(name), "active/cuda-%s", cuda);
	if (r == 0 && to)
		r = cvm_fmt(target, sizeof(target), "../versions/%s", to);
	if (r == 0)
		r = cvm_fmt(shown, sizeof(shown), "%s/%s", s->display, name);
	if (r == 0)
		r = cvm_fmt(dir, sizeof(dir), "%s/active", s->display);
	if (r < 0)
		return r;
	r = cvm_do_mkdir_at(s->fd, "active", 0755, dir);
	if (r < 0)
		return r;
	if (to)
		r = cvm_do_symlink_replace_at(s->fd, target, name, shown);
	else
		r = cvm_do_unlink_at(s->fd, name, shown);
	if (r == 0) {
		int fd = openat(s->fd, "active", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (fd >= 0) {
			r = cvm_fsync_dir(fd);
			close(fd);
		}
	}
	return r;
}

/* The switch itself, without the smoke check. */
static int do_switch(struct cvm_ctx *ctx, const struct cvm_toolkit *tk, const char *cuda,
		     const char *from, const char *to, const struct cvm_activate_opts *o)
{
	const struct cvm_backend *be = cvm_backend();
	struct cvm_switch sw = {
		.store = &ctx->store, .root = ctx->root, .tk = tk, .cuda = cuda,
		.from = from, .to = to, .no_ldconfig = o->no_ldconfig, .adopt = o->adopt,
		.files = o->files, .nfiles = o->nfiles,
	};
	int r;

	/*
	 * adopt turns files into links through active/: that link must exist
	 * before the first one, or an interrupted adopt would leave dangling links.
	 */
	if (to && o->adopt) {
		r = set_active(&ctx->store, cuda, to);
		if (r < 0)
			return cvm_err(r, "cannot switch '%s/active/cuda-%s': %s",
				       cvm_safe(ctx->store.display), cuda, strerror(-r));
	}
	r = be->prepare(&sw);
	if (r < 0)
		return r;
	cvm_fault("use-prepared");
	if (to && !o->adopt) {
		r = set_active(&ctx->store, cuda, to);
		if (r < 0)
			return cvm_err(r, "cannot switch '%s/active/cuda-%s': %s",
				       cvm_safe(ctx->store.display), cuda, strerror(-r));
		cvm_fault("use-switched");
	}
	r = be->finish(&sw);
	if (r < 0)
		return r;
	if (!to) {
		r = set_active(&ctx->store, cuda, NULL);
		if (r < 0)
			return cvm_err(r, "cannot remove '%s/active/cuda-%s': %s",
				       cvm_safe(ctx->store.display), cuda, strerror(-r));
	}
	cvm_fault("use-finished");
	if (o->adopt && from && to && !strcmp(from, to)) {
		/* A second adopt run finishing the first: its journal line may not be written yet. */
		struct cvm_journal_entry *e = NULL;
		size_t n = 0;
		if (cvm_journal_read(&ctx->store, cuda, &e, &n) == 0 &&
		    !(n && !strcmp(e[n - 1].kind, "adopt") && !strcmp(e[n - 1].to, to)))
			r = cvm_journal_append(&ctx->store, cuda, "adopt", NULL, to, o->argc, o->argv);
		free(e);
	} else if (((from ? from : "")[0] || (to ? to : "")[0]) && (!from || !to || strcmp(from, to))) {
		r = cvm_journal_append(&ctx->store, cuda, o->kind, from, to, o->argc, o->argv);
	}
	return r;
}

int cvm_activate(struct cvm_ctx *ctx, const struct cvm_toolkit *tk, const char *to,
		 const struct cvm_activate_opts *o)
{
	char cuda[16], from[160];
	const char *prev;
	int r;

	cvm_toolkit_name(tk, cuda, sizeof(cuda));
	prev = cvm_active_get(&ctx->store, cuda, from, sizeof(from)) == 0 ? from : NULL;
	r = do_switch(ctx, tk, cuda, prev, to, o);
	if (r < 0 || !to || o->no_smoke)
		return r;
	/* It loads what the switch made: a dry run made none. */
	if (cvm_plan_describe("run the smoke test of", to, NULL, "for CUDA %s (a failure %s)", cuda,
			      prev && strcmp(prev, to) ? "puts the previous version back" :
			      "deactivates it"))
		return 0;
	struct cvm_smoke_opts so = { .device = -1 };
	r = cvm_smoke_run(ctx, tk, to, &so, NULL);
	if (r == -CVM_E_SKIPPED) {
		cvm_info("  (no usable GPU here: the loader part passed, the convolution was skipped)");
		return 0;
	}
	if (r != -CVM_E_SMOKE)
		return r;
	/* A version that does not load is not left active. */
	struct cvm_activate_opts back = *o;
	back.kind = "rollback";
	back.no_smoke = true;
	back.adopt = false;
	if (prev && strcmp(prev, to))
		cvm_warn("putting %s back for CUDA %s", prev, cuda);
	else
		cvm_warn("deactivating %s for CUDA %s", to, cuda);
	if (do_switch(ctx, tk, cuda, to, prev && strcmp(prev, to) ? prev : NULL, &back) < 0)
		cvm_warn("the rollback failed too: run 'cudnnvm use' with a working version");
	return -CVM_E_SMOKE;
}
