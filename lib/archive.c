/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <archive.h>
#include <archive_entry.h>

#include "archive.h"
#include "compat.h"
#include "digest.h"
#include "error.h"
#include "fsutil.h"
#include "le.h"
#include "out.h"
#include "xz.h"

/*
 * libarchive is loaded when the first archive is opened, not linked: commands
 * that never read an archive (use, list, env…) must not pay for its dependency
 * tree at every start (bench/RESULTS.md). The static build (Windows) links it:
 * CVM_LINK_LIBARCHIVE. Each name below is the library's own, so the calls in
 * this file read as plain libarchive calls in both builds.
 */
#define LA_FUNCS(X) \
	X(archive_entry_filetype) \
	X(archive_entry_free) \
	X(archive_entry_hardlink) \
	X(archive_entry_copy_pathname) \
	X(archive_entry_copy_symlink) \
	X(archive_entry_new) \
	X(archive_entry_pathname) \
	X(archive_entry_pathname_utf8) \
	X(archive_entry_pathname_w) \
	X(archive_entry_perm) \
	X(archive_entry_set_filetype) \
	X(archive_entry_set_mtime) \
	X(archive_entry_set_pathname_utf8) \
	X(archive_entry_set_perm) \
	X(archive_entry_set_size) \
	X(archive_entry_set_symlink_utf8) \
	X(archive_entry_size) \
	X(archive_entry_size_is_set) \
	X(archive_entry_symlink) \
	X(archive_error_string) \
	X(archive_filter_bytes) \
	X(archive_filter_count) \
	X(archive_filter_name) \
	X(archive_format_name) \
	X(archive_read_data) \
	X(archive_read_data_block) \
	X(archive_read_free) \
	X(archive_read_new) \
	X(archive_read_next_header) \
	X(archive_read_open) \
	X(archive_read_open_fd) \
	X(archive_read_support_filter_gzip) \
	X(archive_read_support_filter_xz) \
	X(archive_read_support_filter_zstd) \
	X(archive_read_support_format_gnutar) \
	X(archive_read_support_format_tar) \
	X(archive_read_support_format_zip) \
	X(archive_set_error) \
	X(archive_write_add_filter_zstd) \
	X(archive_write_close) \
	X(archive_write_data) \
	X(archive_write_free) \
	X(archive_write_header) \
	X(archive_write_new) \
	X(archive_write_open2) \
	X(archive_write_set_bytes_in_last_block) \
	X(archive_write_set_format_pax_restricted)

#ifdef CVM_LINK_LIBARCHIVE
int cvm_archive_load(void)
{
	return 0;
}
#else
#include "dynlib.h"

#define X(f) __typeof__(f) *(f);
static struct { LA_FUNCS(X) } la;
#undef X

int cvm_archive_load(void)
{
#define X(f) CVM_DYNSYM(la, f),
	static const struct cvm_dynsym syms[] = { LA_FUNCS(X) };
#undef X
	static struct cvm_dynlib lib = {
		.soname = "libarchive.so.13",
		.test_env = "CVM_TEST_LIBARCHIVE",
		.task = "read archives",
		.hint = "install it (Debian: apt-get install libarchive13)",
		CVM_DYNSYMS(syms),
	};

	return cvm_dynlib_load(&lib);
}

#define archive_entry_filetype la.archive_entry_filetype
#define archive_entry_free la.archive_entry_free
#define archive_entry_hardlink la.archive_entry_hardlink
#define archive_entry_copy_pathname la.archive_entry_copy_pathname
#define archive_entry_copy_symlink la.archive_entry_copy_symlink
#define archive_entry_new la.archive_entry_new
#define archive_entry_pathname la.archive_entry_pathname
#define archive_entry_pathname_utf8 la.archive_entry_pathname_utf8
#define archive_entry_pathname_w la.archive_entry_pathname_w
#define archive_entry_perm la.archive_entry_perm
#define archive_entry_set_filetype la.archive_entry_set_filetype
#define archive_entry_set_mtime la.archive_entry_set_mtime
#define archive_entry_set_pathname_utf8 la.archive_entry_set_pathname_utf8
#define archive_entry_set_perm la.archive_entry_set_perm
#define archive_entry_set_size la.archive_entry_set_size
#define archive_entry_set_symlink_utf8 la.archive_entry_set_symlink_utf8
#define archive_entry_size la.archive_entry_size
#define archive_entry_size_is_set la.archive_entry_size_is_set
#define archive_entry_symlink la.archive_entry_symlink
#define archive_error_string la.archive_error_string
#define archive_filter_bytes la.archive_filter_bytes
#define archive_filter_count la.archive_filter_count
#define archive_filter_name la.archive_filter_name
#define archive_format_name la.archive_format_name
#define archive_read_data la.archive_read_data
#define archive_read_data_block la.archive_read_data_block
#define archive_read_free la.archive_read_free
#define archive_read_new la.archive_read_new
#define archive_read_next_header la.archive_read_next_header
#define archive_read_open la.archive_read_open
#define archive_read_open_fd la.archive_read_open_fd
#define archive_read_support_filter_gzip la.archive_read_support_filter_gzip
#define archive_read_support_filter_xz la.archive_read_support_filter_xz
#define archive_read_support_filter_zstd la.archive_read_support_filter_zstd
#define archive_read_support_format_gnutar la.archive_read_support_format_gnutar
#define archive_read_support_format_tar la.archive_read_support_format_tar
#define archive_read_support_format_zip la.archive_read_support_format_zip
#define archive_set_error la.archive_set_error
#define archive_write_add_filter_zstd la.archive_write_add_filter_zstd
#define archive_write_close la.archive_write_close
#define archive_write_data la.archive_write_data
#define archive_write_free la.archive_write_free
#define archive_write_header la.archive_write_header
#define archive_write_new la.archive_write_new
#define archive_write_open2 la.archive_write_open2
#define archive_write_set_bytes_in_last_block la.archive_write_set_bytes_in_last_block
#define archive_write_set_format_pax_restricted la.archive_write_set_format_pax_restricted
#endif

struct cvm_archive {
	struct archive *a;
	char *name;
	char format[64];
	struct cvm_xz *xz;	/* when we decode the xz layer ourselves */
	char decoder[96];
	/* follow mode (cvm_archive_opts.gate) */
	ssize_t (*gate)(void *arg, uint64_t off, size_t want);
	void *gate_arg;
	int fd;
	uint64_t off;
	unsigned char *buf;
	bool zip;		/* a zip (in follow mode, checked once it has all arrived) */
	char *wname;		/* Windows: the entry's name, UTF-8 from its UTF-16 */
};

enum { GATED_BUF = 1 << 20 };

/* libarchive's read callback in follow mode: only what the gate lets through. */
static la_ssize_t gated_read(struct archive *a, void *data, const void **buf)
{
	struct cvm_archive *ar = data;
	ssize_t n = ar->gate(ar->gate_arg, ar->off, GATED_BUF);

	if (n > 0) {
		do
			n = pread(ar->fd, ar->buf, (size_t)n, (off_t)ar->off);
		while (n < 0 && errno == EINTR);
		if (n == 0)
			n = -EIO;	/* shorter than the gate said */
		else if (n < 0)
			n = -errno;
	}
	if (n < 0) {
		archive_set_error(a, (int)-n, "%s", strerror((int)-n));
		return ARCHIVE_FATAL;
	}
	ar->off += (uint64_t)n;
	*buf = ar->buf;
	return n;
}

static int fail(struct cvm_archive *ar, const char *what)
{
	const char *why = archive_error_string(ar->a);

	return cvm_err(-CVM_E_CORRUPT, "corrupt archive '%s': %s: %s", cvm_safe(ar->name), what,
		       cvm_safe(why ? why : "unknown error"));
}

/* libarchive's read callback: the next piece of the tar stream inside the xz. */
static la_ssize_t xz_read(struct archive *a, void *data, const void **buf)
{
	struct cvm_archive *ar = data;
	ssize_t n = cvm_xz_read(ar->xz, buf);

	if (n < 0) {
		archive_set_error(a, n > -CVM_E_FIRST ? (int)-n : EIO, "%s",
				  cvm_xz_strerror(ar->xz));
		return ARCHIVE_FATAL;
	}
	return n;
}

/* The first len bytes of fd, as far as they go; in follow mode as the gate lets them through. */
static ssize_t read_head(int fd, const struct cvm_archive_opts *o, unsigned char *buf, size_t len)
{
	size_t have = 0;
	ssize_t n;

	while (have < len) {
		n = o && o->gate ? o->gate(o->gate_arg, have, len - have) : (ssize_t)(len - have);
		if (n > 0) {
			do
				n = pread(fd, buf + have, (size_t)n, (off_t)have);
			while (n < 0 && errno == EINTR);
			if (n < 0)
				n = -errno;
		}
		if (n < 0)
			return n;
		if (n == 0)
			break;
		have += (size_t)n;
	}
	return (ssize_t)have;
}

/*
 * A zip says what it holds twice: in its central directory (what a reader
 * that seeks, as libarchive does here, takes) and in the local header before
 * each entry's data (what a reader of a stream takes). An archive where the
 * two disagree installs one thing and shows a checker another: it is
 * refused, as is a folder entry carrying data (a reader drops the data).
 */
struct zip_entry {
	const unsigned char *name;
	size_t nlen;
	uint32_t crc;
	uint64_t csize, usize, offset;
	uint16_t flags, method;
};

/* The ZIP64 extra field's values of the fields that are 0xffffffff (usize, csize, offset, in that order). */
static void zip64_extra(const unsigned char *x, size_t len, struct zip_entry *z)
{
	while (len >= 4) {
		size_t n = cvm_le16(x + 2);
		const unsigned char *p = x + 4, *end = x + 4 + n;
		if (n > len - 4)
			return;
		if (cvm_le16(x) == 1) {
			if (z->usize == 0xffffffff && p + 8 <= end) {
				z->usize = cvm_le64(p);
				p += 8;
			}
			if (z->csize == 0xffffffff && p + 8 <= end) {
				z->csize = cvm_le64(p);
				p += 8;
			}
			if (z->offset == 0xffffffff && p + 8 <= end)
				z->offset = cvm_le64(p);
			return;
		}
		x = end;
		len -= 4 + n;
	}
}

static int zip_bad(const char *name, const struct zip_entry *z, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int zip_bad(const char *name, const struct zip_entry *z, const char *fmt, ...)
{
	char what[256], ename[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	snprintf(ename, sizeof(ename), "%.*s", (int)(z->nlen < 1000 ? z->nlen : 1000), z->name);
	return cvm_err(-CVM_E_CORRUPT, "corrupt archive '%s': entry '%s' %s", cvm_safe(name),
		       cvm_safe(ename), what);
}

/* One central directory entry against its local header. 0 or -CVM_E_CORRUPT (printed). */
static int zip_local(int fd, const char *name, const struct zip_entry *c)
{
	unsigned char h[30], *lname = NULL;
	struct zip_entry l = { 0 };
	size_t n, x;
	int r = 0;

	if (cvm_pread(fd, h, sizeof(h), c->offset) != (ssize_t)sizeof(h) || cvm_le32(h) != 0x04034b50)
		return zip_bad(name, c, "has no local header where the central directory says");
	n = cvm_le16(h + 26);
	x = cvm_le16(h + 28);
	lname = malloc(n + x + 1);
	if (!lname)
		return -ENOMEM;
	if (cvm_pread(fd, lname, n + x, c->offset + 30) != (ssize_t)(n + x)) {
		r = zip_bad(name, c, "has a local header cut short");
		goto out;
	}
	l.flags = cvm_le16(h + 6);
	l.method = cvm_le16(h + 8);
	l.crc = cvm_le32(h + 14);
	l.csize = cvm_le32(h + 18);
	l.usize = cvm_le32(h + 22);
	zip64_extra(lname + n, x, &l);
	if (n != c->nlen || memcmp(lname, c->name, n)) {
		char other[1024];
		snprintf(other, sizeof(other), "%.*s", (int)(n < 1000 ? n : 1000), lname);
		r = zip_bad(name, c, "is named '%s' in its local header", cvm_safe(other));
	} else if (l.method != c->method) {
		r = zip_bad(name, c, "is compressed with method %u in the central directory, %u in "
			    "its local header", c->method, l.method);
	} else if (l.flags & 8) {
		/* Sizes and CRC after the data (bit 3): the local header has none to compare. */
	} else if (l.usize != c->usize || l.csize != c->csize) {
		r = zip_bad(name, c, "has %llu bytes (%llu compressed) in the central directory, "
			    "%llu (%llu) in its local header", (unsigned long long)c->usize,
			    (unsigned long long)c->csize, (unsigned long long)l.usize,
			    (unsigned long long)l.csize);
	} else if (l.crc != c->crc) {
		r = zip_bad(name, c, "has CRC-32 %08x in the central directory, %08x in its local "
			    "header", (unsigned)c->crc, (unsigned)l.crc);
	}
out:
	free(lname);
	return r;
}

/* Where the central directory is, from the end record (and ZIP64's). 0, or -CVM_E_CORRUPT. */
static int zip_directory(int fd, uint64_t size, uint64_t *off, uint64_t *len, uint64_t *count)
{
	enum { TAIL = 22 + 0xffff };
	size_t n = size < TAIL ? (size_t)size : TAIL, i;
	unsigned char *tail = malloc(TAIL), z64[56];
	int r = -CVM_E_CORRUPT;

	if (!tail || n < 22 || cvm_pread(fd, tail, n, size - n) != (ssize_t)n)
		goto out;
	for (i = n - 22 + 1; i-- > 0;)
		if (cvm_le32(tail + i) == 0x06054b50)
			break;
	if (i == (size_t)-1)
		goto out;
	*count = cvm_le16(tail + i + 10);
	*len = cvm_le32(tail + i + 12);
	*off = cvm_le32(tail + i + 16);
	r = 0;
	if (*count != 0xffff && *len != 0xffffffff && *off != 0xffffffff)
		goto out;
	/* ZIP64: the locator just before the end record says where its own end record is. */
	r = -CVM_E_CORRUPT;
	if (i < 20 || cvm_le32(tail + i - 20) != 0x07064b50 ||
	    cvm_pread(fd, z64, sizeof(z64), cvm_le64(tail + i - 12)) != (ssize_t)sizeof(z64) ||
	    cvm_le32(z64) != 0x06064b50)
		goto out;
	*count = cvm_le64(z64 + 32);
	*len = cvm_le64(z64 + 40);
	*off = cvm_le64(z64 + 48);
	r = 0;
out:
	free(tail);
	return r;
}

static bool zip_is_dir(const struct zip_entry *z, uint16_t made_by, uint32_t ext)
{
	return (z->nlen && z->name[z->nlen - 1] == '/') ||
	       ((made_by >> 8) == 3 && ((ext >> 16) & 0170000) == 0040000) ||
	       ((made_by >> 8) == 0 && (ext & 0x10));
}

/*
 * Checks a seekable zip's central directory against its local headers.
 * What libarchive finds wrong with the structure itself it says; here only
 * the disagreements. 0, -CVM_E_CORRUPT (printed), -ENOMEM.
 */
static int zip_check(int fd, const char *name, uint64_t size)
{
	uint64_t off, len, count, i;
	unsigned char *cd = NULL;
	size_t at = 0;
	int r = 0;

	if (zip_directory(fd, size, &off, &len, &count) < 0 || off > size || len > size - off)
		return 0;	/* libarchive says what is wrong with it */
	if (len > (64u << 20))
		return cvm_err(-CVM_E_CORRUPT, "corrupt archive '%s': a central directory of %llu "
			       "bytes", cvm_safe(name), (unsigned long long)len);
	cd = malloc(len ? (size_t)len : 1);
	if (!cd)
		return -ENOMEM;
	if (cvm_pread(fd, cd, (size_t)len, off) != (ssize_t)len)
		goto out;
	for (i = 0; i < count && r == 0; i++) {
		struct zip_entry c = { 0 };
		size_t n, x, k;
		if (len - at < 46 || cvm_le32(cd + at) != 0x02014b50)
			break;	/* libarchive's to say */
		n = cvm_le16(cd + at + 28);
		x = cvm_le16(cd + at + 30);
		k = cvm_le16(cd + at + 32);
		if (len - at - 46 < n + x + k)
			break;
		c.flags = cvm_le16(cd + at + 8);
		c.method = cvm_le16(cd + at + 10);
		c.crc = cvm_le32(cd + at + 16);
		c.csize = cvm_le32(cd + at + 20);
		c.usize = cvm_le32(cd + at + 24);
		c.offset = cvm_le32(cd + at + 42);
		c.name = cd + at + 46;
		c.nlen = n;
		zip64_extra(cd + at + 46 + n, x, &c);
		if (zip_is_dir(&c, cvm_le16(cd + at + 4), cvm_le32(cd + at + 38)) && c.usize)
			r = zip_bad(name, &c, "is a folder that carries %llu bytes of data",
				    (unsigned long long)c.usize);
		if (r == 0)
			r = zip_local(fd, name, &c);
		at += 46 + n + x + k;
	}
out:
	free(cd);
	return r;
}

/*
 * After the tar's end, the rest of the xz: what a decoder following a
 * download finds wrong after the last entry (bytes appended, a second
 * stream cut short) fails the archive as it would from a file.
 */
static int xz_end(struct cvm_archive *ar)
{
	const void *buf;
	ssize_t n = 0;

	while (ar->xz && (n = cvm_xz_read(ar->xz, &buf)) > 0)
		;
	if (n < 0)
		return cvm_err((int)n, n == -CVM_E_CORRUPT ? "corrupt archive '%s': %s" :
			       "cannot read '%s': %s", cvm_safe(ar->name), cvm_xz_strerror(ar->xz));
	return 0;
}

/*
 * A zip decoded as it arrived was read by its local headers: once the rest
 * of it (the central directory) is in, the two must agree, as for a file.
 */
static int zip_followed(struct cvm_archive *ar)
{
	uint64_t end = ar->off;
	ssize_t n;

	while ((n = ar->gate(ar->gate_arg, end, GATED_BUF)) > 0)
		end += (uint64_t)n;
	if (n < 0)
		return cvm_err((int)n, "cannot read '%s': %s", cvm_safe(ar->name),
			       cvm_strerror((int)n));
	return zip_check(ar->fd, ar->name, end);
}

/* Starts our own decoder on fd, an .xz file: 0 or an error (said). */
static int open_xz(struct cvm_archive *ar, int fd, const struct cvm_archive_opts *o)
{
	struct cvm_xz_info info;
	struct stat st;
	const char *why = NULL;
	int r;

	if (o && o->gate) {
		r = cvm_xz_follow(fd, o->gate, o->gate_arg, &ar->xz, &why);
	} else {
		if (fstat(fd, &st) < 0)
			return cvm_err(-errno, "cannot read '%s': %s", cvm_safe(ar->name),
				       strerror(errno));
		r = cvm_xz_open(fd, (uint64_t)st.st_size, o && o->threads ? o->threads : 1,
				o ? o->memlimit : 0, &ar->xz, &why);
	}
	if (r == -ENOMEM)
		return r;
	if (r < 0)
		return cvm_err(r == -CVM_E_CORRUPT ? r : -CVM_E_CORRUPT, "corrupt archive '%s': %s",
			       cvm_safe(ar->name), why ? why : cvm_strerror(-r));
	cvm_xz_get_info(ar->xz, &info);
	if (o && o->gate)
		snprintf(ar->decoder, sizeof(ar->decoder),
			 "xz: following the download as it arrives, 1 thread");
	else
		snprintf(ar->decoder, sizeof(ar->decoder),
			 "xz: %llu block%s, %u thread%s, %llu MiB limit",
			 (unsigned long long)info.blocks, info.blocks == 1 ? "" : "s", info.threads,
			 info.threads == 1 ? "" : "s", (unsigned long long)(info.memlimit >> 20));
	return 0;
}

int cvm_archive_open(int fd, const char *name, const struct cvm_archive_opts *o,
		     struct cvm_archive **out)
{
	struct cvm_archive *ar;
	unsigned char head[6];
	ssize_t n;
	int r;

	r = cvm_archive_load();
	if (r < 0)
		return r;
	ar = calloc(1, sizeof(*ar));
	if (!ar)
		return -ENOMEM;
	ar->name = strdup(name);
	ar->a = archive_read_new();
	if (!ar->name || !ar->a) {
		cvm_archive_free(ar);
		return -ENOMEM;
	}
	/* The first bytes, read once: our own xz decoder, or libarchive (a zip checked first). */
	n = read_head(fd, o, head, sizeof(head));
	if (n < 0) {
		r = cvm_err((int)n, "cannot read '%s': %s", cvm_safe(name), cvm_strerror((int)n));
		cvm_archive_free(ar);
		return r;
	}
	ar->zip = n >= 4 && !memcmp(head, "PK\3\4", 4);
	if (cvm_xz_magic(head, (size_t)n)) {
		r = open_xz(ar, fd, o);
		if (r < 0) {
			cvm_archive_free(ar);
			return r;
		}
		/* Inside the xz only a tar stream is accepted, with no further filter. */
		archive_read_support_format_tar(ar->a);
		archive_read_support_format_gnutar(ar->a);
		if (archive_read_open(ar->a, ar, NULL, xz_read, NULL) != ARCHIVE_OK) {
			r = fail(ar, "cannot open");
			cvm_archive_free(ar);
			return r;
		}
		*out = ar;
		return 0;
	}
	/* A zip read from a file: its two directories must agree (one that arrives: zip_followed). */
	if (!(o && o->gate) && ar->zip) {
		struct stat st;
		if (fstat(fd, &st) == 0 && (r = zip_check(fd, name, (uint64_t)st.st_size)) < 0) {
			cvm_archive_free(ar);
			return r;
		}
	}
	/* Only what cuDNN ships: tar.xz (8.3+), tgz (legacy) and zip (Windows). */
	archive_read_support_filter_xz(ar->a);
	archive_read_support_filter_gzip(ar->a);
	/* zstd: cudnnvm's own store bundles (bundle.c). */
	archive_read_support_filter_zstd(ar->a);
	archive_read_support_format_tar(ar->a);
	archive_read_support_format_gnutar(ar->a);
	archive_read_support_format_zip(ar->a);
	if (o && o->gate) {
		ar->gate = o->gate;
		ar->gate_arg = o->gate_arg;
		ar->fd = fd;
		ar->buf = malloc(GATED_BUF);
		snprintf(ar->decoder, sizeof(ar->decoder), "following the download as it arrives");
		if (!ar->buf)
			r = -ENOMEM;
		else if (archive_read_open(ar->a, ar, NULL, gated_read, NULL) != ARCHIVE_OK)
			r = fail(ar, "cannot open");
		if (r < 0) {
			cvm_archive_free(ar);
			return r;
		}
		*out = ar;
		return 0;
	}
	if (lseek(fd, 0, SEEK_SET) < 0) {
		r = cvm_err(-errno, "cannot read '%s': %s", cvm_safe(name), strerror(errno));
		cvm_archive_free(ar);
		return r;
	}
	if (archive_read_open_fd(ar->a, fd, 1 << 20) != ARCHIVE_OK) {
		r = fail(ar, "cannot open");
		cvm_archive_free(ar);
		return r;
	}
	*out = ar;
	return 0;
}

int cvm_archive_open_fd(int fd, const char *name, struct cvm_archive **out)
{
	return cvm_archive_open(fd, name, NULL, out);
}

/*
 * The entry's name as the file layer takes it. On Windows that is UTF-8
 * (made UTF-16 there), from libarchive's UTF-16 form: its locale form is
 * the ANSI code page's, which has no room for most names (日本, ¹).
 */
static const char *entry_name(struct cvm_archive *ar, struct archive_entry *ae)
{
	const char *p;

#ifdef _WIN32
	const wchar_t *w = archive_entry_pathname_w(ae);

	free(ar->wname);
	ar->wname = w ? cvm_utf8(w) : NULL;
	if (ar->wname)
		return ar->wname;
#else
	(void)ar;
#endif
	p = archive_entry_pathname(ae);
	return p ? p : archive_entry_pathname_utf8(ae);
}

/*
 * "./cudnn-.../lib/x" is "cudnn-.../lib/x", as tar reads it: GNU tar writes
 * names so with `tar -C dir -cf x .`. Only the prefix goes ("./" again and
 * again); what follows is the entry rules' to judge ("./../x", ".//etc").
 */
static const char *strip_dot(const char *p)
{
	while (p && p[0] == '.' && p[1] == '/')
		p += 2;
	return p;
}

int cvm_archive_next(struct cvm_archive *ar, struct cvm_entry *e)
{
	struct archive_entry *ae;
	const char *hl, *sl;
	int r;

again:
	r = archive_read_next_header(ar->a, &ae);
	if (r == ARCHIVE_EOF)
		return ar->gate && ar->zip ? (ar->zip = false, zip_followed(ar)) : xz_end(ar);
	if (r != ARCHIVE_OK && r != ARCHIVE_WARN)
		return fail(ar, "cannot read the next entry");
	if (!ar->format[0] && ar->xz)
		snprintf(ar->format, sizeof(ar->format), "%s+xz", archive_format_name(ar->a));
	else if (!ar->format[0])
		snprintf(ar->format, sizeof(ar->format), "%s%s%s", archive_format_name(ar->a),
			 archive_filter_count(ar->a) > 1 ? "+" : "",
			 archive_filter_count(ar->a) > 1 ? archive_filter_name(ar->a, 0) : "");
	memset(e, 0, sizeof(*e));
	e->path = entry_name(ar, ae);
	if (!e->path)
		return cvm_err(-CVM_E_UNSAFE, "unsafe archive '%s': an entry has no readable name",
			       cvm_safe(ar->name));
	e->path = strip_dot(e->path);
	/* "." or "./": the folder the archive was made in, which is the destination itself. */
	if ((!e->path[0] || !strcmp(e->path, ".")) && archive_entry_filetype(ae) == AE_IFDIR &&
	    !archive_entry_hardlink(ae))
		goto again;
	e->mode = archive_entry_perm(ae) & 07777;
	e->size = archive_entry_size_is_set(ae) ? archive_entry_size(ae) : -1;
	hl = archive_entry_hardlink(ae);
	sl = archive_entry_symlink(ae);
	if (hl) {
		e->type = CVM_ENTRY_HARDLINK;
		e->link = strip_dot(hl);
		return 1;
	}
	switch (archive_entry_filetype(ae)) {
	case AE_IFREG:
		e->type = CVM_ENTRY_FILE;
		break;
	case AE_IFDIR:
		e->type = CVM_ENTRY_DIR;
		break;
	case AE_IFLNK:
		e->type = CVM_ENTRY_SYMLINK;
		e->link = sl ? sl : "";
		break;
	default:
		e->type = CVM_ENTRY_OTHER;
		break;
	}
	return 1;
}

ssize_t cvm_archive_read(struct cvm_archive *ar, void *buf, size_t len)
{
	la_ssize_t n = archive_read_data(ar->a, buf, len);

	if (n < 0)
		return fail(ar, "cannot read entry data");
	return n;
}

int cvm_archive_read_block(struct cvm_archive *ar, const void **buf, size_t *len, int64_t *offset)
{
	la_int64_t off = 0;
	int r = archive_read_data_block(ar->a, buf, len, &off);

	if (r == ARCHIVE_EOF)
		return 0;
	if (r != ARCHIVE_OK && r != ARCHIVE_WARN)
		return fail(ar, "cannot read entry data");
	*offset = off;
	return 1;
}

uint64_t cvm_archive_position(struct cvm_archive *ar)
{
	la_int64_t n;

	if (ar->xz)
		return cvm_xz_position(ar->xz);
	n = archive_filter_bytes(ar->a, -1);

	return n > 0 ? (uint64_t)n : 0;
}

const char *cvm_archive_format(struct cvm_archive *ar)
{
	return ar->format;
}

const char *cvm_archive_decoder(struct cvm_archive *ar)
{
	return ar->decoder;
}

void cvm_archive_free(struct cvm_archive *ar)
{
	if (!ar)
		return;
	if (ar->a)
		archive_read_free(ar->a);
	cvm_xz_free(ar->xz);
	free(ar->buf);
	free(ar->wname);
	free(ar->name);
	free(ar);
}

/*
 * Writing (store bundles): pax tar, optionally zstd, into a descriptor,
 * hashing every byte that goes out.
 */
struct cvm_archive_writer {
	struct archive *a;
	int fd;
	char *name;
	struct cvm_sha256 *sha;
	uint64_t bytes;
	int error;		/* -errno of the last failed write */
};

static la_ssize_t writer_write(struct archive *a, void *data, const void *buf, size_t len)
{
	struct cvm_archive_writer *w = data;
	int r = cvm_write_all(w->fd, buf, len);

	if (r == 0)
		r = cvm_sha256_update(w->sha, buf, len);
	if (r < 0) {
		w->error = r;
		archive_set_error(a, -r, "%s", cvm_strerror(-r));
		return -1;
	}
	w->bytes += len;
	return (la_ssize_t)len;
}

static int wfail(struct cvm_archive_writer *w, const char *what)
{
	const char *why = archive_error_string(w->a);

	if (w->error)
		return cvm_err(w->error, "cannot write '%s': %s", cvm_safe(w->name), cvm_strerror(-w->error));
	return cvm_err(-EIO, "cannot write '%s': %s: %s", cvm_safe(w->name), cvm_safe(what),
		       cvm_safe(why ? why : "unknown error"));
}

int cvm_archive_writer_open(int fd, const char *name, bool zstd, struct cvm_archive_writer **out)
{
	struct cvm_archive_writer *w;
	int r;

	r = cvm_archive_load();
	if (r < 0)
		return r;
	w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	w->fd = fd;
	w->name = strdup(name);
	w->sha = cvm_sha256_new();
	w->a = archive_write_new();
	if (!w->name || !w->sha || !w->a) {
		cvm_archive_writer_free(w);
		return -ENOMEM;
	}
	if (archive_write_set_format_pax_restricted(w->a) != ARCHIVE_OK ||
	    (zstd && archive_write_add_filter_zstd(w->a) != ARCHIVE_OK) ||
	    archive_write_set_bytes_in_last_block(w->a, 1) != ARCHIVE_OK ||
	    archive_write_open2(w->a, w, NULL, writer_write, NULL, NULL) != ARCHIVE_OK) {
		r = wfail(w, "cannot start");
		cvm_archive_writer_free(w);
		return r;
	}
	*out = w;
	return 0;
}

/*
 * Names go in as their bytes: this process runs in the C locale, where
 * libarchive can translate no byte above 0x7f to the UTF-8 of a pax header,
 * so it writes such a name as it is, marked hdrcharset=BINARY (with
 * ARCHIVE_WARN), and a reader gets the same bytes back. Its UTF-8 setter
 * would crash its header writer on any name it cannot translate back to the
 * locale, UTF-8 or not (issue 24). 1 when the name is not ASCII (a warning
 * is its due), else 0. On Windows names are UTF-8 (they come from UTF-16)
 * and go in as such, the raw setter reading the ANSI code page: another
 * name is -EILSEQ.
 */
static int set_name(struct archive_entry *e, const char *name, bool link)
{
	bool ascii = true;

	for (const char *p = name; *p && ascii; p++)
		ascii = (unsigned char)*p < 0x80;
	if (CVM_WINDOWS && !cvm_utf8_valid(name))
		return -EILSEQ;
	if (CVM_WINDOWS && link)
		archive_entry_set_symlink_utf8(e, name);
	else if (CVM_WINDOWS)
		archive_entry_set_pathname_utf8(e, name);
	else if (link)
		archive_entry_copy_symlink(e, name);
	else
		archive_entry_copy_pathname(e, name);
	return !ascii;
}

static int header(struct cvm_archive_writer *w, const char *path, unsigned type, unsigned mode,
		  uint64_t size, const char *link, int64_t mtime)
{
	struct archive_entry *e = archive_entry_new();
	int r, raw = 0, k;

	if (!e)
		return -ENOMEM;
	r = raw = set_name(e, path, false);
	if (r >= 0 && link) {
		r = set_name(e, link, true);
		raw |= r;
	}
	if (r < 0) {
		r = cvm_err(r, "cannot write '%s': the name %s%s%s is not UTF-8", cvm_safe(w->name),
			    cvm_safe(path), link ? " -> " : "", link ? cvm_safe(link) : "");
		goto out;
	}
	archive_entry_set_filetype(e, type);
	archive_entry_set_perm(e, mode);
	archive_entry_set_size(e, (la_int64_t)size);
	archive_entry_set_mtime(e, (time_t)mtime, 0);
	/* A name not ASCII gives ARCHIVE_WARN: "cannot translate to UTF-8, written as bytes". */
	k = archive_write_header(w->a, e);
	r = k == ARCHIVE_OK || (raw && k == ARCHIVE_WARN) ? 0 : wfail(w, path);
out:
	archive_entry_free(e);
	return r;
}

int cvm_archive_writer_dir(struct cvm_archive_writer *w, const char *path, int64_t mtime)
{
	return header(w, path, AE_IFDIR, 0755, 0, NULL, mtime);
}

int cvm_archive_writer_link(struct cvm_archive_writer *w, const char *path, const char *target,
			    int64_t mtime)
{
	return header(w, path, AE_IFLNK, 0777, 0, target, mtime);
}

int cvm_archive_writer_data(struct cvm_archive_writer *w, const char *path, unsigned mode,
			    const void *buf, size_t len, int64_t mtime)
{
	int r = header(w, path, AE_IFREG, mode, len, NULL, mtime);

	if (r == 0 && len && archive_write_data(w->a, buf, len) != (la_ssize_t)len)
		r = wfail(w, path);
	return r;
}

int cvm_archive_writer_file(struct cvm_archive_writer *w, const char *path, unsigned mode, int in,
			    uint64_t size, int64_t mtime, uint8_t digest[CVM_SHA256_LEN])
{
	struct cvm_sha256 *sha = cvm_sha256_new();
	size_t cap = 1 << 20;
	char *buf = malloc(cap);
	uint64_t left = size;
	int r;

	if (!sha || !buf) {
		r = -ENOMEM;
		goto out;
	}
	r = header(w, path, AE_IFREG, mode, size, NULL, mtime);
	/* A Ctrl-C (cvm_interrupts_catch) ends a large file early: the caller cleans up. */
	while (r == 0 && left && !cvm_interrupted) {
		ssize_t n = read(in, buf, left < cap ? (size_t)left : cap);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			r = cvm_err(n < 0 ? -errno : -EIO, "cannot read '%s': %s", cvm_safe(path),
				    n < 0 ? strerror(errno) : "it became shorter while it was read");
			break;
		}
		if (archive_write_data(w->a, buf, (size_t)n) != n) {
			r = wfail(w, path);
			break;
		}
		r = cvm_sha256_update(sha, buf, (size_t)n);
		left -= (uint64_t)n;
	}
	if (r == 0 && left)
		r = -EINTR;
	if (r == 0)
		r = cvm_sha256_final(sha, digest);
out:
	cvm_sha256_free(sha);
	free(buf);
	return r;
}

int cvm_archive_writer_close(struct cvm_archive_writer *w, uint8_t digest[CVM_SHA256_LEN],
			     uint64_t *bytes)
{
	if (archive_write_close(w->a) != ARCHIVE_OK)
		return wfail(w, "cannot finish");
	*bytes = w->bytes;
	return cvm_sha256_final(w->sha, digest);
}

void cvm_archive_writer_free(struct cvm_archive_writer *w)
{
	if (!w)
		return;
	if (w->a)
		archive_write_free(w->a);
	cvm_sha256_free(w->sha);
	free(w->name);
	free(w);
}
