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

#include "alloc.h"
#include "error.h"
#include "fsutil.h"
#include "journal.h"
#include "out.h"
#include "plan.h"

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

/*
 * Opens a journal (name below the store) and refuses anything but a regular
 * file: a symlink is never followed, a FIFO never waited on, a folder never
 * read as an empty journal. The descriptor, -ENOENT (not printed) when there
 * is none and flags do not create it, or an error (printed).
 */
static int open_log(struct cvm_store *s, const char *name, int flags)
{
	struct stat st;
	const char *what;
	int fd;

	fd = cvm_open_regular(s->fd, name, flags | O_NOFOLLOW, 0644);
	if (fd >= 0 || fd == -ENOENT)
		return fd;
	if (fd == -CVM_E_NOTREG && fstatat(s->fd, name, &st, AT_SYMLINK_NOFOLLOW) == 0) {
		what = S_ISLNK(st.st_mode) ? "a symbolic link" : S_ISDIR(st.st_mode) ? "a folder"
		       : S_ISFIFO(st.st_mode) ? "a FIFO" : "a special file";
		return cvm_err(-CVM_E_CONFLICT, "'%s/%s' is %s, not cudnnvm's journal (a regular "
			       "file): refused, left as it is", cvm_safe(s->display), name, what);
	}
	return cvm_err(fd, "cannot open '%s/%s': %s", cvm_safe(s->display), name, cvm_strerror(fd));
}

/*
 * Appended after a last line that has no end (a journal cut short, a crash
 * in the middle of a write): it ends that line so that the next one starts
 * on a line of its own, and it keeps the torn line unreadable as an entry
 * whatever its length (parse_line wants exactly 6 fields, the first 5 not
 * empty: a fragment ending in its k-th field gets k+2 fields more, empty).
 */
#define TORN_END "\t\t(cut short)\n"

static int append_line(struct cvm_store *s, const char *cuda, const char *line)
{
	char name[64], buf[1600], last = '\n';
	struct stat st;
	int fd, r;

	r = cvm_fmt(name, sizeof(name), "history/cuda-%s.log", cuda);
	if (r < 0)
		return cvm_err(r, "cannot write the journal: %s", cvm_strerror(-r));
	if (cvm_plan_dry(s->plan)) {
		char shown[4096], kind[16] = "", from[160] = "", to[160] = "";
		snprintf(shown, sizeof(shown), "%s/%s", s->display, name);
		(void)sscanf(line, "%*[^\t]\t%*[^\t]\t%15[^\t]\t%159[^\t]\t%159[^\t\n]", kind, from, to);
		cvm_plan_describe(s->plan, "append to", shown, NULL, "the line \"%s: %s -> %s\"", kind, from, to);
		return 0;
	}
	if (mkdirat(s->fd, "history", 0755) < 0 && errno != EEXIST)
		return cvm_err(-errno, "cannot write the journal in '%s': %s", cvm_safe(s->display),
			       strerror(errno));
	fd = open_log(s, name, O_RDWR | O_APPEND | O_CREAT);
	if (fd < 0)
		return fd;
	/* Writers hold the store lock: the end seen here is the end written after. */
	r = fstat(fd, &st) < 0 ? -errno : 0;
	if (r == 0 && st.st_size > 0 && pread(fd, &last, 1, st.st_size - 1) != 1)
		r = -errno;
	if (r == 0)
		r = cvm_fmt(buf, sizeof(buf), "%s%s", last == '\n' ? "" : TORN_END, line);
	/* One write of one line: O_APPEND keeps concurrent readers seeing whole lines. */
	if (r == 0)
		r = cvm_write_all(fd, buf, strlen(buf));
	if (r == 0 && fsync(fd) < 0)
		r = -errno;
	close(fd);
	if (r < 0)
		return cvm_err(r, "cannot write '%s/%s': %s", cvm_safe(s->display), name,
			       cvm_strerror(-r));
	return 0;
}

int cvm_journal_append(struct cvm_store *s, const char *cuda, const char *kind,
		       const char *from, const char *to, int argc, char **argv)
{
	char line[1400];
	int r = format_line(line, sizeof(line), kind, from, to, argc, argv);

	if (r < 0)
		return cvm_err(r, "cannot write the journal: %s", cvm_strerror(-r));
	return append_line(s, cuda, line);
}

int cvm_journal_pending_set(struct cvm_store *s, const char *cuda, const char *kind,
			    const char *from, const char *to, int argc, char **argv)
{
	char name[64], line[1400];
	int fd, r;

	/* A dry run journals nothing, so it announces nothing either. */
	if (cvm_plan_dry(s->plan))
		return 0;
	r = format_line(line, sizeof(line), kind, from, to, argc, argv);
	if (r == 0)
		r = cvm_fmt(name, sizeof(name), "history/cuda-%s.log", cuda);
	if (r < 0)
		return cvm_err(r, "cannot write the journal: %s", cvm_strerror(-r));
	/* A journal that cannot take the line refuses the switch before anything changes. */
	fd = open_log(s, name, O_RDONLY);
	if (fd < 0 && fd != -ENOENT)
		return fd;
	if (fd >= 0)
		close(fd);
	r = cvm_fmt(name, sizeof(name), "cuda-%s.pending", cuda);
	if (r < 0)
		return cvm_err(r, "cannot write the journal: %s", cvm_strerror(-r));
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
		(void)cvm_do_unlink_at(s->plan, s->fd, name, shown);
}

/* A field as the writer makes it: not empty (unless it may be), no control character, fits. */
static bool field_ok(const char *f, size_t cap, bool may_be_empty)
{
	size_t n = strlen(f);

	if ((!n && !may_be_empty) || n >= cap)
		return false;
	for (; *f; f++)
		if ((unsigned char)*f < 0x20 || *f == 0x7f)
			return false;
	return true;
}

static bool known_kind(const char *k)
{
	return !strcmp(k, "use") || !strcmp(k, "rollback") || !strcmp(k, "adopt") ||
	       !strcmp(k, "deactivate");
}

/*
 * One line (no newline) into e: 0, or -1 unless it is whole as format_line
 * writes it: exactly 6 tab-separated fields, a decimal time, a known kind,
 * from and to an id or "-", none cut by the size of its field in e.
 */
static int parse_line(char *line, struct cvm_journal_entry *e)
{
	char *f[6], *end;
	int i;

	for (i = 0; i < 6; i++) {
		f[i] = line;
		line = strchr(line, '\t');
		if (line)
			*line++ = '\0';
		else if (i < 5)
			return -1;
	}
	if (line || !*f[0] || strspn(f[0], "0123456789") != strlen(f[0]) || strlen(f[0]) > 18 ||
	    !field_ok(f[1], sizeof(e->user), false) || !known_kind(f[2]) ||
	    !field_ok(f[3], sizeof(e->from), false) || strchr(f[3], ' ') ||
	    !field_ok(f[4], sizeof(e->to), false) || strchr(f[4], ' ') ||
	    !field_ok(f[5], sizeof(e->command), true))
		return -1;
	memset(e, 0, sizeof(*e));
	e->time = strtoll(f[0], &end, 10);
	snprintf(e->user, sizeof(e->user), "%s", f[1]);
	snprintf(e->kind, sizeof(e->kind), "%s", f[2]);
	snprintf(e->from, sizeof(e->from), "%s", strcmp(f[3], "-") ? f[3] : "");
	snprintf(e->to, sizeof(e->to), "%s", strcmp(f[4], "-") ? f[4] : "");
	snprintf(e->command, sizeof(e->command), "%s", f[5]);
	return 0;
}

/* Line lineno (from 1) is ignored; said when report, the first few in full. */
static void damaged(struct cvm_store *s, const char *name, size_t lineno, const char *why,
		    bool report, size_t *count)
{
	if (report && ++*count <= 5)
		cvm_warn("'%s/%s': line %zu is damaged (%s): ignored", cvm_safe(s->display), name,
			 lineno, why);
}

/* The entries of buf (len bytes), each line whole or skipped. *out is malloc'd. */
static int parse_all(struct cvm_store *s, const char *name, char *buf, size_t len, bool report,
		     struct cvm_journal_entry **out, size_t *n)
{
	struct cvm_journal_entry *v = NULL, e;
	size_t cnt = 0, cap = 0, lineno = 0, bad = 0;
	char copy[2048];
	int r;

	for (char *p = buf, *nl; p < buf + len; p = nl + 1) {
		size_t l;

		lineno++;
		nl = memchr(p, '\n', (size_t)(buf + len - p));
		if (!nl) {
			damaged(s, name, lineno, "cut short: no end of line", report, &bad);
			break;
		}
		l = (size_t)(nl - p);
		if (memchr(p, '\0', l)) {
			damaged(s, name, lineno, "a NUL byte in it", report, &bad);
			continue;
		}
		if (l >= sizeof(copy)) {
			damaged(s, name, lineno, "too long", report, &bad);
			continue;
		}
		memcpy(copy, p, l);
		copy[l] = '\0';
		if (parse_line(copy, &e) < 0) {
			damaged(s, name, lineno, "not a whole journal line", report, &bad);
			continue;
		}
		r = CVM_GROW(v, cnt + 1, cap);
		if (r < 0) {
			free(v);
			return r;
		}
		v[cnt++] = e;
	}
	if (bad > 5)
		cvm_warn("'%s/%s': %zu more damaged lines ignored", cvm_safe(s->display), name, bad - 5);
	*out = v;
	*n = cnt;
	return 0;
}

int cvm_journal_read(struct cvm_store *s, const char *cuda, bool report,
		     struct cvm_journal_entry **out, size_t *n)
{
	char name[64], *buf = NULL;
	size_t len = 0;
	int fd, r;

	*out = NULL;
	*n = 0;
	r = cvm_fmt(name, sizeof(name), "history/cuda-%s.log", cuda);
	if (r < 0)
		return r;
	fd = open_log(s, name, O_RDONLY);
	if (fd == -ENOENT)
		return 0;
	if (fd < 0)
		return fd;
	r = cvm_read_fd(fd, 64 << 20, &buf, &len);
	close(fd);
	if (r < 0)
		return cvm_err(r, "cannot read '%s/%s': %s", cvm_safe(s->display), name, cvm_strerror(-r));
	r = parse_all(s, name, buf, len, report, out, n);
	free(buf);
	return r;
}

/* The index of the newest id on the stack, or depth when it is not there. */
static size_t find(const char **stack, size_t depth, const char *id)
{
	for (size_t i = depth; i > 0; i--)
		if (!strcmp(stack[i - 1], id))
			return i - 1;
	return depth;
}

int cvm_journal_previous(const struct cvm_journal_entry *e, size_t n, const char *current,
			 int (*still_installed)(void *arg, const char *id), void *arg,
			 char *to, size_t len)
{
	const char **stack;
	size_t depth = 0, k;
	int r = -CVM_E_NOTFOUND;

	/* At most two pushes a line. */
	stack = calloc(2 * n + 1, sizeof(*stack));
	if (!stack)
		return -ENOMEM;
	/*
	 * Each line says where it came from as well as where it went: where the
	 * stack disagrees, a line is missing (a damaged one was skipped) and the
	 * line's own from and to put it right.
	 */
	for (size_t i = 0; i < n; i++) {
		const char *from = e[i].from, *dest = e[i].to;
		bool top_is_from = depth && !strcmp(stack[depth - 1], from);

		if (!strcmp(e[i].kind, "use") || !strcmp(e[i].kind, "adopt")) {
			/* The switch to from was lost: from was active before dest. */
			if (from[0] && !top_is_from)
				stack[depth++] = from;
			if (dest[0])
				stack[depth++] = dest;
		} else if (!strcmp(e[i].kind, "rollback") && dest[0]) {
			/* Back to dest: what was above it is undone (lost lines with it). */
			k = find(stack, depth, dest);
			if (k < depth) {
				depth = k + 1;
			} else {
				if (top_is_from)
					depth--;
				stack[depth++] = dest;
			}
		} else if (top_is_from || (!from[0] && depth)) {
			depth--;	/* deactivate (and a rollback to nothing) */
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
	int rr, r = 0;

	r = cvm_opendir_at(s->fd, "history", O_NOFOLLOW, &d);
	if (r < 0)
		return r == -ENOENT ? 0 : r;
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
				if (!strcmp(now, e.to) && cvm_journal_read(s, cuda, false, &v, &n) == 0 &&
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
			(void)cvm_do_unlink_at(s->plan, dirfd(d), de->d_name, shown);
		}
	}
	closedir(d);
	return r;
}
