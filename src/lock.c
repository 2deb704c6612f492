/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <string.h>
#include <sys/file.h>
#include <time.h>

#include "cudnnvm/error.h"
#include "cudnnvm/fsutil.h"
#include "cudnnvm/lock.h"
#include "cudnnvm/out.h"

int cvm_lock_take(int fd, const char *path, double timeout_s)
{
	long long deadline = cvm_now_ms() + (long long)(timeout_s * 1000);
	bool said = false;

	for (;;) {
		if (flock(fd, LOCK_EX | LOCK_NB) == 0)
			return 0;
		if (errno != EWOULDBLOCK && errno != EINTR)
			return cvm_err(-errno, "cannot lock '%s': %s", cvm_safe(path), strerror(errno));
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
