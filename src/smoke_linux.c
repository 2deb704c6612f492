/* SPDX-License-Identifier: MIT */
/* The smoke test's parent side: file checks, the child, and the verdict. */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cudnnvm/activate.h"
#include "cudnnvm/ccgate.h"
#include "cudnnvm/cudnn.h"
#include "cudnnvm/elfinfo.h"
#include "cudnnvm/error.h"
#include "cudnnvm/fsutil.h"
#include "cudnnvm/out.h"
#include "cudnnvm/proc.h"
#include "cudnnvm/record.h"
#include "cudnnvm/smoke.h"
#include "cudnnvm/smokeverdict.h"
#include "cudnnvm/trust.h"

/* Runs the child with the toolkit's library folder first on the loader path. */
static void run_child(char **argv, const char *libdir, struct cvm_smoke_report *res)
{
	char ldpath[PATH_MAX * 2];
	const char *old = getenv("LD_LIBRARY_PATH");
	int status = 0, r;

	snprintf(ldpath, sizeof(ldpath), "%s%s%s", libdir, old && *old ? ":" : "", old ? old : "");
	/* stderr stays: what the child's loader or a sanitizer says is worth seeing. */
	r = cvm_proc_capture(argv, ldpath, true, (long)(cvm_smoke_timeout_s() * 1000), res->out,
			     sizeof(res->out), &status);
	res->status = r < 0 ? r : status;
}

/*
 * The child runs the constructors of what it loads, as the caller, and its
 * loader looks in dir first: dir, lib and every shared library in dir
 * (what libcudnn may pull in: libcudart, libcublas, its sub-libraries) must
 * be changeable by no one but root or the caller (trust.h). 0, -CVM_E_PERM
 * with t filled in, or -errno.
 */
static int loadable(const char *lib, const char *dir, struct cvm_trust *t)
{
	char path[PATH_MAX];
	struct dirent *de;
	DIR *d = NULL;
	int r;

	r = cvm_trust_check(dir, t);
	if (r == 0)
		r = cvm_trust_check(lib, t);
	if (r == 0 && !(d = opendir(dir)))
		r = -errno;
	while (r == 0 && d && (de = readdir(d))) {
		if (strncmp(de->d_name, "lib", 3) || !strstr(de->d_name, ".so") ||
		    cvm_fmt(path, sizeof(path), "%s/%s", dir, de->d_name) < 0)
			continue;
		r = cvm_trust_check(path, t);
		/* A dangling link loads nothing. */
		if (r == -ENOENT)
			r = 0;
	}
	if (d)
		closedir(d);
	return r;
}

/* As loadable, saying what was skipped (cvm_trust_skip). */
static int trusted_to_load(const char *lib, const char *dir)
{
	struct cvm_trust t;
	char what[PATH_MAX + 16];
	int r;

	r = loadable(lib, dir, &t);
	if (r == -CVM_E_PERM && cvm_fmt(what, sizeof(what), "loading '%s'", lib) == 0)
		cvm_trust_skip(what, &t);
	return r;
}

int cvm_smoke_probe(const char *lib, unsigned long *version, unsigned long *cudart, char *path,
		    size_t len)
{
	/* Only the version: loading every sub-library is the smoke test's part. */
	char *argv[] = { (char *)"/proc/self/exe", (char *)"__smoke-child", (char *)lib, (char *)"/",
			 (char *)"--no-gpu", (char *)"--no-subs", NULL };
	char dir[PATH_MAX], val[64], *slash;
	struct cvm_smoke_report *res = malloc(sizeof(*res));
	int r = -CVM_E_SMOKE;

	if (!res)
		return -ENOMEM;
	snprintf(dir, sizeof(dir), "%s", lib);
	slash = strrchr(dir, '/');
	if (slash)
		*slash = '\0';
	r = trusted_to_load(lib, dir);
	if (r < 0) {
		free(res);
		return r;
	}
	r = -CVM_E_SMOKE;
	run_child(argv, dir, res);
	if (res->status >= 0 && WIFEXITED(res->status) && cvm_smoke_get(res, "version", val, sizeof(val))) {
		*version = strtoul(val, NULL, 10);
		*cudart = cvm_smoke_get(res, "cudart", val, sizeof(val)) ? strtoul(val, NULL, 10) : 0;
		if (!cvm_smoke_get(res, "path", path, len))
			snprintf(path, len, "%s", lib);
		r = 0;
	}
	free(res);
	return r;
}

/*
 * The sub-libraries the child loaded by name: each must load and be of the
 * release the dispatcher reports (elfinfo.h); names the odd one.
 */
static int check_subs(const struct cvm_smoke_report *res, unsigned long libv)
{
	char want[32], found[32];

	cvm_elf_version_str(libv, want, sizeof(want));
	for (const char *p = res->out; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
		char name[128], path[PATH_MAX], rest[1024];
		size_t n = strcspn(p, "\n");
		struct cvm_elf_info e;
		if (!strncmp(p, "sub_error ", 10)) {
			if (sscanf(p + 10, "%127s", name) != 1)
				continue;
			snprintf(rest, sizeof(rest), "%.*s", (int)(n > 10 + strlen(name) + 1 ?
				 n - 10 - strlen(name) - 1 : 0), p + 10 + strlen(name) + 1);
			return cvm_err(-CVM_E_SMOKE, "smoke test: %s does not load: %s", cvm_safe(name),
				       cvm_safe(rest));
		}
		if (strncmp(p, "sub ", 4) || sscanf(p + 4, "%127s", name) != 1 ||
		    n <= 4 + strlen(name) + 1)
			continue;
		snprintf(path, sizeof(path), "%.*s", (int)(n - 4 - strlen(name) - 1),
			 p + 4 + strlen(name) + 1);
		if (cvm_elf_read_at(AT_FDCWD, path, &e) < 0)
			continue;
		/* The file itself, not the toolkit's link to it. */
		char real[PATH_MAX];
		if (realpath(path, real))
			snprintf(path, sizeof(path), "%s", real);
		if (e.check_version && libv >= 90000 && e.check_version != libv) {
			cvm_elf_version_str(e.check_version, found, sizeof(found));
			return cvm_err(-CVM_E_SMOKE, "smoke test: %s (%s) is cuDNN %s (%s), the rest is "
				       "cuDNN %s: a copy that mixes releases", cvm_safe(name),
				       cvm_safe(path), found, e.check_sym, want);
		}
		if (e.tag[0] && strcmp(e.tag, want))
			return cvm_err(-CVM_E_SMOKE, "smoke test: %s (%s) is cuDNN %s (its version "
				       "string), the rest is cuDNN %s: a copy that mixes releases",
				       cvm_safe(name), cvm_safe(path), e.tag, want);
	}
	return 0;
}

static bool under(const char *path, const char *dir)
{
	size_t n = strlen(dir);

	return !strncmp(path, dir, n) && path[n] == '/';
}

/* A library every user can read, that is not empty and is an ELF file (display: dir inside the root). */
static int check_lib(const char *dir, const char *name, const char *display)
{
	char path[PATH_MAX], magic[4];
	struct stat st;
	int fd;

	if (cvm_fmt(path, sizeof(path), "%s/%s", dir, name) < 0)
		return -ENAMETOOLONG;
	if (stat(path, &st) < 0)
		return cvm_err(-CVM_E_SMOKE, "smoke test: %s/%s: %s", display, name,
			       errno == ENOENT ? "missing" : strerror(errno));
	if (!(st.st_mode & S_IROTH))
		return cvm_err(-CVM_E_SMOKE, "smoke test: %s/%s is not readable by other users "
			       "(mode %04o): their programs will fail to load it", display, name,
			       st.st_mode & 07777);
	fd = cvm_open_regular(AT_FDCWD, path, O_RDONLY, 0);
	if (fd < 0 || st.st_size < 64 || read(fd, magic, 4) != 4 || memcmp(magic, "\177ELF", 4)) {
		if (fd >= 0)
			close(fd);
		return cvm_err(-CVM_E_SMOKE, "smoke test: %s/%s is %s", display, name,
			       fd == -CVM_E_NOTREG ? "not a regular file" : st.st_size < 64 ?
			       "empty or truncated" : "not a shared library");
	}
	close(fd);
	return 0;
}

/* After a failure: each library the process mapped, with the release its file carries. */
static void list_loaded(const cvm_json *mapped, unsigned long libv)
{
	char want[32];

	cvm_elf_version_str(libv, want, sizeof(want));
	cvm_info("  loaded    %zu cuDNN libraries:", cvm_json_len(mapped));
	for (size_t i = 0; i < cvm_json_len(mapped); i++) {
		const char *m = cvm_json_str(cvm_json_at(mapped, i));
		struct cvm_elf_info e;
		char v[32] = "";
		if (!m)
			continue;
		if (cvm_elf_read_at(AT_FDCWD, m, &e) == 0) {
			if (e.check_version)
				cvm_elf_version_str(e.check_version, v, sizeof(v));
			else if (e.tag[0])
				snprintf(v, sizeof(v), "%s", e.tag);
		}
		cvm_info("            %s: %s%s", cvm_safe(m),
			 v[0] ? "cuDNN " : "no version in the file", v);
		if (v[0] && strcmp(v, want))
			cvm_info("            ^ not %s: the odd one", want);
	}
}

/* The toolkit's real library and include folders (host paths). */
static int toolkit_paths(const struct cvm_ctx *ctx, const struct cvm_toolkit *tk, char *lib,
			 char *inc, size_t len)
{
	char inner[PATH_MAX], res[PATH_MAX];
	int r;

	r = cvm_fmt(inner, sizeof(inner), "%s/lib64", tk->display);
	if (r == 0 && cvm_resolve_in_root(ctx->root, inner, res, sizeof(res)) < 0) {
		r = cvm_fmt(inner, sizeof(inner), "%s/lib", tk->display);
		if (r == 0)
			r = cvm_resolve_in_root(ctx->root, inner, res, sizeof(res));
	}
	if (r == 0)
		r = cvm_fmt(lib, len, "%s%s", ctx->root, res);
	if (r == 0)
		r = cvm_fmt(inc, len, "%s%s/include", ctx->root, tk->display);
	return r;
}

/* What the steps of cvm_smoke_check share. */
struct check {
	struct cvm_ctx *ctx;
	const struct cvm_toolkit *tk;
	const char *id;			/* the active version, or NULL */
	struct cvm_record rec;		/* id's record */
	struct cvm_version hv;		/* the headers' version */
	struct cvm_smoke_report *res;
	char lib[PATH_MAX], inc[PATH_MAX], soname[64];
	char real[PATH_MAX];		/* the version's folder, resolved: all that loads is from there */
	char libpath[PATH_MAX];		/* the dispatcher the child loads */
	char loaded[PATH_MAX];		/* the file the child's loader took */
	unsigned long header, libv, cudart;
};

/* The headers a build against this toolkit would see: there, and of the active version. */
static int check_headers(struct check *c)
{
	c->header = cvm_smoke_header_version(c->inc, &c->hv);
	if (!c->header)
		return cvm_err(-CVM_E_SMOKE, "smoke test: %s/include/cudnn_version.h is missing or has "
			       "no version macros", cvm_safe(c->tk->display));
	if (c->id && c->header != c->rec.cudnn_version)
		return cvm_err(-CVM_E_SMOKE, "smoke test: the headers in %s/include say cuDNN %lu, but "
			       "the active version %s is %lu", cvm_safe(c->tk->display), c->header, c->id,
			       c->rec.cudnn_version);
	return 0;
}

/* The dispatcher and every sub-library of the headers' major, in the library folder. */
static int check_files(struct check *c)
{
	const char *display = c->lib + strlen(c->ctx->root);
	const char *const *subs;
	int r;

	snprintf(c->soname, sizeof(c->soname), "libcudnn.so.%u", c->hv.part[0]);
	r = check_lib(c->lib, c->soname, display);
	subs = cvm_smoke_sublibs(c->hv.part[0]);
	for (size_t i = 0; r == 0 && subs[i]; i++) {
		char sub[96];
		snprintf(sub, sizeof(sub), "libcudnn_%s.so.%u", subs[i], c->hv.part[0]);
		r = check_lib(c->lib, sub, display);
	}
	if (r == 0 && c->header >= 92100)
		r = check_lib(c->lib, "libcudnn_engines_tensor_ir.so.9", display);
	return r;
}

/* The version's own folder (everything loaded must come from there) and the dispatcher's path. */
static int version_folder(struct check *c)
{
	char vdir[PATH_MAX];
	int r;

	if (c->id)
		r = cvm_fmt(vdir, sizeof(vdir), "%s/versions/%s/lib", c->ctx->store.path, c->id);
	else
		r = cvm_fmt(vdir, sizeof(vdir), "%s/%s", c->lib, c->soname);
	if (r < 0 || !realpath(vdir, c->real))
		return cvm_err(-CVM_E_SMOKE, "smoke test: cannot resolve '%s'", cvm_safe(vdir));
	if (!c->id)
		*strrchr(c->real, '/') = '\0';
	return cvm_fmt(c->libpath, sizeof(c->libpath), "%s/%s", c->lib, c->soname);
}

/* The loader part: the child loads the dispatcher (once all it may load is trusted) and answers. */
static int load_in_child(struct check *c, char **argv)
{
	struct cvm_trust trust;
	int r, status;

	r = loadable(c->libpath, c->lib, &trust);
	if (r < 0)
		return cvm_err(r == -CVM_E_PERM ? -CVM_E_SMOKE : r, "smoke test: not loading %s: '%s': "
			       "%s (cudnnvm loads nothing that another user could have written)",
			       cvm_safe(c->libpath), cvm_safe(trust.path), trust.why);
	run_child(argv, c->lib, c->res);
	status = c->res->status;
	if (status == -ETIMEDOUT)
		return cvm_err(-CVM_E_SMOKE, "smoke test: %s did not finish in %.0f s: killed",
			       cvm_safe(c->libpath), cvm_smoke_timeout_s());
	if (status < 0)
		return cvm_err(status, "smoke test: cannot run the child: %s", strerror(-status));
	if (WIFSIGNALED(status))
		return cvm_err(-CVM_E_SMOKE, "smoke test: loading %s killed the process (signal %d, "
			       "%s)%s", cvm_safe(c->libpath), WTERMSIG(status), strsignal(WTERMSIG(status)),
			       WTERMSIG(status) == SIGBUS ? ": a library file is shorter than its "
			       "contents say (truncated?); 'cudnnvm verify' names it" : "");
	if (!cvm_smoke_versions(c->res, &c->libv, &c->cudart, c->loaded, sizeof(c->loaded),
				c->libpath)) {
		char e[1024];
		return cvm_err(-CVM_E_SMOKE, "smoke test: cannot load %s: %s", cvm_safe(c->libpath),
			       cvm_safe(cvm_smoke_get(c->res, "error", e, sizeof(e)) ? e :
					"no answer from the child"));
	}
	return 0;
}

/* The version checks: the loaded library is the headers' release, the activated copy, one release. */
static int check_library(struct check *c, cvm_json *json)
{
	char real[PATH_MAX];

	cvm_smoke_library(c->tk, c->id, c->loaded, c->header, c->libv, c->cudart, json);
	if (c->libv != c->header)
		return cvm_err(-CVM_E_SMOKE, "smoke test: %s reports cuDNN %lu, but the headers in "
			       "%s/include say %lu: headers and library of different versions",
			       cvm_safe(c->loaded), c->libv, cvm_safe(c->tk->display), c->header);
	if (realpath(c->loaded, real) && !under(real, c->real))
		return cvm_err(-CVM_E_SMOKE, "smoke test: the loader picked %s, not the activated %s",
			       cvm_safe(real), cvm_safe(c->real));
	return check_subs(c->res, c->libv);
}

/* The device code this very build carries: the record's, else read now (ccgate.h). */
static void device_code(const struct check *c, struct cvm_archs *archs)
{
	if (c->id && c->rec.archs.known) {
		*archs = c->rec.archs;
	} else {
		int lfd = open(c->lib, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (lfd >= 0) {
			cvm_ccgate_scan_dir(lfd, archs);
			close(lfd);
		}
	}
}

/* Each library the child mapped, into mapped; r (the verdict so far) or, if 0, the first foreign one. */
static int check_mapped(const struct check *c, cvm_json *mapped, int r)
{
	for (const char *p = c->res->out; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
		if (!strncmp(p, "mapped ", 7)) {
			size_t n = strcspn(p + 7, "\n");
			char m[PATH_MAX], mr[PATH_MAX];
			snprintf(m, sizeof(m), "%.*s", (int)n, p + 7);
			cvm_json_append(mapped, cvm_json_string(m));
			if (realpath(m, mr) && !under(mr, c->real) && r == 0)
				r = cvm_err(-CVM_E_SMOKE, "smoke test: the process loaded %s, which is not "
					    "from the activated version (%s): another cuDNN copy is mixing in",
					    cvm_safe(m), cvm_safe(c->real));
		}
	}
	return r;
}

/* The GPU part, then the libraries the process ended with; "gpu" and "loaded" into json. */
static int gpu_part(struct check *c, const struct cvm_archs *archs, cvm_json *json)
{
	cvm_json *gpu = cvm_json_object(), *mapped = cvm_json_array();
	int r, ndev = 0;

	if (!gpu || !mapped) {
		r = -ENOMEM;
		goto out;
	}
	r = cvm_smoke_gpu_judge(c->res, c->libv, c->cudart, archs, gpu, &ndev);
	r = check_mapped(c, mapped, r);
	r = cvm_smoke_gpu_end(c->res, r, ndev, gpu);
	if (ndev && !cvm_out.json && cvm_json_len(mapped) && r == 0)
		cvm_info("  loaded    %zu cuDNN libraries, all from the activated version",
			 cvm_json_len(mapped));
	else if (ndev && !cvm_out.json && cvm_json_len(mapped))
		list_loaded(mapped, c->libv);
	if (json) {
		cvm_json_set(json, "gpu", gpu);
		cvm_json_set(json, "loaded", mapped);
		gpu = mapped = NULL;
	}
out:
	cvm_json_free(gpu);
	cvm_json_free(mapped);
	return r;
}

int cvm_smoke_check(struct cvm_ctx *ctx, const struct cvm_toolkit *tk, const char *id,
		    const struct cvm_smoke_opts *o, cvm_json *json)
{
	struct check c = { .ctx = ctx, .tk = tk, .id = id };
	struct cvm_archs archs = { 0 };
	char devarg[16];
	char *argv[8] = { (char *)"/proc/self/exe", (char *)"__smoke-child", c.libpath, c.real, NULL };
	int r;

	r = toolkit_paths(ctx, tk, c.lib, c.inc, sizeof(c.lib));
	if (r < 0)
		return cvm_err(-CVM_E_SMOKE, "smoke test: no library folder in '%s'", cvm_safe(tk->display));
	if (id) {
		r = cvm_smoke_read_record(ctx, id, &c.rec);
		if (r < 0)
			return r;
	}
	r = check_headers(&c);
	if (r == 0)
		r = check_files(&c);
	if (r == 0)
		r = version_folder(&c);
	if (r < 0)
		goto out;
	cvm_smoke_child_opts(o, argv, 4, devarg, sizeof(devarg));
	c.res = calloc(1, sizeof(*c.res));
	if (!c.res) {
		r = -ENOMEM;
		goto out;
	}
	r = load_in_child(&c, argv);
	if (r == 0)
		r = check_library(&c, json);
	if (r < 0)
		goto out;
	device_code(&c, &archs);
	r = gpu_part(&c, &archs, json);
out:
	if (r < 0 && r != -CVM_E_SKIPPED)
		cvm_smoke_show_log(c.res);
	free(c.res);
	cvm_record_release(&c.rec);
	return r;
}
