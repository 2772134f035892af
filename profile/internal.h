/* SPDX-License-Identifier: MIT */
/* Helpers shared inside profile/: array growth and hash mixing. */
#ifndef CPROF_PROFILE_INTERNAL_H
#define CPROF_PROFILE_INTERNAL_H

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/*
 * Grows the array *arrayp (elements of size bytes, capacity *cap) to hold at
 * least need elements, starting at first and doubling.  arrayp is the
 * address of any object pointer; it is accessed through memcpy so that one
 * helper serves every element type.  Returns 0 or -ENOMEM.
 */
static inline int prof_grow(void *arrayp, size_t *cap, size_t need, size_t size, size_t first)
{
	void *old, *p;
	size_t ncap;

	if (need <= *cap)
		return 0;
	ncap = *cap ? *cap : first;
	while (ncap < need) {
		if (ncap > SIZE_MAX / 2 / size)
			return -ENOMEM;
		ncap *= 2;
	}
	memcpy(&old, arrayp, sizeof(old));
	p = realloc(old, ncap * size);
	if (!p)
		return -ENOMEM;
	memcpy(arrayp, &p, sizeof(p));
	*cap = ncap;
	return 0;
}

/* One step of the hash both tables use: rotate, mix in v, multiply. */
static inline uint64_t prof_hash_mix(uint64_t h, uint64_t v)
{
	return ((h << 5 | h >> 59) ^ v) * 0x9e3779b97f4a7c15ULL;
}

#endif
