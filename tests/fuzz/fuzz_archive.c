/* SPDX-License-Identifier: MIT */
/*
 * An archive from a descriptor, as install reads one: the input is written
 * to a memfd, opened with cvm_archive_open (1 to 3 xz threads, sometimes a
 * memory limit that allows only one, as the input's size decides), and
 * every entry is listed, checked with cvm_entry_check (and, when accepted,
 * against the invariants of fuzz_rules.h) and its data read to the end,
 * with cvm_archive_read or cvm_archive_read_block by turns. This drives
 * xz.c's parallel decoder and libarchive's tar, gnutar and zip readers and
 * gzip filter through archive.c; nothing may crash, hang or leak, whatever
 * the bytes.
 */
#include <errno.h>
#include <sys/mman.h>

#include "fuzz_rules.h"

#include "archive.h"

/* Enough to see past many headers; a decompression bomb stops here. */
#define MAX_ENTRIES 2048
#define MAX_DATA (16u << 20)

static int fd = -1;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	fuzz_quiet();
	fd = memfd_create("cvm-fuzz-archive", MFD_CLOEXEC);
	if (fd < 0) {
		FILE *f = tmpfile();

		if (f)
			fd = fileno(f);
	}
	if (fd < 0)
		abort();
	return 0;
}

static void put(const uint8_t *data, size_t size)
{
	size_t o = 0;

	if (ftruncate(fd, 0) < 0)
		abort();
	while (o < size) {
		ssize_t n = pwrite(fd, data + o, size - o, (off_t)o);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			abort();
		o += (size_t)n;
	}
	/* Not at 0: open_fd must rewind by itself. */
	if (lseek(fd, (off_t)(size / 2), SEEK_SET) < 0)
		abort();
}

/* Reads the entry's data with read_block: pieces in order, within the entry's size. */
static size_t read_blocks(struct cvm_archive *a, const struct cvm_entry *e, size_t room)
{
	int64_t end = 0, off;
	const void *p;
	size_t len, total = 0;
	int r;

	while (total < room && (r = cvm_archive_read_block(a, &p, &len, &off)) > 0) {
		FUZZ_ASSERT(len == 0 || p, "'%s': a block of %zu bytes at NULL", e->path, len);
		FUZZ_ASSERT(off >= end, "'%s': block at %lld after one ending at %lld", e->path,
			    (long long)off, (long long)end);
		if (len)
			(void)((volatile const unsigned char *)p)[len - 1];
		end = off + (int64_t)len;
		total += len;
	}
	return total;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char buf[64 << 10];
	struct cvm_archive_opts o = { .threads = 1 + (unsigned)(size % 3),
				      .memlimit = size % 5 == 0 ? 1u << 20 : 0 };
	struct cvm_entry_state st;
	struct cvm_archive *a = NULL;
	struct cvm_entry e;
	char rel[4096];
	size_t total = 0;
	int i, r;

	put(data, size);
	r = cvm_archive_open(fd, "fuzz.tar.xz", &o, &a);
	if (r < 0) {
		FUZZ_ASSERT(r == -CVM_E_CORRUPT || r == -ENOMEM, "open gave %d", r);
		return 0;
	}
	FUZZ_ASSERT(a, "open succeeded without an archive");
	FUZZ_ASSERT(cvm_archive_decoder(a) != NULL, "no decoder text");
	memset(&st, 0, sizeof(st));
	for (i = 0; i < MAX_ENTRIES && total < MAX_DATA; i++) {
		ssize_t n;

		r = cvm_archive_next(a, &e);
		FUZZ_ASSERT(r == 0 || r == 1 || r == -CVM_E_CORRUPT || r == -CVM_E_UNSAFE,
			    "next gave %d", r);
		if (r <= 0)
			break;
		FUZZ_ASSERT(e.path, "an entry without a name");
		FUZZ_ASSERT(e.type >= CVM_ENTRY_FILE && e.type <= CVM_ENTRY_OTHER, "type %d",
			    (int)e.type);
		if (e.type == CVM_ENTRY_SYMLINK || e.type == CVM_ENTRY_HARDLINK)
			FUZZ_ASSERT(e.link, "'%s': a link without a target", e.path);
		FUZZ_ASSERT(e.size >= -1, "'%s': size %lld", e.path, (long long)e.size);
		/* Bits above 07777 do come through (archive_entry_perm keeps them); type bits never. */
		FUZZ_ASSERT((e.mode & 0170000u) == 0, "'%s': mode %o has type bits", e.path,
			    (unsigned)e.mode);
		FUZZ_ASSERT(cvm_archive_format(a) != NULL, "no format after an entry");

		r = cvm_entry_check(&st, "fuzz.tar.xz", &e, rel, sizeof(rel));
		FUZZ_ASSERT(r == 0 || r == 1 || r == -CVM_E_UNSAFE, "'%s': check gave %d", e.path, r);
		if (r == 0)
			fuzz_assert_accepted(&e, rel);
		/* The data is read whatever the verdict: extract stops, but the reader must not care. */
		if ((i + size) & 1) {
			total += read_blocks(a, &e, MAX_DATA - total);
		} else {
			while (total < MAX_DATA && (n = cvm_archive_read(a, buf, sizeof(buf))) > 0) {
				FUZZ_ASSERT((size_t)n <= sizeof(buf), "read %zd bytes into %zu", n,
					    sizeof(buf));
				total += (size_t)n;
			}
		}
		(void)cvm_archive_position(a);
	}
	(void)cvm_archive_format(a);
	cvm_entry_state_free(&st);
	cvm_archive_free(a);
	return 0;
}
