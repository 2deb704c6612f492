/* SPDX-License-Identifier: MIT */
#ifndef CUDNNVM_MODULEFILES_H
#define CUDNNVM_MODULEFILES_H

/*
 * One Lmod (Lua) or Environment Modules (Tcl) modulefile per installed
 * version, DIR/cudnn/<full version>-cuda<major>[.lua]. Every file written
 * carries a header line that marks it as cudnnvm's: only such files are
 * ever replaced or removed.
 */
#include <stdbool.h>

#include "context.h"

/*
 * Writes the modulefiles of every installed version into DIR (a host path)
 * and removes stale ones of ours; def_spec, when given, becomes the default.
 * Everything is checked before the first write. quiet: no report (the
 * refresh after install and uninstall). 0 or a negative code (said).
 */
int cvm_modulefiles_generate(struct cvm_ctx *ctx, const char *dir, bool tcl, const char *def_spec,
			     bool quiet);

/* "lua" or "tcl" into *tcl: 0, or -CVM_E_USAGE (not said). */
int cvm_modulefiles_format(const char *s, bool *tcl);

/*
 * After install and uninstall: rewrites the modulefiles when ROOT/etc/cudnnvm.conf
 * names a folder ("modules = DIR", "modules_format = lua|tcl"; DIR is not made).
 * 0, or a negative code said: the store's change stands, the caller reports it
 * and then exits with this code (the modulefiles are stale).
 */
int cvm_modulefiles_refresh(struct cvm_ctx *ctx);

#endif
