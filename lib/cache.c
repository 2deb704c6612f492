/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cache.h"
#include "config.h"
#include "digest.h"
#include "error.h"
#include "fsutil.h"
#include "out.h"
#include "plan.h"

#define NVIDIA_REDIST "https://developer.download.nvidia.com/compute/cudnn/redist/"

int cvm_mirror(const struct cvm_ctx *ctx, char *buf, size_t len)
{
	char conf[2048];
	const char *m = ctx->mirror;
	int r;

	if (!m || !*m) {
		r = cvm_config_get(ctx->root, "mirror", conf, sizeof(conf));
		if (r < 0)
			return r;
		m = r ? conf : NVIDIA_REDIST;
	}
	/* relative_path is appended: the mirror is a folder. */
	return cvm_fmt(buf, len, "%s%s", m, m[strlen(m) - 1] == '/' ? "" : "/");
}

bool cvm_mirror_is_nvidia(const char *mirror)
{
	return !strcmp(mirror, NVIDIA_REDIST);
}

int cvm_cache_dir(struct cvm_ctx *ctx)
{
	char shown[4096];
	int fd, r;

	snprintf(shown, sizeof(shown), "%s/cache", ctx->store.display);
	r = cvm_do_mkdir_at(&ctx->plan, ctx->store.fd, "cache", 0755, shown);
	if (r < 0)
		return cvm_err(r, "cannot create '%s/cache': %s", cvm_safe(ctx->store.display),
			       cvm_strerror(-r));
	fd = openat(ctx->store.fd, "cache", O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	/* A dry run did not make it: nothing is cached. */
	if (fd < 0 && errno == ENOENT && cvm_plan_dry(&ctx->plan))
		return -ENOENT;
	if (fd < 0)
		return cvm_err(-errno, "cannot open '%s/cache': %s", cvm_safe(ctx->store.display),
			       strerror(errno));
	return fd;
}

int cvm_cache_open(struct cvm_ctx *ctx, const struct cvm_build *b, bool offline, bool fresh,
		   const struct cvm_fetch_opts *fo, char *path, size_t len, bool *verified)
{
	char mirror[2048], url[4096];
	int dfd, fd, r;

	*verified = false;
	dfd = cvm_cache_dir(ctx);
	if (dfd < 0 && dfd != -ENOENT)
		return dfd;
	r = cvm_fmt(path, len, "%s/cache/%s", ctx->store.display, b->file_name);
	if (r < 0)
		goto out;
	if (!fresh && dfd >= 0) {
		fd = cvm_open_regular(dfd, b->file_name, O_RDONLY | O_NOFOLLOW, 0);
		if (fd >= 0) {
			cvm_verbose("using the cached %s", path);
			r = fd;
			goto out;
		}
		if (fd != -ENOENT) {
			r = cvm_err(fd, "cannot open '%s': %s", cvm_safe(path), cvm_strerror(fd));
			goto out;
		}
	}
	if (offline) {
		r = cvm_err(-CVM_E_NOTFOUND, "%s is not in the cache (%s/cache) and --offline forbids "
			    "downloading it: run 'cudnnvm fetch' where there is network and copy it there",
			    b->file_name, cvm_safe(ctx->store.display));
		goto out;
	}
	r = cvm_mirror(ctx, mirror, sizeof(mirror));
	if (r == 0)
		r = cvm_fmt(url, sizeof(url), "%s%s", mirror, b->relative_path);
	if (r < 0)
		goto out;
	if (cvm_plan_describe(&ctx->plan, "download", url, NULL, "(%s%llu bytes) to %s", b->has_size ? "" : "? ",
			      (unsigned long long)(b->has_size ? b->size : 0), cvm_safe(path))) {
		r = -ECANCELED;
		goto out;
	}
	cvm_info("downloading %s", url);
	r = cvm_fetch(url, dfd, b->file_name, b->has_size ? b->size : 0, b->sha256, fo);
	if (r >= 0)
		*verified = true;
out:
	if (dfd >= 0)
		close(dfd);
	return r;
}

void cvm_cache_discard(struct cvm_ctx *ctx, const struct cvm_build *b)
{
	int dfd = openat(ctx->store.fd, "cache", O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (dfd < 0)
		return;
	char shown[4096];
	snprintf(shown, sizeof(shown), "%s/cache/%s", ctx->store.display, b->file_name);
	if (cvm_plan_describe(&ctx->plan, "remove", shown, NULL, "(it failed verification)")) {
		close(dfd);
		return;
	}
	if (unlinkat(dfd, b->file_name, 0) == 0)
		cvm_warn("removed the cached %s: it failed verification", b->file_name);
	close(dfd);
}

int cvm_cache_check(int fd, const struct cvm_build *b, const char *path)
{
	uint8_t d[CVM_SHA256_LEN];
	char hex[CVM_SHA256_HEX];
	struct stat st;
	uint64_t n = 0;
	int r;

	if (fstat(fd, &st) < 0)
		return cvm_err(-errno, "cannot read '%s': %s", cvm_safe(path), strerror(errno));
	if (b->has_size && (uint64_t)st.st_size != b->size)
		return cvm_err(-CVM_E_INTEGRITY, "'%s' has %llu bytes, the catalogue says %llu",
			       cvm_safe(path), (unsigned long long)st.st_size,
			       (unsigned long long)b->size);
	r = cvm_sha256_fd(fd, d, &n, NULL, NULL);
	if (r < 0)
		return cvm_err(r, "cannot read '%s': %s", cvm_safe(path), cvm_strerror(-r));
	cvm_hex_encode(d, sizeof(d), hex);
	if (strcmp(hex, b->sha256))
		return cvm_err(-CVM_E_INTEGRITY, "'%s': SHA-256 mismatch: expected %s, got %s",
			       cvm_safe(path), b->sha256, hex);
	return 0;
}
