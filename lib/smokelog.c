/* SPDX-License-Identifier: MIT */
/* The last smoke test of each version (smokelog.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "fsutil.h"
#include "json.h"
#include "smokelog.h"

static const char *const names[] = { "never run", "failed", "skipped", "passed" };

const char *cvm_smokelog_name(enum cvm_smoke_result r)
{
	return (unsigned)r < 4 ? names[r] : "?";
}

/* An id is one path component: anything else is never a file name here. */
static bool plain(const char *id)
{
	return id && *id && !strchr(id, '/') && strcmp(id, ".") && strcmp(id, "..");
}

int cvm_smokelog_write(struct cvm_store *s, const char *id, enum cvm_smoke_result result,
		       const char *toolkit, const char *reason)
{
	char name[300];
	cvm_json *o = NULL;
	char *doc = NULL;
	int dfd = -1, r;

	if (s->fd < 0 || !plain(id) || cvm_fmt(name, sizeof(name), "%s.json", id) < 0)
		return -EINVAL;
	if (mkdirat(s->fd, "smoke", 0755) < 0 && errno != EEXIST)
		return -errno;
	dfd = openat(s->fd, "smoke", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0)
		return -errno;
	o = cvm_json_object();
	if (!o) {
		r = -ENOMEM;
		goto out;
	}
	cvm_json_set(o, "id", cvm_json_string(id));
	cvm_json_set(o, "time", cvm_json_integer((int64_t)time(NULL)));
	cvm_json_set(o, "result", cvm_json_string(cvm_smokelog_name(result)));
	cvm_json_set(o, "reason", cvm_json_string(reason));
	cvm_json_set(o, "toolkit", cvm_json_string(toolkit));
	doc = cvm_json_dump(o);
	r = doc ? cvm_write_file_at(dfd, name, doc, strlen(doc), 0644) : -ENOMEM;
out:
	free(doc);
	cvm_json_free(o);
	close(dfd);
	return r;
}

void cvm_smokelog_read(struct cvm_store *s, const char *id, struct cvm_smokelog *out)
{
	char name[320], *buf = NULL;
	cvm_json *o = NULL;
	const char *res, *why, *tk;
	size_t len;
	int64_t t;

	memset(out, 0, sizeof(*out));
	if (s->fd < 0 || !plain(id) || cvm_fmt(name, sizeof(name), "smoke/%s.json", id) < 0)
		return;
	if (cvm_read_regular_at(s->fd, name, O_NOFOLLOW, 1 << 16, &buf, &len) < 0)
		return;
	if (cvm_json_parse(buf, len, name, &o) == 0 && cvm_json_is_object(o)) {
		res = cvm_json_str(cvm_json_get(o, "result"));
		for (int i = 1; res && i < 4; i++)
			if (!strcmp(res, names[i]))
				out->result = (enum cvm_smoke_result)i;
		if (cvm_json_int(cvm_json_get(o, "time"), &t) == 0)
			out->time = t;
		why = cvm_json_str(cvm_json_get(o, "reason"));
		snprintf(out->reason, sizeof(out->reason), "%s", why ? why : "");
		tk = cvm_json_str(cvm_json_get(o, "toolkit"));
		snprintf(out->toolkit, sizeof(out->toolkit), "%s", tk ? tk : "");
	}
	cvm_json_free(o);
	free(buf);
}
