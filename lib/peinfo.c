/* SPDX-License-Identifier: MIT */
/*
 * The PE reader (peinfo.h). The layout is Microsoft's "PE Format"
 * specification: the DOS header's e_lfanew points at "PE\0\0", the COFF
 * header (20 bytes), the optional header (its magic 0x10b PE32, 0x20b
 * PE32+; the data directories at its end: 1 the import table, 13 the
 * delay-load import table) and the section table (40 bytes a section). An
 * RVA is found in the file through the section that holds it. Nothing is
 * read but through get(), which checks each piece against the file's
 * length, and every loop has a bound of its own.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include "compat.h"
#include "error.h"
#include "fsutil.h"
#include "le.h"
#include "peinfo.h"

#define MAX_SECTIONS 96		/* the most the Windows loader takes */
#define MAX_DESCRIPTORS 4096	/* import descriptors read per table */
#define CHUNK (1u << 20)	/* .rdata is read this much at a time */
#define OVERLAP 256		/* ... again at the next piece's start: a name is shorter */
#define MAX_RDATA (256u << 20)	/* of .rdata read per section */

struct pe {
	const unsigned char *p;	/* the image in memory, or NULL: read from fd */
	int fd;
	uint64_t len;
	bool plus;
	uint64_t image_base;
	uint32_t size_headers;
	unsigned char sec[MAX_SECTIONS][40];
	size_t nsec;
	const char *const *probes;
	size_t nprobes;
};

/* The n bytes at off into dst; false when any of them is outside the file or unread. */
static bool get(const struct pe *m, uint64_t off, void *dst, size_t n)
{
	if (off > m->len || n > m->len - off)
		return false;
	if (m->p) {
		memcpy(dst, m->p + off, n);
		return true;
	}
	for (size_t done = 0; done < n;) {
		ssize_t got = cvm_pread(m->fd, (char *)dst + done, n - done, off + done);
		if (got <= 0)
			return false;
		done += (size_t)got;
	}
	return true;
}

/* The file offset of rva and how many bytes its section has from there; false when none has it. */
static bool rva_off(const struct pe *m, uint32_t rva, uint64_t *off, uint32_t *avail)
{
	for (size_t i = 0; i < m->nsec; i++) {
		const unsigned char *s = m->sec[i];
		uint32_t vsize = cvm_le32(s + 8), va = cvm_le32(s + 12), raw = cvm_le32(s + 16);
		/* Past its raw data a section is zeros in memory: nothing in the file. */
		uint32_t size = vsize && vsize < raw ? vsize : raw;
		if (rva >= va && rva - va < size) {
			*off = (uint64_t)cvm_le32(s + 20) + (rva - va);
			*avail = size - (rva - va);
			return true;
		}
	}
	if (rva < m->size_headers) {
		*off = rva;
		*avail = m->size_headers - rva;
		return true;
	}
	return false;
}

static bool name_char(unsigned c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
	       c == '-' || c == '.' || c == '+' || c == '~';
}

/* The DLL name at rva into out[64]: false when it is outside, unterminated, too long or odd. */
static bool read_name(const struct pe *m, uint32_t rva, char *out)
{
	unsigned char b[64];
	uint64_t off;
	uint32_t avail;
	size_t n;

	if (!rva_off(m, rva, &off, &avail))
		return false;
	n = avail < sizeof(b) ? avail : sizeof(b);
	if (off <= m->len && n > m->len - off)
		n = (size_t)(m->len - off);
	if (!n || !get(m, off, b, n) || !memchr(b, '\0', n) || !b[0])
		return false;
	for (size_t i = 0; b[i]; i++)
		if (!name_char(b[i]))
			return false;
	memcpy(out, b, strlen((char *)b) + 1);
	return true;
}

/* Adds name to v[max][64] (*n of them) unless it is there (case ignored) or v is full. */
static void add(char (*v)[64], size_t *n, size_t max, const char *name)
{
	for (size_t i = 0; i < *n; i++)
		if (!strcasecmp(v[i], name))
			return;
	if (*n < max)
		memcpy(v[(*n)++], name, strlen(name) + 1);
}

/*
 * One import table: descriptors of size bytes from the directory's rva,
 * the name's RVA at name_at, until one that is all zeros. delay: the
 * delay-load table, whose old form (attribute bit 0 clear) has VAs.
 */
static int read_table(const struct pe *m, uint32_t rva, size_t size, size_t name_at, bool delay,
		      char (*v)[64], size_t *n)
{
	static const unsigned char zero[32];
	unsigned char d[32];
	char name[64];

	for (uint32_t i = 0; rva && i < MAX_DESCRIPTORS; i++) {
		uint64_t off, at = (uint64_t)rva + (uint64_t)i * size;
		uint32_t avail, nrva;
		if (at > UINT32_MAX || !rva_off(m, (uint32_t)at, &off, &avail) || avail < size ||
		    !get(m, off, d, size))
			return -CVM_E_LAYOUT;
		if (!memcmp(d, zero, size))
			break;
		nrva = cvm_le32(d + name_at);
		if (delay && !(cvm_le32(d) & 1) && nrva >= m->image_base)
			nrva = (uint32_t)(nrva - m->image_base);
		if (delay && !nrva)
			break;
		if (!read_name(m, nrva, name))
			return -CVM_E_LAYOUT;
		add(v, n, CVM_PE_MAX_IMPORTS, name);
	}
	return 0;
}

static bool ends_dll(const char *s, size_t n)
{
	return n > 4 && !strncasecmp(s + n - 4, ".dll", 4);
}

/*
 * The name of width w (1 ASCII, 2 UTF-16LE) starting at b[i], if it is a
 * whole string (a NUL before it, one after) that a probe starts: into
 * name[64].
 */
static bool probe_at(const struct pe *m, const unsigned char *b, size_t n, size_t i, size_t w,
		     bool start, char *name)
{
	size_t k = 0;

	if (i == 0 ? !start : i < w || b[i - w] || b[i - 1])
		return false;
	for (; k < 63 && i + k * w + w <= n; k++) {
		const unsigned char *c = b + i + k * w;
		if (!name_char(c[0]) || (w == 2 && c[1]))
			break;
		name[k] = (char)c[0];
	}
	name[k] = '\0';
	if (i + k * w + w > n || b[i + k * w] || (w == 2 && b[i + k * w + 1]) || !ends_dll(name, k))
		return false;
	for (size_t p = 0; p < m->nprobes; p++)
		if (!strncasecmp(name, m->probes[p], strlen(m->probes[p])))
			return true;
	return false;
}

/* The probes' names in b[0..n) (start: b is the section's first byte) into out->loads. */
static void scan(const struct pe *m, const unsigned char *b, size_t n, bool start,
		 const bool *first, struct cvm_pe_info *out)
{
	char name[64];

	for (size_t i = 0; i < n; i++) {
		if (!first[b[i]])
			continue;
		for (size_t w = 1; w <= 2; w++)
			if (probe_at(m, b, n, i, w, start, name))
				add(out->loads, &out->nloads, CVM_PE_MAX_LOADS, name);
	}
}

/* A section's raw data, piece by piece (an overlap between pieces), scanned for the probes. */
static int read_rdata(const struct pe *m, const unsigned char *s, struct cvm_pe_info *out)
{
	uint64_t off = cvm_le32(s + 20), size = cvm_le32(s + 16);
	unsigned char *buf;
	bool first[256] = { 0 };

	for (size_t p = 0; p < m->nprobes; p++) {
		unsigned char c = (unsigned char)m->probes[p][0];
		first[c] = first[c >= 'a' && c <= 'z' ? c - 32 : c >= 'A' && c <= 'Z' ? c + 32 : c] = true;
	}
	if (off > m->len)
		return -CVM_E_LAYOUT;
	if (size > m->len - off)
		size = m->len - off;
	if (size > MAX_RDATA)
		size = MAX_RDATA;
	buf = malloc(CHUNK);
	if (!buf)
		return -ENOMEM;
	for (uint64_t at = 0; at < size;) {
		size_t n = size - at < CHUNK ? (size_t)(size - at) : CHUNK;
		if (!get(m, off + at, buf, n)) {
			free(buf);
			return m->p ? -CVM_E_LAYOUT : -EIO;
		}
		scan(m, buf, n, at == 0, first, out);
		at += n < CHUNK ? n : n - OVERLAP;
	}
	free(buf);
	return 0;
}

/* The headers: machine, kind, image base, the data directories wanted, the section table. */
static int read_headers(struct pe *m, struct cvm_pe_info *out, uint32_t dir[2][2])
{
	unsigned char h[24], o[240] = { 0 };
	uint32_t pe, nsec, optsize, ndirs, dirs_at;

	if (!get(m, 0, h, 2) || h[0] != 'M' || h[1] != 'Z' || !get(m, 0x3c, h, 4))
		return -CVM_E_LAYOUT;
	pe = cvm_le32(h);
	if (!get(m, pe, h, 24) || memcmp(h, "PE\0\0", 4))
		return -CVM_E_LAYOUT;
	out->machine = cvm_le16(h + 4);
	nsec = cvm_le16(h + 6);
	optsize = cvm_le16(h + 20);
	if (nsec > MAX_SECTIONS || optsize < 96 || optsize > sizeof(o) || !get(m, pe + 24u, o, optsize))
		return -CVM_E_LAYOUT;
	if (cvm_le16(o) == 0x20b) {
		m->plus = true;
		m->image_base = (uint64_t)cvm_le32(o + 24) | (uint64_t)cvm_le32(o + 28) << 32;
		ndirs = cvm_le32(o + 108);
		dirs_at = 112;
	} else if (cvm_le16(o) == 0x10b) {
		m->image_base = cvm_le32(o + 28);
		ndirs = cvm_le32(o + 92);
		dirs_at = 96;
	} else {
		return -CVM_E_LAYOUT;
	}
	out->pe32plus = m->plus;
	m->size_headers = cvm_le32(o + 60);
	/* Import (1) and delay-load import (13): only those the header has room and a count for. */
	for (int k = 0; k < 2; k++) {
		uint32_t idx = k ? 13 : 1, at = dirs_at + idx * 8;
		dir[k][0] = dir[k][1] = 0;
		if (idx < ndirs && at + 8 <= optsize) {
			dir[k][0] = cvm_le32(o + at);
			dir[k][1] = cvm_le32(o + at + 4);
		}
	}
	m->nsec = nsec;
	for (size_t i = 0; i < nsec; i++)
		if (!get(m, (uint64_t)pe + 24 + optsize + i * 40, m->sec[i], 40))
			return -CVM_E_LAYOUT;
	return 0;
}

static int parse(struct pe *m, struct cvm_pe_info *out)
{
	uint32_t dir[2][2];
	int r;

	memset(out, 0, sizeof(*out));
	r = read_headers(m, out, dir);
	if (r == 0)
		r = read_table(m, dir[0][0], 20, 12, false, out->imports, &out->nimports);
	if (r == 0)
		r = read_table(m, dir[1][0], 32, 4, true, out->delay, &out->ndelay);
	for (size_t i = 0; r == 0 && m->nprobes && i < m->nsec; i++)
		if (!memcmp(m->sec[i], ".rdata", 6))
			r = read_rdata(m, m->sec[i], out);
	return r;
}

int cvm_pe_parse(const void *buf, size_t len, const char *const *probes, size_t nprobes,
		 struct cvm_pe_info *out)
{
	struct pe *m = calloc(1, sizeof(*m));
	int r;

	if (!m)
		return -ENOMEM;
	m->p = buf;
	m->fd = -1;
	m->len = len;
	m->probes = probes;
	m->nprobes = nprobes;
	r = parse(m, out);
	free(m);
	return r;
}

int cvm_pe_read_at(int dirfd, const char *path, const char *const *probes, size_t nprobes,
		   struct cvm_pe_info *out)
{
	struct pe *m = NULL;
	uint64_t size;
	int fd, r;

	memset(out, 0, sizeof(*out));
	fd = cvm_open_to_parse(dirfd, path, &size);
	if (fd < 0)
		return fd;
	m = calloc(1, sizeof(*m));
	if (!m) {
		r = -ENOMEM;
		goto out;
	}
	m->fd = fd;
	m->len = size;
	m->probes = probes;
	m->nprobes = nprobes;
	r = parse(m, out);
out:
	free(m);
	close(fd);
	return r;
}
