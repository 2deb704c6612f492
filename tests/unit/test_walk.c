/* SPDX-License-Identifier: MIT */
/* The iterative tree walk and removal (fsutil.c), the entry bounds, the header parse. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cudnn.h"
#include "entry.h"
#include "error.h"
#include "fsutil.h"
#include "unit.h"

/* Makes dirfd/a/a/.../a (n folders) with a file f at the bottom. */
static int make_deep(int dirfd, int n)
{
	int fd = dup(dirfd), next;

	for (int i = 0; i < n && fd >= 0; i++) {
		if (mkdirat(fd, "a", 0755) < 0)
			return -1;
		next = openat(fd, "a", O_RDONLY | O_DIRECTORY);
		close(fd);
		fd = next;
	}
	if (fd < 0)
		return -1;
	next = openat(fd, "f", O_WRONLY | O_CREAT, 0644);
	if (next >= 0)
		close(next);
	close(fd);
	return next >= 0 ? 0 : -1;
}

struct count {
	size_t entries, dirs, done, deepest;
	bool skip_b;
};

static int count_one(void *arg, int dirfd, const char *name, const char *rel, const struct stat *st,
		     enum cvm_walk_event ev)
{
	struct count *c = arg;
	size_t depth = 1;

	(void)dirfd;
	(void)st;
	for (const char *p = rel; *p; p++)
		depth += *p == '/';
	if (depth > c->deepest)
		c->deepest = depth;
	if (ev == CVM_WALK_ENTRY)
		c->entries++;
	else if (ev == CVM_WALK_DIR)
		c->dirs++;
	else
		c->done++;
	return ev == CVM_WALK_DIR && c->skip_b && !strcmp(name, "b") ? 1 : 0;
}

static void test_walk(void)
{
	char tmpl[] = "/tmp/cvm-test-walk.XXXXXX";
	struct rlimit old, low = { 64, 64 };
	struct count c = { 0 };
	int fd;

	CHECK(mkdtemp(tmpl) != NULL, "temporary folder");
	fd = open(tmpl, O_RDONLY | O_DIRECTORY);
	CHECK(fd >= 0, "temporary folder opened");
	CHECK_INT(mkdirat(fd, "t", 0755), 0, "t made");
	int t = openat(fd, "t", O_RDONLY | O_DIRECTORY);
	CHECK_INT(make_deep(t, 3000), 0, "a 3,000-deep tree made");
	CHECK_INT(mkdirat(t, "b", 0755), 0, "b made");
	int b = openat(t, "b", O_RDONLY | O_DIRECTORY);
	CHECK_INT(make_deep(b, 2), 0, "b/a/a/f made");
	close(b);
	CHECK_INT(symlinkat("a", t, "l"), 0, "a symlink made");

	getrlimit(RLIMIT_NOFILE, &old);
	low.rlim_max = old.rlim_max;
	CHECK_INT(setrlimit(RLIMIT_NOFILE, &low), 0, "64 descriptors");
	CHECK_INT(cvm_walk_at(t, count_one, &c), 0, "walk of 3,000 folders with 64 descriptors");
	CHECK(c.dirs == 3003 && c.done == 3003, "every folder seen, before and after");
	CHECK(c.entries == 3, "two files and the symlink seen, not followed");
	CHECK(c.deepest == 3001, "the file 3,000 folders down reached");
	memset(&c, 0, sizeof(c));
	c.skip_b = true;
	CHECK_INT(cvm_walk_at(t, count_one, &c), 0, "walk skipping b");
	CHECK(c.entries == 2 && c.dirs == 3001, "b's contents skipped");
	CHECK(fchmodat(t, "b", 0555, 0) == 0, "b read-only");
	close(t);
	CHECK_INT(cvm_rm_rf_at(fd, "t"), 0, "removal of the 3,000-deep tree with 64 descriptors");
	CHECK(faccessat(fd, "t", F_OK, AT_SYMLINK_NOFOLLOW) < 0 && errno == ENOENT, "t is gone");
	setrlimit(RLIMIT_NOFILE, &old);
	close(fd);
	rmdir(tmpl);
}

static int check_one(struct cvm_entry_state *st, const char *path)
{
	struct cvm_entry e = { .path = path, .type = CVM_ENTRY_FILE, .mode = 0644 };
	char rel[4096];

	return cvm_entry_check(st, "test.tar.xz", &e, rel, sizeof(rel));
}

static void test_bounds(void)
{
	struct cvm_entry_state st = { 0 };
	char path[4096];
	int r = 0;

	CHECK_INT(check_one(&st, "top/lib/a/b/c"), 0, "a short name");
	snprintf(path, sizeof(path), "top/%s", "");
	for (int i = 0; i < 32; i++)
		strcat(path, "d/");
	strcat(path, "f");
	CHECK_INT(check_one(&st, path), -CVM_E_UNSAFE, "33 components below the top refused");
	path[strlen(path) - 4] = '\0';
	strcat(path, "f");
	CHECK_INT(check_one(&st, path), 0, "32 components below the top taken");
	memset(path, 'x', 300);
	memcpy(path, "top/lib/", 8);
	path[300] = '\0';
	CHECK_INT(check_one(&st, path), -CVM_E_UNSAFE, "a 292-byte component refused");
	path[8 + 255] = '\0';
	CHECK_INT(check_one(&st, path), 0, "a 255-byte component taken");
	memset(&st, 0, sizeof(st));
	for (int i = 0; i < CVM_ENTRY_MAX_ENTRIES && r == 0; i++) {
		snprintf(path, sizeof(path), "top/lib/e%d", i);
		r = check_one(&st, path);
	}
	CHECK_INT(r, 0, "4,096 entries taken");
	CHECK_INT(check_one(&st, "top/lib/one-more"), -CVM_E_UNSAFE, "the 4,097th refused");
}

static void test_header(void)
{
	static const char *const h1 =
		"/* #define CUDNN_MAJOR 7\n#define CUDNN_MINOR 6\n#define CUDNN_PATCHLEVEL 5 */\n"
		"// #define CUDNN_MAJOR 6\n"
		"#define CUDNN_MAJOR 9\n#define CUDNN_MINOR 1\n#define CUDNN_PATCHLEVEL 1\n";
	static const char *const h2 =
		"#define CUDNN_MAJOR \\\n  8\n#define /* x */ CUDNN_MINOR 9 // nine\n"
		"#define CUDNN_URL \"http://x/* not a comment\"\n#define CUDNN_PATCHLEVEL 7\n";
	static const char *const h3 = "#define CUDNN_MAJOR 9 /* \n#define CUDNN_MINOR 1\n */\n"
				      "#define CUDNN_PATCHLEVEL 0\n";
	struct cvm_version v;

	CHECK_INT(cvm_cudnn_header_version(h1, strlen(h1), &v), 0, "commented defines skipped");
	CHECK(v.part[0] == 9 && v.part[1] == 1 && v.part[2] == 1, "the live defines: 9.1.1");
	CHECK_INT(cvm_cudnn_header_version(h2, strlen(h2), &v), 0, "continued line, inner comment");
	CHECK(v.part[0] == 8 && v.part[1] == 9 && v.part[2] == 7, "8.9.7 read through them");
	CHECK_INT(cvm_cudnn_header_version(h3, strlen(h3), &v), -CVM_E_NOTFOUND,
		  "a MINOR inside a block comment is no define");
}

int main(void)
{
	test_walk();
	test_bounds();
	test_header();
	return unit_done();
}
