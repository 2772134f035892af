/* SPDX-License-Identifier: MIT */
/* dupnames: two functions with one name, in two source files.
 *
 * dupnames [-s SECONDS]
 *
 * Spins for SECONDS (default 2) in main -> spin_a -> work (this file's
 * static work) and main -> spin_b -> work (dupnames-b.c's static work), 3
 * calls to 2, and in main -> solo, a name of its own, then prints
 * "result: OK".  The two works are distinct
 * functions to the compiler and to DWARF (own file, own start line) with
 * one name, as C's statics, C++'s anonymous namespaces and Rust's generic
 * instances often are: pprof -top shows them as one row "work" with the
 * sum of their time, and cprof report must too. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "target.h"

#define NOINLINE __attribute__((noinline, noipa))

uint64_t dupnames_spin_b(uint64_t x);

NOINLINE static uint64_t work(uint64_t x)
{
	volatile uint64_t acc = 0;

	for (unsigned k = 0; k < 2000u; k++)
		acc += 5u * k + x;
	return acc;
}

/* The barrier keeps spin_a on the stack: no tail call to work. */
/* A name of its own, for a second row with flat time. */
NOINLINE static uint64_t solo(uint64_t x)
{
	volatile uint64_t acc = 3;

	for (unsigned k = 0; k < 3000u; k++)
		acc += 11u * k + x;
	return acc;
}

NOINLINE static uint64_t spin_a(uint64_t x)
{
	x = work(x);
	asm volatile("" ::: "memory");
	return x;
}

int main(int argc, char **argv)
{
	double seconds = 2;
	uint64_t sum = 0, i;
	int opt;

	while ((opt = getopt(argc, argv, "s:")) != -1) {
		if (opt != 's') {
			fprintf(stderr, "usage: dupnames [-s SECONDS]\n");
			return 2;
		}
		seconds = atof(optarg);
	}
	target_start_deadline(seconds);
	for (i = 0; !target_past_deadline(); i++) {
		sum += spin_a(i);
		sum += spin_a(i);
		sum += spin_a(i);
		sum += dupnames_spin_b(i);
		sum += dupnames_spin_b(i);
		sum += solo(i);
	}
	printf("result: OK %llu calls (%llu)\n", (unsigned long long)i, (unsigned long long)(sum & 0xff));
	return 0;
}
