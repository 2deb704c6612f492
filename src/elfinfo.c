/* SPDX-License-Identifier: MIT */
/* A small, bounds-checked ELF64 reader for what cuDNN libraries carry (elfinfo.h). */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cudnnvm/elfinfo.h"
#include "cudnnvm/error.h"
#include "cudnnvm/fsutil.h"

struct img {
	const unsigned char *p;
	size_t len;
	Elf64_Shdr *sh;		/* a copy of the section headers (aligned) */
	size_t nsh;
	const char *shstr;	/* section name table */
	size_t shstr_len;
	bool mapped;		/* p is a private read-only mapping of the file */
};

/*
 * Gives back the pages of [from, to) of a mapped file once they are read, so
 * that walking a 150 MB .nv_fatbin does not leave it all counted in this
 * process's memory (the page cache keeps it). A buffer that is not a
 * mapping (the fuzzer's, the unit tests') is left alone.
 */
static void done_with(const struct img *m, const unsigned char *from, const unsigned char *to)
{
	long pg = sysconf(_SC_PAGESIZE);
	uintptr_t a, b;

	if (!m->mapped || pg <= 0 || to <= from)
		return;
	a = ((uintptr_t)from + (uintptr_t)pg - 1) & ~((uintptr_t)pg - 1);
	b = (uintptr_t)to & ~((uintptr_t)pg - 1);
	if (b > a)
		(void)madvise((void *)a, b - a, MADV_DONTNEED);
}

/* [off, off+n) inside the image. */
static bool in(const struct img *m, uint64_t off, uint64_t n)
{
	return off <= m->len && n <= m->len - off;
}

static uint16_t u16(const unsigned char *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

static uint32_t u32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t u64(const unsigned char *p)
{
	return (uint64_t)u32(p) | (uint64_t)u32(p + 4) << 32;
}

static const char *sec_name(const struct img *m, const Elf64_Shdr *s)
{
	if (!m->shstr || s->sh_name >= m->shstr_len ||
	    !memchr(m->shstr + s->sh_name, '\0', m->shstr_len - s->sh_name))
		return "";
	return m->shstr + s->sh_name;
}

/* The bytes of a section that has them in the file, or NULL. */
static const unsigned char *sec_data(const struct img *m, const Elf64_Shdr *s)
{
	if (s->sh_type == SHT_NOBITS || !in(m, s->sh_offset, s->sh_size))
		return NULL;
	return m->p + s->sh_offset;
}

/* A NUL-terminated string at off of the string-table section idx, or NULL. */
static const char *str_at(const struct img *m, size_t idx, uint64_t off)
{
	const unsigned char *d;

	if (idx >= m->nsh || !(d = sec_data(m, &m->sh[idx])) || off >= m->sh[idx].sh_size)
		return NULL;
	if (!memchr(d + off, '\0', m->sh[idx].sh_size - off))
		return NULL;
	return (const char *)d + off;
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
static void read_fatbin(const struct img *m, const unsigned char *d, uint64_t len,
			struct cvm_elf_info *out)
{
	uint64_t p = 0, given = 0;

	out->fatbin = true;
	while (p + 16 <= len) {
		if (u32(d + p) != 0xBA55ED50u) {
			p += 8;
			continue;
		}
		uint64_t hs = u16(d + p + 6), fs = u64(d + p + 8);
		if (hs < 16 || hs > len - p || fs > len - p - hs) {
			p += 8;
			continue;
		}
		uint64_t q = p + hs, end = p + hs + fs;
		while (q + 32 <= end) {
			uint16_t kind = u16(d + q);
			uint64_t ehs = u32(d + q + 4), ps = u64(d + q + 8);
			unsigned arch = u32(d + q + 28);
			if (ehs < 32 || ehs > end - q || ps > end - q - ehs)
				break;
			if (arch > 0 && arch < 10000) {
				if (kind == 1)
					add_arch(out->ptx, &out->nptx, arch);
				else if (kind == 2)
					add_arch(out->archs, &out->narchs, arch);
			}
			q += ehs + ps;
			if (q - given >= (8u << 20) && q <= len) {
				done_with(m, d + given, d + q);
				given = q;
			}
		}
		p = (end + 7) & ~(uint64_t)7;
	}
	done_with(m, d + given, d + len);
}

/* "cudnn_version_9_19_0_56_" anywhere in d: "9.19.0". */
static void read_tag(const unsigned char *d, uint64_t len, struct cvm_elf_info *out)
{
	static const char key[] = "cudnn_version_";
	const unsigned char *p = d, *end = d + len;

	while (!out->tag[0] && p < end && (p = memmem(p, (size_t)(end - p), key, sizeof(key) - 1))) {
		unsigned a, b, c;
		int n = 0;
		char s[40];
		size_t k = (size_t)(end - p) < sizeof(s) - 1 ? (size_t)(end - p) : sizeof(s) - 1;
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
		uint32_t v = u32(f + i);
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

static void read_dynsym(const struct img *m, const Elf64_Shdr *s, struct cvm_elf_info *out)
{
	const unsigned char *d = sec_data(m, s);
	uint64_t n;

	if (!d || s->sh_entsize != sizeof(Elf64_Sym))
		return;
	n = s->sh_size / sizeof(Elf64_Sym);
	for (uint64_t i = 0; i < n; i++) {
		Elf64_Sym sym;
		const char *name;
		memcpy(&sym, d + i * sizeof(sym), sizeof(sym));
		if (ELF64_ST_TYPE(sym.st_info) != STT_FUNC || sym.st_shndx == SHN_UNDEF ||
		    sym.st_shndx >= m->nsh || !sym.st_size)
			continue;
		name = str_at(m, s->sh_link, sym.st_name);
		if (!name || strncmp(name, "cudnn", 5) ||
		    (!ends_with(name, "VersionCheck") && strcmp(name, "cudnnGetVersion")))
			continue;
		/* The function's bytes: its section maps st_value to a file offset. */
		const Elf64_Shdr *t = &m->sh[sym.st_shndx];
		const unsigned char *td = sec_data(m, t);
		uint64_t size = sym.st_size > 65536 ? 65536 : sym.st_size;
		if (!td || sym.st_value < t->sh_addr || sym.st_value - t->sh_addr > t->sh_size ||
		    size > t->sh_size - (sym.st_value - t->sh_addr))
			continue;
		unsigned long v = check_constant(td + (sym.st_value - t->sh_addr), size);
		if (!v || v == ULONG_MAX)
			continue;
		/* A VersionCheck is better evidence than cudnnGetVersion; keep the first. */
		if (!out->check_version || (ends_with(name, "VersionCheck") &&
					    !ends_with(out->check_sym, "VersionCheck"))) {
			out->check_version = v;
			snprintf(out->check_sym, sizeof(out->check_sym), "%s", name);
		}
	}
}

static void read_dynamic(const struct img *m, const Elf64_Shdr *s, struct cvm_elf_info *out)
{
	const unsigned char *d = sec_data(m, s);
	uint64_t n;

	if (!d || s->sh_entsize != sizeof(Elf64_Dyn))
		return;
	n = s->sh_size / sizeof(Elf64_Dyn);
	for (uint64_t i = 0; i < n; i++) {
		Elf64_Dyn dyn;
		memcpy(&dyn, d + i * sizeof(dyn), sizeof(dyn));
		if (dyn.d_tag == DT_NULL)
			break;
		if (dyn.d_tag == DT_SONAME) {
			const char *so = str_at(m, s->sh_link, dyn.d_un.d_val);
			if (so)
				snprintf(out->soname, sizeof(out->soname), "%s", so);
		}
	}
}

static int parse(const void *buf, size_t len, bool mapped, struct cvm_elf_info *out)
{
	struct img m = { .p = buf, .len = len, .mapped = mapped };
	Elf64_Ehdr eh;

	memset(out, 0, sizeof(*out));
	if (len < sizeof(eh))
		return -CVM_E_LAYOUT;
	memcpy(&eh, buf, sizeof(eh));
	if (memcmp(eh.e_ident, ELFMAG, SELFMAG) || eh.e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh.e_ident[EI_DATA] != ELFDATA2LSB)
		return -CVM_E_LAYOUT;
	if (eh.e_shnum == 0 || eh.e_shnum >= SHN_LORESERVE)
		return 0;	/* no section headers: nothing to read */
	if (eh.e_shentsize != sizeof(Elf64_Shdr) ||
	    !in(&m, eh.e_shoff, (uint64_t)eh.e_shnum * sizeof(Elf64_Shdr)))
		return -CVM_E_LAYOUT;
	m.nsh = eh.e_shnum;
	m.sh = malloc(m.nsh * sizeof(Elf64_Shdr));
	if (!m.sh)
		return -ENOMEM;
	memcpy(m.sh, m.p + eh.e_shoff, m.nsh * sizeof(Elf64_Shdr));
	if (eh.e_shstrndx < m.nsh && sec_data(&m, &m.sh[eh.e_shstrndx])) {
		m.shstr = (const char *)sec_data(&m, &m.sh[eh.e_shstrndx]);
		m.shstr_len = m.sh[eh.e_shstrndx].sh_size;
	}
	for (size_t i = 0; i < m.nsh; i++) {
		const Elf64_Shdr *s = &m.sh[i];
		const char *name = sec_name(&m, s);
		const unsigned char *d = sec_data(&m, s);
		if (s->sh_type == SHT_DYNSYM)
			read_dynsym(&m, s, out);
		else if (s->sh_type == SHT_DYNAMIC)
			read_dynamic(&m, s, out);
		else if (d && (!strcmp(name, ".nv_fatbin") || !strcmp(name, "__nv_relfatbin")))
			read_fatbin(&m, d, s->sh_size, out);
		else if (d && !strncmp(name, ".rodata", 7))
			read_tag(d, s->sh_size, out);
		if (d)
			done_with(&m, d, d + s->sh_size);
	}
	free(m.sh);
	return 0;
}

int cvm_elf_parse(const void *buf, size_t len, struct cvm_elf_info *out)
{
	return parse(buf, len, false, out);
}

int cvm_elf_read_at(int dirfd, const char *path, struct cvm_elf_info *out)
{
	struct stat st;
	void *map = MAP_FAILED;
	int fd, r;

	memset(out, 0, sizeof(*out));
	fd = cvm_open_regular(dirfd, path, O_RDONLY, 0);
	if (fd < 0)
		return fd == -CVM_E_NOTREG ? -CVM_E_LAYOUT : fd;
	if (fstat(fd, &st) < 0) {
		r = -errno;
		goto out;
	}
	if (!S_ISREG(st.st_mode) || st.st_size < (off_t)sizeof(Elf64_Ehdr)) {
		r = -CVM_E_LAYOUT;
		goto out;
	}
	map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	if (map == MAP_FAILED) {
		r = -errno;
		goto out;
	}
	r = parse(map, (size_t)st.st_size, true, out);
out:
	if (map != MAP_FAILED)
		munmap(map, (size_t)st.st_size);
	close(fd);
	return r;
}

void cvm_elf_version_str(unsigned long v, char *buf, size_t len)
{
	if (v >= 90000)
		snprintf(buf, len, "%lu.%lu.%lu", v / 10000, v / 100 % 100, v % 100);
	else
		snprintf(buf, len, "%lu.%lu.%lu", v / 1000, v / 100 % 10, v % 100);
}
