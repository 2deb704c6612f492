/* SPDX-License-Identifier: MIT */
/* A small, bounds-checked ELF64 reader for what cuDNN libraries carry (elfinfo.h). */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <sys/types.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "elfinfo.h"
#include "error.h"
#include "fsutil.h"
#include "le.h"

/* Bytes of the image: d points into memory, or at own, a copy read from the file. */
struct bytes {
	const unsigned char *d;
	uint64_t len;
	unsigned char *own;
};

/*
 * The image: the bytes in memory (cvm_elf_parse), or a file read with pread
 * (cvm_elf_read_at), never mapped: the few thousand scattered headers of a
 * 250 MB fatbin cost a page fault each when mapped, ten times the time of
 * reading them (bench/RESULTS.md). Either way every read is checked against
 * len, and a file that is shorter than it said reads as out of bounds.
 */
struct img {
	const unsigned char *p;	/* the whole image, or NULL for fd */
	int fd;
	uint64_t len;
	unsigned char win[512];	/* fd: the bytes last read, at win_off (headers are 16-64) */
	uint64_t win_off;
	size_t win_len;
	Elf64_Shdr *sh;		/* a copy of the section headers (aligned) */
	size_t nsh;
	struct bytes shstr;	/* section name table */
	bool deps_only;		/* cvm_elf_read_deps: the dynamic section and .rodata's probes */
	const char *const *probes;
	size_t nprobes;
};

/* [off, off+n) inside the image. */
static bool in(const struct img *m, uint64_t off, uint64_t n)
{
	return off <= m->len && n <= m->len - off;
}

/* n bytes at off (n at most sizeof(m->win)), valid until the next call; NULL outside the image. */
static const unsigned char *peek(struct img *m, uint64_t off, size_t n)
{
	ssize_t got;

	if (n > sizeof(m->win) || !in(m, off, n))
		return NULL;
	if (m->p)
		return m->p + off;
	if (off < m->win_off || off - m->win_off > m->win_len || n > m->win_len - (off - m->win_off)) {
		got = pread(m->fd, m->win, sizeof(m->win), (off_t)off);
		if (got < 0)
			got = 0;
		m->win_off = off;
		m->win_len = (size_t)got;
		if (n > m->win_len)
			return NULL;
	}
	return m->win + (off - m->win_off);
}

/*
 * The n bytes at off as one piece into b: a pointer into memory, or a copy
 * read from the file (at most 64 MiB). false when they are outside the image
 * or cannot be read; bytes_free(b) afterwards either way.
 */
static bool range(const struct img *m, uint64_t off, uint64_t n, struct bytes *b)
{
	size_t done = 0;

	memset(b, 0, sizeof(*b));
	if (!in(m, off, n))
		return false;
	if (m->p) {
		b->d = m->p + off;
		b->len = n;
		return true;
	}
	if (n > (64u << 20) || !(b->own = malloc(n ? (size_t)n : 1)))
		return false;
	while (done < n) {
		ssize_t got = pread(m->fd, b->own + done, (size_t)n - done, (off_t)(off + done));
		if (got <= 0 && !(got < 0 && errno == EINTR))
			return false;
		if (got > 0)
			done += (size_t)got;
	}
	b->d = b->own;
	b->len = n;
	return true;
}

static void bytes_free(struct bytes *b)
{
	free(b->own);
	memset(b, 0, sizeof(*b));
}

static const char *sec_name(const struct img *m, const Elf64_Shdr *s)
{
	const struct bytes *t = &m->shstr;

	if (!t->d || s->sh_name >= t->len || !memchr(t->d + s->sh_name, '\0', t->len - s->sh_name))
		return "";
	return (const char *)t->d + s->sh_name;
}

/* The bytes of a section that has them in the file, into b (bytes_free it); false if none. */
static bool sec_data(const struct img *m, const Elf64_Shdr *s, struct bytes *b)
{
	memset(b, 0, sizeof(*b));
	return s->sh_type != SHT_NOBITS && range(m, s->sh_offset, s->sh_size, b);
}

/* A NUL-terminated string at off of the string table t, or NULL. */
static const char *str_at(const struct bytes *t, uint64_t off)
{
	if (!t->d || off >= t->len || !memchr(t->d + off, '\0', t->len - off))
		return NULL;
	return (const char *)t->d + off;
}

static void add_arch(unsigned *v, size_t *n, unsigned a)
{
	size_t i;

	for (i = 0; i < *n && v[i] < a; i++)
		;
	if ((i < *n && v[i] == a) || *n >= CVM_ELF_MAX_ARCHS)
		return;
	memmove(v + i + 1, v + i, (*n - i) * sizeof(*v));
	v[i] = a;
	(*n)++;
}

/*
 * A fatbin section holds fatbins one after another (8-byte aligned): a
 * 16-byte header (magic 0xBA55ED50, version, header size, payload size) and
 * entries of a header (kind 1 PTX, 2 cubin; header size; payload size; the
 * architecture at offset 28) and a payload.
 */
static void read_fatbin(struct img *m, const Elf64_Shdr *s, struct cvm_elf_info *out)
{
	uint64_t base = s->sh_offset, len = s->sh_size, p = 0;
	const unsigned char *h;

	/* A fatbin section without bytes in the file says nothing. */
	if (s->sh_type == SHT_NOBITS || !in(m, base, len))
		return;
	out->fatbin = true;
	while (p + 16 <= len && (h = peek(m, base + p, 16))) {
		if (cvm_le32(h) != 0xBA55ED50u) {
			p += 8;
			continue;
		}
		uint64_t hs = cvm_le16(h + 6), fs = cvm_le64(h + 8);
		if (hs < 16 || hs > len - p || fs > len - p - hs) {
			p += 8;
			continue;
		}
		uint64_t q = p + hs, end = p + hs + fs;
		while (q + 32 <= end && (h = peek(m, base + q, 32))) {
			uint16_t kind = cvm_le16(h);
			uint64_t ehs = cvm_le32(h + 4), ps = cvm_le64(h + 8);
			unsigned arch = cvm_le32(h + 28);
			if (ehs < 32 || ehs > end - q || ps > end - q - ehs)
				break;
			if (arch > 0 && arch < 10000) {
				if (kind == 1)
					add_arch(out->ptx, &out->nptx, arch);
				else if (kind == 2)
					add_arch(out->archs, &out->narchs, arch);
			}
			q += ehs + ps;
		}
		p = (end + 7) & ~(uint64_t)7;
	}
}

/* "cudnn_version_9_19_0_56_" anywhere in d: "9.19.0". */
/*
 * A piece of a section: the section is read in pieces that overlap by more
 * than the longest string looked for, so that each such string lies whole in
 * one piece; first and last say whether the piece begins or ends the section.
 */
struct piece {
	const unsigned char *d;
	uint64_t len;
	bool first, last;
};

enum { PIECE = 256 << 10, OVERLAP = 128 };

static void read_tag(const struct piece *w, struct cvm_elf_info *out)
{
	static const char key[] = "cudnn_version_";
	const unsigned char *p = w->d, *end = w->d + w->len;
	char s[40];

	while (!out->tag[0] && p < end && (p = memmem(p, (size_t)(end - p), key, sizeof(key) - 1))) {
		unsigned a, b, c;
		int n = 0;
		size_t k = (size_t)(end - p) < sizeof(s) - 1 ? (size_t)(end - p) : sizeof(s) - 1;
		/* Cut short by the piece's end: the next piece holds it whole. */
		if (k < sizeof(s) - 1 && !w->last)
			break;
		memcpy(s, p, k);
		s[k] = '\0';
		if (sscanf(s, "cudnn_version_%u_%u_%u%n", &a, &b, &c, &n) == 3 && n > 0 &&
		    a < 100 && b < 100 && c < 100)
			snprintf(out->tag, sizeof(out->tag), "%u.%u.%u", a, b, c);
		p += sizeof(key) - 1;
	}
}

/*
 * The CUDNN_VERSION a version-check function compares with: a 32-bit
 * immediate in its bytes that reads as a cuDNN 9 version. The bytes are
 * scanned at every offset (no disassembler), so a jump's displacement can
 * look like a number too: only 9.0.0-9.40.9 count (cuDNN 9 minors are below
 * 30, patches below 10). 8.x numbers (8000-8999) are too common as other
 * constants to be evidence. Returns the one candidate, 0 for none, or
 * ULONG_MAX for several different ones.
 */
static unsigned long check_constant(const unsigned char *f, uint64_t n)
{
	unsigned long found = 0;

	for (uint64_t i = 0; i + 4 <= n; i++) {
		uint32_t v = cvm_le32(f + i);
		if (v < 90000 || v > 94009 || v % 100 > 9)
			continue;
		if (found && found != v)
			return ULONG_MAX;
		found = v;
	}
	return found;
}

static bool ends_with(const char *s, const char *suffix)
{
	size_t a = strlen(s), b = strlen(suffix);

	return a >= b && !strcmp(s + a - b, suffix);
}

/* The CUDNN_VERSION constant in the function sym's bytes (check_constant), or 0. */
static unsigned long function_constant(const struct img *m, const Elf64_Sym *sym)
{
	const Elf64_Shdr *t = &m->sh[sym->st_shndx];
	uint64_t size = sym->st_size > 65536 ? 65536 : sym->st_size;
	unsigned long v = 0;
	struct bytes f;

	/* The function's bytes: its section maps st_value to a file offset. */
	if (t->sh_type == SHT_NOBITS || sym->st_value < t->sh_addr ||
	    sym->st_value - t->sh_addr > t->sh_size ||
	    size > t->sh_size - (sym->st_value - t->sh_addr) || !in(m, t->sh_offset, t->sh_size))
		return 0;
	if (range(m, t->sh_offset + (sym->st_value - t->sh_addr), size, &f))
		v = check_constant(f.d, f.len);
	bytes_free(&f);
	return v;
}

static void read_dynsym(const struct img *m, const Elf64_Shdr *s, struct cvm_elf_info *out)
{
	struct bytes d, str = { 0 };
	uint64_t n;

	if (s->sh_entsize != sizeof(Elf64_Sym) || !sec_data(m, s, &d))
		return;
	if (s->sh_link < m->nsh)
		sec_data(m, &m->sh[s->sh_link], &str);
	n = d.len / sizeof(Elf64_Sym);
	for (uint64_t i = 0; i < n; i++) {
		Elf64_Sym sym;
		const char *name;
		unsigned long v;
		memcpy(&sym, d.d + i * sizeof(sym), sizeof(sym));
		if (ELF64_ST_TYPE(sym.st_info) != STT_FUNC || sym.st_shndx == SHN_UNDEF ||
		    sym.st_shndx >= m->nsh || !sym.st_size)
			continue;
		name = str_at(&str, sym.st_name);
		if (!name || strncmp(name, "cudnn", 5) ||
		    (!ends_with(name, "VersionCheck") && strcmp(name, "cudnnGetVersion")))
			continue;
		v = function_constant(m, &sym);
		if (!v || v == ULONG_MAX)
			continue;
		/* A VersionCheck is better evidence than cudnnGetVersion; keep the first. */
		if (!out->check_version || (ends_with(name, "VersionCheck") &&
					    !ends_with(out->check_sym, "VersionCheck"))) {
			out->check_version = v;
			snprintf(out->check_sym, sizeof(out->check_sym), "%s", name);
		}
	}
	bytes_free(&str);
	bytes_free(&d);
}

static void read_dynamic(const struct img *m, const Elf64_Shdr *s, struct cvm_elf_info *out)
{
	struct bytes d, str = { 0 };
	uint64_t n;

	if (s->sh_entsize != sizeof(Elf64_Dyn) || !sec_data(m, s, &d))
		return;
	n = d.len / sizeof(Elf64_Dyn);
	for (uint64_t i = 0; i < n; i++) {
		Elf64_Dyn dyn;
		memcpy(&dyn, d.d + i * sizeof(dyn), sizeof(dyn));
		if (dyn.d_tag == DT_NULL)
			break;
		if (dyn.d_tag != DT_SONAME && dyn.d_tag != DT_NEEDED)
			continue;
		if (!str.d && s->sh_link < m->nsh)
			sec_data(m, &m->sh[s->sh_link], &str);
		const char *so = str_at(&str, dyn.d_un.d_val);
		if (!so)
			continue;
		if (dyn.d_tag == DT_SONAME)
			snprintf(out->soname, sizeof(out->soname), "%s", so);
		else if (out->nneeded < CVM_ELF_MAX_NEEDED && strlen(so) < sizeof(out->needed[0]))
			memcpy(out->needed[out->nneeded++], so, strlen(so) + 1);
	}
	bytes_free(&str);
	bytes_free(&d);
}

/* A library name: what a dlopen string holds, nothing a format or a path has. */
static bool name_char(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '.' || c == '_' || c == '-' || c == '+';
}

/* The probe that the string at p (length n) starts with, or NULL. */
static bool probed(const struct img *m, const unsigned char *p, size_t n)
{
	for (size_t k = 0; k < m->nprobes; k++) {
		size_t pl = strlen(m->probes[k]);
		if (pl && pl <= n && !memcmp(p, m->probes[k], pl))
			return true;
	}
	return false;
}

/*
 * Each whole string of d (NUL before and after) that starts with a probe,
 * into out->loads once: "libnvrtc.so.13" for the probe "libnvrtc.so.". One
 * pass for ".so.", which every probe holds and few other strings do, then
 * back to the string's start: a few MB of .rodata cost one scan.
 */
static void read_loads(const struct img *m, const struct piece *w, struct cvm_elf_info *out)
{
	const unsigned char *d = w->d, *p = d, *end = d + w->len;

	while (p < end && (p = memmem(p, (size_t)(end - p), ".so.", 4))) {
		const unsigned char *b = p, *e = p + 4;
		while (b > d && p - b < 64 && name_char(b[-1]))
			b--;
		while (e < end && name_char(*e))
			e++;
		size_t n = (size_t)(e - b), i;
		/* A string at the piece's start that is not the section's: the piece before holds it. */
		bool whole = (b > d ? b[-1] == '\0' : w->first) && e < end && *e == '\0' &&
			     n < sizeof(out->loads[0]) && probed(m, b, n);
		for (i = 0; whole && i < out->nloads; i++)
			if (strlen(out->loads[i]) == n && !memcmp(out->loads[i], b, n))
				break;
		if (whole && i == out->nloads && out->nloads < CVM_ELF_MAX_LOADS) {
			memcpy(out->loads[out->nloads], b, n);
			out->loads[out->nloads++][n] = '\0';
		}
		p += 4;
	}
}

/* The version string in a .rodata section; with probes, the names loaded by name. */
static void read_rodata(const struct img *m, const Elf64_Shdr *s, struct cvm_elf_info *out)
{
	uint64_t size = s->sh_type == SHT_NOBITS ? 0 : s->sh_size;
	uint64_t step = m->p ? size : PIECE;	/* in memory: one piece */
	struct piece w;
	struct bytes d;

	/* From a file, in pieces: a few MB of .rodata are never held at once. */
	for (uint64_t off = 0; off < size; off += step - OVERLAP) {
		uint64_t len = size - off < step ? size - off : step;
		if (!range(m, s->sh_offset + off, len, &d))
			break;
		w = (struct piece){ d.d, d.len, off == 0, off + len == size };
		if (m->deps_only)
			read_loads(m, &w, out);
		else
			read_tag(&w, out);
		bytes_free(&d);
		if (w.last || (!m->deps_only && out->tag[0]))
			break;
	}
}

static int parse(struct img *m, struct cvm_elf_info *out)
{
	const unsigned char *h;
	Elf64_Ehdr eh;
	int r = 0;

	memset(out, 0, sizeof(*out));
	h = peek(m, 0, sizeof(eh));
	if (!h)
		return -CVM_E_LAYOUT;
	memcpy(&eh, h, sizeof(eh));
	if (memcmp(eh.e_ident, ELFMAG, SELFMAG) || eh.e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh.e_ident[EI_DATA] != ELFDATA2LSB)
		return -CVM_E_LAYOUT;
	if (eh.e_shnum == 0 || eh.e_shnum >= SHN_LORESERVE)
		return 0;	/* no section headers: nothing to read */
	if (eh.e_shentsize != sizeof(Elf64_Shdr) ||
	    !in(m, eh.e_shoff, (uint64_t)eh.e_shnum * sizeof(Elf64_Shdr)))
		return -CVM_E_LAYOUT;
	m->nsh = eh.e_shnum;
	m->sh = malloc(m->nsh * sizeof(Elf64_Shdr));
	if (!m->sh)
		return -ENOMEM;
	struct bytes shdrs;
	if (!range(m, eh.e_shoff, m->nsh * sizeof(Elf64_Shdr), &shdrs)) {
		r = m->p ? -CVM_E_LAYOUT : -EIO;
		goto out;
	}
	memcpy(m->sh, shdrs.d, m->nsh * sizeof(Elf64_Shdr));
	bytes_free(&shdrs);
	if (eh.e_shstrndx < m->nsh)
		sec_data(m, &m->sh[eh.e_shstrndx], &m->shstr);
	for (size_t i = 0; i < m->nsh; i++) {
		const Elf64_Shdr *s = &m->sh[i];
		const char *name = sec_name(m, s);
		if (s->sh_type == SHT_DYNAMIC)
			read_dynamic(m, s, out);
		else if (!strncmp(name, ".rodata", 7) && (!m->deps_only || m->nprobes))
			read_rodata(m, s, out);
		else if (m->deps_only)
			continue;
		else if (s->sh_type == SHT_DYNSYM)
			read_dynsym(m, s, out);
		else if (!strcmp(name, ".nv_fatbin") || !strcmp(name, "__nv_relfatbin"))
			read_fatbin(m, s, out);
	}
out:
	bytes_free(&m->shstr);
	free(m->sh);
	return r;
}

int cvm_elf_parse(const void *buf, size_t len, struct cvm_elf_info *out)
{
	struct img m = { .p = buf, .fd = -1, .len = len };

	return parse(&m, out);
}

/* Reads the file path (relative to dirfd) into out, with m's choices (deps_only, probes). */
static int read_file(int dirfd, const char *path, struct img *m, struct cvm_elf_info *out)
{
	int r;

	memset(out, 0, sizeof(*out));
	m->fd = cvm_open_to_parse(dirfd, path, &m->len);
	if (m->fd < 0)
		return m->fd;
	r = m->len < sizeof(Elf64_Ehdr) ? -CVM_E_LAYOUT : parse(m, out);
	close(m->fd);
	return r;
}

int cvm_elf_read_at(int dirfd, const char *path, struct cvm_elf_info *out)
{
	struct img m = { .fd = -1 };

	return read_file(dirfd, path, &m, out);
}

int cvm_elf_read_deps(int dirfd, const char *path, const char *const *probes, size_t nprobes,
		      struct cvm_elf_info *out)
{
	struct img m = { .fd = -1, .deps_only = true, .probes = probes, .nprobes = nprobes };

	return read_file(dirfd, path, &m, out);
}

void cvm_elf_version_str(unsigned long v, char *buf, size_t len)
{
	if (v >= 90000)
		snprintf(buf, len, "%lu.%lu.%lu", v / 10000, v / 100 % 100, v % 100);
	else
		snprintf(buf, len, "%lu.%lu.%lu", v / 1000, v / 100 % 10, v % 100);
}
