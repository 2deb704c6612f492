/* SPDX-License-Identifier: MIT */
/*
 * elfinfo.c, release.c and ccgate.c on small ELF files built here with the C
 * compiler (a soname, a version-check function, a cudnn_version_ string, a
 * .nv_fatbin section in NVIDIA's layout), on every truncation of one of them,
 * and, only when present, on the real cuDNN 9.19 libraries of
 * /usr/local/cuda-13.0 (never required).
 */
#include <dirent.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ccgate.h"
#include "elfinfo.h"
#include "error.h"
#include "release.h"
#include "unit.h"
#include "unit_so.h"

static const char fatbin[] =
	"struct __attribute__((packed)) e { unsigned short kind, ver; unsigned ehs;\n"
	" unsigned long long size; unsigned a, b; unsigned short mi, ma; unsigned arch;\n"
	" unsigned char pad[32]; unsigned char payload[8]; };\n"
	"struct __attribute__((packed)) fb { unsigned magic; unsigned short ver, hs;\n"
	" unsigned long long fs; struct e v[4]; };\n"
	"__attribute__((section(\".nv_fatbin\"), used)) const struct fb fatbin = { 0xBA55ED50u, 1, 16,\n"
	" 4 * sizeof(struct e), { { 2, 0x101, 64, 8, 0, 0, 0, 1, 75, {0}, {0} },\n"
	" { 2, 0x101, 64, 8, 0, 0, 0, 1, 90, {0}, {0} }, { 2, 0x101, 64, 8, 0, 0, 0, 1, 100, {0}, {0} },\n"
	" { 1, 0x101, 64, 8, 0, 0, 9, 1, 90, {0}, {0} } } };\n";

static void test_built(void)
{
	char src[4096], path[512];
	struct cvm_elf_info e;

	snprintf(src, sizeof(src), "#include <stddef.h>\n"
		 "int cudnnCnnVersionCheck(size_t v) { return v == 91400u ? 0 : 3001; }\n"
		 "const char tag[] = \"cudnn_version_9_14_0_64_\";\n%s", fatbin);
	CHECK(unit_build_so("libcudnn_cnn.so.9.19.0", "libcudnn_cnn.so.9", src, "") == 0, "built a library with a fatbin");
	snprintf(path, sizeof(path), "%s/libcudnn_cnn.so.9.19.0", unit_tmp);
	CHECK_INT(cvm_elf_read_at(AT_FDCWD, path, &e), 0, "reads it");
	CHECK_STR(e.soname, "libcudnn_cnn.so.9", "its soname");
	CHECK_STR(e.tag, "9.14.0", "its cudnn_version_ string");
	CHECK_STR(e.check_sym, "cudnnCnnVersionCheck", "the version-check function");
	CHECK_INT(e.check_version, 91400, "its constant");
	CHECK(e.fatbin && e.narchs == 3 && e.archs[0] == 75 && e.archs[1] == 90 && e.archs[2] == 100,
	      "the cubin architectures, sorted");
	CHECK(e.nptx == 1 && e.ptx[0] == 90, "the PTX architecture");

	/* No evidence at all: not an error. */
	CHECK(unit_build_so("libplain.so", "libplain.so.1", "int f(void) { return 1; }\n", "") == 0, "built a plain library");
	snprintf(path, sizeof(path), "%s/libplain.so", unit_tmp);
	CHECK_INT(cvm_elf_read_at(AT_FDCWD, path, &e), 0, "reads a library without evidence");
	CHECK(!e.tag[0] && !e.check_version && !e.fatbin && !e.narchs, "and finds none");

	/* Not ELF, and ELF32. */
	static const unsigned char junk[64] = "#!/bin/sh\n";
	unsigned char elf32[64] = { 0x7f, 'E', 'L', 'F', 1, 1, 1 };
	CHECK_INT(cvm_elf_parse(junk, sizeof(junk), &e), -CVM_E_LAYOUT, "a text file is not ELF");
	CHECK_INT(cvm_elf_parse(elf32, sizeof(elf32), &e), -CVM_E_LAYOUT, "ELF32 is refused");
	CHECK_INT(cvm_elf_parse(junk, 3, &e), -CVM_E_LAYOUT, "3 bytes are not ELF");
}

/* The file offset of the section named name of the ELF file at path (0 when none). */
static long section_offset(const char *path, const char *name, long *size)
{
	Elf64_Ehdr eh;
	Elf64_Shdr sh, str;
	char nm[32];
	long off = 0;
	FILE *f = fopen(path, "rb");

	*size = 0;
	if (!f || fread(&eh, sizeof(eh), 1, f) != 1 ||
	    fseek(f, (long)(eh.e_shoff + eh.e_shstrndx * sizeof(sh)), SEEK_SET) < 0 ||
	    fread(&str, sizeof(str), 1, f) != 1) {
		if (f)
			fclose(f);
		return 0;
	}
	for (unsigned i = 0; i < eh.e_shnum && !off; i++) {
		if (fseek(f, (long)(eh.e_shoff + i * sizeof(sh)), SEEK_SET) < 0 || fread(&sh, sizeof(sh), 1, f) != 1 ||
		    fseek(f, (long)(str.sh_offset + sh.sh_name), SEEK_SET) < 0 || !fgets(nm, sizeof(nm), f))
			break;
		if (!strcmp(nm, name)) {
			off = (long)sh.sh_offset;
			*size = (long)sh.sh_size;
		}
	}
	fclose(f);
	return off;
}

/* Writes s (with its NUL, and a NUL before it) at off of path, or zeros as long. */
static void put_at(const char *path, long off, const char *s, bool zero)
{
	char z[64] = { 0 };
	FILE *f = fopen(path, "r+b");

	if (!f)
		return;
	fseek(f, off - 1, SEEK_SET);
	fwrite(zero ? z : "", 1, 1, f);
	fwrite(zero ? z : s, 1, strlen(s) + 1, f);
	fclose(f);
}

/*
 * A file's .rodata is read in pieces of 256 KiB that overlap by 128 bytes: a
 * version string or a library name at each place around the pieces' edges
 * is found as in one piece (cvm_elf_parse, the bytes in memory).
 */
static void test_pieces(void)
{
	static const char tag[] = "cudnn_version_9_19_0", lib[] = "libnvrtc.so.13";
	static const char *const probes[] = { "libnvrtc.so." };
	static const long edges[] = { 262144, 262016, 524160, 524288 };
	char path[512];
	struct cvm_elf_info e;
	long ro, size, missed_tag = 0, missed_lib = 0, tried = 0;

	CHECK(unit_build_so("libbig.so", "libbig.so.9", "const char big[600000] = { 1 };\n", "") == 0,
	      "built a library with 600 kB of .rodata");
	snprintf(path, sizeof(path), "%s/libbig.so", unit_tmp);
	ro = section_offset(path, ".rodata", &size);
	CHECK(ro > 0 && size > 524288 + 64, "its .rodata at %ld, %ld bytes", ro, size);
	if (ro <= 0 || size <= 524288 + 64)
		return;
	for (size_t k = 0; k < sizeof(edges) / sizeof(edges[0]); k++)
		for (long at = edges[k] - 40; at <= edges[k] + 4; at++) {
			tried++;
			put_at(path, ro + at, tag, false);
			if (cvm_elf_read_at(AT_FDCWD, path, &e) != 0 || strcmp(e.tag, "9.19.0"))
				missed_tag++;
			put_at(path, ro + at, tag, true);
			put_at(path, ro + at, lib, false);
			if (cvm_elf_read_deps(AT_FDCWD, path, probes, 1, &e) != 0 || e.nloads != 1 ||
			    strcmp(e.loads[0], lib))
				missed_lib++;
			put_at(path, ro + at, lib, true);
		}
	CHECK_INT(missed_tag, 0, "the version string at %ld places around the pieces' edges: found at each", tried);
	CHECK_INT(missed_lib, 0, "a library's name at the same places: found at each, once");
}

/* Every prefix of a real file: an error or a result, never a read outside it (ASan). */
static void test_truncations(void)
{
	char path[512];
	unsigned char *buf;
	struct stat st;
	struct cvm_elf_info e;
	size_t bad = 0;
	int fd;

	snprintf(path, sizeof(path), "%s/libcudnn_cnn.so.9.19.0", unit_tmp);
	fd = open(path, O_RDONLY);
	if (fd < 0 || fstat(fd, &st) < 0) {
		CHECK(0, "open the built library");
		return;
	}
	buf = malloc((size_t)st.st_size);
	if (!buf || read(fd, buf, (size_t)st.st_size) != st.st_size) {
		CHECK(0, "read the built library");
		close(fd);
		free(buf);
		return;
	}
	close(fd);
	for (size_t n = 0; n < (size_t)st.st_size; n += 7) {
		/* A copy of exactly n bytes, so that ASan sees a read past it. */
		unsigned char *c = malloc(n ? n : 1);
		memcpy(c, buf, n);
		int r = cvm_elf_parse(c, n, &e);
		if (r != 0 && r != -CVM_E_LAYOUT)
			bad++;
		free(c);
	}
	/* Flipped bytes in the headers. */
	for (size_t i = 0; i < 64 && i < (size_t)st.st_size; i++) {
		unsigned char *c = malloc((size_t)st.st_size);
		memcpy(c, buf, (size_t)st.st_size);
		c[i] ^= 0xff;
		int r = cvm_elf_parse(c, (size_t)st.st_size, &e);
		if (r != 0 && r != -CVM_E_LAYOUT)
			bad++;
		free(c);
	}
	CHECK_INT(bad, 0, "every truncation and header flip gives 0 or -CVM_E_LAYOUT");
	free(buf);
}

static void test_release(void)
{
	char dir[512], path[600], src[1024];
	struct cvm_release_odd *odd = NULL;
	size_t n = 0;
	int fd;

	snprintf(dir, sizeof(dir), "%s/tree", unit_tmp);
	snprintf(path, sizeof(path), "%s/lib", dir);
	mkdir(dir, 0755);
	mkdir(path, 0755);
	snprintf(src, sizeof(src), "#include <stddef.h>\nint cudnnOpsVersionCheck(size_t v) "
		 "{ return v == 91900u ? 0 : 3001; }\n");
	CHECK(unit_build_so("tree/lib/libcudnn_ops.so.9.19.0", "libcudnn_ops.so.9", src, "") == 0, "built a 9.19.0 ops");
	snprintf(src, sizeof(src), "#include <stddef.h>\nint cudnnCnnVersionCheck(size_t v) "
		 "{ return v == 91400u ? 0 : 3001; }\n");
	CHECK(unit_build_so("tree/lib/libcudnn_cnn.so.9.19.0", "libcudnn_cnn.so.9", src, "") == 0, "built a 9.14.0 cnn");
	CHECK(unit_build_so("tree/lib/libcudnn_adv.so.9.14.0", "libcudnn_adv.so.9", "int f(void){return 0;}\n", "") == 0,
	      "built an adv named for 9.14.0");
	CHECK(unit_build_so("tree/lib/libcudnn_graph.so.9.19.0", "libcudnn_graph.so.8", "int f(void){return 0;}\n", "") == 0,
	      "built a graph with an 8.x soname");
	snprintf(path, sizeof(path), "%s/lib/libcudnn_ops.so.9", dir);
	if (symlink("libcudnn_ops.so.9.19.0", path) < 0)
		CHECK(0, "symlink");
	fd = open(dir, O_RDONLY | O_DIRECTORY);
	CHECK_INT(cvm_release_check(fd, "9.19.0", NULL, &odd, &n), 0, "release check runs");
	CHECK_INT(n, 3, "three odd files (the link is not one)");
	if (n == 3) {
		CHECK_STR(odd[0].path, "lib/libcudnn_adv.so.9.14.0", "in name order: adv first");
		CHECK_STR(odd[0].how, "its file name", "adv: by its file name");
		CHECK_STR(odd[1].path, "lib/libcudnn_cnn.so.9.19.0", "then cnn");
		CHECK_STR(odd[1].found, "9.14.0", "cnn carries 9.14.0");
		CHECK_STR(odd[1].how, "cudnnCnnVersionCheck", "by its version check");
		CHECK_STR(odd[2].found, "8", "graph: its soname's major");
	}
	free(odd);
	odd = NULL;
	CHECK_INT(cvm_release_check(fd, "9.14.0", NULL, &odd, &n), 0, "against 9.14.0");
	CHECK(n >= 2, "ops and graph are odd then (%zu)", n);
	free(odd);
	close(fd);
}

/* The answers the extraction noted, by inode (elfcache.c), stand for reading the files. */
static void test_known(void)
{
	struct cvm_elf_cache known = { 0 };
	struct cvm_elf_info e;
	struct cvm_release_odd *odd = NULL;
	struct cvm_archs a;
	struct stat st;
	char dir[512];
	size_t n = 0;
	int fd;

	snprintf(dir, sizeof(dir), "%s/tree", unit_tmp);
	fd = open(dir, O_RDONLY | O_DIRECTORY);
	CHECK(fd >= 0, "the tree of test_release");
	/* cnn as the extraction would have read a 9.19.0 one; graph as not ELF. */
	memset(&e, 0, sizeof(e));
	snprintf(e.soname, sizeof(e.soname), "libcudnn_cnn.so.9");
	snprintf(e.check_sym, sizeof(e.check_sym), "cudnnCnnVersionCheck");
	e.check_version = 91900;
	CHECK_INT(fstatat(fd, "lib/libcudnn_cnn.so.9.19.0", &st, 0), 0, "stat cnn");
	CHECK_INT(cvm_elf_cache_add(&known, st.st_dev, st.st_ino, 0, &e), 0, "noted cnn");
	memset(&e, 0, sizeof(e));
	CHECK_INT(fstatat(fd, "lib/libcudnn_graph.so.9.19.0", &st, 0), 0, "stat graph");
	CHECK_INT(cvm_elf_cache_add(&known, st.st_dev, st.st_ino, -CVM_E_LAYOUT, &e), 0, "noted graph");
	CHECK_INT(cvm_release_check(fd, "9.19.0", &known, &odd, &n), 0, "release check with what was noted");
	CHECK_INT(n, 1, "only adv is odd: cnn and graph were not read again");
	if (n == 1)
		CHECK_STR(odd[0].path, "lib/libcudnn_adv.so.9.14.0", "adv, by its file name");
	free(odd);
	/* ops (through its link too) as carrying sm_80 and sm_90: the gate counts it. */
	memset(&e, 0, sizeof(e));
	e.fatbin = true;
	e.archs[0] = 80;
	e.archs[1] = 90;
	e.narchs = 2;
	CHECK_INT(cvm_ccgate_scan(fd, NULL, &a), 0, "the gate reads the files");
	CHECK(!a.known, "no device code in the files themselves");
	CHECK_INT(fstatat(fd, "lib/libcudnn_ops.so.9.19.0", &st, 0), 0, "stat ops");
	CHECK_INT(cvm_elf_cache_add(&known, st.st_dev, st.st_ino, 0, &e), 0, "noted ops");
	CHECK_INT(cvm_ccgate_scan(fd, &known, &a), 0, "the gate with what was noted");
	CHECK(a.known && a.n == 2 && a.sm[0] == 80 && a.sm[1] == 90 && a.nptx == 0,
	      "sm_80 and sm_90, as noted (known %d, %zu cubins)", a.known, a.n);
	cvm_elf_cache_free(&known);
	CHECK(known.v == NULL && known.n == 0, "freed and cleared");
	close(fd);
}

static void test_gate(void)
{
	struct cvm_archs a = { .known = true, .sm = { 75, 80, 90 }, .n = 3 };
	char why[600];

	CHECK(!cvm_ccgate_check(&a, 91900, 13000, 8, 6, why, sizeof(why)), "sm_80 serves 8.6");
	CHECK(!cvm_ccgate_check(&a, 91900, 13000, 9, 0, why, sizeof(why)), "sm_90 serves 9.0");
	CHECK(cvm_ccgate_check(&a, 91900, 13000, 10, 0, why, sizeof(why)) != NULL, "nothing serves 10.0");
	CHECK(strstr(why, "sm_90") && strstr(why, "no PTX"), "the reason lists what it has: %s", why);
	CHECK(cvm_ccgate_check(&a, 91900, 13000, 7, 0, why, sizeof(why)) != NULL, "7.0 is below sm_75");
	a.ptx[0] = 90;
	a.nptx = 1;
	CHECK(!cvm_ccgate_check(&a, 91900, 13000, 12, 0, why, sizeof(why)), "PTX 90 serves 12.0 (JIT)");
	CHECK(cvm_ccgate_check(&a, 91900, 13000, 8, 0, why, sizeof(why)) == NULL, "sm_80 serves 8.0");
	/* The fallback table (docs/cudnn-facts.md). */
	CHECK(!cvm_ccgate_check(NULL, 90700, 12080, 10, 0, why, sizeof(why)), "table: 9.7.0 for CUDA 12.8 serves 10.0");
	CHECK(!cvm_ccgate_check(NULL, 90700, 12080, 12, 0, why, sizeof(why)), "table: and 12.0");
	CHECK(cvm_ccgate_check(NULL, 90700, 12040, 10, 0, why, sizeof(why)) != NULL, "table: not a CUDA 12.4 build");
	CHECK(cvm_ccgate_check(NULL, 90600, 12080, 10, 0, why, sizeof(why)) != NULL, "table: not 9.6");
	CHECK(cvm_ccgate_check(NULL, 91900, 13000, 7, 0, why, sizeof(why)) != NULL, "table: CUDA 13 builds need 7.5");
	CHECK(cvm_ccgate_check(NULL, 80907, 11080, 4, 0, why, sizeof(why)) != NULL, "table: 5.0 is the floor");
}

/* The real 9.19 libraries, when this machine has them: the reader and the table agree with them. */
static void test_real(void)
{
	static const char *const dir = "/usr/local/cuda-13.0/lib64";
	static const char *const checked[] = { "libcudnn_ops.so.9", "libcudnn_cnn.so.9",
						"libcudnn_adv.so.9", "libcudnn_graph.so.9" };
	static const int ccs[][2] = { { 7, 5 }, { 8, 0 }, { 8, 6 }, { 9, 0 }, { 10, 0 }, { 12, 0 }, { 7, 0 } };
	struct cvm_archs a;
	struct cvm_elf_info e;
	char path[512], why[600];
	int fd;

	snprintf(path, sizeof(path), "%s/libcudnn_cnn.so.9", dir);
	if (access(path, R_OK) < 0) {
		UNIT_SKIP("real cuDNN 9.19 libraries", "%s is absent", path);
		return;
	}
	for (size_t i = 0; i < 4; i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, checked[i]);
		CHECK_INT(cvm_elf_read_at(AT_FDCWD, path, &e), 0, "real %s reads", checked[i]);
		CHECK_INT(e.check_version, 91900, "real %s: %s holds 91900", checked[i], e.check_sym);
	}
	snprintf(path, sizeof(path), "%s/libcudnn_graph.so.9", dir);
	cvm_elf_read_at(AT_FDCWD, path, &e);
	CHECK_STR(e.tag, "9.19.0", "real libcudnn_graph carries cudnn_version_9_19_0");
	fd = open(dir, O_RDONLY | O_DIRECTORY);
	CHECK_INT(cvm_ccgate_scan_dir(fd, &a), 0, "the real libraries' fatbins read");
	close(fd);
	CHECK(a.known && a.n >= 5, "their common cubins: %zu", a.n);
	char have[512];
	cvm_ccgate_format(&a, have, sizeof(have));
	printf("# real 9.19 device code: %s\n", have);
	CHECK(a.nptx >= 1, "with PTX");
	for (size_t i = 0; i < sizeof(ccs) / sizeof(ccs[0]); i++) {
		bool files = !cvm_ccgate_check(&a, 91900, 13000, ccs[i][0], ccs[i][1], why, sizeof(why));
		bool table = !cvm_ccgate_check(NULL, 91900, 13000, ccs[i][0], ccs[i][1], why, sizeof(why));
		CHECK(files == table, "compute capability %d.%d: the files say %s, the table %s",
		      ccs[i][0], ccs[i][1], files ? "served" : "not served", table ? "served" : "not served");
	}
}

int main(void)
{
	if (unit_tmp_make("elfinfo") < 0)
		return 1;
	test_built();
	test_pieces();
	test_truncations();
	test_release();
	test_known();
	test_gate();
	test_real();
	unit_tmp_remove();
	return unit_done();
}
