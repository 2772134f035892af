/* SPDX-License-Identifier: MIT */
/*
 * int64 arithmetic on values that come from outside (sample values of a
 * profile read back, counters summed over hours): defined for every input.
 */
#ifndef CPROF_LIB_ARITH_H
#define CPROF_LIB_ARITH_H

#include <stdint.h>

/* a + b wrapping around as Go's int64 (and so pprof) does, where C's signed
 * overflow would be undefined. */
static inline int64_t cprof_add_wrap(int64_t a, int64_t b)
{
	return (int64_t)((uint64_t)a + (uint64_t)b);
}

/* |v|, also for INT64_MIN, whose negation does not fit an int64. */
static inline uint64_t cprof_abs64(int64_t v)
{
	return v < 0 ? -(uint64_t)v : (uint64_t)v;
}

#endif
