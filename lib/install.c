/* SPDX-License-Identifier: MIT */
/*
 * install: resolve, verify the archive (size, SHA-256) before any byte of it
 * is parsed, extract into staging, check it is the cuDNN it claims to be,
 * record it, and rename it into the store in one step.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "activate.h"
#include "archive.h"
#include "bundle.h"
#include "cache.h"
#include "closure.h"
#include "compat.h"
#include "config.h"
#include "confine.h"
#include "cudnn.h"
#include "digest.h"
#include "entry.h"
#include "error.h"
#include "extract.h"
#include "fault.h"
#include "fsutil.h"
#include "install.h"
#include "journal.h"
#include "json.h"
#include "manifest.h"
#include "update.h"
#include "modulefiles.h"
#include "out.h"
#include "plan.h"
#include "record.h"
#include "release.h"
#include "ccgate.h"
#include "select.h"
#include "store.h"
#include "toolkit.h"
#include "zlibwapi.h"


static void on_hash(void *arg, uint64_t n)
{
	cvm_progress_add(arg, n);
}

static const char *base_name(const char *p)
{
	const char *s = strrchr(p, '/');

	return s ? s + 1 : p;
}


/* The CPUs this process may run on (the online ones, as far as its affinity allows). */
static unsigned default_jobs(void)
{
	long n = cvm_cpu_count();

	return n > 256 ? 256 : (unsigned)n;
}


int cvm_install_check(struct cvm_install *in)
{
	uint8_t bin[CVM_SHA256_LEN];

	if (in->sha256) {
		if (strlen(in->sha256) != 64 || cvm_hex_decode(in->sha256, bin, sizeof(bin)) < 0)
			return cvm_err_usage("install", "--sha256 '%s': expected 64 hex digits",
					     cvm_safe(in->sha256));
		cvm_hex_encode(bin, sizeof(bin), in->want_sha);
	}
	if (in->cuda && cvm_cuda_arg("install", in->cuda, &in->cuda_major) < 0)
		return -CVM_E_USAGE;
	if (in->cuda)
		(void)cvm_cuda_parse(in->cuda, &in->cuda_major, &in->cuda_minor);
	return 0;
}

/* --cuda, or the toolkit /usr/local/cuda points to. */
static int cuda_major(struct cvm_ctx *ctx, struct cvm_install *in)
{
	struct cvm_toolkit tk;
	int r;

	if (in->cuda)
		return 0;
	r = cvm_toolkit_select(ctx->root, NULL, &tk);
	if (r < 0)
		return r;
	in->cuda_major = tk.major;
	in->cuda_minor = tk.minor;
	cvm_verbose("using CUDA %d.%d of %s", tk.major, tk.minor, tk.display);
	cvm_toolkit_release(&tk);
	return 0;
}

/* What the first entry's name says the archive is (only after the hash matched). */
static void take_top(struct cvm_install *in, const char *path)
{
	char top[256];
	size_t n;

	n = strcspn(path, "/");
	snprintf(top, sizeof(top), "%.*s", (int)(n < sizeof(top) ? n : sizeof(top) - 1), path);
	in->layout = strcmp(top, "cuda") ? CVM_LAYOUT_NVIDIA : CVM_LAYOUT_LEGACY;
	if (cvm_entry_top_version(top, in->top_version, sizeof(in->top_version), &in->top_cuda,
				  in->top_platform, sizeof(in->top_platform)) < 0)
		in->top_version[0] = '\0';
}

/* Reads the first entry's top folder (only after the hash matched). */
static int peek_top(int fd, struct cvm_install *in)
{
	struct cvm_archive *ar = NULL;
	struct cvm_entry e;
	int r;

	r = cvm_archive_open_fd(fd, in->archive, &ar);
	if (r < 0)
		return r;
	r = cvm_archive_next(ar, &e);
	if (r <= 0) {
		if (r == 0)
			r = cvm_err(-CVM_E_LAYOUT, "'%s' is empty", cvm_safe(in->archive));
		goto out;
	}
	take_top(in, e.path);
	r = 0;
out:
	cvm_archive_free(ar);
	return r;
}

/*
 * Without a catalogue entry (--sha256), the archive says what it is: its
 * top folder names version, CUDA major and platform; it must agree with
 * what was asked for.
 */
static int identify(struct cvm_install *in)
{
	struct cvm_version want, got;

	if (cvm_version_parse(in->spec, &want) < 0)
		return cvm_err(-CVM_E_VERSION, "invalid version '%s': expected numbers such as 8.9.7",
			       cvm_safe(in->spec));
	if (in->top_version[0]) {
		if (cvm_version_parse(in->top_version, &got) < 0 || !cvm_version_matches(&want, &got))
			return cvm_err(-CVM_E_LAYOUT, "'%s' holds cuDNN %s, not %s",
				       cvm_safe(in->archive), cvm_safe(in->top_version), cvm_safe(in->spec));
		if (in->top_cuda != in->cuda_major)
			return cvm_err(-CVM_E_LAYOUT, "'%s' is built for CUDA %d, not CUDA %d",
				       cvm_safe(in->archive), in->top_cuda, in->cuda_major);
		if (in->platform && strcmp(in->platform, in->top_platform))
			return cvm_err(-CVM_E_LAYOUT, "'%s' is built for %s, not %s",
				       cvm_safe(in->archive), cvm_safe(in->top_platform),
				       cvm_safe(in->platform));
		/* Installed, it would be a version no other command of this host finds. */
		if (!in->platform && cvm_host_platform() && strcmp(cvm_host_platform(), in->top_platform))
			return cvm_err(-CVM_E_LAYOUT, "'%s' is built for %s, not this host's %s "
				       "(to keep it for such a machine, give --platform %s)",
				       cvm_safe(in->archive), cvm_safe(in->top_platform),
				       cvm_host_platform(), cvm_safe(in->top_platform));
		in->platform = in->top_platform;
		snprintf(in->version, sizeof(in->version), "%s", in->top_version);
	} else {
		/* The legacy tgz has no name inside: the version asked for is the one. */
		if (want.n < 3)
			return cvm_err(-CVM_E_VERSION, "'%s' does not name its version: give it in full "
				       "(e.g. 8.2.1.32)", cvm_safe(in->archive));
		if (!in->platform)
			in->platform = cvm_host_platform();
		cvm_version_format(&want, in->version, sizeof(in->version));
	}
	cvm_version_parse(in->version, &got);
	got.n = 3;
	return cvm_version_format(&got, in->release, sizeof(in->release));
}

static int check_content(int dirfd, struct cvm_install *in, const char *staged, struct cvm_cudnn_tree *t)
{
	struct cvm_version v;
	int r;

	/* A dry run's tree was checked from the archive's entries (cvm_extract_check). */
	r = dirfd >= 0 ? cvm_cudnn_check_tree(dirfd, in->archive, t) : 0;
	if (r < 0)
		return r;
	cvm_version_parse(in->version, &v);
	v.n = 3;
	if (!cvm_version_matches(&v, &t->header)) {
		char hv[32];
		cvm_version_format(&t->header, hv, sizeof(hv));
		return cvm_err(-CVM_E_LAYOUT, "'%s': its headers say cuDNN %s, its name says %s",
			       cvm_safe(in->archive), hv, in->version);
	}
	(void)staged;
	return 0;
}

/* One release per version (release.h): a mixed copy is refused, exit 3. */
static int check_release(int dirfd, const struct cvm_install *in, const struct cvm_elf_cache *known)
{
	struct cvm_release_odd *odd = NULL;
	size_t n = 0;
	int r;

	r = cvm_release_check(dirfd, in->release, known, &odd, &n);
	if (r < 0)
		return cvm_err(r, "cannot read the libraries of '%s': %s", cvm_safe(in->archive),
			       cvm_strerror(-r));
	if (n)
		r = cvm_release_refuse(in->archive, in->release, odd, n);
	free(odd);
	return r;
}

/* install's JSON document (NULL on ENOMEM; the caller frees it). */
cvm_json *cvm_install_doc(const char *path, const struct cvm_install *in)
{
	cvm_json *o = cvm_json_object();

	if (!o)
		return NULL;
	cvm_json_set(o, "id", cvm_json_string(in->id));
	cvm_json_set(o, "version", cvm_json_string(in->version));
	cvm_json_set(o, "release", cvm_json_string(in->release));
	cvm_json_set(o, "cuda_major", cvm_json_integer(in->cuda_major));
	cvm_json_set(o, "platform", cvm_json_string(in->platform));
	cvm_json_set(o, "path", cvm_json_string(path));
	cvm_json_set(o, "already_installed", cvm_json_bool(in->already));
	/* --use fills it in afterwards; without --use it stays null. */
	cvm_json_set(o, "use", cvm_json_string(NULL));
	return o;
}

static int report(const struct cvm_ctx *ctx, struct cvm_install *in, bool already)
{
	char path[4096];
	cvm_json *o;
	int r;

	in->already = already;
	r = cvm_fmt(path, sizeof(path), "%s/versions/%s", ctx->store.display, in->id);
	if (r < 0)
		return r;
	if (!already && !cvm_plan_dry(&ctx->plan))
		cvm_closure_warn(ctx, in->cuda, in->cuda_major, in->id);
	if (!cvm_out.json) {
		/* --force swaps the folders in one step, which Windows has no call for yet (store.c). */
		if (already && CVM_WINDOWS)
			cvm_info("%s is already installed in %s (to reinstall it: cudnnvm uninstall %s "
				 "--cuda %d.x, then install again)", in->id, path, in->version,
				 in->cuda_major);
		else if (already)
			cvm_info("%s is already installed in %s (--force reinstalls it)", in->id, path);
		else if (cvm_plan_dry(&ctx->plan))
			cvm_info("dry run: %s would be installed in %s%s", in->id, path,
				 in->then_use ? "" : "; nothing was changed");
		else
			cvm_info("installed %s in %s", in->id, path);
		return 0;
	}
	o = cvm_install_doc(path, in);
	if (!o)
		return -ENOMEM;
	r = cvm_json_print(o);
	cvm_json_free(o);
	return r;
}

/* Whether to decode while hashing, and why (or why not) into why. */
static bool speculate(const struct cvm_install *in, char *why, size_t len)
{
	struct cvm_confine_caps caps;
	char desc[64];

	if (in->verify_first) {
		snprintf(why, len, "--verify-first or CUDNNVM_VERIFY_FIRST");
		return false;
	}
	cvm_confine_probe(&caps);
	cvm_confine_describe(&caps, desc, sizeof(desc));
	if (!cvm_confine_enough(&caps)) {
		snprintf(why, len, "a child cannot be confined here: %s", desc);
		return false;
	}
	snprintf(why, len, "%s, no capabilities", desc);
	return true;
}

/*
 * When the archive given is not the file VERSION resolved to, what to say
 * about it (in buf, "" otherwise): which release VERSION means ("9.19" is
 * the newest 9.19, 9.19.1.2) and, when the file's name says, which one
 * the file is, with the command that installs it.
 */
static const char *other_archive(const struct cvm_install *in, char *buf, size_t len)
{
	char top[256], ver[64], plat[64];
	const char *name = base_name(in->archive), *end;
	int major;

	buf[0] = '\0';
	if (!in->build || !strcmp(name, in->build->file_name))
		return buf;
	end = strstr(name, "-archive");
	if (end && (size_t)(end - name) + 9 <= sizeof(top)) {
		snprintf(top, sizeof(top), "%.*s-archive", (int)(end - name), name);
		if (cvm_entry_top_version(top, ver, sizeof(ver), &major, plat, sizeof(plat)) == 0 &&
		    strcmp(ver, in->version)) {
			snprintf(buf, len, "; '%s' resolved to cuDNN %s (%s), but this archive is "
				 "named for cuDNN %s (CUDA %d): to install it, name its version: "
				 "cudnnvm install %s --archive %s", cvm_safe(in->spec), in->version,
				 cvm_safe(in->build->file_name), cvm_safe(ver), major, cvm_safe(ver),
				 cvm_safe(in->archive));
			return buf;
		}
	}
	snprintf(buf, len, "; '%s' resolved to cuDNN %s, whose archive is %s, not %s",
		 cvm_safe(in->spec), in->version, cvm_safe(in->build->file_name), cvm_safe(name));
	return buf;
}

static int check_hash(const struct cvm_install *in, const char *got)
{
	char hint[1024];

	if (strcmp(got, in->want_sha))
		return cvm_err(-CVM_E_INTEGRITY, "'%s': SHA-256 mismatch: expected %s (%s), got %s%s",
			       cvm_safe(in->archive), in->want_sha,
			       in->sha256 ? "--sha256" : in->rel->source, got,
			       other_archive(in, hint, sizeof(hint)));
	return 0;
}

/* The archive's size against the catalogue's, before anything hashes it. 0 or -CVM_E_INTEGRITY (printed). */
static int check_size(const struct cvm_install *in, const struct stat *st)
{
	char hint[1024];

	if (in->build && in->build->has_size && (uint64_t)st->st_size != in->build->size)
		return cvm_err(-CVM_E_INTEGRITY, "'%s' has %llu bytes, but %s says %s has %llu%s",
			       cvm_safe(in->archive), (unsigned long long)st->st_size,
			       in->rel->source, in->build->file_name,
			       (unsigned long long)in->build->size, other_archive(in, hint, sizeof(hint)));
	return 0;
}

/*
 * An installed id and an archive given: the archive must be the one it was
 * installed from (record.json's SHA-256), else it is said, not ignored.
 * got: the archive's SHA-256. 0, or -CVM_E_INTEGRITY (printed).
 */
static int same_as_installed(struct cvm_ctx *ctx, const struct cvm_install *in, const char *got)
{
	struct cvm_record rec = { 0 };
	int fd, r;

	fd = cvm_store_open_version(&ctx->store, in->id);
	if (fd < 0)
		return cvm_err(fd, "cannot open %s/versions/%s: %s", ctx->store.display, in->id,
			       cvm_strerror(-fd));
	r = cvm_record_read(fd, in->id, &rec);
	close(fd);
	if (r < 0)
		return r;
	if (strcmp(rec.archive_sha256, got))
		r = cvm_err(-CVM_E_INTEGRITY, "%s is installed already, from another archive (%s, "
			    "SHA-256 %s); '%s' has SHA-256 %s: %s", in->id,
			    cvm_safe(rec.archive ? rec.archive : "?"), rec.archive_sha256,
			    cvm_safe(in->archive), got, CVM_WINDOWS
			    ? "uninstall the installed version first to install this archive"
			    : "--force replaces the installed version with this archive");
	cvm_record_release(&rec);
	return r;
}

/* The SHA-256 of the --archive of an installed id (only hashed, never decoded). */
static int hash_given(const struct cvm_install *in, char *got)
{
	uint8_t d[CVM_SHA256_LEN];
	struct stat st;
	uint64_t n;
	int fd, r;

	fd = cvm_open_regular(AT_FDCWD, in->archive, O_RDONLY, 0);
	if (fd < 0)
		return cvm_err(fd, "cannot open '%s': %s", cvm_safe(in->archive), cvm_strerror(fd));
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		r = cvm_err(-EINVAL, "'%s' is not a regular file", cvm_safe(in->archive));
		goto out;
	}
	/* Its size first: an archive of another size is told without reading it. */
	r = check_size(in, &st);
	if (r < 0)
		goto out;
	r = cvm_sha256_fd(fd, d, &n, NULL, NULL);
	if (r < 0) {
		r = cvm_err(r, "cannot read '%s': %s", cvm_safe(in->archive), cvm_strerror(-r));
		goto out;
	}
	cvm_hex_encode(d, sizeof(d), got);
out:
	close(fd);
	return r;
}


/* With --sha256, once the top folder is known: the id; 1 when it is installed already. */
static int id_from_top(struct cvm_ctx *ctx, struct cvm_install *in)
{
	int r = identify(in);

	if (r == 0)
		r = cvm_store_id(in->id, sizeof(in->id), in->version, in->cuda_major, in->platform);
	if (r < 0)
		return r;
	return cvm_store_has(&ctx->store, in->id) && !in->force;
}

/* id_from_top from the archive's own first entry (read after the hash matched). */
static int id_from_archive(struct cvm_ctx *ctx, struct cvm_install *in, int fd)
{
	int r = peek_top(fd, in);

	return r < 0 ? r : id_from_top(ctx, in);
}

/* The archive must be the file that was hashed: not written to since it was opened. */
static int check_unchanged(const struct cvm_install *in, int fd, const struct stat *st)
{
	struct stat now;

	if (fstat(fd, &now) < 0)
		return cvm_err(-errno, "cannot read '%s': %s", cvm_safe(in->archive), strerror(errno));
	if (now.st_size != st->st_size || now.st_mtim.tv_sec != st->st_mtim.tv_sec ||
	    now.st_mtim.tv_nsec != st->st_mtim.tv_nsec || now.st_ctim.tv_sec != st->st_ctim.tv_sec ||
	    now.st_ctim.tv_nsec != st->st_ctim.tv_nsec)
		return cvm_err(-CVM_E_INTEGRITY, "'%s' changed while it was being installed",
			       cvm_safe(in->archive));
	return 0;
}

/* The progress of a speculative install: how far the child has decoded. */
struct spec_bar {
	struct cvm_progress pr;
	struct cvm_extract_child *child;
	uint64_t shown;
};

static void spec_tick(void *arg, uint64_t pos)
{
	struct spec_bar *b = arg;

	if (pos > b->pr.total)
		pos = b->pr.total;
	if (pos > b->shown) {
		cvm_progress_add(&b->pr, pos - b->shown);
		b->shown = pos;
	}
}

/*
 * The archive's hash runs behind the decoding, in its idle moments
 * (cvm_sha256_fd_behind): the bar follows the child, and once the child's
 * decoding is over (or a Ctrl-C came), the rest of the hash is wanted now.
 */
static bool spec_behind(void *arg, uint64_t hashed)
{
	struct spec_bar *b = arg;
	uint64_t pos = cvm_extract_child_position(b->child);

	(void)hashed;
	spec_tick(b, pos);
	return pos >= b->pr.total || cvm_extract_child_ended(b->child) || cvm_interrupted;
}

/*
 * Pipelined install from the network: while the archive arrives, the
 * confined child already decodes it, reading only bytes the download has
 * written and hashed (fetch.h's hooks), and its work is taken only once the
 * whole archive's size and SHA-256 matched, as with a file. When the download
 * starts over (the server ignored Range), the child is stopped and its work
 * discarded: the archive is then decoded once it is complete.
 */
struct pipeline {
	struct cvm_fetch_hooks hooks;
	struct cvm_ctx *ctx;
	struct cvm_install *in;
	struct cvm_extract_opts *xo;
	struct cvm_extract_child *child;
	char staged[256];
	int sfd, rfd;
	bool off;			/* gave up: decode after the download */
	int error;			/* staging failed (printed) */
};

static void pipeline_stop(struct pipeline *p)
{
	cvm_extract_child_kill(p->child);
	p->child = NULL;
	if (p->staged[0] && cvm_store_discard(&p->ctx->store, p->staged) < 0)
		cvm_warn("cannot remove the staging folder %s/.staging/%s", p->ctx->store.display,
			 p->staged);
	p->staged[0] = '\0';
	if (p->sfd >= 0)
		close(p->sfd);
	if (p->rfd >= 0)
		close(p->rfd);
	p->sfd = p->rfd = -1;
}

static void pipeline_opened(void *arg, int fd)
{
	struct pipeline *p = arg;
	char self[64];
	int r;

	if (p->off || p->child || p->error)
		return;
	/* The child gets a descriptor of its own that cannot write the download. */
	snprintf(self, sizeof(self), "/proc/self/fd/%d", fd);
	p->rfd = open(self, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (p->rfd < 0) {
		cvm_verbose("decoding after the download: cannot reopen it read-only (%s)",
			    strerror(errno));
		p->off = true;
		return;
	}
	r = cvm_store_stage(&p->ctx->store, p->in->id, p->staged, sizeof(p->staged), &p->sfd);
	if (r == 0)
		r = cvm_extract_spawn(p->rfd, p->in->cache_path, p->xo, p->sfd, &p->child);
	if (r == 0)
		cvm_store_flush_behind(&p->ctx->store);
	if (r < 0) {
		p->error = r;
		pipeline_stop(p);
		return;
	}
	cvm_verbose("decoding the download as it arrives, in a confined process; kept only if "
		    "the SHA-256 matches");
}

static void pipeline_hashed(void *arg, uint64_t total)
{
	struct pipeline *p = arg;

	if (p->child)
		cvm_extract_child_avail(p->child, total, false);
}

static void pipeline_restarted(void *arg)
{
	struct pipeline *p = arg;

	if (!p->child)
		return;
	cvm_verbose("the download starts over: what was decoded is discarded, the archive is "
		    "decoded once it is complete");
	pipeline_stop(p);
	p->off = true;
}

/*
 * --bundle: bundle.c does the transaction; the report is install's. From the
 * mirror (--prefer-bundles), the carried record must name the catalogue's
 * archive, and a bundle the mirror does not have is -CVM_E_NOTFOUND, quietly.
 */
static int install_bundle(struct cvm_ctx *ctx, struct cvm_install *in, const char *archive_sha)
{
	struct cvm_bundle_opts o = { in->bundle, in->sha256 ? in->want_sha : NULL, archive_sha,
				     in->spec, in->cuda_major, in->force, &in->fo };
	struct cvm_bundle_result res;
	struct cvm_version v;
	int r, k;

	if (cvm_fetch_supported(o.bundle) && !o.sha256 && !o.archive_sha256)
		return cvm_err_usage("install", "--bundle %s: a bundle from a URL needs --sha256 (nothing "
				 "downloaded is used unverified)", cvm_safe(o.bundle));
	r = cvm_bundle_install(ctx, &o, &res);
	if (r < 0)
		return r;
	snprintf(in->id, sizeof(in->id), "%s", res.id);
	r = cvm_store_parse_id(res.id, in->version, sizeof(in->version), &in->cuda_major,
			       in->top_platform, sizeof(in->top_platform));
	if (r < 0)
		return r;
	in->platform = in->top_platform;
	r = cvm_version_parse(in->version, &v);
	v.n = 3;
	if (r == 0)
		r = cvm_version_format(&v, in->release, sizeof(in->release));
	if (r < 0)
		return r;
	/* Stale modulefiles are the exit code, after the install (which stands) is said. */
	k = res.already ? 0 : cvm_modulefiles_refresh(ctx);
	r = report(ctx, in, res.already);
	return r < 0 ? r : k;
}

/*
 * install --force of a version active for some toolkits: its file set may
 * have changed, so each of those toolkits is linked again as 'use' would
 * (a header gone loses its link, a new one gets one; no smoke test, no
 * journal line: the active version stays the same).
 */
static int relink_active(struct cvm_ctx *ctx, const struct cvm_install *in)
{
	struct cvm_activate_opts o = { .kind = "use", .no_smoke = true, .argc = in->argc,
					 .argv = in->argv };
	struct dirent *de;
	DIR *d;
	int fd, r = 0;

	fd = openat(ctx->store.fd, "active", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return 0;
	d = fdopendir(fd);
	if (!d) {
		close(fd);
		return 0;
	}
	while ((de = readdir(d))) {
		struct cvm_toolkit tk = { 0 };
		char id[160];
		int k;

		if (strncmp(de->d_name, "cuda-", 5) ||
		    cvm_active_get(&ctx->store, de->d_name + 5, id, sizeof(id)) < 0 || strcmp(id, in->id))
			continue;
		k = cvm_toolkit_select(ctx->root, de->d_name + 5, &tk);
		if (k == 0)
			k = cvm_activate(ctx, &tk, in->id, &o);
		if (k == 0)
			cvm_verbose("CUDA %s: the links of %s made again", de->d_name + 5, in->id);
		else if (!r)
			r = k;
		cvm_toolkit_release(&tk);
	}
	closedir(d);
	return r;
}

/*
 * A dry run, once the archive is verified and its entries checked (or its
 * download described): what the extraction and the commit would make, and
 * install's report.
 */
static int plan_install(struct cvm_ctx *ctx, struct cvm_install *in, const char *from, uint64_t size)
{
	char shown[4096];

	snprintf(shown, sizeof(shown), "%s/versions/%s", ctx->store.display, in->id);
	cvm_plan_describe(&ctx->plan, in->force && cvm_store_has(&ctx->store, in->id) ? "replace" : "create",
			  shown, NULL, "(extracted from %s, %llu bytes)", cvm_safe(from),
			  (unsigned long long)size);
	cvm_modulefiles_refresh(ctx);
	/* The toolkits it is active for would be linked again (from the tree installed now). */
	if (in->force && cvm_store_has(&ctx->store, in->id)) {
		int r = relink_active(ctx, in);
		if (r < 0)
			return r;
	}
	return report(ctx, in, false);
}

/*
 * --prefer-bundles: MIRROR/bundles/<id>.tar.zst, else .tar (as 'cudnnvm
 * export' names them). -CVM_E_NOTFOUND when the mirror has neither: the
 * archive is installed, as without the option.
 */
static int mirror_bundle(struct cvm_ctx *ctx, struct cvm_install *in)
{
	static const char *const ext[] = { ".tar.zst", ".tar" };
	char mirror[2048], url[4096], spec[32];
	const char *given;
	int r;

	r = cvm_mirror(ctx, mirror, sizeof(mirror));
	if (r < 0)
		return r;
	if (cvm_mirror_is_nvidia(mirror))
		return cvm_err_usage("install", "--prefer-bundles: NVIDIA's server has no bundles; give "
				 "the mirror that has a bundles/ folder (--mirror, CUDNNVM_MIRROR or "
				 "'mirror =' in the config file)");
	/* The bundle must hold the version resolved; in->spec is the user's again after. */
	snprintf(spec, sizeof(spec), "%s", in->version);
	given = in->spec;
	in->spec = spec;
	r = -CVM_E_NOTFOUND;
	for (size_t i = 0; i < sizeof(ext) / sizeof(ext[0]) && r == -CVM_E_NOTFOUND; i++) {
		r = cvm_fmt(url, sizeof(url), "%sbundles/%s%s", mirror, in->id, ext[i]);
		if (r < 0) {
			r = cvm_err(r, "the mirror's URL is too long");
			break;
		}
		in->bundle = url;
		r = install_bundle(ctx, in, in->want_sha);
		in->bundle = NULL;
	}
	in->spec = given;
	if (r != -CVM_E_NOTFOUND)
		return r;
	cvm_info("the mirror has no bundle of %s (%sbundles/%s.tar.zst): installing NVIDIA's "
		 "archive", in->id, mirror, in->id);
	return -CVM_E_NOTFOUND;
}

/*
 * The catalogue's build for in->spec: in->build, want_sha, version, release
 * and id set. 1 when that id is installed already (and not --force): said,
 * with an --archive checked to be the one it was installed from. 0, or
 * negative (printed).
 */
static int resolve(struct cvm_ctx *ctx, struct cvm_install *in, struct cvm_catalogue *cat)
{
	char got[CVM_SHA256_HEX];
	int r;

	r = cvm_update_catalogue(ctx, cat);
	if (r < 0)
		return r;
	r = cvm_catalogue_resolve(cat, in->spec, in->cuda_major, in->cuda_minor, in->platform,
				  &in->rel, &in->build);
	if (r < 0)
		return r;
	snprintf(in->want_sha, sizeof(in->want_sha), "%s", in->build->sha256);
	snprintf(in->version, sizeof(in->version), "%s", in->build->version_str);
	snprintf(in->release, sizeof(in->release), "%s", in->rel->label);
	r = cvm_build_id(in->build, in->id, sizeof(in->id));
	if (r < 0)
		return r;
	cvm_verbose("%s resolves to %s (%s, %s)", in->spec, in->id, in->build->file_name,
		    in->rel->source);
	if (!cvm_store_has(&ctx->store, in->id) || in->force)
		return 0;
	if (in->archive) {
		r = hash_given(in, got);
		if (r == 0)
			r = check_hash(in, got);
		if (r == 0)
			r = same_as_installed(ctx, in, got);
		if (r < 0)
			return r;
	}
	r = report(ctx, in, true);
	return r < 0 ? r : 1;
}

/* One install's working state, shared by the steps of cvm_install. */
struct install_run {
	struct cvm_ctx *ctx;
	struct cvm_install *in;
	struct cvm_catalogue cat;
	struct cvm_extract x;
	struct cvm_extract_opts xo;
	struct cvm_extract_child *child;
	struct spec_bar sb;
	struct pipeline pl;
	struct cvm_cudnn_tree tree;
	struct cvm_progress pr;
	struct cvm_record rec;
	struct stat st;
	char got[CVM_SHA256_HEX], staged[256], why[128];
	int fd, sfd, have_first;
	uint64_t hashed;
	long long t0;
	bool spec;
};

/* Without --sha256: the catalogue's build, or with --prefer-bundles the mirror's bundle of it. */
static int resolve_build(struct install_run *run)
{
	struct cvm_install *in = run->in;
	int r;

	r = resolve(run->ctx, in, &run->cat);
	if (r != 0)
		return r;	/* 1: installed already, and said so */
	if (in->prefer_bundles && !in->offline) {
		/* The mirror has no bundle: NVIDIA's archive, as without the option. */
		r = mirror_bundle(run->ctx, in);
		if (r != -CVM_E_NOTFOUND)
			return r < 0 ? r : 1;
	}
	return 0;
}

/* The download is decoded as it arrives (struct pipeline), within a file's limits. */
static void arm_pipeline(struct install_run *run)
{
	struct cvm_install *in = run->in;

	run->pl.ctx = run->ctx;
	run->pl.in = in;
	run->pl.xo = &run->xo;
	run->xo.archive_size = in->build->has_size ? in->build->size : 0;
	run->xo.max_bytes = run->xo.archive_size * 16 + (64u << 20);
	run->xo.jobs = 1;
	run->xo.follow = true;
	in->fo.hooks = &run->pl.hooks;
}

/* The cached archive, checked: one that fails is discarded and downloaded again (not --offline). */
static int open_cached(struct cvm_ctx *ctx, struct cvm_install *in)
{
	int fd;

	fd = cvm_cache_open(ctx, in->build, in->offline, false, &in->fo, in->cache_path,
			    sizeof(in->cache_path), &in->verified);
	if (fd < 0 || in->verified)
		return fd;
	if (cvm_cache_check(fd, in->build, in->cache_path) == 0) {
		in->verified = true;
		return fd;
	}
	close(fd);
	cvm_cache_discard(ctx, in->build);
	return in->offline ? -CVM_E_INTEGRITY
			   : cvm_cache_open(ctx, in->build, false, true, &in->fo, in->cache_path,
					    sizeof(in->cache_path), &in->verified);
}

/*
 * The cache, else the mirror. Either way the descriptor is hashed
 * exactly once: a cached file is checked here, a download as it arrives.
 * 1 when a dry run described the download (and what would follow it).
 */
static int take_cached(struct install_run *run)
{
	struct cvm_install *in = run->in;
	int r;

	if (!in->build)
		return cvm_err_usage("install", "--sha256 goes with --archive (the catalogue names the "
				 "archive otherwise)");
	if (!in->verify_first && !cvm_plan_dry(&run->ctx->plan) && speculate(in, run->why, sizeof(run->why)))
		arm_pipeline(run);
	run->fd = open_cached(run->ctx, in);
	if (run->fd == -ECANCELED) {
		/* A dry run: the download is described; so is what would follow it. */
		r = plan_install(run->ctx, in, in->cache_path, in->build->has_size ? in->build->size : 0);
		return r < 0 ? r : 1;
	}
	if (run->fd < 0 || run->pl.error) {
		r = run->fd < 0 ? run->fd : run->pl.error;
		pipeline_stop(&run->pl);
		return r;
	}
	in->archive = in->cache_path;
	return 0;
}

/* One descriptor from here on: what is hashed is what is extracted. */
static int open_archive(struct install_run *run)
{
	struct cvm_install *in = run->in;

	if (run->fd < 0)
		run->fd = cvm_open_regular(AT_FDCWD, in->archive, O_RDONLY, 0);
	if (run->fd < 0)
		return cvm_err(run->fd, "cannot open '%s': %s", cvm_safe(in->archive),
			       cvm_strerror(run->fd));
	if (fstat(run->fd, &run->st) < 0 || !S_ISREG(run->st.st_mode))
		return cvm_err(-EINVAL, "'%s' is not a regular file", cvm_safe(in->archive));
	if (check_size(in, &run->st) < 0)
		return -CVM_E_INTEGRITY;
	run->xo.archive_size = (uint64_t)run->st.st_size;
	/* A cuDNN archive expands about 1.5-3x; 16x and 64 MiB leave room for any real one. */
	run->xo.max_bytes = (uint64_t)run->st.st_size * 16 + (64u << 20);
	run->xo.jobs = in->jobs ? in->jobs : default_jobs();
	run->xo.follow = false;
	return 0;
}

/* A staging folder for name into run->staged and run->sfd ("" when it could not be made). */
static int stage(struct install_run *run, const char *name)
{
	int r = cvm_store_stage(&run->ctx->store, name, run->staged, sizeof(run->staged), &run->sfd);

	if (r < 0)
		run->staged[0] = '\0';
	return r;
}

/* The download matched its hash: the child may read it to the end. */
static void adopt_download(struct install_run *run)
{
	uint64_t size = (uint64_t)run->st.st_size;

	run->child = run->pl.child;
	run->sfd = run->pl.sfd;
	snprintf(run->staged, sizeof(run->staged), "%s", run->pl.staged);
	run->pl.child = NULL;
	run->pl.staged[0] = '\0';
	run->pl.sfd = -1;
	cvm_extract_child_avail(run->child, size, true);
	run->sb.child = run->child;
	cvm_progress_start(&run->sb.pr, "decoding", size);
	spec_tick(&run->sb, cvm_extract_child_position(run->child));
	run->spec = true;
	snprintf(run->got, sizeof(run->got), "%s", run->in->want_sha);
	run->hashed = size;
}

/*
 * Decoding starts now, in a child that can write nothing but
 * the staging folder; its work is kept only if the hash matches.
 * Without a catalogue entry the id is known only from the
 * archive's content: the folder is named for it later.
 */
static int start_decoding(struct install_run *run)
{
	struct cvm_install *in = run->in;
	int r;

	cvm_verbose("extracting while verifying: in a confined process (%s), kept only if "
		    "the SHA-256 matches", run->why);
	r = stage(run, in->id[0] ? in->id : "pending");
	if (r < 0)
		return r;
	r = cvm_extract_spawn(run->fd, in->archive, &run->xo, run->sfd, &run->child);
	if (r < 0)
		return r;
	cvm_store_flush_behind(&run->ctx->store);
	run->sb.child = run->child;
	cvm_progress_start(&run->sb.pr, "installing", (uint64_t)run->st.st_size);
	return 0;
}

/*
 * The archive's SHA-256 into digest (into run->got when it was hashed
 * already): while a child decodes it when it can, else before any decoding.
 */
static int hash_archive(struct install_run *run, uint8_t *digest)
{
	struct cvm_install *in = run->in;
	int r = 0;

	run->spec = !in->verified && !cvm_plan_dry(&run->ctx->plan) && speculate(in, run->why, sizeof(run->why));
	run->t0 = cvm_now_ms();
	if (run->pl.child) {
		adopt_download(run);
	} else if (in->verified) {
		/* Hashed already, through this very descriptor: no second pass. */
		snprintf(run->got, sizeof(run->got), "%s", in->want_sha);
		run->hashed = (uint64_t)run->st.st_size;
		cvm_verbose("%s was verified as it was read", in->archive);
	} else if (run->spec) {
		r = start_decoding(run);
		if (r < 0)
			return r;
		r = cvm_sha256_fd_behind(run->fd, digest, &run->hashed, spec_behind, &run->sb);
	} else {
		/* speculate() is not asked in a dry run: say why here (the buffer was left unset before). */
		if (!run->why[0])
			snprintf(run->why, sizeof(run->why), "a dry run decodes nothing");
		cvm_verbose("verifying first, then extracting (%s)", run->why);
		cvm_progress_start(&run->pr, "verifying", (uint64_t)run->st.st_size);
		r = cvm_sha256_fd(run->fd, digest, &run->hashed, on_hash, &run->pr);
		cvm_progress_end(&run->pr);
	}
	if (r < 0)
		return cvm_err(r, "cannot read '%s': %s", cvm_safe(in->archive), cvm_strerror(-r));
	return 0;
}

/* The archive must be the one asked for: its SHA-256 is checked before anything it holds is kept. */
static int verify_archive(struct install_run *run)
{
	struct cvm_install *in = run->in;
	uint8_t digest[CVM_SHA256_LEN];
	int r;

	r = hash_archive(run, digest);
	if (r < 0)
		return r;
	if (!in->verified)
		cvm_hex_encode(digest, sizeof(digest), run->got);
	if (cvm_interrupted)
		return -EINTR;
	/* A mismatch kills the child and discards what it wrote (at out). */
	r = check_hash(in, run->got);
	if (r < 0) {
		if (run->child)
			cvm_verbose("the extraction process %s; what it wrote is discarded",
				    cvm_extract_child_kill(run->child) ? "was stopped while running"
								       : "had ended");
		run->child = NULL;
		return r;
	}
	cvm_verbose("SHA-256 of %s matches (%llu bytes, %lld ms)", base_name(in->archive),
		    (unsigned long long)run->hashed, cvm_now_ms() - run->t0);
	cvm_fault("install-verified");
	return 0;
}

/* id_from_top's answer r: when 1, the archive must be the installed one's, said; 1 then. */
static int settle_installed(struct install_run *run, int r)
{
	if (r != 1)
		return r;
	r = same_as_installed(run->ctx, run->in, run->got);
	if (r == 0)
		r = report(run->ctx, run->in, true);
	return r < 0 ? r : 1;
}

/* --sha256: the id from the archive's top folder; 1 when it is installed already (said). */
static int name_from_content(struct install_run *run)
{
	char first[4096];
	int r;

	if (run->child) {
		r = run->have_first = cvm_extract_child_first(run->child, first, sizeof(first));
		if (r == 1) {
			take_top(run->in, first);
			r = id_from_top(run->ctx, run->in);
		}
	} else {
		r = id_from_archive(run->ctx, run->in, run->fd);
	}
	return settle_installed(run, r);
}

/* A dry run reads the archive's entries and stops before the first byte is written. */
static int plan_checked(struct install_run *run)
{
	struct cvm_install *in = run->in;
	int r;

	r = cvm_extract_check(run->fd, in->archive, &run->xo, &run->tree,
			      in->then_use ? &in->files : NULL, &in->nfiles);
	if (r == 0)
		r = check_content(-1, in, NULL, &run->tree);
	if (r == 0)
		r = plan_install(run->ctx, in, in->archive, run->hashed);
	if (r == 0 && cvm_zlibwapi_needed(run->tree.windows, &run->tree.header)) {
		char shown[4096];
		snprintf(shown, sizeof(shown), "%s/versions/%s/bin/zlibwapi.dll", run->ctx->store.display,
			 in->id);
		cvm_plan_describe(&run->ctx->plan, "create", shown, NULL, "(beside cudnnvm: cuDNN 8.3 to "
				  "8.x load it)");
	}
	return r;
}

/*
 * The child's work, once the hash matched. When it could not do it, what it
 * wrote is discarded and run->spec cleared: extracted here instead (1 when,
 * named only now, the id turns out installed already: said).
 */
static int take_child(struct install_run *run)
{
	struct cvm_install *in = run->in;
	int r;

	r = cvm_extract_child_wait(run->child, &run->x, spec_tick, &run->sb);
	run->child = NULL;
	if (r == 0 && in->sha256 && run->have_first != 1)
		r = cvm_err(-CVM_E_LAYOUT, "'%s' is empty", cvm_safe(in->archive));
	if (r < 0)
		return r;
	if (r != 1) {
		cvm_progress_end(&run->sb.pr);
		return 0;
	}
	/* The child could not do it: start again here, on the verified archive. */
	cvm_extract_release(&run->x);
	close(run->sfd);
	run->sfd = -1;
	r = cvm_store_discard(&run->ctx->store, run->staged);
	run->staged[0] = '\0';
	if (r < 0)
		return r;
	run->spec = false;
	if (in->sha256 && run->have_first != 1)
		return settle_installed(run, id_from_archive(run->ctx, in, run->fd));
	return 0;
}

/* Extracted into staging (here, unless a child did it) from the file that was hashed. */
static int extract_staged(struct install_run *run)
{
	struct cvm_install *in = run->in;
	int r;

	if (!run->spec) {
		r = stage(run, in->id);
		if (r < 0)
			return r;
		cvm_store_flush_behind(&run->ctx->store);
		r = cvm_extract_run(run->fd, in->archive, &run->xo, run->sfd, &run->x);
		if (r < 0)
			return r;
	}
	r = check_unchanged(in, run->fd, &run->st);
	if (r < 0)
		return r;
	cvm_verbose("extracted %zu entries, %llu bytes (%s%s%s) in %lld ms; %zu librar%s read as "
		    "written", run->x.files.n, (unsigned long long)run->x.bytes, run->x.format,
		    run->x.decoder[0] ? "; " : "", run->x.decoder, cvm_now_ms() - run->t0, run->x.elf.n,
		    run->x.elf.n == 1 ? "y" : "ies");
	if (cvm_peak_rss_kib() >= 0 && run->x.child_peak_rss)
		cvm_verbose("peak memory: %ld MiB in this process, %llu MiB in the extraction process",
			    cvm_peak_rss_kib() >> 10, (unsigned long long)(run->x.child_peak_rss >> 20));
	else if (cvm_peak_rss_kib() >= 0)
		cvm_verbose("peak memory: %ld MiB", cvm_peak_rss_kib() >> 10);
	return 0;
}

/* The staged tree is the cuDNN it claims to be, of one release; its GPU architectures into rec. */
static int check_staged(struct install_run *run)
{
	int r;

	r = check_content(run->sfd, run->in, run->staged, &run->tree);
	/* cuDNN 8.3 to 8.x on Windows loads zlibwapi.dll: the exe's own goes with the version. */
	if (r == 0 && cvm_zlibwapi_needed(run->tree.windows, &run->tree.header))
		r = cvm_zlibwapi_place(run->sfd, run->in->id, &run->x.files);
	if (r == 0 && !run->tree.windows)
		r = check_release(run->sfd, run->in, &run->x.elf);
	if (r == 0 && !run->tree.windows)
		r = cvm_ccgate_scan(run->sfd, &run->x.elf, &run->rec.archs);
	return r < 0 ? r : 0;
}

/* record.json into staging: what was installed, from which archive, when and by whom. */
static int write_record(struct install_run *run)
{
	struct cvm_install *in = run->in;
	struct cvm_record *rec = &run->rec;
	int r;

	rec->id = in->id;
	rec->version = in->version;
	rec->release = in->release;
	rec->platform = (char *)in->platform;
	rec->cuda_major = in->cuda_major;
	rec->cuda_variant = in->build ? (char *)in->build->cuda_variant : NULL;
	rec->archive = (char *)base_name(in->archive);
	rec->relative_path = in->build ? in->build->relative_path : NULL;
	rec->manifest = in->rel ? in->rel->source : NULL;
	memcpy(rec->archive_sha256, run->got, sizeof(run->got));
	rec->archive_size = run->hashed;
	rec->installed_at = (int64_t)time(NULL);
	rec->installed_by = (char *)cvm_user_name();
	rec->cudnn_version = cvm_version_encode(&run->tree.header);
	rec->library = run->tree.library;
	r = cvm_record_write(run->sfd, rec, &run->x.files);
	if (r < 0)
		return cvm_err(r, "cannot write the record of %s: %s", in->id, cvm_strerror(-r));
	cvm_fault("install-staged");
	if (cvm_interrupted)
		return -EINTR;
	return 0;
}

/* The rename into versions/, then what follows from it, and the report. */
/*
 * Windows: the installed files whose full path is 260 characters or more,
 * said once: tools without long-path support (MAX_PATH) cannot open them.
 */
static void long_paths_warn(const struct install_run *run)
{
	size_t base, n = 0, longest = 0;
	const char *which = NULL;

	if (!CVM_WINDOWS)
		return;
	base = strlen(run->ctx->store.path) + strlen("/versions/") + strlen(run->in->id) + 1;
	for (size_t i = 0; i < run->x.files.n; i++) {
		size_t len = base + strlen(run->x.files.v[i].path);
		if (len < 260)
			continue;
		n++;
		/* The longest; of two as long, the first by name, so that the message is one. */
		if (len > longest || (len == longest && strcmp(run->x.files.v[i].path, which) < 0)) {
			longest = len;
			which = run->x.files.v[i].path;
		}
	}
	if (n)
		cvm_warn("%zu file%s of %s %s a path of 260 characters or more (the longest, %zu: "
			 "%s/versions/%s/%s): Windows programs without long-path support "
			 "(LongPathsEnabled and a manifest that opts in) cannot open them; a shorter "
			 "--store avoids it", n, n == 1 ? "" : "s", run->in->id, n == 1 ? "has" : "have",
			 longest, run->ctx->store.display, run->in->id, cvm_safe(which));
}

static int commit(struct install_run *run)
{
	struct cvm_install *in = run->in;
	long long t1;
	int r, k;

	/* From the commit on it is installed: a Ctrl-C now stops the process as usual. */
	cvm_interrupts_catch(false);
	t1 = cvm_now_ms();
	r = cvm_store_commit(&run->ctx->store, run->staged, in->id, in->force);
	if (r < 0)
		return r;
	run->staged[0] = '\0';
	long_paths_warn(run);
	k = cvm_modulefiles_refresh(run->ctx);
	if (in->force) {
		r = relink_active(run->ctx, in);
		if (r < 0)
			return r;
	}
	cvm_verbose("committed in %lld ms (%s, then the rename)", cvm_now_ms() - t1,
		    cvm_flush_each_file() ? "each file flushed as written" : "one syncfs");
	r = report(run->ctx, in, false);
	return r < 0 ? r : k;
}

/* cvm_install's cleanup, on every path: r, or the exit status of an interrupted run. */
static int install_end(struct install_run *run, int r)
{
	struct cvm_ctx *ctx = run->ctx;

	/* The child first: nothing may be writing into staging while it is removed. */
	cvm_extract_child_kill(run->child);
	pipeline_stop(&run->pl);
	if (run->staged[0] && cvm_store_discard(&ctx->store, run->staged) < 0) {
		cvm_warn("cannot remove the staging folder %s/.staging/%s", ctx->store.display,
			 run->staged);
		run->staged[0] = '\0';	/* not said to be removed below; the next locked run sweeps it */
	}
	if (cvm_interrupted && r < 0) {
		cvm_progress_stop(&run->pr);
		cvm_progress_stop(&run->sb.pr);
		if (run->staged[0])
			cvm_err(-EINTR, "interrupted: nothing was installed; the staging folder "
				"%s/.staging/%s is removed", ctx->store.display, run->staged);
		else
			cvm_err(-EINTR, "interrupted: nothing was installed");
		/* As a shell reports a command that a signal stopped. */
		r = 128 + cvm_interrupted;
	}
	cvm_interrupts_catch(false);
	if (run->sfd >= 0)
		close(run->sfd);
	if (run->fd >= 0)
		close(run->fd);
	cvm_extract_release(&run->x);
	cvm_catalogue_release(&run->cat);
	return r;
}

int cvm_install(struct cvm_ctx *ctx, struct cvm_install *in)
{
	struct install_run run = {
		.ctx = ctx, .in = in, .fd = -1, .sfd = -1,
		.pl = { { &run.pl, pipeline_opened, pipeline_hashed, pipeline_restarted },
			.sfd = -1, .rfd = -1 },
	};
	int r;

	r = cvm_install_check(in);
	if (r == 0 && (in->bundle || in->prefer_bundles) && cvm_plan_dry(&ctx->plan))
		r = cvm_err_usage("install", "--dry-run does not take %s yet (a bundle is checked as it "
			      "is unpacked)", in->bundle ? "--bundle" : "--prefer-bundles");
	if (r == 0 && in->bundle)
		return install_bundle(ctx, in, NULL);
	if (r == 0)
		r = cuda_major(ctx, in);
	if (r == 0 && !in->sha256 && !in->platform && !(in->platform = cvm_host_platform()))
		r = cvm_err(-CVM_E_NOTFOUND, "unknown host platform: give --platform");
	if (r < 0)
		return r;
	/* Ctrl-C stops the download or the extraction at the next step, which cleans up (at out). */
	cvm_interrupts_catch(true);
	/* Each step: negative (printed), 0 to go on, or 1: the install is settled, and said so. */
	r = in->sha256 ? 0 : resolve_build(&run);
	if (r == 0 && !in->archive)
		r = take_cached(&run);
	if (r == 0)
		r = open_archive(&run);
	if (r == 0)
		r = verify_archive(&run);
	if (r == 0 && in->sha256)
		r = name_from_content(&run);
	/* Verified and named: a dry run reads its entries and stops before the first byte is written. */
	if (r == 0 && cvm_plan_dry(&ctx->plan)) {
		r = plan_checked(&run);
		goto out;
	}
	if (r == 0 && run.child)
		r = take_child(&run);
	if (r == 0)
		r = extract_staged(&run);
	if (r == 0)
		r = check_staged(&run);
	if (r == 0)
		r = write_record(&run);
	if (r == 0)
		r = commit(&run);
out:
	return install_end(&run, r < 0 ? r : 0);
}
