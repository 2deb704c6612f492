/* SPDX-License-Identifier: MIT */
/*
 * What Windows does not have: the confined extraction child (no Landlock or
 * seccomp there) and ELF. Commands that cannot run there (modulefiles)
 * are flagged CVM_CMD_NOWIN in main.c.
 * Every entry point of the Linux-only modules is here, so that the shared
 * code and every command compile and link; the commands that need them
 * (flagged CVM_CMD_NOWIN in main.c) stop before opening the store with one
 * line, exit 1.
 */
#include <errno.h>
#include <stdio.h>

#include "compat.h"
#include "confine.h"
#include "elfinfo.h"
#include "error.h"
#include "out.h"

int cvm_unavailable(const char *what)
{
	return cvm_err(-EOPNOTSUPP, "%s: not available on Windows yet", what);
}

/* ---- confinement: none, so installs verify first */

void cvm_confine_probe(struct cvm_confine_caps *c)
{
	c->landlock_abi = 0;
	c->seccomp = false;
}

bool cvm_confine_enough(const struct cvm_confine_caps *c)
{
	(void)c;
	return false;
}

void cvm_confine_describe(const struct cvm_confine_caps *c, char *buf, size_t len)
{
	(void)c;
	snprintf(buf, len, "Windows (no Landlock or seccomp): the archive is verified first");
}

int cvm_confine_self(int dirfd, const int *keep, size_t nkeep, uint64_t max_file, bool keep_stderr)
{
	(void)dirfd;
	(void)keep;
	(void)nkeep;
	(void)max_file;
	(void)keep_stderr;
	return -EOPNOTSUPP;
}

/* ---- ELF (Linux's libraries): a Windows copy has none */

int cvm_elf_parse(const void *buf, size_t len, struct cvm_elf_info *out)
{
	(void)buf;
	(void)len;
	(void)out;
	return -CVM_E_LAYOUT;
}

int cvm_elf_read_at(int dirfd, const char *path, struct cvm_elf_info *out)
{
	(void)dirfd;
	(void)path;
	(void)out;
	return -CVM_E_LAYOUT;
}

void cvm_elf_version_str(unsigned long v, char *buf, size_t len)
{
	/* 91900 -> 9.19.0; 8907 -> 8.9.7, as elfinfo.c says it. */
	if (v >= 90000)
		snprintf(buf, len, "%lu.%lu.%lu", v / 10000, v / 100 % 100, v % 100);
	else
		snprintf(buf, len, "%lu.%lu.%lu", v / 1000, v / 100 % 10, v % 100);
}
