/* SPDX-License-Identifier: MIT */
/*
 * doctor and which on Windows (doctor.h, doctor_os.h). A program finds cudnn64_N.dll by
 * the DLL search order for a program that lives in another folder than the
 * DLL: its own folder first (not known here, so said), then System32, the
 * 16-bit System folder, the Windows folder, its working folder (not known
 * either), then the PATH entries in order. The PATH that matters is the one
 * a program started now gets (the registry's, cvm_winenv_fresh_path): that
 * is what activation changes; this process's own PATH is also looked at when
 * it differs (a shell opened before the change).
 *
 * Nothing found is loaded: a DLL's version comes from its version resource
 * (read as data, no code of it runs) when it has one that is a cuDNN
 * version, else only the major of its name is known, and every comparison
 * says which of the two it used.
 */
#define WIN32_LEAN_AND_MEAN
#include <windows.h>

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "activate.h"
#include "closure.h"
#include "compat.h"
#include "doctor.h"
#include "doctor_os.h"
#include "error.h"
#include "findings.h"
#include "fsutil.h"
#include "out.h"
#include "procmap.h"
#include "select.h"
#include "store.h"
#include "toolkit.h"
#include "version.h"
#include "winenv.h"

#define LEN 4096

/*
 * A copy's real is what its main DLL (headers alone: the header) resolves
 * to; its library version is the version resource's when that is a cuDNN
 * version.
 */
struct cvm_doctor_os_state {
	char *fresh;		/* the PATH a program started now gets, malloc'd; NULL: unreadable */
	char *here;		/* this process's PATH when it differs from fresh, malloc'd, else NULL */
	char store_real[LEN];	/* the store's folder, resolved; "" without a store */
};

/* One folder of the search order that holds the DLL looked for. */
struct hit {
	int entry;		/* its PATH entry (1-based, empty entries not counted); 0: a system folder */
	const char *kind;	/* "System32", "the System folder", "the Windows folder", "PATH" (static) */
	char place[64];		/* "System32", "the Windows folder", "PATH entry 3" */
	char dir[LEN];		/* the folder as written ('\') */
	char file[LEN];		/* dir\cudnn64_N.dll */
	char real[LEN];		/* what file resolves to */
};

static int major_of(unsigned long v)
{
	struct cvm_version x;

	cvm_version_decode(v, &x);
	return (int)x.part[0];
}

/* The version as a person reads it: the resource's, the store's id, else the major of the name. */
static void copy_version(const struct cvm_doctor_copy *c, char *buf, size_t len)
{
	int cm;
	char plat[64];

	if (c->library)
		cvm_doctor_version_str(c->library, buf, len);
	else if (c->id[0] && cvm_store_parse_id(c->id, buf, len, &cm, plat, sizeof(plat)) == 0)
		return;
	else if (c->major)
		snprintf(buf, len, "%d.x", c->major);
	else
		snprintf(buf, len, "-");
}

/* CUDNN_VERSION of the headers in incdir (cudnn_version.h from 8.x, cudnn.h before), or 0. */
static unsigned long header_at(const char *incdir)
{
	static const char *const names[] = { "cudnn_version.h", "cudnn.h" };

	return cvm_doctor_header(incdir, names, sizeof(names) / sizeof(names[0]), "");
}

/* N of "cudnn64_N.dll" (any case), or 0. */
static int main_name(const char *name)
{
	size_t l = strlen(name), d = 0;

	if (l < 13 || strncasecmp(name, "cudnn64_", 8) || strcasecmp(name + l - 4, ".dll"))
		return 0;
	while (8 + d < l - 4 && isdigit((unsigned char)name[8 + d]))
		d++;
	return d && d <= 3 && 8 + d == l - 4 ? atoi(name + 8) : 0;
}

/* A cuDNN DLL of any part: cudnn*64_N.dll ("cudnn_ops64_9.dll" too). */
static bool cudnn_name(const char *name)
{
	size_t l = strlen(name);

	return l > 9 && !strncasecmp(name, "cudnn", 5) && !strcasecmp(name + l - 4, ".dll") &&
	       strstr(name, "64_");
}

/*
 * The N of the cudnn64_N.dll in dir (the highest when there are several),
 * or 0; *others (may be NULL): how many other cuDNN DLLs dir holds.
 */
static int main_dll(const char *dir, size_t *others)
{
	struct dirent *de;
	int best = 0, m;
	DIR *d = opendir(dir);

	if (others)
		*others = 0;
	while (d && (de = readdir(d))) {
		m = main_name(de->d_name);
		if (m > best)
			best = m;
		else if (!m && others && cudnn_name(de->d_name))
			(*others)++;
	}
	if (d)
		closedir(d);
	return best;
}

/*
 * The file version of path's version resource, as a.b.c.d: 0, or -ENOENT
 * when it has none. GetFileVersionInfo maps the file as data: none of the
 * DLL's code runs, so a DLL that cannot load (or should not) is read too.
 */
static int file_version(const char *path, unsigned v[4])
{
	char shown[LEN];
	wchar_t *w = cvm_wide(cvm_path_shown(path, shown, sizeof(shown)));
	VS_FIXEDFILEINFO *fi = NULL;
	DWORD size, ignored;
	UINT n = 0;
	void *buf = NULL;
	int r = -ENOENT;

	if (!w)
		return -ENOMEM;
	size = GetFileVersionInfoSizeW(w, &ignored);
	if (size && (buf = malloc(size)) && GetFileVersionInfoW(w, 0, size, buf) &&
	    VerQueryValueW(buf, L"\\", (void **)&fi, &n) && fi && n >= sizeof(*fi) &&
	    fi->dwSignature == 0xFEEF04BD) {
		v[0] = HIWORD(fi->dwFileVersionMS);
		v[1] = LOWORD(fi->dwFileVersionMS);
		v[2] = HIWORD(fi->dwFileVersionLS);
		v[3] = LOWORD(fi->dwFileVersionLS);
		r = 0;
	}
	free(buf);
	free(w);
	return r;
}

/* The store's version a resolved path lies in ("" when none). */
static void store_id_of(const char *store_real, const char *real, char *id, size_t len)
{
	size_t sl = strlen(store_real);

	id[0] = '\0';
	if (!sl || strncasecmp(real, store_real, sl) || strncasecmp(real + sl, "/versions/", 10))
		return;
	snprintf(id, len, "%.*s", (int)strcspn(real + sl + 10, "/"), real + sl + 10);
}

/* Adds the copy in dir when it holds a cudnn64_N.dll not seen yet; NULL otherwise. */
static struct cvm_doctor_copy *consider(struct cvm_doctor_report *rp, const char *dir,
					const char *where)
{
	char path[LEN], real[LEN], ver[64], plat[64];
	unsigned v[4];
	struct stat st;
	struct cvm_doctor_copy *c;
	int major = main_dll(dir, NULL);

	if (!major || cvm_fmt(path, sizeof(path), "%s/cudnn64_%d.dll", dir, major) < 0 ||
	    !realpath(path, real) || !(c = cvm_doctor_copy_add(rp, real, where)))
		return NULL;
	cvm_path_shown(dir, c->dir, sizeof(c->dir));
	snprintf(c->dll, sizeof(c->dll), "cudnn64_%d.dll", major);
	c->major = major;
	c->empty = stat(real, &st) == 0 && st.st_size == 0;
	/* The zip's layout, the toolkit's, conda's Library and the wheel's: bin beside include. */
	if (cvm_fmt(path, sizeof(path), "%s/../include", dir) == 0)
		c->header = header_at(path);
	if (file_version(real, v) == 0) {
		snprintf(c->resource, sizeof(c->resource), "%u.%u.%u.%u", v[0], v[1], v[2], v[3]);
		/* A cuDNN version only when it agrees with the name's major: NVIDIA's are not documented. */
		if ((int)v[0] == major) {
			struct cvm_version x = { { v[0], v[1], v[2], 0 }, 3 };
			c->library = cvm_version_encode(&x);
		}
	}
	store_id_of(rp->os->store_real, real, c->id, sizeof(c->id));
	c->managed = c->id[0] != '\0';
	if (c->managed && cvm_store_parse_id(c->id, ver, sizeof(ver), &c->cuda_major, plat,
					     sizeof(plat)) < 0)
		c->cuda_major = 0;
	return c;
}

/* Headers with no DLL beside them (a toolkit's include after a partial hand copy). */
static void consider_headers(struct cvm_doctor_report *rp, const char *incdir, const char *where)
{
	char path[LEN], real[LEN], what[64];
	unsigned long h = header_at(incdir);
	struct cvm_doctor_copy *c;

	if (!h || cvm_fmt(path, sizeof(path), "%s/cudnn_version.h", incdir) < 0 ||
	    (!realpath(path, real) && (cvm_fmt(path, sizeof(path), "%s/cudnn.h", incdir) < 0 ||
				       !realpath(path, real))))
		return;
	snprintf(what, sizeof(what), "%s (headers only)", where);
	c = cvm_doctor_copy_add(rp, real, what);
	if (!c)
		return;
	cvm_path_shown(incdir, c->dir, sizeof(c->dir));
	c->header = h;
}

/*
 * base/pattern, where one '*' stands for one folder name starting with what
 * comes before it in that name ("envs/<any>/Library/bin", "Python3<any>"):
 * each match, one level deep, never a walk.
 */
static void consider_each(struct cvm_doctor_report *rp, const char *base, const char *pattern,
			  const char *where)
{
	char pat[LEN], parent[LEN], dir[LEN];
	const char *star, *slash, *tail;
	struct dirent *de;
	size_t plen;
	DIR *d;

	if (!base || !*base || cvm_fmt(pat, sizeof(pat), "%s/%s", base, pattern) < 0)
		return;
	star = strchr(pat, '*');
	if (!star) {
		consider(rp, pat, where);
		return;
	}
	for (slash = star; slash > pat && *slash != '/'; slash--)
		;
	tail = star + 1;
	plen = (size_t)(star - slash - 1);
	snprintf(parent, sizeof(parent), "%.*s", (int)(slash - pat), pat);
	d = opendir(parent);
	while (d && (de = readdir(d)))
		if (!strncasecmp(de->d_name, slash + 1, plen) &&
		    cvm_fmt(dir, sizeof(dir), "%s/%s%s", parent, de->d_name, tail) == 0)
			consider(rp, dir, where);
	if (d)
		closedir(d);
}

/* Whether one of the k hits so far is the file real (a folder on PATH twice, a junction's target). */
static bool seen(const struct hit *v, size_t k, const char *real)
{
	for (size_t i = 0; i < k; i++)
		if (!strcasecmp(v[i].real, real))
			return true;
	return false;
}

/*
 * Where the DLL search order finds name, for a program in another folder:
 * System32, the System folder, the Windows folder, then each entry of path
 * in order. Every folder that holds it, first (what loads) first, each file
 * once (where it comes first); *out is malloc'd (free it). 0 or -ENOMEM.
 */
static int search(const char *path, const char *name, struct hit **out, size_t *n)
{
	char sys[3][LEN], file[LEN], dir[LEN];
	static const char *const sys_place[] = { "System32", "the System folder", "the Windows folder" };
	struct hit *v = NULL, *h;
	size_t cap = 0, k = 0;
	int entry = 0;
	struct stat st;

	*out = NULL;
	*n = 0;
	if (cvm_winenv_system_dir(false, sys[0], LEN) < 0)
		sys[0][0] = '\0';
	if (cvm_winenv_system_dir(true, sys[2], LEN) < 0 || cvm_fmt(sys[1], LEN, "%s\\System", sys[2]) < 0)
		sys[1][0] = sys[2][0] = '\0';
	/* Three system folders and at most one hit per entry. */
	cap = 3 + 1;
	for (const char *p = path ? path : ""; *p; p++)
		cap += *p == ';';
	v = calloc(cap, sizeof(*v));
	if (!v)
		return -ENOMEM;
	entry = 0;
	for (int i = 0; i < 3; i++) {
		if (!sys[i][0] || cvm_fmt(file, sizeof(file), "%s\\%s", sys[i], name) < 0 ||
		    stat(file, &st) < 0 || !S_ISREG(st.st_mode))
			continue;
		h = &v[k];
		if (!realpath(file, h->real) || seen(v, k, h->real))
			continue;
		h->kind = sys_place[i];
		snprintf(h->place, sizeof(h->place), "%s", sys_place[i]);
		cvm_path_shown(sys[i], h->dir, sizeof(h->dir));
		cvm_path_shown(file, h->file, sizeof(h->file));
		k++;
	}
	for (const char *p = path ? path : "", *q; *p; p = q) {
		size_t l = cvm_winpath_entry(p, &q);
		if (!l)
			continue;
		entry++;
		if (cvm_fmt(dir, sizeof(dir), "%.*s", (int)l, p) < 0 ||
		    cvm_fmt(file, sizeof(file), "%s\\%s", dir, name) < 0 || stat(file, &st) < 0 ||
		    !S_ISREG(st.st_mode) || k == cap)
			continue;
		h = &v[k];
		if (!realpath(file, h->real) || seen(v, k, h->real))
			continue;
		h->entry = entry;
		h->kind = "PATH";
		snprintf(h->place, sizeof(h->place), "PATH entry %d", entry);
		cvm_path_shown(dir, h->dir, sizeof(h->dir));
		cvm_path_shown(file, h->file, sizeof(h->file));
		k++;
	}
	*out = v;
	*n = k;
	return 0;
}

/*
 * The version active for cuda (its id into id, "" when none) and its DLL,
 * resolved, into real[LEN]: the N of its cudnn64_N.dll, 0 when it has none.
 */
static int active_of(struct cvm_ctx *ctx, const char *cuda, char *id, size_t idlen, char *real)
{
	char bin[LEN], path[LEN];
	int m;

	id[0] = real[0] = '\0';
	if (!ctx->store_open || cvm_active_get(&ctx->store, cuda, id, idlen) < 0) {
		id[0] = '\0';
		return 0;
	}
	if (cvm_fmt(bin, sizeof(bin), "%s/versions/%s/bin", ctx->store.path, id) < 0 ||
	    !(m = main_dll(bin, NULL)) || cvm_fmt(path, sizeof(path), "%s/cudnn64_%d.dll", bin, m) < 0 ||
	    !realpath(path, real)) {
		real[0] = '\0';
		return 0;
	}
	return m;
}

/*
 * The N of the cudnn64_N.dll a program of tk looks for, and what says so:
 * the toolkit's headers (what its programs are compiled against), else the
 * active version's, else the toolkit's own DLL, else 9.
 */
static int wanted_major(const struct cvm_toolkit *tk, const char *active, const char **from)
{
	char path[LEN], ver[64], plat[64];
	struct cvm_version v;
	unsigned long h;
	int m;

	if (cvm_fmt(path, sizeof(path), "%s/include", tk->path) == 0 && (h = header_at(path))) {
		*from = "the major of the toolkit's headers";
		return major_of(h);
	}
	if (active[0] && cvm_store_parse_id(active, ver, sizeof(ver), &m, plat, sizeof(plat)) == 0 &&
	    cvm_version_parse(ver, &v) == 0) {
		*from = "the active version's major";
		return (int)v.part[0];
	}
	if (cvm_fmt(path, sizeof(path), "%s/bin", tk->path) == 0 && (m = main_dll(path, NULL))) {
		*from = "the major of the toolkit's own DLL";
		return m;
	}
	*from = "no headers in the toolkit, no active version: the newest major found";
	return 0;
}

/*
 * cudnn64_<major>.dll along path into *h[*n], its name into name; with major
 * 0 (nothing says which), the newest major found. The major found, or 0.
 */
static int search_major(const char *path, int major, char *name, size_t len, struct hit **h,
			size_t *n)
{
	for (int m = major ? major : 9; m >= (major ? major : 7); m--) {
		snprintf(name, len, "cudnn64_%d.dll", m);
		free(*h);
		*h = NULL;
		*n = 0;
		if (search(path, name, h, n) < 0)
			*n = 0;
		if (*n)
			return m;
	}
	return 0;
}

/* The registry value whose PATH holds dir, for a fix ("this process's PATH" when neither). */
static const char *path_key(const char *dir)
{
	if (cvm_winenv_path_has(CVM_ENV_SYSTEM, dir))
		return cvm_winenv_key_name(CVM_ENV_SYSTEM);
	if (cvm_winenv_path_has(CVM_ENV_USER, dir))
		return cvm_winenv_key_name(CVM_ENV_USER);
	return "this process's PATH only";
}

/* The per-copy checks: whole, and headers of the DLL's version. */
static void check_copy(struct cvm_doctor_report *rp, const struct cvm_doctor_copy *c)
{
	char hv[32], lv[32];

	if (!c->major)
		return;
	cvm_doctor_version_str(c->header, hv, sizeof(hv));
	cvm_doctor_version_str(c->library, lv, sizeof(lv));
	if (c->empty)
		cvm_findings_problem(&rp->f, "reinstall it (a copy that ran out of space or was cut short)",
				     "%s\\%s is empty", c->dir, c->dll);
	if (c->header && c->library && c->header != c->library)
		cvm_findings_problem(&rp->f, c->id[0] ? "'cudnnvm verify' names the changed files: "
				     "reinstall the version" : "copy include\\*.h and bin\\*.dll of one "
				     "release, or remove the stray ones",
				     "%s: the headers beside it say cuDNN %s, %s's version resource says %s%s",
				     c->dir, hv, c->dll, lv, major_of(c->header) != major_of(c->library) ?
				     " (different majors)" : "");
	else if (c->header && !c->library && major_of(c->header) != c->major)
		cvm_findings_problem(&rp->f, c->id[0] ? "'cudnnvm verify' names the changed files: "
				     "reinstall the version" : "copy include\\*.h and bin\\*.dll of one "
				     "release, or remove the stray ones",
				     "%s: the headers beside it say cuDNN %s, the DLL is %s (majors compared by "
				     "the file name: %s has no cuDNN version resource)", c->dir, hv, c->dll,
				     c->dll);
}


/* How the toolkit's active version reaches programs (activate_windows.c): the junction, or the fallback. */
static const char *link_mode(const struct cvm_doctor_report *rp, const char *cuda)
{
	char name[64];

	snprintf(name, sizeof(name), "active/cuda-%s", cuda);
	if (!rp->ctx->store_open)
		return "no store";
	return cvm_win_link_kind(rp->ctx->store.fd, name) == CVM_WIN_JUNCTION
		       ? "the junction active\\cuda-X.Y on PATH"
		       : "PATH naming the version's folder (no reparse points on the store's file system)";
}

/* Running processes that have more than one cuDNN copy loaded (procmap_win.c, as ps). */
static void check_processes(struct cvm_doctor_report *rp)
{
	struct cvm_proc_cudnn *v = NULL;
	size_t n = 0, unreadable = 0;
	char fix[256];

	if (cvm_procmap_scan(rp->ctx->store_open ? &rp->ctx->store : NULL, "", &v, &n,
			     &unreadable) < 0) {
		cvm_findings_unchecked(&rp->f, "running processes that have cuDNN loaded",
				       "the process list cannot be read");
		return;
	}
	for (size_t i = 0; i < n; i++) {
		if (!v[i].mixed)
			continue;
		snprintf(fix, sizeof(fix), "restart PID %ld once one copy comes first on its PATH "
			 "('cudnnvm ps' lists what it has loaded)", (long)v[i].pid);
		cvm_findings_problem(&rp->f, fix, "PID %ld (%s) has %zu cuDNN copies loaded",
				     (long)v[i].pid, cvm_safe(v[i].command), v[i].ng);
	}
	if (unreadable)
		cvm_findings_unchecked(&rp->f, "the cuDNN DLLs of some running processes",
				       "another user's or protected: run doctor elevated");
	cvm_procmap_free(v, n);
}

/* Each copy ahead of the active one (h[at]) in the search order: the first is what loads. */
static void check_ahead(struct cvm_doctor_report *rp, const char *cuda, const char *name,
			const struct hit *h, size_t at)
{
	char fix[2 * LEN];

	for (size_t i = 0; i < at; i++) {
		const struct cvm_doctor_copy *c = cvm_doctor_copy_find(rp, h[i].real);
		char cv[32] = "?";
		if (c)
			copy_version(c, cv, sizeof(cv));
		if (h[i].entry)
			snprintf(fix, sizeof(fix), "delete %s, or take %s out of PATH (%s)",
				 h[i].file, h[i].dir, path_key(h[i].dir));
		else
			snprintf(fix, sizeof(fix), "delete %s (a copy in a system folder comes before "
				 "every PATH entry)", h[i].file);
		cvm_findings_problem(&rp->f, fix, "CUDA %s: %s (%s) holds another %s (cuDNN %s), ahead "
				     "of the active version's (%s: %s)%s", cuda, h[i].place,
				     h[i].dir, name, cv, h[at].place, h[at].dir,
				     i == 0 ? ": programs load it, not the active version" : "");
	}
}

/* A shell opened before the last change still has the old PATH: say what loads from it. */
static void check_this_path(struct cvm_doctor_report *rp, const char *name, const struct hit *h,
			    size_t n, cvm_json *jt)
{
	struct hit *hh = NULL;
	size_t nh = 0;

	if (rp->os->here && search(rp->os->here, name, &hh, &nh) == 0 &&
	    (nh != n || (n && strcasecmp(hh[0].real, h[0].real)))) {
		if (jt)
			cvm_json_set(jt, "loads_from_this_process", cvm_json_string(nh ? hh[0].file : NULL));
		else
			cvm_info("  this process's PATH is not the registry's (a shell opened before a "
				 "change, or PATH set by hand): programs started from here load %s%s%s",
				 nh ? hh[0].file : "no cuDNN", nh ? ": " : "", nh ? hh[0].place : "");
	}
	free(hh);
}

/* The DLL a program of tk loads by path, and every other copy of it on the way. */
static void check_toolkit(struct cvm_doctor_report *rp, const struct cvm_toolkit *tk,
			  const char *drv, cvm_json *jt)
{
	char cuda[16], id[160], active[LEN], name[32], bin[LEN], v[32], fix[2 * LEN], tkd[LEN];
	const char *from = NULL;
	struct hit *h = NULL;
	size_t n = 0, others = 0, at = 0;
	const struct cvm_doctor_copy *loaded = NULL;
	bool found_active;
	int major, amajor;

	cvm_toolkit_name(tk, cuda, sizeof(cuda));
	cvm_path_shown(tk->path, tkd, sizeof(tkd));
	amajor = active_of(rp->ctx, cuda, id, sizeof(id), active);
	major = wanted_major(tk, id, &from);
	/* Nothing says which and none found: the newest is what a program would look for. */
	if (!search_major(rp->os->fresh, major, name, sizeof(name), &h, &n) && !major)
		snprintf(name, sizeof(name), "cudnn64_9.dll");
	for (at = 0; at < n; at++)
		if (active[0] && !strcasecmp(h[at].real, active))
			break;
	found_active = at < n;
	if (n)
		loaded = cvm_doctor_copy_find(rp, h[0].real);
	if (loaded)
		copy_version(loaded, v, sizeof(v));
	else
		snprintf(v, sizeof(v), "?");
	if (jt) {
		cvm_json_set(jt, "cuda", cvm_json_string(cuda));
		cvm_json_set(jt, "toolkit", cvm_json_string(tkd));
		cvm_json_set(jt, "looks_for", cvm_json_string(name));
		cvm_json_set(jt, "major_from", cvm_json_string(from));
		cvm_json_set(jt, "loads", cvm_json_string(n ? h[0].file : NULL));
		cvm_json_set(jt, "why", cvm_json_string(n ? h[0].place : "no cuDNN found"));
		cvm_json_set(jt, "folder", cvm_json_string(n ? h[0].dir : NULL));
		cvm_json_set(jt, "active", cvm_json_string(id[0] ? id : NULL));
		cvm_json_set(jt, "loads_active", cvm_json_bool(n && found_active && at == 0));
		cvm_json_set(jt, "activation", cvm_json_string(id[0] ? link_mode(rp, cuda) : NULL));
	} else {
		cvm_info("CUDA %s (%s): programs look for %s (%s)", cuda, tkd, name, from);
		if (n)
			cvm_info("  they load %s (cuDNN %s): %s: %s", h[0].file, v, h[0].place, h[0].dir);
		else
			cvm_info("  no %s in System32, the Windows folder or any PATH entry", name);
		if (id[0])
			cvm_info("  active: %s (%s), through %s", id, n && found_active && at == 0 ?
				 "what loads is the active version's" : "not what loads",
				 link_mode(rp, cuda));
		else
			cvm_info("  active: none");
		for (size_t i = 1; i < n; i++)
			if (!found_active || i > at)
				cvm_info("  also %s in %s (%s), after it: not loaded", name, h[i].dir,
					 h[i].place);
	}
	/* A hand copy of the sub-libraries alone: cudnn64_N.dll, the one programs load, is missing. */
	if (cvm_fmt(bin, sizeof(bin), "%s/bin", tk->path) == 0 && !main_dll(bin, &others) && others)
		cvm_findings_problem(&rp->f, "copy every bin\\*.dll of the release, or remove them",
				     "%s\\bin holds %zu cuDNN DLL%s but no cudnn64_N.dll", tkd, others,
				     others == 1 ? "" : "s");
	if (id[0] && !amajor) {
		cvm_findings_problem(&rp->f, "'cudnnvm verify' names what is missing: reinstall the version",
				     "CUDA %s: the active version %s has no bin\\cudnn64_N.dll", cuda, id);
	} else if (id[0] && amajor != major) {
		/* Only the toolkit's headers can ask for another major than the active version's. */
		snprintf(fix, sizeof(fix), "remove the hand-copied headers (%s\\include\\cudnn*.h), or "
			 "'cudnnvm use' a %d.x version for CUDA %s", tkd, major, cuda);
		cvm_findings_problem(&rp->f, fix, "CUDA %s: the toolkit's headers say cuDNN %d, so its "
				     "programs look for %s, but the active version %s is cuDNN %d",
				     cuda, major, name, id, amajor);
	} else if (id[0] && found_active) {
		check_ahead(rp, cuda, name, h, at);
	} else if (id[0]) {
		snprintf(fix, sizeof(fix), "run 'cudnnvm%s use %s --cuda %s' again (it puts the entry back)",
			 rp->ctx->user ? " --user" : "", id, cuda);
		cvm_findings_problem(&rp->f, fix, "CUDA %s: no entry of the PATH a program started now gets "
				     "leads to the active version %s%s%s", cuda, id,
				     n ? ": programs load " : "", n ? h[0].file : "");
	}
	if (loaded && loaded->cuda_major && loaded->cuda_major != tk->major) {
		snprintf(fix, sizeof(fix), "install the build for CUDA %d ('cudnnvm install <version> --cuda "
			 "%s') and 'cudnnvm use' it", tk->major, cuda);
		cvm_findings_problem(&rp->f, fix, "%s is built for CUDA %d, but the toolkit is CUDA %s",
				     h[0].file, loaded->cuda_major, cuda);
	}
	{
		char what[64];
		snprintf(what, sizeof(what), "the CUDA %s toolkit", cuda);
		cvm_doctor_check_driver(rp, drv, tk->major, what);
	}
	check_this_path(rp, name, h, n, jt);
	free(h);
}

int cvm_doctor_parse_driver(const char *text, char *out, size_t len)
{
	unsigned a, b, c, d;
	int k = -1;

	/* nvcuda.dll's file version 31.0.15.5222 is driver 552.22: the last five digits. */
	if (sscanf(text, "%u.%u.%u.%u%n", &a, &b, &c, &d, &k) != 4 || k < 0 || text[k] || d > 9999 ||
	    cvm_fmt(out, len, "%u.%02u", (c % 10) * 100 + d / 100, d % 100) < 0)
		return -CVM_E_NOTFOUND;
	return 0;
}

const char *cvm_doctor_min_driver(int cuda_major)
{
	/* docs/cudnn-facts.md, the Windows column; CUDA 13 has no Windows figure there. */
	switch (cuda_major) {
	case 11:
		return "452.39";
	case 12:
		return "527.41";
	default:
		return NULL;
	}
}

/* The driver's version from System32\nvcuda.dll's version resource, or "". */
static void read_driver(char *out, size_t len)
{
	char dir[LEN], path[LEN], text[64];
	unsigned v[4];

	out[0] = '\0';
	if (cvm_winenv_system_dir(false, dir, sizeof(dir)) < 0 ||
	    cvm_fmt(path, sizeof(path), "%s\\nvcuda.dll", dir) < 0 || file_version(path, v) < 0)
		return;
	snprintf(text, sizeof(text), "%u.%u.%u.%u", v[0], v[1], v[2], v[3]);
	if (cvm_doctor_parse_driver(text, out, len) < 0)
		out[0] = '\0';
}

/* The PATHs: the one a program started now gets, and this process's when it differs. */
static void read_paths(struct cvm_doctor_report *rp)
{
	const char *env = getenv("PATH");
	int r = cvm_winenv_fresh_path(&rp->os->fresh);

	if (r < 0) {
		char why[128];
		snprintf(why, sizeof(why), "the registry's Environment cannot be read (%s): this "
			 "process's PATH is used instead", cvm_strerror(-r));
		cvm_findings_unchecked(&rp->f, "the PATH a program started now gets", why);
		rp->os->fresh = env ? strdup(env) : NULL;
	} else if (env && strcasecmp(env, rp->os->fresh)) {
		rp->os->here = strdup(env);
	}
}

/* Every copy: the store, the toolkits, the system folders, PATH, conda and pip under the profile. */
static void find_copies(struct cvm_doctor_report *rp, const struct cvm_toolkit *t, size_t nt)
{
	static const char *const profile[][2] = {
		{ "miniconda3/Library/bin", "conda" }, { "miniconda3/envs/*/Library/bin", "conda" },
		{ "anaconda3/Library/bin", "conda" }, { "anaconda3/envs/*/Library/bin", "conda" },
		{ ".conda/envs/*/Library/bin", "conda" },
		{ "miniconda3/Lib/site-packages/nvidia/cudnn/bin", "pip wheel" },
		{ "miniconda3/envs/*/Lib/site-packages/nvidia/cudnn/bin", "pip wheel" },
		{ "anaconda3/Lib/site-packages/nvidia/cudnn/bin", "pip wheel" },
		{ "anaconda3/envs/*/Lib/site-packages/nvidia/cudnn/bin", "pip wheel" },
	};
	char dir[LEN], **ids = NULL, where[64];
	size_t nids = 0;

	if (rp->ctx->store_open && cvm_store_list(&rp->ctx->store, &ids, &nids) == 0)
		for (size_t i = 0; i < nids; i++)
			if (cvm_fmt(dir, sizeof(dir), "%s/versions/%s/bin", rp->ctx->store.path, ids[i]) == 0)
				consider(rp, dir, "store");
	cvm_strv_free(ids, nids);
	for (size_t i = 0; i < nt; i++) {
		snprintf(where, sizeof(where), "CUDA %d.%d toolkit", t[i].major, t[i].minor);
		if (cvm_fmt(dir, sizeof(dir), "%s/bin", t[i].path) == 0 && !consider(rp, dir, where) &&
		    !main_dll(dir, NULL) && cvm_fmt(dir, sizeof(dir), "%s/include", t[i].path) == 0)
			consider_headers(rp, dir, where);
	}
	if (cvm_winenv_system_dir(false, dir, sizeof(dir)) == 0)
		consider(rp, dir, "System32");
	if (cvm_winenv_system_dir(true, dir, sizeof(dir)) == 0) {
		consider(rp, dir, "Windows folder");
		if (cvm_fmt(dir + strlen(dir), sizeof(dir) - strlen(dir), "\\System") == 0)
			consider(rp, dir, "System folder");
	}
	for (int which = 0; which < 2; which++) {
		const char *path = which ? rp->os->here : rp->os->fresh;
		for (const char *p = path ? path : "", *q; *p; p = *q ? q + 1 : q) {
			q = strchrnul(p, ';');
			if (q > p && cvm_fmt(dir, sizeof(dir), "%.*s", (int)(q - p), p) == 0)
				consider(rp, dir, which ? "PATH (this process)" : "PATH");
		}
	}
	for (size_t i = 0; i < sizeof(profile) / sizeof(profile[0]); i++)
		consider_each(rp, getenv("USERPROFILE"), profile[i][0], profile[i][1]);
	consider_each(rp, getenv("LOCALAPPDATA"),
		      "Programs/Python/Python3*/Lib/site-packages/nvidia/cudnn/bin", "pip wheel");
	consider_each(rp, getenv("APPDATA"), "Python/Python3*/site-packages/nvidia/cudnn/bin",
		      "pip wheel");
	consider_each(rp, getenv("CONDA_PREFIX"), "Library/bin", "conda");
	consider_each(rp, getenv("CONDA_PREFIX"), "Lib/site-packages/nvidia/cudnn/bin", "pip wheel");
	consider_each(rp, getenv("VIRTUAL_ENV"), "Lib/site-packages/nvidia/cudnn/bin", "pip wheel");
}

/* A copy's fields of Windows' own (the version and where it comes from), or its line of the listing. */
static void row(const struct cvm_doctor_report *rp, const struct cvm_doctor_copy *c, cvm_json *o,
		struct cvm_doctor_line *line)
{
	const char *from = c->library ? "version resource" : c->id[0] ? "store id" :
			   c->major ? "file name" : "-";
	char hv[32], lv[32];

	(void)rp;
	if (o) {
		/* cudart_version is 0: the CUDA runtime it was built with is known only by loading it. */
		cvm_json_set(o, "major", cvm_json_integer(c->major));
		cvm_json_set(o, "version_from", cvm_json_string(from));
		cvm_json_set(o, "version_resource", cvm_json_string(c->resource[0] ? c->resource : NULL));
		cvm_json_set(o, "cuda_major", cvm_json_integer(c->cuda_major));
		return;
	}
	cvm_doctor_version_str(c->header, hv, sizeof(hv));
	copy_version(c, lv, sizeof(lv));
	cvm_doctor_line_add(line, lv);
	cvm_doctor_line_add(line, c->major ? from : "(no DLL)");
	cvm_doctor_line_add(line, "headers");
	cvm_doctor_line_add(line, hv);
	cvm_doctor_line_add(line, c->where);
	cvm_doctor_line_add(line, c->managed ? "managed" : "not managed");
	cvm_doctor_line_add(line, c->dir);
}

static const char *shown(const struct cvm_doctor_report *rp, const char *path, char *buf,
			 size_t len)
{
	(void)rp;
	return cvm_path_shown(path, buf, len);
}

/* The store's folder, resolved, into out[LEN] ("" without one): what a store copy's real starts with. */
static void store_real_of(struct cvm_ctx *ctx, char *out)
{
	if (!ctx->store_open || !realpath(ctx->store.path, out))
		out[0] = '\0';
}

/* The store's folder and the PATHs: before the toolkits are looked for. */
static int begin(struct cvm_doctor_report *rp)
{
	rp->os = calloc(1, sizeof(*rp->os));
	if (!rp->os)
		return -ENOMEM;
	store_real_of(rp->ctx, rp->os->store_real);
	read_paths(rp);
	return 0;
}

/* The copy, and the driver against what its build needs (known from a store id alone). */
static void check_copy_driver(struct cvm_doctor_report *rp, const struct cvm_doctor_copy *c,
			      const char *drv)
{
	char what[LEN + 64];

	check_copy(rp, c);
	snprintf(what, sizeof(what), "%s\\%s", c->dir, c->dll);
	if (c->cuda_major)
		cvm_doctor_check_driver(rp, drv, c->cuda_major, what);
}

/* The search order the toolkits' lines speak of (text only). */
static void intro(struct cvm_doctor_report *rp, size_t nt, cvm_json *json)
{
	(void)rp;
	if (!json)
		cvm_info("DLL search order for a program in another folder: its own folder (not known "
			 "here: a cuDNN DLL beside the program comes first), System32, the System folder, "
			 "the Windows folder, its working folder (not known here), then the entries of the "
			 "PATH a program started now gets (%s's, then %s's)",
			 cvm_winenv_key_name(CVM_ENV_SYSTEM), cvm_winenv_key_name(CVM_ENV_USER));
	if (!nt && !json)
		cvm_info("no CUDA toolkit found (CUDA_PATH, CUDA_PATH_V<X>_<Y>, %%ProgramFiles%%\\NVIDIA "
			 "GPU Computing Toolkit\\CUDA\\v<X.Y>)");
}

static void end(struct cvm_doctor_report *rp, const struct cvm_toolkit *t, size_t nt,
		cvm_json *json)
{
	(void)json;
	/* The active versions are PATH entries, not in the toolkits' folders doctor.c's check reads. */
	cvm_closure_doctor_active(&rp->f, rp->ctx, t, nt);
	check_processes(rp);
}

static void release(struct cvm_doctor_report *rp)
{
	if (!rp->os)
		return;
	free(rp->os->fresh);
	free(rp->os->here);
	free(rp->os);
	rp->os = NULL;
}

static const struct cvm_doctor_os windows_doctor = {
	.no_driver = "no NVIDIA driver found (no version resource of System32\\nvcuda.dll)",
	.driver_problem = "%s (CUDA %d) needs NVIDIA driver %s or newer on Windows; this one is %s",
	.begin = begin,
	.find = find_copies,
	.shown = shown,
	.row = row,
	.driver = read_driver,
	.check_copy = check_copy_driver,
	.intro = intro,
	.check_toolkit = check_toolkit,
	.end = end,
	.release = release,
};

const struct cvm_doctor_os *cvm_doctor_os(void)
{
	return &windows_doctor;
}

int cvm_doctor_which(struct cvm_ctx *ctx, const struct cvm_toolkit *tk, struct cvm_which *w)
{
	return cvm_doctor_which_major(ctx, tk, 0, w);
}

int cvm_doctor_which_major(struct cvm_ctx *ctx, const struct cvm_toolkit *tk, int major,
			   struct cvm_which *w)
{
	char cuda[16], active_id[160], active[LEN], store_real[LEN], name[32], *fresh = NULL;
	const char *from = NULL, *path;
	struct hit *h = NULL;
	bool is_active;
	size_t n = 0;
	int r;

	memset(w, 0, sizeof(*w));
	cvm_toolkit_name(tk, cuda, sizeof(cuda));
	active_of(ctx, cuda, active_id, sizeof(active_id), active);
	if (!major)
		major = wanted_major(tk, active_id, &from);
	/* What a program started now gets; this process's PATH when the registry cannot be read. */
	path = cvm_winenv_fresh_path(&fresh) == 0 ? fresh : getenv("PATH");
	w->major = search_major(path, major, name, sizeof(name), &h, &n);
	if (!w->major)
		w->major = major;
	r = n ? 0 : -CVM_E_NOTFOUND;
	if (r < 0)
		goto out;
	snprintf(w->name, sizeof(w->name), "%s", h[0].file);
	cvm_path_shown(h[0].real, w->library, sizeof(w->library));
	store_real_of(ctx, store_real);
	store_id_of(store_real, h[0].real, w->id, sizeof(w->id));
	is_active = active[0] && !strcasecmp(h[0].real, active);
	w->why = is_active ? "active PATH entry" : h[0].kind;
	if (is_active)
		snprintf(w->reason, sizeof(w->reason), "%s: %s, the first folder of the DLL search order "
			 "that holds %s (after the program's own folder, not known here): the active "
			 "version, %s", h[0].place, h[0].dir, name, active_id);
	else
		snprintf(w->reason, sizeof(w->reason), "%s: %s, the first folder of the DLL search order "
			 "that holds %s (after the program's own folder, not known here)%s%s%s", h[0].place,
			 h[0].dir, name, active_id[0] ? "; not the active version, " : "", active_id,
			 active_id[0] ? ": see 'cudnnvm doctor'" : "");
out:
	free(h);
	free(fresh);
	return r;
}
