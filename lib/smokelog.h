/* SPDX-License-Identifier: MIT */
#ifndef CUDNNVM_SMOKELOG_H
#define CUDNNVM_SMOKELOG_H

/*
 * The last smoke test of each installed version: STORE/smoke/<id>.json,
 * {"id", "time" (seconds since the epoch), "result" ("passed", "skipped":
 * loader part passed and no GPU, "failed"), "reason" (the first error, or
 * null), "toolkit"}. Written atomically (fsutil.h); store.c removes it when the
 * version is committed again or removed.
 */
#include <stdint.h>

#include "store.h"

enum cvm_smoke_result { CVM_SMOKE_NONE = 0, CVM_SMOKE_FAILED, CVM_SMOKE_SKIPPED, CVM_SMOKE_PASSED };

struct cvm_smokelog {
	enum cvm_smoke_result result;
	int64_t time;
	char reason[512];
	char toolkit[16];
};

/* Records the outcome of a smoke run for id; reason may be NULL. 0 or -errno (nothing printed). */
int cvm_smokelog_write(struct cvm_store *s, const char *id, enum cvm_smoke_result result,
		       const char *toolkit, const char *reason);

/* Reads the last outcome; result CVM_SMOKE_NONE when there is none. Never fails. */
void cvm_smokelog_read(struct cvm_store *s, const char *id, struct cvm_smokelog *out);

/* "passed", "skipped", "failed", "never run". */
const char *cvm_smokelog_name(enum cvm_smoke_result r);

#endif
