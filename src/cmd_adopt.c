/* SPDX-License-Identifier: MIT */
/*
 * adopt: a cuDNN copied into a toolkit by hand becomes a version in the
 * store, and its files in the toolkit become managed links to the same
 * bytes, so that use and rollback work from then on. Order: copy into
 * staging, commit the version, then replace each toolkit file by a link
 * with one rename: at every instant every path resolves to the same bytes,
 * and running adopt again finishes an interrupted one.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cudnnvm/activate.h"
#include "cudnnvm/cli.h"
#include "cudnnvm/cudnn.h"
#include "cudnnvm/digest.h"
#include "cudnnvm/error.h"
#include "cudnnvm/fault.h"
#include "cudnnvm/fsutil.h"
#include "cudnnvm/journal.h"
#include "cudnnvm/manifest.h"
#include "cudnnvm/out.h"
#include "cudnnvm/plan.h"
#include "cudnnvm/record.h"
#include "cudnnvm/release.h"
#include "cudnnvm/ccgate.h"
#include "cudnnvm/compat.h"
#include "cudnnvm/store.h"

struct found {
	char **names;		/* "include/cudnn.h", "lib/libcudnn.so.8" */
	size_t n, cap;
};

/*
 * Where a hand install puts cuDNN in a toolkit, and where the same files go
 * in the version: include/ and lib/ (libcudnn*) on Linux; include\, bin\
 * (the DLLs) and lib\x64\ (the import .libs) on Windows.
 */
struct hand_dir {
	const char *sub, *prefix;
	char dir[PATH_MAX];	/* the toolkit's, as seen inside the root */
};

/* The toolkit folder that found name ("bin/cudnn64_9.dll") came from, and the name in it. */
static const char *source_of(const struct hand_dir *hd, size_t nhd, const char *name,
			     const char **leaf)
{
	for (size_t i = 0; i < nhd; i++) {
		size_t l = strlen(hd[i].sub);
		if (!strncmp(name, hd[i].sub, l) && name[l] == '/' && !strchr(name + l + 1, '/')) {
			*leaf = name + l + 1;
			return hd[i].dir;
		}
	}
	*leaf = name;
	return "";
}

static int found_add(struct found *f, const char *sub, const char *name)
{
	char buf[512];

	if (snprintf(buf, sizeof(buf), "%s/%s", sub, name) >= (int)sizeof(buf))
		return -ENAMETOOLONG;
	if (f->n == f->cap) {
		size_t cap = f->cap ? f->cap * 2 : 32;
		char **v = realloc(f->names, cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		f->names = v;
		f->cap = cap;
	}
	f->names[f->n] = strdup(buf);
	return f->names[f->n] ? (f->n++, 0) : -ENOMEM;
}

static bool is_managed(char **managed, size_t n, const char *path)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(managed[i], path))
			return true;
	return false;
}

/* The cuDNN files in one toolkit folder that cudnnvm did not make. */
static int scan(const char *root, const char *dir, const char *sub, const char *prefix,
		char **managed, size_t nm, struct found *f)
{
	char host[PATH_MAX], inner[PATH_MAX];
	struct dirent *de;
	DIR *d;
	int r = 0;

	if (cvm_fmt(host, sizeof(host), "%s%s", root, dir) < 0)
		return -ENAMETOOLONG;
	d = opendir(host);
	if (!d)
		return errno == ENOENT ? 0 : -errno;
	while (r == 0 && (de = readdir(d))) {
		if (strncmp(de->d_name, prefix, strlen(prefix)) || strstr(de->d_name, ".tmp."))
			continue;
		if (cvm_fmt(inner, sizeof(inner), "%s/%s", dir, de->d_name) < 0)
			continue;
		/* A recorded path that is a file again is what an interrupted adopt left. */
		struct stat st;
		if (!is_managed(managed, nm, inner) ||
		    (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && !S_ISLNK(st.st_mode)))
			r = found_add(f, sub, de->d_name);
	}
	closedir(d);
	return r;
}

/* Copies one found object into staging: a link stays a link, a file is copied and hashed. */
static int copy_one(const char *src, int sfd, const char *rel, struct cvm_filelist *files)
{
	char body[PATH_MAX], hex[CVM_SHA256_HEX];
	struct cvm_sha256 *sha = NULL;
	uint8_t d[CVM_SHA256_LEN], *buf = NULL;
	uint64_t size = 0;
	struct stat st;
	int in = -1, out = -1, r = 0;
	ssize_t k;

	if (lstat(src, &st) < 0)
		return -errno;
	if (S_ISLNK(st.st_mode)) {
		k = readlink(src, body, sizeof(body) - 1);
		if (k < 0)
			return -errno;
		body[k] = '\0';
		/* A sibling link is kept; one that leads elsewhere is copied as what it names. */
		if (!strchr(body, '/')) {
			if (symlinkat(body, sfd, rel) < 0)
				return -errno;
			return cvm_filelist_add(files, rel, body, NULL, 0, 0777);
		}
	}
	in = cvm_open_regular(AT_FDCWD, src, O_RDONLY, 0);
	if (in < 0 || fstat(in, &st) < 0 || !S_ISREG(st.st_mode)) {
		r = in < 0 ? in : -EINVAL;
		goto out;
	}
	out = openat(sfd, rel, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	sha = cvm_sha256_new();
	buf = malloc(1 << 20);
	if (out < 0 || !sha || !buf) {
		r = out < 0 ? -errno : -ENOMEM;
		goto out;
	}
	while ((k = read(in, buf, 1 << 20)) > 0) {
		r = cvm_sha256_update(sha, buf, (size_t)k);
		if (r == 0)
			r = cvm_write_all(out, buf, (size_t)k);
		if (r < 0)
			goto out;
		size += (uint64_t)k;
	}
	if (k < 0 || fchmod(out, (st.st_mode & 0111) ? 0755 : 0644) < 0) {
		r = -errno;
		goto out;
	}
	r = cvm_sha256_final(sha, d);
	if (r == 0) {
		cvm_hex_encode(d, sizeof(d), hex);
		r = cvm_filelist_add(files, rel, NULL, hex, size, (st.st_mode & 0111) ? 0755 : 0644);
	}
out:
	free(buf);
	cvm_sha256_free(sha);
	if (out >= 0)
		close(out);
	if (in >= 0)
		close(in);
	return r;
}

/* Windows: cudnn64_<major>.dll is there, and every cudnn*64_<N>.dll has the headers' major. */
static int identify_dlls(const char *bin, const struct found *f, const struct cvm_version *v)
{
	char want[32];
	bool have_main = false;

	snprintf(want, sizeof(want), "bin/cudnn64_%u.dll", v->part[0]);
	for (size_t i = 0; i < f->n; i++) {
		const char *u = strrchr(f->names[i], '_');
		unsigned m = 0;
		char tail[8] = "";

		if (strncmp(f->names[i], "bin/", 4))
			continue;
		if (!strcasecmp(f->names[i], want))
			have_main = true;
		if (u && sscanf(u + 1, "%u.%7s", &m, tail) == 2 && !strcasecmp(tail, "dll") &&
		    m != v->part[0])
			return cvm_err(-CVM_E_LAYOUT, "'%s/%s' is cuDNN %u, but the headers say %u.%u.%u: "
				       "a mixed copy; put one version back by hand first", cvm_safe(bin),
				       cvm_safe(f->names[i] + 4), m, v->part[0], v->part[1], v->part[2]);
	}
	if (!have_main)
		return cvm_err(-CVM_E_LAYOUT, "the headers say cuDNN %u.%u.%u but '%s' has no "
			       "cudnn64_%u.dll: nothing whole to adopt", v->part[0], v->part[1],
			       v->part[2], cvm_safe(bin), v->part[0]);
	return 0;
}

/* Headers and sonames must tell one story before anything is adopted. */
static int identify(const char *root, const char *inc, const char *lib, const struct found *f,
		    struct cvm_version *v)
{
	char path[PATH_MAX], *text = NULL, want[32];
	size_t len;
	int r = -CVM_E_NOTFOUND;

	for (const char *h = "cudnn_version.h"; h; h = strcmp(h, "cudnn.h") ? "cudnn.h" : NULL) {
		if (cvm_fmt(path, sizeof(path), "%s%s/%s", root, inc, h) < 0 ||
		    cvm_read_file_at(AT_FDCWD, path, 1 << 20, &text, &len) < 0)
			continue;
		r = cvm_cudnn_header_version(text, len, v);
		free(text);
		text = NULL;
		if (r == 0)
			break;
	}
	if (r < 0)
		return cvm_err(-CVM_E_LAYOUT, "no cuDNN version macros in '%s/cudnn_version.h' or "
			       "'cudnn.h': nothing to adopt", cvm_safe(inc));
	if (CVM_WINDOWS)
		return identify_dlls(lib, f, v);
	snprintf(want, sizeof(want), "libcudnn.so.%u", v->part[0]);
	bool have_main = false;
	for (size_t i = 0; i < f->n; i++) {
		const char *name = f->names[i] + 4, *so = strstr(name, ".so.");
		if (strncmp(f->names[i], "lib/", 4) || !so)
			continue;
		if (!strcmp(name, want))
			have_main = true;
		unsigned a = 0, b = 0, c = 0;
		int got = sscanf(so + 4, "%u.%u.%u", &a, &b, &c);
		if (got >= 1 && a != v->part[0])
			return cvm_err(-CVM_E_LAYOUT, "'%s/%s' is cuDNN %u, but the headers in '%s' say "
				       "%u.%u.%u: a mixed copy; put one version back by hand first",
				       cvm_safe(lib), cvm_safe(name), a, cvm_safe(inc), v->part[0],
				       v->part[1], v->part[2]);
		if (got == 3 && (b != v->part[1] || c != v->part[2]))
			return cvm_err(-CVM_E_LAYOUT, "'%s/%s' is cuDNN %u.%u.%u, but the headers say "
				       "%u.%u.%u: a mixed copy; put one version back by hand first",
				       cvm_safe(lib), cvm_safe(name), a, b, c, v->part[0], v->part[1],
				       v->part[2]);
	}
	/* On a second run (an interrupted adopt) it may be one of our links already. */
	if (!have_main && cvm_fmt(path, sizeof(path), "%s%s/%s", root, lib, want) == 0 &&
	    access(path, R_OK) == 0)
		have_main = true;
	if (!have_main)
		return cvm_err(-CVM_E_LAYOUT, "the headers in '%s' say cuDNN %u.%u.%u but '%s' has no "
			       "%s: nothing whole to adopt", cvm_safe(inc), v->part[0], v->part[1],
			       v->part[2], cvm_safe(lib), want);
	return 0;
}

/* A dry run: each copy into the store, and the version it makes. */
static int plan_copy(struct cvm_ctx *ctx, const struct hand_dir *hd, size_t nhd,
		     const struct found *f, const char *id)
{
	char src[PATH_MAX], dst[PATH_MAX];

	for (size_t i = 0; i < f->n; i++) {
		const char *leaf, *dir = source_of(hd, nhd, f->names[i], &leaf);
		if (cvm_fmt(src, sizeof(src), "%s/%s", dir, leaf) < 0 ||
		    cvm_fmt(dst, sizeof(dst), "%s/versions/%s/%s", ctx->store.display, id,
			    f->names[i]) < 0)
			return -ENAMETOOLONG;
		cvm_plan_describe("copy", src, NULL, "to %s", cvm_safe(dst));
	}
	if (cvm_fmt(dst, sizeof(dst), "%s/versions/%s", ctx->store.display, id) < 0)
		return -ENAMETOOLONG;
	cvm_plan_describe("create", dst, NULL, "(the %zu files above, with its record)", f->n);
	return 0;
}

static int stage_copy(struct cvm_ctx *ctx, const struct cvm_toolkit *tk, const struct hand_dir *hd,
		      size_t nhd, const struct found *f, const char *id,
		      const struct cvm_version *v, const char *release)
{
	const char *lib = hd[1].dir;
	struct cvm_filelist files = { 0 };
	struct cvm_cudnn_tree tree;
	struct cvm_record rec = { 0 };
	char staged[256] = "", src[PATH_MAX], from[PATH_MAX + 32];
	int sfd = -1, r;

	if (cvm_plan_dry())
		return plan_copy(ctx, hd, nhd, f, id);
	r = cvm_store_stage(&ctx->store, id, staged, sizeof(staged), &sfd);
	if (r < 0)
		return r;
	for (size_t i = 0; i < nhd; i++) {
		r = cvm_mkdir_p_at(sfd, hd[i].sub, 0755);
		if (r < 0) {
			r = cvm_err(r, "cannot create the staging folders: %s", strerror(-r));
			goto out;
		}
	}
	for (size_t i = 0; i < f->n; i++) {
		const char *leaf, *dir = source_of(hd, nhd, f->names[i], &leaf);
		r = cvm_fmt(src, sizeof(src), "%s%s/%s", ctx->root, dir, leaf);
		if (r == 0)
			r = copy_one(src, sfd, f->names[i], &files);
		if (r < 0) {
			r = cvm_err(r, "cannot copy '%s': %s", cvm_safe(src), strerror(-r));
			goto out;
		}
	}
	r = cvm_cudnn_check_tree(sfd, tk->display, &tree);
	if (r < 0)
		goto out;
	/* One release per version: the copy in the toolkit must not mix releases (ELF: Linux's). */
	if (!tree.windows) {
		struct cvm_release_odd *odd = NULL;
		size_t nodd = 0;
		r = cvm_release_check(sfd, release, &odd, &nodd);
		if (r < 0)
			r = cvm_err(r, "cannot read the libraries in '%s': %s", cvm_safe(lib),
				    strerror(-r));
		else if (nodd)
			r = cvm_release_refuse(lib, release, odd, nodd);
		free(odd);
		if (r < 0)
			goto out;
	}
	r = tree.windows ? 0 : cvm_ccgate_scan(sfd, &rec.archs);
	if (r < 0) {
		r = cvm_err(r, "cannot read the libraries in '%s': %s", cvm_safe(lib), strerror(-r));
		goto out;
	}
	snprintf(from, sizeof(from), "adopted from %s", tk->display);
	rec.id = (char *)id;
	rec.version = (char *)release;
	rec.release = (char *)release;
	rec.platform = (char *)cvm_host_platform();
	rec.cuda_major = tk->major;
	rec.archive = from;
	rec.installed_at = (int64_t)time(NULL);
	rec.installed_by = (char *)cvm_user_name();
	rec.cudnn_version = cvm_version_encode(v);
	rec.library = tree.library;
	r = cvm_record_write(sfd, &rec, &files);
	if (r < 0) {
		r = cvm_err(r, "cannot write the record of %s: %s", id, strerror(-r));
		goto out;
	}
	cvm_fault("adopt-staged");
	r = cvm_store_commit(&ctx->store, staged, id, false);
	if (r == 0)
		staged[0] = '\0';
out:
	if (staged[0])
		cvm_store_discard(&ctx->store, staged);
	if (sfd >= 0)
		close(sfd);
	cvm_filelist_release(&files);
	return r;
}

int cvm_cmd_adopt(struct cvm_ctx *ctx, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "cuda", required_argument, NULL, 'c' },
		{ "no-ldconfig", no_argument, NULL, 'L' },
		CVM_DRYRUN_LONGOPT,
		CVM_COMMON_LONGOPTS,
		{ NULL, 0, NULL, 0 }
	};
	struct cvm_activate_opts o = { .kind = "adopt", .no_smoke = true, .adopt = true,
				       .argc = argc, .argv = argv };
	const struct cvm_backend *be = cvm_backend();
	struct cvm_toolkit tk = { 0 };
	struct cvm_version v;
	struct found f = { 0 };
	char **managed = NULL, cuda[16], release[32], id[160];
	char active[160];
	const char *cuda_arg = NULL;
	size_t nm = 0;
	int c, r;

	while ((c = getopt_long(argc, argv, CVM_COMMON_SHORTOPTS, opts, NULL)) != -1) {
		if (cvm_cli_common_opt(c))
			continue;
		if (c == 'c')
			cuda_arg = optarg;
		else if (c == 'L')
			o.no_ldconfig = true;
		else
			return cvm_usage_bad_option("adopt", argv);
	}
	if (optind != argc)
		return cvm_usage("adopt", "unexpected argument '%s'", cvm_safe(argv[optind]));
	/* The hand copy is the machine's (a toolkit's folders), on Windows too. */
	r = CVM_WINDOWS && ctx->user ? cvm_err(-CVM_E_PERM, "adopt: a toolkit's files are the "
					       "machine's: run it without --user, elevated")
				     : cvm_cli_refuse_user(ctx, "adopt");
	if (r == 0)
		r = cvm_toolkit_select(ctx->root, cuda_arg, &tk);
	if (r < 0)
		return r;
	cvm_toolkit_name(&tk, cuda, sizeof(cuda));
	struct cvm_switch sw = { .store = &ctx->store, .root = ctx->root, .tk = &tk, .cuda = cuda };
	struct hand_dir hd[3] = { { "include", "cudnn", "" }, { CVM_WINDOWS ? "bin" : "lib",
				  CVM_WINDOWS ? "cudnn" : "libcudnn", "" }, { "lib/x64", "cudnn", "" } };
	size_t nhd = CVM_WINDOWS ? 3 : 2;
	r = be->dirs(&sw, hd[0].dir, hd[1].dir, sizeof(hd[0].dir));
	if (r == 0 && CVM_WINDOWS)
		r = cvm_fmt(hd[2].dir, sizeof(hd[2].dir), "%s/lib/x64", tk.display);
	if (r == 0)
		r = be->managed(&sw, &managed, &nm);
	for (size_t i = 0; r == 0 && i < nhd; i++)
		r = scan(ctx->root, hd[i].dir, hd[i].sub, hd[i].prefix, managed, nm, &f);
	if (r < 0) {
		if (r != -CVM_E_NOTFOUND)
			r = cvm_err(r, "cannot read the toolkit '%s': %s", cvm_safe(tk.display),
				    strerror(-r));
		goto out;
	}
	if (!f.n) {
		r = cvm_err(-CVM_E_NOTFOUND, "CUDA %s (%s) holds no hand-copied cuDNN: nothing to adopt",
			    cuda, tk.display);
		goto out;
	}
	r = identify(ctx->root, hd[0].dir, hd[1].dir, &f, &v);
	if (r < 0)
		goto out;
	cvm_version_format(&v, release, sizeof(release));
	r = cvm_store_id(id, sizeof(id), release, tk.major, cvm_host_platform());
	if (r < 0)
		goto out;
	if (cvm_active_get(&ctx->store, cuda, active, sizeof(active)) == 0 && strcmp(active, id)) {
		r = cvm_err(-CVM_E_CONFLICT, "CUDA %s already has %s active through cudnnvm, and "
			    "hand-copied cuDNN files beside it (e.g. '%s'): remove those by hand",
			    cuda, active, f.names[0]);
		goto out;
	}
	/* Already in the store: an adopt that was interrupted after the copy; finish it. */
	if (!cvm_store_has(&ctx->store, id)) {
		r = stage_copy(ctx, &tk, hd, nhd, &f, id, &v, release);
		if (r < 0)
			goto out;
		/* A dry run copied nothing: the switch is planned from the toolkit's names. */
		if (cvm_plan_dry()) {
			o.files = f.names;
			o.nfiles = f.n;
		} else {
			cvm_verbose("copied %zu files of cuDNN %s into %s", f.n, release, id);
		}
	}
	r = cvm_activate(ctx, &tk, id, &o);
	if (r < 0)
		goto out;
	if (cvm_plan_dry())
		cvm_info("dry run: cuDNN %s of CUDA %s (%s) would be adopted as %s (%zu files); "
			 "nothing was changed", release, cuda, tk.display, id, f.n);
	else if (CVM_WINDOWS)
		cvm_info("adopted cuDNN %s of CUDA %s (%s) as %s: its %zu files moved to %s/backups/%s, "
			 "and PATH finds the store's copy of the same bytes", release, cuda, tk.display,
			 id, f.n, ctx->store.display, id);
	else
		cvm_info("adopted cuDNN %s of CUDA %s (%s) as %s: its %zu files are links into the "
			 "store now (originals kept in %s/backups/%s)", release, cuda, tk.display, id,
			 f.n, ctx->store.display, id);
out:
	for (size_t i = 0; i < f.n; i++)
		free(f.names[i]);
	free(f.names);
	cvm_strv_free(managed, nm);
	cvm_toolkit_release(&tk);
	return r;
}
