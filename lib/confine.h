/* SPDX-License-Identifier: MIT */
#ifndef CUDNNVM_CONFINE_H
#define CUDNNVM_CONFINE_H

/*
 * Confinement of the process that decodes an archive before its hash is
 * known (extract.h's speculative child): no capabilities, no new privileges,
 * no descriptors but the few it is given, a Landlock domain in which only
 * the staging folder can be written (and nothing else opened), and a
 * seccomp allow-list (no exec, no network, no signals to other processes,
 * no process creation but threads).
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct cvm_confine_caps {
	int landlock_abi;	/* 0: no Landlock */
	bool seccomp;		/* seccomp filters can be installed */
};

/* What this kernel offers (nothing is changed). */
void cvm_confine_probe(struct cvm_confine_caps *c);
/* Whether c is enough to confine an extraction (both Landlock and seccomp). */
bool cvm_confine_enough(const struct cvm_confine_caps *c);
/* "landlock ABI 7, seccomp" into buf. */
void cvm_confine_describe(const struct cvm_confine_caps *c, char *buf, size_t len);

/*
 * Confines the calling process, which must have one thread: closes every
 * descriptor but keep[] (stdin and stdout become /dev/null, stderr too
 * unless keep_stderr), drops all capabilities, sets no_new_privs and
 * resource limits (no core files, few descriptors, no file over
 * max_file bytes), lets Landlock allow only creating and writing beneath
 * dirfd, and installs the seccomp filter. Irreversible. 0, or -errno of the
 * step that failed (the process should then exit without doing anything).
 */
int cvm_confine_self(int dirfd, const int *keep, size_t nkeep, uint64_t max_file,
		     bool keep_stderr);

#endif
