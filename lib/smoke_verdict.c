/* SPDX-License-Identifier: MIT */
/* The smoke test's parent, the part both platforms share (smokeverdict.h). */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "toolkit.h"
#include "config.h"
#include "cudnn.h"
#include "error.h"
#include "fsutil.h"
#include "out.h"
#include "record.h"
#include "smokelog.h"
#include "smokeverdict.h"

double cvm_smoke_timeout_s(void)
{
	long s;

	/* main() checked it (cvm_config_env_check): a bad value never gets here. */
	return cvm_config_env_number("CUDNNVM_SMOKE_TIMEOUT", 120, &s) < 0 ? 120 : (double)s;
}

/* docs/cudnn-facts.md; 9.21's engines_tensor_ir is the platforms' own check (not every 9.x has it). */
static const char *const subs8[] = { "ops_infer", "ops_train", "cnn_infer", "cnn_train",
				     "adv_infer", "adv_train", NULL };
static const char *const subs9[] = { "ops", "cnn", "adv", "graph", "heuristic",
				     "engines_precompiled", "engines_runtime_compiled", NULL };

const char *const *cvm_smoke_sublibs(unsigned major)
{
	return major >= 9 ? subs9 : subs8;
}

int cvm_smoke_read_record(struct cvm_ctx *ctx, const char *id, struct cvm_record *rec)
{
	int fd, r;

	fd = cvm_store_open_version(&ctx->store, id);
	if (fd < 0)
		return cvm_err(fd, "cannot open %s: %s", id, cvm_strerror(-fd));
	r = cvm_record_read(fd, id, rec);
	close(fd);
	return r;
}

unsigned long cvm_smoke_header_version(const char *inc, struct cvm_version *hv)
{
	char hpath[4096], *text = NULL;
	unsigned long header = 0;
	size_t len;

	if (cvm_fmt(hpath, sizeof(hpath), "%s/cudnn_version.h", inc) == 0 &&
	    cvm_read_file_at(AT_FDCWD, hpath, 1 << 20, &text, &len) == 0) {
		if (cvm_cudnn_header_version(text, len, hv) == 0)
			header = cvm_version_encode(hv);
		free(text);
	}
	return header;
}

size_t cvm_smoke_child_opts(const struct cvm_smoke_opts *o, char **argv, size_t argc, char *devarg,
			    size_t len)
{
	if (o->no_gpu)
		argv[argc++] = (char *)"--no-gpu";
	if (o->all_devices) {
		argv[argc++] = (char *)"--all-devices";
	} else if (o->device >= 0) {
		snprintf(devarg, len, "%d", o->device);
		argv[argc++] = (char *)"--device";
		argv[argc++] = devarg;
	}
	argv[argc] = NULL;
	return argc;
}

const char *cvm_smoke_get(const struct cvm_smoke_report *res, const char *key, char *val,
			  size_t len)
{
	size_t kl = strlen(key);

	for (const char *p = res->out; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
		if (!strncmp(p, key, kl) && p[kl] == ' ') {
			size_t n = strcspn(p + kl + 1, "\n");
			snprintf(val, len, "%.*s", (int)n, p + kl + 1);
			return val;
		}
	}
	return NULL;
}

/* The child's keys: any other line is what cuDNN or the loader wrote (its stderr). */
static bool is_key_line(const char *p)
{
	static const char *const keys[] = { "error", "path", "version", "cudart", "cudart_path",
					    "cudart_runtime", "gpu_skip", "driver", "devices", "ran",
					    "mapped", "sub", "sub_error" };
	size_t n = strcspn(p, " \n");

	if (!strncmp(p, "dev", 3) && isdigit((unsigned char)p[3]))
		return true;
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		if (strlen(keys[i]) == n && !strncmp(p, keys[i], n))
			return true;
	return false;
}

/* cuDNN's own lines, once, under the step that failed. */
void cvm_smoke_show_log(struct cvm_smoke_report *res)
{
	bool head = false;

	if (!res || res->log_shown || cvm_out.json)
		return;
	res->log_shown = true;
	for (const char *p = res->out; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
		char line[1024];
		size_t n = strcspn(p, "\n");
		if (!n || is_key_line(p))
			continue;
		if (!head)
			cvm_info("  cuDNN and the loader said:");
		head = true;
		snprintf(line, sizeof(line), "%.*s", (int)(n < sizeof(line) ? n : sizeof(line) - 1), p);
		cvm_info("    %s", cvm_safe(line));
	}
}

bool cvm_smoke_versions(const struct cvm_smoke_report *res, unsigned long *libv,
			unsigned long *cudart, char *path, size_t len, const char *fallback)
{
	char val[4096];

	if (!cvm_smoke_get(res, "version", val, sizeof(val)))
		return false;
	*libv = strtoul(val, NULL, 10);
	if (cvm_smoke_get(res, "cudart", val, sizeof(val)))
		*cudart = strtoul(val, NULL, 10);
	if (!cvm_smoke_get(res, "path", path, len))
		snprintf(path, len, "%s", fallback);
	return true;
}

static void add_str(cvm_json *o, const char *k, const char *v)
{
	if (o)
		cvm_json_set(o, k, cvm_json_string(v));
}

static void add_int(cvm_json *o, const char *k, long long v)
{
	if (o)
		cvm_json_set(o, k, cvm_json_integer(v));
}

void cvm_smoke_library(const struct cvm_toolkit *tk, const char *id, const char *library,
		       unsigned long header, unsigned long libv, unsigned long cudart, cvm_json *json)
{
	add_str(json, "library", library);
	add_int(json, "header_version", (long long)header);
	add_int(json, "library_version", (long long)libv);
	add_int(json, "cudart_version", (long long)cudart);
	if (!cvm_out.json)
		cvm_info("smoke test%s%s for CUDA %d.%d:\n  library   %s (cuDNN %lu, headers %lu, "
			 "built for CUDA runtime %lu)", id ? " of " : "", id ? id : "", tk->major,
			 tk->minor, cvm_safe(library), libv, header, cudart);
}

/* Judges the GPU lines of one device; fills a JSON object when asked. */
static int judge_device(struct cvm_smoke_report *res, int dev, unsigned long cudnn,
			unsigned long cudart, const struct cvm_archs *archs, cvm_json *d)
{
	char key[32], name[300] = "?", cc[16] = "?", algo[64] = "?", ms[32] = "0", err[32] = "0";
	char passed[8] = "0", why[512], diff[32], gate[640];
	int major = 0, minor = 0, r = 0;
	const char *problem, *before = NULL;

#define DEV(k, buf) (snprintf(key, sizeof(key), "dev%d_%s", dev, k), \
		     cvm_smoke_get(res, key, buf, sizeof(buf)))
	DEV("name", name);
	DEV("cc", cc);
	sscanf(cc, "%d.%d", &major, &minor);
	add_int(d, "device", dev);
	add_str(d, "name", name);
	add_str(d, "compute_capability", cc);
	problem = cvm_ccgate_check(archs, cudnn, cudart, major, minor, gate, sizeof(gate));
	if (problem) {
		r = cvm_err(-CVM_E_SMOKE, "smoke test: GPU %d (%s) has compute capability %s, %s",
			    dev, cvm_safe(name), cc, problem);
		before = problem;
	} else if (DEV("error", why)) {
		r = cvm_err(-CVM_E_SMOKE, "smoke test: the convolution failed on GPU %d (%s): %s", dev,
			    cvm_safe(name), cvm_safe(why));
		before = why;
	} else if (!DEV("passed", passed)) {
		r = cvm_err(-CVM_E_SMOKE, "smoke test: GPU %d (%s) gave no result", dev, cvm_safe(name));
	}
	DEV("algo", algo);
	DEV("ms", ms);
	DEV("max_abs_error", err);
	if (r == 0 && strcmp(passed, "1"))
		r = cvm_err(-CVM_E_SMOKE, "smoke test: GPU %d (%s): the convolution differs from the "
			    "CPU reference by %s", dev, cvm_safe(name), err);
	if (r == 0 && DEV("diff_from_first", diff) && strtod(diff, NULL) > 1e-5)
		r = cvm_err(-CVM_E_SMOKE, "smoke test: GPU %d (%s) differs from the first GPU by %s: "
			    "the cards do not compute alike", dev, cvm_safe(name), diff);
#undef DEV
	add_str(d, "algo", algo);
	if (d) {
		cvm_json_set(d, "ms", cvm_json_real(strtod(ms, NULL)));
		cvm_json_set(d, "max_abs_error", cvm_json_real(strtod(err, NULL)));
		cvm_json_set(d, "passed", cvm_json_bool(r == 0));
	}
	if (!cvm_out.json && before)
		cvm_info("  GPU %d     %s (compute capability %s): FAILED before a result: %s", dev,
			 cvm_safe(name), cc, cvm_safe(before));
	else if (!cvm_out.json)
		cvm_info("  GPU %d     %s (compute capability %s): %s, %s ms, max abs error %s: %s", dev,
			 cvm_safe(name), cc, algo, ms, err, r == 0 ? "passed" : "FAILED");
	if (r < 0)
		cvm_smoke_show_log(res);
	return r;
}

static double worst_error(const struct cvm_smoke_report *res, int ndev)
{
	double worst = 0;
	char key[32], val[64];

	(void)ndev;
	for (const char *p = res->out; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
		int dev;
		if (sscanf(p, "ran %d", &dev) != 1)
			continue;
		snprintf(key, sizeof(key), "dev%d_max_abs_error", dev);
		if (cvm_smoke_get(res, key, val, sizeof(val)) && strtod(val, NULL) > worst)
			worst = strtod(val, NULL);
	}
	return worst;
}

static double first_ms(const struct cvm_smoke_report *res)
{
	char key[32], val[64];
	int dev;
	const char *p = strstr(res->out, "ran ");

	if (!p || sscanf(p, "ran %d", &dev) != 1)
		return 0;
	snprintf(key, sizeof(key), "dev%d_ms", dev);
	return cvm_smoke_get(res, key, val, sizeof(val)) ? strtod(val, NULL) : 0;
}

int cvm_smoke_gpu_judge(struct cvm_smoke_report *res, unsigned long cudnn, unsigned long cudart,
			const struct cvm_archs *archs, cvm_json *gpu, int *ndev)
{
	cvm_json *devs = cvm_json_array();
	int r = 0;

	*ndev = 0;
	if (!devs)
		return -ENOMEM;
	for (const char *p = res->out; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
		int dev;
		if (sscanf(p, "ran %d", &dev) == 1) {
			cvm_json *d = cvm_json_object();
			int k = judge_device(res, dev, cudnn, cudart, archs, d);
			cvm_json_append(devs, d);
			(*ndev)++;
			if (k < 0 && r == 0)
				r = k;
		}
	}
	if (*ndev) {
		/* docs/cli.md's shape names one device; every device is under "devices". */
		cvm_json *first = cvm_json_at(devs, 0);
		const char *keys[] = { "name", "algo", "compute_capability" };
		for (size_t i = 0; i < 3; i++)
			cvm_json_set(gpu, keys[i], cvm_json_string(cvm_json_str(cvm_json_get(first, keys[i]))));
		cvm_json_set(gpu, "max_abs_error", cvm_json_real(worst_error(res, *ndev)));
		cvm_json_set(gpu, "ms", cvm_json_real(first_ms(res)));
		cvm_json_set(gpu, "devices", devs);
		devs = NULL;
	}
	cvm_json_free(devs);
	return r;
}

int cvm_smoke_gpu_end(struct cvm_smoke_report *res, int r, int ndev, cvm_json *gpu)
{
	char val[1024];

	if (r == 0 && !ndev && cvm_smoke_get(res, "error", val, sizeof(val)))
		r = cvm_err(-CVM_E_SMOKE, "smoke test: %s", cvm_safe(val));
	if (r == 0 && !ndev) {
		if (!cvm_smoke_get(res, "gpu_skip", val, sizeof(val)))
			snprintf(val, sizeof(val), "no GPU result");
		cvm_json_set(gpu, "skipped", cvm_json_string(val));
		if (!cvm_out.json)
			cvm_info("  GPU       skipped: %s", cvm_safe(val));
		r = -CVM_E_SKIPPED;
	}
	if (ndev)
		cvm_json_set(gpu, "passed", cvm_json_bool(r == 0));
	if (cvm_smoke_get(res, "driver", val, sizeof(val)))
		add_int(gpu, "cuda_driver_version", strtol(val, NULL, 10));
	/* The same keys whether the GPU part ran or not: null where not known. */
	static const char *const all[] = { "name", "algo", "compute_capability", "passed",
					   "max_abs_error", "ms", "skipped", "cuda_driver_version" };
	for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
		if (!cvm_json_get(gpu, all[i]))
			cvm_json_set(gpu, all[i], cvm_json_string(NULL));
	if (!cvm_json_get(gpu, "devices"))
		cvm_json_set(gpu, "devices", cvm_json_array());
	return r;
}

/* The headers a build against this toolkit would see: there, and of the version tested. */
static int check_headers(struct cvm_smoke_check *c, const struct cvm_smoke_os *os)
{
	c->header = cvm_smoke_header_version(c->inc, &c->hv);
	if (!c->header)
		return cvm_err(-CVM_E_SMOKE, "smoke test: %s/cudnn_version.h is missing or has no "
			       "version macros", cvm_safe(c->inc_shown));
	if (c->id && c->header != c->rec.cudnn_version)
		return cvm_err(-CVM_E_SMOKE, "smoke test: the headers in %s say cuDNN %lu, but %s %s "
			       "is %lu", cvm_safe(c->inc_shown), c->header, os->tested, c->id,
			       c->rec.cudnn_version);
	return 0;
}

/* The dispatcher and every sub-library of the headers' major, in the library folder. */
static int check_files(struct cvm_smoke_check *c, const struct cvm_smoke_os *os)
{
	const char *const *subs;
	char sub[96];
	int r;

	os->lib_name(NULL, c->hv.part[0], c->name, sizeof(c->name));
	r = os->check_lib(c->lib, c->name, c->shown);
	subs = cvm_smoke_sublibs(c->hv.part[0]);
	for (size_t i = 0; r == 0 && subs[i]; i++) {
		os->lib_name(subs[i], c->hv.part[0], sub, sizeof(sub));
		r = os->check_lib(c->lib, sub, c->shown);
	}
	if (r == 0 && c->header >= 92100) {
		os->lib_name("engines_tensor_ir", 9, sub, sizeof(sub));
		r = os->check_lib(c->lib, sub, c->shown);
	}
	return r;
}

/* The GPU part, then the libraries the process ended with; "gpu" and "loaded" into json. */
static int gpu_part(struct cvm_smoke_check *c, const struct cvm_smoke_os *os,
		    const struct cvm_archs *archs, cvm_json *json)
{
	cvm_json *gpu = cvm_json_object(), *mapped = cvm_json_array();
	int r, ndev = 0;

	if (!gpu || !mapped) {
		r = -ENOMEM;
		goto out;
	}
	r = cvm_smoke_gpu_judge(c->res, c->libv, c->cudart, archs, gpu, &ndev);
	r = os->mapped(c, mapped, r);
	r = cvm_smoke_gpu_end(c->res, r, ndev, gpu);
	os->loaded_line(c, mapped, ndev, r);
	if (json) {
		cvm_json_set(json, "gpu", gpu);
		cvm_json_set(json, "loaded", mapped);
		gpu = mapped = NULL;
	}
out:
	cvm_json_free(gpu);
	cvm_json_free(mapped);
	return r;
}

int cvm_smoke_drive(struct cvm_smoke_check *c, const struct cvm_smoke_os *os,
		    const struct cvm_smoke_opts *o, cvm_json *json)
{
	struct cvm_archs archs = { 0 };
	char devarg[16];
	char *argv[10] = { NULL };
	int r;

	r = os->paths(c);
	if (r < 0)
		return r;
	if (c->id) {
		r = cvm_smoke_read_record(c->ctx, c->id, &c->rec);
		if (r < 0)
			return r;
	}
	r = check_headers(c, os);
	if (r == 0)
		r = check_files(c, os);
	if (r == 0)
		r = os->prepare(c, argv);
	if (r < 0)
		goto out;
	cvm_smoke_child_opts(o, argv, 4, devarg, sizeof(devarg));
	c->res = calloc(1, sizeof(*c->res));
	if (!c->res) {
		r = -ENOMEM;
		goto out;
	}
	r = os->load(c, argv);
	if (r == 0)
		r = os->check_library(c, json);
	if (r < 0)
		goto out;
	os->device_code(c, &archs);
	r = gpu_part(c, os, &archs, json);
out:
	if (r < 0 && r != -CVM_E_SKIPPED)
		cvm_smoke_show_log(c->res);
	free(c->res);
	c->res = NULL;
	if (os->release)
		os->release(c);
	cvm_record_release(&c->rec);
	return r;
}

int cvm_smoke_run(struct cvm_ctx *ctx, const struct cvm_toolkit *tk, const char *id,
		  const struct cvm_smoke_opts *o, cvm_json *json)
{
	const char *before = cvm_err_first();
	enum cvm_smoke_result res;
	char name[16];
	int r, k;

	r = cvm_smoke_check(ctx, tk, id, o, json);
	if (!id || ctx->store.fd < 0 || (r < 0 && r != -CVM_E_SMOKE && r != -CVM_E_SKIPPED))
		return r;
	/* Each version's last result, for exec, env and the choice among builds (smokelog.h). */
	res = r == 0 ? CVM_SMOKE_PASSED : r == -CVM_E_SKIPPED ? CVM_SMOKE_SKIPPED : CVM_SMOKE_FAILED;
	cvm_toolkit_name(tk, name, sizeof(name));
	k = cvm_smokelog_write(&ctx->store, id, res, name,
			       res == CVM_SMOKE_FAILED && !before ? cvm_err_first() : NULL);
	if (k < 0)
		cvm_verbose("cannot record the smoke test of %s in %s/smoke: %s", id,
			    ctx->store.display, cvm_strerror(k));
	return r;
}
