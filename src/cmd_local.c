/* SPDX-License-Identifier: MIT */
/* local: pin a cuDNN version for the working folder and those below it (.cudnn-version). */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
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

int cvm_cmd_local(struct cvm_ctx *ctx, int argc, char **argv)
{
	static const struct option opts[] = {
		CVM_COMMON_LONGOPTS,
		{ NULL, 0, NULL, 0 }
	};
	char spec[160], text[200], cwd[PATH_MAX], file[PATH_MAX + 32];
	struct stat st;
	int r, dfd;

	(void)ctx;
	if (cvm_cli_getopt(argc, argv, opts) != -1)
		return cvm_usage_bad_option("local", argv);
	if (optind + 1 != argc)
		return cvm_usage("local", "one VERSION is needed, e.g. 9.1");
	if (cvm_pin_parse(argv[optind], strlen(argv[optind]), spec, sizeof(spec)) < 0 ||
	    strchr(argv[optind], '\n'))
		return cvm_usage("local", "'%s': expected a cuDNN version such as 9.1 or an "
				 "installed id", cvm_safe(argv[optind]));
	if (!getcwd(cwd, sizeof(cwd)))
		return cvm_err(-errno, "local: cannot tell the working folder: %s", strerror(errno));
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
	if (cvm_out.json) {
		cvm_json *o = cvm_json_object();
		cvm_json_set(o, "file", cvm_json_string(file));
		cvm_json_set(o, "version", cvm_json_string(spec));
		r = cvm_json_print(o);
		cvm_json_free(o);
		return r;
	}
	cvm_info("%s now pins cuDNN %s (for env, exec, use and install here and below)",
		 cvm_safe(file), spec);
	return 0;
}
