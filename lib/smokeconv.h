/* SPDX-License-Identifier: MIT */
#ifndef CUDNNVM_SMOKECONV_H
#define CUDNNVM_SMOKECONV_H

/*
 * The smoke child's GPU part, written once for both platforms (smoke_conv.c):
 * a small convolution through cuDNN's legacy API on each asked device,
 * against a CPU reference. The platform's child (smoke_child.c, smoke_win.c)
 * loads the libraries its own way and hands over their handles; the entry
 * points are looked up through cvm_smoke_sym, the one call that differs.
 */
#include <stdbool.h>

/*
 * Supplied by each platform's child: the address of sym in the loaded
 * library lib (dlsym / GetProcAddress), NULL when it has none.
 */
void *cvm_smoke_sym(void *lib, const char *sym);

/*
 * Binds the CUDA runtime's entry points from cudart and cuDNN's from cudnn
 * (the names say which file in messages), then runs the convolution on device
 * first_dev, or on every device with all. Prints the child's "key value"
 * lines: "driver", "devices", "gpu_skip" (nothing to run on), "error", and
 * per device "ran N" and "devN_*". *ran: whether the devices were tried
 * (then the caller reports what the process loaded). 0 when every device
 * tried matched the reference (or none could be), 1 when something failed.
 */
int cvm_smoke_conv(void *cudart, const char *cudart_name, void *cudnn, const char *cudnn_name,
		   int first_dev, bool all, bool *ran);

#endif
