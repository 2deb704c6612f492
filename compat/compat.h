/* SPDX-License-Identifier: MIT */
#ifndef CUDNNVM_COMPAT_H
#define CUDNNVM_COMPAT_H

/*
 * The platform layer, in the style of git's compat/: the calls that only
 * Linux has sit behind the cvm_* functions below, implemented once for
 * Linux (compat_posix.c) and once for Windows (compat_win32.c). On Windows
 * this header also supplies the POSIX calls the core is written in (the
 * *at() family with O_NOFOLLOW, fdopendir, pread, fsync, ...) on top of the
 * Win32 API, so that the core has one implementation: paths are UTF-8
 * inside and wide, with the \\?\ long-path prefix, at the Windows API.
 *
 * Include it after the system headers (it includes the ones it redefines).
 * Every function returns 0 (or a count) on success and -errno on failure,
 * like the rest of the core, unless it says otherwise.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#ifdef _WIN32
#include "compat_win32.h"
#define CVM_WINDOWS 1
#else
#define CVM_WINDOWS 0
#endif

/* Exclusive advisory lock on fd's file, not waiting (flock / LockFileEx):
 * 0, -EWOULDBLOCK when someone else holds it, or -errno. Released when the
 * file is closed or the process ends, so a crash never leaves it behind. */
int cvm_lock_try(int fd);

/* renameat(dfd, from, dfd, to) that fails with -EEXIST when to exists. */
int cvm_rename_noreplace(int dfd, const char *from, const char *to);

/* Swaps a and b (both below dfd) atomically. Windows has no such call:
 * -EOPNOTSUPP there, and callers take their non-atomic path. */
int cvm_rename_exchange(int dfd, const char *a, const char *b);

/* Flushes every written file of fd's file system (syncfs). On Windows,
 * where that needs an administrator, files are flushed one by one instead
 * (cvm_flush_each_file() says which) and this flushes only fd. */
int cvm_syncfs(int fd);
bool cvm_flush_each_file(void);

/* The calling thread runs only when a CPU would otherwise idle (SCHED_IDLE;
 * the idle priority on Windows): for work with slack. */
void cvm_thread_idle(void);

/* The CLOCK_REALTIME time ms from now: a deadline for pthread_cond_timedwait. */
static inline struct timespec cvm_deadline(long ms)
{
	struct timespec t;

	clock_gettime(CLOCK_REALTIME, &t);
	t.tv_sec += ms / 1000;
	t.tv_nsec += ms % 1000 * 1000000L;
	if (t.tv_nsec >= 1000000000L) {
		t.tv_sec++;
		t.tv_nsec -= 1000000000L;
	}
	return t;
}

/* Flushes fd's file system in the background (syncfs every 200 ms) until
 * cvm_flush_behind_stop, so that a flush after a large write has little left
 * to wait for. NULL where nothing is done: on Windows, where each file is
 * flushed as it is closed, or when no thread can be started. _stop(NULL) is
 * a no-op; it waits for a flush in progress. A process with this thread must
 * not fork a child that goes on without exec (see cvm_store_flush_behind). */
struct cvm_flush_behind;
struct cvm_flush_behind *cvm_flush_behind_start(int fd);
void cvm_flush_behind_stop(struct cvm_flush_behind *f);

/* Starts writing back len bytes of fd from off (0: to the end) without
 * waiting (sync_file_range); nothing on Windows. Never fails. */
void cvm_writeback(int fd, uint64_t off, uint64_t len);

/* Reads up to len bytes of fd at off (pread, again when a signal interrupts
 * it): the count, 0 at the end of the file, or -errno. The file offset is
 * left as it was, on Windows too, where ReadFile at an offset moves it. */
ssize_t cvm_pread(int fd, void *buf, size_t len, uint64_t off);

/* Whether fd is a regular file (on Windows, a disk file) of more than min
 * bytes, for a reader deciding whether reading ahead pays; when it is, the
 * kernel is told it will be read sequentially (posix_fadvise; nothing on
 * Windows). Never fails: false when fd cannot be asked. */
bool cvm_fd_sequential(int fd, uint64_t min);

/* The name of the user running us (getpwuid / GetUserNameW), UTF-8. */
int cvm_os_user(char *buf, size_t len);

/* The machine (uname's: x86_64, aarch64, ...; "x86_64" on 64-bit Windows). */
int cvm_machine(char *buf, size_t len);

/* This program's own file, UTF-8 (/proc/self/exe / GetModuleFileNameW). */
int cvm_self_exe(char *buf, size_t len);

/* The path fd was opened as (/proc/self/fd / GetFinalPathNameByHandleW). */
int cvm_fd_path(int fd, char *buf, size_t len);

/* Processors this process may run on (sched_getaffinity / the process mask). */
long cvm_cpu_count(void);

/* This process's peak resident memory in KiB (getrusage /
 * GetProcessMemoryInfo), or -errno. */
long cvm_peak_rss_kib(void);

/* Whether we are the administrator (uid 0; on Windows an elevated token). */
bool cvm_is_admin(void);

#ifdef _WIN32
/* "<what>: not available on Windows yet", -EOPNOTSUPP
 * (exit 1), for what needs a backend Windows does not have yet. */
int cvm_unavailable(const char *what);
#endif

#endif
