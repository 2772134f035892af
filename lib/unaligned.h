/* SPDX-License-Identifier: MIT */
/*
 * Host-order integers at any address of a buffer read from a file or the
 * target (ELF sections, .gopclntab): memcpy, as an unaligned cast is
 * undefined and the compiler makes a plain load of it anyway.
 */
#ifndef CPROF_LIB_UNALIGNED_H
#define CPROF_LIB_UNALIGNED_H

#include <stdint.h>
#include <string.h>

static inline uint32_t cprof_load_u32(const void *p)
{
	uint32_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

static inline uint64_t cprof_load_u64(const void *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

#endif
