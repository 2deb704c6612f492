/* SPDX-License-Identifier: MIT */
#ifndef CUDNNVM_JOURNAL_H
#define CUDNNVM_JOURNAL_H

/*
 * The activation journal: STORE/history/cuda-<X.Y>.log, append-only, one
 * line per switch, fsynced: "time<TAB>user<TAB>kind<TAB>from<TAB>to<TAB>command"
 * where from/to are ids or "-" and kind is use, rollback, adopt or deactivate.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "store.h"

struct cvm_journal_entry {
	int64_t time;
	char user[64];
	char kind[16];
	char from[160], to[160];
	char command[512];
};

/*
 * Appends one entry (time and user filled in here), always on a line of its
 * own: after a last line with no end, that line is ended and kept unreadable
 * as an entry first. 0 or -errno (printed).
 */
int cvm_journal_append(struct cvm_store *s, const char *cuda, const char *kind,
		       const char *from, const char *to, int argc, char **argv);

/*
 * The line a switch is about to add, written first to
 * history/cuda-<X.Y>.pending (atomic), and removed once the line is in the
 * journal or the switch was undone. set: 0 or -errno (printed).
 */
int cvm_journal_pending_set(struct cvm_store *s, const char *cuda, const char *kind,
			    const char *from, const char *to, int argc, char **argv);
void cvm_journal_pending_clear(struct cvm_store *s, const char *cuda);

/*
 * Under the store lock: every pending line whose switch did happen (active()
 * reports its destination for that toolkit) and is not the journal's last
 * line is appended; then the pending file is removed. A crash between the
 * switch and its journal line so costs nothing. 0 or -errno (printed).
 */
int cvm_journal_repair(struct cvm_store *s,
		       int (*active)(struct cvm_store *s, const char *cuda, char *id, size_t len));

/*
 * Reads every entry of the toolkit's journal (a missing or empty journal is
 * empty). A line is an entry only when it is whole: it ends with a newline
 * and every field parses as written (see parse_line); any other line (the
 * torn end of a journal cut short, garbage, a NUL byte) is skipped, and with
 * report each is named in a warning with its line number. A journal that is
 * a symlink, a folder, a FIFO or anything but a regular file is refused
 * (-CVM_E_CONFLICT, printed) and never followed or waited on. *out is
 * malloc'd (caller frees). 0 or a negative error (printed).
 */
int cvm_journal_read(struct cvm_store *s, const char *cuda, bool report,
		     struct cvm_journal_entry **out, size_t *n);

/*
 * The version a rollback returns to: the journal is replayed as a stack (use
 * and adopt push; rollback returns to its destination, undoing what is above
 * it; deactivate pops); where a line's from disagrees with the stack (a
 * skipped damaged line), the line's from and to decide. The current one is
 * popped and the newest remaining id for which still_installed() is true is
 * the answer. 0 and to filled, or -CVM_E_NOTFOUND.
 */
int cvm_journal_previous(const struct cvm_journal_entry *e, size_t n, const char *current,
			 int (*still_installed)(void *arg, const char *id), void *arg,
			 char *to, size_t len);

/* The name of the user to record: SUDO_USER under sudo, else the login name. */
const char *cvm_user_name(void);

#endif
