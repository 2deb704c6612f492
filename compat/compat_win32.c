/* SPDX-License-Identifier: MIT */
/*
 * The platform layer on Windows: compat.h's calls and the POSIX calls the
 * core is written in, on the Win32 API. Paths are UTF-8 inside and wide at
 * the API, absolute ones with the \\?\ prefix so that no MAX_PATH applies.
 */
#define WIN32_LEAN_AND_MEAN
#include <windows.h>
#include <psapi.h>
#include <winioctl.h>
#include <stdarg.h>
#include <wchar.h>

#include "compat.h"
#include "lock.h"

/* The real C runtime calls, under names compat_win32.h does not replace. */
#undef open
#undef stat
#undef fstat
#undef fopen
#undef getenv
#undef getcwd
#undef chdir

int cvm_errno_from_win(unsigned long code)
{
	switch (code) {
	case ERROR_FILE_NOT_FOUND:
	case ERROR_PATH_NOT_FOUND:
	case ERROR_INVALID_DRIVE:
	case ERROR_BAD_NETPATH:
	case ERROR_BAD_NET_NAME:
		return ENOENT;
	case ERROR_ACCESS_DENIED:
	case ERROR_SHARING_VIOLATION:
	case ERROR_LOCK_VIOLATION:
	case ERROR_PRIVILEGE_NOT_HELD:
	case ERROR_WRITE_PROTECT:
		return EACCES;
	case ERROR_FILE_EXISTS:
	case ERROR_ALREADY_EXISTS:
		return EEXIST;
	case ERROR_DIR_NOT_EMPTY:
		return ENOTEMPTY;
	case ERROR_DIRECTORY:
		return ENOTDIR;
	case ERROR_NOT_ENOUGH_MEMORY:
	case ERROR_OUTOFMEMORY:
		return ENOMEM;
	case ERROR_DISK_FULL:
	case ERROR_HANDLE_DISK_FULL:
		return ENOSPC;
	case ERROR_FILENAME_EXCED_RANGE:
		return ENAMETOOLONG;
	case ERROR_INVALID_NAME:
	case ERROR_BAD_PATHNAME:
	case ERROR_INVALID_PARAMETER:
		return EINVAL;
	case ERROR_NOT_SAME_DEVICE:
		return EXDEV;
	case ERROR_BROKEN_PIPE:
		return EPIPE;
	case ERROR_NOT_SUPPORTED:
	case ERROR_CALL_NOT_IMPLEMENTED:
		return EOPNOTSUPP;
	case ERROR_CANT_RESOLVE_FILENAME:
		return ELOOP;
	default:
		return EIO;
	}
}

static int fail_win(void)
{
	errno = cvm_errno_from_win(GetLastError());
	return -1;
}

wchar_t *cvm_wide(const char *s)
{
	int n = MultiByteToWideChar(CP_UTF8, MB_ERR_INVALID_CHARS, s, -1, NULL, 0);
	wchar_t *w;

	if (n <= 0) {
		errno = EILSEQ;
		return NULL;
	}
	w = malloc((size_t)n * sizeof(*w));
	if (!w) {
		errno = ENOMEM;
		return NULL;
	}
	MultiByteToWideChar(CP_UTF8, MB_ERR_INVALID_CHARS, s, -1, w, n);
	return w;
}

char *cvm_utf8(const wchar_t *w)
{
	int n = WideCharToMultiByte(CP_UTF8, 0, w, -1, NULL, 0, NULL, NULL);
	char *s;

	if (n <= 0) {
		errno = EILSEQ;
		return NULL;
	}
	s = malloc((size_t)n);
	if (!s) {
		errno = ENOMEM;
		return NULL;
	}
	WideCharToMultiByte(CP_UTF8, 0, w, -1, s, n, NULL, NULL);
	return s;
}

static HANDLE fd_handle(int fd)
{
	intptr_t h = _get_osfhandle(fd);

	if (h == -1 || h == -2) {
		errno = EBADF;
		return INVALID_HANDLE_VALUE;
	}
	return (HANDLE)h;
}

/*
 * The path each folder descriptor was opened as (with its handle, so that a
 * reused number is not taken for it): its volume, for handle_path below.
 */
enum { FD_PATHS = 4096 };
static struct {
	HANDLE h;
	wchar_t *path;
} fd_paths[FD_PATHS];

/* The handle each descriptor holds the lock through (compared, never used). */
static HANDLE locked[FD_PATHS];

/* A new descriptor: its path noted, and whatever a closed one of its number held forgotten. */
static void fd_path_note(int fd, HANDLE h, const wchar_t *w)
{
	if (fd < 0 || fd >= FD_PATHS)
		return;
	locked[fd] = NULL;
	free(fd_paths[fd].path);
	fd_paths[fd].path = _wcsdup(w);
	fd_paths[fd].h = fd_paths[fd].path ? h : NULL;
}

/* "\\?\C:" or "\\?\UNC\host\share" of an opened path: its length. */
static size_t volume_len(const wchar_t *w)
{
	const wchar_t *p;

	if (!wcsncmp(w, L"\\\\?\\UNC\\", 8)) {
		p = wcschr(w + 8, L'\\');
		p = p ? wcschr(p + 1, L'\\') : NULL;
		return p ? (size_t)(p - w) : wcslen(w);
	}
	return !wcsncmp(w, L"\\\\?\\", 4) && w[4] && w[5] == L':' ? 6 : 0;
}

/*
 * The path a handle names now (after renames), in the \\?\ form: malloc'd,
 * NULL on error. GetFinalPathNameByHandleW, or, where it fails (wine's for
 * paths past MAX_PATH), the volume of the path it was opened as and the
 * name on that volume (FileNameInfo).
 */
static wchar_t *handle_path_fd(HANDLE h, int fd)
{
	DWORD n = GetFinalPathNameByHandleW(h, NULL, 0, FILE_NAME_NORMALIZED);
	FILE_NAME_INFO *fi;
	size_t cap, vl;
	wchar_t *w;

	if (n) {
		w = malloc(((size_t)n + 1) * sizeof(*w));
		if (!w) {
			errno = ENOMEM;
			return NULL;
		}
		if (GetFinalPathNameByHandleW(h, w, n + 1, FILE_NAME_NORMALIZED))
			return w;
		free(w);
	}
	if (fd < 0 || fd >= FD_PATHS || fd_paths[fd].h != h || !(vl = volume_len(fd_paths[fd].path))) {
		fail_win();
		return NULL;
	}
	cap = sizeof(*fi) + 65536 * sizeof(wchar_t);
	fi = malloc(cap);
	if (!fi) {
		errno = ENOMEM;
		return NULL;
	}
	if (!GetFileInformationByHandleEx(h, FileNameInfo, fi, (DWORD)cap)) {
		free(fi);
		fail_win();
		return NULL;
	}
	n = fi->FileNameLength / sizeof(wchar_t);
	w = malloc((vl + n + 1) * sizeof(*w));
	if (w) {
		memcpy(w, fd_paths[fd].path, vl * sizeof(*w));
		memcpy(w + vl, fi->FileName, n * sizeof(*w));
		w[vl + n] = L'\0';
	} else {
		errno = ENOMEM;
	}
	free(fi);
	return w;
}

static bool absolute(const char *p)
{
	return p[0] == '/' || p[0] == '\\' ||
	       (((p[0] | 0x20) >= 'a' && (p[0] | 0x20) <= 'z') && p[1] == ':');
}

/* "base" + "\" + "name" with '/' as '\', in a malloc'd buffer. */
static wchar_t *join(const wchar_t *base, const wchar_t *name)
{
	size_t bl = base ? wcslen(base) : 0, nl = wcslen(name), i;
	wchar_t *w = malloc((bl + nl + 2) * sizeof(*w));

	if (!w) {
		errno = ENOMEM;
		return NULL;
	}
	if (bl)
		memcpy(w, base, bl * sizeof(*w));
	if (bl && nl && base[bl - 1] != L'\\')
		w[bl++] = L'\\';
	for (i = 0; i < nl; i++)
		w[bl + i] = name[i] == L'/' ? L'\\' : name[i];
	w[bl + nl] = L'\0';
	/* "dir\." is the folder itself. */
	if (bl + nl >= 2 && w[bl + nl - 1] == L'.' && w[bl + nl - 2] == L'\\')
		w[bl + nl - 2] = L'\0';
	return w;
}

/* A full path (GetFullPathNameW) with the \\?\ prefix, unless it has one. */
static wchar_t *long_form(const wchar_t *p)
{
	DWORD n;
	wchar_t *full, *w;
	size_t l;

	/*
	 * \\?\ turns off the parsing of "." and "..": a name joined to a
	 * folder's final path ("..\x") is made whole first, without it.
	 */
	if (!wcsncmp(p, L"\\\\?\\", 4)) {
		wchar_t *plain;

		if (!wcsstr(p, L"\\.")) {
			w = _wcsdup(p);
			if (!w)
				errno = ENOMEM;
			return w;
		}
		plain = _wcsdup(p + 4);
		if (!plain) {
			errno = ENOMEM;
			return NULL;
		}
		if (!wcsncmp(plain, L"UNC\\", 4)) {
			plain[0] = L'\\';
			plain[1] = L'\\';
			memmove(plain + 2, plain + 4, (wcslen(plain + 4) + 1) * sizeof(*plain));
		}
		w = long_form(plain);
		free(plain);
		return w;
	}
	n = GetFullPathNameW(p, 0, NULL, NULL);
	if (!n) {
		fail_win();
		return NULL;
	}
	full = malloc((size_t)n * sizeof(*full));
	if (!full) {
		errno = ENOMEM;
		return NULL;
	}
	GetFullPathNameW(p, n, full, NULL);
	l = wcslen(full);
	w = malloc((l + 9) * sizeof(*w));
	if (!w) {
		free(full);
		errno = ENOMEM;
		return NULL;
	}
	if (!wcsncmp(full, L"\\\\", 2))	/* \\server\share -> \\?\UNC\server\share */
		swprintf(w, l + 9, L"\\\\?\\UNC\\%ls", full + 2);
	else
		swprintf(w, l + 9, L"\\\\?\\%ls", full);
	free(full);
	return w;
}

wchar_t *cvm_wpath_at(int dirfd, const char *name)
{
	wchar_t *wn = cvm_wide(name), *base = NULL, *j, *r;

	if (!wn)
		return NULL;
	if (dirfd != AT_FDCWD && !absolute(name)) {
		HANDLE h = fd_handle(dirfd);

		base = h == INVALID_HANDLE_VALUE ? NULL : handle_path_fd(h, dirfd);
		if (!base) {
			free(wn);
			return NULL;
		}
	}
	j = join(base, wn);
	free(base);
	free(wn);
	if (!j)
		return NULL;
	r = long_form(j);
	free(j);
	return r;
}

/* ------------------------------------------------------------ stat */

static void filetime(const FILETIME *ft, struct timespec *ts)
{
	/* 100 ns since 1601 -> ns since 1970 */
	uint64_t t = ((uint64_t)ft->dwHighDateTime << 32) | ft->dwLowDateTime;

	t -= 116444736000000000ULL;
	ts->tv_sec = (time_t)(t / 10000000);
	ts->tv_nsec = (long)(t % 10000000) * 100;
}

static int stat_handle(HANDLE h, struct cvm_stat *st)
{
	BY_HANDLE_FILE_INFORMATION fi;
	FILE_ATTRIBUTE_TAG_INFO tag = { 0 };
	DWORD type = GetFileType(h);

	memset(st, 0, sizeof(*st));
	if (type == FILE_TYPE_CHAR || type == FILE_TYPE_PIPE) {
		st->st_mode = type == FILE_TYPE_CHAR ? S_IFCHR : S_IFIFO;
		st->st_nlink = 1;
		return 0;
	}
	if (!GetFileInformationByHandle(h, &fi))
		return fail_win();
	st->st_dev = fi.dwVolumeSerialNumber;
	st->st_ino = ((uint64_t)fi.nFileIndexHigh << 32) | fi.nFileIndexLow;
	st->st_nlink = fi.nNumberOfLinks;
	st->st_size = (int64_t)(((uint64_t)fi.nFileSizeHigh << 32) | fi.nFileSizeLow);
	if ((fi.dwFileAttributes & FILE_ATTRIBUTE_REPARSE_POINT) &&
	    GetFileInformationByHandleEx(h, FileAttributeTagInfo, &tag, sizeof(tag)) &&
	    (tag.ReparseTag == IO_REPARSE_TAG_SYMLINK || tag.ReparseTag == IO_REPARSE_TAG_MOUNT_POINT))
		st->st_mode = S_IFLNK | 0777;
	else if (fi.dwFileAttributes & FILE_ATTRIBUTE_DIRECTORY)
		st->st_mode = S_IFDIR | 0755;
	else
		/* No owners or modes here: a file is its owner's, read-only or not. */
		st->st_mode = S_IFREG | ((fi.dwFileAttributes & FILE_ATTRIBUTE_READONLY) ? 0444 : 0644);
	filetime(&fi.ftLastAccessTime, &st->st_atim);
	filetime(&fi.ftLastWriteTime, &st->st_mtim);
	filetime(&fi.ftLastWriteTime, &st->st_ctim);
	return 0;
}

/* Opens a path for its metadata only (any kind of file, not following a link when nofollow). */
static HANDLE open_meta(const wchar_t *w, bool nofollow)
{
	return CreateFileW(w, FILE_READ_ATTRIBUTES, FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE,
			   NULL, OPEN_EXISTING,
			   FILE_FLAG_BACKUP_SEMANTICS | (nofollow ? FILE_FLAG_OPEN_REPARSE_POINT : 0), NULL);
}

static ssize_t link_file_read(const wchar_t *w, char *buf, size_t len);
static wchar_t *target_path(int dirfd, const char *name, const char *target);

int fstatat(int dirfd, const char *name, struct cvm_stat *st, int flags)
{
	wchar_t *w = cvm_wpath_at(dirfd, name);
	char target[4096];
	ssize_t n;
	HANDLE h;
	int r;

	if (!w)
		return -1;
	h = open_meta(w, flags & AT_SYMLINK_NOFOLLOW);
	if (h == INVALID_HANDLE_VALUE) {
		free(w);
		return fail_win();
	}
	r = stat_handle(h, st);
	CloseHandle(h);
	/* A link file (see symlinkat) is a link: reported as one, or followed. */
	if (r == 0 && S_ISREG(st->st_mode) && (n = link_file_read(w, target, sizeof(target))) >= 0) {
		if (flags & AT_SYMLINK_NOFOLLOW) {
			st->st_mode = S_IFLNK | 0777;
			st->st_size = n;
		} else {
			wchar_t *t = target_path(dirfd, name, target);

			h = t ? open_meta(t, false) : INVALID_HANDLE_VALUE;
			free(t);
			r = h == INVALID_HANDLE_VALUE ? fail_win() : stat_handle(h, st);
			if (h != INVALID_HANDLE_VALUE)
				CloseHandle(h);
		}
	}
	free(w);
	return r;
}

int cvm_stat(const char *path, struct cvm_stat *st)
{
	return fstatat(AT_FDCWD, path, st, 0);
}

int cvm_lstat(const char *path, struct cvm_stat *st)
{
	return fstatat(AT_FDCWD, path, st, AT_SYMLINK_NOFOLLOW);
}

int cvm_fstat(int fd, struct cvm_stat *st)
{
	HANDLE h = fd_handle(fd);

	return h == INVALID_HANDLE_VALUE ? -1 : stat_handle(h, st);
}

/* ------------------------------------------------------------ open */

static int open_w(const wchar_t *w, int flags)
{
	DWORD access = 0, disp, attrs = FILE_FLAG_BACKUP_SEMANTICS;
	int crt = _O_BINARY, fd;
	BY_HANDLE_FILE_INFORMATION fi;
	HANDLE h;

	switch (flags & (O_RDONLY | O_WRONLY | O_RDWR)) {
	case O_WRONLY:
		access = GENERIC_WRITE;
		crt |= _O_WRONLY;
		break;
	case O_RDWR:
		access = GENERIC_READ | GENERIC_WRITE;
		crt |= _O_RDWR;
		break;
	default:
		access = GENERIC_READ;
		crt |= _O_RDONLY;
	}
	if ((flags & O_CREAT) && (flags & O_EXCL))
		disp = CREATE_NEW;
	else if ((flags & O_CREAT) && (flags & O_TRUNC))
		disp = CREATE_ALWAYS;
	else if (flags & O_CREAT)
		disp = OPEN_ALWAYS;
	else if (flags & O_TRUNC)
		disp = TRUNCATE_EXISTING;
	else
		disp = OPEN_EXISTING;
	if (flags & O_NOFOLLOW)
		attrs |= FILE_FLAG_OPEN_REPARSE_POINT;
	if (flags & O_APPEND)
		crt |= _O_APPEND;
	if (flags & O_CLOEXEC)
		crt |= _O_NOINHERIT;
	if (flags & O_DIRECTORY)
		access = GENERIC_READ;
	h = CreateFileW(w, access, FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE, NULL, disp,
			attrs, NULL);
	if (h == INVALID_HANDLE_VALUE) {
		DWORD e = GetLastError();

		/* A folder opened for writing, as open(2) says. */
		if (e == ERROR_ACCESS_DENIED) {
			DWORD a = GetFileAttributesW(w);

			if (a != INVALID_FILE_ATTRIBUTES && (a & FILE_ATTRIBUTE_DIRECTORY)) {
				errno = EISDIR;
				return -1;
			}
		}
		errno = cvm_errno_from_win(e);
		return -1;
	}
	if (!GetFileInformationByHandle(h, &fi)) {
		if (flags & O_DIRECTORY) {
			CloseHandle(h);
			return fail_win();
		}
	} else {
		if ((flags & O_NOFOLLOW) && (fi.dwFileAttributes & FILE_ATTRIBUTE_REPARSE_POINT)) {
			CloseHandle(h);
			errno = ELOOP;
			return -1;
		}
		if ((flags & O_DIRECTORY) && !(fi.dwFileAttributes & FILE_ATTRIBUTE_DIRECTORY)) {
			CloseHandle(h);
			errno = ENOTDIR;
			return -1;
		}
		if (!(flags & O_DIRECTORY) && (fi.dwFileAttributes & FILE_ATTRIBUTE_DIRECTORY) &&
		    (access & GENERIC_WRITE)) {
			CloseHandle(h);
			errno = EISDIR;
			return -1;
		}
	}
	fd = _open_osfhandle((intptr_t)h, crt);
	if (fd < 0) {
		CloseHandle(h);
		errno = EMFILE;
		return -1;
	}
	fd_path_note(fd, h, w);
	return fd;
}

int openat(int dirfd, const char *name, int flags, ...)
{
	wchar_t *w = cvm_wpath_at(dirfd, name);
	int fd;

	if (!w)
		return -1;
	fd = open_w(w, flags);
	free(w);
	return fd;
}

int cvm_open(const char *path, int flags, ...)
{
	if (!strcmp(path, "/dev/null"))
		path = "NUL";
	if (!strcmp(path, "NUL")) {
		int crt = _O_BINARY | ((flags & O_WRONLY) ? _O_WRONLY : (flags & O_RDWR) ? _O_RDWR : 0);

		return _open("NUL", crt);
	}
	return openat(AT_FDCWD, path, flags);
}

FILE *cvm_fopen(const char *path, const char *mode)
{
	int flags = 0, fd;
	FILE *f;

	if (strchr(mode, '+'))
		flags = O_RDWR;
	else if (mode[0] != 'r')
		flags = O_WRONLY;
	if (mode[0] == 'w')
		flags |= O_CREAT | O_TRUNC;
	else if (mode[0] == 'a')
		flags |= O_CREAT | O_APPEND;
	if (strchr(mode, 'x'))
		flags |= O_EXCL;
	if (strchr(mode, 'e'))
		flags |= O_CLOEXEC;
	fd = cvm_open(path, flags, 0644);
	if (fd < 0)
		return NULL;
	f = _fdopen(fd, mode[0] == 'r' ? (strchr(mode, '+') ? "r+b" : "rb") :
		    mode[0] == 'w' ? (strchr(mode, '+') ? "w+b" : "wb") : "ab");
	if (!f)
		_close(fd);
	return f;
}

int mkdirat(int dirfd, const char *name, mode_t mode)
{
	wchar_t *w = cvm_wpath_at(dirfd, name);
	BOOL ok;

	(void)mode;
	if (!w)
		return -1;
	ok = CreateDirectoryW(w, NULL);
	free(w);
	return ok ? 0 : fail_win();
}

/*
 * The wide path of name below dirfd, and its attributes in *a: the path (the
 * caller frees it), or NULL with errno set, also when name does not exist
 * (the *at() calls that look at what a name is before they act).
 */
static wchar_t *wpath_attrs(int dirfd, const char *name, DWORD *a)
{
	wchar_t *w = cvm_wpath_at(dirfd, name);

	if (!w)
		return NULL;
	*a = GetFileAttributesW(w);
	if (*a == INVALID_FILE_ATTRIBUTES) {
		free(w);
		fail_win();
		return NULL;
	}
	return w;
}

int unlinkat(int dirfd, const char *name, int flags)
{
	DWORD a = 0;
	wchar_t *w = wpath_attrs(dirfd, name, &a);
	BOOL ok;

	if (!w)
		return -1;
	if (flags & AT_REMOVEDIR) {
		ok = (a & FILE_ATTRIBUTE_DIRECTORY) ? RemoveDirectoryW(w) : (SetLastError(ERROR_DIRECTORY), FALSE);
	} else if ((a & FILE_ATTRIBUTE_DIRECTORY) && !(a & FILE_ATTRIBUTE_REPARSE_POINT)) {
		free(w);
		errno = EISDIR;
		return -1;
	} else {
		if (a & FILE_ATTRIBUTE_READONLY)
			SetFileAttributesW(w, a & ~(DWORD)FILE_ATTRIBUTE_READONLY);
		/* A link to a folder is removed as a folder. */
		ok = (a & FILE_ATTRIBUTE_DIRECTORY) ? RemoveDirectoryW(w) : DeleteFileW(w);
	}
	free(w);
	return ok ? 0 : fail_win();
}

static bool repoint_junction(const wchar_t *from, const wchar_t *to);

static int move(int od, const char *from, int nd, const char *to, DWORD how)
{
	wchar_t *a = cvm_wpath_at(od, from), *b = a ? cvm_wpath_at(nd, to) : NULL;
	BOOL ok;
	DWORD e;

	if (!b) {
		free(a);
		return -1;
	}
	ok = MoveFileExW(a, b, how | MOVEFILE_WRITE_THROUGH);
	e = GetLastError();
	/*
	 * A junction renamed over a junction (a link re-pointed): MoveFileExW
	 * replaces no folder, and removing the old one first would leave an
	 * instant with no link. The old junction's reparse data is replaced
	 * in place instead (one FSCTL_SET_REPARSE_POINT: a program opening
	 * through it sees the old target or the new one), then the new is removed.
	 */
	if (!ok && (how & MOVEFILE_REPLACE_EXISTING) && e == ERROR_ACCESS_DENIED &&
	    repoint_junction(a, b)) {
		ok = RemoveDirectoryW(a);
	/* rename(2) replaces an empty folder; MoveFileExW replaces only files. */
	} else if (!ok && (how & MOVEFILE_REPLACE_EXISTING) && e == ERROR_ACCESS_DENIED &&
	    (GetFileAttributesW(b) & FILE_ATTRIBUTE_DIRECTORY) &&
	    GetFileAttributesW(b) != INVALID_FILE_ATTRIBUTES && RemoveDirectoryW(b))
		ok = MoveFileExW(a, b, how | MOVEFILE_WRITE_THROUGH);
	else
		SetLastError(e);
	free(a);
	free(b);
	return ok ? 0 : fail_win();
}

int renameat(int od, const char *from, int nd, const char *to)
{
	return move(od, from, nd, to, MOVEFILE_REPLACE_EXISTING);
}

/*
 * Links. The core's links name folders (STORE/active/cuda-X.Y ->
 * ../versions/<id>). Here a link is a directory junction, which needs no
 * privilege: its substitute name is the absolute target (a junction is
 * absolute), its print name the target as the core wrote it, which is what
 * readlinkat gives back. A file system without reparse points (FAT32, exFAT,
 * some shares, wine) gets a link file instead, in Cygwin's manner: a small
 * file with the system attribute holding LINK_MAGIC and the target, which
 * lstat reports as a link and rename replaces atomically. Nothing can be
 * opened through a link file; activation, which knows, does not try.
 */
#define LINK_MAGIC "!<cudnnvm-link>\n"
#define LINK_MAX 4096

/* The reparse data of a junction or a symbolic link (ntifs.h's REPARSE_DATA_BUFFER). */
struct reparse {
	DWORD tag;
	WORD len, reserved;
	WORD sub_off, sub_len, print_off, print_len;
	union {
		WCHAR mount[1];
		struct {
			ULONG flags;
			WCHAR path[1];
		} sym;
	} u;
};

/* A link file's target into buf (NUL-terminated): its length, or -1 (not one). */
static ssize_t link_file_read(const wchar_t *w, char *buf, size_t len)
{
	char b[sizeof(LINK_MAGIC) + LINK_MAX];
	DWORD got = 0, a = GetFileAttributesW(w);
	HANDLE h;
	size_t n, m = strlen(LINK_MAGIC);

	if (a == INVALID_FILE_ATTRIBUTES || (a & FILE_ATTRIBUTE_DIRECTORY) || !(a & FILE_ATTRIBUTE_SYSTEM))
		return -1;
	h = CreateFileW(w, GENERIC_READ, FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE, NULL,
			OPEN_EXISTING, FILE_FLAG_OPEN_REPARSE_POINT, NULL);
	if (h == INVALID_HANDLE_VALUE)
		return -1;
	if (!ReadFile(h, b, sizeof(b) - 1, &got, NULL))
		got = 0;
	CloseHandle(h);
	if (got <= m || memcmp(b, LINK_MAGIC, m))
		return -1;
	n = got - m;
	if (n >= len)
		n = len - 1;
	memcpy(buf, b + m, n);
	buf[n] = '\0';
	return (ssize_t)n;
}

/* A junction's (or symbolic link's) target: the print name, else the substitute name. */
static ssize_t reparse_read(const wchar_t *w, char *buf, size_t len)
{
	union {
		struct reparse r;
		BYTE b[MAXIMUM_REPARSE_DATA_BUFFER_SIZE];
	} u;
	DWORD got = 0;
	HANDLE h = CreateFileW(w, FILE_READ_ATTRIBUTES, FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE,
			       NULL, OPEN_EXISTING, FILE_FLAG_BACKUP_SEMANTICS | FILE_FLAG_OPEN_REPARSE_POINT, NULL);
	const WCHAR *base, *t;
	size_t tl;
	char *s;
	wchar_t *copy;
	ssize_t n;

	if (h == INVALID_HANDLE_VALUE)
		return fail_win();
	if (!DeviceIoControl(h, FSCTL_GET_REPARSE_POINT, NULL, 0, &u, sizeof(u), &got, NULL)) {
		CloseHandle(h);
		return fail_win();
	}
	CloseHandle(h);
	if (u.r.tag == IO_REPARSE_TAG_MOUNT_POINT)
		base = u.r.u.mount;
	else if (u.r.tag == IO_REPARSE_TAG_SYMLINK)
		base = u.r.u.sym.path;
	else {
		errno = EINVAL;
		return -1;
	}
	t = base + (u.r.print_len ? u.r.print_off : u.r.sub_off) / sizeof(WCHAR);
	tl = (u.r.print_len ? u.r.print_len : u.r.sub_len) / sizeof(WCHAR);
	if (!u.r.print_len && tl >= 4 && !wcsncmp(t, L"\\??\\", 4)) {
		t += 4;
		tl -= 4;
	}
	copy = calloc(tl + 1, sizeof(wchar_t));
	if (!copy) {
		errno = ENOMEM;
		return -1;
	}
	wmemcpy(copy, t, tl);
	s = cvm_utf8(copy);
	free(copy);
	if (!s)
		return -1;
	n = (ssize_t)strlen(s);
	if ((size_t)n > len)
		n = (ssize_t)len;
	memcpy(buf, s, (size_t)n);
	free(s);
	return n;
}

ssize_t readlinkat(int dirfd, const char *name, char *buf, size_t len)
{
	char tmp[LINK_MAX];
	DWORD a = 0;
	wchar_t *w = wpath_attrs(dirfd, name, &a);
	ssize_t n;

	if (!w)
		return -1;
	if (a & FILE_ATTRIBUTE_REPARSE_POINT) {
		n = reparse_read(w, buf, len);
	} else if ((n = link_file_read(w, tmp, sizeof(tmp))) >= 0) {
		if ((size_t)n > len)
			n = (ssize_t)len;
		memcpy(buf, tmp, (size_t)n);
	} else {
		errno = EINVAL;
	}
	free(w);
	return n;
}

int cvm_win_link_kind(int dirfd, const char *name)
{
	char tmp[LINK_MAX];
	wchar_t *w = cvm_wpath_at(dirfd, name);
	DWORD a = w ? GetFileAttributesW(w) : INVALID_FILE_ATTRIBUTES;
	int kind = CVM_WIN_NOT_LINK;

	if (a != INVALID_FILE_ATTRIBUTES && (a & FILE_ATTRIBUTE_REPARSE_POINT))
		kind = CVM_WIN_JUNCTION;
	else if (a != INVALID_FILE_ATTRIBUTES && link_file_read(w, tmp, sizeof(tmp)) >= 0)
		kind = CVM_WIN_LINK_FILE;
	free(w);
	return kind;
}

/* Makes the empty folder w a junction to abs (a \\?\ path). */
static bool set_junction(const wchar_t *w, const wchar_t *abs, const char *print)
{
	union {
		struct reparse r;
		BYTE b[MAXIMUM_REPARSE_DATA_BUFFER_SIZE];
	} u;
	wchar_t *wp = cvm_wide(print);
	const wchar_t *t = abs + (!wcsncmp(abs, L"\\\\?\\", 4) ? 4 : 0);
	size_t sl = (wcslen(t) + 4) * sizeof(WCHAR), pl = wp ? wcslen(wp) * sizeof(WCHAR) : 0;
	DWORD got;
	HANDLE h;
	BOOL ok;

	if (!wp || offsetof(struct reparse, u.mount) + sl + pl + 4 > sizeof(u)) {
		free(wp);
		SetLastError(ERROR_FILENAME_EXCED_RANGE);
		return false;
	}
	memset(&u, 0, sizeof(u));
	u.r.tag = IO_REPARSE_TAG_MOUNT_POINT;
	u.r.sub_off = 0;
	u.r.sub_len = (WORD)sl;
	u.r.print_off = (WORD)(sl + sizeof(WCHAR));
	u.r.print_len = (WORD)pl;
	wcscpy(u.r.u.mount, L"\\??\\");
	wcscat(u.r.u.mount, t);
	memcpy((BYTE *)u.r.u.mount + u.r.print_off, wp, pl);
	free(wp);
	u.r.len = (WORD)(8 + sl + pl + 2 * sizeof(WCHAR));
	h = CreateFileW(w, GENERIC_WRITE, 0, NULL, OPEN_EXISTING,
			FILE_FLAG_BACKUP_SEMANTICS | FILE_FLAG_OPEN_REPARSE_POINT, NULL);
	if (h == INVALID_HANDLE_VALUE)
		return false;
	ok = DeviceIoControl(h, FSCTL_SET_REPARSE_POINT, &u, (DWORD)(8 + u.r.len), NULL, 0, &got, NULL);
	CloseHandle(h);
	return ok;
}

/* Both junctions: to gets from's target (see move). */
static bool repoint_junction(const wchar_t *from, const wchar_t *to)
{
	union {
		struct reparse r;
		BYTE b[MAXIMUM_REPARSE_DATA_BUFFER_SIZE];
	} u;
	DWORD af = GetFileAttributesW(from), at = GetFileAttributesW(to), got = 0;
	HANDLE h;
	BOOL ok;

	if (af == INVALID_FILE_ATTRIBUTES || at == INVALID_FILE_ATTRIBUTES ||
	    !(af & at & FILE_ATTRIBUTE_REPARSE_POINT) || !(af & at & FILE_ATTRIBUTE_DIRECTORY))
		return false;
	h = CreateFileW(from, FILE_READ_ATTRIBUTES, FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE,
			NULL, OPEN_EXISTING, FILE_FLAG_BACKUP_SEMANTICS | FILE_FLAG_OPEN_REPARSE_POINT, NULL);
	if (h == INVALID_HANDLE_VALUE)
		return false;
	ok = DeviceIoControl(h, FSCTL_GET_REPARSE_POINT, NULL, 0, &u, sizeof(u), &got, NULL);
	CloseHandle(h);
	if (!ok || u.r.tag != IO_REPARSE_TAG_MOUNT_POINT)
		return false;
	h = CreateFileW(to, GENERIC_WRITE, FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE, NULL,
			OPEN_EXISTING, FILE_FLAG_BACKUP_SEMANTICS | FILE_FLAG_OPEN_REPARSE_POINT, NULL);
	if (h == INVALID_HANDLE_VALUE)
		return false;
	ok = DeviceIoControl(h, FSCTL_SET_REPARSE_POINT, &u, got, NULL, 0, &got, NULL) &&
	     FlushFileBuffers(h);
	CloseHandle(h);
	return ok;
}

/* Whether a failed FSCTL_SET_REPARSE_POINT means "this file system has none". */
static bool no_reparse_points(DWORD e)
{
	return e == ERROR_NOT_SUPPORTED || e == ERROR_INVALID_FUNCTION || e == ERROR_INVALID_PARAMETER;
}

/* The path (\\?\ form) a link name below dirfd to target leads to. malloc'd; NULL, errno set. */
static wchar_t *target_path(int dirfd, const char *name, const char *target)
{
	char rel[LINK_MAX + 8];
	const char *slash = strrchr(name, '/');
	int n = absolute(target) ? snprintf(rel, sizeof(rel), "%s", target)
				 : snprintf(rel, sizeof(rel), "%.*s%s",
					    slash ? (int)(slash - name + 1) : 0, name, target);

	if (n < 0 || (size_t)n >= sizeof(rel)) {
		errno = ENAMETOOLONG;
		return NULL;
	}
	return cvm_wpath_at(dirfd, rel);
}

int symlinkat(const char *target, int dirfd, const char *name)
{
	wchar_t *w, *abs;
	DWORD a, e, put;
	HANDLE h;
	BOOL ok;

	if (strlen(target) >= LINK_MAX) {
		errno = ENAMETOOLONG;
		return -1;
	}
	w = cvm_wpath_at(dirfd, name);
	if (!w)
		return -1;
	abs = target_path(dirfd, name, target);
	a = abs ? GetFileAttributesW(abs) : INVALID_FILE_ATTRIBUTES;
	/* Junctions are for folders: a link to anything else is a link file. */
	if (a != INVALID_FILE_ATTRIBUTES && (a & FILE_ATTRIBUTE_DIRECTORY)) {
		if (!CreateDirectoryW(w, NULL)) {
			free(w);
			free(abs);
			return fail_win();
		}
		if (set_junction(w, abs, target)) {
			free(w);
			free(abs);
			return 0;
		}
		e = GetLastError();
		RemoveDirectoryW(w);
		if (!no_reparse_points(e)) {
			free(w);
			free(abs);
			errno = cvm_errno_from_win(e);
			return -1;
		}
	}
	free(abs);
	h = CreateFileW(w, GENERIC_WRITE, 0, NULL, CREATE_NEW, FILE_ATTRIBUTE_SYSTEM, NULL);
	if (h == INVALID_HANDLE_VALUE) {
		free(w);
		return fail_win();
	}
	ok = WriteFile(h, LINK_MAGIC, (DWORD)strlen(LINK_MAGIC), &put, NULL) &&
	     WriteFile(h, target, (DWORD)strlen(target), &put, NULL) && FlushFileBuffers(h);
	e = GetLastError();
	CloseHandle(h);
	if (!ok) {
		DeleteFileW(w);
		free(w);
		errno = cvm_errno_from_win(e);
		return -1;
	}
	free(w);
	return 0;
}

int link(const char *from, const char *to)
{
	wchar_t *a = cvm_wpath_at(AT_FDCWD, from), *b = a ? cvm_wpath_at(AT_FDCWD, to) : NULL;
	BOOL ok;

	if (!b) {
		free(a);
		return -1;
	}
	ok = CreateHardLinkW(b, a, NULL);
	free(a);
	free(b);
	return ok ? 0 : fail_win();
}

int faccessat(int dirfd, const char *name, int mode, int flags)
{
	DWORD a = 0;
	wchar_t *w = wpath_attrs(dirfd, name, &a);

	(void)flags;
	if (!w)
		return -1;
	free(w);
	if ((mode & W_OK) && (a & FILE_ATTRIBUTE_READONLY) && !(a & FILE_ATTRIBUTE_DIRECTORY)) {
		errno = EACCES;
		return -1;
	}
	return 0;
}

int cvm_chdir(const char *path)
{
	wchar_t *w = cvm_wide(path);
	int r;

	if (!w)
		return -1;
	r = _wchdir(w);
	free(w);
	return r;
}

char *cvm_getcwd(char *buf, size_t len)
{
	wchar_t *w = _wgetcwd(NULL, 0), *p;
	char *s;
	size_t i;

	if (!w)
		return NULL;
	s = cvm_utf8(w);
	free(w);
	(void)p;
	if (!s)
		return NULL;
	for (i = 0; s[i]; i++)
		if (s[i] == '\\')
			s[i] = '/';
	if (!buf)
		return s;
	if (strlen(s) + 1 > len) {
		free(s);
		errno = ERANGE;
		return NULL;
	}
	memcpy(buf, s, strlen(s) + 1);
	free(s);
	return buf;
}

int fsync(int fd)
{
	HANDLE h = fd_handle(fd);
	struct cvm_stat st;

	if (h == INVALID_HANDLE_VALUE)
		return -1;
	/* A folder's entries are NTFS metadata, journaled: nothing to flush. */
	if (stat_handle(h, &st) == 0 && !S_ISREG(st.st_mode))
		return 0;
	return FlushFileBuffers(h) ? 0 : fail_win();
}

int fchmod(int fd, mode_t mode)
{
	/* Windows files have ACLs, not modes: what the folder gives is kept. */
	(void)fd;
	(void)mode;
	return 0;
}

int fchmodat(int dirfd, const char *name, mode_t mode, int flags)
{
	struct cvm_stat st;

	(void)mode;
	return fstatat(dirfd, name, &st, flags);
}

/*
 * pread's and pwrite's handle, with *ov set to off (ReadFile and WriteFile
 * take the offset there) and *len cut to what one call moves (a DWORD, kept
 * at 1 GiB): INVALID_HANDLE_VALUE with errno set when fd is not open.
 */
static HANDLE fd_at(int fd, off_t off, OVERLAPPED *ov, DWORD *len, size_t want)
{
	*ov = (OVERLAPPED){ 0 };
	ov->Offset = (DWORD)((uint64_t)off & 0xffffffffu);
	ov->OffsetHigh = (DWORD)((uint64_t)off >> 32);
	*len = want > 0x40000000 ? 0x40000000 : (DWORD)want;
	return fd_handle(fd);
}

ssize_t pread(int fd, void *buf, size_t len, off_t off)
{
	OVERLAPPED ov;
	DWORD n = 0, want;
	HANDLE h = fd_at(fd, off, &ov, &want, len);

	if (h == INVALID_HANDLE_VALUE)
		return -1;
	if (!ReadFile(h, buf, want, &n, &ov)) {
		if (GetLastError() == ERROR_HANDLE_EOF)
			return 0;
		return fail_win();
	}
	return (ssize_t)n;
}

ssize_t pwrite(int fd, const void *buf, size_t len, off_t off)
{
	OVERLAPPED ov;
	DWORD n = 0, want;
	HANDLE h = fd_at(fd, off, &ov, &want, len);

	if (h == INVALID_HANDLE_VALUE)
		return -1;
	if (!WriteFile(h, buf, want, &n, &ov))
		return fail_win();
	return (ssize_t)n;
}

char *realpath(const char *path, char *resolved)
{
	int fd = openat(AT_FDCWD, path, O_RDONLY | O_DIRECTORY);
	char buf[4096];
	char *r;

	if (fd < 0)
		fd = openat(AT_FDCWD, path, O_RDONLY);
	if (fd < 0)
		return NULL;
	if (cvm_fd_path(fd, buf, sizeof(buf)) < 0) {
		_close(fd);
		return NULL;
	}
	_close(fd);
	if (resolved) {
		memcpy(resolved, buf, strlen(buf) + 1);
		return resolved;
	}
	r = _strdup(buf);
	if (!r)
		errno = ENOMEM;
	return r;
}

char *mkdtemp(char *tmpl)
{
	size_t l = strlen(tmpl);
	unsigned tries;

	if (l < 6 || strcmp(tmpl + l - 6, "XXXXXX")) {
		errno = EINVAL;
		return NULL;
	}
	for (tries = 0; tries < 100; tries++) {
		static const char set[] = "abcdefghijklmnopqrstuvwxyz0123456789";
		LARGE_INTEGER t;
		uint64_t v;
		int i;

		QueryPerformanceCounter(&t);
		v = (uint64_t)t.QuadPart * 6364136223846793005ULL + GetCurrentProcessId() + tries;
		for (i = 0; i < 6; i++, v /= 36)
			tmpl[l - 6 + i] = set[v % 36];
		if (mkdirat(AT_FDCWD, tmpl, 0700) == 0)
			return tmpl;
		if (errno != EEXIST)
			return NULL;
	}
	return NULL;
}

char *strndup(const char *s, size_t n)
{
	size_t l = strnlen(s, n);
	char *d = malloc(l + 1);

	if (!d)
		return NULL;
	memcpy(d, s, l);
	d[l] = '\0';
	return d;
}

char *strchrnul(const char *s, int c)
{
	while (*s && *s != (char)c)
		s++;
	return (char *)s;
}

void *memmem(const void *hay, size_t hlen, const void *needle, size_t nlen)
{
	const char *h = hay;
	size_t i;

	if (!nlen)
		return (void *)hay;
	for (i = 0; i + nlen <= hlen; i++)
		if (h[i] == *(const char *)needle && !memcmp(h + i, needle, nlen))
			return (void *)(h + i);
	return NULL;
}

/* The environment in UTF-8: the C runtime's narrow one is in the ANSI code page. */
char *cvm_getenv(const char *name)
{
	static char *slot[64];
	static unsigned next;
	wchar_t *wn = cvm_wide(name), *wv;
	DWORD n;
	char *v;

	if (!wn)
		return NULL;
	n = GetEnvironmentVariableW(wn, NULL, 0);
	if (!n) {
		free(wn);
		return NULL;
	}
	wv = malloc((size_t)n * sizeof(*wv));
	if (!wv) {
		free(wn);
		return NULL;
	}
	GetEnvironmentVariableW(wn, wv, n);
	free(wn);
	v = cvm_utf8(wv);
	free(wv);
	if (!v)
		return NULL;
	/* getenv's strings live on: a ring of the last 64 answers. */
	free(slot[next % 64]);
	slot[next++ % 64] = v;
	return v;
}

int setenv(const char *name, const char *value, int overwrite)
{
	wchar_t *wn, *wv;
	BOOL ok;

	if (!overwrite && cvm_getenv(name))
		return 0;
	wn = cvm_wide(name);
	wv = wn ? cvm_wide(value) : NULL;
	ok = wv && SetEnvironmentVariableW(wn, wv) && _wputenv_s(wn, wv) == 0;
	free(wn);
	free(wv);
	if (!ok)
		errno = EINVAL;
	return ok ? 0 : -1;
}

int unsetenv(const char *name)
{
	wchar_t *wn = cvm_wide(name);
	BOOL ok;

	if (!wn)
		return -1;
	ok = SetEnvironmentVariableW(wn, NULL) || GetLastError() == ERROR_ENVVAR_NOT_FOUND;
	_wputenv_s(wn, L"");
	free(wn);
	return ok ? 0 : -1;
}

/* ------------------------------------------------------------ folders */

struct cvm_dir {
	int fd;
	HANDLE find;
	bool first;
	WIN32_FIND_DATAW fd_data;
	struct cvm_dirent de;
};

cvm_dir *cvm_fdopendir(int fd)
{
	HANDLE h = fd_handle(fd);
	wchar_t *base, *pat;
	cvm_dir *d;

	if (h == INVALID_HANDLE_VALUE)
		return NULL;
	base = handle_path_fd(h, fd);
	if (!base)
		return NULL;
	pat = join(base, L"*");
	free(base);
	if (!pat)
		return NULL;
	d = calloc(1, sizeof(*d));
	if (!d) {
		free(pat);
		errno = ENOMEM;
		return NULL;
	}
	d->fd = fd;
	d->find = FindFirstFileExW(pat, FindExInfoBasic, &d->fd_data, FindExSearchNameMatch, NULL, 0);
	free(pat);
	if (d->find == INVALID_HANDLE_VALUE && GetLastError() != ERROR_FILE_NOT_FOUND) {
		fail_win();
		free(d);
		return NULL;
	}
	d->first = true;
	return d;
}

cvm_dir *cvm_opendir(const char *path)
{
	int fd = openat(AT_FDCWD, path, O_RDONLY | O_DIRECTORY);
	cvm_dir *d;

	if (fd < 0)
		return NULL;
	d = cvm_fdopendir(fd);
	if (!d)
		_close(fd);
	return d;
}

struct cvm_dirent *cvm_readdir(cvm_dir *d)
{
	/* As readdir(3): errno untouched at the end and on success, set on an error. */
	int saved = errno;

	for (;;) {
		char *s;

		if (d->find == INVALID_HANDLE_VALUE)
			break;
		if (!d->first && !FindNextFileW(d->find, &d->fd_data)) {
			if (GetLastError() != ERROR_NO_MORE_FILES) {
				fail_win();
				return NULL;
			}
			break;
		}
		d->first = false;
		if (!wcscmp(d->fd_data.cFileName, L".") || !wcscmp(d->fd_data.cFileName, L".."))
			continue;
		s = cvm_utf8(d->fd_data.cFileName);
		if (!s || strlen(s) >= sizeof(d->de.d_name)) {
			free(s);
			continue;
		}
		memcpy(d->de.d_name, s, strlen(s) + 1);
		free(s);
		errno = saved;
		return &d->de;
	}
	errno = saved;
	return NULL;
}

int cvm_closedir(cvm_dir *d)
{
	if (!d)
		return 0;
	if (d->find != INVALID_HANDLE_VALUE)
		FindClose(d->find);
	_close(d->fd);
	free(d);
	return 0;
}

int cvm_dirfd(cvm_dir *d)
{
	return d->fd;
}

/* ------------------------------------------------------------ compat.h */

int cvm_lock_try(int fd)
{
	HANDLE h = fd_handle(fd);
	OVERLAPPED ov = { 0 };

	if (h == INVALID_HANDLE_VALUE)
		return -EBADF;
	/* flock again on a descriptor that holds it succeeds; LockFileEx would not. */
	if (fd < FD_PATHS && locked[fd] == h)
		return 0;
	/* The whole file, as flock: released when the handle closes or the process ends. */
	if (LockFileEx(h, LOCKFILE_EXCLUSIVE_LOCK | LOCKFILE_FAIL_IMMEDIATELY, 0, MAXDWORD, MAXDWORD, &ov)) {
		if (fd < FD_PATHS)
			locked[fd] = h;
		return 0;
	}
	if (GetLastError() == ERROR_LOCK_VIOLATION || GetLastError() == ERROR_IO_PENDING)
		return -EWOULDBLOCK;
	return -cvm_errno_from_win(GetLastError());
}

bool cvm_lock_held_by_others_only(int fd)
{
	/* Windows files have no other users' modes to fix: never replaced. */
	(void)fd;
	return false;
}

int cvm_rename_noreplace(int dfd, const char *from, const char *to)
{
	return move(dfd, from, dfd, to, 0) < 0 ? -errno : 0;
}

int cvm_rename_exchange(int dfd, const char *a, const char *b)
{
	(void)dfd;
	(void)a;
	(void)b;
	return -EOPNOTSUPP;
}

int cvm_syncfs(int fd)
{
	/* Flushing a volume takes an administrator: each file was flushed as it was closed. */
	(void)fd;
	return 0;
}

void cvm_thread_idle(void)
{
	SetThreadPriority(GetCurrentThread(), THREAD_PRIORITY_IDLE);
}

/* Each file is flushed as it is closed (cvm_flush_each_file): nothing is left behind. */
struct cvm_flush_behind *cvm_flush_behind_start(int fd)
{
	(void)fd;
	return NULL;
}

void cvm_flush_behind_stop(struct cvm_flush_behind *f)
{
	(void)f;
}

void cvm_writeback(int fd, uint64_t off, uint64_t len)
{
	(void)fd;
	(void)off;
	(void)len;
}

ssize_t cvm_pread(int fd, void *buf, size_t len, uint64_t off)
{
	HANDLE h = fd_handle(fd);
	LARGE_INTEGER pos = { 0 }, zero = { 0 };
	bool restore;
	ssize_t n;

	if (h == INVALID_HANDLE_VALUE)
		return -errno;
	/* ReadFile at an offset moves a synchronous handle's file pointer: put it back, as pread leaves it. */
	restore = SetFilePointerEx(h, zero, &pos, FILE_CURRENT) != 0;
	n = pread(fd, buf, len, (off_t)off);
	if (n < 0)
		n = -errno;
	if (restore)
		SetFilePointerEx(h, pos, NULL, FILE_BEGIN);
	return n;
}

bool cvm_fd_sequential(int fd, uint64_t min)
{
	HANDLE h = fd_handle(fd);
	LARGE_INTEGER len = { 0 };

	return h != INVALID_HANDLE_VALUE && GetFileType(h) == FILE_TYPE_DISK && GetFileSizeEx(h, &len) &&
	       len.QuadPart > 0 && (uint64_t)len.QuadPart > min;
}

bool cvm_flush_each_file(void)
{
	return true;
}

int cvm_os_user(char *buf, size_t len)
{
	wchar_t w[257];
	DWORD n = 257;
	char *s;
	int r = 0;

	if (!GetUserNameW(w, &n))
		return -cvm_errno_from_win(GetLastError());
	s = cvm_utf8(w);
	if (!s)
		return -errno;
	if (strlen(s) + 1 > len)
		r = -ENAMETOOLONG;
	else
		memcpy(buf, s, strlen(s) + 1);
	free(s);
	return r;
}

int cvm_machine(char *buf, size_t len)
{
	SYSTEM_INFO si;
	const char *m;

	GetNativeSystemInfo(&si);
	m = si.wProcessorArchitecture == PROCESSOR_ARCHITECTURE_AMD64 ? "x86_64" :
	    si.wProcessorArchitecture == PROCESSOR_ARCHITECTURE_ARM64 ? "aarch64" : "unknown";
	return snprintf(buf, len, "%s", m) >= (int)len ? -ENAMETOOLONG : 0;
}

int cvm_self_exe(char *buf, size_t len)
{
	wchar_t *w = malloc(32768 * sizeof(*w));
	char *s = NULL;
	int r = -ENOMEM;

	if (w && GetModuleFileNameW(NULL, w, 32768) && (s = cvm_utf8(w)))
		r = snprintf(buf, len, "%s", s) >= (int)len ? -ENAMETOOLONG : 0;
	free(w);
	free(s);
	return r;
}

int cvm_fd_path(int fd, char *buf, size_t len)
{
	HANDLE h = fd_handle(fd);
	wchar_t *w;
	char *s, *p;
	int r = 0;
	size_t i;

	if (h == INVALID_HANDLE_VALUE)
		return -EBADF;
	w = handle_path_fd(h, fd);
	if (!w)
		return -errno;
	s = cvm_utf8(w);
	free(w);
	if (!s)
		return -errno;
	/* \\?\C:\x -> C:/x; \\?\UNC\host\share -> //host/share */
	p = s;
	if (!strncmp(p, "\\\\?\\UNC\\", 8)) {
		p += 6;
		p[0] = '\\';
	} else if (!strncmp(p, "\\\\?\\", 4)) {
		p += 4;
	}
	for (i = 0; p[i]; i++)
		if (p[i] == '\\')
			p[i] = '/';
	if (strlen(p) + 1 > len)
		r = -ENAMETOOLONG;
	else
		memcpy(buf, p, strlen(p) + 1);
	free(s);
	return r;
}

long cvm_cpu_count(void)
{
	DWORD_PTR proc = 0, sys = 0;
	long n = 0;

	if (GetProcessAffinityMask(GetCurrentProcess(), &proc, &sys))
		for (; proc; proc &= proc - 1)
			n++;
	return n > 0 ? n : 1;
}

long cvm_peak_rss_kib(void)
{
	PROCESS_MEMORY_COUNTERS pmc;

	if (!GetProcessMemoryInfo(GetCurrentProcess(), &pmc, sizeof(pmc)))
		return -EIO;
	return (long)(pmc.PeakWorkingSetSize >> 10);
}

bool cvm_is_admin(void)
{
	HANDLE tok;
	TOKEN_ELEVATION e = { 0 };
	DWORD n = 0;
	bool r = false;

	if (OpenProcessToken(GetCurrentProcess(), TOKEN_QUERY, &tok)) {
		r = GetTokenInformation(tok, TokenElevation, &e, sizeof(e), &n) && e.TokenIsElevated;
		CloseHandle(tok);
	}
	return r;
}

int kill(int pid, int sig)
{
	if (pid != getpid()) {
		errno = EPERM;
		return -1;
	}
	if (sig == SIGKILL)
		TerminateProcess(GetCurrentProcess(), 137);
	return raise(sig);
}
