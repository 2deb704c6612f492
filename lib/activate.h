/* SPDX-License-Identifier: MIT */
#ifndef CUDNNVM_ACTIVATE_H
#define CUDNNVM_ACTIVATE_H

/*
 * Activation: one version per CUDA toolkit. STORE/active/cuda-<X.Y> names
 * it (replaced by rename, so there is no instant without a valid link); what
 * else makes programs see it is the platform backend's: on Linux, links in
 * the toolkit that go through STORE/active/cuda-<X.Y>/ and an ld.so.conf.d
 * file. Every switch is journalled. The caller holds the store lock.
 */
#include <stdbool.h>
#include <stddef.h>

#include "context.h"
#include "toolkit.h"

/* One switch of one toolkit, as the backends see it. */
struct cvm_switch {
	struct cvm_store *store;
	const char *root;		/* host path of --root, "" for / */
	const struct cvm_toolkit *tk;
	const char *cuda;		/* "11.8": names active/, the journal, the conf file */
	const char *from, *to;		/* ids; NULL or "" for none */
	bool no_ldconfig;
	bool user;			/* --user: the Windows backend edits HKCU, not HKLM */
	/*
	 * adopt: a hand-copied file (or link) where a link is wanted is
	 * replaced by it, atomically, when its content is the version's;
	 * the original is hard-linked into STORE/backups/<id>/ first.
	 */
	bool adopt;
	/*
	 * A dry adopt: the version is not in the store yet; these are the
	 * files it would hold ("include/cudnn.h", "lib/libcudnn.so.9"), copied
	 * from the toolkit's own (so the same bytes). NULL otherwise.
	 */
	char *const *files;
	size_t nfiles;
	/*
	 * Linux: each path the record lists as cudnnvm's link that is
	 * something else now (the admin's link or file) is left as it is,
	 * warned, and counted here (when not NULL).
	 */
	size_t *untouched;
};

struct cvm_backend {
	const char *name;
	/*
	 * Before the active link changes: refuse (-CVM_E_CONFLICT, message
	 * printed, nothing changed) when a file cudnnvm did not create is in
	 * the way; otherwise create what the new version needs that the old
	 * one did not have. A crash after this leaves only extra links, which
	 * the next repair removes.
	 */
	int (*prepare)(const struct cvm_switch *sw);
	/* After the switch: remove what only the old version had; update the loader. */
	int (*finish)(const struct cvm_switch *sw);
	/* Reads the links cudnnvm made in this toolkit (for adopt, doctor). */
	int (*managed)(const struct cvm_switch *sw, char ***paths, size_t *n);
	/* The toolkit's real include and library folders, as seen inside the root. */
	int (*dirs)(const struct cvm_switch *sw, char *inc, char *lib, size_t len);
	/*
	 * For doctor (NULL where nothing of ours is in the toolkit): one
	 * message per problem with what the backend recorded (a line of the
	 * record it refuses, a recorded link the admin replaced), nothing
	 * printed; 0 or -errno. Free with cvm_strv_free.
	 */
	int (*audit)(const struct cvm_switch *sw, char ***what, size_t *n);
};

/* The backend of this platform. */
const struct cvm_backend *cvm_backend(void);

struct cvm_activate_opts {
	const char *kind;		/* journal kind: use, rollback, adopt, deactivate */
	bool no_ldconfig;
	bool no_smoke;
	/*
	 * use: the version's load closure (closure.h) is checked for tk before
	 * anything switches, and a missing library refuses it (-CVM_E_SMOKE)
	 * unless force.
	 */
	bool closure, force;
	bool adopt;			/* see struct cvm_switch */
	char *const *files;		/* see struct cvm_switch */
	size_t nfiles;
	bool no_journal;		/* the undoing of a switch that was never journaled */
	size_t *untouched;		/* out, or NULL: paths left as they are (cvm_switch) */
	struct cvm_json *smoke;		/* out, or NULL: the smoke test's document (smoke.h), its text unprinted */
	int argc;			/* the command line, for the journal */
	char **argv;
};

/*
 * Makes to (an installed id, or NULL to deactivate) the active version of
 * tk, then, unless no_smoke, runs the loader check and on its failure puts
 * the previous version back (-CVM_E_SMOKE). to's record is read first (a
 * missing or broken one changes nothing); any error after the switch (the
 * journal, the smoke test) also puts the previous version back. Idempotent: activating the
 * active version repairs what a crash may have left. A path of the toolkit that the
 * record lists but that is not cudnnvm's link any more is left as it is and named;
 * the rest of the switch is made (and the smoke test judges it), then one warning
 * counts them; o->untouched, when set, gets the count.
 */
int cvm_activate(struct cvm_ctx *ctx, const struct cvm_toolkit *tk, const char *to,
		 const struct cvm_activate_opts *o);

/*
 * Under the store lock, before a command changes anything: a switch that a
 * crash cut short between the active link and its journal line gets its
 * line (journal.h, cvm_journal_repair). 0, or -errno (warned, not fatal).
 */
int cvm_activate_repair(struct cvm_ctx *ctx);

/* Whether ldconfig should run: --no-ldconfig, or CUDNNVM_LDCONFIG set empty, say no (Linux backend). */
bool cvm_ldconfig_wanted(bool no_ldconfig);

#endif
