/* SPDX-License-Identifier: MIT */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <link.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cudnnvm/error.h"
#include "cudnnvm/fsutil.h"
#include "cudnnvm/out.h"
#include "cudnnvm/record.h"
#include "cudnnvm/smoke.h"

/* cuDNN's entry points, declared here: cudnnvm never includes or links cuDNN. */
typedef size_t (*get_version_fn)(void);

int cvm_smoke_child(int argc, char **argv)
{
	struct link_map *lm = NULL;
	get_version_fn ver, cudart;
	void *h;

	if (argc != 2)
		return 2;
	h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		printf("error %s\n", dlerror());
		return 1;
	}
	ver = (get_version_fn)dlsym(h, "cudnnGetVersion");
	cudart = (get_version_fn)dlsym(h, "cudnnGetCudartVersion");
	if (!ver) {
		printf("error %s has no cudnnGetVersion\n", argv[1]);
		return 1;
	}
	if (dlinfo(h, RTLD_DI_LINKMAP, &lm) == 0 && lm && lm->l_name)
		printf("path %s\n", lm->l_name);
	printf("version %zu\n", ver());
	if (cudart)
		printf("cudart %zu\n", cudart());
	fflush(stdout);
	return 0;
}

static double timeout_s(void)
{
	const char *e = getenv("CUDNNVM_SMOKE_TIMEOUT");
	double d = e ? strtod(e, NULL) : 0;

	return d > 0 ? d : 60;
}

/* Runs the child; its output goes to buf. Returns its wait status, or -errno, or -ETIMEDOUT. */
static int run_child(const char *lib, const char *libdir, char *buf, size_t len)
{
	char ldpath[PATH_MAX * 2];
	const char *old = getenv("LD_LIBRARY_PATH");
	char *argv[] = { (char *)"cudnnvm", (char *)"__smoke-child", (char *)lib, NULL };
	long long deadline = cvm_now_ms() + (long long)(timeout_s() * 1000);
	size_t o = 0;
	int pfd[2], status;
	pid_t pid;

	if (pipe2(pfd, O_CLOEXEC) < 0)
		return -errno;
	snprintf(ldpath, sizeof(ldpath), "%s%s%s", libdir, old && *old ? ":" : "", old ? old : "");
	pid = fork();
	if (pid < 0) {
		close(pfd[0]);
		close(pfd[1]);
		return -errno;
	}
	if (pid == 0) {
		/* The environment of a program that uses this toolkit. */
		setenv("LD_LIBRARY_PATH", ldpath, 1);
		dup2(pfd[1], STDOUT_FILENO);
		execv("/proc/self/exe", argv);
		_exit(127);
	}
	close(pfd[1]);
	for (;;) {
		long long left = deadline - cvm_now_ms();
		struct pollfd p = { .fd = pfd[0], .events = POLLIN };
		ssize_t k;
		if (left <= 0) {
			kill(pid, SIGKILL);
			waitpid(pid, &status, 0);
			close(pfd[0]);
			return -ETIMEDOUT;
		}
		if (poll(&p, 1, (int)left) <= 0)
			continue;
		k = read(pfd[0], buf + o, len - 1 - o);
		if (k <= 0)
			break;
		o += (size_t)k;
		if (o >= len - 1)
			break;
	}
	buf[o] = '\0';
	close(pfd[0]);
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return -errno;
	return status;
}

static const char *field(const char *out, const char *key, char *val, size_t len)
{
	size_t kl = strlen(key);

	for (const char *p = out; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
		if (!strncmp(p, key, kl) && p[kl] == ' ') {
			size_t n = strcspn(p + kl + 1, "\n");
			snprintf(val, len, "%.*s", (int)n, p + kl + 1);
			return val;
		}
	}
	return NULL;
}

int cvm_smoke_loader(struct cvm_ctx *ctx, const struct cvm_toolkit *tk, const char *id)
{
	struct cvm_record rec = { 0 };
	char inner[PATH_MAX], resolved[PATH_MAX], libdir[PATH_MAX], lib[PATH_MAX];
	char out[8192], v[64], path[PATH_MAX], err[1024];
	const char *soname;
	int fd, r, status;

	fd = cvm_store_open_version(&ctx->store, id);
	if (fd < 0)
		return cvm_err(fd, "cannot open %s: %s", id, strerror(-fd));
	r = cvm_record_read(fd, id, &rec);
	close(fd);
	if (r < 0)
		return r;
	soname = rec.library ? strrchr(rec.library, '/') : NULL;
	soname = soname ? soname + 1 : "libcudnn.so";
	r = cvm_fmt(inner, sizeof(inner), "%s/lib64", tk->display);
	if (r == 0 && cvm_resolve_in_root(ctx->root, inner, resolved, sizeof(resolved)) < 0) {
		r = cvm_fmt(inner, sizeof(inner), "%s/lib", tk->display);
		if (r == 0)
			r = cvm_resolve_in_root(ctx->root, inner, resolved, sizeof(resolved));
	}
	if (r == 0)
		r = cvm_fmt(libdir, sizeof(libdir), "%s%s", ctx->root, resolved);
	if (r == 0)
		r = cvm_fmt(lib, sizeof(lib), "%s/%s", libdir, soname);
	if (r < 0) {
		r = cvm_err(-CVM_E_SMOKE, "smoke test: no library folder in '%s'", cvm_safe(tk->display));
		goto out;
	}
	status = run_child(lib, libdir, out, sizeof(out));
	if (status == -ETIMEDOUT) {
		r = cvm_err(-CVM_E_SMOKE, "smoke test: loading %s did not finish in %.0f s: killed",
			    cvm_safe(lib), timeout_s());
		goto out;
	}
	if (status < 0) {
		r = cvm_err(status, "smoke test: cannot run the child: %s", strerror(-status));
		goto out;
	}
	if (WIFSIGNALED(status)) {
		r = cvm_err(-CVM_E_SMOKE, "smoke test: loading %s killed the process (signal %d, %s)",
			    cvm_safe(lib), WTERMSIG(status), strsignal(WTERMSIG(status)));
		goto out;
	}
	if (WEXITSTATUS(status) || !field(out, "version", v, sizeof(v))) {
		r = cvm_err(-CVM_E_SMOKE, "smoke test: cannot load %s: %s", cvm_safe(lib),
			    cvm_safe(field(out, "error", err, sizeof(err)) ? err : "no answer"));
		goto out;
	}
	if (strtoul(v, NULL, 10) != rec.cudnn_version) {
		r = cvm_err(-CVM_E_SMOKE, "smoke test: %s reports cuDNN %s, but %s is %lu",
			    cvm_safe(field(out, "path", path, sizeof(path)) ? path : lib), v, id,
			    rec.cudnn_version);
		goto out;
	}
	cvm_info("smoke test: %s loads and reports %s (GPU part not run)",
		 cvm_safe(field(out, "path", path, sizeof(path)) ? path : lib), v);
	r = 0;
out:
	cvm_record_release(&rec);
	return r;
}
