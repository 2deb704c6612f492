/* SPDX-License-Identifier: MIT */
/* The platform layer on Linux: compat.h's calls on the kernel's. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <pwd.h>
#include <signal.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "compat.h"
#include "lock.h"

int cvm_lock_try(int fd)
{
	if (flock(fd, LOCK_EX | LOCK_NB) == 0)
		return 0;
	return errno == EWOULDBLOCK ? -EWOULDBLOCK : -errno;
}

int cvm_rename_noreplace(int dfd, const char *from, const char *to)
{
	return renameat2(dfd, from, dfd, to, RENAME_NOREPLACE) < 0 ? -errno : 0;
}

int cvm_rename_exchange(int dfd, const char *a, const char *b)
{
	return renameat2(dfd, a, dfd, b, RENAME_EXCHANGE) < 0 ? -errno : 0;
}

int cvm_syncfs(int fd)
{
	return syncfs(fd) < 0 ? -errno : 0;
}

void cvm_thread_idle(void)
{
	struct sched_param sp = { 0 };

	(void)sched_setscheduler(0, SCHED_IDLE, &sp);
}

struct cvm_flush_behind {
	pthread_t tid;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int fd;
	bool stop;
};

static void *flush_behind(void *arg)
{
	struct cvm_flush_behind *f = arg;

	pthread_mutex_lock(&f->mu);
	while (!f->stop) {
		struct timespec t = cvm_deadline(200);
		if (pthread_cond_timedwait(&f->cv, &f->mu, &t) != ETIMEDOUT || f->stop)
			continue;
		pthread_mutex_unlock(&f->mu);
		/* A journal commit now and then as the data is written, rather than one large at the end. */
		(void)syncfs(f->fd);
		pthread_mutex_lock(&f->mu);
	}
	pthread_mutex_unlock(&f->mu);
	return NULL;
}

struct cvm_flush_behind *cvm_flush_behind_start(int fd)
{
	struct cvm_flush_behind *f = calloc(1, sizeof(*f));
	sigset_t all, old;
	int r;

	if (!f)
		return NULL;
	f->fd = fd;
	pthread_mutex_init(&f->mu, NULL);
	pthread_cond_init(&f->cv, NULL);
	/* Signals stay with the threads that wait for them (a Ctrl-C with the main one). */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	r = pthread_create(&f->tid, NULL, flush_behind, f);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (r == 0)
		return f;
	pthread_cond_destroy(&f->cv);
	pthread_mutex_destroy(&f->mu);
	free(f);
	return NULL;
}

void cvm_flush_behind_stop(struct cvm_flush_behind *f)
{
	if (!f)
		return;
	pthread_mutex_lock(&f->mu);
	f->stop = true;
	pthread_cond_signal(&f->cv);
	pthread_mutex_unlock(&f->mu);
	pthread_join(f->tid, NULL);
	pthread_cond_destroy(&f->cv);
	pthread_mutex_destroy(&f->mu);
	free(f);
}

void cvm_writeback(int fd, uint64_t off, uint64_t len)
{
	sync_file_range(fd, (off_t)off, (off_t)len, SYNC_FILE_RANGE_WRITE);
}

ssize_t cvm_pread(int fd, void *buf, size_t len, uint64_t off)
{
	ssize_t n;

	do
		n = pread(fd, buf, len, (off_t)off);
	while (n < 0 && errno == EINTR);
	return n < 0 ? -errno : n;
}

bool cvm_fd_sequential(int fd, uint64_t min)
{
	struct stat st;

	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size < 0 ||
	    (uint64_t)st.st_size <= min)
		return false;
	posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
	return true;
}

bool cvm_flush_each_file(void)
{
	return false;
}

int cvm_os_user(char *buf, size_t len)
{
	struct passwd *pw = getpwuid(getuid());

	if (!pw)
		return -ENOENT;
	return snprintf(buf, len, "%s", pw->pw_name) >= (int)len ? -ENAMETOOLONG : 0;
}

int cvm_machine(char *buf, size_t len)
{
	struct utsname u;

	if (uname(&u) < 0)
		return -errno;
	return snprintf(buf, len, "%s", u.machine) >= (int)len ? -ENAMETOOLONG : 0;
}

int cvm_self_exe(char *buf, size_t len)
{
	ssize_t k = readlink("/proc/self/exe", buf, len);

	if (k < 0)
		return -errno;
	if ((size_t)k >= len)
		return -ENAMETOOLONG;
	buf[k] = '\0';
	return 0;
}

int cvm_fd_path(int fd, char *buf, size_t len)
{
	char link[64];
	ssize_t k;

	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	k = readlink(link, buf, len - 1);
	if (k < 0)
		return -errno;
	if ((size_t)k >= len - 1)
		return -ENAMETOOLONG;
	buf[k] = '\0';
	return 0;
}

long cvm_cpu_count(void)
{
	long online = sysconf(_SC_NPROCESSORS_ONLN);
	cpu_set_t set;
	long n = 0;

	if (sched_getaffinity(0, sizeof(set), &set) == 0)
		n = CPU_COUNT(&set);
	if (online > 0 && (n <= 0 || online < n))
		n = online;
	return n > 0 ? n : 1;
}

long cvm_peak_rss_kib(void)
{
	struct rusage ru;

	return getrusage(RUSAGE_SELF, &ru) < 0 ? -errno : ru.ru_maxrss;
}

bool cvm_is_admin(void)
{
	return geteuid() == 0;
}

/* From /proc/locks. */
bool cvm_lock_held_by_others_only(int fd)
{
	char line[256], proc[64];
	unsigned maj, min;
	unsigned long ino;
	long pid;
	struct stat st, ps;
	size_t holders = 0;
	bool mine = false;
	FILE *f;

	if (fstat(fd, &st) < 0)
		return false;
	f = fopen("/proc/locks", "re");
	if (!f)
		return false;
	/* "1: FLOCK  ADVISORY  READ 1234 08:01:5678 0 EOF"; "1: -> FLOCK ..." is a waiter. */
	while (!mine && fgets(line, sizeof(line), f)) {
		if (strstr(line, "->") || !strstr(line, "FLOCK") ||
		    sscanf(strstr(line, "FLOCK"), "FLOCK %*s %*s %ld %x:%x:%lu", &pid, &maj, &min, &ino) != 4 ||
		    maj != major(st.st_dev) || min != minor(st.st_dev) || ino != st.st_ino)
			continue;
		snprintf(proc, sizeof(proc), "/proc/%ld", pid);
		/* A holder we cannot see could be anyone's, ours included: not foreign. */
		mine = stat(proc, &ps) < 0 || ps.st_uid == geteuid();
		holders++;
	}
	fclose(f);
	return holders && !mine;
}
