/* SPDX-License-Identifier: MIT */
/*
 * Confinement of the speculative extraction child (confine.h). Landlock and
 * seccomp are used through their system calls, with the few constants that
 * older kernel headers lack defined here, so the binary uses whatever the
 * running kernel offers.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <linux/audit.h>
#include <linux/capability.h>
#include <linux/filter.h>
#include <linux/seccomp.h>

#include "confine.h"

#ifndef SYS_landlock_create_ruleset
#define SYS_landlock_create_ruleset 444
#define SYS_landlock_add_rule 445
#define SYS_landlock_restrict_self 446
#endif

/* Landlock's ABI, as of ABI 6 (older headers stop earlier). */
#define LL_CREATE_RULESET_VERSION (1U << 0)
#define LL_RULE_PATH_BENEATH 1
#define LL_FS_EXECUTE (1ULL << 0)
#define LL_FS_WRITE_FILE (1ULL << 1)
#define LL_FS_READ_FILE (1ULL << 2)
#define LL_FS_READ_DIR (1ULL << 3)
#define LL_FS_MAKE_DIR (1ULL << 7)
#define LL_FS_MAKE_REG (1ULL << 8)
#define LL_FS_MAKE_SYM (1ULL << 12)
#define LL_FS_ABI1 ((1ULL << 13) - 1)		/* execute .. make_sym */
#define LL_FS_REFER (1ULL << 13)		/* ABI 2 */
#define LL_FS_TRUNCATE (1ULL << 14)		/* ABI 3 */
#define LL_FS_IOCTL_DEV (1ULL << 15)		/* ABI 5 */
#define LL_NET_BIND_TCP (1ULL << 0)		/* ABI 4 */
#define LL_NET_CONNECT_TCP (1ULL << 1)
#define LL_SCOPE_ABSTRACT_UNIX (1ULL << 0)	/* ABI 6 */
#define LL_SCOPE_SIGNAL (1ULL << 1)

struct ll_ruleset_attr {
	uint64_t handled_access_fs;
	uint64_t handled_access_net;
	uint64_t scoped;
};

struct ll_path_beneath_attr {
	uint64_t allowed_access;
	int32_t parent_fd;
} __attribute__((packed));

#if defined(__x86_64__)
#define AUDIT_ARCH_HERE AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define AUDIT_ARCH_HERE AUDIT_ARCH_AARCH64
#endif

static int landlock_abi(void)
{
	long v = syscall(SYS_landlock_create_ruleset, NULL, 0, LL_CREATE_RULESET_VERSION);

	return v > 0 ? (int)v : 0;
}

void cvm_confine_probe(struct cvm_confine_caps *c)
{
	c->landlock_abi = landlock_abi();
#ifdef AUDIT_ARCH_HERE
	/* EINVAL: built without seccomp; otherwise the mode can be queried. */
	c->seccomp = prctl(PR_GET_SECCOMP, 0, 0, 0, 0) == 0;
#else
	c->seccomp = false;
#endif
}

bool cvm_confine_enough(const struct cvm_confine_caps *c)
{
	return c->landlock_abi >= 1 && c->seccomp;
}

void cvm_confine_describe(const struct cvm_confine_caps *c, char *buf, size_t len)
{
	char ll[32] = "no landlock";

	if (c->landlock_abi)
		snprintf(ll, sizeof(ll), "landlock ABI %d", c->landlock_abi);
	snprintf(buf, len, "%s, %s", ll, c->seccomp ? "seccomp" : "no seccomp");
}

static int cmp_int(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;

	return (x > y) - (x < y);
}

/* Closes every descriptor from 3 up but those in keep. */
static int close_others(const int *keep, size_t n)
{
	int sorted[16];
	unsigned lo = 3;
	size_t i;

	if (n > sizeof(sorted) / sizeof(sorted[0]))
		return -EINVAL;
	memcpy(sorted, keep, n * sizeof(int));
	qsort(sorted, n, sizeof(int), cmp_int);
	for (i = 0; i < n; i++) {
		if (sorted[i] < 3 || (unsigned)sorted[i] < lo)
			continue;
		if ((unsigned)sorted[i] > lo && close_range(lo, (unsigned)sorted[i] - 1, 0) < 0)
			return -errno;
		lo = (unsigned)sorted[i] + 1;
	}
	return close_range(lo, ~0U, 0) < 0 ? -errno : 0;
}

static int drop_capabilities(void)
{
	struct __user_cap_header_struct hdr = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct data[2];
	int cap;

	/* Without CAP_SETPCAP the bounding set stays; nothing can be exec'd anyway. */
	for (cap = 0; cap < 64; cap++)
		if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) < 0 && errno == EINVAL)
			break;
	prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
	if (geteuid() == 0)
		setgroups(0, NULL);
	memset(data, 0, sizeof(data));
	if (syscall(SYS_capset, &hdr, data) < 0)
		return -errno;
	return 0;
}

static int limit(int resource, rlim_t v)
{
	struct rlimit rl = { v, v };

	return setrlimit(resource, &rl) < 0 ? -errno : 0;
}

static int landlock_to(int dirfd)
{
	struct ll_ruleset_attr attr = { 0 };
	struct ll_path_beneath_attr pb = { 0 };
	size_t size = sizeof(uint64_t);
	int abi = landlock_abi(), fd, r = 0;

	if (abi < 1)
		return -ENOSYS;
	attr.handled_access_fs = LL_FS_ABI1;
	if (abi >= 2)
		attr.handled_access_fs |= LL_FS_REFER;
	if (abi >= 3)
		attr.handled_access_fs |= LL_FS_TRUNCATE;
	if (abi >= 4) {
		attr.handled_access_net = LL_NET_BIND_TCP | LL_NET_CONNECT_TCP;
		size = 2 * sizeof(uint64_t);
	}
	if (abi >= 5)
		attr.handled_access_fs |= LL_FS_IOCTL_DEV;
	if (abi >= 6) {
		attr.scoped = LL_SCOPE_ABSTRACT_UNIX | LL_SCOPE_SIGNAL;
		size = 3 * sizeof(uint64_t);
	}
	fd = (int)syscall(SYS_landlock_create_ruleset, &attr, size, 0);
	if (fd < 0)
		return -errno;
	/*
	 * Beneath the staging folder: make folders, files and symlinks, write
	 * files, and read them back (the libraries it wrote, extract.c).
	 */
	pb.allowed_access = LL_FS_WRITE_FILE | LL_FS_READ_FILE | LL_FS_READ_DIR | LL_FS_MAKE_DIR |
			    LL_FS_MAKE_REG | LL_FS_MAKE_SYM;
	pb.parent_fd = dirfd;
	if (syscall(SYS_landlock_add_rule, fd, LL_RULE_PATH_BENEATH, &pb, 0) < 0 ||
	    syscall(SYS_landlock_restrict_self, fd, 0) < 0)
		r = -errno;
	close(fd);
	return r;
}

#ifdef AUDIT_ARCH_HERE
#define ALLOW(nr) BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (nr), 0, 1), \
	BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)
#define ARG0 offsetof(struct seccomp_data, args[0])
#define RET_ERRNO(e) BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ((e) & SECCOMP_RET_DATA))

static int seccomp_filter(void)
{
	const unsigned pid = (unsigned)getpid();
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_HERE, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
#ifdef __x86_64__
		/* x32 system calls are another table: none. */
		BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, 0x40000000, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
#endif
		/* I/O on the descriptors it holds, and creating below the staging folder. */
		ALLOW(SYS_read), ALLOW(SYS_write), ALLOW(SYS_pread64), ALLOW(SYS_readv),
		ALLOW(SYS_writev), ALLOW(SYS_lseek), ALLOW(SYS_close), ALLOW(SYS_openat),
		ALLOW(SYS_mkdirat), ALLOW(SYS_symlinkat), ALLOW(SYS_fchmod), ALLOW(SYS_fchmodat),
		ALLOW(SYS_newfstatat), ALLOW(SYS_fstat), ALLOW(SYS_statx), ALLOW(SYS_dup),
		ALLOW(SYS_fcntl), ALLOW(SYS_sync_file_range),
		/* Memory, threads, time. */
		ALLOW(SYS_mmap), ALLOW(SYS_munmap), ALLOW(SYS_mremap), ALLOW(SYS_mprotect),
		ALLOW(SYS_brk), ALLOW(SYS_madvise), ALLOW(SYS_futex), ALLOW(SYS_set_robust_list),
		ALLOW(SYS_get_robust_list), ALLOW(SYS_rseq), ALLOW(SYS_set_tid_address),
		ALLOW(SYS_rt_sigprocmask), ALLOW(SYS_rt_sigaction), ALLOW(SYS_rt_sigreturn),
		ALLOW(SYS_sigaltstack), ALLOW(SYS_sched_yield), ALLOW(SYS_sched_getaffinity),
		ALLOW(SYS_getpid), ALLOW(SYS_gettid), ALLOW(SYS_getppid), ALLOW(SYS_getuid),
		ALLOW(SYS_geteuid), ALLOW(SYS_getgid), ALLOW(SYS_getegid), ALLOW(SYS_getrlimit),
		ALLOW(SYS_prlimit64), ALLOW(SYS_getrandom), ALLOW(SYS_clock_gettime),
		ALLOW(SYS_clock_getres), ALLOW(SYS_gettimeofday), ALLOW(SYS_nanosleep),
		ALLOW(SYS_clock_nanosleep), ALLOW(SYS_exit), ALLOW(SYS_exit_group),
		/* clone3's flags cannot be inspected: glibc then falls back to clone. */
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_clone3, 0, 1),
		RET_ERRNO(ENOSYS),
		/* clone: threads only. */
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_clone, 0, 4),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, ARG0),
		BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, CLONE_THREAD, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		RET_ERRNO(EPERM),
		/* Signals: only to itself (abort, raise). */
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_tgkill, 1, 0),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_kill, 0, 4),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, ARG0),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, pid, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		RET_ERRNO(EPERM),
		RET_ERRNO(EPERM),
	};
	struct sock_fprog prog = { (unsigned short)(sizeof(f) / sizeof(f[0])), f };

	if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog, 0, 0) < 0)
		return -errno;
	return 0;
}
#else
static int seccomp_filter(void)
{
	return -ENOSYS;
}
#endif

int cvm_confine_self(int dirfd, const int *keep, size_t nkeep, uint64_t max_file,
		     bool keep_stderr)
{
	int null, r;

	null = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (null < 0)
		return -errno;
	if (dup2(null, STDIN_FILENO) < 0 || dup2(null, STDOUT_FILENO) < 0 ||
	    (!keep_stderr && dup2(null, STDERR_FILENO) < 0)) {
		r = -errno;
		close(null);
		return r;
	}
	close(null);
	r = close_others(keep, nkeep);
	if (r < 0)
		return r;
	/* Nobody may attach to it or read its memory through /proc. */
	if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0)
		return -errno;
	r = drop_capabilities();
	if (r < 0)
		return r;
	/* A file over the limit fails with EFBIG instead of killing the process. */
	signal(SIGXFSZ, SIG_IGN);
	r = limit(RLIMIT_CORE, 0);
	if (r == 0)
		r = limit(RLIMIT_NOFILE, 64);
	if (r == 0 && max_file)
		r = limit(RLIMIT_FSIZE, (rlim_t)max_file);
	if (r < 0)
		return r;
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		return -errno;
	r = landlock_to(dirfd);
	if (r == 0)
		r = seccomp_filter();
	return r;
}
