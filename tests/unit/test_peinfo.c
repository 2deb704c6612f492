/* SPDX-License-Identifier: MIT */
/*
 * The PE reader (peinfo.h): a PE32+ image made here byte by byte (import
 * table, delay-load table, names in .rdata in ASCII and UTF-16LE), every
 * truncation of it and hostile headers (refused cleanly, nothing read
 * outside: ASan in check-asan), and, when x86_64-w64-mingw32-gcc is there,
 * real DLLs it builds, read from memory and from the file alike.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <strings.h>
#include <unistd.h>

#include "unit.h"
#include "unit_so.h"

#include "error.h"
#include "fsutil.h"
#include "peinfo.h"

static const char *const probes[] = { "zlibwapi.dll", "nvrtc64_", "cublasLt64_" };
#define NPROBES (sizeof(probes) / sizeof(*probes))

#define IMG 0x400
#define OPT 0x58	/* the optional header */
#define SEC 0x148	/* the section table: OPT + 0xf0 */
#define RAW 0x200	/* .rdata's raw data; its RVA is 0x1000 */

static void put16(unsigned char *b, size_t at, uint32_t v)
{
	b[at] = (unsigned char)v;
	b[at + 1] = (unsigned char)(v >> 8);
}

static void put32(unsigned char *b, size_t at, uint32_t v)
{
	put16(b, at, v & 0xffff);
	put16(b, at + 2, v >> 16);
}

/* The file offset of an RVA of .rdata. */
#define AT(rva) (RAW + (rva) - 0x1000)

/*
 * A PE32+ DLL of one section, .rdata (RVA 0x1000, file 0x200): two imports
 * (KERNEL32.dll, cudart64_12.dll), one delay-load import
 * (cublasLt64_12.dll), "zlibwapi.dll" and L"nvrtc64_120_0.dll" as strings,
 * and strings a probe must not find.
 */
static void make_image(unsigned char *b)
{
	static const char *const strs[][2] = {
		{ "KERNEL32.dll", (const char *)0x1100 }, { "cudart64_12.dll", (const char *)0x1110 },
		{ "cublasLt64_12.dll", (const char *)0x1120 }, { "zlibwapi.dll", (const char *)0x1141 },
		{ "notzlibwapi.dll", (const char *)0x11c1 }, { "zlibwapi.dll.bak", (const char *)0x11e1 },
	};
	static const char wide[] = "nvrtc64_120_0.dll";

	memset(b, 0, IMG);
	b[0] = 'M';
	b[1] = 'Z';
	put32(b, 0x3c, 0x40);
	memcpy(b + 0x40, "PE\0\0", 4);
	put16(b, 0x44, 0x8664);
	put16(b, 0x46, 1);
	put16(b, 0x54, 0xf0);
	put16(b, OPT, 0x20b);
	put32(b, OPT + 24, 0x80000000);
	put32(b, OPT + 28, 1);
	put32(b, OPT + 60, 0x200);
	put32(b, OPT + 108, 16);
	put32(b, OPT + 112 + 8, 0x1000);	/* the import table */
	put32(b, OPT + 112 + 12, 60);
	put32(b, OPT + 112 + 13 * 8, 0x1080);	/* the delay-load table */
	put32(b, OPT + 112 + 13 * 8 + 4, 64);
	memcpy(b + SEC, ".rdata", 6);
	put32(b, SEC + 8, 0x200);
	put32(b, SEC + 12, 0x1000);
	put32(b, SEC + 16, 0x200);
	put32(b, SEC + 20, RAW);
	put32(b, SEC + 36, 0x40000040);
	put32(b, AT(0x1000) + 12, 0x1100);
	put32(b, AT(0x1014) + 12, 0x1110);
	put32(b, AT(0x1080), 1);
	put32(b, AT(0x1080) + 4, 0x1120);
	for (size_t i = 0; i < sizeof(strs) / sizeof(*strs); i++)
		memcpy(b + AT((uintptr_t)strs[i][1]), strs[i][0], strlen(strs[i][0]) + 1);
	for (size_t i = 0; wide[i]; i++)
		b[AT(0x1160) + 2 * i] = (unsigned char)wide[i];
	/* Inside another string: no NUL before it. */
	memcpy(b + AT(0x11a0), "abczlibwapi.dll", 16);
}

static void test_image(void)
{
	unsigned char b[IMG];
	struct cvm_pe_info pi;

	make_image(b);
	CHECK_INT(cvm_pe_parse(b, IMG, probes, NPROBES, &pi), 0, "the made image parses");
	CHECK_INT(pi.machine, 0x8664, "machine x64");
	CHECK(pi.pe32plus, "PE32+");
	CHECK_INT(pi.nimports, 2, "two imports");
	CHECK_STR(pi.imports[0], "KERNEL32.dll", "import 1");
	CHECK_STR(pi.imports[1], "cudart64_12.dll", "import 2");
	CHECK_INT(pi.ndelay, 1, "one delay-load import");
	CHECK_STR(pi.delay[0], "cublasLt64_12.dll", "the delay-load import");
	CHECK_INT(pi.nloads, 3, "three names the probes find in .rdata");
	CHECK_STR(pi.loads[0], "cublasLt64_12.dll", "the delay-load name is a string of .rdata too");
	CHECK_STR(pi.loads[1], "zlibwapi.dll", "an ASCII name");
	CHECK_STR(pi.loads[2], "nvrtc64_120_0.dll", "a UTF-16LE name");
	CHECK_INT(cvm_pe_parse(b, IMG, NULL, 0, &pi), 0, "without probes");
	CHECK_INT(pi.nloads, 0, "without probes, no names");

	/* Every truncation: refused, or read as far as it goes; never outside (ASan). */
	int refused = 0;
	for (size_t n = 0; n < IMG; n++)
		refused += cvm_pe_parse(b, n, probes, NPROBES, &pi) == -CVM_E_LAYOUT;
	CHECK(refused > 0x200, "truncated images are refused (%d of %d)", refused, IMG);
	CHECK_INT(cvm_pe_parse(b, RAW + 0x130, probes, NPROBES, &pi), -CVM_E_LAYOUT,
		  "cut inside the delay-load name: refused");
}

/* One change of the made image, and what the reader must say of it. */
static void hostile(size_t at, uint32_t v, int width, int want, const char *what)
{
	unsigned char b[IMG];
	struct cvm_pe_info pi;

	make_image(b);
	if (width == 2)
		put16(b, at, v);
	else
		put32(b, at, v);
	CHECK_INT(cvm_pe_parse(b, IMG, probes, NPROBES, &pi), want, "%s", what);
}

static void test_hostile(void)
{
	unsigned char b[IMG];
	struct cvm_pe_info pi;

	hostile(0, 'X', 2, -CVM_E_LAYOUT, "no MZ: refused");
	hostile(0x3c, 0xfffffff0, 4, -CVM_E_LAYOUT, "e_lfanew past the end: refused");
	hostile(0x3c, IMG - 4, 4, -CVM_E_LAYOUT, "the COFF header cut by the end: refused");
	hostile(0x40, 0x4551, 4, -CVM_E_LAYOUT, "no PE signature: refused");
	hostile(0x46, 200, 2, -CVM_E_LAYOUT, "200 sections: refused");
	hostile(0x46, 20, 2, -CVM_E_LAYOUT, "a section table past the end: refused");
	hostile(0x54, 16, 2, -CVM_E_LAYOUT, "an optional header too small: refused");
	hostile(OPT, 0x107, 2, -CVM_E_LAYOUT, "an unknown optional header magic: refused");
	hostile(OPT + 112 + 8, 0x7ffffff0, 4, -CVM_E_LAYOUT, "an import table in no section: refused");
	hostile(OPT + 112 + 8, 0x11f0, 4, -CVM_E_LAYOUT, "a descriptor cut by its section's end: refused");
	hostile(AT(0x1000) + 12, 0x5000, 4, -CVM_E_LAYOUT, "an import name in no section: refused");
	hostile(SEC + 20, 0xfffff000, 4, -CVM_E_LAYOUT, "a section's data past the end: refused");
	hostile(SEC + 16, 0xfffff000, 4, 0, "a section said larger than the file: read as far as it goes");
	hostile(AT(0x1100), 0x2f2f2f2f, 4, -CVM_E_LAYOUT, "a name with '/': refused");
	hostile(OPT + 108, 1, 4, 0, "one data directory: the tables are not read");
	/* A name cut by its section's end (no NUL inside the section): refused. */
	make_image(b);
	memcpy(b + AT(0x11fc), "a.dl", 4);
	put32(b, AT(0x1000) + 12, 0x11fc);
	CHECK_INT(cvm_pe_parse(b, IMG, probes, NPROBES, &pi), -CVM_E_LAYOUT,
		  "an import name cut by its section's end: refused");
	/* A name of 64 or more characters has no room: refused as odd, never cut. */
	make_image(b);
	memset(b + AT(0x1100), 'a', 0x80);
	CHECK_INT(cvm_pe_parse(b, IMG, probes, NPROBES, &pi), -CVM_E_LAYOUT, "a name too long: refused");
	/* An old-style delay-load descriptor (attributes 0) names a VA: the image base is taken off. */
	make_image(b);
	put32(b, AT(0x1080), 0);
	put32(b, AT(0x1080) + 4, 0x1120);	/* below the image base: read as an RVA */
	CHECK_INT(cvm_pe_parse(b, IMG, probes, NPROBES, &pi), 0, "an old-style delay-load descriptor");
	CHECK_STR(pi.delay[0], "cublasLt64_12.dll", "its name");
}

/* unit_tmp/NAME.dll from src by mingw, linked with extra: 0, or -1. */
static int mingw_dll(const char *name, const char *src, const char *extra)
{
	char c[400], cmd[1400];

	snprintf(c, sizeof(c), "%s/%s.c", unit_tmp, name);
	if (unit_write(c, src) < 0)
		return -1;
	snprintf(cmd, sizeof(cmd), "cd '%s' && x86_64-w64-mingw32-gcc -shared -O1 -o %s.dll %s.c "
		 "-Wl,--out-implib,lib%s.a %s", unit_tmp, name, name, name, extra);
	return system(cmd) == 0 ? 0 : -1;
}

static bool has(char (*v)[64], size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (!strcasecmp(v[i], name))
			return true;
	return false;
}

static void test_mingw(void)
{
	struct cvm_pe_info f, m;
	char path[400], *buf = NULL;
	size_t len = 0;

	if (system("command -v x86_64-w64-mingw32-gcc >/dev/null 2>&1") != 0) {
		UNIT_SKIP("mingw-built DLLs", "x86_64-w64-mingw32-gcc is absent");
		return;
	}
	if (unit_tmp_make("peinfo") < 0)
		return;
	CHECK(mingw_dll("dep", "__declspec(dllexport) int dep_fn(void) { return 1; }\n", "") == 0,
	      "mingw builds dep.dll");
	CHECK(mingw_dll("top", "#include <windows.h>\n"
			"__declspec(dllimport) int dep_fn(void);\n"
			"__declspec(dllexport) int top_fn(void) {\n"
			"\treturn dep_fn() + !!LoadLibraryA(\"zlibwapi.dll\") +\n"
			"\t\t!!LoadLibraryW(L\"nvrtc64_120_0.dll\");\n}\n", "-L. -ldep") == 0,
	      "mingw builds top.dll, importing dep.dll");
	snprintf(path, sizeof(path), "%s/top.dll", unit_tmp);
	CHECK_INT(cvm_pe_read_at(AT_FDCWD, path, probes, NPROBES, &f), 0, "top.dll read from the file");
	CHECK(has(f.imports, f.nimports, "dep.dll"), "top.dll imports dep.dll");
	CHECK(has(f.imports, f.nimports, "KERNEL32.dll"), "top.dll imports KERNEL32.dll");
	CHECK_INT(f.nloads, 2, "two names loaded by name");
	CHECK(has(f.loads, f.nloads, "zlibwapi.dll"), "LoadLibraryA's zlibwapi.dll");
	CHECK(has(f.loads, f.nloads, "nvrtc64_120_0.dll"), "LoadLibraryW's nvrtc64_120_0.dll");
	CHECK(f.pe32plus && f.machine == 0x8664, "a PE32+ x64 DLL");
	if (cvm_read_file_at(AT_FDCWD, path, 1u << 24, &buf, &len) == 0) {
		CHECK_INT(cvm_pe_parse(buf, len, probes, NPROBES, &m), 0, "top.dll parsed in memory");
		CHECK(!memcmp(&m, &f, sizeof(m)), "the file and memory readings agree");
	}
	free(buf);
	snprintf(path, sizeof(path), "%s/top.c", unit_tmp);
	CHECK_INT(cvm_pe_read_at(AT_FDCWD, path, probes, NPROBES, &f), -CVM_E_LAYOUT, "a C source is no PE");
	CHECK_INT(cvm_pe_read_at(AT_FDCWD, unit_tmp, probes, NPROBES, &f), -CVM_E_LAYOUT,
		  "a folder is no PE");
	snprintf(path, sizeof(path), "%s/none.dll", unit_tmp);
	CHECK_INT(cvm_pe_read_at(AT_FDCWD, path, probes, NPROBES, &f), -ENOENT, "a missing file: -ENOENT");
	unit_tmp_remove();
}

int main(void)
{
	test_image();
	test_hostile();
	test_mingw();
	return unit_done();
}
