/* SPDX-License-Identifier: MIT */
/* plan.c: in a dry run every change is described once and none is made; otherwise each is made. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fsutil.h"
#include "json.h"
#include "out.h"
#include "plan.h"
#include "unit.h"

static int dfd = -1;

static bool there(const char *name)
{
	struct stat st;

	return fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0;
}

static const char *text_at(const cvm_json *changes, size_t i)
{
	return cvm_json_str(cvm_json_get(cvm_json_at(changes, i), "text"));
}

int main(void)
{
	char tmpl[] = "/tmp/cvm-test-plan.XXXXXX", body[64], *buf = NULL;
	struct cvm_plan plan = { .dry = true }, real = { 0 }, *p = &plan;
	cvm_json *doc, *changes;
	ssize_t k;

	if (!mkdtemp(tmpl) || (dfd = open(tmpl, O_RDONLY | O_DIRECTORY)) < 0) {
		printf("not ok - scratch folder\n");
		return 1;
	}
	/* Set-up of what exists: a file, a link, a folder. */
	cvm_write_file_at(dfd, "same", "x\n", 2, 0644);
	if (symlinkat("old", dfd, "link") < 0)
		printf("# set-up: cannot make the link\n");
	mkdirat(dfd, "tree", 0755);

	cvm_out.json = true;	/* descriptions go into the document, not stdout */
	CHECK(cvm_plan_dry(p), "dry run on");
	CHECK(!cvm_plan_dry(NULL), "no plan: not a dry run");
	CHECK_INT(cvm_do_mkdir_at(p, dfd, "dir", 0755, "/s/dir"), 0, "dry mkdir: 0");
	CHECK(!there("dir"), "dry mkdir: no folder");
	CHECK_INT(cvm_do_mkdir_at(p, dfd, "tree", 0755, "/s/tree"), 0, "dry mkdir of an existing folder: 0, not described");
	CHECK_INT(cvm_do_symlink_at(p, dfd, "t", "new", "/s/new"), 0, "dry symlink: 0");
	CHECK(!there("new"), "dry symlink: no link");
	CHECK_INT(cvm_do_symlink_replace_at(p, dfd, "old", "link", "/s/link"), 0, "dry replace by the same body: 0, not described");
	CHECK_INT(cvm_do_symlink_replace_at(p, dfd, "other", "link", "/s/link"), 0, "dry replace: 0");
	k = readlinkat(dfd, "link", body, sizeof(body) - 1);
	CHECK(k == 3 && !memcmp(body, "old", 3), "dry replace: the link is unchanged");
	CHECK_INT(cvm_do_write_file_at(p, dfd, "f", "hi", 2, 0644, "/s/f"), 0, "dry write: 0");
	CHECK(!there("f"), "dry write: no file");
	CHECK_INT(cvm_do_write_file_at(p, dfd, "same", "x\n", 2, 0644, "/s/same"), 0, "dry write of the same bytes: 0, not described");
	CHECK_INT(cvm_do_unlink_at(p, dfd, "same", "/s/same"), 0, "dry unlink: 0");
	CHECK(there("same"), "dry unlink: the file is still there");
	CHECK_INT(cvm_do_unlink_at(p, dfd, "missing", "/s/missing"), 0, "dry unlink of nothing: 0, not described");
	CHECK_INT(cvm_do_rm_rf_at(p, dfd, "tree", "/s/tree"), 0, "dry rm -rf: 0");
	CHECK(there("tree"), "dry rm -rf: the folder is still there");
	CHECK(cvm_plan_describe(p, "download", "file:///m/a.tar.xz", NULL, "(%d bytes)", 5), "describe: true in a dry run");
	CHECK(cvm_plan_describe(p, "download", "file:///m/a.tar.xz", NULL, "(%d bytes)", 5), "describe again: true");

	doc = cvm_json_object();
	cvm_plan_json(p, doc);
	CHECK(cvm_json_get(doc, "dry_run") != NULL, "the document has dry_run");
	changes = cvm_json_get(doc, "changes");
	CHECK_INT(cvm_json_len(changes), 7, "seven changes, each described once");
	CHECK_STR(text_at(changes, 0), "would create folder /s/dir", "the first change's text");
	CHECK_STR(text_at(changes, 1), "would create link /s/new -> t", "a new link: its path and body");
	CHECK_STR(text_at(changes, 2), "would replace link /s/link -> other (was -> old)", "a replaced link: both bodies");
	CHECK_STR(text_at(changes, 3), "would write /s/f (2 bytes)", "a file: its size");
	CHECK_STR(text_at(changes, 4), "would remove /s/same", "a removed file");
	CHECK_STR(text_at(changes, 6), "would download file:///m/a.tar.xz (5 bytes)", "a described download, once");
	CHECK_STR(cvm_json_str(cvm_json_get(cvm_json_at(changes, 1), "target")), "t", "\"target\" of a link");
	CHECK(cvm_json_get(cvm_json_at(changes, 0), "target") != NULL, "\"target\" is there (null) for a folder");
	cvm_json_free(doc);

	cvm_plan_release(&plan);
	CHECK(plan.nsaid == 0 && !plan.said && !plan.changes, "release empties the plan");

	/* The real run: each call makes its change (a second plan: they are independent). */
	p = &real;
	CHECK(!cvm_plan_describe(p, "download", "u", NULL, NULL), "describe: false outside a dry run");
	CHECK(cvm_do_mkdir_at(p, dfd, "dir", 0755, "/s/dir") == 0 && there("dir"), "mkdir makes the folder");
	CHECK(cvm_do_symlink_at(p, dfd, "t", "new", "/s/new") == 0 && there("new"), "symlink makes the link");
	k = cvm_do_symlink_replace_at(p, dfd, "other", "link", "/s/link") == 0 ?
	    readlinkat(dfd, "link", body, sizeof(body) - 1) : -1;
	CHECK(k == 5 && !memcmp(body, "other", 5), "replace changes the body");
	CHECK(cvm_do_write_file_at(p, dfd, "f", "hi", 2, 0644, "/s/f") == 0 &&
	      cvm_read_file_at(dfd, "f", 16, &buf, NULL) == 0 && !strcmp(buf, "hi"), "write writes the bytes");
	free(buf);
	CHECK(cvm_do_unlink_at(p, dfd, "same", "/s/same") == 0 && !there("same"), "unlink removes the file");
	CHECK(cvm_do_rm_rf_at(p, dfd, "tree", "/s/tree") == 0 && !there("tree"), "rm -rf removes the folder");

	close(dfd);
	cvm_rm_rf_at(AT_FDCWD, tmpl);
	return unit_done();
}
