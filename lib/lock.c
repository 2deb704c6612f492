/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "compat.h"
#include "error.h"
#include "fsutil.h"
#include "lock.h"
#include "out.h"

int cvm_lock_take(int fd, const char *path, double timeout_s)
{
	long long deadline = cvm_now_ms() + (long long)(timeout_s * 1000);
	bool said = false;

	for (;;) {
		int k = cvm_lock_try(fd);

		if (k == 0)
			return 0;
		if (k != -EWOULDBLOCK && k != -EINTR)
			return cvm_err(k, "cannot lock '%s': %s", cvm_safe(path), cvm_strerror(-k));
		if (timeout_s >= 0 && cvm_now_ms() >= deadline)
			return cvm_err(-CVM_E_LOCKED,
				       "the store is locked by another cudnnvm ('%s'); try again later",
				       cvm_safe(path));
		if (!said) {
			cvm_notice("waiting for the store lock '%s': another cudnnvm holds it "
				   "(--no-wait or --lock-timeout SEC not to wait)", cvm_safe(path));
			said = true;
		}
		/* flock has no timeout; polling keeps --lock-timeout simple and exact enough. */
		nanosleep(&(struct timespec){ .tv_nsec = 20 * 1000 * 1000 }, NULL);
	}
}
