/* SPDX-License-Identifier: MIT */
/*
 * Framework truth: what the frameworks of a Python environment need, read
 * from the files pip and conda leave (frameworks.h). Nothing here runs an
 * interpreter: importing a framework to ask it is what fails.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "alloc.h"
#include "compat.h"
#include "cudnn.h"
#include "error.h"
#include "frameworks.h"
#include "fsutil.h"
#include "json.h"
#include "manifest.h"
#include "out.h"
#include "select.h"
#include "store.h"

/* METADATA's headers come first, its description after them: this much holds them. */
#define META_MAX (64u * 1024)
#define BUILDINFO_MAX (1u << 20)
/* A conda-meta record lists the package's files: a framework's runs to megabytes. */
#define CONDA_MAX (64u << 20)
#define SHEBANG_MAX 512

static const char RULE_BUILD[] = "same major, not older than the build";
static const char RULE_RANGE[] = "the range as written";
static const char RULE_MAJOR[] = "same major";

/*
 * Frameworks that publish no pin, by their own documentation:
 * - ONNX Runtime, https://onnxruntime.ai/docs/execution-providers/CUDA-ExecutionProvider.html
 *   ("Requirements"): 1.19 and later on PyPI are CUDA 12.x with cuDNN 9.x; the releases
 *   before (1.7 to 1.18) are cuDNN 8.x; "built with cuDNN 8.x is not compatible with
 *   cuDNN 9.x, and vice versa".
 * - CTranslate2 4.5.0's release notes (github.com/OpenNMT/CTranslate2/releases/tag/v4.5.0):
 *   "now supports CUDNN 9 and is no longer compatible with CUDNN 8"; 3.0 to 4.4 are cuDNN 8.
 * - CuPy's upgrade guide (docs.cupy.dev/en/latest/upgrade.html, "CuPy v14"): "CuPy v14 no
 *   longer supports cuDNN"; major 0 in a row: from there on it uses none (not listed). Its
 *   earlier releases load cuDNN optionally and publish no pin: "no pin known".
 */
static const struct table_row {
	const char *name;	/* normalised distribution name */
	const char *from;	/* the first version of the row */
	int major;		/* 0: from this version on it uses no cuDNN */
	const char *source;
} table[] = {
	{ "onnxruntime-gpu", "1.19", 9, "ONNX Runtime's CUDA EP requirements: 1.19+ use cuDNN 9.x" },
	{ "onnxruntime-gpu", "1.7", 8, "ONNX Runtime's CUDA EP requirements: 1.7-1.18 use cuDNN 8.x" },
	{ "ctranslate2", "4.5", 9, "CTranslate2 4.5.0 release notes: cuDNN 9, not 8" },
	{ "ctranslate2", "3.0", 8, "CTranslate2 3.0-4.4: cuDNN 8" },
	{ "cupy-cuda11x", "14", 0, "CuPy v14 dropped cuDNN" },
	{ "cupy-cuda12x", "14", 0, "CuPy v14 dropped cuDNN" },
	{ "cupy-cuda13x", "14", 0, "CuPy v14 dropped cuDNN" },
};

/* Distributions that use cuDNN when they are GPU builds: said as "no pin known" without one. */
static const char *const known[] = {
	"torch", "tensorflow", "tensorflow-gpu", "tf-nightly", "jax-cuda12-plugin",
	"jax-cuda13-plugin", "jaxlib", "onnxruntime-gpu", "ctranslate2", "paddlepaddle-gpu",
	"cupy-cuda11x", "cupy-cuda12x", "cupy-cuda13x",
};

/* Conda packages that pin cudnn in their "depends", and the pip name they are known by. */
static const struct conda_name {
	const char *conda, *pip;
} conda_fw[] = {
	{ "pytorch", "torch" }, { "libtorch", "torch" }, { "tensorflow-base", "tensorflow" },
	{ "jaxlib", "jaxlib" }, { "onnxruntime", "onnxruntime-gpu" }, { "cupy-core", "cupy" },
	{ "libctranslate2", "ctranslate2" }, { "paddlepaddle-gpu", "paddlepaddle-gpu" },
};

/* PEP 503's normal form: lowercase, runs of '-', '_', '.' as one '-'. */
static void normalise(const char *s, size_t len, char *out, size_t outlen)
{
	size_t o = 0;

	for (size_t i = 0; i < len && o + 1 < outlen; i++) {
		char c = s[i];
		if (c == '_' || c == '.' || c == '-') {
			if (o && out[o - 1] != '-')
				out[o++] = '-';
			continue;
		}
		out[o++] = (char)tolower((unsigned char)c);
	}
	out[o] = '\0';
}

/* Up to 4 dotted numbers from s, stopping at anything else ("10.0a0" is 10.0); ".*" sets *star. */
static const char *lenient_version(const char *s, struct cvm_version *v, bool *star)
{
	memset(v, 0, sizeof(*v));
	*star = false;
	while (v->n < 4 && isdigit((unsigned char)*s)) {
		unsigned long x = strtoul(s, (char **)&s, 10);
		v->part[v->n++] = x > 999999 ? 999999 : (unsigned)x;
		if (*s != '.')
			break;
		if (s[1] == '*') {
			*star = true;
			s += 2;
			break;
		}
		if (!isdigit((unsigned char)s[1]))
			break;
		s++;
	}
	while (*s && *s != ',' && *s != ')' && *s != ';' && !isspace((unsigned char)*s))
		s++;
	return s;
}

/* One specifier (op and version) into f. */
static void apply_spec(struct cvm_fw *f, const char *op, const struct cvm_version *v, bool star)
{
	if (!v->n)
		return;
	if (!strcmp(op, "<")) {
		f->below = *v;
	} else if (!strcmp(op, "<=")) {
		f->below = *v;
		f->below.part[v->n - 1]++;
	} else if (!strcmp(op, "!=")) {
		return;
	} else if (star) {
		/* "==9.*" (conda's "9.*"): the major alone, and what is given. */
		f->major = (int)v->part[0];
		if (v->n > 1)
			f->min = *v;
	} else {
		f->min = *v;
	}
}

/* "==9.19.0.56", "<10.0,>=9.8", "(>=9.1)", ">=9.3.0.75,<10.0a0", "9.*" into f. */
static void parse_specs(const char *s, struct cvm_fw *f)
{
	static const char *const ops[] = { "===", "==", "~=", ">=", "<=", "!=", ">", "<" };
	size_t nspec = 0;
	bool pinned = false;

	f->major = 0;
	memset(&f->min, 0, sizeof(f->min));
	memset(&f->below, 0, sizeof(f->below));
	while (*s && *s != ';') {
		const char *op = "==";
		struct cvm_version v;
		bool star;

		while (*s == ' ' || *s == '(' || *s == ',' || *s == ')')
			s++;
		if (!*s || *s == ';')
			break;
		for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++)
			if (!strncmp(s, ops[i], strlen(ops[i]))) {
				op = ops[i];
				s += strlen(op);
				break;
			}
		while (*s == ' ')
			s++;
		{
			const char *at = s;
			s = lenient_version(s, &v, &star);
			/* Nothing a version is made of: the end of what can be read. */
			if (s == at)
				break;
		}
		apply_spec(f, op, &v, star);
		pinned = !strcmp(op, "==") && !star;
		nspec++;
	}
	if (!f->major && f->min.n)
		f->major = (int)f->min.part[0];
	if (!f->major && f->below.n)
		f->major = (int)f->below.part[0] - (f->below.n == 1 || !f->below.part[1]);
	f->rule = nspec == 1 && pinned ? RULE_BUILD : RULE_RANGE;
}

/* A marker variable's value on this host, or NULL when unknown (the clause then holds). */
static const char *marker_value(const char *var, const char *pyver)
{
	const char *plat = cvm_host_platform();

	if (!strcmp(var, "platform_system"))
		return CVM_WINDOWS ? "Windows" : "Linux";
	if (!strcmp(var, "sys_platform"))
		return CVM_WINDOWS ? "win32" : "linux";
	if (!strcmp(var, "os_name"))
		return CVM_WINDOWS ? "nt" : "posix";
	if (!strcmp(var, "platform_machine") && plat)
		return CVM_WINDOWS ? "AMD64" : strstr(plat, "x86_64") ? "x86_64" : "aarch64";
	if (!strcmp(var, "python_version") && *pyver)
		return pyver;
	return NULL;
}

/* One clause: VAR OP "VALUE" (or the other way round). */
static bool clause_true(const char *c, const char *pyver)
{
	char a[64] = "", op[8] = "", b[64] = "";
	const char *var, *val, *have;
	int cmp;

	if (sscanf(c, " %63[A-Za-z_.\"'0-9*] %7[=!<>~a-z ] %63[A-Za-z_.\"'0-9*]", a, op, b) != 3)
		return true;
	for (size_t i = strlen(op); i && op[i - 1] == ' '; i--)
		op[i - 1] = '\0';
	var = *a == '"' || *a == '\'' ? b : a;
	val = var == a ? b : a;
	/* The pin names the build whichever extra installs it ("tensorflow[and-cuda]"). */
	if (!strcmp(var, "extra"))
		return true;
	have = marker_value(var, pyver);
	if (!have)
		return true;
	{
		char v[64];
		snprintf(v, sizeof(v), "%.*s", (int)strcspn(val + 1, "\"'"), val + 1);
		if (!strcmp(var, "python_version")) {
			struct cvm_version x, y;
			bool s1, s2;
			lenient_version(have, &x, &s1);
			lenient_version(v, &y, &s2);
			cmp = cvm_version_cmp(&x, &y);
		} else {
			cmp = strcmp(have, v);
		}
	}
	if (!strcmp(op, "=="))
		return cmp == 0;
	if (!strcmp(op, "!="))
		return cmp != 0;
	if (!strcmp(op, "<"))
		return cmp < 0;
	if (!strcmp(op, "<="))
		return cmp <= 0;
	if (!strcmp(op, ">"))
		return cmp > 0;
	if (!strcmp(op, ">="))
		return cmp >= 0;
	return true;
}

/* An environment marker: "or" of "and" of clauses; parentheses are dropped. */
static bool marker_true(const char *m, size_t len, const char *pyver)
{
	char buf[512], *alt, *save = NULL;
	size_t o = 0;

	for (size_t i = 0; i < len && o + 1 < sizeof(buf); i++)
		if (m[i] != '(' && m[i] != ')')
			buf[o++] = m[i];
	buf[o] = '\0';
	for (alt = buf; alt; alt = save) {
		char *next = strstr(alt, " or ");
		bool all = true;
		save = next ? next + 4 : NULL;
		if (next)
			*next = '\0';
		for (char *c = alt, *and; c && all; c = and ? and + 5 : NULL) {
			and = strstr(c, " and ");
			if (and)
				*and = '\0';
			all = clause_true(c, pyver);
		}
		if (all)
			return true;
	}
	return false;
}

/*
 * A Requires-Dist value naming nvidia-cudnn-cuXX whose marker holds here:
 * its specifiers into f, the requirement as written into f->requires.
 */
static bool cudnn_requirement(const char *line, size_t len, const char *pyver, struct cvm_fw *f)
{
	char name[64];
	const char *semi = memchr(line, ';', len), *p;
	size_t nl = strspn(line, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.");

	normalise(line, nl, name, sizeof(name));
	if (strncmp(name, "nvidia-cudnn-cu", 15))
		return false;
	if (semi && !marker_true(semi + 1, len - (size_t)(semi + 1 - line), pyver))
		return false;
	p = line + nl;
	if (*p == '[')
		p += strcspn(p, "]") + 1;
	snprintf(f->requires, sizeof(f->requires), "%.*s", (int)((semi ? semi : line + len) - line), line);
	for (size_t i = strlen(f->requires); i && f->requires[i - 1] == ' '; i--)
		f->requires[i - 1] = '\0';
	parse_specs(p, f);
	return f->major > 0;
}

/* The first bytes of a user's file up to its first empty line (or max): a regular file only. */
static int read_head(int dirfd, const char *name, char *buf, size_t max, size_t *len)
{
	int fd = cvm_open_regular(dirfd, name, O_RDONLY, 0);
	size_t got = 0;

	if (fd < 0)
		return fd;
	while (got + 1 < max) {
		ssize_t k = read(fd, buf + got, max - 1 - got);
		if (k <= 0)
			break;
		got += (size_t)k;
		buf[got] = '\0';
		if (strstr(buf, "\n\n") || strstr(buf, "\r\n\r\n"))
			break;
	}
	buf[got] = '\0';
	*len = got;
	close(fd);
	return 0;
}

static int add_fw(struct cvm_pyenv *e, const struct cvm_fw *f)
{
	for (size_t i = 0; i < e->n; i++) {
		if (strcmp(e->fw[i].name, f->name))
			continue;
		/* Seen twice (pip's record and conda's): the one that says what it needs wins. */
		if (!e->fw[i].major)
			e->fw[i] = *f;
		return 0;
	}
	if (CVM_GROW(e->fw, e->n + 1, e->cap) < 0)
		return -ENOMEM;
	e->fw[e->n++] = *f;
	return 0;
}

/* TensorFlow's build record: 'cudnn_version': '9' (site/tensorflow/python/platform/build_info.py). */
static void tf_build_info(int sitefd, struct cvm_fw *f)
{
	char *text = NULL, *p;
	size_t len;

	if (cvm_read_regular_at(sitefd, "tensorflow/python/platform/build_info.py", 0, BUILDINFO_MAX,
				&text, &len) < 0)
		return;
	p = strstr(text, "cudnn_version");
	if (p && (p = strpbrk(p + 13, "0123456789")) && isdigit((unsigned char)*p)) {
		char num[32];
		snprintf(num, sizeof(num), "%.*s", (int)strspn(p, "0123456789."), p);
		snprintf(f->requires, sizeof(f->requires), "build_info cudnn_version %s", num);
		parse_specs(num, f);
		/* A major alone ('9') says the major; a fuller one is the build. */
		if (f->min.n == 1)
			memset(&f->min, 0, sizeof(f->min));
		f->rule = f->min.n ? RULE_BUILD : RULE_MAJOR;
	}
	free(text);
}

/* The table's row for a framework with no pin. */
/* f's need by the table; false when the table says f uses no cuDNN (from that version on). */
static bool from_table(struct cvm_fw *f)
{
	struct cvm_version have, from;
	bool star;

	lenient_version(f->version, &have, &star);
	for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++) {
		if (strcmp(table[i].name, f->name))
			continue;
		lenient_version(table[i].from, &from, &star);
		if (cvm_version_cmp(&have, &from) < 0)
			continue;
		if (!table[i].major)
			return false;
		f->major = table[i].major;
		f->rule = RULE_MAJOR;
		snprintf(f->requires, sizeof(f->requires), "cuDNN %d.x (%s)", table[i].major,
			 table[i].source);
		return true;
	}
	return true;
}

/*
 * The names whose METADATA is read: the families of the frameworks that use
 * cuDNN (torchvision and torchaudio pin nothing, but cost one read each).
 */
static bool maybe_framework(const char *name)
{
	static const char *const families[] = { "torch", "tensorflow", "tf-", "jax", "onnxruntime",
						"cupy", "ctranslate2", "paddle", "mxnet", "tensorrt" };

	for (size_t i = 0; i < sizeof(families) / sizeof(families[0]); i++)
		if (!strncmp(name, families[i], strlen(families[i])))
			return true;
	return false;
}

static bool is_known(const char *name)
{
	for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++)
		if (!strcmp(known[i], name))
			return true;
	return false;
}

/* The nvidia-cudnn wheel's own folder (nvidia/cudnn/lib, Windows nvidia/cudnn/bin) and version. */
static void wheel_copy(struct cvm_pyenv *e, const char *site, const char *version)
{
	char dir[PATH_MAX];
	struct stat st;

	if (cvm_fmt(dir, sizeof(dir), "%s/nvidia/cudnn/%s", site, CVM_WINDOWS ? "bin" : "lib") < 0 ||
	    stat(dir, &st) < 0 || !S_ISDIR(st.st_mode))
		return;
	snprintf(e->copy, sizeof(e->copy), "%s", dir);
	snprintf(e->copy_version, sizeof(e->copy_version), "%s", version);
	e->copy_kind = "wheel";
}

/*
 * PyTorch's Windows wheels carry no cuDNN pin: they bundle cuDNN in
 * torch\lib (cudnn64_9.dll beside torch's own DLLs) and load it from there
 * before anything on PATH (os.add_dll_directory). So do its Linux wheels
 * that bundle every library (torch/lib/libcudnn.so.8: the "large" wheels,
 * pytorch/pytorch#85097), found by their RUNPATH. Its major is in the name;
 * its version is not read (no code of it is loaded).
 */
static bool torch_bundled(const char *site, struct cvm_fw *f)
{
	char dir[PATH_MAX], path[PATH_MAX], lib[32], rel[64];

	if (cvm_fmt(dir, sizeof(dir), "%s/torch/lib", site) < 0)
		return false;
	for (int major = 9; major >= 7; major--) {
		cvm_cudnn_main_name(major, lib, sizeof(lib));
		if (cvm_fmt(path, sizeof(path), "%s/%s", dir, lib) < 0 || access(path, F_OK) < 0)
			continue;
		f->major = major;
		f->rule = RULE_MAJOR;
		snprintf(rel, sizeof(rel), "torch/lib/%s", lib);
		snprintf(f->requires, sizeof(f->requires), "bundled: %s",
			 cvm_path_shown(rel, path, sizeof(path)));
		snprintf(f->bundled, sizeof(f->bundled), "%s", dir);
		return true;
	}
	return false;
}

/* One NAME-VERSION.dist-info folder of site. */
static int dist_info(struct cvm_pyenv *e, int sitefd, const char *site, const char *entry,
		     const char *pyver, char *buf)
{
	struct cvm_fw f = { .rule = RULE_BUILD };
	const char *dash = strchr(entry, '-'), *end = strstr(entry, ".dist-info");
	char meta[PATH_MAX];
	size_t len;

	if (!dash || !end || dash > end)
		return 0;
	normalise(entry, (size_t)(dash - entry), f.name, sizeof(f.name));
	snprintf(f.version, sizeof(f.version), "%.*s", (int)(end - dash - 1), dash + 1);
	if (!strncmp(f.name, "nvidia-cudnn-cu", 15)) {
		wheel_copy(e, site, f.version);
		return 0;
	}
	/* Only the frameworks' own metadata is read: a large environment stays cheap to read. */
	if (!maybe_framework(f.name))
		return 0;
	if (cvm_fmt(meta, sizeof(meta), "%s/METADATA", entry) < 0 ||
	    read_head(sitefd, meta, buf, META_MAX, &len) < 0)
		return 0;
	for (char *p = buf; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
		size_t ll = strcspn(p, "\r\n");
		if (ll == 0)
			break;
		if (!strncmp(p, "Requires-Dist:", 14)) {
			const char *v = p + 14 + strspn(p + 14, " \t");
			if (cudnn_requirement(v, ll - (size_t)(v - p), pyver, &f))
				return add_fw(e, &f);
		}
	}
	if (!strncmp(f.name, "tensorflow", 10) || !strcmp(f.name, "tf-nightly"))
		tf_build_info(sitefd, &f);
	if (!strcmp(f.name, "torch") && torch_bundled(site, &f))
		return add_fw(e, &f);
	if (!f.major && !from_table(&f))
		return 0;
	if (!f.major && !is_known(f.name))
		return 0;
	return add_fw(e, &f);
}

/* Every framework of one site-packages folder. */
static int read_site(struct cvm_pyenv *e, const char *site)
{
	char pyver[16] = "", *buf = NULL;
	const char *py = strstr(site, "python3.");
	DIR *d = NULL;
	struct dirent *de;
	int fd = -1, r;

	/* lib/python3.12/site-packages says the version its markers compare with. */
	if (py)
		snprintf(pyver, sizeof(pyver), "%.*s", (int)strspn(py + 6, "0123456789."), py + 6);
	r = cvm_opendir_at(AT_FDCWD, site, 0, &d);
	if (r < 0)
		return 0;
	fd = dirfd(d);
	buf = malloc(META_MAX);
	if (!buf) {
		r = -ENOMEM;
		goto out;
	}
	while ((de = readdir(d))) {
		size_t nl = strlen(de->d_name);
		if (nl > 10 && !strcmp(de->d_name + nl - 10, ".dist-info")) {
			r = dist_info(e, fd, site, de->d_name, pyver, buf);
			if (r < 0)
				goto out;
		}
	}
	r = 0;
out:
	if (d)
		closedir(d);
	free(buf);
	return r;
}

/* One conda-meta record: the cudnn package (the env's copy) or a framework's pin on it. */
static int conda_record(struct cvm_pyenv *e, int metafd, const char *entry)
{
	struct cvm_fw f = { .rule = RULE_RANGE };
	cvm_json *doc = NULL, *dep;
	const char *name, *ver;
	char *text = NULL, lib[PATH_MAX];
	size_t len;
	int r = 0;

	if (cvm_read_regular_at(metafd, entry, 0, CONDA_MAX, &text, &len) < 0 ||
	    cvm_json_parse(text, len, entry, &doc) < 0)
		goto out;
	name = cvm_json_str(cvm_json_get(doc, "name"));
	ver = cvm_json_str(cvm_json_get(doc, "version"));
	if (!name || !ver)
		goto out;
	if (!strcmp(name, "cudnn")) {
		if (cvm_fmt(lib, sizeof(lib), "%s/%s", e->prefix, CVM_WINDOWS ? "Library/bin" : "lib") == 0 &&
		    !e->copy[0]) {
			snprintf(e->copy, sizeof(e->copy), "%s", lib);
			snprintf(e->copy_version, sizeof(e->copy_version), "%s", ver);
			e->copy_kind = "conda";
		}
		goto out;
	}
	for (size_t i = 0; i < sizeof(conda_fw) / sizeof(conda_fw[0]); i++) {
		if (strcmp(conda_fw[i].conda, name))
			continue;
		dep = cvm_json_get(doc, "depends");
		for (size_t j = 0; j < cvm_json_len(dep); j++) {
			const char *d = cvm_json_str(cvm_json_at(dep, j));
			if (!d || strncmp(d, "cudnn ", 6))
				continue;
			snprintf(f.name, sizeof(f.name), "%s", conda_fw[i].pip);
			snprintf(f.version, sizeof(f.version), "%s", ver);
			snprintf(f.requires, sizeof(f.requires), "%s", d);
			parse_specs(d + 6, &f);
			if (f.major)
				r = add_fw(e, &f);
			break;
		}
	}
out:
	cvm_json_free(doc);
	free(text);
	return r;
}

static int read_conda(struct cvm_pyenv *e)
{
	char meta[PATH_MAX];
	DIR *d = NULL;
	struct dirent *de;
	int fd = -1, r = 0;

	if (cvm_fmt(meta, sizeof(meta), "%s/conda-meta", e->prefix) < 0)
		return 0;
	if (cvm_opendir_at(AT_FDCWD, meta, 0, &d) < 0)
		goto out;
	fd = dirfd(d);
	while (r == 0 && (de = readdir(d))) {
		size_t nl = strlen(de->d_name);
		bool wanted = !strncmp(de->d_name, "cudnn-", 6);
		for (size_t i = 0; i < sizeof(conda_fw) / sizeof(conda_fw[0]) && !wanted; i++)
			wanted = !strncmp(de->d_name, conda_fw[i].conda, strlen(conda_fw[i].conda)) &&
				 de->d_name[strlen(conda_fw[i].conda)] == '-';
		if (wanted && nl > 5 && !strcmp(de->d_name + nl - 5, ".json"))
			r = conda_record(e, fd, de->d_name);
	}
out:
	if (d)
		closedir(d);
	return r;
}

static bool is_dir(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* prefix/lib/python3.X/{site,dist}-packages (Windows: prefix/Lib/site-packages) into e->site. */
static void find_sites(struct cvm_pyenv *e, const char *prefix)
{
	char lib[PATH_MAX], p[PATH_MAX];
	DIR *d = NULL;
	struct dirent *de;

	if (cvm_fmt(p, sizeof(p), "%s/Lib/site-packages", prefix) == 0 && is_dir(p) &&
	    e->nsite < CVM_PYENV_SITES)
		snprintf(e->site[e->nsite++], sizeof(e->site[0]), "%s", p);
	if (cvm_fmt(lib, sizeof(lib), "%s/lib", prefix) < 0 || cvm_opendir_at(AT_FDCWD, lib, 0, &d) < 0)
		return;
	while ((de = readdir(d)) && e->nsite < CVM_PYENV_SITES) {
		if (strncmp(de->d_name, "python3", 7))
			continue;
		for (int k = 0; k < 2 && e->nsite < CVM_PYENV_SITES; k++)
			if (cvm_fmt(p, sizeof(p), "%s/%s/%s", lib, de->d_name,
				    k ? "dist-packages" : "site-packages") == 0 && is_dir(p))
				snprintf(e->site[e->nsite++], sizeof(e->site[0]), "%s", p);
	}
	closedir(d);
}

/*
 * The environment's folder from the interpreter's path: PREFIX/bin/python3,
 * PREFIX/python.exe (conda, Windows), PREFIX/Scripts/python.exe (a Windows
 * venv); pyvenv.cfg beside bin/ marks a venv. A folder is the prefix itself.
 */
static void prefix_of(const char *host, char *out, size_t len)
{
	char dir[PATH_MAX], *slash;

	snprintf(dir, sizeof(dir), "%s", host);
	/* Windows writes its paths with '\\': one separator here. */
	if (CVM_WINDOWS)
		for (char *p = dir; *p; p++)
			if (*p == '\\')
				*p = '/';
	if (!is_dir(dir)) {
		slash = strrchr(dir, '/');
		if (slash)
			*slash = '\0';
		slash = strrchr(dir, '/');
		if (slash && (!strcasecmp(slash + 1, "bin") || !strcasecmp(slash + 1, "Scripts")))
			*slash = '\0';
	}
	snprintf(out, len, "%s", dir);
}

/* A venv made with include-system-site-packages = true sees its base's packages too. */
static void venv_base(struct cvm_pyenv *e, const char *root)
{
	char cfg[PATH_MAX], base[PATH_MAX], *text = NULL, *home, *inc;
	size_t len;

	if (cvm_fmt(cfg, sizeof(cfg), "%s/pyvenv.cfg", e->prefix) < 0 ||
	    cvm_read_file_at(AT_FDCWD, cfg, 1 << 16, &text, &len) < 0)
		return;
	home = strstr(text, "home");
	inc = strstr(text, "include-system-site-packages");
	if (home && inc && strstr(inc, "true") && strstr(inc, "true") < inc + 40 + strcspn(inc, "\n")) {
		home += strcspn(home, "=") + 1;
		home += strspn(home, " \t");
		home[strcspn(home, "\r\n")] = '\0';
		if (cvm_fmt(base, sizeof(base), "%s%s/python3", root, home) == 0) {
			char pre[PATH_MAX];
			prefix_of(base, pre, sizeof(pre));
			find_sites(e, pre);
		}
	}
	free(text);
}

int cvm_pyenv_read(const char *root, const char *opt, const char *python, struct cvm_pyenv *e)
{
	char host[PATH_MAX];
	int r;

	memset(e, 0, sizeof(*e));
	snprintf(e->python, sizeof(e->python), "%s", python);
	if (cvm_fmt(host, sizeof(host), "%s%s", root, python) < 0)
		return cvm_err(-ENAMETOOLONG, "%s '%s': path too long", opt, cvm_safe(python));
	prefix_of(host, e->prefix, sizeof(e->prefix));
	find_sites(e, e->prefix);
	venv_base(e, root);
	if (!e->nsite)
		return cvm_err(-CVM_E_NOTFOUND, "%s '%s': no site-packages found in %s (looked for "
			       "lib/python3.*/site-packages and Lib/site-packages)", opt, cvm_safe(python),
			       cvm_safe(e->prefix));
	for (size_t i = 0; i < e->nsite; i++) {
		r = read_site(e, e->site[i]);
		if (r < 0)
			return r;
	}
	return read_conda(e);
}

void cvm_pyenv_release(struct cvm_pyenv *e)
{
	free(e->fw);
	e->fw = NULL;
	e->n = e->cap = 0;
}

bool cvm_fw_accepts(const struct cvm_fw *f, const struct cvm_version *have, const char **why)
{
	struct cvm_version min = f->min;

	*why = NULL;
	if (f->major && (int)have->part[0] != f->major)
		*why = "another major";
	/* PyTorch and TensorFlow compare major and minor: 9.19.0 serves a 9.19.0.56 build. */
	if (f->rule == RULE_BUILD && min.n > 2)
		min.part[2] = min.part[3] = 0;
	if (!*why && min.n && cvm_version_cmp(have, &min) < 0)
		*why = "older";
	if (!*why && f->below.n && cvm_version_cmp(have, &f->below) >= 0)
		*why = "newer than the range";
	return !*why;
}

void cvm_fw_need(const struct cvm_fw *f, char *buf, size_t len)
{
	char a[32] = "", b[32] = "";

	if (f->min.n) {
		struct cvm_version m = f->min;
		if (f->rule == RULE_BUILD && m.n > 2)
			m.n = 2;
		cvm_version_format(&m, a, sizeof(a));
	}
	if (f->below.n)
		cvm_version_format(&f->below, b, sizeof(b));
	if (*a && *b)
		snprintf(buf, len, "cuDNN %s or newer, older than %s", a, b);
	else if (*a)
		snprintf(buf, len, "cuDNN %s or a newer %d.x", a, f->major);
	else
		snprintf(buf, len, "cuDNN %d.x", f->major);
}
