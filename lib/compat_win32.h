/* SPDX-License-Identifier: MIT */
#ifndef CUDNNVM_COMPAT_WIN32_H
#define CUDNNVM_COMPAT_WIN32_H

/*
 * Windows only (included by compat.h): the POSIX calls of the core, on the
 * Win32 API (compat_win32.c). Descriptors are the C runtime's, made from
 * CreateFileW handles (shared for read, write and delete, so that a file
 * can be renamed while open, as on Linux); a directory descriptor is a
 * handle opened with FILE_FLAG_BACKUP_SEMANTICS, and a name relative to it
 * is resolved through the handle's final path. Names of the system headers
 * are replaced after those headers, as git's compat/mingw.h does.
 */
#include <direct.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <io.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* Flags mingw lacks; chosen above every _O_* bit of the C runtime. */
#define O_NOFOLLOW 0x01000000
#define O_DIRECTORY 0x02000000
#define O_NONBLOCK 0x04000000
#define O_NOCTTY 0
#define O_CLOEXEC _O_NOINHERIT

#define AT_FDCWD (-100)
#define AT_SYMLINK_NOFOLLOW 0x100
#define AT_REMOVEDIR 0x200
#define AT_EACCESS 0x400

#ifndef S_IFLNK
#define S_IFLNK 0xA000
#endif
#ifndef S_ISLNK
#define S_ISLNK(m) (((m) & S_IFMT) == S_IFLNK)
#endif
#define S_ISVTX 01000
#ifndef S_IRWXG
#define S_IRWXG 0070
#define S_IRWXO 0007
#define S_IWGRP 0020
#define S_IWOTH 0002
#endif

#ifndef ELOOP
#define ELOOP 114
#endif
#ifndef ESTALE
#define ESTALE 116
#endif
#ifndef EOPNOTSUPP
#define EOPNOTSUPP 130
#endif

/* cvm_proc_capture's status, as a wait status (proc_win.c makes it so). */
#define WIFEXITED(s) (((s) & 0x7f) == 0)
#define WEXITSTATUS(s) (((s) >> 8) & 0xff)
#define WIFSIGNALED(s) 0
#define WTERMSIG(s) 0

/* kill(2) of this process only (the crash points of a test build): SIGKILL
 * ends it at once (TerminateProcess, exit code 137), any other signal is
 * raised. Another process: -EPERM. */
#ifndef SIGKILL
#define SIGKILL 9
#endif
int kill(int pid, int sig);

typedef unsigned int uid_t;
typedef unsigned int gid_t;

/* struct stat and the stat calls: 64-bit sizes, the file index as st_ino
 * and the volume serial as st_dev (so same-file checks work), times with
 * nanoseconds, links as S_IFLNK, no owners (st_uid 0). */
struct cvm_stat {
	uint64_t st_dev;
	uint64_t st_ino;
	unsigned st_mode;
	unsigned st_nlink;
	uid_t st_uid;
	gid_t st_gid;
	int64_t st_size;
	struct timespec st_atim, st_mtim, st_ctim;
};
#undef stat
#undef lstat
#undef fstat
#define stat cvm_stat
#define lstat cvm_lstat
#define fstat cvm_fstat
int cvm_stat(const char *path, struct cvm_stat *st);
int cvm_lstat(const char *path, struct cvm_stat *st);
int cvm_fstat(int fd, struct cvm_stat *st);
int fstatat(int dirfd, const char *name, struct cvm_stat *st, int flags);

#define open cvm_open
int cvm_open(const char *path, int flags, ...);
int openat(int dirfd, const char *name, int flags, ...);
int mkdirat(int dirfd, const char *name, mode_t mode);
#define mkdir(p, m) mkdirat(AT_FDCWD, (p), (m))
int unlinkat(int dirfd, const char *name, int flags);
#define unlink(p) unlinkat(AT_FDCWD, (p), 0)
#define rmdir(p) unlinkat(AT_FDCWD, (p), AT_REMOVEDIR)
int renameat(int olddirfd, const char *from, int newdirfd, const char *to);
#define rename(a, b) renameat(AT_FDCWD, (a), AT_FDCWD, (b))
ssize_t readlinkat(int dirfd, const char *name, char *buf, size_t len);
#define readlink(p, b, l) readlinkat(AT_FDCWD, (p), (b), (l))
/* A link to a folder is a directory junction; where the file system has no
 * reparse points, or to anything else, a link file (compat_win32.c says
 * more). readlinkat gives back the target as it was written. */
int symlinkat(const char *target, int dirfd, const char *name);
#define symlink(t, p) symlinkat((t), AT_FDCWD, (p))
/* Which of the two name is: CVM_WIN_JUNCTION (or another reparse point),
 * CVM_WIN_LINK_FILE, or CVM_WIN_NOT_LINK. */
enum { CVM_WIN_NOT_LINK, CVM_WIN_JUNCTION, CVM_WIN_LINK_FILE };
int cvm_win_link_kind(int dirfd, const char *name);
int faccessat(int dirfd, const char *name, int mode, int flags);
/* A hard link (CreateHardLinkW). */
int link(const char *from, const char *to);
#define access(p, m) faccessat(AT_FDCWD, (p), (m), 0)
#define chdir cvm_chdir
int cvm_chdir(const char *path);
#define getcwd cvm_getcwd
char *cvm_getcwd(char *buf, size_t len);
#define fopen cvm_fopen
FILE *cvm_fopen(const char *path, const char *mode);

int fsync(int fd);
int fchmod(int fd, mode_t mode);
int fchmodat(int dirfd, const char *name, mode_t mode, int flags);
#define chmod(p, m) fchmodat(AT_FDCWD, (p), (m), 0)
ssize_t pread(int fd, void *buf, size_t len, off_t off);
ssize_t pwrite(int fd, const void *buf, size_t len, off_t off);
char *realpath(const char *path, char *resolved);
char *mkdtemp(char *tmpl);
char *strndup(const char *s, size_t n);
void *memmem(const void *hay, size_t hlen, const void *needle, size_t nlen);
int setenv(const char *name, const char *value, int overwrite);
int unsetenv(const char *name);
#define getenv cvm_getenv
char *cvm_getenv(const char *name);
char *strchrnul(const char *s, int c);
static inline struct tm *cvm_gmtime_r(const time_t *t, struct tm *tm)
{
	return gmtime_s(tm, t) ? NULL : tm;
}
static inline struct tm *cvm_localtime_r(const time_t *t, struct tm *tm)
{
	return localtime_s(tm, t) ? NULL : tm;
}
#define gmtime_r cvm_gmtime_r
#define localtime_r cvm_localtime_r
#define getuid() ((uid_t)0)
#define getgid() ((gid_t)0)
#define getegid() ((gid_t)0)
#define geteuid() ((uid_t)0)

/* Folders: fdopendir takes fd (closedir closes it); "." and ".." are
 * not returned. */
#define DIR cvm_dir
#define dirent cvm_dirent
#define opendir cvm_opendir
#define fdopendir cvm_fdopendir
#define readdir cvm_readdir
#define closedir cvm_closedir
#define dirfd cvm_dirfd
struct cvm_dirent {
	char d_name[1024];
};
typedef struct cvm_dir cvm_dir;
cvm_dir *cvm_opendir(const char *path);
cvm_dir *cvm_fdopendir(int fd);
struct cvm_dirent *cvm_readdir(cvm_dir *d);
int cvm_closedir(cvm_dir *d);
int cvm_dirfd(cvm_dir *d);

/* A UTF-8 path as the wide, long-path form the API takes (\\?\ for an
 * absolute path, '/' as '\'), relative to dirfd unless absolute. malloc'd
 * (caller frees); NULL with errno set. */
wchar_t *cvm_wpath_at(int dirfd, const char *name);
/* UTF-8 of a wide string (malloc'd; NULL with errno set), and back. */
char *cvm_utf8(const wchar_t *w);
wchar_t *cvm_wide(const char *s);
/* The C runtime's errno for GetLastError()'s code. */
int cvm_errno_from_win(unsigned long code);

#endif
