/* SPDX-License-Identifier: MIT */
/* local: pin a cuDNN version for the working folder and those below it (.cudnn-version). */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "error.h"
#include "fsutil.h"
#include "json.h"
#include "out.h"
#include "select.h"

/* --json: {"file", "version"} (version null once removed); 0 without --json. */
static int json_pin(const char *file, const char *spec)
{
	cvm_json *o;
	int r;

	if (!cvm_out.json)
		return 0;
	o = cvm_json_object();
	cvm_json_set(o, "file", cvm_json_string(file));
	cvm_json_set(o, "version", cvm_json_string(spec));
	r = cvm_json_print(o);
	cvm_json_free(o);
	return r;
}

/* The pin in effect here: printed (or its JSON), exit 1 when there is none. */
static int show(const char *cwd)
{
	char spec[160], file[PATH_MAX + 32];
	int r = cvm_pin_find(cwd, spec, sizeof(spec), file, sizeof(file));

	if (r < 0)
		return r;
	if (r == 0)
		return cvm_err(-CVM_E_NOTFOUND, "no .cudnn-version in '%s' or a parent folder "
			       "('cudnnvm local VERSION' writes one)", cvm_safe(cwd));
	if (!cvm_out.json)
		cvm_print("%s (%s)", spec, cvm_safe(file));
	return json_pin(file, spec);
}

int cvm_cmd_local(struct cvm_ctx *ctx, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "unset", no_argument, NULL, 'u' },
		CVM_COMMON_LONGOPTS,
		{ NULL, 0, NULL, 0 }
	};
	char spec[160], text[200], cwd[PATH_MAX], file[PATH_MAX + 32];
	struct stat st;
	bool unset = false;
	int c, r, dfd;

	(void)ctx;
	while ((c = cvm_cli_getopt(argc, argv, opts)) != -1) {
		if (c != 'u')
			return cvm_usage_bad_option("local", argv);
		unset = true;
	}
	if (optind + 1 < argc || (unset && optind < argc))
		return cvm_usage("local", "one VERSION, or none (show the pin), or --unset");
	if (!getcwd(cwd, sizeof(cwd)))
		return cvm_err(-errno, "local: cannot tell the working folder: %s", strerror(errno));
	if (unset) {
		r = cvm_pin_unset(cwd, file, sizeof(file));
		if (r == 0 && !cvm_out.json)
			cvm_info("removed %s", cvm_safe(file));
		return r < 0 ? r : json_pin(file, NULL);
	}
	if (optind == argc)
		return show(cwd);
	/* main checked the VERSION (a version or an id, cuDNN 8 or newer). */
	if (cvm_pin_parse(argv[optind], strlen(argv[optind]), spec, sizeof(spec)) < 0)
		return cvm_usage("local", "'%s': expected a cuDNN version such as 9.1 or an "
				 "installed id", cvm_safe(argv[optind]));
	snprintf(file, sizeof(file), "%s/.cudnn-version", strcmp(cwd, "/") ? cwd : "");
	/* Only a pin file is replaced: never a link, a FIFO or a folder of that name. */
	if (fstatat(AT_FDCWD, ".cudnn-version", &st, AT_SYMLINK_NOFOLLOW) == 0 && !S_ISREG(st.st_mode))
		return cvm_err(-EEXIST, "'%s' exists and is not a regular file: not replaced",
			       cvm_safe(file));
	snprintf(text, sizeof(text), "%s\n", spec);
	dfd = open(".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	r = dfd < 0 ? -errno : cvm_write_file_at(dfd, ".cudnn-version", text, strlen(text), 0644);
	if (dfd >= 0)
		close(dfd);
	if (r < 0)
		return cvm_err(r, "cannot write '%s': %s", cvm_safe(file), cvm_strerror(r));
	if (!cvm_out.json)
		cvm_info("%s now pins cuDNN %s (for env, exec, use and install here and below)",
			 cvm_safe(file), spec);
	return json_pin(file, spec);
}
