/* SPDX-License-Identifier: MIT */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cudnnvm/error.h"
#include "cudnnvm/fsutil.h"
#include "cudnnvm/journal.h"
#include "cudnnvm/out.h"
#include "cudnnvm/plan.h"

const char *cvm_user_name(void)
{
	static char name[256];
	const char *s = getenv("SUDO_USER");

	if (cvm_is_admin() && s && *s)
		return s;
	return cvm_os_user(name, sizeof(name)) == 0 ? name : "unknown";
}

/* Tabs and newlines would break the line format: they become spaces. */
static void clean(char *dst, size_t len, const char *src)
{
	size_t i;

	for (i = 0; src && src[i] && i + 1 < len; i++)
		dst[i] = ((unsigned char)src[i] < 0x20 || src[i] == 0x7f) ? ' ' : src[i];
	dst[i] = '\0';
}

/* The journal's line for one switch (time and user filled in here). */
static int format_line(char *line, size_t len, const char *kind, const char *from, const char *to,
		       int argc, char **argv)
{
	char cmd[512] = "", user[64], part[512];
	size_t o = 0;

	for (int i = 0; i < argc && o + 2 < sizeof(cmd); i++) {
		clean(part, sizeof(part), argv[i]);
		o += (size_t)snprintf(cmd + o, sizeof(cmd) - o, "%s%s", i ? " " : "", part);
	}
	if (o >= sizeof(cmd))
		cmd[sizeof(cmd) - 1] = '\0';
	clean(user, sizeof(user), cvm_user_name());
	return cvm_fmt(line, len, "%lld\t%s\t%s\t%s\t%s\t%s\n", (long long)time(NULL), user, kind,
		       from && *from ? from : "-", to && *to ? to : "-", cmd);
}

static int append_line(struct cvm_store *s, const char *cuda, const char *line)
{
	char name[64];
	int fd, r;

	r = cvm_fmt(name, sizeof(name), "history/cuda-%s.log", cuda);
	if (r < 0)
		return cvm_err(r, "cannot write the journal: %s", strerror(-r));
	if (cvm_plan_dry()) {
		char shown[4096], kind[16] = "", from[160] = "", to[160] = "";
		snprintf(shown, sizeof(shown), "%s/%s", s->display, name);
		(void)sscanf(line, "%*[^\t]\t%*[^\t]\t%15[^\t]\t%159[^\t]\t%159[^\t\n]", kind, from, to);
		cvm_plan_describe("append to", shown, NULL, "the line \"%s: %s -> %s\"", kind, from, to);
		return 0;
	}
	if (mkdirat(s->fd, "history", 0755) < 0 && errno != EEXIST)
		return cvm_err(-errno, "cannot write the journal in '%s': %s", cvm_safe(s->display),
			       strerror(errno));
	fd = cvm_open_regular(s->fd, name, O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW, 0644);
	if (fd < 0)
		return cvm_err(fd, "cannot open '%s/%s': %s", cvm_safe(s->display), name,
			       cvm_strerror(fd));
	/* One write of one line: O_APPEND keeps concurrent readers seeing whole lines. */
	r = cvm_write_all(fd, line, strlen(line));
	if (r == 0 && fsync(fd) < 0)
		r = -errno;
	close(fd);
	if (r < 0)
		return cvm_err(r, "cannot write '%s/%s': %s", cvm_safe(s->display), name,
			       strerror(-r));
	return 0;
}

int cvm_journal_append(struct cvm_store *s, const char *cuda, const char *kind,
		       const char *from, const char *to, int argc, char **argv)
{
	char line[1400];
	int r = format_line(line, sizeof(line), kind, from, to, argc, argv);

	if (r < 0)
		return cvm_err(r, "cannot write the journal: %s", strerror(-r));
	return append_line(s, cuda, line);
}

int cvm_journal_pending_set(struct cvm_store *s, const char *cuda, const char *kind,
			    const char *from, const char *to, int argc, char **argv)
{
	char name[64], line[1400];
	struct stat st;
	int fd, r;

	/* A dry run journals nothing, so it announces nothing either. */
	if (cvm_plan_dry())
		return 0;
	/* Before anything switches: a journal that is not a file (a FIFO) could take no line. */
	r = cvm_fmt(name, sizeof(name), "history/cuda-%s.log", cuda);
	if (r == 0 && fstatat(s->fd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && !S_ISREG(st.st_mode))
		return cvm_err(-CVM_E_NOTREG, "'%s/%s': not a regular file (left as it is; nothing "
			       "changed)", cvm_safe(s->display), name);
	r = format_line(line, sizeof(line), kind, from, to, argc, argv);
	if (r == 0)
		r = cvm_fmt(name, sizeof(name), "cuda-%s.pending", cuda);
	if (r < 0)
		return cvm_err(r, "cannot write the journal: %s", strerror(-r));
	if (mkdirat(s->fd, "history", 0755) < 0 && errno != EEXIST)
		return cvm_err(-errno, "cannot write the journal in '%s': %s", cvm_safe(s->display),
			       strerror(errno));
	fd = openat(s->fd, "history", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	r = fd < 0 ? -errno : cvm_write_file_at(fd, name, line, strlen(line), 0644);
	if (fd >= 0)
		close(fd);
	if (r < 0)
		return cvm_err(r, "cannot write '%s/history/%s': %s", cvm_safe(s->display), name,
			       cvm_strerror(r));
	return 0;
}

void cvm_journal_pending_clear(struct cvm_store *s, const char *cuda)
{
	char name[64], shown[4096];

	if (cvm_fmt(name, sizeof(name), "history/cuda-%s.pending", cuda) == 0 &&
	    cvm_fmt(shown, sizeof(shown), "%s/%s", s->display, name) == 0)
		(void)cvm_do_unlink_at(s->fd, name, shown);
}

static int parse_line(char *line, struct cvm_journal_entry *e)
{
	char *f[6], *save = NULL, *end;
	int i;

	for (i = 0; i < 6; i++) {
		f[i] = strtok_r(i ? NULL : line, "\t", &save);
		if (!f[i])
			return i == 5 ? (f[5] = "", 0) : -1;
	}
	memset(e, 0, sizeof(*e));
	e->time = strtoll(f[0], &end, 10);
	if (*end)
		return -1;
	snprintf(e->user, sizeof(e->user), "%s", f[1]);
	snprintf(e->kind, sizeof(e->kind), "%s", f[2]);
	snprintf(e->from, sizeof(e->from), "%s", strcmp(f[3], "-") ? f[3] : "");
	snprintf(e->to, sizeof(e->to), "%s", strcmp(f[4], "-") ? f[4] : "");
	snprintf(e->command, sizeof(e->command), "%s", f[5]);
	return 0;
}

int cvm_journal_read(struct cvm_store *s, const char *cuda, struct cvm_journal_entry **out,
		     size_t *n)
{
	struct cvm_journal_entry *v = NULL, e;
	char name[64], *buf = NULL, *line, *save = NULL;
	size_t cnt = 0, cap = 0, len;
	int r;

	*out = NULL;
	*n = 0;
	r = cvm_fmt(name, sizeof(name), "history/cuda-%s.log", cuda);
	if (r < 0)
		return r;
	r = cvm_read_regular_at(s->fd, name, O_NOFOLLOW, 64 << 20, &buf, &len);
	if (r == -ENOENT)
		return 0;
	if (r < 0)
		return cvm_err(r, "cannot read '%s/%s': %s", cvm_safe(s->display), name, cvm_strerror(r));
	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char copy[2048];
		snprintf(copy, sizeof(copy), "%s", line);
		if (parse_line(copy, &e) < 0)
			continue;
		if (cnt == cap) {
			cap = cap ? cap * 2 : 32;
			struct cvm_journal_entry *nv = realloc(v, cap * sizeof(*v));
			if (!nv) {
				free(v);
				free(buf);
				return -ENOMEM;
			}
			v = nv;
		}
		v[cnt++] = e;
	}
	free(buf);
	*out = v;
	*n = cnt;
	return 0;
}

int cvm_journal_previous(const struct cvm_journal_entry *e, size_t n, const char *current,
			 int (*still_installed)(void *arg, const char *id), void *arg,
			 char *to, size_t len)
{
	const char **stack;
	size_t depth = 0;
	int r = -CVM_E_NOTFOUND;

	stack = calloc(n + 1, sizeof(*stack));
	if (!stack)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		if (!strcmp(e[i].kind, "use") || !strcmp(e[i].kind, "adopt")) {
			if (e[i].to[0])
				stack[depth++] = e[i].to;
		} else if (depth) {
			depth--;	/* rollback, deactivate */
		}
	}
	/* The top is the current version (unless the journal lost track): drop it. */
	while (depth && current && !strcmp(stack[depth - 1], current))
		depth--;
	while (depth) {
		const char *id = stack[--depth];
		if ((!current || strcmp(id, current)) && still_installed(arg, id)) {
			r = cvm_fmt(to, len, "%s", id);
			break;
		}
	}
	free(stack);
	return r;
}

int cvm_journal_repair(struct cvm_store *s,
		       int (*active)(struct cvm_store *s, const char *cuda, char *id, size_t len))
{
	struct dirent *de;
	DIR *d;
	int fd, rr, r = 0;

	fd = openat(s->fd, "history", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? 0 : -errno;
	d = fdopendir(fd);
	if (!d) {
		close(fd);
		return -errno;
	}
	while ((de = readdir(d))) {
		struct cvm_journal_entry e, *v = NULL;
		char cuda[32], now[160] = "", *buf = NULL, copy[2048];
		size_t n = 0, len = 0, nl = strlen(de->d_name);

		if (nl < 13 || strncmp(de->d_name, "cuda-", 5) || strcmp(de->d_name + nl - 8, ".pending") ||
		    nl - 13 >= sizeof(cuda))
			continue;
		memcpy(cuda, de->d_name + 5, nl - 13);
		cuda[nl - 13] = '\0';
		rr = cvm_read_regular_at(dirfd(d), de->d_name, O_NOFOLLOW, 4096, &buf, &len);
		if (rr == 0) {
			snprintf(copy, sizeof(copy), "%s", buf);
			copy[strcspn(copy, "\n")] = '\0';
			if (parse_line(copy, &e) == 0) {
				if (active(s, cuda, now, sizeof(now)) < 0)
					now[0] = '\0';
				/*
				 * The switch it announced happened (the active link says so)
				 * but its line may be missing: add it once.
				 */
				if (!strcmp(now, e.to) && cvm_journal_read(s, cuda, &v, &n) == 0 &&
				    !(n && !strcmp(v[n - 1].kind, e.kind) && !strcmp(v[n - 1].from, e.from) &&
				      !strcmp(v[n - 1].to, e.to) && v[n - 1].time >= e.time)) {
					cvm_verbose("the journal of CUDA %s misses the switch to %s: added",
						    cuda, e.to[0] ? e.to : "none");
					buf[strcspn(buf, "\n")] = '\0';
					snprintf(copy, sizeof(copy), "%s\n", buf);
					r = append_line(s, cuda, copy);
				}
				free(v);
			}
		}
		free(buf);
		/* Only a file is ours to remove: a FIFO or a link there is left (and refused by use). */
		if (r == 0 && rr != -CVM_E_NOTREG) {
			char shown[4096];
			snprintf(shown, sizeof(shown), "%s/history/%s", s->display, de->d_name);
			(void)cvm_do_unlink_at(dirfd(d), de->d_name, shown);
		}
	}
	closedir(d);
	return r;
}
