/* SPDX-License-Identifier: MIT */
/*
 * The platform layer (compat.h): the same checks on Linux and, cross-built
 * (make windows), on Windows or under wine. Works in a folder of its own
 * under TMPDIR (or the working folder) and removes it.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#ifdef _WIN32
#include <windows.h>
#else
#include <dirent.h>
#include <sched.h>
#include <sys/wait.h>
#endif

#include "compat.h"
#include "fsutil.h"
#include "proc.h"
#include "unit.h"

static int dfd = -1;

static bool exists(const char *name)
{
	struct stat st;

	return fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0;
}

static void test_files(void)
{
	char *buf = NULL, path[4096];
	size_t len = 0;
	struct stat st, st2;
	int fd;

	CHECK_INT(cvm_write_file_at(dfd, "a.txt", "alpha\n", 6, 0644), 0, "write a file atomically");
	CHECK_INT(cvm_read_file_at(dfd, "a.txt", 100, &buf, &len), 0, "read it back");
	CHECK(buf && len == 6 && !strcmp(buf, "alpha\n"), "the same bytes (no CR added)");
	free(buf);
	buf = NULL;

	fd = openat(dfd, "a.txt", O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	CHECK(fd >= 0, "openat O_NOFOLLOW a file");
	if (fd >= 0) {
		char b[4] = { 0 };

		CHECK_INT(pread(fd, b, 3, 2), 3, "pread 3 bytes at 2");
		CHECK(!memcmp(b, "pha", 3), "pread reads at the offset");
		CHECK_INT(fstat(fd, &st), 0, "fstat");
		CHECK(S_ISREG(st.st_mode) && st.st_size == 6, "fstat: a regular file of 6 bytes");
		CHECK_INT(fstatat(dfd, "a.txt", &st2, AT_SYMLINK_NOFOLLOW), 0, "fstatat");
		CHECK(st.st_dev == st2.st_dev && st.st_ino == st2.st_ino, "same file: same dev and inode");
		CHECK_INT(cvm_fd_path(fd, path, sizeof(path)), 0, "the path of a descriptor");
		CHECK(strstr(path, "a.txt") != NULL, "it ends in the name: %s", path);
		close(fd);
	}
	errno = 0;
	fd = openat(dfd, "a.txt", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	CHECK(fd < 0 && errno == ENOTDIR, "O_DIRECTORY on a file: ENOTDIR (errno %d)", errno);
	if (fd >= 0)
		close(fd);
	errno = 0;
	fd = openat(dfd, "a.txt", O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	CHECK(fd < 0 && errno == EEXIST, "O_CREAT | O_EXCL on an existing file: EEXIST");
	if (fd >= 0)
		close(fd);
	errno = 0;
	CHECK(openat(dfd, "missing", O_RDONLY) < 0 && errno == ENOENT, "a missing file: ENOENT");

	CHECK_INT(cvm_mkdir_p_at(dfd, "d/e/f", 0755), 0, "mkdir -p d/e/f");
	CHECK(fstatat(dfd, "d/e/f", &st, 0) == 0 && S_ISDIR(st.st_mode), "d/e/f is a folder");
	CHECK_INT(cvm_write_file_at(dfd, "d/e/f/g", "x", 1, 0644), 0, "a file below it");
	CHECK_INT(cvm_rm_rf_at(dfd, "d"), 0, "rm -rf d");
	CHECK(!exists("d"), "d is gone");
	CHECK_INT(unlinkat(dfd, "a.txt", 0), 0, "unlink a.txt");
	CHECK(!exists("a.txt"), "a.txt is gone");
}

static void test_rename(void)
{
	char *buf = NULL;
	size_t len = 0;
	int r;

	cvm_write_file_at(dfd, "one", "1", 1, 0644);
	cvm_write_file_at(dfd, "two", "2", 1, 0644);
	CHECK_INT(cvm_rename_noreplace(dfd, "one", "two"), -EEXIST, "rename without replacing: EEXIST");
	CHECK(exists("one") && exists("two"), "both still there");
	CHECK_INT(cvm_rename_noreplace(dfd, "one", "three"), 0, "rename to a free name");
	CHECK(!exists("one") && exists("three"), "moved");
	r = cvm_rename_exchange(dfd, "two", "three");
	if (CVM_WINDOWS) {
		CHECK_INT(r, -EOPNOTSUPP, "exchange: not on Windows (callers take another path)");
	} else {
		CHECK_INT(r, 0, "exchange two and three");
		cvm_read_file_at(dfd, "two", 10, &buf, &len);
		CHECK(buf && !strcmp(buf, "1"), "two now holds three's bytes");
		free(buf);
	}
	CHECK_INT(renameat(dfd, "two", dfd, "three") == 0 ? 0 : -errno, 0, "renameat replaces a file");
	CHECK(!exists("two") && exists("three"), "replaced");
	cvm_mkdir_p_at(dfd, "dir1", 0755);
	CHECK_INT(cvm_rename_noreplace(dfd, "dir1", "dir2"), 0, "a folder renamed");
	CHECK(exists("dir2") && !exists("dir1"), "the folder moved");
	cvm_rm_rf_at(dfd, "dir2");
	unlinkat(dfd, "three", 0);
}

#ifndef _WIN32
/* The tasks of this process: their number, and the greatest id (the newest thread). */
static int tasks(long *newest)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *de;
	int n = 0;

	*newest = 0;
	while (d && (de = readdir(d)))
		if (de->d_name[0] != '.') {
			n++;
			if (atol(de->d_name) > *newest)
				*newest = atol(de->d_name);
		}
	if (d)
		closedir(d);
	return n;
}

/*
 * Whether task tid blocks SIGINT and SIGTERM (its SigBlk mask), read once it
 * sleeps: a thread starts with every signal blocked until it takes its own mask.
 */
static bool blocks_signals(long tid)
{
	const struct timespec nap = { 0, 10 * 1000000L };
	char path[64], line[256];
	unsigned long long mask = 0;
	bool asleep = false;

	snprintf(path, sizeof(path), "/proc/self/task/%ld/status", tid);
	for (int i = 0; i < 500 && !asleep; i++) {
		FILE *f = fopen(path, "r");
		if (!f)
			return false;
		while (fgets(line, sizeof(line), f)) {
			if (!strncmp(line, "State:", 6))
				asleep = strstr(line, "(sleeping)") != NULL;
			sscanf(line, "SigBlk: %llx", &mask);
		}
		fclose(f);
		if (!asleep)
			nanosleep(&nap, NULL);
	}
	return asleep && (mask >> (SIGINT - 1) & 1) && (mask >> (SIGTERM - 1) & 1);
}
#endif

/* The calling thread's scheduling, and what it is once idle. */
#ifdef _WIN32
static int scheduling(void)
{
	return GetThreadPriority(GetCurrentThread());
}
enum { IDLE = THREAD_PRIORITY_IDLE };
#else
static int scheduling(void)
{
	return sched_getscheduler(0);
}
enum { IDLE = SCHED_IDLE };
#endif

static void *idle_policy(void *arg)
{
	cvm_thread_idle();
	*(int *)arg = scheduling();
	return NULL;
}

/* cvm_thread_idle: the calling thread, and only it, runs when a CPU would otherwise idle. */
static void test_thread_idle(void)
{
	int before = scheduling(), policy = -1;
	pthread_t t;

	CHECK(pthread_create(&t, NULL, idle_policy, &policy) == 0, "a thread to make idle");
	pthread_join(t, NULL);
	CHECK_INT(policy, IDLE, "that thread runs at the idle priority");
	CHECK(before != IDLE && scheduling() == before, "the thread that started it keeps its own");
}

static void test_flush_behind(void)
{
#ifdef _WIN32
	CHECK(cvm_flush_behind_start(dfd) == NULL,
	      "Windows: nothing runs behind (each file is flushed as it is closed)");
#else
	struct cvm_flush_behind *f;
	sigset_t none, old;
	long before, tid;
	int n0 = tasks(&before);

	/* Started from a thread that blocks nothing, as the CLI's main thread. */
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, &old);
	f = cvm_flush_behind_start(dfd);
	sigprocmask(SIG_SETMASK, &old, NULL);
	CHECK(f != NULL, "Linux: a thread flushes behind");
	CHECK_INT(tasks(&tid), n0 + 1, "one thread more while it runs");
	CHECK(tid != before && blocks_signals(tid), "it blocks SIGINT and SIGTERM (a Ctrl-C is the main thread's)");
	cvm_write_file_at(dfd, "behind", "x", 1, 0644);
	cvm_flush_behind_stop(f);
	CHECK_INT(tasks(&tid), n0, "stopped: the thread is gone");
	cvm_flush_behind_stop(NULL);
	unlinkat(dfd, "behind", 0);
#endif
}

static void test_lock(void)
{
	int a = openat(dfd, ".lock", O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	int b = openat(dfd, ".lock", O_RDWR | O_CLOEXEC | O_NOFOLLOW);

	CHECK(a >= 0 && b >= 0, "two descriptors of one lock file");
	CHECK_INT(cvm_lock_try(a), 0, "the first takes the lock");
	CHECK_INT(cvm_lock_try(b), -EWOULDBLOCK, "the second cannot: -EWOULDBLOCK");
	close(a);
	CHECK_INT(cvm_lock_try(b), 0, "closing the first releases it");
	close(b);
	unlinkat(dfd, ".lock", 0);
}

static void test_dir_and_names(void)
{
	/* UTF-8 inside, whatever the code page: "é", "日本" */
	static const char *const names[] = { "caf\xc3\xa9.h", "\xe6\x97\xa5\xe6\x9c\xac", "plain" };
	char longname[64], longpath[1200];
	bool seen[3] = { false, false, false };
	struct dirent *de;
	size_t n = 0;
	DIR *d;
	int fd;

	for (size_t i = 0; i < 3; i++)
		CHECK_INT(cvm_write_file_at(dfd, names[i], "x", 1, 0644), 0, "create '%s'", names[i]);
	fd = openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	d = fd < 0 ? NULL : fdopendir(fd);
	CHECK(d != NULL, "fdopendir");
	while (d && (de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		n++;
		for (size_t i = 0; i < 3; i++)
			if (!strcmp(de->d_name, names[i]))
				seen[i] = true;
	}
	if (d)
		closedir(d);
	CHECK_INT(n, 3, "three entries listed");
	for (size_t i = 0; i < 3; i++)
		CHECK(seen[i], "'%s' listed back byte for byte", names[i]);
	for (size_t i = 0; i < 3; i++)
		unlinkat(dfd, names[i], 0);

	/* Past MAX_PATH (260): five folders of 60 characters, then a file. */
	memset(longname, 'n', 60);
	longname[60] = '\0';
	snprintf(longpath, sizeof(longpath), "%s/%s/%s/%s/%s", longname, longname, longname, longname,
		 longname);
	CHECK_INT(cvm_mkdir_p_at(dfd, longpath, 0755), 0, "folders %zu characters deep", strlen(longpath));
	strcat(longpath, "/file.dll");
	CHECK_INT(cvm_write_file_at(dfd, longpath, "long", 4, 0644), 0, "a file below them");
	CHECK(exists(longpath), "it is there");
	CHECK_INT(cvm_rm_rf_at(dfd, longname), 0, "and removed");
}

static void test_system(void)
{
	char buf[256];

	CHECK_INT(cvm_os_user(buf, sizeof(buf)), 0, "the user's name");
	CHECK(buf[0] != '\0', "not empty: %s", buf);
	CHECK_INT(cvm_machine(buf, sizeof(buf)), 0, "the machine");
	CHECK(!strcmp(buf, "x86_64") || !strcmp(buf, "aarch64"), "x86_64 or aarch64: %s", buf);
	CHECK(cvm_cpu_count() >= 1, "at least one processor (%ld)", cvm_cpu_count());
	CHECK(cvm_peak_rss_kib() > 0, "peak memory known (%ld KiB)", cvm_peak_rss_kib());
	CHECK_INT(cvm_syncfs(dfd), 0, "syncfs");
}

static void test_spawn(const char *self)
{
	char *echo[] = { (char *)self, "child-echo", "two words", "q\"uote\\", NULL };
	char *hang[] = { (char *)self, "child-hang", NULL };
	char *missing[] = { "/nonexistent/cudnnvm-test-no-such-program", NULL };
	char out[256];
	int status = -1;
	long long t0;

	CHECK_INT(cvm_proc_capture(echo, NULL, false, 30000, out, sizeof(out), &status), 0,
		  "run a child and read its output");
	CHECK_STR(out, "child: two words| q\"uote\\|\n", "its arguments arrive as given");
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 3, "its exit status (3)");
	if (!CVM_WINDOWS) {
		char *env[] = { (char *)self, "child-env", NULL };

		/* Made before the child starts; the one variable replaced, whatever ours was. */
		setenv("LD_LIBRARY_PATH", "/old", 1);
		CHECK_INT(cvm_proc_capture(env, "/a:/b", false, 30000, out, sizeof(out), &status), 0,
			  "a child with LD_LIBRARY_PATH given");
		CHECK_STR(out, "/a:/b\n", "it sees the one given, not ours");
		CHECK_INT(cvm_proc_capture(env, NULL, false, 30000, out, sizeof(out), &status), 0,
			  "a child without");
		CHECK_STR(out, "/old\n", "it inherits ours");
		unsetenv("LD_LIBRARY_PATH");
	}
	t0 = cvm_now_ms();
	CHECK_INT(cvm_proc_capture(hang, NULL, false, 300, out, sizeof(out), &status), -ETIMEDOUT,
		  "a child past its deadline: -ETIMEDOUT");
	/* Killed, not waited for: well under its 60 s. */
	CHECK(cvm_now_ms() - t0 < 30000, "and killed (%lld ms)", cvm_now_ms() - t0);
	status = 0;
	CHECK(cvm_proc_capture(missing, NULL, false, 5000, out, sizeof(out), &status) < 0 ||
	      (WIFEXITED(status) && WEXITSTATUS(status) == 127), "a missing program fails");
}

int main(int argc, char **argv)
{
	char tmpl[4096];
	/* Windows' own TEMP there: a TMPDIR set for the POSIX side may name a POSIX path. */
	const char *tmp = getenv(CVM_WINDOWS ? "TEMP" : "TMPDIR");

	if (argc >= 2 && !strcmp(argv[1], "child-echo")) {
		printf("child:");
		for (int i = 2; i < argc; i++)
			printf(" %s|", argv[i]);
		printf("\n");
		return 3;
	}
	if (argc >= 2 && !strcmp(argv[1], "child-env")) {
		const char *v = getenv("LD_LIBRARY_PATH");

		printf("%s\n", v ? v : "(unset)");
		return 0;
	}
	if (argc >= 2 && !strcmp(argv[1], "child-hang")) {
		struct timespec ts = { 60, 0 };

		nanosleep(&ts, NULL);
		return 0;
	}
	snprintf(tmpl, sizeof(tmpl), "%s/cvm-test-compat.XXXXXX", tmp && *tmp ? tmp : ".");
	if (!mkdtemp(tmpl)) {
		printf("not ok - mkdtemp %s: %s\n", tmpl, strerror(errno));
		return 1;
	}
	dfd = open(tmpl, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	CHECK(dfd >= 0, "open the test folder");
	if (dfd < 0)
		return unit_done();
	test_files();
	test_rename();
	test_flush_behind();
	test_thread_idle();
	test_lock();
	test_dir_and_names();
	test_system();
	test_spawn(argv[0]);
	close(dfd);
	CHECK_INT(cvm_rm_rf_at(AT_FDCWD, tmpl), 0, "the test folder removed");
	return unit_done();
}
