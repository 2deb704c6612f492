/* SPDX-License-Identifier: MIT */
#include "fault.h"

#ifdef CVM_FAULT_INJECTION
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "compat.h"

void cvm_fault(const char *point)
{
	const char *want = getenv("CUDNNVM_FAULT");
	size_t n = strlen(point);

	if (want && !strcmp(want, point))
		kill(getpid(), SIGKILL);
	/* "<point>:int": a Ctrl-C arrives there (the process is to clean up, not die). */
	if (want && !strncmp(want, point, n) && !strcmp(want + n, ":int"))
		kill(getpid(), SIGINT);
#ifdef SIGSTOP
	/* "<point>:stop": the process stops there until SIGCONT, for a test to change a file then. */
	if (want && !strncmp(want, point, n) && !strcmp(want + n, ":stop"))
		kill(getpid(), SIGSTOP);
#endif
}
#else
/* ISO C wants a translation unit to declare something. */
typedef int cvm_fault_unused;
#endif
