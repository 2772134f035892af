/* SPDX-License-Identifier: MIT */
/*
 * The one binary search of the sorted address tables (maps, modules,
 * symbols, CU ranges, PLT stubs, perf maps): records sorted by a uint64_t
 * key, searched for the last one at or below an address.
 */
#ifndef CPROF_LIB_BSEARCH_H
#define CPROF_LIB_BSEARCH_H

#include <stddef.h>
#include <stdint.h>

#include "lib/unaligned.h"

/*
 * Of the n records at base, size bytes apart and sorted by the uint64_t at
 * byte offset off of each, how many have a key <= key: the index just past
 * the last one at or below key (0: none is).
 */
static inline size_t cprof_count_le(const void *base, size_t n, size_t size, size_t off,
				    uint64_t key)
{
	const unsigned char *b = base;
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (cprof_load_u64(b + mid * size + off) <= key)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

#endif
