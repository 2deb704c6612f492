/* SPDX-License-Identifier: MIT */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#ifndef _WIN32
#include <sys/wait.h>
#endif
#include <time.h>
#include <unistd.h>

#include "alloc.h"
#include "config.h"
#include "error.h"
#include "fsutil.h"
#include "json.h"
#include "out.h"
#include "version.h"
#include "proc.h"
#include "toolkit.h"
#include "trust.h"

/* Symlinks followed while resolving one path inside the root. */
/* version.json is a few KiB; cuda_runtime_api.h is about 600 KiB. */
#define MAX_JSON	(1u << 20)
#define MAX_HEADER	(16u << 20)
/* nvcc --version prints five lines; anything beyond this is not nvcc. */
#define MAX_NVCC_OUT	(64u << 10)
#define NVCC_TIMEOUT_MS	5000

/* ---------------------------------------------------------------- parsers */

/*
 * Reads "X.Y" at s[0..len): decimal major and minor, at most 4 digits each.
 * *used is how many bytes made the number; what follows is the caller's.
 */
static int parse_xy(const char *s, size_t len, int *major, int *minor, size_t *used)
{
	size_t i = 0, start;
	int v[2] = { 0, 0 };

	for (int k = 0; k < 2; k++) {
		if (k == 1) {
			if (i >= len || s[i] != '.')
				return -CVM_E_NOTFOUND;
			i++;
		}
		start = i;
		while (i < len && s[i] >= '0' && s[i] <= '9') {
			if (i - start >= 4)
				return -CVM_E_NOTFOUND;
			v[k] = v[k] * 10 + (s[i] - '0');
			i++;
		}
		if (i == start)
			return -CVM_E_NOTFOUND;
	}
	*major = v[0];
	*minor = v[1];
	if (used)
		*used = i;
	return 0;
}

int cvm_toolkit_parse_version_json(const char *text, size_t len, int *major, int *minor)
{
	cvm_json *doc = NULL;
	const char *ver;
	size_t used;
	int maj, min, r;

	r = cvm_json_parse(text, len, NULL, &doc);
	if (r < 0) {
		r = -CVM_E_NOTFOUND;
		goto out;
	}
	ver = cvm_json_str(cvm_json_get(cvm_json_get(doc, "cuda"), "version"));
	if (!ver) {
		r = -CVM_E_NOTFOUND;
		goto out;
	}
	/* "12.4.1" or "12.4": major.minor, then only more dotted parts. */
	r = parse_xy(ver, strlen(ver), &maj, &min, &used);
	if (r < 0)
		goto out;
	if (ver[used] != '\0' && ver[used] != '.') {
		r = -CVM_E_NOTFOUND;
		goto out;
	}
	*major = maj;
	*minor = min;
out:
	cvm_json_free(doc);
	return r;
}

static bool is_blank(char c)
{
	return c == ' ' || c == '\t';
}

static bool is_ident(char c)
{
	return c == '_' || (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') ||
		(c >= 'A' && c <= 'Z');
}

/* Matches "#define CUDART_VERSION <digits>" on the line line[0..len). */
static int cudart_line(const char *line, size_t len, long *value)
{
	static const char name[] = "CUDART_VERSION";
	size_t i = 0, start;
	long v = 0;

	while (i < len && is_blank(line[i]))
		i++;
	if (i >= len || line[i] != '#')
		return -CVM_E_NOTFOUND;
	i++;
	while (i < len && is_blank(line[i]))
		i++;
	if (len - i < 6 || memcmp(line + i, "define", 6) != 0)
		return -CVM_E_NOTFOUND;
	i += 6;
	start = i;
	while (i < len && is_blank(line[i]))
		i++;
	if (i == start || len - i < sizeof(name) - 1 ||
	    memcmp(line + i, name, sizeof(name) - 1) != 0)
		return -CVM_E_NOTFOUND;
	i += sizeof(name) - 1;
	start = i;
	while (i < len && is_blank(line[i]))
		i++;
	if (i == start)
		return -CVM_E_NOTFOUND;
	start = i;
	while (i < len && line[i] >= '0' && line[i] <= '9') {
		if (i - start >= 7)
			return -CVM_E_NOTFOUND;
		v = v * 10 + (line[i] - '0');
		i++;
	}
	if (i == start || (i < len && is_ident(line[i])))
		return -CVM_E_NOTFOUND;
	*value = v;
	return 0;
}

int cvm_toolkit_parse_cudart_header(const char *text, size_t len, int *major, int *minor)
{
	size_t i = 0;

	while (i < len) {
		const char *nl = memchr(text + i, '\n', len - i);
		size_t end = nl ? (size_t)(nl - text) : len;
		long v;

		if (cudart_line(text + i, end - i, &v) == 0) {
			/* 1000 is CUDA 1.0; anything below is not an encoded version. */
			if (v < 1000)
				return -CVM_E_NOTFOUND;
			*major = (int)(v / 1000);
			*minor = (int)((v % 1000) / 10);
			return 0;
		}
		i = end + 1;
	}
	return -CVM_E_NOTFOUND;
}

int cvm_toolkit_parse_nvcc(const char *text, size_t len, int *major, int *minor)
{
	static const char key[] = "release ";
	const size_t klen = sizeof(key) - 1;
	size_t i = 0;

	/* "Cuda compilation tools, release 12.4, V12.4.131" */
	while (i + klen <= len) {
		const char *p = memmem(text + i, len - i, key, klen);
		size_t at, used;
		int maj, min;

		if (!p)
			break;
		at = (size_t)(p - text) + klen;
		if (parse_xy(text + at, len - at, &maj, &min, &used) == 0 &&
		    (at + used == len || text[at + used] == ',' ||
		     text[at + used] == '\n' || is_blank(text[at + used]))) {
			*major = maj;
			*minor = min;
			return 0;
		}
		i = at;
	}
	return -CVM_E_NOTFOUND;
}

/* ---------------------------------------------------------------- sources */

/* A file of the toolkit that says its version, and how to read it. */
struct version_file {
	const char *name;	/* inside the toolkit's folder */
	size_t max;		/* a larger file is not the one meant */
	int (*parse)(const char *text, size_t len, int *major, int *minor);
	const char *what;	/* what the file lacks when parse finds nothing */
};

static const struct version_file version_json = {
	"version.json", MAX_JSON, cvm_toolkit_parse_version_json, "CUDA version"
};
static const struct version_file version_header = {
	"include/cuda_runtime_api.h", MAX_HEADER, cvm_toolkit_parse_cudart_header,
	"CUDART_VERSION"
};

static int version_from_file(const char *dir, const struct version_file *f, int *major,
			     int *minor)
{
	char path[PATH_MAX];
	char *buf = NULL;
	size_t len = 0;
	int r;

	r = cvm_fmt(path, sizeof(path), "%s/%s", dir, f->name);
	if (r < 0)
		goto out;
	r = cvm_read_file_at(AT_FDCWD, path, f->max, &buf, &len);
	if (r < 0)
		goto out;
	r = f->parse(buf, len, major, minor);
	if (r < 0)
		cvm_verbose("'%s': no %s in it", cvm_safe(path), f->what);
out:
	free(buf);
	return r;
}

/* Runs `nvcc --version` with no shell and a deadline; the output is NUL-terminated in *buf (caller frees). */
static int run_nvcc(const char *nvcc, char **buf, size_t *len)
{
	char *const argv[] = { (char *)nvcc, (char *)"--version", NULL };
	char *out = malloc(MAX_NVCC_OUT + 1);
	int status, r;

	if (!out)
		return -ENOMEM;
	r = cvm_proc_capture(argv, NULL, false, NVCC_TIMEOUT_MS, out, MAX_NVCC_OUT + 1, &status);
	if (r == 0 && (!WIFEXITED(status) || WEXITSTATUS(status) != 0))
		r = -CVM_E_CHILD;
	if (r < 0) {
		free(out);
		return r;
	}
	*buf = out;
	*len = strlen(out);
	return 0;
}

static int version_from_nvcc(const char *dir, int *major, int *minor)
{
	char path[PATH_MAX], what[PATH_MAX + 16];
	struct cvm_trust trust;
	struct stat st;
	char *buf = NULL;
	size_t len = 0;
	int r;

	r = cvm_fmt(path, sizeof(path), "%s/bin/nvcc", dir);
	if (r < 0)
		goto out;
	if (stat(path, &st) < 0) {
		r = -errno;
		goto out;
	}
	if (!S_ISREG(st.st_mode) || access(path, X_OK) < 0) {
		r = -EACCES;
		goto out;
	}
	/* Never run what another user could have written (as root: anyone but root). */
	r = cvm_trust_check(path, &trust);
	if (r < 0) {
		if (r == -CVM_E_PERM && cvm_fmt(what, sizeof(what), "'%s --version'", path) == 0)
			cvm_trust_skip(what, &trust);
		goto out;
	}
	r = run_nvcc(path, &buf, &len);
	if (r < 0) {
		cvm_verbose("'%s --version' failed: %s", cvm_safe(path),
			    r == -ETIMEDOUT ? "timed out" : cvm_strerror(r));
		goto out;
	}
	r = cvm_toolkit_parse_nvcc(buf, len, major, minor);
	if (r < 0)
		cvm_verbose("'%s --version': no release number in its output", cvm_safe(path));
out:
	free(buf);
	return r;
}

int cvm_toolkit_version(const char *path, int *major, int *minor, const char **source)
{
	int maj = 0, min = 0;

	if (version_from_file(path, &version_json, &maj, &min) == 0) {
		*source = "version.json";
	} else if (version_from_file(path, &version_header, &maj, &min) == 0) {
		*source = "cuda_runtime_api.h";
	} else if (version_from_nvcc(path, &maj, &min) == 0) {
		*source = "nvcc";
	} else {
		return -CVM_E_NOTFOUND;
	}
	*major = maj;
	*minor = min;
	return 0;
}

/* ------------------------------------------------------ paths in the root */

/* The root as a prefix: "" for the host, else without trailing slashes. */
static int root_prefix(const char *root, char *buf, size_t len)
{
	size_t n;
	int r;

	r = cvm_fmt(buf, len, "%s", root ? root : "");
	if (r < 0)
		return r;
	n = strlen(buf);
	while (n > 0 && buf[n - 1] == '/')
		buf[--n] = '\0';
	return 0;
}

#ifndef _WIN32
/* Resolves inner in the root and stats the folder it names. */
static int stat_in_root(const char *prefix, const char *inner, char *resolved, size_t len,
			struct stat *st)
{
	char host[PATH_MAX];
	int r;

	r = cvm_resolve_in_root(prefix, inner, resolved, len);
	if (r < 0)
		return r;
	r = cvm_fmt(host, sizeof(host), "%s%s", prefix, resolved);
	if (r < 0)
		return r;
	if (stat(host, st) < 0)
		return -errno;
	if (!S_ISDIR(st->st_mode))
		return -ENOTDIR;
	return 0;
}
#endif

/* ---------------------------------------------------------------- discovery */

struct found {
	struct cvm_toolkit *t;
	uint64_t *dev;		/* of each toolkit found (Windows' ino_t is 16 bits) */
	uint64_t *ino;
	size_t n, cap, dev_cap, ino_cap;	/* cap: t's; each array grows on its own */
};

static int found_add(struct found *f, const char *prefix, const char *resolved,
		     const struct stat *st, int major, int minor, const char *source)
{
	struct cvm_toolkit t = { 0 };
	char host[PATH_MAX];
	int r;

	r = cvm_fmt(host, sizeof(host), "%s%s", prefix, resolved);
	if (r < 0)
		goto out;
	r = CVM_GROW(f->t, f->n + 1, f->cap);
	if (r == 0)
		r = CVM_GROW(f->dev, f->n + 1, f->dev_cap);
	if (r == 0)
		r = CVM_GROW(f->ino, f->n + 1, f->ino_cap);
	if (r < 0)
		goto out;
	t.path = strdup(host);
	t.display = strdup(resolved);
	if (!t.path || !t.display) {
		r = -ENOMEM;
		goto out;
	}
	t.major = major;
	t.minor = minor;
	t.source = source;
	f->dev[f->n] = st->st_dev;
	f->ino[f->n] = st->st_ino;
	f->t[f->n++] = t;
	t.path = t.display = NULL;
out:
	free(t.display);
	free(t.path);
	return r;
}

/* Looks at one candidate name (inside the root); skips what is no toolkit. */
#ifndef _WIN32
static int consider(struct found *f, const char *prefix, const char *inner)
{
	char resolved[PATH_MAX], host[PATH_MAX];
	const char *source = NULL;
	struct stat st;
	int major, minor, r;

	r = stat_in_root(prefix, inner, resolved, sizeof(resolved), &st);
	if (r < 0) {
		cvm_verbose("skipping '%s': %s", cvm_safe(inner), cvm_strerror(r));
		return 0;
	}
	for (size_t i = 0; i < f->n; i++)
		if (f->dev[i] == st.st_dev && f->ino[i] == st.st_ino)
			return 0;
	r = cvm_fmt(host, sizeof(host), "%s%s", prefix, resolved);
	if (r < 0)
		return 0;
	if (cvm_toolkit_version(host, &major, &minor, &source) < 0) {
		cvm_verbose("skipping '%s': no CUDA version found (version.json, "
			    "include/cuda_runtime_api.h, bin/nvcc)", cvm_safe(resolved));
		return 0;
	}
	return found_add(f, prefix, resolved, &st, major, minor, source);
}

static int cmp_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Every entry of the folder inner whose name starts with stem (sorted, for stable dedupe). */
static int scan(struct found *f, const char *prefix, const char *inner, const char *stem)
{
	char host[PATH_MAX], cand[PATH_MAX];
	char **names = NULL;
	size_t n = 0, cap = 0;
	struct dirent *de;
	DIR *d = NULL;
	int r;

	r = cvm_fmt(host, sizeof(host), "%s%s", prefix, inner);
	if (r < 0)
		goto out;
	d = opendir(host);
	if (!d) {
		/* A missing or unreadable folder hides toolkits but is not fatal to discovery. */
		if (errno != ENOENT && errno != ENOTDIR)
			cvm_verbose("cannot read '%s': %s", cvm_safe(inner), strerror(errno));
		goto out;
	}
	while ((errno = 0, de = readdir(d))) {
		if (strncmp(de->d_name, stem, strlen(stem)) != 0)
			continue;
		r = CVM_GROW(names, n + 1, cap);
		if (r < 0)
			goto out;
		names[n] = strdup(de->d_name);
		if (!names[n]) {
			r = -ENOMEM;
			goto out;
		}
		n++;
	}
	if (errno) {
		r = -errno;
		goto out;
	}
	if (n)
		qsort(names, n, sizeof(*names), cmp_name);
	for (size_t i = 0; i < n; i++) {
		if (cvm_fmt(cand, sizeof(cand), "%s/%s", inner, names[i]) < 0)
			continue;
		r = consider(f, prefix, cand);
		if (r < 0)
			goto out;
	}
out:
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
	if (d)
		closedir(d);
	return r;
}

#endif

static int cmp_toolkit(const void *a, const void *b)
{
	const struct cvm_toolkit *x = a, *y = b;

	if (x->major != y->major)
		return x->major < y->major ? -1 : 1;
	if (x->minor != y->minor)
		return x->minor < y->minor ? -1 : 1;
	return strcmp(x->display, y->display);
}

#ifdef _WIN32
/*
 * Windows: a toolkit is a folder named by CUDA_PATH, a CUDA_PATH_V<X>_<Y>
 * (the installer sets one per version) or one under %ProgramFiles%\NVIDIA
 * GPU Computing Toolkit\CUDA\v<X.Y>; --root does not apply. Paths use '/'.
 */
static int consider_win(struct found *f, const char *path)
{
	char p[PATH_MAX];
	const char *source = NULL;
	struct stat st;
	int major, minor;

	if (cvm_fmt(p, sizeof(p), "%s", path) < 0)
		return 0;
	for (char *c = p; *c; c++)
		if (*c == '\\')
			*c = '/';
	for (size_t l = strlen(p); l > 3 && p[l - 1] == '/'; l--)
		p[l - 1] = '\0';
	if (stat(p, &st) < 0 || !S_ISDIR(st.st_mode)) {
		cvm_verbose("skipping '%s': not a folder", cvm_safe(p));
		return 0;
	}
	for (size_t i = 0; i < f->n; i++)
		if (f->dev[i] == st.st_dev && f->ino[i] == st.st_ino)
			return 0;
	if (cvm_toolkit_version(p, &major, &minor, &source) < 0) {
		cvm_verbose("skipping '%s': no CUDA version found (version.json, "
			    "include/cuda_runtime_api.h)", cvm_safe(p));
		return 0;
	}
	return found_add(f, "", p, &st, major, minor, source);
}

static int find_windows(struct found *f)
{
	const char *env = getenv("CUDA_PATH"), *pf = getenv("ProgramFiles");
	char name[32], dir[PATH_MAX];
	int r = 0;

	if (env && *env)
		r = consider_win(f, env);
	for (int x = 1; r == 0 && x <= 30; x++)
		for (int y = 0; r == 0 && y <= 9; y++) {
			snprintf(name, sizeof(name), "CUDA_PATH_V%d_%d", x, y);
			env = getenv(name);
			if (env && *env)
				r = consider_win(f, env);
		}
	if (r == 0 && pf && *pf &&
	    cvm_fmt(dir, sizeof(dir), "%s/NVIDIA GPU Computing Toolkit/CUDA", pf) == 0) {
		DIR *d = opendir(dir);
		struct dirent *de;

		while (r == 0 && d && (de = readdir(d))) {
			char cand[PATH_MAX];

			if (de->d_name[0] == 'v' &&
			    cvm_fmt(cand, sizeof(cand), "%s/%s", dir, de->d_name) == 0)
				r = consider_win(f, cand);
		}
		if (d)
			closedir(d);
	}
	return r;
}
#endif

int cvm_toolkits_find(const char *root, struct cvm_toolkit **out, size_t *n)
{
	struct found f = { 0 };
	char prefix[PATH_MAX];
	int r;

	r = root_prefix(root, prefix, sizeof(prefix));
	if (r < 0)
		goto out;
#ifdef _WIN32
	r = find_windows(&f);
#else
	r = scan(&f, prefix, "/usr/local", "cuda-");
	if (r == 0)
		r = scan(&f, prefix, "/opt", "cuda");
#endif
	if (r < 0)
		goto out;
	if (f.n)
		qsort(f.t, f.n, sizeof(*f.t), cmp_toolkit);
	*out = f.t;
	*n = f.n;
	f.t = NULL;
	f.n = 0;
out:
	if (r < 0)
		cvm_err(r, "cannot look for CUDA toolkits under '%s': %s",
			cvm_safe(root && root[0] ? root : "/"), cvm_strerror(r));
	cvm_toolkits_free(f.t, f.n);
	free(f.dev);
	free(f.ino);
	return r;
}

void cvm_toolkit_name(const struct cvm_toolkit *tk, char *buf, size_t len)
{
	snprintf(buf, len, "%d.%d", tk->major, tk->minor);
}

void cvm_toolkit_release(struct cvm_toolkit *t)
{
	if (!t)
		return;
	free(t->path);
	free(t->display);
	t->path = NULL;
	t->display = NULL;
}

void cvm_toolkits_free(struct cvm_toolkit *t, size_t n)
{
	if (!t)
		return;
	for (size_t i = 0; i < n; i++)
		cvm_toolkit_release(&t[i]);
	free(t);
}

/* ---------------------------------------------------------------- selection */

/* "11.8 at /usr/local/cuda-11.8, ..." or "none", malloc'd (NULL on ENOMEM). */
static char *found_list(const struct cvm_toolkit *t, size_t n)
{
	size_t len = 5, at = 0;
	char *buf;

	for (size_t i = 0; i < n; i++)
		len += (size_t)snprintf(NULL, 0, ", %d.%d at %s", t[i].major, t[i].minor,
					cvm_safe(t[i].display));
	buf = malloc(len);
	if (!buf)
		return NULL;
	if (!n)
		snprintf(buf, len, "none");
	for (size_t i = 0; i < n; i++)
		at += (size_t)snprintf(buf + at, len - at, "%s%d.%d at %s", i ? ", " : "", t[i].major,
				       t[i].minor, cvm_safe(t[i].display));
	return buf;
}

static int copy_toolkit(const struct cvm_toolkit *src, struct cvm_toolkit *dst)
{
	struct cvm_toolkit t = *src;

	t.path = strdup(src->path);
	t.display = strdup(src->display);
	if (!t.path || !t.display) {
		cvm_toolkit_release(&t);
		return -ENOMEM;
	}
	*dst = t;
	return 0;
}

/*
 * The toolkit a command without --cuda means: "cuda = X.Y" in the
 * configuration file (-CVM_E_NOTFOUND, said, when there is no such toolkit),
 * else the one /usr/local/cuda points to (-ENOENT, quietly, when none).
 */
static int default_index(const char *root, const char *prefix, const struct cvm_toolkit *t,
			 size_t n)
{
	char resolved[PATH_MAX], conf[64];
	struct stat st, ts;
	int major, minor, r;
	size_t used;

	r = cvm_config_get(root, "cuda", conf, sizeof(conf));
	if (r < 0)
		return r;
	if (r > 0) {
		if (parse_xy(conf, strlen(conf), &major, &minor, &used) < 0 || conf[used])
			return cvm_err(-CVM_E_USAGE, "'/etc/cudnnvm.conf': cuda '%s' is not a CUDA "
				       "version X.Y", cvm_safe(conf));
		for (size_t i = 0; i < n; i++)
			if (t[i].major == major && t[i].minor == minor)
				return (int)i;
		return cvm_err(-CVM_E_NOTFOUND, "'/etc/cudnnvm.conf' names cuda %d.%d, and there is "
			       "no such toolkit: give --cuda, or change the file", major, minor);
	}
#ifdef _WIN32
	/* CUDA_PATH: the installer points it at the newest toolkit, as /usr/local/cuda. */
	const char *env = getenv("CUDA_PATH");

	(void)prefix;
	(void)resolved;
	if (!env || !*env || stat(env, &st) < 0)
		return -ENOENT;
#else
	if (stat_in_root(prefix, "/usr/local/cuda", resolved, sizeof(resolved), &st) < 0)
		return -ENOENT;
#endif
	for (size_t i = 0; i < n; i++) {
		if (stat(t[i].path, &ts) == 0 && ts.st_dev == st.st_dev && ts.st_ino == st.st_ino)
			return (int)i;
	}
	return -ENOENT;
}

int cvm_toolkit_default(const char *root, const struct cvm_toolkit *t, size_t n)
{
	char prefix[PATH_MAX];

	if (root_prefix(root, prefix, sizeof(prefix)) < 0)
		return -CVM_E_NOTFOUND;
	return default_index(root, prefix, t, n);
}

int cvm_toolkit_select(const char *root, const char *cuda, struct cvm_toolkit *out)
{
	struct cvm_toolkit *t = NULL;
	char prefix[PATH_MAX], want[32];
	char *list = NULL;
	size_t n = 0;
	int major = 0, minor = 0, pick = -1, def, r;

	memset(out, 0, sizeof(*out));
	r = root_prefix(root, prefix, sizeof(prefix));
	if (r < 0)
		goto out;
	/* "12" or "12.x" (minor -1): any toolkit of that major, as every --cuda takes it. */
	if (cuda && cvm_cuda_parse(cuda, &major, &minor) < 0) {
		r = cvm_err(-CVM_E_USAGE, "invalid CUDA version '%s' (expected X.Y, e.g. 12.4, or "
			    "X for any X.y)", cvm_safe(cuda));
		goto out;
	}
	r = cvm_toolkits_find(root, &t, &n);
	if (r < 0)
		goto out;
	if (cuda && minor < 0) {
		/* The default toolkit when it is of that major, else the newest of it. */
		def = default_index(root, prefix, t, n);
		bool by_default = def >= 0 && t[def].major == major;

		pick = by_default ? def : -1;
		for (size_t i = 0; i < n && !by_default; i++)
			if (t[i].major == major && (pick < 0 || t[i].minor > t[pick].minor))
				pick = (int)i;
	} else if (cuda) {
		snprintf(want, sizeof(want), "/usr/local/cuda-%d.%d", major, minor);
		for (size_t i = 0; i < n; i++) {
			if (t[i].major != major || (minor >= 0 && t[i].minor != minor))
				continue;
			if (pick >= 0 && t[pick].minor != t[i].minor) {
				list = found_list(t, n);
				r = cvm_err(-CVM_E_NOTFOUND, "--cuda %s: more than one CUDA %d toolkit "
					    "(found: %s); give X.Y", cvm_safe(cuda), major,
					    list ? list : "?");
				goto out;
			}
			snprintf(want, sizeof(want), "/usr/local/cuda-%d.%d", major, t[i].minor);
			if (pick < 0 || strcmp(t[i].display, want) == 0)
				pick = (int)i;
		}
	} else {
		pick = default_index(root, prefix, t, n);
		if (pick < 0 && pick != -ENOENT) {
			r = pick;
			goto out;
		}
	}
	if (pick < 0 || !t) {
		list = found_list(t, n);
		if (cuda)
			r = cvm_err(-CVM_E_NOTFOUND, "no CUDA %s toolkit under '%s' (found: %s)",
				    cvm_safe(cuda), cvm_safe(prefix[0] ? prefix : "/"),
				    list ? list : "?");
		else
			r = cvm_err(-CVM_E_NOTFOUND, "no --cuda given and '/usr/local/cuda' does "
				    "not point to a toolkit (found: %s)", list ? list : "?");
		goto out;
	}
	r = copy_toolkit(&t[pick], out);
out:
	free(list);
	cvm_toolkits_free(t, n);
	return r;
}
