/* SPDX-License-Identifier: MIT */
/* verify: re-hash installed versions against the record their install wrote. */
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "digest.h"
#include "error.h"
#include "json.h"
#include "out.h"
#include "record.h"
#include "release.h"
#include "store.h"
#include "trust.h"
#include "version.h"

/* One difference: "ID: kind: path[: detail]" on stderr, and in arr when given. */
static void problem(cvm_json *arr, const char *id, const char *kind, const char *path,
		    const char *detail)
{
	if (arr) {
		cvm_json *o = cvm_json_object();
		cvm_json_set(o, "kind", cvm_json_string(kind));
		cvm_json_set(o, "path", cvm_json_string(path));
		cvm_json_set(o, "detail", cvm_json_string(detail));
		cvm_json_append(arr, o);
	}
	/* stderr, so that the list of bad files survives -q and --json. */
	fprintf(stderr, "%s: %s: %s%s%s\n", id, kind, cvm_safe(path), detail ? ": " : "",
		detail ? cvm_safe(detail) : "");
}

/* cvm_store_check_version's report, as verify's problems. */
struct check_report {
	cvm_json *arr;
	const char *id;
	bool report;
};

static void check_problem(void *arg, const char *rel, const char *why, bool mount)
{
	const struct check_report *c = arg;

	(void)mount;
	if (c->report)
		problem(c->arr, c->id, why, rel, NULL);
}

/* The version folder's identity now: -ENOENT when it is gone. */
static int version_ident(struct cvm_ctx *ctx, const char *id, struct stat *st)
{
	int fd = cvm_store_open_version(&ctx->store, id), r = 0;

	if (fd < 0)
		return fd;
	if (fstat(fd, st) < 0)
		r = -errno;
	close(fd);
	return r;
}

/* Why a version could not be verified: a file (of the version) and what of it. */
struct why {
	char path[4200], detail[1024];
};

/*
 * A file both the record and the folder have: the same kind, then the same
 * size (when the record has it), and only then the same SHA-256: a file
 * grown to gigabytes is a difference found without reading it. 1 when it
 * differs (detail says how, or ""), 0 when the same, or a negative error
 * (why says which file).
 */
static int differs(int fd, const struct cvm_file *w, const struct cvm_file *h, char *detail,
		   size_t dlen, struct why *why)
{
	char hex[CVM_SHA256_HEX];
	int r;

	detail[0] = '\0';
	if (w->link || h->link) {
		if (!w->link || !h->link || !h->link[0])
			snprintf(detail, dlen, "a %s, the record says a %s",
				 !h->link ? "file" : h->link[0] ? "symlink" : "special file",
				 w->link ? "symlink" : "file");
		return !w->link || !h->link || strcmp(w->link, h->link);
	}
	if (w->sized && h->size != w->size) {
		snprintf(detail, dlen, "%llu bytes, the record says %llu",
			 (unsigned long long)h->size, (unsigned long long)w->size);
		return 1;
	}
	r = cvm_sha256_at(fd, w->path, hex, NULL);
	if (r < 0) {
		snprintf(why->path, sizeof(why->path), "%s", w->path);
		snprintf(why->detail, sizeof(why->detail), "%s", cvm_strerror(r));
		return r;
	}
	return strcmp(w->sha256, hex) != 0;
}

/* Both lists sorted by path: one merge finds what differs, is missing or is extra. */
static int compare(int fd, const char *id, const struct cvm_filelist *want,
		   const struct cvm_filelist *have, cvm_json *arr, bool report, struct why *why)
{
	char detail[128];
	size_t i = 0, j = 0;
	int bad = 0, r;

	while (i < want->n || j < have->n) {
		int c = i >= want->n ? 1 : j >= have->n ? -1 : strcmp(want->v[i].path, have->v[j].path);
		/* A mount point is cvm_store_check_version's to report, whatever the record says. */
		if (c >= 0 && have->v[j].mount) {
			i += c == 0;
			j++;
			continue;
		}
		if (c < 0) {
			if (report)
				problem(arr, id, "missing", want->v[i].path, NULL);
			i++;
			bad++;
		} else if (c > 0) {
			if (report)
				problem(arr, id, "extra", have->v[j].path, NULL);
			j++;
			bad++;
		} else {
			const struct cvm_file *w = &want->v[i++], *h = &have->v[j++];
			r = differs(fd, w, h, detail, sizeof(detail), why);
			if (r < 0)
				return r;
			if (r && report)
				problem(arr, id, "modified", w->path, detail[0] ? detail : NULL);
			bad += r;
		}
	}
	return bad;
}

/*
 * One pass over a version: the number of differences (>= 0) or a negative
 * error (why says what could not be read); its differences are printed only
 * when report is true.
 */
static int verify_pass(struct cvm_ctx *ctx, const char *id, cvm_json *arr, bool report,
		       struct stat *ident, size_t *nfiles, struct why *why)
{
	struct cvm_filelist want = { 0 }, have = { 0 };
	struct cvm_release_odd *odd = NULL;
	struct cvm_record rec = { 0 };
	char rwhy[sizeof(why->detail)];
	size_t nodd = 0;
	bool have_rec = false;
	int fd, r, bad = 0;

	why->path[0] = why->detail[0] = '\0';
	fd = cvm_store_open_version(&ctx->store, id);
	if (fd < 0)
		return fd;
	if (fstat(fd, ident) < 0) {
		r = -errno;
		goto out;
	}
	/* The record is part of what install wrote: it must be there and whole. */
	cvm_err_mute(true);
	r = cvm_record_read(fd, id, &rec);
	if (r == 0 && strcmp(rec.id, id))
		r = -CVM_E_MANIFEST;
	have_rec = r == 0;
	if (r < 0) {
		if (report)
			problem(arr, id, "record missing or unreadable", ".cudnnvm/record.json", NULL);
		bad++;
	}
	r = cvm_record_read_files(fd, id, &want, rwhy, sizeof(rwhy));
	cvm_err_mute(false);
	if (r < 0 && rwhy[0]) {
		/* ".cudnnvm/links line 3: ...": the file, then what is wrong with it. */
		size_t k = strcspn(rwhy, " :");
		snprintf(why->path, sizeof(why->path), "%.*s", (int)k, rwhy);
		snprintf(why->detail, sizeof(why->detail), "%s",
			 !rwhy[k] ? "" : rwhy + k + (rwhy[k] == ':' ? 2 : 1));
	}
	/* Listed, not read: compare reads a file only when kind and size agree. */
	if (r == 0)
		r = cvm_tree_list(fd, &have);
	if (r < 0)
		goto out;
	cvm_filelist_sort(&want);
	r = compare(fd, id, &want, &have, arr, report, why);
	if (r < 0)
		goto out;
	bad += r;
	/*
	 * Unchanged bytes are no comfort when others can change them: owners,
	 * modes, set-id bits, kinds and mounts, by the rule use trusts (trust.h).
	 */
	{
		struct check_report cr = { .arr = arr, .id = id, .report = report };
		r = cvm_store_check_version(&ctx->store, id, check_problem, &cr);
		if (r < 0)
			goto out;
		bad += r;
	}
	/* One release per version: versions installed before install checked it. */
	if (have_rec && rec.release && cvm_release_check(fd, rec.release, NULL, &odd, &nodd) == 0) {
		for (size_t k = 0; k < nodd; k++) {
			char what[512];
			snprintf(what, sizeof(what), "%s is cuDNN %s (%s), not %s", odd[k].path,
				 odd[k].found, odd[k].how, rec.release);
			if (report)
				problem(arr, id, "mixed release", what, NULL);
			bad++;
		}
	}
	free(odd);
	r = bad;
	*nfiles = want.n;
out:
	cvm_record_release(&rec);
	cvm_filelist_release(&want);
	cvm_filelist_release(&have);
	close(fd);
	return r;
}

/*
 * Returns the number of differences (>= 0), or a negative error (printed).
 * verify takes no lock: a version that an uninstall or install --force
 * replaced or removed while it was read is read again (or skipped when gone)
 * instead of being reported as damaged.
 */
static int verify_one(struct cvm_ctx *ctx, const char *id, cvm_json *arr)
{
	struct stat before = { 0 }, now = { 0 };
	struct why why = { "", "" };
	size_t nfiles = 0;
	int r = 0;

	for (int attempt = 0; attempt < 5; attempt++) {
		cvm_err_mute(true);
		r = verify_pass(ctx, id, NULL, false, &before, &nfiles, &why);
		cvm_err_mute(false);
		if (r == 0)
			break;
		/* A difference or an error: is it still the same folder? */
		int k = version_ident(ctx, id, &now);
		if (k == -ENOENT) {
			cvm_info("%s: uninstalled while it was verified", id);
			return 0;
		}
		if (k == 0 && r != -ENOENT && (now.st_dev != before.st_dev || now.st_ino != before.st_ino))
			continue;	/* replaced meanwhile: again */
		/* The same folder: this pass is the answer, reported. */
		cvm_err_mute(true);
		r = verify_pass(ctx, id, arr, true, &before, &nfiles, &why);
		cvm_err_mute(false);
		break;
	}
	if (r == -ENOENT && version_ident(ctx, id, &now) == -ENOENT) {
		cvm_info("%s: uninstalled while it was verified", id);
		return 0;
	}
	if (r < 0) {
		/* A list of its files that cannot be read is a difference too; the others go on. */
		problem(arr, id, r == -CVM_E_INTEGRITY ? "record malformed" : "cannot be read",
			why.path[0] ? why.path : cvm_strerror(r), why.path[0] ? why.detail : NULL);
		return 1;
	}
	if (!r)
		cvm_info("%s: ok (%zu files)", id, nfiles);
	return r;
}

/*
 * Every STORE/active/cuda-X.Y must be the link use writes, to a version
 * that is installed: one that is not leaves the toolkit's links dangling.
 * Each broken one is printed, and listed in the array arg when there is one.
 */
static void active_problem(void *arg, const char *cuda, const char *id, const char *why)
{
	fprintf(stderr, "active/cuda-%s: broken: %s%s%s%s\n", cuda, why, id[0] ? " (" : "",
		id[0] ? cvm_safe(id) : "", id[0] ? ")" : "");
	cvm_cli_broken_json(arg, cuda, id, why);
}

int cvm_cmd_verify(struct cvm_ctx *ctx, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "cuda", required_argument, NULL, 'c' },
		CVM_COMMON_LONGOPTS,
		{ NULL, 0, NULL, 0 }
	};
	char **ids = NULL;
	size_t n = 0, failed = 0;
	cvm_json *doc = NULL, *list = NULL, *arr = NULL;
	int c, r, major = 0, broken = 0;

	while ((c = cvm_cli_getopt(argc, argv, opts)) != -1) {
		if (c != 'c')
			return cvm_usage_bad_option("verify", argv);
		r = cvm_cuda_arg("verify", optarg, &major);
		if (r < 0)
			return r;
	}
	if (argc - optind > 1)
		return cvm_usage("verify", "at most one VERSION");
	if (!ctx->store_open && optind < argc)
		return cvm_err(-CVM_E_NOTFOUND, "cuDNN %s is not installed", cvm_safe(argv[optind]));
	/* No store: nothing to verify, and --json says so in the usual shape. */
	if (!ctx->store_open)
		r = 0;
	else
		r = cvm_store_match(&ctx->store, optind < argc ? argv[optind] : "", major, NULL,
				    &ids, &n);
	if (r == -CVM_E_VERSION && optind >= argc)
		r = cvm_store_list(&ctx->store, &ids, &n);
	if (r == -CVM_E_VERSION)
		return cvm_err(r, "invalid version '%s': expected numbers such as 8.9.7 or an id",
			       cvm_safe(argv[optind]));
	if (r < 0)
		return r;
	if (!n && optind < argc) {
		r = cvm_err(-CVM_E_NOTFOUND, "cuDNN %s is not installed%s", cvm_safe(argv[optind]),
			    major ? " for that CUDA major" : "");
		goto out;
	}
	if (cvm_out.json) {
		doc = cvm_json_object();
		list = cvm_json_array();
		if (!doc || !list || cvm_json_set(doc, "verified", list) < 0) {
			cvm_json_free(list);
			r = -ENOMEM;
			goto out;
		}
	}
	/* The whole store: its activations too (one VERSION: that version alone). */
	if (ctx->store_open && optind >= argc) {
		broken = cvm_active_each_broken(&ctx->store, active_problem, doc);
		if (broken < 0) {
			r = cvm_err(broken, "cannot read %s/active: %s", cvm_safe(ctx->store.display),
				    cvm_strerror(-broken));
			goto out;
		}
	}
	for (size_t i = 0; i < n; i++) {
		cvm_json *one = NULL;
		if (doc) {
			one = cvm_json_object();
			arr = cvm_json_array();
			cvm_json_set(one, "id", cvm_json_string(ids[i]));
			cvm_json_set(one, "problems", arr);
			cvm_json_append(list, one);
		}
		/* One version that cannot be read does not stop the others being checked. */
		r = verify_one(ctx, ids[i], arr);
		if (one)
			cvm_json_set(one, "ok", cvm_json_bool(r == 0));
		if (r != 0)
			failed++;
	}
	if (doc)
		cvm_json_print(doc);
	r = 0;
	if (failed)
		r = cvm_err(-CVM_E_INTEGRITY, "%zu of %zu installed versions differ from their record "
			    "or cannot be read%s", failed, n,
			    broken ? ", and an active link is broken ('cudnnvm doctor' says how to fix "
			    "it)" : "");
	else if (broken)
		r = cvm_err(-CVM_E_INTEGRITY, "%d active link%s broken: %s toolkit%s links lead "
			    "nowhere ('cudnnvm doctor' says how to fix it)", broken,
			    broken == 1 ? " is" : "s are", broken == 1 ? "its" : "their",
			    broken == 1 ? "'s" : "s'");
	else if (!n)
		cvm_info("nothing installed to verify");
out:
	cvm_json_free(doc);
	cvm_strv_free(ids, n);
	return r;
}
