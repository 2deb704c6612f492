/* SPDX-License-Identifier: MIT */
/* cache list | cache clean [--all]: the downloaded archives. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "entry.h"
#include "error.h"
#include "json.h"
#include "out.h"
#include "store.h"

/* Only names cudnnvm puts there: archives of the catalogue and their .part. */
static bool ours(const char *name)
{
	size_t n = strlen(name);
	static const char *const ends[] = { ".tar.xz", ".zip", ".tgz", ".tar.gz", ".part" };

	if (strncmp(name, "cudnn-", 6))
		return false;
	for (size_t i = 0; i < sizeof(ends) / sizeof(ends[0]); i++)
		if (n > strlen(ends[i]) && !strcmp(name + n - strlen(ends[i]), ends[i]))
			return true;
	return false;
}

/* Whether the archive's version is installed (its top-folder-like name says which). */
static bool installed(struct cvm_store *s, const char *name)
{
	char top[256], ver[64], plat[64], id[200];
	const char *dot = strstr(name, "-archive");
	int major;

	if (!dot || (size_t)(dot - name) + 8 >= sizeof(top))
		return false;
	snprintf(top, sizeof(top), "%.*s-archive", (int)(dot - name), name);
	return cvm_entry_top_version(top, ver, sizeof(ver), &major, plat, sizeof(plat)) == 0 &&
	       cvm_store_id(id, sizeof(id), ver, major, plat) == 0 && cvm_store_has(s, id);
}

int cvm_cmd_cache(struct cvm_ctx *ctx, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "all", no_argument, NULL, 'a' },
		CVM_COMMON_LONGOPTS,
		{ NULL, 0, NULL, 0 }
	};
	cvm_json *doc = NULL, *arr = NULL;
	struct dirent *de;
	struct stat st;
	DIR *d = NULL;
	bool all = false, clean;
	size_t n = 0;
	unsigned long long bytes = 0;
	int c, fd, r = 0;

	while ((c = cvm_cli_getopt(argc, argv, opts)) != -1) {
		if (c == 'a')
			all = true;
		else
			return cvm_usage_bad_option("cache", argv);
	}
	if (optind + 1 != argc || (strcmp(argv[optind], "list") && strcmp(argv[optind], "clean")))
		return cvm_usage("cache", "expected 'cache list' or 'cache clean [--all]'");
	clean = !strcmp(argv[optind], "clean");
	if (all && !clean)
		return cvm_usage("cache", "--all goes with 'cache clean'");
	if (cvm_out.json) {
		doc = cvm_json_object();
		arr = cvm_json_array();
		cvm_json_set(doc, clean ? "removed" : "cache", arr);
	}
	fd = openat(ctx->store.fd, "cache", O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	if (fd >= 0 && !(d = fdopendir(fd)))
		close(fd);
	while (d && (de = readdir(d))) {
		bool part;
		if (!ours(de->d_name) || fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
		    !S_ISREG(st.st_mode))
			continue;
		part = strstr(de->d_name, ".part") != NULL;
		if (clean && !all && !part && !installed(&ctx->store, de->d_name))
			continue;
		if (clean && unlinkat(dirfd(d), de->d_name, 0) < 0) {
			r = cvm_err(-errno, "cannot remove '%s/cache/%s': %s", cvm_safe(ctx->store.display),
				    cvm_safe(de->d_name), strerror(errno));
			break;
		}
		n++;
		bytes += (unsigned long long)st.st_size;
		if (arr) {
			cvm_json *o = cvm_json_object();
			cvm_json_set(o, "file", cvm_json_string(de->d_name));
			cvm_json_set(o, "size", cvm_json_integer((int64_t)st.st_size));
			cvm_json_set(o, "partial", cvm_json_bool(part));
			cvm_json_append(arr, o);
		} else {
			/* The listing is what 'cache list' is for (printed under -q too). */
			(clean ? cvm_info : cvm_print)("%s%-70s %10.1f MB%s", clean ? "removed " : "",
						       de->d_name, (double)st.st_size / 1e6,
						       part ? "  (partial download)" : "");
		}
	}
	if (d)
		closedir(d);
	if (doc) {
		cvm_json_print(doc);
		cvm_json_free(doc);
	} else if (r == 0) {
		cvm_info("%zu file%s, %.1f MB%s", n, n == 1 ? "" : "s", (double)bytes / 1e6,
			 clean ? " removed" : " in the cache");
	}
	return r;
}
