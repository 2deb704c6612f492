/* SPDX-License-Identifier: MIT */
/*
 * The smoke test's child: "cudnnvm __smoke-child LIBRARY VERSION_DIR [--no-gpu]
 * [--device N | --all-devices]". It runs with the loader environment of a
 * program that uses the toolkit and reports, one "key value" line each, what
 * it found; the parent judges. cuDNN and CUDA are loaded with dlopen; the
 * convolution is smoke_conv.c's, shared with Windows.
 */
#include <dlfcn.h>
#include <link.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "smoke.h"
#include "smokeconv.h"
#include "smokeverdict.h"

void *cvm_smoke_sym(void *lib, const char *sym)
{
	return dlsym(lib, sym);
}

/* The runtime of the build's CUDA major (another major's would not do): its handle, or NULL. */
static void *load_cudart(size_t cudart_version, char *name, size_t len)
{
	struct link_map *lm = NULL;
	void *h;

	snprintf(name, len, "libcudart.so.%zu", cudart_version / 1000);
	h = dlopen(cudart_version ? name : "libcudart.so", RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		printf("gpu_skip cannot load %s: %s\n", name, dlerror());
		return NULL;
	}
	if (dlinfo(h, RTLD_DI_LINKMAP, &lm) == 0 && lm && lm->l_name)
		printf("cudart_path %s\n", lm->l_name);
	return h;
}

/* Every cuDNN sub-library this process mapped, one line each. */
static void report_maps(void)
{
	char line[4096], seen[64][512];
	size_t n = 0;
	FILE *f = fopen("/proc/self/maps", "re");

	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		char *p = strchr(line, '/');
		size_t i;
		if (!p || !strstr(p, "/libcudnn"))
			continue;
		p[strcspn(p, "\n")] = '\0';
		for (i = 0; i < n && strcmp(seen[i], p); i++)
			;
		if (i < n || n >= 64)
			continue;
		snprintf(seen[n++], sizeof(seen[0]), "%s", p);
		printf("mapped %s\n", p);
	}
	fclose(f);
}

/*
 * Each sub-library, loaded by name as the dispatcher loads it: "sub NAME PATH",
 * or "sub_error NAME WHY" when it does not load. The parent reads each file's
 * release (elfinfo.h) and names the odd one.
 */
static void report_subs(size_t version)
{
	unsigned major = version >= 90000 ? (unsigned)(version / 10000) : (unsigned)(version / 1000);
	const char *const *subs = cvm_smoke_sublibs(major);

	for (size_t i = 0; subs[i]; i++) {
		char name[96];
		struct link_map *lm = NULL;
		void *h;
		snprintf(name, sizeof(name), "libcudnn_%s.so.%u", subs[i], major);
		h = dlopen(name, RTLD_NOW | RTLD_LOCAL);
		if (!h) {
			const char *e = dlerror();
			printf("sub_error %s %s\n", name, e ? e : "does not load");
			continue;
		}
		if (dlinfo(h, RTLD_DI_LINKMAP, &lm) == 0 && lm && lm->l_name)
			printf("sub %s %s\n", name, lm->l_name);
	}
}

int cvm_smoke_child(int argc, char **argv)
{
	struct link_map *lm = NULL;
	size_t (*ver)(void), (*cudart)(void);
	int first_dev = 0, all = 0, no_gpu = 0, failed = 0, no_subs = 0;
	char cudart_name[64];
	bool ran = false;
	void *h, *rt;

	if (argc < 3)
		return 2;
	for (int i = 3; i < argc; i++) {
		if (!strcmp(argv[i], "--no-gpu"))
			no_gpu = 1;
		else if (!strcmp(argv[i], "--all-devices"))
			all = 1;
		else if (!strcmp(argv[i], "--no-subs"))
			no_subs = 1;
		else if (!strcmp(argv[i], "--device") && i + 1 < argc)
			first_dev = atoi(argv[++i]);
	}
	/* cuDNN's own messages join the report, where the parent puts them under the failing step. */
	fflush(stderr);
	dup2(STDOUT_FILENO, STDERR_FILENO);
	setvbuf(stdout, NULL, _IOLBF, 0);
	h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		printf("error %s\n", dlerror());
		return 1;
	}
	*(void **)&ver = dlsym(h, "cudnnGetVersion");
	*(void **)&cudart = dlsym(h, "cudnnGetCudartVersion");
	if (!ver) {
		printf("error %s has no cudnnGetVersion\n", argv[1]);
		return 1;
	}
	if (dlinfo(h, RTLD_DI_LINKMAP, &lm) == 0 && lm && lm->l_name)
		printf("path %s\n", lm->l_name);
	printf("version %zu\n", ver());
	if (cudart)
		printf("cudart %zu\n", cudart());
	if (!no_subs)
		report_subs(ver());
	fflush(stdout);
	if (no_gpu) {
		printf("gpu_skip --no-gpu\n");
	} else if ((rt = load_cudart(cudart ? cudart() : 0, cudart_name, sizeof(cudart_name)))) {
		failed = cvm_smoke_conv(rt, cudart_name, h, argv[1], first_dev, all, &ran);
		if (ran)
			report_maps();
	}
	fflush(stdout);
	return failed;
}
