/* SPDX-License-Identifier: MIT */
/* trust.c: the chain rule on a scratch tree (the parts that need another user only as root). */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "error.h"
#include "trust.h"
#include "unit.h"

static char top[256];

static const char *at(const char *rel)
{
	static char buf[4][PATH_MAX];
	static int k;

	k = (k + 1) % 4;
	snprintf(buf[k], sizeof(buf[k]), "%s/%s", top, rel);
	return buf[k];
}

static int check(const char *rel, struct cvm_trust *t)
{
	return cvm_trust_check(at(rel), t);
}

int main(void)
{
	struct cvm_trust t;
	char *tmpl;
	struct stat st;
	int r;

	tmpl = strdup("/tmp/cvm-test-trust.XXXXXX");
	if (!tmpl || !mkdtemp(tmpl)) {
		printf("not ok - mkdtemp\n");
		return 1;
	}
	snprintf(top, sizeof(top), "%s", tmpl);
	mkdir(at("a"), 0755);
	mkdir(at("a/b"), 0755);
	CHECK_INT(check("a/b", &t), 0, "a folder of ours under a 0700 one of ours: trusted");
	CHECK_INT(check("a/./b/../b", &t), 0, "'.' and '..' are resolved as the kernel does");
	CHECK_INT(check("a/nope", &t), -ENOENT, "a missing component: -ENOENT");
	CHECK_STR(t.path, at("a/nope"), "... naming it");

	chmod(at("a"), 0757);
	CHECK_INT(check("a/b", &t), -CVM_E_PERM, "a folder on the way every user can write: not trusted");
	CHECK_STR(t.path, at("a"), "... naming that folder");
	CHECK(strstr(t.why, "every user can write it") != NULL, "... and why: '%s'", t.why);
	CHECK_INT(check("a", &t), -CVM_E_PERM, "the object itself writable by every user: not trusted");
	chmod(at("a"), 01777);
	CHECK_INT(check("a/b", &t), 0, "a sticky folder on the way, the entry ours: trusted");
	CHECK_INT(check("a", &t), -CVM_E_PERM, "a sticky folder as the object itself: not trusted");
	chmod(at("a"), 0775);
	if (getegid() == 0)
		CHECK_INT(check("a/b", &t), 0, "a folder writable by root's group (0): trusted");
	chmod(at("a"), 0755);

	/* Links: followed, the folders of their targets checked, loops bounded. */
	CHECK_INT(symlink("a/b", at("lb")), 0, "set-up: lb -> a/b");
	CHECK_INT(check("lb", &t), 0, "a relative link to a trusted folder: trusted");
	CHECK_INT(symlink(at("a/b"), at("la")), 0, "set-up: la -> absolute a/b");
	CHECK_INT(check("la/../b", &t), 0, "'..' after a link is taken from its target");
	chmod(at("a"), 0757);
	CHECK_INT(check("lb", &t), -CVM_E_PERM, "a link whose target's folder every user can write: not trusted");
	CHECK_STR(t.path, at("a"), "... naming the target's folder");
	chmod(at("a"), 0755);
	CHECK_INT(symlink("loop", at("loop")), 0, "set-up: loop -> loop");
	CHECK_INT(check("loop", &t), -ELOOP, "a link loop: -ELOOP");
	r = chdir(top);
	CHECK_INT(r == 0 ? cvm_trust_check("a/b", &t) : -1, 0, "a relative path is taken from the working folder");

	{
		/* The rule for one object of a version: what install makes, trusted as use needs. */
		struct stat o = { .st_uid = geteuid(), .st_gid = getegid() };
		char why[192];

		static const struct {
			mode_t mode;
			const char *why;	/* NULL: the object holds */
			const char *name;
		} cases[] = {
			{ S_IFREG | 0644, NULL, "a 0644 file holds" },
			{ S_IFREG | 0755, NULL, "a 0755 file holds" },
			{ S_IFDIR | 0755, NULL, "a 0755 folder holds" },
			{ S_IFLNK | 0777, NULL, "a link holds" },
			{ S_IFREG | 0646, "every user can write it (mode 0646)", "0646" },
			{ S_IFREG | 04755, "a set-id or sticky bit is set (mode 4755)", "setuid" },
			{ S_IFDIR | 02755, "a set-id or sticky bit is set (mode 2755)", "setgid folder" },
			{ S_IFREG | 0600, "mode 0600, not the 0644 or 0755 install gives a file", "0600" },
			{ S_IFDIR | 0700, "mode 0700, not the 0755 install gives a folder", "0700 folder" },
			{ S_IFIFO | 0644, "not a regular file, folder or symlink", "a FIFO" },
		};

		for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
			const char *got;

			o.st_mode = cases[i].mode;
			why[0] = '\0';
			got = cvm_trust_installed_why(&o, why, sizeof(why));
			CHECK(cases[i].why ? got && !strcmp(why, cases[i].why) : !got, "installed: %s: '%s'",
			      cases[i].name, why);
		}
		o.st_mode = S_IFLNK | 0777;
		o.st_uid = geteuid() == 65534 ? 65533 : 65534;
		CHECK(cvm_trust_installed_why(&o, why, sizeof(why)) && strstr(why, "another user (uid"),
		      "installed: a link of another user: '%s'", why);
	}

	if (geteuid() == 0) {
		mkdir(at("s"), 0755);
		chmod(at("s"), 01777);	/* mkdir's mode goes through the umask */
		mkdir(at("s/x"), 0755);
		CHECK(stat(at("s"), &st) == 0 && (st.st_mode & 07777) == 01777, "set-up: s is 1777");
		CHECK_INT(check("s/x", &t), 0, "as root: a root entry in a sticky folder: trusted");
		(void)!chown(at("s/x"), 65534, 65534);
		CHECK_INT(check("s/x", &t), -CVM_E_PERM, "as root: another user's entry: not trusted");
		CHECK(strstr(t.why, "another user (uid 65534)") != NULL, "... saying whose: '%s'", t.why);
		(void)!lchown(at("lb"), 65534, 65534);
		CHECK_INT(check("lb", &t), 0, "as root: another user's link in our 0700 folder: trusted (only we can replace it)");
		(void)!symlink(at("a/b"), at("s/l"));
		(void)!lchown(at("s/l"), 65534, 65534);
		CHECK_INT(check("s/l", &t), -CVM_E_PERM, "as root: another user's link in a sticky folder: not trusted");
		chmod(at("a"), 0775);
		(void)!chown(at("a"), 0, 65534);
		CHECK_INT(check("a/b", &t), -CVM_E_PERM, "as root: a folder writable by another group: not trusted");
		CHECK(strstr(t.why, "another group") != NULL, "... saying so: '%s'", t.why);
		chmod(at("a"), 0755);
	}
	r = chdir("/");
	(void)r;
	{
		char cmd[PATH_MAX + 16];
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", top);
		(void)!system(cmd);
	}
	free(tmpl);
	return unit_done();
}
