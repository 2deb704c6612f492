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

int cvm_smoke_check(struct cvm_ctx *ctx, const struct cvm_toolkit *tk, const char *id,
		    const struct cvm_smoke_opts *o, cvm_json *json)
{
	struct cvm_record rec = { 0 };
	struct cvm_version hv = { 0 };
	struct cvm_smoke_report *res = NULL;
	char lib[PATH_MAX], inc[PATH_MAX], soname[64], vdir[PATH_MAX], real[PATH_MAX], hpath[PATH_MAX];
	char val[PATH_MAX], devarg[16], libpath[PATH_MAX], *text = NULL;
	char *argv[8] = { (char *)"/proc/self/exe", (char *)"__smoke-child", libpath, real, NULL };
	const char *const *subs;
	unsigned long libv, cudart = 0, header = 0;
	size_t len, argc = 4;
	int fd, r, ndev = 0;
	cvm_json *gpu = NULL, *mapped = NULL;
	struct cvm_trust trust;
	struct cvm_archs archs = { 0 };

	r = toolkit_paths(ctx, tk, lib, inc, sizeof(lib));
	if (r < 0)
		return cvm_err(-CVM_E_SMOKE, "smoke test: no library folder in '%s'", cvm_safe(tk->display));
	if (id) {
		fd = cvm_store_open_version(&ctx->store, id);
		if (fd < 0)
			return cvm_err(fd, "cannot open %s: %s", id, strerror(-fd));
		r = cvm_record_read(fd, id, &rec);
		close(fd);
		if (r < 0)
			return r;
	}
	/* The headers a build against this toolkit would see. */
	if (cvm_fmt(hpath, sizeof(hpath), "%s/cudnn_version.h", inc) == 0 &&
	    cvm_read_file_at(AT_FDCWD, hpath, 1 << 20, &text, &len) == 0) {
		if (cvm_cudnn_header_version(text, len, &hv) == 0)
			header = cvm_version_encode(&hv);
		free(text);
	}
	if (!header) {
		r = cvm_err(-CVM_E_SMOKE, "smoke test: %s/include/cudnn_version.h is missing or has no "
			    "version macros", cvm_safe(tk->display));
		goto out;
	}
	if (id && header != rec.cudnn_version) {
		r = cvm_err(-CVM_E_SMOKE, "smoke test: the headers in %s/include say cuDNN %lu, but the "
			    "active version %s is %lu", cvm_safe(tk->display), header, id,
			    rec.cudnn_version);
		goto out;
	}
	snprintf(soname, sizeof(soname), "libcudnn.so.%u", hv.part[0]);
	r = check_lib(lib, soname, lib + strlen(ctx->root));
	subs = cvm_smoke_sublibs(hv.part[0]);
	for (size_t i = 0; r == 0 && subs[i]; i++) {
		char sub[96];
		snprintf(sub, sizeof(sub), "libcudnn_%s.so.%u", subs[i], hv.part[0]);
		r = check_lib(lib, sub, lib + strlen(ctx->root));
	}
	if (r == 0 && header >= 92100)
		r = check_lib(lib, "libcudnn_engines_tensor_ir.so.9", lib + strlen(ctx->root));
	if (r < 0)
		goto out;
	/* The version's own folder: everything loaded must come from there. */
	if (id)
		r = cvm_fmt(vdir, sizeof(vdir), "%s/versions/%s/lib", ctx->store.path, id);
	else
		r = cvm_fmt(vdir, sizeof(vdir), "%s/%s", lib, soname);
	if (r < 0 || !realpath(vdir, real)) {
		r = cvm_err(-CVM_E_SMOKE, "smoke test: cannot resolve '%s'", cvm_safe(vdir));
		goto out;
	}
	if (!id)
		*strrchr(real, '/') = '\0';
	r = cvm_fmt(libpath, sizeof(libpath), "%s/%s", lib, soname);
	if (r < 0)
		goto out;
	argv[2] = libpath;
	if (o->no_gpu)
		argv[argc++] = (char *)"--no-gpu";
	if (o->all_devices) {
		argv[argc++] = (char *)"--all-devices";
	} else if (o->device >= 0) {
		snprintf(devarg, sizeof(devarg), "%d", o->device);
		argv[argc++] = (char *)"--device";
		argv[argc++] = devarg;
	}
	argv[argc] = NULL;
	res = calloc(1, sizeof(*res));
	if (!res) {
		r = -ENOMEM;
		goto out;
	}
	r = loadable(libpath, lib, &trust);
	if (r < 0) {
		r = cvm_err(r == -CVM_E_PERM ? -CVM_E_SMOKE : r, "smoke test: not loading %s: '%s': %s "
			    "(cudnnvm loads nothing that another user could have written)",
			    cvm_safe(libpath), cvm_safe(trust.path), trust.why);
		goto out;
	}
	run_child(argv, lib, res);
	if (res->status == -ETIMEDOUT) {
		r = cvm_err(-CVM_E_SMOKE, "smoke test: %s did not finish in %.0f s: killed",
			    cvm_safe(libpath), cvm_smoke_timeout_s());
		goto out;
	}
	if (res->status < 0) {
		r = cvm_err(res->status, "smoke test: cannot run the child: %s", strerror(-res->status));
		goto out;
	}
	if (WIFSIGNALED(res->status)) {
		r = cvm_err(-CVM_E_SMOKE, "smoke test: loading %s killed the process (signal %d, %s)%s",
			    cvm_safe(libpath), WTERMSIG(res->status), strsignal(WTERMSIG(res->status)),
			    WTERMSIG(res->status) == SIGBUS ? ": a library file is shorter than its "
			    "contents say (truncated?); 'cudnnvm verify' names it" : "");
		goto out;
	}
	if (!cvm_smoke_get(res, "version", val, sizeof(val))) {
		char e[1024];
		r = cvm_err(-CVM_E_SMOKE, "smoke test: cannot load %s: %s", cvm_safe(libpath),
			    cvm_safe(cvm_smoke_get(res, "error", e, sizeof(e)) ? e : "no answer from the child"));
		goto out;
	}
	libv = strtoul(val, NULL, 10);
	if (cvm_smoke_get(res, "cudart", val, sizeof(val)))
		cudart = strtoul(val, NULL, 10);
	if (!cvm_smoke_get(res, "path", hpath, sizeof(hpath)))
		snprintf(hpath, sizeof(hpath), "%s", libpath);
	cvm_smoke_library(tk, id, hpath, header, libv, cudart, json);
	if (libv != header) {
		r = cvm_err(-CVM_E_SMOKE, "smoke test: %s reports cuDNN %lu, but the headers in %s/include "
			    "say %lu: headers and library of different versions", cvm_safe(hpath), libv,
			    cvm_safe(tk->display), header);
		goto out;
	}
	if (realpath(hpath, val) && !under(val, real)) {
		r = cvm_err(-CVM_E_SMOKE, "smoke test: the loader picked %s, not the activated %s",
			    cvm_safe(val), cvm_safe(real));
		goto out;
	}
	r = check_subs(res, libv);
	if (r < 0)
		goto out;
	/* The device code this very build carries: the record's, else read now (ccgate.h). */
	if (id && rec.archs.known) {
		archs = rec.archs;
	} else {
		int lfd = open(lib, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (lfd >= 0) {
			cvm_ccgate_scan_dir(lfd, &archs);
			close(lfd);
		}
	}
	/* The GPU part. */
	gpu = cvm_json_object();
	mapped = cvm_json_array();
	if (!gpu || !mapped) {
		r = -ENOMEM;
		goto out;
	}
	r = cvm_smoke_gpu_judge(res, libv, cudart, &archs, gpu, &ndev);
	for (const char *p = res->out; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
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
	r = cvm_smoke_gpu_end(res, r, ndev, gpu);
	if (ndev && !cvm_out.json && cvm_json_len(mapped) && r == 0)
		cvm_info("  loaded    %zu cuDNN libraries, all from the activated version",
			 cvm_json_len(mapped));
	else if (ndev && !cvm_out.json && cvm_json_len(mapped))
		list_loaded(mapped, libv);
	if (json) {
		cvm_json_set(json, "gpu", gpu);
		cvm_json_set(json, "loaded", mapped);
		gpu = mapped = NULL;
	}
out:
	if (r < 0 && r != -CVM_E_SKIPPED)
		cvm_smoke_show_log(res);
	cvm_json_free(gpu);
	cvm_json_free(mapped);
	free(res);
	cvm_record_release(&rec);
	return r;
}
