/* SPDX-License-Identifier: MIT */
/*
 * The load closure (closure.h, elfinfo.h's cvm_elf_read_deps) on libraries
 * built here with the C compiler: NEEDED entries, the names a library hands
 * dlopen (whole strings of .rodata only), and the loader cache read as a
 * file under a root (a good entry, a stale one, a damaged file), with every
 * prefix of the cache file.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "closure.h"
#include "elfinfo.h"
#include "unit.h"
#include "unit_so.h"

static int sh(const char *fmt, const char *a, const char *b)
{
	char cmd[4096];

	snprintf(cmd, sizeof(cmd), fmt, a, b, a, b);
	return system(cmd) == 0 ? 0 : -1;
}

static void test_deps(void)
{
	char path[512], extra[512];
	struct cvm_elf_info e;
	static const char *const probes[] = { "libnvrtc.so.", "libcublasLt.so." };

	CHECK(unit_build_so("stub/libdep.so.3", "libdep.so.3", "int dep(void) { return 3; }\n", "") == 0, "built a dependency");
	snprintf(extra, sizeof(extra), "'%s/stub/libdep.so.3'", unit_tmp);
	CHECK(unit_build_so("cudnn/libcudnn_cnn.so.9", "libcudnn_cnn.so.9",
		    "const char a[] = \"\\0libnvrtc.so.12\";\n"
		    "const char b[] = \"xlibcublasLt.so.99\";\n"
		    "const char c[] = \"\\0libcublasLt.so.%d\";\n"
		    "const char d[] = \"\\0libnvrtc.so.12\";\n"
		    "int f(void) { return a[1] + b[1] + c[1] + d[1]; }\n", extra) == 0,
	      "built a library that needs libdep.so.3 and names libnvrtc.so.12");
	snprintf(path, sizeof(path), "%s/cudnn/libcudnn_cnn.so.9", unit_tmp);
	CHECK_INT(cvm_elf_read_deps(AT_FDCWD, path, probes, 2, &e), 0, "read_deps reads it");
	CHECK_STR(e.soname, "libcudnn_cnn.so.9", "its soname");
	CHECK(e.nneeded >= 1 && !strcmp(e.needed[0], "libdep.so.3"), "NEEDED libdep.so.3, first");
	CHECK_INT(e.nloads, 1, "one name loaded by name: a string inside another or a format is none");
	CHECK_STR(e.loads[0], "libnvrtc.so.12", "libnvrtc.so.12, once");
	CHECK_INT(cvm_elf_read_deps(AT_FDCWD, path, NULL, 0, &e), 0, "without probes");
	CHECK_INT(e.nloads, 0, "no names");
	CHECK_INT(cvm_elf_read_at(AT_FDCWD, path, &e), 0, "read_at reads the NEEDED entries too");
	CHECK(e.nneeded >= 1 && !strcmp(e.needed[0], "libdep.so.3") && e.nloads == 0,
	      "NEEDED, and no names without probes");
}

/* glibc's new-format cache with the entries key=value (NULL-terminated pairs). */
static int write_cache(const char *path, const char *const *kv)
{
	unsigned char buf[4096] = { 0 };
	size_t n = 0, str;
	FILE *f;

	while (kv[2 * n])
		n++;
	memcpy(buf, "glibc-ld.so.cache1.1", 20);
	buf[20] = (unsigned char)n;
	str = 48 + 24 * n;
	for (size_t i = 0; i < n; i++) {
		unsigned char *e = buf + 48 + 24 * i;
		for (int k = 0; k < 2; k++) {
			uint32_t off = (uint32_t)str;
			memcpy(e + 4 + 4 * k, &off, 4);
			memcpy(buf + str, kv[2 * i + k], strlen(kv[2 * i + k]) + 1);
			str += strlen(kv[2 * i + k]) + 1;
		}
	}
	f = fopen(path, "wb");
	if (!f)
		return -1;
	fwrite(buf, 1, str, f);
	return fclose(f);
}

static void test_cache(void)
{
	static const char *const kv[] = { "libdep.so.3", "/opt/x/libdep.so.3",
					  "libgone.so.1", "/opt/x/libgone.so.1", NULL };
	struct cvm_toolkit tk = { .major = 12, .minor = 4 };
	struct cvm_closure c;
	char root[512], path[1024], dir[1024], tkp[1024];

	snprintf(root, sizeof(root), "%s/root", unit_tmp);
	snprintf(tkp, sizeof(tkp), "%s/usr/local/cuda-12.4", root);
	tk.path = tkp;
	tk.display = "/usr/local/cuda-12.4";
	snprintf(dir, sizeof(dir), "%s/cudnn", unit_tmp);
	CHECK(sh("mkdir -p '%s/etc' '%s/opt/x' && touch '%s/opt/x/libdep.so.3' && mkdir -p '%s/usr/lib'",
		 root, root) == 0, "a root with a C library of its own");
	snprintf(path, sizeof(path), "%s/usr/lib/libc.so.6", root);
	fclose(fopen(path, "w"));
	snprintf(path, sizeof(path), "%s/etc/ld.so.cache", root);
	CHECK(write_cache(path, kv) == 0, "wrote a loader cache");
	CHECK_INT(cvm_closure_check(root, dir, &tk, &c), 0, "checks the closure");
	CHECK_INT(c.nlibs, 1, "one cuDNN library read");
	CHECK(c.missing >= 1 && !strcmp(c.need[0].name, "libnvrtc.so.12") && c.need[0].by_name &&
	      c.need[0].toolkit, "libnvrtc.so.12 is missing: loaded by name, a toolkit's library");
	bool dep = false;
	for (size_t i = c.missing; i < c.n; i++)
		dep |= !strcmp(c.need[i].name, "libdep.so.3");
	CHECK(dep, "libdep.so.3 is found through the cache");
	CHECK(strstr(c.looked, "the loader cache") != NULL, "the cache is said: %s", c.looked);
	cvm_closure_release(&c);

	/* Stale: the file the cache names is gone. */
	snprintf(path, sizeof(path), "%s/opt/x/libdep.so.3", root);
	unlink(path);
	CHECK_INT(cvm_closure_check(root, dir, &tk, &c), 0, "checks again");
	dep = false;
	for (size_t i = 0; i < c.missing; i++)
		dep |= !strcmp(c.need[i].name, "libdep.so.3") && !c.need[i].by_name;
	CHECK(dep, "a stale cache entry does not count: libdep.so.3 is missing");
	cvm_closure_release(&c);

	/* Every prefix of the cache file, and junk: read or ignored, never outside it (ASan). */
	char *text = NULL;
	long len;
	FILE *f;
	snprintf(path, sizeof(path), "%s/etc/ld.so.cache", root);
	f = fopen(path, "rb");
	if (f && fseek(f, 0, SEEK_END) == 0 && (len = ftell(f)) > 0 && fseek(f, 0, SEEK_SET) == 0 &&
	    (text = malloc((size_t)len)) && fread(text, 1, (size_t)len, f) == (size_t)len) {
		size_t errors = 0;
		for (long n = 0; n < len; n += 5) {
			FILE *g = fopen(path, "wb");
			fwrite(text, 1, (size_t)n, g);
			fclose(g);
			errors += cvm_closure_check(root, dir, &tk, &c) != 0;
			cvm_closure_release(&c);
		}
		CHECK_INT(errors, 0, "every prefix of the cache: checked, the cache ignored when short");
	} else {
		CHECK(0, "read the cache back");
	}
	if (f)
		fclose(f);
	free(text);
}

int main(void)
{
	if (unit_tmp_make("closure") < 0)
		return 1;
	test_deps();
	test_cache();
	unit_tmp_remove();
	return unit_done();
}
