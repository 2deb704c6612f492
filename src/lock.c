/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

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

bool cvm_lock_held_by_others_only(int fd)
{
	char line[256], proc[64];
	unsigned maj, min;
	unsigned long ino;
	long pid;
	struct stat st, ps;
	size_t holders = 0;
	bool mine = false;
	FILE *f;

	if (fstat(fd, &st) < 0)
		return false;
	f = fopen("/proc/locks", "re");
	if (!f)
		return false;
	/* "1: FLOCK  ADVISORY  READ 1234 08:01:5678 0 EOF"; "1: -> FLOCK ..." is a waiter. */
	while (!mine && fgets(line, sizeof(line), f)) {
		if (strstr(line, "->") || !strstr(line, "FLOCK") ||
		    sscanf(strstr(line, "FLOCK"), "FLOCK %*s %*s %ld %x:%x:%lu", &pid, &maj, &min, &ino) != 4 ||
		    maj != major(st.st_dev) || min != minor(st.st_dev) || ino != st.st_ino)
			continue;
		snprintf(proc, sizeof(proc), "/proc/%ld", pid);
		/* A holder we cannot see could be anyone's, ours included: not foreign. */
		mine = stat(proc, &ps) < 0 || ps.st_uid == geteuid();
		holders++;
	}
	fclose(f);
	return holders && !mine;
}
