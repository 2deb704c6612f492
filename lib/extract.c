/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#ifndef _WIN32
#include <dirent.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#endif

#include "alloc.h"
#include "archive.h"
#include "ccgate.h"
#include "confine.h"
#include "cudnn.h"
#include "digest.h"
#include "error.h"
#include "extract.h"
#include "fault.h"
#include "fsutil.h"
#include "out.h"

enum {
	BUFSZ = 1 << 20,	/* the write buffer of a file */
	DIRECT = 256 << 10,	/* pieces this large are written without copying */
	WRITEBACK = 16 << 20,	/* write-back is started every this many bytes of a file */
};

/* What the extraction reports as it goes: a progress bar here, messages in the child. */
struct hooks {
	void (*progress)(void *arg, uint64_t pos);
	void (*first)(void *arg, const char *path);	/* the first entry's name, unchecked */
	void (*file)(void *arg);			/* the first file is written */
	void *arg;
	ssize_t (*gate)(void *arg, uint64_t off, size_t want);	/* follow mode, or NULL */
};

static int unsafe(const char *archive, const char *entry, const char *why)
{
	return cvm_err(-CVM_E_UNSAFE, "unsafe archive '%s': entry '%s': %s", cvm_safe(archive),
		       cvm_safe(entry), why);
}

/* On Windows, names that differ only in case are one file. */
/* On Windows entry.c names the twin first; here are those beyond its case table. */
#define SAME_NAME (CVM_WINDOWS ? "a second entry of the same name (as Windows compares names)" \
			       : "a second entry of the same name")

/* Where the staging folder is, for messages ("No space left" must name the store). */
static char staging_path[4096];

static void note_staging(int dirfd)
{
	if (cvm_fd_path(dirfd, staging_path, sizeof(staging_path)) < 0)
		staging_path[0] = '\0';
}

static int write_error(const char *rel, int r)
{
	return cvm_err(r, "cannot write '%s' in the staging folder '%s': %s", cvm_safe(rel),
		       staging_path[0] ? cvm_safe(staging_path) : "?", cvm_strerror(-r));
}

/*
 * Opens the folder that will hold rel, creating missing folders, never
 * following a symlink: returns its fd and points *leaf at the last part.
 */
static int open_parent(int root, const char *name, const char *rel, const char **leaf)
{
	char buf[4096];
	char *p, *slash;
	size_t len = strlen(rel);
	int fd, next;

	*leaf = rel;
	if (len >= sizeof(buf))
		return unsafe(name, rel, "name too long");
	memcpy(buf, rel, len + 1);
	fd = dup(root);
	if (fd < 0)
		return -errno;
	for (p = buf; (slash = strchr(p, '/')); p = slash + 1) {
		*slash = '\0';
		/* The umask must not make a folder unreadable for other users. */
		int made = mkdirat(fd, p, 0755) == 0 ? 1 : errno == EEXIST ? 0 : -1;
		if (made < 0 || (made && fchmodat(fd, p, 0755, 0) < 0)) {
			int r = write_error(rel, -errno);
			close(fd);
			return r;
		}
		next = openat(fd, p, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (next < 0) {
			int e = errno;
			close(fd);
			if (e == ELOOP || e == ENOTDIR)
				return unsafe(name, rel, "its folder is a symlink or a file");
			return write_error(rel, -e);
		}
		close(fd);
		fd = next;
	}
	*leaf = rel + (p - buf);
	return fd;
}

/* A file being written: data goes out in pieces of BUFSZ, or as it comes when large. */
struct out_file {
	int fd;
	unsigned char *buf;
	size_t n;
	struct cvm_sha256 *sha;
};

static int out_flush(struct out_file *f)
{
	int r = f->n ? cvm_write_all(f->fd, f->buf, f->n) : 0;

	f->n = 0;
	return r;
}

static int out_put(struct out_file *f, const unsigned char *p, size_t len)
{
	int r = cvm_sha256_update(f->sha, p, len);

	while (r == 0 && len) {
		size_t k;
		if (f->n == 0 && len >= DIRECT)
			return cvm_write_all(f->fd, p, len);
		k = BUFSZ - f->n < len ? BUFSZ - f->n : len;
		memcpy(f->buf + f->n, p, k);
		f->n += k;
		p += k;
		len -= k;
		if (f->n == BUFSZ)
			r = out_flush(f);
	}
	return r;
}

/*
 * A library just written is read here, while its pages are in memory, for
 * the checks after the extraction (elfinfo.h): they read nothing again, and
 * the extraction's last file is all that is left to read once it ends. Not
 * on Windows, where inode numbers do not name files (nor is ELF read there).
 * An error other than not-ELF is left for those checks to meet themselves.
 */
static int read_library(int pfd, const char *leaf, int fd, struct cvm_extract *x)
{
	struct cvm_elf_info e;
	struct stat st;
	int r;

	if (CVM_WINDOWS || !cvm_ccgate_reads(leaf) || fstat(fd, &st) < 0)
		return 0;
	r = cvm_elf_read_at(pfd, leaf, &e);
	if (r != 0 && r != -CVM_E_LAYOUT)
		return 0;
	return cvm_elf_cache_add(&x->elf, (uint64_t)st.st_dev, (uint64_t)st.st_ino, r, &e);
}

static int write_file(struct cvm_archive *ar, const char *name, int pfd, const char *leaf,
		      const char *rel, mode_t mode, uint64_t max_bytes, struct cvm_extract *x,
		      unsigned char *buf, const struct hooks *h)
{
	static const unsigned char zeros[64 << 10];
	struct out_file f = { .fd = -1, .buf = buf };
	uint8_t digest[CVM_SHA256_LEN];
	char hex[CVM_SHA256_HEX];
	uint64_t size = 0, synced = 0;
	int r = 0;

	f.fd = openat(pfd, leaf, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
	if (f.fd < 0) {
		if (errno == EEXIST)
			return unsafe(name, rel, SAME_NAME);
		return write_error(rel, -errno);
	}
	f.sha = cvm_sha256_new();
	if (!f.sha) {
		r = -ENOMEM;
		goto out;
	}
	for (;;) {
		const void *p;
		size_t n;
		int64_t off;

		r = cvm_archive_read_block(ar, &p, &n, &off);
		if (r <= 0)
			break;
		r = 0;
		if (off < 0 || (uint64_t)off < size) {
			r = unsafe(name, rel, "its data overlaps itself");
			goto out;
		}
		if ((uint64_t)off - size + n > max_bytes - x->bytes ||
		    x->bytes > max_bytes) {
			r = unsafe(name, rel, "the archive expands beyond a sane size");
			goto out;
		}
		/* A hole of a sparse file is written as zeros, hashed as zeros. */
		while (r == 0 && size < (uint64_t)off) {
			size_t k = (uint64_t)off - size < sizeof(zeros) ? (size_t)((uint64_t)off - size)
								      : sizeof(zeros);
			r = out_put(&f, zeros, k);
			size += k;
			x->bytes += k;
		}
		if (r == 0)
			r = out_put(&f, p, n);
		if (r < 0) {
			if (r != -ENOMEM)
				r = write_error(rel, r);
			goto out;
		}
		size += n;
		x->bytes += n;
		/* Start the write-back as the file grows: the commit's one syncfs then has little to do. */
		if (size - synced >= WRITEBACK) {
			r = out_flush(&f);
			if (r < 0) {
				r = write_error(rel, r);
				goto out;
			}
			cvm_writeback(f.fd, synced, size - synced);
			synced = size;
		}
		if (h->progress)
			h->progress(h->arg, cvm_archive_position(ar));
	}
	if (r < 0)
		goto out;
	r = out_flush(&f);
	/* The umask must not make a file unreadable for other users. */
	if (r == 0 && fchmod(f.fd, mode) < 0)
		r = -errno;
	if (r < 0) {
		r = write_error(rel, r);
		goto out;
	}
	if (size - synced >= BUFSZ)
		cvm_writeback(f.fd, synced, 0);
	/* Where the commit cannot flush the file system at once, each file is flushed here. */
	if (cvm_flush_each_file() && fsync(f.fd) < 0) {
		r = write_error(rel, -errno);
		goto out;
	}
	r = read_library(pfd, leaf, f.fd, x);
	if (r == 0)
		r = cvm_sha256_final(f.sha, digest);
	if (r < 0)
		goto out;
	cvm_hex_encode(digest, sizeof(digest), hex);
	r = cvm_filelist_add(&x->files, rel, NULL, hex, size, mode);
out:
	cvm_sha256_free(f.sha);
	if (f.fd >= 0 && close(f.fd) < 0 && r == 0)
		r = write_error(rel, -errno);
	return r;
}

static int extract(int fd, const char *name, const struct cvm_extract_opts *o, int dirfd,
		   struct cvm_extract *x, const struct hooks *h)
{
	struct cvm_archive_opts ao = { o->jobs, o->memlimit, h->gate, h->arg };
	struct cvm_archive *ar = NULL;
	struct cvm_entry e;
	unsigned char *buf = NULL;
	char rel[4096];
	const char *leaf = NULL;
	int r, pfd = -1;
	bool first_entry = true, first_file = true;

	buf = malloc(BUFSZ);
	if (!buf)
		return -ENOMEM;
	r = cvm_archive_open(fd, name, &ao, &ar);
	if (r < 0)
		goto out;
	snprintf(x->decoder, sizeof(x->decoder), "%s", cvm_archive_decoder(ar));
	while ((r = cvm_archive_next(ar, &e)) > 0) {
		if (!x->format[0])
			snprintf(x->format, sizeof(x->format), "%s", cvm_archive_format(ar));
		if (first_entry) {
			first_entry = false;
			if (h->first)
				h->first(h->arg, e.path);
		}
		r = cvm_entry_check(&x->state, name, &e, rel, sizeof(rel));
		if (r < 0)
			goto out;
		if (r == 1)
			continue;
		pfd = open_parent(dirfd, name, rel, &leaf);
		if (pfd < 0) {
			r = pfd;
			goto out;
		}
		switch (e.type) {
		case CVM_ENTRY_DIR:
			if (mkdirat(pfd, leaf, 0755) == 0) {
				if (fchmodat(pfd, leaf, 0755, 0) < 0) {
					r = write_error(rel, -errno);
					goto out;
				}
			} else {
				struct stat st;
				if (errno != EEXIST) {
					r = write_error(rel, -errno);
					goto out;
				}
				if (fstatat(pfd, leaf, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
				    !S_ISDIR(st.st_mode)) {
					r = unsafe(name, rel, SAME_NAME);
					goto out;
				}
			}
			break;
		case CVM_ENTRY_SYMLINK:
			if (symlinkat(e.link, pfd, leaf) < 0) {
				r = errno == EEXIST ? unsafe(name, rel, SAME_NAME)
						    : write_error(rel, -errno);
				goto out;
			}
			r = cvm_filelist_add(&x->files, rel, e.link, NULL, 0, 0777);
			if (r < 0)
				goto out;
			break;
		default:
			r = write_file(ar, name, pfd, leaf, rel, (e.mode & 0111) ? 0755 : 0644,
				       o->max_bytes, x, buf, h);
			if (r < 0)
				goto out;
			if (first_file) {
				first_file = false;
				if (h->file)
					h->file(h->arg);
			}
			break;
		}
		close(pfd);
		pfd = -1;
	}
	if (r == 0 && !x->state.have_top)
		r = cvm_err(-CVM_E_LAYOUT, "'%s' is empty", cvm_safe(name));
out:
	if (pfd >= 0)
		close(pfd);
	cvm_entry_state_free(&x->state);
	cvm_archive_free(ar);
	free(buf);
	return r;
}

/* ------------------------------------------------------------ in this process */

struct bar {
	struct cvm_progress pr;
	uint64_t last;
};

static void bar_progress(void *arg, uint64_t pos)
{
	struct bar *b = arg;

	if (pos > b->last) {
		cvm_progress_add(&b->pr, pos - b->last);
		b->last = pos;
	}
}

static void fault_extracting(void *arg)
{
	(void)arg;
	cvm_fault("install-extracting");
}

void cvm_extract_release(struct cvm_extract *x)
{
	cvm_filelist_release(&x->files);
	cvm_elf_cache_free(&x->elf);
	memset(x, 0, sizeof(*x));
}

int cvm_extract_run(int fd, const char *name, const struct cvm_extract_opts *o, int dirfd,
		    struct cvm_extract *x)
{
	struct bar b = { .last = 0 };
	struct hooks h = { bar_progress, NULL, fault_extracting, &b, NULL };
	int r;

	note_staging(dirfd);
	cvm_progress_start(&b.pr, "extracting", o->archive_size);
	r = extract(fd, name, o, dirfd, x, &h);
	if (r == 0)
		cvm_progress_end(&b.pr);
	return r;
}

/* A dry run's view of the tree an archive would make: names, kinds, link bodies, headers. */
struct listing {
	struct item { char *rel, *link; enum cvm_entry_type type; } *v;
	size_t n, cap;
	char *header[2];		/* include/cudnn_version.h, include/cudnn.h */
	size_t header_len[2];
};

static const struct item *listing_find(const struct listing *l, const char *rel, size_t len)
{
	for (size_t i = 0; i < l->n; i++)
		if (strlen(l->v[i].rel) == len && !memcmp(l->v[i].rel, rel, len))
			return &l->v[i];
	return NULL;
}

/* The rules the extractor enforces by writing: one entry per name, nothing below a link or file. */
static int listing_add(struct listing *l, const char *name, const char *rel, const struct cvm_entry *e)
{
	const struct item *it = listing_find(l, rel, strlen(rel));
	int r;

	if (it && !(it->type == CVM_ENTRY_DIR && e->type == CVM_ENTRY_DIR))
		return unsafe(name, rel, "a second entry of the same name");
	if (it)
		return 0;
	for (const char *p = strchr(rel, '/'); p; p = strchr(p + 1, '/')) {
		it = listing_find(l, rel, (size_t)(p - rel));
		if (it && it->type != CVM_ENTRY_DIR)
			return unsafe(name, rel, "its folder is a symlink or a file");
	}
	r = CVM_GROW(l->v, l->n + 1, l->cap);
	if (r < 0)
		return r;
	l->v[l->n].rel = strdup(rel);
	l->v[l->n].link = e->link ? strdup(e->link) : NULL;
	l->v[l->n].type = e->type;
	if (!l->v[l->n].rel || (e->link && !l->v[l->n].link)) {
		free(l->v[l->n].rel);
		free(l->v[l->n].link);
		return -ENOMEM;
	}
	l->n++;
	return 0;
}

static void listing_free(struct listing *l)
{
	for (size_t i = 0; i < l->n; i++) {
		free(l->v[i].rel);
		free(l->v[i].link);
	}
	free(l->v);
	free(l->header[0]);
	free(l->header[1]);
}

static int listing_read(void *arg, const char *rel, char **text, size_t *len)
{
	struct listing *l = arg;
	int k = !strcmp(rel, "include/cudnn.h");

	if (!l->header[k] || (!k && strcmp(rel, "include/cudnn_version.h")))
		return -ENOENT;
	*text = strdup(l->header[k]);
	*len = l->header_len[k];
	return *text ? 0 : -ENOMEM;
}

/* A regular file, sibling links followed (what fstatat without AT_SYMLINK_NOFOLLOW sees). */
static bool listing_is_file(void *arg, const char *rel)
{
	const struct listing *l = arg;
	char cur[4096], next[4096];

	snprintf(cur, sizeof(cur), "%s", rel);
	for (int hops = 0; hops < 8; hops++) {
		const struct item *it = listing_find(l, cur, strlen(cur));
		const char *slash = strrchr(cur, '/');
		if (!it || it->type == CVM_ENTRY_DIR)
			return false;
		if (it->type != CVM_ENTRY_SYMLINK)
			return true;
		if (!it->link || strchr(it->link, '/'))
			return false;	/* only a link to a sibling is followed here */
		snprintf(next, sizeof(next), "%.*s%s", slash ? (int)(slash - cur + 1) : 0, cur, it->link);
		memcpy(cur, next, sizeof(cur));
	}
	return false;
}

static bool listing_exists(void *arg, const char *rel)
{
	return listing_find(arg, rel, strlen(rel)) != NULL;
}

/* The first MiB of a header the cuDNN check reads. */
static int keep_header(struct cvm_archive *ar, struct listing *l, const char *rel)
{
	int k = !strcmp(rel, "include/cudnn.h") ? 1 : !strcmp(rel, "include/cudnn_version.h") ? 0 : -1;
	size_t len = 0, cap = 1 << 20;
	char *buf;
	ssize_t n;

	if (k < 0)
		return 0;
	buf = malloc(cap + 1);
	if (!buf)
		return -ENOMEM;
	while (len < cap && (n = cvm_archive_read(ar, buf + len, cap - len)) > 0)
		len += (size_t)n;
	buf[len] = '\0';
	free(l->header[k]);
	l->header[k] = buf;
	l->header_len[k] = len;
	return 0;
}

/* The names in l that are not folders, as cvm_extract_check gives them. */
static int listing_files(struct listing *l, char ***files, size_t *nfiles)
{
	size_t cap = 0;
	int r = 0;

	*files = NULL;
	*nfiles = 0;
	for (size_t i = 0; i < l->n && r == 0; i++) {
		if (l->v[i].type == CVM_ENTRY_DIR)
			continue;
		r = CVM_GROW(*files, *nfiles + 1, cap);
		if (r == 0) {
			(*files)[*nfiles] = l->v[i].rel;
			l->v[i].rel = NULL;
			(*nfiles)++;
		}
	}
	if (r < 0) {
		while (*nfiles)
			free((*files)[--*nfiles]);
		free(*files);
		*files = NULL;
	}
	return r;
}

int cvm_extract_check(int fd, const char *name, const struct cvm_extract_opts *o,
		      struct cvm_cudnn_tree *t, char ***files, size_t *nfiles)
{
	struct cvm_archive_opts ao = { o->jobs, o->memlimit, NULL, NULL };
	struct cvm_entry_state st = { .have_top = false };
	struct listing l = { 0 };
	struct cvm_archive *ar = NULL;
	struct cvm_entry e;
	uint64_t bytes = 0;
	char rel[4096];
	int r;

	r = cvm_archive_open(fd, name, &ao, &ar);
	if (r < 0)
		return r;
	while ((r = cvm_archive_next(ar, &e)) > 0) {
		r = cvm_entry_check(&st, name, &e, rel, sizeof(rel));
		if (r < 0)
			goto out;
		if (r == 1)
			continue;
		r = listing_add(&l, name, rel, &e);
		if (r == 0 && e.type == CVM_ENTRY_FILE)
			r = keep_header(ar, &l, rel);
		if (r < 0)
			goto out;
		bytes += e.size > 0 ? (uint64_t)e.size : 0;
		if (o->max_bytes && bytes > o->max_bytes) {
			r = unsafe(name, rel, "more data than an archive of its size can hold "
				   "(a decompression bomb?)");
			goto out;
		}
	}
	if (r == 0 && !st.have_top)
		r = cvm_err(-CVM_E_LAYOUT, "'%s' is empty", cvm_safe(name));
	if (r == 0) {
		struct cvm_cudnn_src src = { listing_read, listing_is_file, listing_exists, &l };
		r = cvm_cudnn_check_src(&src, name, t);
	}
	if (r == 0 && files)
		r = listing_files(&l, files, nfiles);
out:
	cvm_entry_state_free(&st);
	cvm_archive_free(ar);
	listing_free(&l);
	return r;
}

int cvm_extract_fd(int fd, const char *name, uint64_t archive_size, uint64_t max_bytes,
		   int dirfd, struct cvm_extract *x)
{
	struct cvm_extract_opts o = { archive_size, max_bytes, 1, 0, false };

	return cvm_extract_run(fd, name, &o, dirfd, x);
}

/* ------------------------------------------------------- the speculative child */
#ifndef _WIN32

/*
 * The child's report, on a pipe: records of a type byte, a 32-bit length
 * and that many bytes. 'T' the first entry's name; 'X' the first file is
 * written; 'F' one written object; 'R' the result, last. The parent reads
 * them only after the archive's hash matched, and bounds every length.
 */
enum { MAX_REPORT = 64 << 20, MAX_STRING = 64 << 10 };

struct shared {
	uint64_t pos;		/* progress, written by the child */
	/* follow mode: bytes of the archive the child may read, and whether that is all */
	uint64_t avail;
	uint32_t complete;
};

struct cvm_extract_child {
	pid_t pid;
	int rfd;
	struct shared *sh;
	const char *name;
	unsigned char *buf;
	size_t n, cap;
	size_t done;		/* bytes of buf processed by _wait */
	bool eof;
	bool fault_sent;
};

struct msg {
	unsigned char *p;
	size_t n, cap;
	bool oom;
};

static void put(struct msg *m, const void *d, size_t len)
{
	if (m->oom)
		return;
	if (CVM_GROW(m->p, m->n + len, m->cap) < 0) {
		m->oom = true;
		return;
	}
	memcpy(m->p + m->n, d, len);
	m->n += len;
}

static void put_u32(struct msg *m, uint32_t v)
{
	put(m, &v, sizeof(v));
}

static void put_u64(struct msg *m, uint64_t v)
{
	put(m, &v, sizeof(v));
}

static void put_str(struct msg *m, const char *s)
{
	size_t len = s ? strlen(s) : 0;

	if (len > MAX_STRING)
		len = MAX_STRING;
	put_u32(m, (uint32_t)len);
	put(m, s ? s : "", len);
}

/* Starts a record; end_record fills in its length. */
static size_t begin_record(struct msg *m, char type)
{
	size_t at;

	put(m, &type, 1);
	at = m->n;
	put_u32(m, 0);
	return at;
}

static void end_record(struct msg *m, size_t at)
{
	uint32_t len = (uint32_t)(m->n - at - sizeof(uint32_t));

	if (!m->oom)
		memcpy(m->p + at, &len, sizeof(len));
}

struct child_ctx {
	int wfd;
	struct shared *sh;
	bool first_file;
};

static void send_msg(struct child_ctx *c, struct msg *m)
{
	if (!m->oom && m->n)
		cvm_write_all(c->wfd, m->p, m->n);
	m->n = 0;
}

static void child_first(void *arg, const char *path)
{
	struct child_ctx *c = arg;
	struct msg m = { 0 };
	size_t at = begin_record(&m, 'T');

	put(&m, path, strlen(path) < MAX_STRING ? strlen(path) : MAX_STRING);
	end_record(&m, at);
	send_msg(c, &m);
	free(m.p);
}

static void child_file(void *arg)
{
	struct child_ctx *c = arg;
	struct msg m = { 0 };

	end_record(&m, begin_record(&m, 'X'));
	send_msg(c, &m);
	free(m.p);
	/* The confined process's own crash point (with :stop, a child that hangs). */
	cvm_fault("install-child-extracting");
}

static void child_progress(void *arg, uint64_t pos)
{
	struct child_ctx *c = arg;

	__atomic_store_n(&c->sh->pos, pos, __ATOMIC_RELAXED);
}

/*
 * Follow mode: the child reads only bytes the parent has hashed, and waits
 * for more. The parent raises avail as they arrive and sets complete (after
 * the last avail) once the archive's hash matched; a mismatch kills the child.
 */
static ssize_t child_gate(void *arg, uint64_t off, size_t want)
{
	struct child_ctx *c = arg;
	const struct timespec nap = { 0, 1000000 };

	for (;;) {
		bool complete = __atomic_load_n(&c->sh->complete, __ATOMIC_ACQUIRE);
		uint64_t avail = __atomic_load_n(&c->sh->avail, __ATOMIC_ACQUIRE);

		if (off < avail)
			return (ssize_t)(!want || avail - off < want ? avail - off : want);
		if (complete || !want)
			return 0;
		nanosleep(&nap, NULL);
	}
}

void cvm_extract_child_avail(struct cvm_extract_child *c, uint64_t avail, bool complete)
{
	__atomic_store_n(&c->sh->avail, avail, __ATOMIC_RELEASE);
	if (complete)
		__atomic_store_n(&c->sh->complete, 1, __ATOMIC_RELEASE);
}

/* One library's cvm_elf_known ('L'), which get_known reads. */
static void put_known(struct msg *m, const struct cvm_elf_known *k)
{
	const struct cvm_elf_info *e = &k->e;

	put_u64(m, k->dev);
	put_u64(m, k->ino);
	put_u32(m, (uint32_t)k->r);
	put_str(m, e->soname);
	put_str(m, e->tag);
	put_str(m, e->check_sym);
	put_u64(m, e->check_version);
	put_u32(m, (uint32_t)e->narchs);
	put(m, e->archs, e->narchs * sizeof(e->archs[0]));
	put_u32(m, (uint32_t)e->nptx);
	put(m, e->ptx, e->nptx * sizeof(e->ptx[0]));
	put_u32(m, e->fatbin ? 1 : 0);
	put_u32(m, (uint32_t)e->nneeded);
	for (size_t i = 0; i < e->nneeded; i++)
		put_str(m, e->needed[i]);
	put_u32(m, (uint32_t)e->nloads);
	for (size_t i = 0; i < e->nloads; i++)
		put_str(m, e->loads[i]);
}

static void child_result(struct child_ctx *c, int code, bool unconfined, const struct cvm_extract *x)
{
	const char *why = cvm_err_first();
	struct msg m = { 0 };
	size_t i, at;

	for (i = 0; code == 0 && i < x->elf.n; i++) {
		at = begin_record(&m, 'L');
		put_known(&m, &x->elf.v[i]);
		end_record(&m, at);
	}
	for (i = 0; code == 0 && i < x->files.n; i++) {
		const struct cvm_file *f = &x->files.v[i];
		at = begin_record(&m, 'F');
		put_u64(&m, f->size);
		put_u32(&m, f->mode);
		put_u32(&m, f->link ? 1 : 0);
		put_str(&m, f->path);
		put_str(&m, f->link ? f->link : f->sha256);
		end_record(&m, at);
		if (m.n >= (1 << 20))
			send_msg(c, &m);
	}
	at = begin_record(&m, 'R');
	put_u32(&m, (uint32_t)code);
	put_u32(&m, unconfined ? 1 : 0);
	put_u64(&m, x->bytes);
	put_u32(&m, x->state.have_top ? 1 : 0);
	put_u32(&m, (uint32_t)x->state.layout);
	put_str(&m, x->state.top);
	put_str(&m, x->format);
	put_str(&m, x->decoder);
	put_str(&m, code < 0 && why ? why : "");
	end_record(&m, at);
	send_msg(c, &m);
	free(m.p);
}

#ifdef CVM_FAULT_INJECTION
/*
 * Test builds: CUDNNVM_TEST_ESCAPE=PATH makes the confined child try what
 * it must not be able to do, and report each outcome ('E' records, shown
 * by the parent under -v).
 */
static void report_try(struct child_ctx *c, const char *what, int ok)
{
	char line[256];
	struct msg m = { 0 };
	size_t at = begin_record(&m, 'E');

	snprintf(line, sizeof(line), "%s: %s", what, ok >= 0 ? "allowed" : cvm_strerror(-ok));
	put(&m, line, strlen(line));
	end_record(&m, at);
	send_msg(c, &m);
	free(m.p);
}

static void try_escape(struct child_ctx *c, const char *path)
{
	char *argv[] = { (char *)"/bin/true", NULL };
	int fd, r;
	pid_t p;

	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	report_try(c, "create outside staging", fd < 0 ? -errno : 0);
	if (fd >= 0)
		close(fd);
	fd = open("/etc/hostname", O_RDONLY | O_CLOEXEC);
	report_try(c, "read outside staging", fd < 0 ? -errno : 0);
	if (fd >= 0)
		close(fd);
	fd = (int)syscall(SYS_socket, AF_INET, SOCK_STREAM, 0);
	report_try(c, "socket", fd < 0 ? -errno : 0);
	if (fd >= 0)
		close(fd);
	r = kill(getppid(), 0);
	report_try(c, "signal the parent", r < 0 ? -errno : 0);
	p = (pid_t)syscall(SYS_clone, SIGCHLD, NULL, NULL, NULL, NULL);
	if (p == 0)
		_exit(0);
	report_try(c, "fork", p < 0 ? -errno : 0);
	if (p > 0)
		waitpid(p, NULL, 0);
	r = (int)syscall(SYS_execve, argv[0], argv, NULL);
	report_try(c, "exec", r < 0 ? -errno : 0);
}

/*
 * Test builds: the child is forked from a process of one thread. Beside
 * another, it could inherit a lock that thread held (a sanitizer's
 * allocator has no handler at fork) and wait for it forever; here that
 * order of calls fails every time instead of once in a while.
 */
static void check_one_thread(void)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	int n = 0;

	while (d && (e = readdir(d)))
		n += e->d_name[0] != '.';
	if (d)
		closedir(d);
	if (n > 1) {
		fprintf(stderr, "cudnnvm: internal error: the extraction process would be forked "
			"beside %d other thread%s\n", n - 1, n == 2 ? "" : "s");
		abort();
	}
}
#else
static void check_one_thread(void)
{
}
#endif

static void child_main(int fd, const char *name, const struct cvm_extract_opts *o, int dirfd,
		       int wfd, struct shared *sh, pid_t parent)
{
	struct child_ctx c = { wfd, sh, true };
	struct hooks h = { child_progress, child_first, child_file, &c, o->follow ? child_gate : NULL };
	struct cvm_extract x = { 0 };
	int keep[3] = { fd, dirfd, wfd };
	int r;

	/* It dies with its parent; a parent gone already is not waited for. */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0 || getppid() != parent)
		_exit(1);
	signal(SIGPIPE, SIG_DFL);
#ifdef CVM_FAULT_INJECTION
	const char *escape = getenv("CUDNNVM_TEST_ESCAPE");
#endif

	r = cvm_confine_self(dirfd, keep, 3, o->max_bytes, false);
	if (r < 0) {
		child_result(&c, r, true, &x);
		_exit(0);
	}
#ifdef CVM_FAULT_INJECTION
	if (escape)
		try_escape(&c, escape);
#endif
	r = extract(fd, name, o, dirfd, &x, &h);
	child_result(&c, r, false, &x);
	/* No exit handlers, no flushing of what the parent buffered: the parent owns those. */
	_exit(0);
}

int cvm_extract_spawn(int fd, const char *name, const struct cvm_extract_opts *o, int dirfd,
		      struct cvm_extract_child **out)
{
	struct cvm_extract_child *c;
	int p[2] = { -1, -1 };
	pid_t parent = getpid();
	int r;

	note_staging(dirfd);
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->pid = -1;
	c->rfd = -1;
	c->name = name;
	c->sh = mmap(NULL, sizeof(*c->sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (c->sh == MAP_FAILED) {
		c->sh = NULL;
		r = cvm_err(-errno, "cannot start the extraction: %s", strerror(errno));
		goto fail;
	}
	if (pipe2(p, O_CLOEXEC) < 0) {
		r = cvm_err(-errno, "cannot start the extraction: %s", strerror(errno));
		goto fail;
	}
	/* What the child would otherwise initialise itself, reading files it cannot open. */
	cvm_sha256_free(cvm_sha256_new());
	r = cvm_archive_load();
	if (r < 0)
		goto fail;
	fflush(NULL);
	check_one_thread();
	c->pid = fork();
	if (c->pid < 0) {
		r = cvm_err(-errno, "cannot start the extraction: %s", strerror(errno));
		goto fail;
	}
	if (c->pid == 0) {
		close(p[0]);
		child_main(fd, name, o, dirfd, p[1], c->sh, parent);
	}
	close(p[1]);
	c->rfd = p[0];
	*out = c;
	return 0;
fail:
	if (p[0] >= 0)
		close(p[0]);
	if (p[1] >= 0)
		close(p[1]);
	if (c->sh)
		munmap(c->sh, sizeof(*c->sh));
	free(c);
	return r;
}

uint64_t cvm_extract_child_position(struct cvm_extract_child *c)
{
	return __atomic_load_n(&c->sh->pos, __ATOMIC_RELAXED);
}

bool cvm_extract_child_ended(struct cvm_extract_child *c)
{
	siginfo_t si;

	memset(&si, 0, sizeof(si));
	return c->pid <= 0 || (waitid(P_PID, (id_t)c->pid, &si, WEXITED | WNOHANG | WNOWAIT) == 0 &&
			       si.si_pid != 0);
}

/*
 * Reads more of the report: 1, 0 at its end, or a negative code (printed;
 * -EINTR, not printed, when a signal asked this process to stop: a child
 * that hangs is not waited for then, nor one that the signal did not reach).
 */
static int fill(struct cvm_extract_child *c, void (*tick)(void *arg, uint64_t pos), void *arg)
{
	struct pollfd pfd = { c->rfd, POLLIN, 0 };
	ssize_t n;

	if (c->eof)
		return 0;
	for (;;) {
		int k = poll(&pfd, 1, 100);
		if (cvm_interrupted)
			return -EINTR;
		if (k > 0 || (k < 0 && errno != EINTR))
			break;
		if (tick)
			tick(arg, cvm_extract_child_position(c));
	}
	if (c->n == c->cap) {
		/* Doubled from 64 KiB, so that the report can reach MAX_REPORT and no more. */
		size_t cap = c->cap ? c->cap * 2 : 65536;
		int r;
		if (cap > MAX_REPORT)
			return cvm_err(-CVM_E_CHILD, "the extraction of '%s' reported too much",
				       cvm_safe(c->name));
		r = CVM_GROW(c->buf, cap, c->cap);
		if (r < 0)
			return r;
	}
	do
		n = read(c->rfd, c->buf + c->n, c->cap - c->n);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return cvm_err(-errno, "cannot read the extraction's report: %s", strerror(errno));
	if (n == 0) {
		c->eof = true;
		return 0;
	}
	c->n += (size_t)n;
	return 1;
}

/* The record at *at, if it is complete: 1 with type, payload and length, 0 if not yet. */
static int record_at(const struct cvm_extract_child *c, size_t *at, char *type,
		     const unsigned char **p, uint32_t *len)
{
	uint32_t l;

	if (c->n - *at < 5)
		return 0;
	memcpy(&l, c->buf + *at + 1, sizeof(l));
	if (c->n - *at - 5 < l)
		return 0;
	*type = (char)c->buf[*at];
	*p = c->buf + *at + 5;
	*len = l;
	*at += 5 + (size_t)l;
	return 1;
}

int cvm_extract_child_first(struct cvm_extract_child *c, char *path, size_t len)
{
	size_t at = 0;
	const unsigned char *p;
	uint32_t l;
	char t;
	int r;

	for (;;) {
		while (record_at(c, &at, &t, &p, &l)) {
			if (t == 'T') {
				if (l >= len)
					l = (uint32_t)len - 1;
				memcpy(path, p, l);
				path[l] = '\0';
				return 1;
			}
			if (t == 'R')
				return 0;
		}
		r = fill(c, NULL, NULL);
		if (r <= 0)
			return r;
	}
}

/* A reader of one record's fields; any overrun marks it bad. */
struct rd {
	const unsigned char *p;
	size_t n;
	bool bad;
};

static void get(struct rd *r, void *d, size_t len)
{
	if (r->bad || r->n < len) {
		r->bad = true;
		memset(d, 0, len);
		return;
	}
	memcpy(d, r->p, len);
	r->p += len;
	r->n -= len;
}

static uint32_t get_u32(struct rd *r)
{
	uint32_t v;

	get(r, &v, sizeof(v));
	return v;
}

static uint64_t get_u64(struct rd *r)
{
	uint64_t v;

	get(r, &v, sizeof(v));
	return v;
}

/* A string into buf (NUL-terminated); one longer than len - 1, or holding a NUL, is bad. */
static void get_str(struct rd *r, char *buf, size_t len)
{
	uint32_t l = get_u32(r);

	if (r->bad || l >= len || r->n < l || memchr(r->p, '\0', l)) {
		r->bad = true;
		buf[0] = '\0';
		return;
	}
	memcpy(buf, r->p, l);
	buf[l] = '\0';
	r->p += l;
	r->n -= l;
}

/* An array of at most max unsigned counted by a u32, as put_known wrote it. */
static size_t get_units(struct rd *r, unsigned *v, size_t max)
{
	uint32_t n = get_u32(r);

	if (r->bad || n > max) {
		r->bad = true;
		return 0;
	}
	get(r, v, n * sizeof(v[0]));
	return n;
}

/* At most max names (of elfinfo.h's 64 bytes) counted by a u32. */
static size_t get_names(struct rd *r, char (*v)[64], size_t max)
{
	uint32_t n = get_u32(r);

	if (r->bad || n > max) {
		r->bad = true;
		return 0;
	}
	for (uint32_t i = 0; i < n; i++)
		get_str(r, v[i], sizeof(v[i]));
	return n;
}

static int get_known(struct rd *r, struct cvm_extract *x)
{
	struct cvm_elf_info e;
	uint64_t dev = get_u64(r), ino = get_u64(r);
	int code = (int)get_u32(r);

	memset(&e, 0, sizeof(e));
	get_str(r, e.soname, sizeof(e.soname));
	get_str(r, e.tag, sizeof(e.tag));
	get_str(r, e.check_sym, sizeof(e.check_sym));
	e.check_version = (unsigned long)get_u64(r);
	e.narchs = get_units(r, e.archs, CVM_ELF_MAX_ARCHS);
	e.nptx = get_units(r, e.ptx, CVM_ELF_MAX_ARCHS);
	e.fatbin = get_u32(r) != 0;
	e.nneeded = get_names(r, e.needed, CVM_ELF_MAX_NEEDED);
	e.nloads = get_names(r, e.loads, CVM_ELF_MAX_LOADS);
	if (r->bad || r->n || (code != 0 && code != -CVM_E_LAYOUT))
		return -EPROTO;
	return cvm_elf_cache_add(&x->elf, dev, ino, code, &e);
}

static bool valid_code(int code)
{
	return (code < 0 && code > -4096) || (code <= -CVM_E_FIRST && code > -CVM_E_LAST);
}

static int malformed(struct cvm_extract_child *c)
{
	return cvm_err(-CVM_E_CHILD, "the extraction of '%s' sent a malformed report",
		       cvm_safe(c->name));
}

/* Handles one record for _wait: 1 for the result, 0 for others, negative on error. */
static int take(struct cvm_extract_child *c, char t, const unsigned char *p, uint32_t len,
		struct cvm_extract *x, int *code, bool *unconfined, char *why, size_t wlen)
{
	static char path[4096], link[4096];
	struct rd r = { p, len, false };

	switch (t) {
	case 'T':
		return 0;
	case 'E':
		cvm_verbose("confinement test: %.*s", (int)(len < 200 ? len : 200), (const char *)p);
		return 0;
	case 'X':
		/* The crash point of the in-process extraction, after the first file. */
		cvm_fault("install-extracting");
		return 0;
	case 'L': {
		int k = get_known(&r, x);
		return k == -EPROTO ? malformed(c) : k;
	}
	case 'F': {
		uint64_t size = get_u64(&r);
		uint32_t mode = get_u32(&r), is_link = get_u32(&r);
		get_str(&r, path, sizeof(path));
		get_str(&r, link, sizeof(link));
		if (r.bad || r.n || (!is_link && strlen(link) != CVM_SHA256_HEX - 1))
			return malformed(c);
		return cvm_filelist_add(&x->files, path, is_link ? link : NULL, is_link ? NULL : link,
					size, is_link ? 0777 : (mode & 0755));
	}
	case 'R':
		*code = (int)get_u32(&r);
		*unconfined = get_u32(&r) != 0;
		x->bytes = get_u64(&r);
		x->state.have_top = get_u32(&r) != 0;
		x->state.layout = get_u32(&r) == CVM_LAYOUT_LEGACY ? CVM_LAYOUT_LEGACY
								    : CVM_LAYOUT_NVIDIA;
		get_str(&r, x->state.top, sizeof(x->state.top));
		get_str(&r, x->format, sizeof(x->format));
		get_str(&r, x->decoder, sizeof(x->decoder));
		get_str(&r, why, wlen);
		if (r.bad || r.n || (*code && !valid_code(*code)))
			return malformed(c);
		return 1;
	default:
		return malformed(c);
	}
}

static void reap(struct cvm_extract_child *c, int *status, struct rusage *ru)
{
	pid_t p;

	if (c->rfd >= 0)
		close(c->rfd);
	c->rfd = -1;
	if (c->pid > 0) {
		do
			p = wait4(c->pid, status, 0, ru);
		while (p < 0 && errno == EINTR);
	}
	c->pid = -1;
}

static void child_free(struct cvm_extract_child *c)
{
	if (c->sh)
		munmap(c->sh, sizeof(*c->sh));
	free(c->buf);
	free(c);
}

int cvm_extract_child_wait(struct cvm_extract_child *c, struct cvm_extract *x,
			   void (*tick)(void *arg, uint64_t pos), void *arg)
{
	struct rusage ru;
	char why[1024] = "";
	const unsigned char *p;
	uint32_t len;
	bool have_result = false, unconfined = false;
	int r = 0, code = 0, status = 0;
	char t;

	memset(&ru, 0, sizeof(ru));
	while (!have_result) {
		while (!have_result && record_at(c, &c->done, &t, &p, &len)) {
			r = take(c, t, p, len, x, &code, &unconfined, why, sizeof(why));
			if (r < 0)
				goto out;
			have_result = r == 1;
		}
		if (have_result)
			break;
		r = fill(c, tick, arg);
		if (r < 0)
			goto out;
		if (r == 0)
			break;
	}
	r = 0;
	if (have_result && c->done != c->n) {
		r = malformed(c);
		goto out;
	}
	reap(c, &status, &ru);
	x->child_peak_rss = (uint64_t)ru.ru_maxrss << 10;
	if (!have_result) {
		if (WIFSIGNALED(status))
			r = cvm_err(-CVM_E_CHILD, "the extraction of '%s' was killed by signal %d",
				    cvm_safe(c->name), WTERMSIG(status));
		else
			r = cvm_err(-CVM_E_CHILD, "the extraction of '%s' ended without a result "
				    "(exit status %d)", cvm_safe(c->name), WEXITSTATUS(status));
		goto out;
	}
	if (unconfined) {
		cvm_verbose("the extraction process could not confine itself (%s): extracting here",
			    cvm_strerror(-code));
		r = 1;
		goto out;
	}
	if (code > -CVM_E_FIRST && code < 0) {
		/* Not the archive's fault (a limit of the sandbox?): the caller retries here. */
		cvm_verbose("the confined extraction failed (%s): extracting here", why);
		r = 1;
		goto out;
	}
	if (code < 0)
		r = cvm_err(code, "%s", why[0] ? why : cvm_strerror(code));
out:
	if (c->pid > 0) {
		kill(c->pid, SIGKILL);
		reap(c, &status, NULL);
	}
	child_free(c);
	return r < 0 ? r : r == 1 ? 1 : 0;
}

int cvm_extract_child_kill(struct cvm_extract_child *c)
{
	int status, running = 0;

	if (!c)
		return 0;
	if (c->pid > 0) {
		running = waitpid(c->pid, &status, WNOHANG) == 0;
		if (!running)
			c->pid = -1;
		else
			kill(c->pid, SIGKILL);
	}
	reap(c, &status, NULL);
	child_free(c);
	return running;
}

#else /* _WIN32 */

/*
 * Windows has no confined child yet (no Landlock or seccomp there): the
 * verify-first path is taken (cvm_confine_enough says no), and these are
 * never reached.
 */
int cvm_extract_spawn(int fd, const char *name, const struct cvm_extract_opts *o, int dirfd,
		      struct cvm_extract_child **out)
{
	(void)fd;
	(void)name;
	(void)o;
	(void)dirfd;
	*out = NULL;
	return -EOPNOTSUPP;
}

void cvm_extract_child_avail(struct cvm_extract_child *c, uint64_t avail, bool complete)
{
	(void)c;
	(void)avail;
	(void)complete;
}

uint64_t cvm_extract_child_position(struct cvm_extract_child *c)
{
	(void)c;
	return 0;
}

bool cvm_extract_child_ended(struct cvm_extract_child *c)
{
	(void)c;
	return true;
}

int cvm_extract_child_first(struct cvm_extract_child *c, char *path, size_t len)
{
	(void)c;
	(void)path;
	(void)len;
	return -EOPNOTSUPP;
}

int cvm_extract_child_wait(struct cvm_extract_child *c, struct cvm_extract *x,
			   void (*tick)(void *arg, uint64_t pos), void *arg)
{
	(void)c;
	(void)x;
	(void)tick;
	(void)arg;
	return 1;
}

int cvm_extract_child_kill(struct cvm_extract_child *c)
{
	(void)c;
	return 0;
}
#endif
