/* SPDX-License-Identifier: MIT */
#ifndef CUDNNVM_LOCK_H
#define CUDNNVM_LOCK_H

#include <stdbool.h>

/*
 * The store lock: flock(2) on STORE/.lock, held for the life of the process,
 * so that a crash can never leave it behind. timeout_s < 0 waits forever,
 * 0 does not wait. 0, or -CVM_E_LOCKED after printing who to wait for.
 */
int cvm_lock_take(int fd, const char *path, double timeout_s);

/*
 * Whether the flock on fd's file is held, and only by processes of other
 * users (from /proc/locks): on a lock file others could open, that is
 * someone keeping the store's owner out, not a cudnnvm at work.
 */
bool cvm_lock_held_by_others_only(int fd);

#endif
