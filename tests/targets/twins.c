/* SPDX-License-Identifier: MIT */
/* twins: one leaf reached from two callers with identical frames.
 *
 * twins [-s SECONDS] [-r READYFILE]
 *
 * One worker thread "twins" calls leaf() (about 1 ms of work) 100 times
 * through via_a(), then 100 times through via_b(), and so on until SECONDS
 * pass (or SIGUSR2).  The two callers
 * have the same code, so leaf runs at the same pcs with the same stack
 * pointer under both: only the return address on the stack tells them
 * apart.  A profiler that reused a walk for a copy that merely has the
 * same pc and SP would put the samples of a run under the caller of the
 * run before.  Prints "result: OK" when both ran. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "target.h"

#define NOINLINE __attribute__((noinline, noipa))

#define LEAF_LOOP 400000u
#define PHASE 100

static uint64_t calls_a, calls_b, sum;

NOINLINE static uint64_t leaf(uint64_t x)
{
	volatile uint64_t acc = 0;

	for (unsigned k = 0; k < LEAF_LOOP; k++)
		acc += k ^ x;
	return acc;
}

NOINLINE static uint64_t via_a(uint64_t x)
{
	return leaf(x) + 1;
}

NOINLINE static uint64_t via_b(uint64_t x)
{
	return leaf(x) + 2;
}

static void *worker_main(void *arg)
{
	uint64_t i;

	(void)arg;
	for (i = 0; !target_past_deadline(); i++) {
		/* Runs of PHASE calls: a walk remembered under one caller
		 * meets the whole next run of the other. */
		if ((i / PHASE) & 1) {
			sum += via_a(i) - 1;
			calls_a++;
		} else {
			sum += via_b(i) - 2;
			calls_b++;
		}
	}
	return NULL;
}

int main(int argc, char **argv)
{
	const char *ready = NULL;
	double seconds = 10;

	if (target_options(argc, argv, "twins", &seconds, &ready))
		return 64;
	target_start_deadline(seconds);
	if (target_run_worker(worker_main, "twins", ready))
		return 1;
	if (!calls_a || !calls_b) {
		printf("result: BAD sum %llu, %llu + %llu calls\n", (unsigned long long)sum,
		       (unsigned long long)calls_a, (unsigned long long)calls_b);
		return 1;
	}
	printf("result: OK\n");
	return 0;
}
