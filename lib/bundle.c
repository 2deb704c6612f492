/* SPDX-License-Identifier: MIT */
/*
 * Store bundles: one installed version as a tar (or tar.zst) of its tree and
 * its record, so that the next node installs it at disk speed instead of
 * decoding NVIDIA's xz again. Trust does not move with the bundle: every file
 * is checked against the carried files.sha256 (a bundle that disagrees with
 * itself is refused), the bundle's own SHA-256 is checked when the caller
 * gives one, and the record keeps the original NVIDIA archive's hash beside
 * the bundle's, so `verify` and the record say where the bits came from.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "archive.h"
#include "bundle.h"
#include "cache.h"
#include "cudnn.h"
#include "digest.h"
#include "entry.h"
#include "error.h"
#include "extract.h"
#include "fault.h"
#include "fetch.h"
#include "fsutil.h"
#include "journal.h"
#include "out.h"
#include "record.h"
#include "release.h"
#include "ccgate.h"
#include "store.h"
#include "version.h"

static const char *const meta_files[] = { "record.json", "files.sha256", "links" };

static const char *base_name(const char *p)
{
	const char *s = strrchr(p, '/');

	return s ? s + 1 : p;
}

/* Adds the folders above path (not yet written) to the bundle, top first. */
static int add_parents(struct cvm_archive_writer *w, struct cvm_filelist *dirs, const char *id,
		       const char *path, int64_t mtime)
{
	char d[4096];

	for (const char *p = strchr(path, '/'); p; p = strchr(p + 1, '/')) {
		bool seen = false;
		int r;

		r = cvm_fmt(d, sizeof(d), "%s/%.*s", id, (int)(p - path), path);
		if (r < 0)
			return r;
		for (size_t i = 0; i < dirs->n && !seen; i++)
			seen = !strcmp(dirs->v[i].path, d);
		if (seen)
			continue;
		r = cvm_filelist_add(dirs, d, NULL, NULL, 0, 0755);
		if (r == 0)
			r = cvm_archive_writer_dir(w, d, mtime);
		if (r < 0)
			return r;
	}
	return 0;
}

/* One regular file of the version, checked against its record as it is written. */
static int add_file(struct cvm_archive_writer *w, int vfd, const char *id, const struct cvm_file *f,
		    int64_t mtime)
{
	uint8_t d[CVM_SHA256_LEN];
	char name[4096], hex[CVM_SHA256_HEX];
	struct stat st;
	int fd, r;

	r = cvm_fmt(name, sizeof(name), "%s/%s", id, f->path);
	if (r < 0)
		return r;
	fd = cvm_open_regular(vfd, f->path, O_RDONLY | O_NOFOLLOW, 0);
	if (fd < 0)
		return cvm_err(-CVM_E_INTEGRITY, "%s is damaged: cannot open %s: %s (run 'cudnnvm "
			       "verify %s')", id, f->path, cvm_strerror(fd), id);
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return cvm_err(-CVM_E_INTEGRITY, "%s is damaged: %s is not a regular file (run "
			       "'cudnnvm verify %s')", id, f->path, id);
	}
	r = cvm_archive_writer_file(w, name, (st.st_mode & 0111) ? 0755 : 0644, fd,
				    (uint64_t)st.st_size, mtime, d);
	close(fd);
	if (r < 0)
		return r;
	cvm_hex_encode(d, sizeof(d), hex);
	if (strcmp(hex, f->sha256))
		return cvm_err(-CVM_E_INTEGRITY, "%s is damaged: %s differs from its record (run "
			       "'cudnnvm verify %s'); no bundle is written", id, f->path, id);
	return 0;
}

/*
 * Why install --bundle would refuse the entry id/f->path (entry.h's rules),
 * or NULL: export writes nothing that no install takes back.
 */
static const char *name_problem(const char *id, const struct cvm_file *f)
{
	const char *why = cvm_entry_name_problem(f->path), *p = f->path, *e;
	unsigned depth = 0;

	if (why)
		return why;
	if (strlen(id) + strlen(f->path) + 3 > 4096)
		return "name too long";
	for (; *p; p = *e ? e + 1 : e) {
		e = strchrnul(p, '/');
		if (e - p > CVM_ENTRY_MAX_COMPONENT)
			return "a name component longer than 255 bytes";
		if (++depth > CVM_ENTRY_MAX_DEPTH)
			return "more than 32 folders deep";
	}
	return f->link ? cvm_entry_link_problem(f->path, f->link) : NULL;
}

/*
 * The version as it is must be what its record lists, as verify compares
 * them (the hashes aside: add_file checks each as it writes it), and each
 * name must be one install takes: a bundle is never made of what an edited
 * or damaged record names (a line of files.sha256 or links naming what is
 * not there, or a name outside the version, is never opened), nor of what
 * the record does not name. want is sorted. 0 or -CVM_E_INTEGRITY (printed).
 */
static int check_tree(int vfd, const char *id, const struct cvm_filelist *want)
{
	struct cvm_filelist have = { 0 };
	size_t i = 0, j = 0;
	int r = cvm_tree_list(vfd, &have);

	if (r < 0)
		r = cvm_err(-CVM_E_INTEGRITY, "%s is damaged: cannot list its files: %s (run 'cudnnvm "
			    "verify %s')", id, cvm_strerror(-r), id);
	while (r == 0 && (i < want->n || j < have.n)) {
		int c = i >= want->n ? 1 : j >= have.n ? -1 : strcmp(want->v[i].path, have.v[j].path);
		const struct cvm_file *f = c > 0 ? &have.v[j++] : &want->v[i++];
		const char *what = NULL, *why;
		char size[96];

		if (c < 0) {
			what = "is named by its record but missing";
		} else if (c > 0) {
			what = "is not in its record";
		} else {
			const struct cvm_file *h = &have.v[j++];

			if (!f->link != !h->link)
				what = "is not of the type its record says";
			else if (f->link && strcmp(f->link, h->link))
				what = "differs from its record (links)";
			/* Its size first: a grown file is not read (nor written) to find it out. */
			else if (!f->link && f->sized && f->size != h->size &&
				 snprintf(size, sizeof(size), "has %llu bytes, its record says %llu",
					  (unsigned long long)h->size, (unsigned long long)f->size) > 0)
				what = size;
		}
		if (what)
			r = cvm_err(-CVM_E_INTEGRITY, "%s is damaged: %s %s (run 'cudnnvm verify %s'); "
				    "no bundle is written", id, cvm_safe(f->path), what, id);
		else if ((why = name_problem(id, f)))
			r = cvm_err(-CVM_E_INTEGRITY, "cannot export %s: %s%s%s: %s (install --bundle "
				    "would refuse it); no bundle is written", id, cvm_safe(f->path),
				    f->link ? " -> " : "", f->link ? cvm_safe(f->link) : "", why);
	}
	cvm_filelist_release(&have);
	return r;
}

/*
 * FILE is created or replaces a regular file: a symlink, a folder or
 * anything else there is not export's to replace (the final rename would
 * replace a link, never follow it; a folder would fail only at the end).
 */
static int check_dest(const char *file)
{
	struct stat st;

	if (lstat(file, &st) < 0)
		return errno == ENOENT ? 0 : cvm_err(-errno, "cannot export to '%s': %s",
						     cvm_safe(file), strerror(errno));
	if (S_ISREG(st.st_mode))
		return 0;
	return cvm_err(-CVM_E_CONFLICT, "cannot export to '%s': it is %s, not a regular file "
		       "(export replaces only a file); nothing written", cvm_safe(file),
		       S_ISLNK(st.st_mode) ? "a symbolic link" : S_ISDIR(st.st_mode) ? "a folder"
		       : "a special file");
}

static int write_bundle(struct cvm_archive_writer *w, int vfd, const char *id,
			const struct cvm_filelist *files, int64_t mtime)
{
	struct cvm_filelist dirs = { 0 };
	char name[4096];
	int r;

	r = cvm_archive_writer_dir(w, id, mtime);
	for (size_t i = 0; i < files->n && r == 0 && !cvm_interrupted; i++) {
		const struct cvm_file *f = &files->v[i];

		r = add_parents(w, &dirs, id, f->path, mtime);
		if (r < 0)
			break;
		if (f->link) {
			r = cvm_fmt(name, sizeof(name), "%s/%s", id, f->path);
			if (r == 0)
				r = cvm_archive_writer_link(w, name, f->link, mtime);
		} else {
			r = add_file(w, vfd, id, f, mtime);
		}
	}
	if (r == 0)
		r = cvm_fmt(name, sizeof(name), "%s/.cudnnvm", id);
	if (r == 0)
		r = cvm_archive_writer_dir(w, name, mtime);
	for (size_t i = 0; i < 3 && r == 0; i++) {
		char rel[64], *buf = NULL;
		size_t len = 0;

		snprintf(rel, sizeof(rel), ".cudnnvm/%s", meta_files[i]);
		r = cvm_read_regular_at(vfd, rel, O_NOFOLLOW, 64 << 20, &buf, &len);
		if (r < 0) {
			r = cvm_err(-CVM_E_INTEGRITY, "%s is damaged: cannot read %s: %s", id, rel,
				    cvm_strerror(r));
			break;
		}
		r = cvm_fmt(name, sizeof(name), "%s/%s", id, rel);
		if (r == 0)
			r = cvm_archive_writer_data(w, name, 0644, buf, len, mtime);
		free(buf);
	}
	cvm_filelist_release(&dirs);
	return r == 0 && cvm_interrupted ? -EINTR : r;
}

int cvm_bundle_export(struct cvm_ctx *ctx, const char *id, const char *file, bool zstd,
		      struct cvm_bundle_info *info)
{
	struct cvm_archive_writer *w = NULL;
	struct cvm_filelist files = { 0 };
	struct cvm_record rec = { 0 };
	uint8_t d[CVM_SHA256_LEN];
	char tmp[4096], mnt[4096];
	int vfd = -1, fd = -1, r;

	vfd = cvm_store_open_version(&ctx->store, id);
	if (vfd < 0)
		return cvm_err(vfd, "cannot open %s/versions/%s: %s", cvm_safe(ctx->store.display), id,
			       cvm_strerror(-vfd));
	/* What another file system holds is not the version's: not read, not published. */
	r = cvm_fmt(tmp, sizeof(tmp), "versions/%s", id);
	if (r == 0)
		r = cvm_tree_mount(ctx->store.fd, tmp, mnt, sizeof(mnt));
	if (r != 0) {
		r = r > 0 ? cvm_err(-CVM_E_INTEGRITY, "refusing to export %s: '%s/%s' is a mount point "
				    "(another file system is mounted there); no bundle is written: "
				    "unmount it ('cudnnvm verify %s' says the same)", id,
				    cvm_safe(ctx->store.display), cvm_safe(mnt), id)
			  : cvm_err(r, "cannot look for mount points in %s: %s", id, cvm_strerror(-r));
		goto out;
	}
	r = check_dest(file);
	if (r < 0)
		goto out;
	r = cvm_record_read(vfd, id, &rec);
	if (r == 0 && strcmp(rec.id, id))
		r = cvm_err(-CVM_E_INTEGRITY, "%s is damaged: its record is of %s (run 'cudnnvm "
			    "verify %s')", id, cvm_safe(rec.id), id);
	if (r == 0)
		r = cvm_record_read_files(vfd, id, &files, NULL, 0);
	if (r < 0) {
		r = -CVM_E_INTEGRITY;
		goto out;
	}
	cvm_filelist_sort(&files);
	r = check_tree(vfd, id, &files);
	if (r < 0)
		goto out;
	r = cvm_fmt(tmp, sizeof(tmp), "%s.tmp.%ld", file, (long)getpid());
	if (r < 0) {
		r = cvm_err(r, "'%s': name too long", cvm_safe(file));
		goto out;
	}
	/* Beside FILE (the rename stays in its folder), new, never through a link. */
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY, 0644);
	if (fd < 0) {
		r = cvm_err(-errno, "cannot create '%s': %s", cvm_safe(tmp), strerror(errno));
		goto out;
	}
	/* From here a Ctrl-C, SIGTERM or SIGHUP ends the export at the next step, cleaned up. */
	cvm_interrupts_catch(true);
	r = cvm_archive_writer_open(fd, file, zstd, &w);
	if (r == 0)
		r = write_bundle(w, vfd, id, &files, rec.installed_at);
	cvm_fault("export-written");
	if (r == 0 && cvm_interrupted)
		r = -EINTR;
	if (r == 0)
		r = cvm_archive_writer_close(w, d, &info->size);
	if (r == 0 && fsync(fd) < 0)
		r = cvm_err(-errno, "cannot write '%s': %s", cvm_safe(tmp), strerror(errno));
	if (r == 0 && rename(tmp, file) < 0)
		r = cvm_err(-errno, "cannot rename '%s' to '%s': %s", cvm_safe(tmp), cvm_safe(file),
			    strerror(errno));
	if (r < 0)
		goto out;
	cvm_hex_encode(d, sizeof(d), info->sha256);
	info->files = files.n;
out:
	cvm_archive_writer_free(w);
	if (fd >= 0) {
		close(fd);
		if (r < 0)
			unlink(tmp);
	}
	if (cvm_interrupted && r == -EINTR) {
		cvm_err(r, "interrupted: no bundle was written");
		/* As a shell reports a command that a signal stopped. */
		r = 128 + cvm_interrupted;
	}
	cvm_interrupts_catch(false);
	cvm_filelist_release(&files);
	cvm_record_release(&rec);
	close(vfd);
	return r;
}

/* ------------------------------------------------------------- installing */

static bool is_meta(const char *path)
{
	return !strncmp(path, ".cudnnvm/", 9);
}

/*
 * What was extracted must be exactly what the carried lists name: the same
 * files with the same hashes, the same links with the same bodies.
 */
static int check_lists(const char *bundle, struct cvm_filelist *got, struct cvm_filelist *want)
{
	size_t i = 0, j = 0;

	cvm_filelist_sort(got);
	cvm_filelist_sort(want);
	while (i < got->n || j < want->n) {
		const struct cvm_file *g = i < got->n ? &got->v[i] : NULL;
		const struct cvm_file *w = j < want->n ? &want->v[j] : NULL;
		int c;

		if (!g && !w)
			break;
		if (g && is_meta(g->path)) {
			i++;
			continue;
		}
		c = !g ? 1 : !w ? -1 : strcmp(g->path, w->path);
		if (c < 0)
			return cvm_err(-CVM_E_INTEGRITY, "bundle '%s': %s is not in its files.sha256 "
				       "or links", cvm_safe(bundle), cvm_safe(g->path));
		if (c > 0)
			return cvm_err(-CVM_E_INTEGRITY, "bundle '%s': %s is named by its record but "
				       "missing", cvm_safe(bundle), cvm_safe(w->path));
		if (!g->link != !w->link || (g->link && strcmp(g->link, w->link)) ||
		    (!g->link && strcmp(g->sha256, w->sha256)))
			return cvm_err(-CVM_E_INTEGRITY, "bundle '%s': %s differs from its files.sha256%s",
				       cvm_safe(bundle), cvm_safe(g->path), g->link ? " (links)" : "");
		i++;
		j++;
	}
	return 0;
}

/* The files the new record lists: what was extracted, less the carried records. */
static int payload(const struct cvm_filelist *all, struct cvm_filelist *out)
{
	int r = 0;

	for (size_t i = 0; i < all->n && r == 0; i++) {
		const struct cvm_file *f = &all->v[i];

		if (!is_meta(f->path))
			r = cvm_filelist_add(out, f->path, f->link, f->link ? NULL : f->sha256,
					     f->size, f->mode);
	}
	return r;
}

/* The bundle's descriptor: the file, or a download of the URL into the cache. */
static int open_bundle(struct cvm_ctx *ctx, const struct cvm_bundle_opts *o, char *path, size_t len,
		       bool *verified, bool *fetched)
{
	struct cvm_fetch_opts fo = *o->fo;
	int fd, dfd;

	*verified = *fetched = false;
	if (!cvm_fetch_supported(o->bundle)) {
		snprintf(path, len, "%s", o->bundle);
		fd = cvm_open_regular(AT_FDCWD, o->bundle, O_RDONLY, 0);
		if (fd < 0)
			return cvm_err(fd, "cannot open '%s': %s", cvm_safe(o->bundle), cvm_strerror(fd));
		return fd;
	}
	/* install's options refuse this first (a usage error); the engine never fetches unverified. */
	if (!o->sha256 && !o->archive_sha256)
		return cvm_err(-CVM_E_USAGE, "--bundle %s: a bundle from a URL needs --sha256 (nothing "
			       "downloaded is used unverified)", cvm_safe(o->bundle));
	dfd = cvm_cache_dir(ctx);
	if (dfd < 0)
		return dfd;
	snprintf(path, len, "%s/cache/%s", ctx->store.display, base_name(o->bundle));
	/* Looking for a mirror's bundle: its absence is no error (the archive is used). */
	fo.quiet_notfound = o->archive_sha256 != NULL;
	cvm_info("downloading %s", o->bundle);
	fd = cvm_fetch(o->bundle, dfd, base_name(o->bundle), 0, o->sha256, &fo);
	close(dfd);
	*fetched = fd >= 0;
	*verified = fd >= 0 && o->sha256;
	return fd;
}

static void drop_cached(struct cvm_ctx *ctx, const char *url)
{
	int dfd = cvm_cache_dir(ctx);

	if (dfd < 0)
		return;
	if (unlinkat(dfd, base_name(url), 0) == 0)
		cvm_warn("removed %s/cache/%s: it failed verification", ctx->store.display,
			 base_name(url));
	close(dfd);
}

/* The first entry names the id (checked against what was asked for). */
static int bundle_id(const struct cvm_bundle_opts *o, int fd, const char *path, char *id, size_t len)
{
	struct cvm_archive *ar = NULL;
	struct cvm_version want, got;
	struct cvm_entry e;
	char ver[64], plat[64];
	int r, major;

	r = cvm_archive_open_fd(fd, path, &ar);
	if (r < 0)
		return r;
	r = cvm_archive_next(ar, &e);
	if (r == 0)
		r = cvm_err(-CVM_E_LAYOUT, "bundle '%s' is empty", cvm_safe(path));
	if (r < 0)
		goto out;
	snprintf(id, len, "%.*s", (int)strcspn(e.path, "/"), e.path);
	if (cvm_store_parse_id(id, ver, sizeof(ver), &major, plat, sizeof(plat)) < 0 ||
	    cvm_version_parse(ver, &got) < 0) {
		r = cvm_err(-CVM_E_LAYOUT, "'%s' is no cudnnvm bundle: its top folder '%s' is not a "
			    "version id", cvm_safe(path), cvm_safe(id));
		goto out;
	}
	r = 0;
	if (o->spec && (cvm_version_parse(o->spec, &want) < 0 || !cvm_version_matches(&want, &got)))
		r = cvm_err(-CVM_E_LAYOUT, "bundle '%s' holds %s, not cuDNN %s", cvm_safe(path), id,
			    cvm_safe(o->spec));
	else if (o->cuda_major && major != o->cuda_major)
		r = cvm_err(-CVM_E_LAYOUT, "bundle '%s' holds %s, a build for CUDA %d, not CUDA %d",
			    cvm_safe(path), id, major, o->cuda_major);
out:
	cvm_archive_free(ar);
	return r;
}

/* One install of a bundle: what its steps share, released by cvm_bundle_install. */
struct bundle_install {
	struct cvm_ctx *ctx;
	const struct cvm_bundle_opts *o;
	struct cvm_bundle_result *res;
	char path[4096];		/* the bundle, or the cache's copy of its URL */
	char got[CVM_SHA256_HEX];	/* the bundle's SHA-256, "" when unknown */
	char staged[256];		/* the staging folder, "" when none is ours */
	int fd, sfd;			/* the bundle, the staging folder */
	bool verified, fetched;
	struct stat st;
	struct cvm_extract x;
	struct cvm_filelist want, files;	/* the carried list, the new record's */
	struct cvm_record rec;
};

/* A regular file, whose SHA-256 is --sha256's when one is given. */
static int check_bundle_file(struct bundle_install *b)
{
	const struct cvm_bundle_opts *o = b->o;
	uint8_t d[CVM_SHA256_LEN];
	int r;

	if (fstat(b->fd, &b->st) < 0 || !S_ISREG(b->st.st_mode))
		return cvm_err(-EINVAL, "'%s' is not a regular file", cvm_safe(b->path));
	if (o->sha256 && !b->verified) {
		uint64_t n;

		r = cvm_sha256_fd(b->fd, d, &n, NULL, NULL);
		if (r < 0)
			return cvm_err(r, "cannot read '%s': %s", cvm_safe(b->path), cvm_strerror(-r));
		cvm_hex_encode(d, sizeof(d), b->got);
		if (strcmp(b->got, o->sha256))
			return cvm_err(-CVM_E_INTEGRITY, "bundle '%s': SHA-256 mismatch: expected %s, "
				       "got %s", cvm_safe(b->path), o->sha256, b->got);
	} else if (o->sha256) {
		snprintf(b->got, sizeof(b->got), "%s", o->sha256);
	} else if (o->archive_sha256) {
		cvm_info("no SHA-256 of the bundle is known: each of its files is checked against its "
			 "own list, and its record must name the catalogue's archive");
	} else {
		cvm_warn("no --sha256 given: bundle '%s' is checked only against its own file list",
			 cvm_safe(b->path));
	}
	return 0;
}

/* The bundle's tree into the staging folder, under the top folder its first entry named. */
static int extract_bundle(struct bundle_install *b)
{
	struct cvm_extract_opts xo = { 0 };
	int r;

	xo.archive_size = (uint64_t)b->st.st_size;
	/* An uncompressed bundle is its tree; zstd expands it some 1.2-2x. */
	xo.max_bytes = (uint64_t)b->st.st_size * 16 + (64u << 20);
	xo.jobs = 1;
	b->x.state.bundle = true;
	r = cvm_extract_run(b->fd, b->path, &xo, b->sfd, &b->x);
	if (r < 0)
		return r;
	if (strcmp(b->x.state.top, b->res->id))
		return cvm_err(-CVM_E_LAYOUT, "bundle '%s': its top folder changed", cvm_safe(b->path));
	return 0;
}

/* The carried record and files.sha256: of this id and, when asked, of the catalogue's archive. */
static int read_carried_record(struct bundle_install *b)
{
	const char *want_archive = b->o->archive_sha256;
	struct cvm_record *rec = &b->rec;
	int r;

	r = cvm_record_read(b->sfd, b->path, rec);
	if (r == 0)
		r = cvm_record_read_files(b->sfd, b->path, &b->want, NULL, 0);
	if (r < 0)
		return -CVM_E_INTEGRITY;
	if (strcmp(rec->id, b->res->id))
		return cvm_err(-CVM_E_INTEGRITY, "bundle '%s': its record is of %s, its folder of %s",
			       cvm_safe(b->path), cvm_safe(rec->id), b->res->id);
	if (want_archive && strcmp(rec->archive_sha256, want_archive))
		return cvm_err(-CVM_E_INTEGRITY, "bundle '%s' was made from an archive with SHA-256 "
			       "%s, not from NVIDIA's %s (the catalogue's for %s)", cvm_safe(b->path),
			       *rec->archive_sha256 ? cvm_safe(rec->archive_sha256) : "(none)",
			       want_archive, b->res->id);
	return 0;
}

/* One release per version, as install of an archive checks it (release.h). */
static int check_release(struct bundle_install *b)
{
	struct cvm_release_odd *odd = NULL;
	size_t nodd = 0;
	int r;

	r = cvm_release_check(b->sfd, b->rec.release, &b->x.elf, &odd, &nodd);
	if (r < 0)
		r = cvm_err(r, "bundle '%s': cannot read its libraries: %s", cvm_safe(b->path),
			    cvm_strerror(-r));
	else if (nodd)
		r = cvm_release_refuse(b->path, b->rec.release, odd, nodd);
	free(odd);
	if (r < 0)
		return r;
	if (!b->rec.archs.known)
		cvm_ccgate_scan(b->sfd, &b->x.elf, &b->rec.archs);
	return 0;
}

/* What was extracted: the carried lists exactly, a cuDNN tree of the record's version. */
static int check_extracted(struct bundle_install *b)
{
	struct cvm_cudnn_tree tree;
	struct cvm_version hv;
	int r;

	r = check_lists(b->path, &b->x.files, &b->want);
	if (r < 0)
		return r;
	r = cvm_cudnn_check_tree(b->sfd, b->path, &tree);
	if (r < 0)
		return r;
	cvm_version_parse(b->rec.version, &hv);
	hv.n = 3;
	if (!cvm_version_matches(&hv, &tree.header))
		return cvm_err(-CVM_E_LAYOUT, "bundle '%s': its headers are not of cuDNN %s",
			       cvm_safe(b->path), cvm_safe(b->rec.version));
	if (!tree.windows && b->rec.release)
		return check_release(b);
	return 0;
}

/* The carried record, with where this copy came from and when. */
static int write_record(struct bundle_install *b)
{
	struct cvm_record *rec = &b->rec;
	int r;

	free(rec->installed_by);
	rec->installed_by = strdup(cvm_user_name());
	rec->installed_at = (int64_t)time(NULL);
	free(rec->bundle);
	rec->bundle = strdup(base_name(b->path));
	snprintf(rec->bundle_sha256, sizeof(rec->bundle_sha256), "%s", b->got);
	r = payload(&b->x.files, &b->files);
	if (r == 0 && (!rec->installed_by || !rec->bundle))
		r = -ENOMEM;
	if (r == 0)
		r = cvm_record_write(b->sfd, rec, &b->files);
	if (r < 0)
		return cvm_err(r, "cannot write the record of %s: %s", b->res->id, cvm_strerror(-r));
	return 0;
}

int cvm_bundle_install(struct cvm_ctx *ctx, const struct cvm_bundle_opts *o,
		       struct cvm_bundle_result *res)
{
	struct bundle_install b = { .ctx = ctx, .o = o, .res = res, .sfd = -1 };
	int r;

	memset(res, 0, sizeof(*res));
	b.fd = open_bundle(ctx, o, b.path, sizeof(b.path), &b.verified, &b.fetched);
	if (b.fd < 0)
		return b.fd;
	r = check_bundle_file(&b);
	if (r == 0)
		r = bundle_id(o, b.fd, b.path, res->id, sizeof(res->id));
	if (r < 0)
		goto out;
	if (cvm_store_has(&ctx->store, res->id) && !o->force) {
		res->already = true;
		r = 0;
		goto out;
	}
	r = cvm_store_stage(&ctx->store, res->id, b.staged, sizeof(b.staged), &b.sfd);
	if (r < 0) {
		b.staged[0] = '\0';
		goto out;
	}
	cvm_store_flush_behind(&ctx->store);
	r = extract_bundle(&b);
	if (r == 0)
		r = read_carried_record(&b);
	if (r == 0)
		r = check_extracted(&b);
	if (r == 0)
		r = write_record(&b);
	if (r < 0)
		goto out;
	cvm_fault("install-staged");
	r = cvm_store_commit(&ctx->store, b.staged, res->id, o->force);
	if (r < 0)
		goto out;
	b.staged[0] = '\0';
	res->files = b.files.n;
out:
	if (b.staged[0] && cvm_store_discard(&ctx->store, b.staged) < 0)
		cvm_warn("cannot remove the staging folder %s/.staging/%s", ctx->store.display,
			 b.staged);
	if (b.sfd >= 0)
		close(b.sfd);
	close(b.fd);
	/* The cache keeps only what was verified as a whole. */
	if (r < 0 && b.fetched && !o->sha256)
		drop_cached(ctx, o->bundle);
	cvm_extract_release(&b.x);
	cvm_filelist_release(&b.files);
	cvm_filelist_release(&b.want);
	cvm_record_release(&b.rec);
	return r;
}
