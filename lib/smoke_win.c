/* SPDX-License-Identifier: MIT */
/*
 * The smoke test on Windows (smoke.h): what a program started now loads.
 * The parent checks the version's files and headers, then runs the child
 * ("cudnnvm.exe __smoke-child DLL DIR [--no-gpu] [--device N |
 * --all-devices] [--no-subs]") with the PATH such a program gets (the
 * registry's, winenv.h) followed by the toolkit's bin. The child loads
 * cudnn64_<major>.dll by name, so through the DLL search that activation
 * set up, then each sub-library the same way, the toolkit's CUDA runtime
 * and, where the NVIDIA driver is, runs the convolution (smoke_conv.c);
 * it lists every cudnn*.dll the process has loaded. The verdict on its
 * lines is shared with Linux (smoke_verdict.c).
 */
#define WIN32_LEAN_AND_MEAN
#include <windows.h>
#include <psapi.h>
#include <wchar.h>

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cudnn.h"
#include "error.h"
#include "fsutil.h"
#include "out.h"
#include "proc.h"
#include "record.h"
#include "smoke.h"
#include "smokeconv.h"
#include "smokeverdict.h"
#include "store.h"
#include "winenv.h"

/* ------------------------------------------------------------ both sides */

/* "cudnn_ops64_9.dll" of "ops" (NULL: the dispatcher, cudnn64_9.dll). */
static void dll_name(const char *sub, unsigned major, char *buf, size_t len)
{
	if (sub)
		snprintf(buf, len, "cudnn_%s64_%u.dll", sub, major);
	else
		snprintf(buf, len, "cudnn64_%u.dll", major);
}

static unsigned major_of(unsigned long version)
{
	return (unsigned)(version >= 90000 ? version / 10000 : version / 1000);
}

/* A wide path as the child reports and the parent compares it: UTF-8, '/' (cvm_fd_path's form). */
static void utf8_path(const wchar_t *w, char *buf, size_t len)
{
	char *s = cvm_utf8(w);

	snprintf(buf, len, "%s", s ? s : "?");
	free(s);
	for (char *c = buf; *c; c++)
		if (*c == '\\')
			*c = '/';
}

/* ------------------------------------------------------------ the child */

void *cvm_smoke_sym(void *lib, const char *sym)
{
	return (void *)GetProcAddress((HMODULE)lib, sym);
}

/* What Windows says of error e, on one line. */
static void win_error(DWORD e, char *buf, size_t len)
{
	wchar_t w[512];
	char *s = NULL;
	size_t n;

	if (FormatMessageW(FORMAT_MESSAGE_FROM_SYSTEM | FORMAT_MESSAGE_IGNORE_INSERTS, NULL, e, 0, w,
			   sizeof(w) / sizeof(w[0]), NULL))
		s = cvm_utf8(w);
	snprintf(buf, len, "%s (error %lu)", s ? s : "failed", (unsigned long)e);
	free(s);
	for (n = 0; buf[n]; n++)
		if (buf[n] == '\r' || buf[n] == '\n')
			buf[n] = ' ';
	/* "The specified module could not be found.  (error 126)": one space. */
	for (char *p = strstr(buf, "  "); p; p = strstr(p, "  "))
		memmove(p, p + 1, strlen(p));
}

/* The file a loaded module came from, or "?". */
static void module_path(HMODULE h, char *buf, size_t len)
{
	wchar_t *w = malloc(32768 * sizeof(*w));

	if (w && GetModuleFileNameW(h, w, 32768))
		utf8_path(w, buf, len);
	else
		snprintf(buf, len, "?");
	free(w);
}

/*
 * Loads name: a bare name through the DLL search a program gets, a path as
 * that file (its own imports then found beside it). NULL with why filled.
 */
static HMODULE load(const char *name, char *why, size_t len)
{
	wchar_t *w = cvm_wide(name);
	bool is_path = strpbrk(name, "/\\") != NULL;
	HMODULE h = NULL;

	if (w)
		h = LoadLibraryExW(w, NULL, is_path ? LOAD_WITH_ALTERED_SEARCH_PATH : 0);
	if (!h)
		win_error(w ? GetLastError() : ERROR_NOT_ENOUGH_MEMORY, why, len);
	free(w);
	return h;
}

/* Each sub-library, by name as the dispatcher's: "sub NAME PATH" or "sub_error NAME WHY". */
static void report_subs(size_t version)
{
	unsigned major = major_of(version);
	const char *const *subs = cvm_smoke_sublibs(major);
	char name[96], path[4096];

	for (size_t i = 0; subs[i]; i++) {
		HMODULE h;
		dll_name(subs[i], major, name, sizeof(name));
		h = load(name, path, sizeof(path));
		if (h)
			module_path(h, path, sizeof(path));
		printf("%s %s %s\n", h ? "sub" : "sub_error", name, path);
	}
}

/* Every cudnn*.dll this process has loaded, by whatever route: "mapped PATH" each. */
static void report_modules(void)
{
	HMODULE mods[1024];
	DWORD need = 0;
	char path[4096];

	if (!EnumProcessModules(GetCurrentProcess(), mods, sizeof(mods), &need))
		return;
	for (DWORD i = 0; i < need / sizeof(mods[0]) && i < 1024; i++) {
		wchar_t *w = malloc(32768 * sizeof(*w));
		const char *base;
		size_t n;
		if (!w)
			return;
		if (!GetModuleFileNameExW(GetCurrentProcess(), mods[i], w, 32768)) {
			free(w);
			continue;
		}
		utf8_path(w, path, sizeof(path));
		free(w);
		base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
		n = strlen(base);
		if (!_strnicmp(base, "cudnn", 5) && n > 4 && !_stricmp(base + n - 4, ".dll"))
			printf("mapped %s\n", path);
	}
}

/*
 * The CUDA runtime of the build's CUDA version, from the toolkit's bin:
 * cudart64_110.dll serves every 11.x, from 12 one per major
 * (cudart64_12.dll), before 11 one per minor (cudart64_102.dll).
 */
static HMODULE load_cudart(size_t cudart, char *name, size_t len)
{
	unsigned major = (unsigned)(cudart / 1000), minor = (unsigned)(cudart % 1000 / 10);
	int (*runtime)(int *);
	char why[512], path[4096];
	HMODULE h;
	int v = 0;

	if (!cudart) {
		snprintf(name, len, "cudart64");
		printf("gpu_skip the library has no cudnnGetCudartVersion: which CUDA runtime it needs "
		       "is not known\n");
		return NULL;
	}
	if (major >= 12)
		snprintf(name, len, "cudart64_%u.dll", major);
	else if (major == 11)
		snprintf(name, len, "cudart64_110.dll");
	else
		snprintf(name, len, "cudart64_%u%u.dll", major, minor);
	h = load(name, why, sizeof(why));
	if (!h) {
		printf("gpu_skip cannot load %s: %s\n", name, why);
		return NULL;
	}
	module_path(h, path, sizeof(path));
	printf("cudart_path %s\n", path);
	*(void **)&runtime = cvm_smoke_sym(h, "cudaRuntimeGetVersion");
	if (runtime && runtime(&v) == 0)
		printf("cudart_runtime %d\n", v);
	return h;
}

/*
 * A crash in cuDNN or its loading (an access violation in a truncated DLL,
 * say) ends the child with one line that says so, instead of an exit code
 * of which proc_win.c keeps the low byte, or a debugger's window.
 */
static const char *step = "starting";

static LONG WINAPI crashed(EXCEPTION_POINTERS *e)
{
	DWORD code = e && e->ExceptionRecord ? e->ExceptionRecord->ExceptionCode : 0;

	printf("error the process crashed %s: exception 0x%08lX%s\n", step, (unsigned long)code,
	       code == EXCEPTION_ACCESS_VIOLATION ? " (an access violation)" : "");
	fflush(stdout);
	ExitProcess(1);
	return EXCEPTION_EXECUTE_HANDLER;
}

int cvm_smoke_child(int argc, char **argv)
{
	size_t (*ver)(void), (*cudart)(void);
	int first_dev = 0, failed = 0;
	bool all = false, no_gpu = false, no_subs = false, ran = false;
	char why[512], path[4096], rt_name[64];
	HMODULE h, rt, driver;

	if (argc < 3)
		return 2;
	for (int i = 3; i < argc; i++) {
		if (!strcmp(argv[i], "--no-gpu"))
			no_gpu = true;
		else if (!strcmp(argv[i], "--all-devices"))
			all = true;
		else if (!strcmp(argv[i], "--no-subs"))
			no_subs = true;
		else if (!strcmp(argv[i], "--device") && i + 1 < argc)
			first_dev = atoi(argv[++i]);
	}
	/*
	 * cuDNN's own messages join the report (the parent puts them under the
	 * failing step), through the C runtime and the Win32 handle alike;
	 * unbuffered, so that a crash inside a DLL loses nothing said before.
	 */
	fflush(stderr);
	_dup2(_fileno(stdout), _fileno(stderr));
	SetStdHandle(STD_ERROR_HANDLE, GetStdHandle(STD_OUTPUT_HANDLE));
	setvbuf(stdout, NULL, _IONBF, 0);
	/* A broken DLL fails its load, or crashes us, without a dialog no one would close. */
	SetErrorMode(SEM_FAILCRITICALERRORS | SEM_NOOPENFILEERRORBOX | SEM_NOGPFAULTERRORBOX);
	SetUnhandledExceptionFilter(crashed);
	/* The working folder is where we were started, not a program's: out of the search. */
	SetDllDirectoryW(L"");
	step = "loading cuDNN";
	h = load(argv[1], why, sizeof(why));
	if (!h) {
		printf("error %s does not load: %s\n", argv[1], why);
		return 1;
	}
	*(void **)&ver = cvm_smoke_sym(h, "cudnnGetVersion");
	*(void **)&cudart = cvm_smoke_sym(h, "cudnnGetCudartVersion");
	module_path(h, path, sizeof(path));
	if (!ver) {
		printf("error %s has no cudnnGetVersion\n", path);
		return 1;
	}
	printf("path %s\n", path);
	step = "in cudnnGetVersion";
	printf("version %zu\n", ver());
	step = "in cudnnGetCudartVersion";
	if (cudart)
		printf("cudart %zu\n", cudart());
	step = "loading the sub-libraries";
	if (!no_subs)
		report_subs(ver());
	step = "loading the CUDA runtime";
	if (no_gpu) {
		printf("gpu_skip --no-gpu\n");
	} else if ((rt = load_cudart(cudart ? cudart() : 0, rt_name, sizeof(rt_name)))) {
		/* The driver is System32's or none: a copy elsewhere on PATH is not the driver. */
		driver = LoadLibraryExW(L"nvcuda.dll", NULL, LOAD_LIBRARY_SEARCH_SYSTEM32);
		if (!driver) {
			win_error(GetLastError(), why, sizeof(why));
			printf("gpu_skip nvcuda.dll (the NVIDIA driver) does not load: %s\n", why);
		} else {
			step = "in the convolution";
			failed = cvm_smoke_conv(rt, rt_name, h, path, first_dev, all, &ran);
		}
	}
	/* With or without the GPU part: which copies a program maps is the loader part's verdict. */
	step = "listing the loaded DLLs";
	report_modules();
	return failed;
}

/* ------------------------------------------------------------ the parent */

/* Whether a and b are the same folder or file (volume and file index), through junctions. */
static bool same_object(const char *a, const char *b)
{
	struct stat sa, sb;

	return stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev &&
	       sa.st_ino == sb.st_ino;
}

/* Index (from 1) of the first entry of PATH list that is folder dir, or 0. */
static int path_index(const char *list, const char *dir)
{
	int i = 0;

	for (const char *p = list; p && *p; p = strchr(p, ';') ? strchr(p, ';') + 1 : NULL) {
		char entry[4096];
		size_t n = strcspn(p, ";");
		if (!n || n >= sizeof(entry))
			continue;
		i++;
		snprintf(entry, sizeof(entry), "%.*s", (int)n, p);
		if (cvm_winpath_same(entry, dir) || same_object(entry, dir))
			return i;
	}
	return 0;
}

/*
 * Why the DLL search found a copy in got before the one in want (the order:
 * the exe's folder, System32, the Windows folder, then PATH; the child
 * leaves the working folder out). cpath: the child's PATH; what: want in
 * words ("the version's folder").
 */
static void why_there(const char *got, const char *want, const char *what, const char *cpath,
		      char *why, size_t len)
{
	wchar_t w[MAX_PATH + 1];
	char sys[4096] = "", win[4096] = "", exe[4096] = "";
	int gi = path_index(cpath, got), wi = path_index(cpath, want);

	if (GetSystemDirectoryW(w, MAX_PATH))
		utf8_path(w, sys, sizeof(sys));
	if (GetWindowsDirectoryW(w, MAX_PATH))
		utf8_path(w, win, sizeof(win));
	if (cvm_self_exe(exe, sizeof(exe)) == 0)
		cvm_path_folder(exe, exe, sizeof(exe));
	if (exe[0] && same_object(got, exe))
		snprintf(why, len, "it lies beside cudnnvm.exe, where Windows looks first");
	else if ((sys[0] && same_object(got, sys)) || (win[0] && same_object(got, win)))
		snprintf(why, len, "Windows looks in its own folder (%s) before PATH: a copy there "
			 "wins over every PATH entry", got);
	else if (gi && wi && gi < wi)
		/* The system PATH's precedence explains it only when the version's entry is not there too. */
		snprintf(why, len, "'%s' is entry %d of PATH, before %s (entry %d)%s", got, gi, what,
			 wi, cvm_winenv_path_has(CVM_ENV_SYSTEM, got) &&
			 !cvm_winenv_path_has(CVM_ENV_SYSTEM, want) ? "; it is on the system PATH, "
			 "which comes before the user's" : "");
	else if (gi && wi)
		snprintf(why, len, "'%s' is entry %d of PATH, after %s (entry %d): a DLL of that name "
			 "was loaded already, or Windows redirects it", got, gi, what, wi);
	else if (gi)
		snprintf(why, len, "'%s' is entry %d of PATH, and %s is not on PATH", got, gi, what);
	else
		snprintf(why, len, "'%s' is not on PATH: the DLL search found it elsewhere", got);
}

/*
 * A DLL that must be in dir: there, a file, longer than any header, and a
 * PE image ("MZ"). display: dir as messages show it.
 */
static int check_dll(const char *dir, const char *name, const char *display)
{
	char path[4096], magic[2];
	struct stat st;
	int fd;

	if (cvm_fmt(path, sizeof(path), "%s/%s", dir, name) < 0)
		return -ENAMETOOLONG;
	if (stat(path, &st) < 0)
		return cvm_err(-CVM_E_SMOKE, "smoke test: %s/%s: %s", display, name,
			       errno == ENOENT ? "missing" : strerror(errno));
	if (!S_ISREG(st.st_mode))
		return cvm_err(-CVM_E_SMOKE, "smoke test: %s/%s is not a file", display, name);
	fd = cvm_open_regular(AT_FDCWD, path, O_RDONLY, 0);
	if (fd < 0 || st.st_size < 64 || read(fd, magic, 2) != 2 || memcmp(magic, "MZ", 2)) {
		int e = fd < 0 ? -fd : errno;
		if (fd >= 0)
			close(fd);
		return cvm_err(-CVM_E_SMOKE, "smoke test: %s/%s %s", display, name,
			       fd < 0 ? cvm_strerror(e) : st.st_size < 64 ? "is empty or truncated" :
			       "is not a DLL");
	}
	close(fd);
	return 0;
}

/* Runs the child with PATH path (NULL: ours); res->status as cvm_proc_capture's. */
static int run_child(char **argv, const char *path, struct cvm_smoke_report *res)
{
	int status = 0, r;

	r = cvm_proc_capture(argv, path, true, (long)(cvm_smoke_timeout_s() * 1000), res->out,
			     sizeof(res->out), &status);
	res->status = r < 0 ? r : status;
	return r;
}

int cvm_smoke_probe(const char *lib, unsigned long *version, unsigned long *cudart, char *path,
		    size_t len)
{
	/* Only the version; the file is loaded as itself (a path), its imports found beside it. */
	char exe[4096], dir[4096];
	char *argv[] = { exe, (char *)"__smoke-child", (char *)lib, dir, (char *)"--no-gpu",
			 (char *)"--no-subs", NULL };
	struct cvm_smoke_report *res;
	unsigned long cr = 0;
	int r = -CVM_E_SMOKE;

	/* Windows guards files with ACLs, not owners: trust.h has nothing to check here yet. */
	if (cvm_self_exe(exe, sizeof(exe)) < 0)
		return -ENOMEM;
	cvm_path_folder(lib, dir, sizeof(dir));
	res = calloc(1, sizeof(*res));
	if (!res)
		return -ENOMEM;
	run_child(argv, NULL, res);
	if (res->status >= 0 && cvm_smoke_versions(res, version, &cr, path, len, lib)) {
		*cudart = cr;
		r = 0;
	}
	free(res);
	return r;
}

/* "a\b;c" + ";" + dir when dir is not an entry yet: the child's PATH, malloc'd. */
static char *child_path(const char *fresh, const char *dir)
{
	size_t n = strlen(fresh) + strlen(dir) + 2;
	char *p = malloc(n);

	if (!p)
		return NULL;
	if (path_index(fresh, dir))
		snprintf(p, n, "%s", fresh);
	else
		snprintf(p, n, "%s%s%s", fresh, fresh[0] ? ";" : "", dir);
	for (char *c = p + strlen(fresh); *c; c++)
		if (*c == '/')
			*c = '\\';
	return p;
}

/*
 * Each "KEY NAME PATH" line of the child (sub) and each "mapped PATH": in
 * bin, else the first that is not fails, named, with why_there's reason.
 */
static int check_from(const struct cvm_smoke_report *res, const char *bin, const char *display,
		      const char *what, const char *cpath, cvm_json *mapped)
{
	char line[4096 + 128], name[128], path[4096], dir[4096], why[1024];
	int r = 0;

	for (const char *p = res->out; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
		size_t n = strcspn(p, "\n");
		bool is_sub = !strncmp(p, "sub ", 4), is_err = !strncmp(p, "sub_error ", 10);
		if (n >= sizeof(line) || !(is_sub || is_err || !strncmp(p, "mapped ", 7)))
			continue;
		snprintf(line, sizeof(line), "%.*s", (int)n, p);
		if (is_err) {
			char *rest = strchr(line + 10, ' ');
			snprintf(name, sizeof(name), "%.*s", rest ? (int)(rest - line - 10) : 127, line + 10);
			if (r == 0)
				r = cvm_err(-CVM_E_SMOKE, "smoke test: %s does not load: %s", cvm_safe(name),
					    cvm_safe(rest ? rest + 1 : "?"));
			continue;
		}
		if (is_sub) {
			char *rest = strchr(line + 4, ' ');
			if (!rest)
				continue;
			snprintf(name, sizeof(name), "%.*s", (int)(rest - line - 4), line + 4);
			snprintf(path, sizeof(path), "%s", rest + 1);
		} else {
			snprintf(path, sizeof(path), "%s", line + 7);
			cvm_json_append(mapped, cvm_json_string(path));
			snprintf(name, sizeof(name), "%s", strrchr(path, '/') ? strrchr(path, '/') + 1 : path);
		}
		cvm_path_folder(path, dir, sizeof(dir));
		if (r == 0 && !same_object(dir, bin)) {
			why_there(dir, bin, what, cpath, why, sizeof(why));
			r = cvm_err(-CVM_E_SMOKE, "smoke test: %s came from %s, not from %s: %s",
				    cvm_safe(name), cvm_safe(path), cvm_safe(display), cvm_safe(why));
		}
	}
	return r;
}

/* A test on Windows: what cvm_smoke_check shares, and the child's PATH. */
struct check {
	struct cvm_smoke_check c;	/* first: the operations get &c */
	const char *what;		/* c.lib in words */
	char root[4096], exe[4096];
	char *fresh, *cpath;		/* PATH from the registry; the child's PATH */
};

static struct check *of(struct cvm_smoke_check *c)
{
	return (struct check *)c;
}

static const struct check *of_const(const struct cvm_smoke_check *c)
{
	return (const struct check *)c;
}

/* A managed version's own folder; without one, a copy in the toolkit (NVIDIA's manual install). */
static int version_paths(struct cvm_smoke_check *sc)
{
	struct check *c = of(sc);
	int r;

	if (sc->id)
		r = cvm_fmt(c->root, sizeof(c->root), "%s/versions/%s", sc->ctx->store.path, sc->id);
	else
		r = cvm_fmt(c->root, sizeof(c->root), "%s", sc->tk->path);
	if (r == 0)
		r = cvm_fmt(sc->lib, sizeof(sc->lib), "%s/bin", c->root);
	if (r == 0)
		r = cvm_fmt(sc->inc, sizeof(sc->inc), "%s/include", c->root);
	if (r == 0)
		r = cvm_fmt(sc->inc_shown, sizeof(sc->inc_shown), "%s", sc->inc);
	if (r == 0 && sc->id)
		r = cvm_fmt(sc->shown, sizeof(sc->shown), "%s/versions/%s/bin", sc->ctx->store.display,
			    sc->id);
	else if (r == 0)
		r = cvm_fmt(sc->shown, sizeof(sc->shown), "%s/bin", sc->tk->display);
	return r;
}

/* What a program started now gets, and the toolkit's bin, where its CUDA runtime is. */
static int child_env(struct cvm_smoke_check *sc, char **argv)
{
	struct check *c = of(sc);
	char tkbin[4096];
	int r;

	argv[0] = c->exe;
	argv[1] = (char *)"__smoke-child";
	argv[2] = sc->name;
	argv[3] = sc->lib;
	r = cvm_winenv_fresh_path(&c->fresh);
	if (r < 0)
		return cvm_err(r, "smoke test: cannot read PATH from the registry: %s", cvm_strerror(-r));
	r = cvm_fmt(tkbin, sizeof(tkbin), "%s/bin", sc->tk->path);
	if (r == 0)
		r = (c->cpath = child_path(c->fresh, tkbin)) ? cvm_self_exe(c->exe, sizeof(c->exe)) : -ENOMEM;
	return r;
}

/* The loader part: the child loads the dispatcher by name, as a program started now would. */
static int load_in_child(struct cvm_smoke_check *sc, char **argv)
{
	int r;

	r = run_child(argv, of(sc)->cpath, sc->res);
	if (r == -ETIMEDOUT)
		return cvm_err(-CVM_E_SMOKE, "smoke test: loading %s did not finish in %.0f s: killed",
			       sc->name, cvm_smoke_timeout_s());
	if (r < 0)
		return cvm_err(r, "smoke test: cannot run the child: %s", cvm_strerror(-r));
	if (!cvm_smoke_versions(sc->res, &sc->libv, &sc->cudart, sc->loaded, sizeof(sc->loaded),
				sc->name)) {
		char e[1024];
		if (!cvm_smoke_get(sc->res, "error", e, sizeof(e)))
			snprintf(e, sizeof(e), "no answer from the child (exit %d)",
				 WEXITSTATUS(sc->res->status));
		return cvm_err(-CVM_E_SMOKE, "smoke test: %s", cvm_safe(e));
	}
	return 0;
}

/* The version checks: the DLL loaded is the version's, and the headers' release. */
static int check_library(struct cvm_smoke_check *sc, cvm_json *json)
{
	const struct check *c = of(sc);
	char val[4096], dir[4096], why[1024];

	cvm_smoke_library(sc->tk, sc->id, cvm_root_inside(sc->ctx->root, sc->loaded), sc->header,
			  sc->libv, sc->cudart, json);
	if (!cvm_out.json && cvm_smoke_get(sc->res, "cudart_path", val, sizeof(val)))
		cvm_info("  runtime   %s", cvm_safe(val));
	/* The file the search found first must be the version's, whatever it reports. */
	cvm_path_folder(sc->loaded, dir, sizeof(dir));
	if (!same_object(dir, sc->lib)) {
		why_there(dir, sc->lib, c->what, c->cpath, why, sizeof(why));
		return cvm_err(-CVM_E_SMOKE, "smoke test: a program started now loads %s, not the one "
			       "in %s: %s", cvm_safe(sc->loaded), cvm_safe(sc->shown), cvm_safe(why));
	}
	if (sc->libv != sc->header)
		return cvm_err(-CVM_E_SMOKE, "smoke test: %s reports cuDNN %lu, but the headers in %s "
			       "say %lu: headers and library of different versions", cvm_safe(sc->loaded),
			       sc->libv, cvm_safe(sc->inc), sc->header);
	return 0;
}

/* The device code this build carries: the record's (a DLL's is not read here). */
static void device_code(const struct cvm_smoke_check *c, struct cvm_archs *archs)
{
	if (c->id && c->rec.archs.known)
		*archs = c->rec.archs;
}

/* The sub-libraries and every cudnn*.dll the child ended with: all the version's. */
static int check_mapped(const struct cvm_smoke_check *sc, cvm_json *mapped, int r)
{
	const struct check *c = of_const(sc);
	int k = check_from(sc->res, sc->lib, sc->shown, c->what, c->cpath, mapped);

	return r == 0 ? k : r;
}

static void loaded_line(const struct cvm_smoke_check *c, const cvm_json *mapped, int ndev, int r)
{
	(void)ndev;
	if (!cvm_out.json && (r == 0 || r == -CVM_E_SKIPPED))
		cvm_info("  loaded    %zu cuDNN DLLs, all from %s", cvm_json_len(mapped),
			 cvm_safe(c->shown));
}

static void release(struct cvm_smoke_check *sc)
{
	free(of(sc)->fresh);
	free(of(sc)->cpath);
}

int cvm_smoke_check(struct cvm_ctx *ctx, const struct cvm_toolkit *tk, const char *id,
		    const struct cvm_smoke_opts *o, cvm_json *json)
{
	static const struct cvm_smoke_os windows_os = {
		.tested = "the version",
		.paths = version_paths,
		.lib_name = dll_name,
		.check_lib = check_dll,
		.prepare = child_env,
		.load = load_in_child,
		.check_library = check_library,
		.device_code = device_code,
		.mapped = check_mapped,
		.loaded_line = loaded_line,
		.release = release,
	};
	struct check c = { .c = { .ctx = ctx, .tk = tk, .id = id },
			   .what = id ? "the version's folder" : "the toolkit's bin" };

	return cvm_smoke_drive(&c.c, &windows_os, o, json);
}
