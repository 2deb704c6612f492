/* SPDX-License-Identifier: MIT */
#ifndef CUDNNVM_LOCK_H
#define CUDNNVM_LOCK_H

/*
 * The store lock: flock(2) on STORE/.lock, held for the life of the process,
 * so that a crash can never leave it behind. timeout_s < 0 waits forever,
 * 0 does not wait. 0, or -CVM_E_LOCKED after printing who to wait for.
 */
int cvm_lock_take(int fd, const char *path, double timeout_s);

#endif
