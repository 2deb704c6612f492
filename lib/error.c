/* SPDX-License-Identifier: MIT */
#include <string.h>

#include "error.h"

static const char *const messages[CVM_E_LAST - CVM_E_FIRST] = {
	[CVM_E_USAGE - CVM_E_FIRST] = "usage error",
	[CVM_E_INTEGRITY - CVM_E_FIRST] = "integrity check failed",
	[CVM_E_UNSAFE - CVM_E_FIRST] = "unsafe archive",
	[CVM_E_CORRUPT - CVM_E_FIRST] = "corrupt archive",
	[CVM_E_LOCKED - CVM_E_FIRST] = "store is locked",
	[CVM_E_SMOKE - CVM_E_FIRST] = "smoke test failed",
	[CVM_E_SKIPPED - CVM_E_FIRST] = "GPU part skipped",
	[CVM_E_MANIFEST - CVM_E_FIRST] = "malformed manifest",
	[CVM_E_NOTFOUND - CVM_E_FIRST] = "not found",
	[CVM_E_VERSION - CVM_E_FIRST] = "malformed version",
	[CVM_E_LAYOUT - CVM_E_FIRST] = "not a cuDNN tree",
	[CVM_E_EXISTS - CVM_E_FIRST] = "already exists",
	[CVM_E_BUSY - CVM_E_FIRST] = "in use",
	[CVM_E_CONFLICT - CVM_E_FIRST] = "file not managed by cudnnvm in the way",
	[CVM_E_PERM - CVM_E_FIRST] = "unsafe permissions",
	[CVM_E_CHILD - CVM_E_FIRST] = "helper process failed",
	[CVM_E_NOTREG - CVM_E_FIRST] = "not a regular file",
};

const char *cvm_strerror(int code)
{
	if (code < 0)
		code = -code;
	if (code >= CVM_E_FIRST && code < CVM_E_LAST)
		return messages[code - CVM_E_FIRST];
	return strerror(code);
}

int cvm_exit_code(int code)
{
	switch (code) {
	case 0:
		return 0;
	case -CVM_E_USAGE:
		return 2;
	case -CVM_E_INTEGRITY:
	case -CVM_E_UNSAFE:
	case -CVM_E_CORRUPT:
	case -CVM_E_LAYOUT:
		return 3;
	case -CVM_E_SMOKE:
		return 4;
	case -CVM_E_LOCKED:
		return 5;
	case -CVM_E_SKIPPED:
		return 77;
	default:
		return 1;
	}
}
