/* SPDX-License-Identifier: MIT */
/* hostile-lib: the small shared library tests/targets/hostile loads.
 *
 * Built once per use with -DHOSTILE_LIB=NAME (corrupt, deleted, churn,
 * trunc), so that each copy has a function of its own name,
 * hostile_NAME_work, and a build id of its own: a cache keyed by build id
 * must not answer for one copy with another's symbols.  The function is pure
 * arithmetic with no relocation, so it also runs from a plain mmap of the
 * file (the truncated copy is never dlopened). */
#include <stdint.h>

#ifndef HOSTILE_LIB
#error "build with -DHOSTILE_LIB=name"
#endif

#define HOSTILE_CAT2(a, b) a##b
#define HOSTILE_CAT(a, b) HOSTILE_CAT2(a, b)
#define HOSTILE_WORK HOSTILE_CAT(HOSTILE_CAT(hostile_, HOSTILE_LIB), _work)

#define HOSTILE_LOOP 2000u

uint64_t HOSTILE_WORK(uint64_t x);

/* sum_{k<HOSTILE_LOOP} (5k + x) = 5*L(L-1)/2 + L*x */
__attribute__((noinline, noipa)) uint64_t HOSTILE_WORK(uint64_t x)
{
	volatile uint64_t acc = 0;

	for (unsigned k = 0; k < HOSTILE_LOOP; k++)
		acc += 5u * k + x;
	return acc;
}
