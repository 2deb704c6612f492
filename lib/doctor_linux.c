/* SPDX-License-Identifier: MIT */
/*
 * doctor and which on Linux (doctor.h, doctor_os.h): the copies the loader
 * can find (its cache, the store, each toolkit's lib folder, LD_LIBRARY_PATH,
 * the system's folders, conda and pip), which one a program of each toolkit
 * loads in the loader's order, and what ELF libraries, their links and the
 * loader's configuration say is wrong.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "activate.h"
#include "cudnn.h"
#include "doctor.h"
#include "doctor_os.h"
#include "error.h"
#include "findings.h"
#include "fsutil.h"
#include "out.h"
#include "proc.h"
#include "ccgate.h"
#include "procmap.h"
#include "record.h"
#include "smoke.h"
#include "store.h"
#include "toolkit.h"
#include "trust.h"

struct cvm_doctor_os_state {
	char cache[65536];		/* `ldconfig -p` output, "" when none */
	char no_cache[160];		/* why there is none, "" when read */
	bool said_no_cache;
};

static void problem(struct cvm_doctor_report *rp, const char *fix, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void problem(struct cvm_doctor_report *rp, const char *fix, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	cvm_findings_vproblem(&rp->f, fix, fmt, ap);
	va_end(ap);
}

/* What doctor could not check, and why: said, so that "no problems" means what it says. */
static void unchecked(struct cvm_doctor_report *rp, const char *what, const char *why)
{
	cvm_findings_unchecked(&rp->f, what, why);
}

/* The path as the user knows it (inside the root). */
static const char *shown(const struct cvm_doctor_report *rp, const char *host)
{
	size_t rl = strlen(rp->ctx->root);

	return rl && !strncmp(host, rp->ctx->root, rl) && host[rl] == '/' ? host + rl : host;
}

/* The toolkit's library folder: its lib64, else its lib, as a host path into out. 0 or -1. */
static int lib_dir(const char *root, const struct cvm_toolkit *tk, char *out, size_t len)
{
	char inner[PATH_MAX], res[PATH_MAX];

	for (const char *sub = "lib64"; sub; sub = strcmp(sub, "lib64") ? NULL : "lib")
		if (cvm_fmt(inner, sizeof(inner), "%s/%s", tk->display, sub) == 0 &&
		    cvm_resolve_in_root(root, inner, res, sizeof(res)) == 0) {
			snprintf(out, len, "%s%s", root, res);
			return 0;
		}
	return -1;
}

/* Reads the header version of the include folder next to a lib folder. */
static unsigned long header_near(const char *libdir)
{
	/* The toolkit's and the wheel's ../include; Debian's packages: /usr/include/<triplet>/_v9. */
	static const char *const rel[] = { "../include/cudnn_version.h", "../../include/cudnn_version.h",
					   "../../include/%s/cudnn_version_v9.h",
					   "../../include/%s/cudnn_version_v8.h", "../include/cudnn.h" };
	const char *triplet = strrchr(libdir, '/') ? strrchr(libdir, '/') + 1 : libdir;

	return cvm_doctor_header(libdir, rel, sizeof(rel) / sizeof(rel[0]), triplet);
}

/* Adds the copy in dir if it has a libcudnn.so.<N> not seen yet. */
static void consider(struct cvm_doctor_report *rp, const char *dir, const char *where, bool managed)
{
	char lib[PATH_MAX], real[PATH_MAX], path[PATH_MAX];
	struct cvm_doctor_copy *c;

	for (int major = 9; major >= 7; major--) {
		if (cvm_fmt(lib, sizeof(lib), "%s/libcudnn.so.%d", dir, major) < 0 || !realpath(lib, real))
			continue;
		c = cvm_doctor_copy_add(rp, real, where);
		if (!c)
			return;
		snprintf(c->dir, sizeof(c->dir), "%s", dir);
		c->major = major;
		c->managed = managed || (rp->ctx->store_open && !strncmp(real, rp->ctx->store.path,
									strlen(rp->ctx->store.path)));
		c->header = header_near(dir);
		int r = cvm_smoke_probe(lib, &c->library, &c->cudart, path, sizeof(path));
		if (r < 0)
			c->library = 0;
		c->untrusted = r == -CVM_E_PERM;
		return;
	}
}

static void consider_glob(struct cvm_doctor_report *rp, const char *pattern, const char *where)
{
	char pat[PATH_MAX];
	glob_t g;

	if (cvm_fmt(pat, sizeof(pat), "%s%s", rp->ctx->root, pattern) < 0 ||
	    glob(pat, GLOB_NOSORT, NULL, &g) != 0)
		return;
	for (size_t i = 0; i < g.gl_pathc; i++)
		consider(rp, g.gl_pathv[i], where, false);
	globfree(&g);
}

/* Runs argv and keeps its stdout in buf: its exit status, or -1. */
static int capture(char **argv, char *buf, size_t len)
{
	int status, r = cvm_proc_capture(argv, NULL, false, 30000, buf, len, &status);

	return r < 0 ? -1 : WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* `ldconfig -p` of the root's cache, so that what programs find there is known. */
static void read_cache(const char *root, struct cvm_doctor_os_state *os)
{
	const char *prog = getenv("CUDNNVM_LDCONFIG");
	char cache[PATH_MAX];
	char *argv[] = { NULL, (char *)"-p", (char *)"-C", cache, NULL };

	os->cache[0] = '\0';
	if (prog && !*prog) {
		snprintf(os->no_cache, sizeof(os->no_cache), "CUDNNVM_LDCONFIG is set and empty");
		return;
	}
	argv[0] = (char *)(access("/sbin/ldconfig", X_OK) == 0 ? "/sbin/ldconfig" : "/usr/sbin/ldconfig");
	if (cvm_fmt(cache, sizeof(cache), "%s/etc/ld.so.cache", root) < 0 || access(cache, R_OK) < 0) {
		snprintf(os->no_cache, sizeof(os->no_cache), "/etc/ld.so.cache cannot be read");
		return;
	}
	if (capture(argv, os->cache, sizeof(os->cache)) != 0) {
		os->cache[0] = '\0';
		snprintf(os->no_cache, sizeof(os->no_cache), "'%s -p' failed", argv[0]);
	}
}

/* The folder the loader cache names for soname, or "" (paths inside the root). */
static void cache_dir(const struct cvm_doctor_os_state *os, const char *soname, char *out,
		      size_t len)
{
	size_t sl = strlen(soname);

	out[0] = '\0';
	for (const char *p = os->cache; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
		while (*p == ' ' || *p == '\t')
			p++;
		if (strncmp(p, soname, sl) || p[sl] != ' ')
			continue;
		const char *arrow = strstr(p, "=> ");
		if (!arrow)
			continue;
		size_t n = strcspn(arrow + 3, "\n");
		snprintf(out, len, "%.*s", (int)n, arrow + 3);
		char *slash = strrchr(out, '/');
		if (slash)
			*slash = '\0';
		return;
	}
}

/*
 * The first executable name on PATH, as execvp would find it, into out, when
 * it is trusted (trust.h; an untrusted one is said and skipped). 0 or < 0.
 */
static int find_trusted(const char *name, char *out, size_t len)
{
	const char *path = getenv("PATH");
	struct cvm_trust t;
	char what[PATH_MAX + 16];
	int r;

	for (const char *p = path ? path : "/usr/bin:/bin", *q; *p; p = *q ? q + 1 : q) {
		q = strchrnul(p, ':');
		if (q == p || cvm_fmt(out, len, "%.*s/%s", (int)(q - p), p, name) < 0 ||
		    access(out, X_OK) < 0)
			continue;
		r = cvm_trust_check(out, &t);
		if (r == -CVM_E_PERM && cvm_fmt(what, sizeof(what), "running '%s'", out) == 0)
			cvm_trust_skip(what, &t);
		return r;
	}
	return -ENOENT;
}

/* Containers often hide /proc/driver/nvidia: nvidia-smi still knows the version. */
static void driver_from_smi(char *out, size_t len)
{
	char prog[PATH_MAX];
	char *argv[] = { prog, (char *)"--query-gpu=driver_version",
			 (char *)"--format=csv,noheader", NULL };
	char buf[256];
	size_t n;

	out[0] = '\0';
	if (find_trusted("nvidia-smi", prog, sizeof(prog)) < 0 || capture(argv, buf, sizeof(buf)) != 0)
		return;
	n = strspn(buf, "0123456789.");
	if (n && n < len) {
		memcpy(out, buf, n);
		out[n] = '\0';
	}
}

int cvm_doctor_parse_driver(const char *text, char *out, size_t len)
{
	const char *p = strstr(text, "Kernel Module");

	if (!p)
		return -CVM_E_NOTFOUND;
	p += 13;
	while (*p == ' ' || *p == '\t')
		p++;
	size_t n = strspn(p, "0123456789.");
	if (!n || n >= len)
		return -CVM_E_NOTFOUND;
	memcpy(out, p, n);
	out[n] = '\0';
	return 0;
}

const char *cvm_doctor_min_driver(int cuda_major)
{
	switch (cuda_major) {
	case 11:
		return "450.80.02";
	case 12:
		return "525.60.13";
	case 13:
		return "580.65.06";
	default:
		return NULL;
	}
}

/* The per-copy checks: readable, whole, linked, complete, one major. */
static void check_copy(struct cvm_doctor_report *rp, const struct cvm_doctor_copy *c)
{
	static const char *const subs8[] = { "ops_infer", "ops_train", "cnn_infer", "cnn_train",
					     "adv_infer", "adv_train", NULL };
	static const char *const subs9[] = { "ops", "cnn", "adv", "graph", "heuristic",
					     "engines_precompiled", "engines_runtime_compiled", NULL };
	const char *const *subs = c->major >= 9 ? subs9 : subs8;
	const char *d = shown(rp, c->dir);
	char path[PATH_MAX], hv[32], lv[32], fix[PATH_MAX + 64];
	struct dirent *de;
	struct stat st;
	DIR *dir;

	cvm_doctor_version_str(c->header, hv, sizeof(hv));
	cvm_doctor_version_str(c->library, lv, sizeof(lv));
	if (c->untrusted) {
		(void)cvm_fmt(fix, sizeof(fix), "%s/libcudnn.so.%d (the version it reports, its CUDA runtime)",
			      d, c->major);
		unchecked(rp, fix, "not loaded: another user could have written it (see the warning)");
	} else if (!c->library)
		problem(rp, "reinstall it; 'cudnnvm verify' names damaged files of managed versions",
			"%s/libcudnn.so.%d does not load", d, c->major);
	if (c->header && c->library && c->header != c->library)
		problem(rp, c->managed ? "cudnnvm use <version> puts headers and libraries of one "
			"version back" : "remove the stray headers or libraries, or 'cudnnvm adopt' "
			"the copy after making it whole",
			"%s: headers say cuDNN %s, the library is %s%s", d, hv, lv,
			(c->header >= 90000) != (c->library >= 90000) ? " (different majors)" : "");
	dir = opendir(c->dir);
	while (dir && (de = readdir(dir))) {
		if (strncmp(de->d_name, "libcudnn", 8))
			continue;
		if (cvm_fmt(path, sizeof(path), "%s/%s", c->dir, de->d_name) < 0)
			continue;
		if (stat(path, &st) < 0) {
			(void)cvm_fmt(fix, sizeof(fix), "remove the link or reinstall (ls -l %s/%s)", d,
				      de->d_name);
			problem(rp, fix, "%s/%s is a broken link", d, de->d_name);
			continue;
		}
		if (!(st.st_mode & S_IROTH)) {
			(void)cvm_fmt(fix, sizeof(fix), "chmod a+r %s/%s", d, de->d_name);
			problem(rp, fix, "%s/%s is not readable by other users", d, de->d_name);
		}
		if (st.st_size == 0)
			problem(rp, "reinstall it (a copy that ran out of space or was cut short)",
				"%s/%s is empty", d, de->d_name);
	}
	if (dir)
		closedir(dir);
	char missing[512] = "";
	for (size_t i = 0; subs[i]; i++) {
		if (cvm_fmt(path, sizeof(path), "%s/libcudnn_%s.so.%d", c->dir, subs[i], c->major) < 0 ||
		    access(path, F_OK) == 0)
			continue;
		size_t o = strlen(missing);
		snprintf(missing + o, sizeof(missing) - o, "%slibcudnn_%s.so.%d", o ? ", " : "", subs[i],
			 c->major);
	}
	if (missing[0])
		problem(rp, "copy every libcudnn_* file of the release, or install it with cudnnvm",
			"%s lacks %s: cuDNN %d loads sub-libraries at the first convolution and fails "
			"there", d, missing, c->major);
}

/*
 * The links the backend recorded in the toolkit of an active version: a
 * line of its record it refuses, a recorded link that is something else now.
 */
static void check_links(struct cvm_doctor_report *rp, const struct cvm_toolkit *tk,
			const char *cuda, const char *id)
{
	const struct cvm_backend *be = cvm_backend();
	struct cvm_switch sw = { .store = &rp->ctx->store, .root = rp->ctx->root, .tk = tk,
				 .cuda = cuda, .to = id };
	char **what = NULL;
	size_t n = 0;

	if (!be->audit)
		return;
	if (be->audit(&sw, &what, &n) < 0) {
		unchecked(rp, "the links cudnnvm recorded in the toolkit", "cannot read them");
		return;
	}
	for (size_t i = 0; i < n; i++)
		problem(rp, "cudnnvm leaves what it did not write as it is: remove it to have "
			"'cudnnvm use' put its link back (a refused line of the record is dropped by "
			"the next 'cudnnvm use')", "CUDA %s: %s", cuda, what[i]);
	cvm_strv_free(what, n);
}

/*
 * cuDNN's names in one of a toolkit's folders that are links leading
 * nowhere: what a deleted or broken active version leaves behind. A
 * program finds the name and fails to load it (or a build fails on a
 * header) instead of falling back to another copy.
 */
static void check_dangling(struct cvm_doctor_report *rp, const char *cuda, const char *sub,
			   const char *dir)
{
	char names[512] = "", fix[256];
	struct dirent *de;
	struct stat st;
	size_t n = 0, o = 0;
	DIR *d = opendir(dir);
	int fd;

	if (!d)
		return;
	fd = dirfd(d);
	while ((de = readdir(d))) {
		if (strncmp(de->d_name, "libcudnn", 8) && strncmp(de->d_name, "cudnn", 5))
			continue;
		/* Leading nowhere: to no file, or through a file where a folder should be. */
		if (fstatat(fd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISLNK(st.st_mode) ||
		    fstatat(fd, de->d_name, &st, 0) == 0 || (errno != ENOENT && errno != ENOTDIR))
			continue;
		if (n++ < 4 && o < sizeof(names)) {
			int k = snprintf(names + o, sizeof(names) - o, "%s%s", o ? ", " : "",
					 cvm_safe(de->d_name));
			o += k > 0 ? (size_t)k : 0;
		}
	}
	closedir(d);
	if (!n)
		return;
	snprintf(fix, sizeof(fix), "activate an installed version ('cudnnvm use VERSION --cuda %s'), "
		 "which writes its links again; remove any such link that cudnnvm did not write", cuda);
	problem(rp, fix, "%zu cuDNN link%s in the %s folder %s of CUDA %s lead%s nowhere: %s%s", n,
		n == 1 ? "" : "s", sub, shown(rp, dir), cuda, n == 1 ? "s" : "", names,
		n > 4 ? ", ..." : "");
}

/* Which copy a program built against tk would load, in the loader's order. */
static void check_toolkit(struct cvm_doctor_report *rp, const struct cvm_toolkit *tk,
			  const char *drv, cvm_json *jt)
{
	char libdir[PATH_MAX], inner[PATH_MAX], res[PATH_MAX], lib[PATH_MAX], real[PATH_MAX];
	char cdir[PATH_MAX], why[128] = "", from[PATH_MAX] = "", cuda[16], id[160], conf[PATH_MAX];
	const char *ldp = getenv("LD_LIBRARY_PATH");
	const struct cvm_doctor_copy *own = NULL, *chosen = NULL;
	int major = 0;

	/* The driver was checked per copy: a toolkit on Linux has no build of its own to hold to it. */
	(void)drv;
	cvm_toolkit_name(tk, cuda, sizeof(cuda));
	if (lib_dir(rp->ctx->root, tk, libdir, sizeof(libdir)) < 0)
		return;
	check_dangling(rp, cuda, "library", libdir);
	if (cvm_fmt(inner, sizeof(inner), "%s/include", tk->display) == 0 &&
	    cvm_resolve_in_root(rp->ctx->root, inner, res, sizeof(res)) == 0 &&
	    cvm_fmt(cdir, sizeof(cdir), "%s%s", rp->ctx->root, res) == 0)
		check_dangling(rp, cuda, "include", cdir);
	/* By what the toolkit's library resolves to: a managed one is the store's copy. */
	for (int m = 9; m >= 7 && !own; m--) {
		if (cvm_fmt(lib, sizeof(lib), "%s/libcudnn.so.%d", libdir, m) == 0 && realpath(lib, real))
			own = cvm_doctor_copy_find(rp, real);
	}
	major = own ? own->major : 9;
	/* LD_LIBRARY_PATH first, then the toolkit's folder, then the cache, then /lib and /usr/lib. */
	for (const char *p = ldp ? ldp : "", *q; *p && !chosen; p = *q ? q + 1 : q) {
		q = strchrnul(p, ':');
		snprintf(cdir, sizeof(cdir), "%.*s", (int)(q - p), p);
		if (!*cdir || cvm_fmt(lib, sizeof(lib), "%s/libcudnn.so.%d", cdir, major) < 0 ||
		    !realpath(lib, real))
			continue;
		chosen = cvm_doctor_copy_find(rp, real);
		snprintf(why, sizeof(why), "it comes first on LD_LIBRARY_PATH");
	}
	if (!chosen && own) {
		chosen = own;
		snprintf(why, sizeof(why), "the toolkit's own lib folder (on LD_LIBRARY_PATH or rpath)");
	}
	if (!chosen) {
		char so[32];
		snprintf(so, sizeof(so), "libcudnn.so.%d", major);
		cache_dir(rp->os, so, from, sizeof(from));
		if (*from && cvm_fmt(lib, sizeof(lib), "%s%s/%s", rp->ctx->root, from, so) == 0 &&
		    realpath(lib, real)) {
			chosen = cvm_doctor_copy_find(rp, real);
			snprintf(why, sizeof(why), "the loader cache (ldconfig) names it");
		}
	}
	if (jt) {
		cvm_json_set(jt, "cuda", cvm_json_string(cuda));
		cvm_json_set(jt, "toolkit", cvm_json_string(tk->display));
		cvm_json_set(jt, "loads", cvm_json_string(chosen ? shown(rp, chosen->real) : NULL));
		cvm_json_set(jt, "why", cvm_json_string(chosen ? why : "no cuDNN found"));
	} else if (chosen) {
		char v[32];
		cvm_doctor_version_str(chosen->library, v, sizeof(v));
		cvm_info("CUDA %s (%s): programs load %s (cuDNN %s): %s", cuda, tk->display,
			 shown(rp, chosen->real), v, why);
	} else {
		cvm_info("CUDA %s (%s): no cuDNN a program could load", cuda, tk->display);
	}
	if (chosen && own && chosen != own) {
		char v1[32], v2[32];
		cvm_doctor_version_str(chosen->library, v1, sizeof(v1));
		cvm_doctor_version_str(own->library, v2, sizeof(v2));
		problem(rp, "remove that folder from LD_LIBRARY_PATH, or select versions with "
			"'cudnnvm exec' / 'cudnnvm env'",
			"a program using CUDA %s loads cuDNN %s from %s, not the toolkit's own %s (%s)",
			cuda, v1, shown(rp, chosen->dir), v2, shown(rp, own->dir));
	}
	if (chosen && chosen->cudart && (int)(chosen->cudart / 1000) != tk->major)
		problem(rp, "install the build for this CUDA major ('cudnnvm install <version> --cuda "
			"<X.Y>') and 'cudnnvm use' it",
			"%s is built for CUDA %lu, but the toolkit is CUDA %s", shown(rp, chosen->real),
			chosen->cudart / 1000, cuda);
	/* A managed toolkit must be in the loader configuration, and the cache must know it. */
	if (rp->ctx->store_open && cvm_active_get(&rp->ctx->store, cuda, id, sizeof(id)) == 0) {
		check_links(rp, tk, cuda, id);
		snprintf(conf, sizeof(conf), "%s/etc/ld.so.conf.d/cudnnvm-cuda-%s.conf", rp->ctx->root,
			 cuda);
		if (access(conf, F_OK) < 0)
			problem(rp, "run 'cudnnvm use' again for this toolkit",
				"/etc/ld.so.conf.d/cudnnvm-cuda-%s.conf is missing: the loader cache does "
				"not know %s", cuda, id);
		else if (rp->os->cache[0]) {
			char want[PATH_MAX];
			snprintf(want, sizeof(want), "%s/active/cuda-%s/lib/libcudnn.so", rp->ctx->store.display,
				 cuda);
			if (!strstr(rp->os->cache, want))
				problem(rp, "run ldconfig", "the loader cache is stale: it has no entry "
					"for %s", want);
		} else if (!rp->os->said_no_cache) {
			rp->os->said_no_cache = true;
			unchecked(rp, "whether the loader cache knows the active versions", rp->os->no_cache);
		}
	}
}

/*
 * Each GPU's compute capability (nvidia-smi) against the device code of the
 * version active for each toolkit, as its record has it (ccgate.h).
 */
static void check_gpus(struct cvm_doctor_report *rp, const struct cvm_toolkit *t, size_t nt)
{
	char prog[PATH_MAX], buf[8192];
	char *argv[] = { prog, (char *)"--query-gpu=index,name,compute_cap",
			 (char *)"--format=csv,noheader", NULL };

	if (rp->ctx->store.fd < 0 || find_trusted("nvidia-smi", prog, sizeof(prog)) < 0 ||
	    capture(argv, buf, sizeof(buf)) != 0)
		return;
	for (size_t i = 0; i < nt; i++) {
		struct cvm_record rec = { 0 };
		char cuda[16], id[160], have[512];
		int fd;
		cvm_toolkit_name(&t[i], cuda, sizeof(cuda));
		if (cvm_active_get(&rp->ctx->store, cuda, id, sizeof(id)) < 0)
			continue;
		fd = cvm_store_open_version(&rp->ctx->store, id);
		if (fd < 0)
			continue;
		if (cvm_record_read(fd, id, &rec) < 0) {
			close(fd);
			continue;
		}
		close(fd);
		cvm_ccgate_format(&rec.archs, have, sizeof(have));
		for (char *line = buf, *next; line && *line; line = next) {
			char why[600], fix[700], name[256] = "?";
			int dev = -1, major = 0, minor = 0;
			char *cc, *comma;
			next = strchr(line, '\n');
			if (next)
				*next++ = '\0';
			/* "0, NVIDIA B200, 10.0": the name may hold commas, the ends do not. */
			cc = strrchr(line, ',');
			comma = strchr(line, ',');
			if (!cc || cc == comma || sscanf(line, "%d", &dev) != 1 ||
			    sscanf(cc + 1, " %d.%d", &major, &minor) != 2)
				continue;
			{
				const char *b = comma + 1;
				while (b < cc && *b == ' ')
					b++;
				snprintf(name, sizeof(name), "%.*s", (int)(cc - b), b);
			}
			if (!cvm_ccgate_check(&rec.archs, rec.cudnn_version,
					      rec.cuda_major >= 13 ? 13000 : 0, major, minor, why,
					      sizeof(why)))
				continue;
			snprintf(fix, sizeof(fix), "install a cuDNN build whose device code serves %d.%d "
				 "(sm_%d%d, or PTX of an older architecture) and 'cudnnvm use' it",
				 major, minor, major, minor);
			problem(rp, fix, "GPU %d (%s) has compute capability %d.%d, %s: cuDNN %s, active "
				"for CUDA %s%s", dev, cvm_safe(name), major, minor, why, id, cuda,
				rec.archs.known ? "" : " (its device code was not read: the table of "
				"docs/cudnn-facts.md says so)");
		}
		cvm_record_release(&rec);
	}
}

/* Running processes that mix copies or map a version no toolkit has active (procmap.h). */
static void check_processes(struct cvm_doctor_report *rp, cvm_json *json)
{
	struct cvm_proc_cudnn *v = NULL;
	size_t n = 0, unreadable = 0, shown_n = 0;
	cvm_json *jp = json ? cvm_json_array() : NULL;
	struct cvm_store *st = rp->ctx->store.fd >= 0 ? &rp->ctx->store : NULL;

	if (cvm_procmap_scan(st, rp->ctx->root, &v, &n, &unreadable) < 0) {
		unchecked(rp, "running processes", "cannot read /proc");
		cvm_json_free(jp);
		return;
	}
	for (size_t i = 0; i < n; i++) {
		const struct cvm_proc_cudnn *p = &v[i];
		char copies[1024] = "", fix[1200];
		size_t off = 0;
		for (size_t k = 0; k < p->ng && off < sizeof(copies); k++)
			off += (size_t)snprintf(copies + off, sizeof(copies) - off, "%s%s %s",
						k ? ", " : "", p->g[k].kind, p->g[k].copy);
		if (jp) {
			cvm_json *o = cvm_json_object();
			cvm_json_set(o, "pid", cvm_json_integer(p->pid));
			cvm_json_set(o, "command", cvm_json_string(p->command));
			cvm_json_set(o, "copies", cvm_json_string(copies));
			cvm_json_set(o, "mixed", cvm_json_bool(p->mixed));
			cvm_json_set(o, "not_active", cvm_json_bool(p->not_active));
			cvm_json_append(jp, o);
		}
		if (!p->mixed && !p->not_active)
			continue;
		if (!json && !shown_n++)
			cvm_info("Processes:");
		if (p->mixed) {
			snprintf(fix, sizeof(fix), "restart PID %ld with one copy on its loader path: "
				 "take the others out of LD_LIBRARY_PATH, or run it through 'cudnnvm exec' "
				 "with the version its Python package carries", (long)p->pid);
			problem(rp, fix, "PID %ld (%s) maps %zu cuDNN copies: %s", (long)p->pid,
				cvm_safe(p->command), p->ng, cvm_safe(copies));
		} else {
			snprintf(fix, sizeof(fix), "restart PID %ld after 'cudnnvm use' of the version it "
				 "needs, or leave it if it runs through 'cudnnvm exec' on purpose",
				 (long)p->pid);
			problem(rp, fix, "PID %ld (%s) maps %s, which no toolkit has active", (long)p->pid,
				cvm_safe(p->command), cvm_safe(copies));
		}
	}
	if (unreadable && !rp->ctx->root[0] && geteuid() != 0)
		unchecked(rp, "the cuDNN files other users' processes map", "their maps need root");
	if (json)
		cvm_json_set(json, "processes", jp);
	cvm_procmap_free(v, n);
}

/* 0. whatever the loader cache knows */
static void consider_cache(struct cvm_doctor_report *rp)
{
	char dir[PATH_MAX];

	for (const char *p = rp->os->cache; *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : "") {
		const char *arrow = strstr(p, "=> "), *eol = strchrnul(p, '\n');
		char *slash;
		if (!arrow || arrow > eol || !strstr(p, "libcudnn.so.") || strstr(p, "libcudnn.so.") > eol)
			continue;
		snprintf(dir, sizeof(dir), "%s%.*s", rp->ctx->root, (int)(eol - arrow - 3), arrow + 3);
		slash = strrchr(dir, '/');
		if (slash)
			*slash = '\0';
		consider(rp, dir, "loader cache", false);
	}
}

/* 1. the store */
static void consider_store(struct cvm_doctor_report *rp)
{
	struct cvm_ctx *ctx = rp->ctx;
	char dir[PATH_MAX], **ids = NULL;
	size_t nids = 0;

	if (ctx->store_open && cvm_store_list(&ctx->store, &ids, &nids) == 0)
		for (size_t i = 0; i < nids; i++) {
			snprintf(dir, sizeof(dir), "%s/versions/%s/lib", ctx->store.path, ids[i]);
			consider(rp, dir, "store", true);
		}
	cvm_strv_free(ids, nids);
}

/* 2. each toolkit: its lib64, else its lib */
static void consider_toolkits(struct cvm_doctor_report *rp, const struct cvm_toolkit *t, size_t nt)
{
	char dir[PATH_MAX], where[64];

	for (size_t i = 0; i < nt; i++) {
		snprintf(where, sizeof(where), "CUDA %d.%d toolkit", t[i].major, t[i].minor);
		if (lib_dir(rp->ctx->root, &t[i], dir, sizeof(dir)) == 0)
			consider(rp, dir, where, false);
	}
}

/* 3. LD_LIBRARY_PATH (host paths, as the loader reads them) */
static void consider_ld_path(struct cvm_doctor_report *rp, const char *ldp)
{
	char dir[PATH_MAX];

	for (const char *p = ldp ? ldp : "", *q; *p; p = *q ? q + 1 : q) {
		q = strchrnul(p, ':');
		snprintf(dir, sizeof(dir), "%.*s", (int)(q - p), p);
		if (*dir)
			consider(rp, dir, "LD_LIBRARY_PATH", false);
	}
}

/* 4. the loader's folders, conda environments, pip wheels */
static void consider_known_folders(struct cvm_doctor_report *rp)
{
	char dir[PATH_MAX];

	consider_glob(rp, "/usr/lib/x86_64-linux-gnu", "system");
	consider_glob(rp, "/usr/lib/aarch64-linux-gnu", "system");
	consider_glob(rp, "/usr/lib64", "system");
	consider_glob(rp, "/usr/local/lib", "system");
	consider_glob(rp, "/opt/conda/lib", "conda");
	consider_glob(rp, "/opt/conda/envs/*/lib", "conda");
	consider_glob(rp, "/usr/lib/python3*/*-packages/nvidia/cudnn/lib", "pip wheel");
	consider_glob(rp, "/usr/local/lib/python3*/*-packages/nvidia/cudnn/lib", "pip wheel");
	consider_glob(rp, "/opt/*/lib/python3*/site-packages/nvidia/cudnn/lib", "pip wheel");
	consider_glob(rp, "/opt/*/.venv/lib/python3*/site-packages/nvidia/cudnn/lib", "pip wheel");
	consider_glob(rp, "/opt/*/*/lib/python3*/site-packages/nvidia/cudnn/lib", "pip wheel");
	if (getenv("VIRTUAL_ENV") &&
	    cvm_fmt(dir, sizeof(dir), "%s/lib/python3*/site-packages/nvidia/cudnn/lib",
		    getenv("VIRTUAL_ENV")) == 0 && !rp->ctx->root[0])
		consider_glob(rp, dir, "pip wheel");
	if (getenv("CONDA_PREFIX") && cvm_fmt(dir, sizeof(dir), "%s/lib", getenv("CONDA_PREFIX")) == 0)
		consider(rp, dir, "conda", false);
}

/* Conda and pip under the home folder (host paths: not looked at under a root). */
static void consider_home(struct cvm_doctor_report *rp, const char *home)
{
	static const char *const pats[] = {
		"%s/miniconda3/envs/*/lib", "%s/anaconda3/envs/*/lib", "%s/miniconda3/lib",
		"%s/.local/lib/python3*/site-packages/nvidia/cudnn/lib",
	};

	if (!home || rp->ctx->root[0])
		return;
	for (size_t i = 0; i < sizeof(pats) / sizeof(pats[0]); i++) {
		char pat[PATH_MAX];
		glob_t g;
		snprintf(pat, sizeof(pat), pats[i], home);
		if (glob(pat, GLOB_NOSORT, NULL, &g) != 0)
			continue;
		for (size_t k = 0; k < g.gl_pathc; k++)
			consider(rp, g.gl_pathv[k], strstr(pat, "nvidia") ? "pip wheel" : "conda", false);
		globfree(&g);
	}
}

/* A copy's columns in the listing (the JSON has no fields of Linux's own). */
static void row(const struct cvm_doctor_report *rp, const struct cvm_doctor_copy *c, cvm_json *o,
		struct cvm_doctor_line *line)
{
	char v[32];

	if (o)
		return;
	cvm_doctor_version_str(c->library, v, sizeof(v));
	cvm_doctor_line_add(line, v);
	cvm_doctor_line_add(line, "headers");
	cvm_doctor_version_str(c->header, v, sizeof(v));
	cvm_doctor_line_add(line, v);
	cvm_doctor_line_add(line, c->where);
	cvm_doctor_line_add(line, c->managed ? "managed" : "not managed");
	cvm_doctor_line_add(line, shown(rp, c->dir));
}

/* The driver's version, from the kernel module, else nvidia-smi; "" when none. */
static void read_driver(char *drv, size_t len)
{
	char *text = NULL;
	size_t n;

	if (cvm_read_file_at(AT_FDCWD, "/proc/driver/nvidia/version", 1 << 16, &text, &n) == 0) {
		cvm_doctor_parse_driver(text, drv, len);
		free(text);
	}
	if (!drv[0])
		driver_from_smi(drv, len);
}

/* The copy, and the driver against what its build needs (the CUDA runtime it reports). */
static void check_copy_driver(struct cvm_doctor_report *rp, const struct cvm_doctor_copy *c,
			      const char *drv)
{
	check_copy(rp, c);
	cvm_doctor_check_driver(rp, drv, (int)(c->cudart / 1000), shown(rp, c->dir));
}

/* The loader cache, and the copies it and the store hold: before the toolkits are looked for. */
static int begin(struct cvm_doctor_report *rp)
{
	rp->os = calloc(1, sizeof(*rp->os));
	if (!rp->os)
		return -ENOMEM;
	read_cache(rp->ctx->root, rp->os);
	consider_cache(rp);
	consider_store(rp);
	return 0;
}

/* The other copies, in the order the loader's reasoning meets them. */
static void find(struct cvm_doctor_report *rp, const struct cvm_toolkit *t, size_t nt)
{
	consider_toolkits(rp, t, nt);
	consider_ld_path(rp, getenv("LD_LIBRARY_PATH"));
	consider_known_folders(rp);
	consider_home(rp, getenv("HOME"));
}

static const char *shown_os(const struct cvm_doctor_report *rp, const char *path, char *buf,
			    size_t len)
{
	(void)buf;
	(void)len;
	return shown(rp, path);
}

/* What runs now: the GPUs against the active versions' device code, the processes. */
static void end(struct cvm_doctor_report *rp, const struct cvm_toolkit *t, size_t nt,
		cvm_json *json)
{
	check_gpus(rp, t, nt);
	check_processes(rp, json);
	cvm_trust_skipped_json(json);
}

static void release(struct cvm_doctor_report *rp)
{
	free(rp->os);
	rp->os = NULL;
}

static const struct cvm_doctor_os linux_doctor = {
	.no_driver = "none loaded (no GPU part can run here)",
	.driver_problem = "%s is built for CUDA %d, which needs driver %s; this one is %s",
	.begin = begin,
	.find = find,
	.shown = shown_os,
	.row = row,
	.driver = read_driver,
	.check_copy = check_copy_driver,
	.check_toolkit = check_toolkit,
	.end = end,
	.release = release,
};

const struct cvm_doctor_os *cvm_doctor_os(void)
{
	return &linux_doctor;
}

/* A found name of libcudnn.so.<major> in dir: fills the real file. */
static bool which_try(const char *dir, int major, struct cvm_which *w)
{
	char lib[PATH_MAX];

	return cvm_fmt(lib, sizeof(lib), "%s/libcudnn.so.%d", dir, major) == 0 &&
	       realpath(lib, w->library) && cvm_fmt(w->name, sizeof(w->name), "%s", lib) == 0;
}

int cvm_doctor_which(struct cvm_ctx *ctx, const struct cvm_toolkit *tk, struct cvm_which *w)
{
	return cvm_doctor_which_major(ctx, tk, 0, w);
}

/*
 * The major a program built with tk binds to: its headers', else the active
 * version's, else that of the toolkit's own libcudnn.so.N; 0 when nothing says.
 */
static int which_wanted(struct cvm_ctx *ctx, const struct cvm_toolkit *tk, const char *libdir)
{
	char path[PATH_MAX], cuda[16], id[160], plat[64], *text = NULL;
	struct cvm_version v;
	struct cvm_which w;
	size_t len;
	int m = 0, cm;

	cvm_toolkit_name(tk, cuda, sizeof(cuda));
	if (cvm_fmt(path, sizeof(path), "%s/include/cudnn_version.h", tk->path) == 0 &&
	    cvm_read_file_at(AT_FDCWD, path, 1 << 20, &text, &len) == 0) {
		if (cvm_cudnn_header_version(text, len, &v) == 0)
			m = (int)v.part[0];
		free(text);
	}
	if (!m && ctx->store_open && cvm_active_get(&ctx->store, cuda, id, sizeof(id)) == 0 &&
	    cvm_store_parse_id(id, path, sizeof(path), &cm, plat, sizeof(plat)) == 0 &&
	    cvm_version_parse(path, &v) == 0)
		return (int)v.part[0];
	for (int k = 9; k >= 7 && !m && *libdir; k--)
		if (which_try(libdir, k, &w))
			m = k;
	return m;
}

/*
 * libcudnn.so.<major> as a program loads it: w filled, or -CVM_E_NOTFOUND.
 * *os: the loader cache, read (ldconfig -p) at its first need and kept for
 * the next major's search; the caller frees it.
 */
static int which_search(struct cvm_ctx *ctx, const char *libdir, int major, struct cvm_which *w,
			struct cvm_doctor_os_state **os)
{
	char path[PATH_MAX], so[32], from[PATH_MAX];
	const char *ldp = getenv("LD_LIBRARY_PATH");
	size_t sl;

	memset(w, 0, sizeof(*w));
	w->major = major;
	/* As doctor reasons: LD_LIBRARY_PATH, the toolkit's own folder, the loader cache. */
	for (const char *p = ldp ? ldp : "", *q; *p; p = *q ? q + 1 : q) {
		q = strchrnul(p, ':');
		snprintf(path, sizeof(path), "%.*s", (int)(q - p), p);
		if (*path && which_try(path, w->major, w)) {
			w->why = "LD_LIBRARY_PATH";
			goto found;
		}
	}
	if (*libdir && which_try(libdir, w->major, w)) {
		w->why = "toolkit lib64";
		sl = ctx->store_open ? strlen(ctx->store.path) : 0;
		if (sl && !strncmp(w->library, ctx->store.path, sl) && w->library[sl] == '/')
			w->why = "active link";
		goto found;
	}
	if (!*os) {
		*os = calloc(1, sizeof(**os));
		if (!*os)
			return -ENOMEM;
		read_cache(ctx->root, *os);
	}
	snprintf(so, sizeof(so), "libcudnn.so.%d", w->major);
	cache_dir(*os, so, from, sizeof(from));
	if (*from && cvm_fmt(path, sizeof(path), "%s%s", ctx->root, from) == 0 &&
	    which_try(path, w->major, w)) {
		w->why = "loader cache";
		goto found;
	}
	return -CVM_E_NOTFOUND;
found:
	/* The version it belongs to, when it is the store's. */
	sl = ctx->store_open ? strlen(ctx->store.path) : 0;
	if (sl && cvm_fmt(path, sizeof(path), "%s/versions/", ctx->store.path) == 0 &&
	    !strncmp(w->library, path, strlen(path)))
		snprintf(w->id, sizeof(w->id), "%.*s", (int)strcspn(w->library + strlen(path), "/"),
			 w->library + strlen(path));
	return 0;
}

int cvm_doctor_which_major(struct cvm_ctx *ctx, const struct cvm_toolkit *tk, int major,
			   struct cvm_which *w)
{
	struct cvm_doctor_os_state *os = NULL;
	char libdir[PATH_MAX] = "";
	int r = -CVM_E_NOTFOUND;

	if (lib_dir(ctx->root, tk, libdir, sizeof(libdir)) < 0)
		libdir[0] = '\0';
	if (!major)
		major = which_wanted(ctx, tk, libdir);
	/* Nothing says which: the newest major a program could find. */
	for (int m = major ? major : 9; m >= (major ? major : 7) && r == -CVM_E_NOTFOUND; m--)
		r = which_search(ctx, libdir, m, w, &os);
	if (r == -CVM_E_NOTFOUND && !major)
		w->major = 0;
	free(os);
	return r;
}
