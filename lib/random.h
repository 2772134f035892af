/* SPDX-License-Identifier: MIT */
/* A small, fast pseudo-random sequence (splitmix64) for sampling jitter. */
#ifndef CPROF_LIB_RANDOM_H
#define CPROF_LIB_RANDOM_H

#include <stdint.h>

/*
 * A number uniform in [0, n) from the sequence whose state is *state (any
 * seed will do).  Async-signal-safe: no locks, no globals.  Not for
 * anything that needs unpredictability.
 */
static inline uint64_t cprof_rand_below(uint64_t *state, uint64_t n)
{
	uint64_t z = (*state += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	z ^= z >> 31;
	/* the top 32 bits scaled to [0, n) */
	return (uint64_t)(((unsigned __int128)(z >> 32) * n) >> 32);
}

#endif
