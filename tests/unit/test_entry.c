/* SPDX-License-Identifier: MIT */
/* The pure parts of install: entry rules, hex, header macros, store ids. */
#include <stdlib.h>
#include <string.h>

#include "cudnn.h"
#include "digest.h"
#include "entry.h"
#include "error.h"
#include "store.h"
#include "unit.h"

static int check(struct cvm_entry_state *st, const char *path, enum cvm_entry_type type,
		 const char *link, char *rel)
{
	struct cvm_entry e = { .path = path, .type = type, .link = link, .mode = 0644 };

	return cvm_entry_check(st, "test.tar.xz", &e, rel, 4096);
}

static void test_names(void)
{
	CHECK_STR(cvm_entry_name_problem("a/b/c"), NULL, "plain name");
	CHECK(cvm_entry_name_problem("") != NULL, "empty name refused");
	CHECK(cvm_entry_name_problem("/etc/passwd") != NULL, "absolute refused");
	CHECK(cvm_entry_name_problem("a/../b") != NULL, "dot-dot refused");
	CHECK(cvm_entry_name_problem("..") != NULL, "bare dot-dot refused");
	CHECK(cvm_entry_name_problem("a/b/..") != NULL, "trailing dot-dot refused");
	CHECK_STR(cvm_entry_name_problem("a/..b/c.."), NULL, "dots inside names are fine");
	CHECK(cvm_entry_name_problem("a/b\nc") != NULL, "newline refused");
	CHECK(cvm_entry_name_problem("a/\x1b[31m") != NULL, "escape refused");
	CHECK(cvm_entry_name_problem("a/\x7f") != NULL, "DEL refused");
}

static void test_links(void)
{
	CHECK_STR(cvm_entry_link_problem("lib/libcudnn.so", "libcudnn.so.9"), NULL, "sibling link");
	CHECK_STR(cvm_entry_link_problem("lib/x", "../include/cudnn.h"), NULL, "up one from depth 1");
	CHECK(cvm_entry_link_problem("lib/x", "../../etc") != NULL, "up two from depth 1");
	CHECK(cvm_entry_link_problem("x", "..") != NULL, "up from the top");
	CHECK(cvm_entry_link_problem("lib/x", "/etc/passwd") != NULL, "absolute target");
	CHECK(cvm_entry_link_problem("lib/x", "a/../../..") != NULL, "dot-dot after a name");
	CHECK(cvm_entry_link_problem("lib/x", "d/..") != NULL, "any dot-dot after a name");
	CHECK_STR(cvm_entry_link_problem("a/b/x", "./../../y"), NULL, "dot then two up at depth 2");
	CHECK(cvm_entry_link_problem("lib/x", "") != NULL, "empty target");
	CHECK(cvm_entry_link_problem("lib/x", "a\nb") != NULL, "control character in target");
}

static void test_check(void)
{
	struct cvm_entry_state st = { 0 };
	char rel[4096];
	const char *top = "cudnn-linux-x86_64-9.1.1.17_cuda12-archive";
	char p[512];

	snprintf(p, sizeof(p), "%s/", top);
	CHECK_INT(check(&st, p, CVM_ENTRY_DIR, NULL, rel), 1, "top folder is skipped");
	CHECK_STR(st.top, top, "top folder recorded");
	snprintf(p, sizeof(p), "./%s//lib/./libcudnn.so.9", top);
	CHECK_INT(check(&st, p, CVM_ENTRY_FILE, NULL, rel), 0, "normalised file accepted");
	CHECK_STR(rel, "lib/libcudnn.so.9", "top stripped and name normalised");
	snprintf(p, sizeof(p), "%s/lib/libcudnn.so", top);
	CHECK_INT(check(&st, p, CVM_ENTRY_SYMLINK, "libcudnn.so.9", rel), 0, "symlink accepted");
	CHECK_INT(check(&st, "other/lib/x", CVM_ENTRY_FILE, NULL, rel), -CVM_E_UNSAFE,
		  "second top folder refused");
	CHECK_INT(check(&st, "LICENSE", CVM_ENTRY_FILE, NULL, rel), -CVM_E_UNSAFE,
		  "file outside the top folder refused");
	snprintf(p, sizeof(p), "%s/lib/h", top);
	CHECK_INT(check(&st, p, CVM_ENTRY_HARDLINK, "x", rel), -CVM_E_UNSAFE, "hardlink refused");
	CHECK_INT(check(&st, p, CVM_ENTRY_OTHER, NULL, rel), -CVM_E_UNSAFE, "device refused");
	snprintf(p, sizeof(p), "%s/lib/out", top);
	CHECK_INT(check(&st, p, CVM_ENTRY_SYMLINK, "../../x", rel), -CVM_E_UNSAFE,
		  "symlink out refused");
	snprintf(p, sizeof(p), "%s/.cudnnvm/record.json", top);
	CHECK_INT(check(&st, p, CVM_ENTRY_FILE, NULL, rel), -CVM_E_UNSAFE,
		  "our record folder is reserved");

	memset(&st, 0, sizeof(st));
	CHECK_INT(check(&st, "cuda/lib64/libcudnn.so.8", CVM_ENTRY_FILE, NULL, rel), 0,
		  "legacy layout accepted");
	CHECK_INT(st.layout, CVM_LAYOUT_LEGACY, "legacy layout detected");
	CHECK_STR(rel, "lib/libcudnn.so.8", "legacy lib64 becomes lib");
	CHECK_INT(check(&st, "cuda/lib64x/a", CVM_ENTRY_FILE, NULL, rel), 0, "lib64x is not lib64");
	CHECK_STR(rel, "lib64x/a", "lib64x kept");
}

static void test_top_version(void)
{
	char v[32], plat[64];
	int major = 0;

	CHECK_INT(cvm_entry_top_version("cudnn-linux-x86_64-8.9.7.29_cuda11-archive", v, sizeof(v),
					&major, plat, sizeof(plat)), 0, "NVIDIA top folder parsed");
	CHECK_STR(v, "8.9.7.29", "version from the top folder");
	CHECK_STR(plat, "linux-x86_64", "platform from the top folder");
	CHECK_INT(major, 11, "CUDA major from the top folder");
	CHECK_INT(cvm_entry_top_version("cudnn-windows-arm64-9.27.0.42_cuda13.4-archive", v,
					sizeof(v), &major, plat, sizeof(plat)), 0, "minor-qualified CUDA");
	CHECK_INT(major, 13, "CUDA 13.4 is major 13");
	CHECK(cvm_entry_top_version("cuda", v, sizeof(v), &major, plat, sizeof(plat)) < 0,
	      "legacy top has no version");
	CHECK(cvm_entry_top_version("cudnn-linux-x86_64-8.9.7.29_cudaX-archive", v, sizeof(v),
				    &major, plat, sizeof(plat)) < 0, "bad CUDA major refused");
	CHECK(cvm_entry_top_version("cudnn-linux-x86_64-9.1.0.70_cuda06-archive", v, sizeof(v),
				    &major, plat, sizeof(plat)) < 0, "a leading zero is refused (fuzzer find)");
	CHECK(cvm_entry_top_version("cudnn-linux-x86_64-9.1.0.70_cuda+12-archive", v, sizeof(v),
				    &major, plat, sizeof(plat)) < 0, "a sign is refused");
	CHECK(cvm_entry_top_version("cudnn-linux-x86_64-9.1.0.70_cuda12.x-archive", v, sizeof(v),
				    &major, plat, sizeof(plat)) < 0, "a minor that is not a number is refused");
	CHECK(cvm_entry_top_version("cudnn-..-9.1.0.70_cuda12-archive", v, sizeof(v),
				    &major, plat, sizeof(plat)) < 0, "a platform outside [a-z0-9_-] is refused");
	CHECK_STR(cvm_entry_link_problem("lib/x", NULL), "empty symlink target", "a NULL target is refused");
}

static void test_hex_header_id(void)
{
	uint8_t bin[4];
	char hex[9], v[32], plat[64];
	struct cvm_version hv;
	int major;
	const char *h = "#ifndef X\n#define CUDNN_MAJOR 8\n# define CUDNN_MINOR  9\n"
			"#define CUDNN_PATCHLEVEL 7\n#define CUDNN_VERSION (CUDNN_MAJOR * 1000)\n";

	CHECK_INT(cvm_hex_decode("A3e25090", bin, 4), 0, "hex decodes either case");
	cvm_hex_encode(bin, 4, hex);
	CHECK_STR(hex, "a3e25090", "hex encodes lowercase");
	CHECK_INT(cvm_hex_decode("a3e2509", bin, 4), -CVM_E_USAGE, "short hex refused");
	CHECK_INT(cvm_hex_decode("a3e250900", bin, 4), -CVM_E_USAGE, "long hex refused");
	CHECK_INT(cvm_hex_decode("a3e2509g", bin, 4), -CVM_E_USAGE, "non-hex refused");

	CHECK_INT(cvm_cudnn_header_version(h, strlen(h), &hv), 0, "header macros read");
	CHECK(hv.part[0] == 8 && hv.part[1] == 9 && hv.part[2] == 7, "header says 8.9.7");
	CHECK_INT(cvm_cudnn_header_version("#define CUDNN_MAJOR 9\n", 22, &hv), -CVM_E_NOTFOUND,
		  "incomplete macros refused");
	CHECK_INT(cvm_cudnn_header_version("#define CUDNN_MAJORX 9\n#define CUDNN_MINOR 1\n"
					   "#define CUDNN_PATCHLEVEL 0\n", 69, &hv),
		  -CVM_E_NOTFOUND, "a longer macro name is not CUDNN_MAJOR");

	CHECK_INT(cvm_store_parse_id("8.9.7.29-cuda11-linux-x86_64", v, sizeof(v), &major, plat,
				     sizeof(plat)), 0, "id parsed");
	CHECK_STR(v, "8.9.7.29", "id version");
	CHECK_INT(major, 11, "id CUDA major");
	CHECK_STR(plat, "linux-x86_64", "id platform");
	CHECK(cvm_store_parse_id("8.9.7.29-linux", v, sizeof(v), &major, plat, sizeof(plat)) < 0,
	      "id without CUDA refused");
}

/*
 * Names NTFS takes for one, in a Windows archive on any host: a folder or a
 * file differing only in case (Latin-1, Greek and Cyrillic letters too), a
 * second entry of a name, a file and a folder of one name.
 */
static void test_windows_twins(struct cvm_entry_state *st)
{
	static const struct {
		const char *path;
		enum cvm_entry_type type;
		int want;
	} v[] = {
		{ "include/", CVM_ENTRY_DIR, 0 },
		{ "include/", CVM_ENTRY_DIR, 0 },	/* a folder twice: one folder */
		{ "bin/BIN.txt", CVM_ENTRY_FILE, 0 },
		{ "BIN/x.dll", CVM_ENTRY_FILE, -CVM_E_UNSAFE },
		{ "Bin/", CVM_ENTRY_DIR, -CVM_E_UNSAFE },
		{ "include/Sub/a.h", CVM_ENTRY_FILE, 0 },
		{ "include/sub/b.h", CVM_ENTRY_FILE, -CVM_E_UNSAFE },
		{ "lib/x64/CUDNN.LIB", CVM_ENTRY_FILE, -CVM_E_UNSAFE },
		{ "bin/cudnn64_9.dll", CVM_ENTRY_FILE, -CVM_E_UNSAFE },	/* a duplicate */
		{ "bin/cudnn64_9.dll/x", CVM_ENTRY_FILE, -CVM_E_UNSAFE },	/* under a file */
		{ "include/Sub", CVM_ENTRY_FILE, -CVM_E_UNSAFE },	/* a file where a folder is */
		{ "doc/\xc3\xa9t\xc3\xa9.txt", CVM_ENTRY_FILE, 0 },
		{ "doc/\xc3\x89T\xc3\x89.TXT", CVM_ENTRY_FILE, -CVM_E_UNSAFE },
		{ "doc/\xce\xb1.txt", CVM_ENTRY_FILE, 0 },
		{ "doc/\xce\x91.txt", CVM_ENTRY_FILE, -CVM_E_UNSAFE },
		{ "doc/\xd0\xb6.txt", CVM_ENTRY_FILE, 0 },
		{ "doc/\xd0\x96.txt", CVM_ENTRY_FILE, -CVM_E_UNSAFE },
		{ "doc/\xc5\x82.txt", CVM_ENTRY_FILE, 0 },
		{ "doc/\xc5\x81.txt", CVM_ENTRY_FILE, -CVM_E_UNSAFE },
		{ "doc/ss.txt", CVM_ENTRY_FILE, 0 },
		{ "doc/\xc3\x9f.txt", CVM_ENTRY_FILE, 0 },	/* NTFS keeps sharp s apart from ss */
	};
	char path[512], rel[4096];

	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		snprintf(path, sizeof(path), "cudnn-windows-x86_64-9.1.0.70_cuda12-archive/%s", v[i].path);
		CHECK_INT(check(st, path, v[i].type, NULL, rel), v[i].want, "windows zip: '%s'",
			  v[i].path);
	}
}

/* Windows' name rules: on for cudnn-windows-* archives (and always on Windows). */
static void test_windows_names(void)
{
	static const char *const bad[] = {
		"bin/CON", "bin/con.dll", "bin/nul", "bin/Nul.txt", "include/aux.h", "lib/prn",
		"bin/COM1", "bin/com9.dll", "bin/LPT1", "bin/lpt3.lib", "bin/CONOUT$", "bin/COM\xc2\xb9",
		"bin/x.dll.", "bin/x.dll ", "bin./x", "lib /x.lib", "bin/x.dll:evil", "C:/Windows/x.dll",
		"c:x", "bin\\..\\..\\x.dll", "bin\\x.dll", "bin/a<b", "bin/a|b", "bin/a?", "bin/a*",
		"bin/a\"b", "bin/CUDNN6~1.DLL", "include/CUDNN~1.H", "PROGR~12/x", "bin/ab~1",
		"bin/lpt\xc2\xb3.h", "bin/Com\xc2\xb2", "bin/x\xff.dll",
	};
	static const char *const good[] = {
		"bin/cudnn64_9.dll", "bin/cudnn_ops64_9.dll", "include/cudnn.h", "lib/x64/cudnn.lib",
		"bin/console.dll", "bin/nul_x.dll", "bin/com10.dll", "bin/lpt.dll", "bin/COM0x", "a/./b",
		"LICENSE", ".hidden", "bin/x.dll.bak", "bin/x\xc2\xb9.dll", "doc/a~b.txt",
		"doc/long~1name.txt", "doc/ab~1.html", "doc/~1.h", "doc/a.b~1.c", "bin/COM\xc2\xb4",
	};
	struct cvm_entry_state st;
	char rel[4096];

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		CHECK(cvm_entry_windows_problem(bad[i]) != NULL, "windows: '%s' refused", bad[i]);
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
		CHECK_STR(cvm_entry_windows_problem(good[i]), NULL, "windows: '%s' allowed", good[i]);
	CHECK(strstr(cvm_entry_windows_problem("bin/NUL") ?: "", "reserved") != NULL,
	      "windows: the reason names a reserved device name");
	CHECK(strstr(cvm_entry_windows_problem("bin/x:y") ?: "", "alternate data stream") != NULL,
	      "windows: the reason names alternate data streams");
	CHECK(strstr(cvm_entry_windows_problem("bin/CUDNN6~1.DLL") ?: "", "8.3 short-name") != NULL,
	      "windows: the reason names the 8.3 short-name form");

	/* In an archive: a Windows top folder turns the rules on. */
	memset(&st, 0, sizeof(st));
	CHECK_INT(check(&st, "cudnn-windows-x86_64-9.1.0.70_cuda12-archive/", CVM_ENTRY_DIR, NULL, rel), 1,
		  "windows zip: top folder");
	CHECK(st.windows, "windows zip: the rules are on");
	CHECK_INT(check(&st, "cudnn-windows-x86_64-9.1.0.70_cuda12-archive/bin/cudnn64_9.dll",
			CVM_ENTRY_FILE, NULL, rel), 0, "windows zip: bin/cudnn64_9.dll taken");
	CHECK_STR(rel, "bin/cudnn64_9.dll", "windows zip: relative name");
	CHECK_INT(check(&st, "cudnn-windows-x86_64-9.1.0.70_cuda12-archive/lib/x64/cudnn.lib",
			CVM_ENTRY_FILE, NULL, rel), 0, "windows zip: lib/x64/cudnn.lib taken");
	CHECK_INT(check(&st, "cudnn-windows-x86_64-9.1.0.70_cuda12-archive/bin/CON", CVM_ENTRY_FILE,
			NULL, rel), -CVM_E_UNSAFE, "windows zip: bin/CON refused (exit 3)");
	CHECK_INT(check(&st, "cudnn-windows-x86_64-9.1.0.70_cuda12-archive/bin/a.dll:s", CVM_ENTRY_FILE,
			NULL, rel), -CVM_E_UNSAFE, "windows zip: an alternate stream refused");
	CHECK_INT(check(&st, "cudnn-windows-x86_64-9.1.0.70_cuda12-archive/bin/x. ", CVM_ENTRY_FILE,
			NULL, rel), -CVM_E_UNSAFE, "windows zip: a trailing dot and space refused");
	CHECK_INT(check(&st, "cudnn-windows-x86_64-9.1.0.70_cuda12-archive/bin\\..\\..\\x.dll",
			CVM_ENTRY_FILE, NULL, rel), -CVM_E_UNSAFE, "windows zip: backslash traversal refused");
	test_windows_twins(&st);
	cvm_entry_state_free(&st);

	/* A Linux tarball keeps Linux's rules (on Linux): a colon is a name like any other. */
	memset(&st, 0, sizeof(st));
	CHECK_INT(check(&st, "cudnn-linux-x86_64-9.1.0.70_cuda12-archive/", CVM_ENTRY_DIR, NULL, rel), 1,
		  "linux tarball: top folder");
	CHECK(st.windows == CVM_WINDOWS, "linux tarball: Windows' rules only on Windows");
	if (!CVM_WINDOWS)
		CHECK_INT(check(&st, "cudnn-linux-x86_64-9.1.0.70_cuda12-archive/lib/a:b", CVM_ENTRY_FILE,
				NULL, rel), 0, "linux tarball: 'a:b' allowed on Linux");
}

int main(void)
{
	test_names();
	test_links();
	test_check();
	test_top_version();
	test_hex_header_id();
	test_windows_names();
	return unit_done();
}
