/* SPDX-License-Identifier: MIT */
/*
 * The smoke test's parent on Linux: the operations of cvm_smoke_drive
 * (smoke_verdict.c) with ELF files, a loader path and a re-exec of
 * ourselves as the child, and cvm_smoke_probe.
 */
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

#include "activate.h"
#include "ccgate.h"
#include "cudnn.h"
#include "elfinfo.h"
#include "error.h"
#include "fsutil.h"
#include "out.h"
#include "proc.h"
#include "record.h"
#include "smoke.h"
#include "smokeverdict.h"
#include "trust.h"

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
	char dir[PATH_MAX], *slash;
	struct cvm_smoke_report *res = malloc(sizeof(*res));
	unsigned long cr = 0;
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
	if (res->status >= 0 && WIFEXITED(res->status) &&
	    cvm_smoke_versions(res, version, &cr, path, len, lib)) {
		*cudart = cr;
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

/* The toolkit's real library and include folders (host paths), and how messages show them. */
static int toolkit_paths(struct cvm_smoke_check *c)
{
	char inner[PATH_MAX], res[PATH_MAX];
	int r;

	r = cvm_fmt(inner, sizeof(inner), "%s/lib64", c->tk->display);
	if (r == 0 && cvm_resolve_in_root(c->ctx->root, inner, res, sizeof(res)) < 0) {
		r = cvm_fmt(inner, sizeof(inner), "%s/lib", c->tk->display);
		if (r == 0)
			r = cvm_resolve_in_root(c->ctx->root, inner, res, sizeof(res));
	}
	if (r == 0)
		r = cvm_fmt(c->lib, sizeof(c->lib), "%s%s", c->ctx->root, res);
	if (r == 0)
		r = cvm_fmt(c->inc, sizeof(c->inc), "%s%s/include", c->ctx->root, c->tk->display);
	if (r == 0)
		r = cvm_fmt(c->shown, sizeof(c->shown), "%s", c->lib + strlen(c->ctx->root));
	if (r == 0)
		r = cvm_fmt(c->inc_shown, sizeof(c->inc_shown), "%s/include", c->tk->display);
	if (r < 0)
		return cvm_err(-CVM_E_SMOKE, "smoke test: no library folder in '%s'",
			       cvm_safe(c->tk->display));
	return 0;
}

/* "libcudnn_ops.so.9" of "ops" (NULL: the dispatcher, libcudnn.so.9). */
static void lib_name(const char *sub, unsigned major, char *buf, size_t len)
{
	if (sub)
		snprintf(buf, len, "libcudnn_%s.so.%u", sub, major);
	else
		snprintf(buf, len, "libcudnn.so.%u", major);
}

/* A test on Linux: what cvm_smoke_check shares, and the folders of what loads. */
struct check {
	struct cvm_smoke_check c;	/* first: the operations get &c */
	char real[PATH_MAX];		/* the version's folder, resolved: all that loads is from there */
	char libpath[PATH_MAX];		/* the dispatcher the child loads */
};

static struct check *of(struct cvm_smoke_check *c)
{
	return (struct check *)c;
}

static const char *real_of(const struct cvm_smoke_check *c)
{
	return ((const struct check *)c)->real;
}

/* The version's own folder (everything loaded must come from there) and the dispatcher's path. */
static int version_folder(struct cvm_smoke_check *sc, char **argv)
{
	struct check *c = of(sc);
	char vdir[PATH_MAX];
	int r;

	if (sc->id)
		r = cvm_fmt(vdir, sizeof(vdir), "%s/versions/%s/lib", sc->ctx->store.path, sc->id);
	else
		r = cvm_fmt(vdir, sizeof(vdir), "%s/%s", sc->lib, sc->name);
	if (r < 0 || !realpath(vdir, c->real))
		return cvm_err(-CVM_E_SMOKE, "smoke test: cannot resolve '%s'", cvm_safe(vdir));
	if (!sc->id)
		*strrchr(c->real, '/') = '\0';
	argv[0] = (char *)"/proc/self/exe";
	argv[1] = (char *)"__smoke-child";
	argv[2] = c->libpath;
	argv[3] = c->real;
	return cvm_fmt(c->libpath, sizeof(c->libpath), "%s/%s", sc->lib, sc->name);
}

/* The loader part: the child loads the dispatcher (once all it may load is trusted) and answers. */
static int load_in_child(struct cvm_smoke_check *sc, char **argv)
{
	struct check *c = of(sc);
	struct cvm_trust trust;
	int r, status;

	r = loadable(c->libpath, sc->lib, &trust);
	if (r < 0)
		return cvm_err(r == -CVM_E_PERM ? -CVM_E_SMOKE : r, "smoke test: not loading %s: '%s': "
			       "%s (cudnnvm loads nothing that another user could have written)",
			       cvm_safe(c->libpath), cvm_safe(trust.path), trust.why);
	run_child(argv, sc->lib, sc->res);
	status = sc->res->status;
	if (status == -ETIMEDOUT)
		return cvm_err(-CVM_E_SMOKE, "smoke test: %s did not finish in %.0f s: killed",
			       cvm_safe(c->libpath), cvm_smoke_timeout_s());
	if (status < 0)
		return cvm_err(status, "smoke test: cannot run the child: %s", cvm_strerror(-status));
	if (WIFSIGNALED(status))
		return cvm_err(-CVM_E_SMOKE, "smoke test: loading %s killed the process (signal %d, "
			       "%s)%s", cvm_safe(c->libpath), WTERMSIG(status), strsignal(WTERMSIG(status)),
			       WTERMSIG(status) == SIGBUS ? ": a library file is shorter than its "
			       "contents say (truncated?); 'cudnnvm verify' names it" : "");
	if (!cvm_smoke_versions(sc->res, &sc->libv, &sc->cudart, sc->loaded, sizeof(sc->loaded),
				c->libpath)) {
		char e[1024];
		return cvm_err(-CVM_E_SMOKE, "smoke test: cannot load %s: %s", cvm_safe(c->libpath),
			       cvm_safe(cvm_smoke_get(sc->res, "error", e, sizeof(e)) ? e :
					"no answer from the child"));
	}
	return 0;
}

/* The version checks: the loaded library is the headers' release, the activated copy, one release. */
static int check_library(struct cvm_smoke_check *sc, cvm_json *json)
{
	char real[PATH_MAX];

	cvm_smoke_library(sc->tk, sc->id, cvm_root_inside(sc->ctx->root, sc->loaded), sc->header,
			  sc->libv, sc->cudart, json);
	if (sc->libv != sc->header)
		return cvm_err(-CVM_E_SMOKE, "smoke test: %s reports cuDNN %lu, but the headers in "
			       "%s/include say %lu: headers and library of different versions",
			       cvm_safe(sc->loaded), sc->libv, cvm_safe(sc->tk->display), sc->header);
	if (realpath(sc->loaded, real) && !under(real, real_of(sc)))
		return cvm_err(-CVM_E_SMOKE, "smoke test: the loader picked %s, not the activated %s",
			       cvm_safe(real), cvm_safe(real_of(sc)));
	return check_subs(sc->res, sc->libv);
}

/* The device code this very build carries: the record's, else read now (ccgate.h). */
static void device_code(const struct cvm_smoke_check *c, struct cvm_archs *archs)
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
static int check_mapped(const struct cvm_smoke_check *c, cvm_json *mapped, int r)
{
	const char *real = real_of(c);

	for (const char *p = c->res->out; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
		if (!strncmp(p, "mapped ", 7)) {
			size_t n = strcspn(p + 7, "\n");
			char m[PATH_MAX], mr[PATH_MAX];
			snprintf(m, sizeof(m), "%.*s", (int)n, p + 7);
			cvm_json_append(mapped, cvm_json_string(m));
			if (realpath(m, mr) && !under(mr, real) && r == 0)
				r = cvm_err(-CVM_E_SMOKE, "smoke test: the process loaded %s, which is not "
					    "from the activated version (%s): another cuDNN copy is mixing in",
					    cvm_safe(m), cvm_safe(real));
		}
	}
	return r;
}

/* After the GPU part: all from the activated version, or each library with its release. */
static void loaded_line(const struct cvm_smoke_check *c, const cvm_json *mapped, int ndev, int r)
{
	if (ndev && !cvm_out.json && cvm_json_len(mapped) && r == 0)
		cvm_info("  loaded    %zu cuDNN libraries, all from the activated version",
			 cvm_json_len(mapped));
	else if (ndev && !cvm_out.json && cvm_json_len(mapped))
		list_loaded(mapped, c->libv);
}

int cvm_smoke_check(struct cvm_ctx *ctx, const struct cvm_toolkit *tk, const char *id,
		    const struct cvm_smoke_opts *o, cvm_json *json)
{
	static const struct cvm_smoke_os linux_os = {
		.tested = "the active version",
		.paths = toolkit_paths,
		.lib_name = lib_name,
		.check_lib = check_lib,
		.prepare = version_folder,
		.load = load_in_child,
		.check_library = check_library,
		.device_code = device_code,
		.mapped = check_mapped,
		.loaded_line = loaded_line,
	};
	struct check c = { .c = { .ctx = ctx, .tk = tk, .id = id } };

	return cvm_smoke_drive(&c.c, &linux_os, o, json);
}
