/* SPDX-License-Identifier: MIT */
#ifndef CUDNNVM_LE_H
#define CUDNNVM_LE_H

/*
 * Little-endian integers read from bytes of a file (ELF, PE, ZIP, the
 * loader cache), whatever the host's byte order and alignment.
 */
#include <stdint.h>

static inline uint16_t cvm_le16(const void *v)
{
	const unsigned char *p = v;

	return (uint16_t)(p[0] | p[1] << 8);
}

static inline uint32_t cvm_le32(const void *v)
{
	const unsigned char *p = v;

	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static inline uint64_t cvm_le64(const void *v)
{
	const unsigned char *p = v;

	return (uint64_t)cvm_le32(p) | (uint64_t)cvm_le32(p + 4) << 32;
}

#endif
