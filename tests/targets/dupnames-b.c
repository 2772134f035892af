/* SPDX-License-Identifier: MIT */
/* dupnames' second source file: another static work, called through spin_b. */
#include <stdint.h>

#define NOINLINE __attribute__((noinline, noipa))

uint64_t dupnames_spin_b(uint64_t x);

/* Not the same loop as dupnames.c's work, so that no linker folds them. */
NOINLINE static uint64_t work(uint64_t x)
{
	volatile uint64_t acc = 1;

	for (unsigned k = 0; k < 2000u; k++)
		acc += 7u * k ^ x;
	return acc;
}

NOINLINE uint64_t dupnames_spin_b(uint64_t x)
{
	x = work(x);
	asm volatile("" ::: "memory");
	return x;
}
