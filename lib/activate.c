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

#include "activate.h"
#include "closure.h"
#include "error.h"
#include "fault.h"
#include "fsutil.h"
#include "journal.h"
#include "out.h"
#include "plan.h"
#include "record.h"
#include "store.h"
#include "smoke.h"

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
	r = cvm_do_mkdir_at(s->plan, s->fd, "active", 0755, dir);
	if (r < 0)
		return r;
	if (to)
		r = cvm_do_symlink_replace_at(s->plan, s->fd, target, name, shown);
	else
		r = cvm_do_unlink_at(s->plan, s->fd, name, shown);
	if (r == 0) {
		int fd = openat(s->fd, "active", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (fd >= 0) {
			r = cvm_fsync_dir(fd);
			close(fd);
		}
	}
	return r;
}

/*
 * The switch itself, without the smoke check. *switched: the active link
 * (or, for adopt, the toolkit) was changed, so a later error must undo it.
 */
static int do_switch(struct cvm_ctx *ctx, const struct cvm_toolkit *tk, const char *cuda,
		     const char *from, const char *to, const struct cvm_activate_opts *o,
		     bool *switched)
{
	const struct cvm_backend *be = cvm_backend();
	struct cvm_switch sw = {
		.store = &ctx->store, .root = ctx->root, .tk = tk, .cuda = cuda,
		.from = from, .to = to, .no_ldconfig = o->no_ldconfig, .user = ctx->user,
		.adopt = o->adopt,
		.files = o->files, .nfiles = o->nfiles, .untouched = o->untouched,
	};
	bool adopt_again = o->adopt && from && to && !strcmp(from, to);
	bool journaled = !o->no_journal && !adopt_again &&
			 ((from ? from : "")[0] || (to ? to : "")[0]) && (!from || !to || strcmp(from, to));
	int r;

	*switched = false;
	/*
	 * Announced before anything changes: a crash before the journal line is
	 * then repaired by the next locked command (cvm_activate_repair).
	 */
	if (journaled) {
		r = cvm_journal_pending_set(&ctx->store, cuda, o->kind, from, to, o->argc, o->argv);
		if (r < 0)
			return r;
	}
	/*
	 * adopt turns files into links through active/: that link must exist
	 * before the first one, or an interrupted adopt would leave dangling links.
	 */
	if (to && o->adopt) {
		r = set_active(&ctx->store, cuda, to);
		if (r < 0)
			return cvm_err(r, "cannot switch '%s/active/cuda-%s': %s",
				       cvm_safe(ctx->store.display), cuda, cvm_strerror(-r));
	}
	r = be->prepare(&sw);
	if (r < 0 && journaled)
		cvm_journal_pending_clear(&ctx->store, cuda);
	if (r < 0)
		return r;
	cvm_fault("use-prepared");
	if (to && !o->adopt) {
		r = set_active(&ctx->store, cuda, to);
		if (r < 0)
			return cvm_err(r, "cannot switch '%s/active/cuda-%s': %s",
				       cvm_safe(ctx->store.display), cuda, cvm_strerror(-r));
		*switched = true;
		cvm_fault("use-switched");
	}
	r = be->finish(&sw);
	*switched = true;
	if (r < 0)
		return r;
	if (!to) {
		r = set_active(&ctx->store, cuda, NULL);
		if (r < 0)
			return cvm_err(r, "cannot remove '%s/active/cuda-%s': %s",
				       cvm_safe(ctx->store.display), cuda, cvm_strerror(-r));
	}
	cvm_fault("use-finished");
	if (adopt_again) {
		/* A second adopt run finishing the first: its journal line may not be written yet. */
		struct cvm_journal_entry *e = NULL;
		size_t n = 0;
		if (cvm_journal_read(&ctx->store, cuda, false, &e, &n) == 0 &&
		    !(n && !strcmp(e[n - 1].kind, "adopt") && !strcmp(e[n - 1].to, to)))
			r = cvm_journal_append(&ctx->store, cuda, "adopt", NULL, to, o->argc, o->argv);
		free(e);
	} else if (journaled) {
		r = cvm_journal_append(&ctx->store, cuda, o->kind, from, to, o->argc, o->argv);
		if (r == 0)
			cvm_journal_pending_clear(&ctx->store, cuda);
	}
	return r;
}

/*
 * The record must be whole, and every object of the version what install
 * made and trusted by the rule the smoke test loads by (the check verify
 * and doctor make), before anything switches to it: --no-smoke must not
 * publish into a toolkit a library that another user could change.
 */
static int check_record(struct cvm_ctx *ctx, const char *id)
{
	struct cvm_store_first bad = { .n = 0 };
	struct cvm_record rec;
	int fd, r;

	fd = cvm_store_open_version(&ctx->store, id);
	if (fd < 0)
		return cvm_err(fd, "cannot open %s: %s", cvm_safe(id), cvm_strerror(-fd));
	r = cvm_record_read(fd, id, &rec);
	close(fd);
	if (r < 0)
		return r;
	if (strcmp(rec.id, id))
		r = cvm_err(-CVM_E_INTEGRITY, "the record of %s names another version (%s): "
			    "reinstall it with 'cudnnvm install --force'", cvm_safe(id), cvm_safe(rec.id));
	cvm_record_release(&rec);
	if (r < 0)
		return r;
	r = cvm_store_check_version(&ctx->store, id, cvm_store_first, &bad);
	if (r > 0)
		return cvm_err(-CVM_E_INTEGRITY, "refusing to activate %s: %s%s%s: %s%s; nothing changed: "
			       "'cudnnvm verify %s' lists every difference, 'cudnnvm install %s "
			       "--force' installs it again", cvm_safe(id), strcmp(bad.rel, ".") ? "'" : "",
			       strcmp(bad.rel, ".") ? cvm_safe(bad.rel) : "its folder",
			       strcmp(bad.rel, ".") ? "' in it" : "", bad.why,
			       bad.n > 1 ? " (and more)" : "", cvm_safe(id), cvm_safe(id));
	if (r < 0)
		return cvm_err(r, "cannot check %s: %s", cvm_safe(id), cvm_strerror(-r));
	return 0;
}

int cvm_activate_repair(struct cvm_ctx *ctx)
{
	int r = cvm_journal_repair(&ctx->store, cvm_active_get);

	if (r < 0)
		cvm_warn("cannot bring the activation journal in line with the active links: %s",
			 cvm_strerror(r));
	return r;
}

int cvm_activate(struct cvm_ctx *ctx, const struct cvm_toolkit *tk, const char *to,
		 const struct cvm_activate_opts *opts)
{
	char cuda[16], from[160];
	const char *prev, *back_to;
	bool switched = false, undo_journaled;
	struct cvm_activate_opts back, mine = *opts;
	const struct cvm_activate_opts *o = &mine;
	size_t untouched = 0;
	int r;

	mine.untouched = &untouched;
	cvm_toolkit_name(tk, cuda, sizeof(cuda));
	prev = cvm_active_get(&ctx->store, cuda, from, sizeof(from)) == 0 ? from : NULL;
	/* A dry adopt's version is not in the store yet: the copy would write its record. */
	if (to && !o->files) {
		r = check_record(ctx, to);
		if (r == 0 && o->closure)
			r = cvm_closure_use(ctx, tk, to, o->force);
		if (r < 0)
			return r;
	}
	r = do_switch(ctx, tk, cuda, prev, to, o, &switched);
	if (opts->untouched)
		*opts->untouched = untouched;
	/* Each was named: the admin's patch stays, and the smoke test judges what loads now. */
	if (r == 0 && untouched)
		cvm_warn("CUDA %s: %zu path%s in the toolkit left as found (named above: not the "
			 "link%s cudnnvm wrote); %s", cuda, untouched, untouched == 1 ? "" : "s",
			 untouched == 1 ? "" : "s", to ? "the rest of the switch was made" :
			 "the rest was removed");
	/*
	 * Failed after the switch (the journal, ldconfig): undone, and nothing
	 * journaled. Re-linking the version already active changed no version:
	 * there is nothing to undo.
	 */
	undo_journaled = false;
	if (r < 0 && (!switched || o->adopt || (prev && to && !strcmp(prev, to))))
		return r;
	if (r == 0 && (!to || o->no_smoke))
		return 0;
	/* It loads what the switch made: a dry run made none. */
	if (r == 0 && cvm_plan_describe(&ctx->plan, "run the smoke test of", to, NULL, "for CUDA %s (a failure "
					"%s)", cuda, prev && strcmp(prev, to) ?
					"puts the previous version back" : "deactivates it"))
		return 0;
	if (r == 0) {
		struct cvm_smoke_opts so = { .device = -1 };
		r = cvm_smoke_run(ctx, tk, to, &so, o->smoke);
		if (r == -CVM_E_SKIPPED) {
			cvm_info("  (no usable GPU here: the loader part passed, the convolution was skipped)");
			return 0;
		}
		if (r == 0)
			return 0;
		/* The switch is in the journal: so is its undoing. */
		undo_journaled = true;
	}
	/* A version that does not load, or a switch that failed half-way, is not left active. */
	back = *o;
	back.kind = "rollback";
	back.no_smoke = true;
	back.adopt = false;
	back.no_journal = !undo_journaled;
	back.untouched = NULL;
	back_to = prev && (!to || strcmp(prev, to)) ? prev : NULL;
	if (back_to)
		cvm_warn("putting %s back for CUDA %s", back_to, cuda);
	else if (to)
		cvm_warn("deactivating %s for CUDA %s", to, cuda);
	if (do_switch(ctx, tk, cuda, to, back_to, &back, &switched) < 0)
		cvm_warn("the rollback failed too: run 'cudnnvm use' with a working version");
	else if (back.no_journal)
		cvm_journal_pending_clear(&ctx->store, cuda);
	return r;
}
