/* SPDX-License-Identifier: MIT */
#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>

#include "dynlib.h"
#include "error.h"
#include "out.h"

static pthread_mutex_t dynlib_mu = PTHREAD_MUTEX_INITIALIZER;

static int load(struct cvm_dynlib *lib)
{
	const char *so = lib->soname;
	void *dl;
	size_t i;

#ifdef CVM_FAULT_INJECTION
	if (lib->test_env && getenv(lib->test_env))
		so = getenv(lib->test_env);
#endif
	dl = dlopen(so, RTLD_NOW | RTLD_LOCAL);
	if (!dl)
		return cvm_err(-CVM_E_NOTFOUND, "cannot %s: %s is not loadable (%s); %s", lib->task, so,
			       cvm_safe(dlerror()), lib->hint);
	for (i = 0; i < lib->nsyms; i++) {
		*lib->syms[i].slot = dlsym(dl, lib->syms[i].name);
		if (!*lib->syms[i].slot) {
			dlclose(dl);
			return cvm_err(-CVM_E_NOTFOUND, "cannot %s: %s lacks %s, which cudnnvm needs",
				       lib->task, so, lib->syms[i].name);
		}
	}
	return 1;
}

int cvm_dynlib_load(struct cvm_dynlib *lib)
{
	int r;

	pthread_mutex_lock(&dynlib_mu);
	if (!lib->state)
		lib->state = load(lib);
	r = lib->state < 0 ? lib->state : 0;
	pthread_mutex_unlock(&dynlib_mu);
	return r;
}
