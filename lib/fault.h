/* SPDX-License-Identifier: MIT */
#ifndef CUDNNVM_FAULT_H
#define CUDNNVM_FAULT_H

/*
 * Crash points for tests. Only a test build (make CVM_TEST=1) compiles them
 * in: there CUDNNVM_FAULT=<point> makes the process SIGKILL itself when it
 * reaches cvm_fault("<point>"); CUDNNVM_FAULT=<point>:int sends it SIGINT
 * there instead (a Ctrl-C at that step), and CUDNNVM_FAULT=<point>:stop
 * SIGSTOP (where there is one: a test changes a file while the process is
 * stopped, then sends SIGCONT). In the release binary they are empty.
 */
#ifdef CVM_FAULT_INJECTION
void cvm_fault(const char *point);
#else
static inline void cvm_fault(const char *point)
{
	(void)point;
}
#endif

#endif
