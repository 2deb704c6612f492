/* SPDX-License-Identifier: MIT */
/*
 * The Windows backend of activation (activate.h). What a program of a
 * toolkit loads is the first cudnn64_N.dll of the DLL search order, in
 * practice the first on PATH. The choice made here is a PATH entry, not
 * hard links of the DLLs in the toolkit's bin:
 *  - it works the same with --user (HKCU\Environment), where the toolkit's
 *    folder under Program Files cannot be written;
 *  - nothing is written into the toolkit, so there is no DLL of ours there
 *    to tell from a hand-copied one, and a DLL a running program has loaded
 *    (which Windows will not let anyone replace) never stands in the way;
 *  - a switch is one atomic step for new programs: the junction
 *    STORE\active\cuda-X.Y is re-pointed (compat_win32.c replaces its
 *    reparse data in place), and the PATH entry STORE\active\cuda-X.Y\bin
 *    does not change.
 * Where the store's file system has no reparse points (FAT32, exFAT, some
 * shares, wine), active\cuda-X.Y is a link file that programs cannot go
 * through: the PATH entry then names STORE\versions\<id>\bin itself, and the
 * switch for new programs is the one registry write that replaces it. -v and
 * doctor say which of the two is in use.
 *
 * The system entry goes just before the toolkit's own bin on the machine
 * PATH, so that it comes first for that toolkit's programs; a user entry
 * goes first in the user's PATH (Windows puts the user's PATH after the
 * machine's). CUDNN_PATH (read by build systems) names the version's folder
 * when it is unset or already ours. A cuDNN DLL copied by hand into the
 * toolkit's bin would come first or fight with ours: activation refuses it
 * and points to adopt.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "activate.h"
#include "compat.h"
#include "digest.h"
#include "error.h"
#include "fsutil.h"
#include "out.h"
#include "plan.h"
#include "store.h"
#include "winenv.h"

/* A host path with '\' for the registry and messages. */
static int win_form(char *buf, size_t len, const char *fmt, const char *a, const char *b)
{
	int r = cvm_fmt(buf, len, fmt, a, b);

	for (char *c = buf; r == 0 && *c; c++)
		if (*c == '/')
			*c = '\\';
	return r;
}

/* The PATH entry of STORE\active\cuda-X.Y\bin, and of STORE\versions\<id>\bin. */
static int active_bin(const struct cvm_switch *sw, char *buf, size_t len)
{
	return win_form(buf, len, "%s/active/cuda-%s/bin", sw->store->path, sw->cuda);
}

static int version_bin(const struct cvm_switch *sw, const char *id, char *buf, size_t len)
{
	return win_form(buf, len, "%s/versions/%s/bin", sw->store->path, id);
}

static enum cvm_env_scope scope(const struct cvm_switch *sw)
{
	return sw->user ? CVM_ENV_USER : CVM_ENV_SYSTEM;
}

/* A cuDNN DLL in the toolkit's bin: hand-copied (cudnnvm puts none there). */
static int hand_copied(const struct cvm_switch *sw, char *found, size_t len)
{
	char bin[4096];
	struct dirent *de;
	DIR *d;

	found[0] = '\0';
	if (cvm_fmt(bin, sizeof(bin), "%s/bin", sw->tk->path) < 0 || !(d = opendir(bin)))
		return 0;
	while ((de = readdir(d)))
		if (!strncasecmp(de->d_name, "cudnn", 5) && strlen(de->d_name) > 4 &&
		    !strcasecmp(de->d_name + strlen(de->d_name) - 4, ".dll")) {
			win_form(found, len, "%s/%s", bin, de->d_name);
			break;
		}
	closedir(d);
	return found[0] ? 1 : 0;
}

/* The toolkit's folders where hand installs put cuDNN, and the store version's same ones. */
static const char *const hand_dirs[] = { "bin", "include", "lib/x64" };

/*
 * adopt: each hand-copied cuDNN file of the toolkit (checked to be the
 * version's bytes, which the store copied from it) moves into
 * STORE/backups/<id>/<sub>/, so that the toolkit holds none and PATH finds
 * the store's. A rename: one step per file, and a DLL a running program has
 * loaded can be renamed (not deleted). Run again, it moves what is left.
 */
static int adopt_move(const struct cvm_switch *sw)
{
	char dir[4096], src[4096], rel[4096], dst[4096], shown[4096], a[CVM_SHA256_HEX], b[CVM_SHA256_HEX];
	int r = 0;

	for (size_t i = 0; r == 0 && i < sizeof(hand_dirs) / sizeof(hand_dirs[0]); i++) {
		struct dirent *de;
		DIR *d;

		if (cvm_fmt(dir, sizeof(dir), "%s/%s", sw->tk->path, hand_dirs[i]) < 0 ||
		    !(d = opendir(dir)))
			continue;
		while (r == 0 && (de = readdir(d))) {
			if (strncasecmp(de->d_name, "cudnn", 5))
				continue;
			r = cvm_fmt(src, sizeof(src), "%s/%s", dir, de->d_name);
			if (r == 0)
				r = cvm_fmt(rel, sizeof(rel), "versions/%s/%s/%s", sw->to, hand_dirs[i],
					    de->d_name);
			if (r == 0)
				r = cvm_fmt(dst, sizeof(dst), "%s/backups/%s/%s", sw->store->path, sw->to,
					    hand_dirs[i]);
			if (r < 0)
				break;
			/* A dry adopt: the version would be copied from this very file. */
			if (!sw->files && (cvm_sha256_at(sw->store->fd, rel, a, NULL) < 0 ||
					   cvm_sha256_at(AT_FDCWD, src, b, NULL) < 0 || strcmp(a, b))) {
				r = cvm_err(-CVM_E_CONFLICT, "'%s' is not the file %s has (changed since "
					    "the copy?): nothing more moved; run 'cudnnvm adopt --cuda %s' "
					    "again", cvm_safe(src), sw->to, sw->cuda);
				break;
			}
			r = cvm_do_mkdir_p(sw->store->plan, dst, 0755, "");
			if (r == 0)
				r = cvm_fmt(shown, sizeof(shown), "%s/%s", dst, de->d_name);
			if (r == 0)
				r = cvm_do_rename(sw->store->plan, src, shown, src, shown);
			if (r < 0)
				r = cvm_err(r, "cannot move '%s' to '%s': %s%s", cvm_safe(src), cvm_safe(shown),
					    cvm_strerror(-r), r == -EXDEV ? " (the store must be on the "
					    "toolkit's volume for adopt)" : "");
		}
		closedir(d);
	}
	return r;
}

static int prepare(const struct cvm_switch *sw)
{
	char found[4096];

	if (sw->adopt)
		return adopt_move(sw);
	if (sw->to && sw->to[0] && hand_copied(sw, found, sizeof(found)))
		return cvm_err(-CVM_E_CONFLICT, "'%s' was not put there by cudnnvm and would be loaded "
			       "instead of (or fight with) the active version: nothing changed; "
			       "'cudnnvm adopt --cuda %s' brings a hand-copied cuDNN under management",
			       cvm_safe(found), sw->cuda);
	return 0;
}

/* Whether a version's folder is also active for another toolkit (its PATH entry is shared). */
static bool active_elsewhere(const struct cvm_switch *sw, const char *id)
{
	char list[512], *tok, *save = NULL;

	if (cvm_store_active_for(sw->store, id, list, sizeof(list)) < 0)
		return false;
	for (tok = strtok_r(list, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
		if (strcmp(tok, sw->cuda))
			return true;
	return false;
}

static int registry_error(const struct cvm_switch *sw, const char *what, int r)
{
	if (r == -EACCES || r == -EPERM)
		return cvm_err(-CVM_E_PERM, "cannot write %s in %s: that needs an elevated prompt "
			       "(Run as administrator); --user changes only HKCU\\Environment", what,
			       cvm_winenv_key_name(scope(sw)));
	return cvm_err(r, "cannot write %s in %s: %s", what, cvm_winenv_key_name(scope(sw)),
		       cvm_strerror(-r));
}

/*
 * The entries this toolkit may have left: STORE\active\cuda-X.Y\bin, and
 * STORE\versions\<id>\bin of every version (the one switched from, and any
 * a crash between the switch and the registry write left) that no other
 * toolkit has active. malloc'd strings; 0 or -errno.
 */
static int stale_entries(const struct cvm_switch *sw, char ***out, size_t *n)
{
	char **ids = NULL, **v;
	size_t nids = 0, k = 0;
	int r = cvm_store_list(sw->store, &ids, &nids);

	if (r < 0)
		return r;
	v = calloc(nids + 2, sizeof(*v));
	r = v ? 0 : -ENOMEM;
	for (size_t i = 0; r == 0 && i < nids + 2; i++) {
		const char *id = i < nids ? ids[i] : sw->from;
		char buf[4096];

		if (i == nids + 1)
			r = active_bin(sw, buf, sizeof(buf));
		else if (!id || !id[0] || active_elsewhere(sw, id))
			continue;
		else
			r = version_bin(sw, id, buf, sizeof(buf));
		if (r == 0 && !(v[k++] = strdup(buf)))
			r = -ENOMEM;
	}
	cvm_strv_free(ids, nids);
	if (r < 0) {
		cvm_strv_free(v, k);
		return r;
	}
	*out = v;
	*n = k;
	return 0;
}

/* PATH: drop the toolkit's old entries, put add (NULL: none) before the toolkit's bin. */
static int edit_path(const struct cvm_switch *sw, const char *add, bool *changed)
{
	char tk_bin[4096], key[512], **drop = NULL, *shown = NULL;
	const char *before;
	size_t ndrop = 0;
	int r;

	*changed = false;
	r = win_form(tk_bin, sizeof(tk_bin), "%s/%s", sw->tk->path, "bin");
	if (r == 0)
		r = cvm_fmt(key, sizeof(key), "%s\\Path", cvm_winenv_key_name(scope(sw)));
	if (r == 0)
		r = stale_entries(sw, &drop, &ndrop);
	if (r < 0)
		return cvm_err(r, "cannot list the store's versions: %s", cvm_strerror(-r));
	before = scope(sw) == CVM_ENV_SYSTEM ? tk_bin : NULL;
	r = cvm_winenv_path_edit(scope(sw), (const char *const *)drop, ndrop, add, before, false,
				 changed, &shown);
	if (r < 0)
		r = cvm_err(r, "cannot read PATH in %s: %s", cvm_winenv_key_name(scope(sw)),
			    cvm_strerror(-r));
	else if (*changed && !cvm_plan_describe(sw->store->plan, "set", key, NULL, "to %s", shown) &&
		 (r = cvm_winenv_path_edit(scope(sw), (const char *const *)drop, ndrop, add, before,
					   true, NULL, NULL)) < 0)
		r = registry_error(sw, "PATH", r);
	cvm_strv_free(drop, ndrop);
	free(shown);
	return r;
}

/* Whether value names this store's folder (CUDNN_PATH of ours). */
static bool in_store(const struct cvm_switch *sw, const char *value)
{
	char store[4096];
	size_t l;

	if (win_form(store, sizeof(store), "%s%s", sw->store->path, "\\") < 0)
		return false;
	l = strlen(store);
	if (strlen(value) < l)
		return false;
	for (size_t i = 0; i < l; i++) {
		char a = value[i] == '/' ? '\\' : value[i], b = store[i];
		if ((a | 0x20) != (b | 0x20) && a != b)
			return false;
	}
	return true;
}

/* CUDNN_PATH: want (NULL: remove it when it names old). */
static int edit_cudnn_path(const struct cvm_switch *sw, const char *want, const char *old,
			   bool *changed)
{
	char key[512], *cur = NULL;
	int r = cvm_winenv_get(scope(sw), "CUDNN_PATH", &cur);

	*changed = false;
	if (r < 0 && r != -ENOENT)
		return cvm_err(r, "cannot read CUDNN_PATH in %s: %s", cvm_winenv_key_name(scope(sw)),
			       cvm_strerror(-r));
	r = cvm_fmt(key, sizeof(key), "%s\\CUDNN_PATH", cvm_winenv_key_name(scope(sw)));
	if (r == 0 && want && cur && !in_store(sw, cur)) {
		cvm_warn("CUDNN_PATH is %s, not cudnnvm's: left as it is (programs that read it "
			 "will not see the active version)", cvm_safe(cur));
	} else if (r == 0 && want && (!cur || !cvm_winpath_same(cur, want))) {
		*changed = true;
		if (!cvm_plan_describe(sw->store->plan, "set", key, NULL, "to %s", want) &&
		    (r = cvm_winenv_set(scope(sw), "CUDNN_PATH", want)) < 0)
			r = registry_error(sw, "CUDNN_PATH", r);
	} else if (r == 0 && !want && cur && old && cvm_winpath_same(cur, old)) {
		*changed = true;
		if (!cvm_plan_describe(sw->store->plan, "remove", key, NULL, NULL) &&
		    (r = cvm_winenv_set(scope(sw), "CUDNN_PATH", NULL)) < 0)
			r = registry_error(sw, "CUDNN_PATH", r);
	}
	free(cur);
	return r;
}

/*
 * After the switch: the PATH entry and CUDNN_PATH name the new version
 * (or, to deactivate, are removed). Run again with the same version, it
 * puts back whatever a crash left half-done.
 */
static int finish(const struct cvm_switch *sw)
{
	char name[64], add[4096], dir[4096], old_dir[4096] = "";
	bool to = sw->to && sw->to[0], junction, c1 = false, c2 = false;
	int r;

	r = cvm_fmt(name, sizeof(name), "active/cuda-%s", sw->cuda);
	if (r < 0)
		return r;
	/* In a dry run the link is not made: the file system's kind is the store's. */
	junction = cvm_win_link_kind(sw->store->fd, name) == CVM_WIN_JUNCTION;
	if (to) {
		if (junction) {
			r = active_bin(sw, add, sizeof(add));
			if (r == 0)
				r = win_form(dir, sizeof(dir), "%s/active/cuda-%s", sw->store->path, sw->cuda);
		} else {
			r = version_bin(sw, sw->to, add, sizeof(add));
			if (r == 0)
				r = win_form(dir, sizeof(dir), "%s/versions/%s", sw->store->path, sw->to);
		}
		if (r < 0)
			return r;
		cvm_verbose("CUDA %s: %s, PATH entry %s", sw->cuda, junction ?
			    "junction active\\cuda-X.Y" : "no reparse points on the store's file system: "
			    "PATH names the version's folder", add);
	} else if (sw->from && sw->from[0]) {
		r = junction ? win_form(old_dir, sizeof(old_dir), "%s/active/cuda-%s", sw->store->path,
					sw->cuda)
			     : win_form(old_dir, sizeof(old_dir), "%s/versions/%s", sw->store->path,
					sw->from);
		if (r < 0)
			return r;
	}
	r = edit_path(sw, to ? add : NULL, &c1);
	if (r == 0)
		r = edit_cudnn_path(sw, to ? dir : NULL, old_dir, &c2);
	if (r == 0 && (c1 || c2) && !cvm_plan_dry(sw->store->plan))
		cvm_winenv_broadcast();
	return r;
}

static int managed(const struct cvm_switch *sw, char ***paths, size_t *n)
{
	/* Nothing of ours is in the toolkit. */
	(void)sw;
	*paths = NULL;
	*n = 0;
	return 0;
}

static int dirs(const struct cvm_switch *sw, char *inc, char *lib, size_t len)
{
	int r = cvm_fmt(inc, len, "%s/include", sw->tk->path);

	return r < 0 ? r : cvm_fmt(lib, len, "%s/bin", sw->tk->path);
}

const struct cvm_backend *cvm_backend(void)
{
	/* No audit: nothing of ours is in the toolkit (PATH and a junction instead). */
	static const struct cvm_backend windows = {
		.name = "windows", .prepare = prepare, .finish = finish, .managed = managed,
		.dirs = dirs,
	};

	return &windows;
}
