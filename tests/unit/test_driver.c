/* SPDX-License-Identifier: MIT */
/*
 * doctor's driver figures, on each platform: the version read from the
 * platform's text (Linux: /proc/driver/nvidia/version; Windows: nvcuda.dll's
 * file version) and the oldest driver a CUDA major needs (cudnn-facts.md).
 */
#include <stdio.h>

#include "compat.h"
#include "doctor.h"
#include "unit.h"

int main(void)
{
	char out[64];

#if CVM_WINDOWS
	CHECK_INT(cvm_doctor_parse_driver("31.0.15.5222", out, sizeof(out)), 0, "31.0.15.5222 is read");
	CHECK_STR(out, "552.22", "31.0.15.5222 is driver 552.22");
	CHECK_INT(cvm_doctor_parse_driver("32.0.15.6094", out, sizeof(out)), 0, "32.0.15.6094 is read");
	CHECK_STR(out, "560.94", "32.0.15.6094 is driver 560.94");
	CHECK_INT(cvm_doctor_parse_driver("27.21.14.5671", out, sizeof(out)), 0, "27.21.14.5671 is read");
	CHECK_STR(out, "456.71", "27.21.14.5671 is driver 456.71");
	CHECK_INT(cvm_doctor_parse_driver("31.0.15.12345", out, sizeof(out)) < 0, 1,
		  "a last part of five digits is no driver version");
	CHECK_INT(cvm_doctor_parse_driver("31.0.15", out, sizeof(out)) < 0, 1, "three parts are refused");
	CHECK_INT(cvm_doctor_parse_driver("31.0.15.5222x", out, sizeof(out)) < 0, 1, "trailing text is refused");
	CHECK_INT(cvm_doctor_parse_driver("31.0.15.5222", out, 4) < 0, 1, "a buffer too small is refused");
	CHECK_STR(cvm_doctor_min_driver(11), "452.39", "CUDA 11 builds need 452.39 on Windows");
	CHECK_STR(cvm_doctor_min_driver(12), "527.41", "CUDA 12 builds need 527.41 on Windows");
	CHECK_STR(cvm_doctor_min_driver(13), NULL, "CUDA 13: no Windows figure in cudnn-facts.md");
#else
	CHECK_INT(cvm_doctor_parse_driver("NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.159.04  "
					  "Thu Jan 1 2026\n", out, sizeof(out)), 0, "the kernel module line is read");
	CHECK_STR(out, "580.159.04", "the kernel module's version");
	CHECK_INT(cvm_doctor_parse_driver("no module here", out, sizeof(out)) < 0, 1, "text without it is refused");
	CHECK_STR(cvm_doctor_min_driver(11), "450.80.02", "CUDA 11 builds need 450.80.02 on Linux");
	CHECK_STR(cvm_doctor_min_driver(12), "525.60.13", "CUDA 12 builds need 525.60.13 on Linux");
	CHECK_STR(cvm_doctor_min_driver(13), "580.65.06", "CUDA 13 builds need 580.65.06 on Linux");
#endif
	CHECK_STR(cvm_doctor_min_driver(10), NULL, "CUDA 10: no figure");
	return unit_done();
}
