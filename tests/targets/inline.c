/* SPDX-License-Identifier: MIT */
/* inline: live profiling target whose hot code is inlined (built -O2 -g).
 *
 * inline [-s SECONDS] [-r READYFILE]
 *
 * The noinline hot_loop calls the always_inline inline_outer, which calls the
 * always_inline inline_inner, so nearly all samples land in code that DWARF
 * describes as inline_inner inlined into inline_outer inlined into hot_loop.
 * The tests find the line ranges of the three bodies through the marker
 * comments "BEGIN <name>" / "END <name>"; keep them around the bodies.
 * "ready\n" goes to READYFILE (via .tmp and rename) before hot_loop starts;
 * SIGUSR2 ends the run early (as if SECONDS had passed). */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "target.h"

/* noipa as well: no constprop clone renames hot_loop (hot_loop.constprop.0). */
#define NOINLINE __attribute__((noinline, noipa))

#define INNER_LOOP 20000u

/* BEGIN inline_inner */
static inline __attribute__((always_inline)) uint64_t inline_inner(uint64_t x)
{
	uint64_t acc = 0;

	for (unsigned k = 0; k < INNER_LOOP; k++) {
		acc += 3u * k + x;
		asm volatile("" : "+r"(acc));	/* keep the loop: no closed form */
	}
	return acc;
}
/* END inline_inner */

/* BEGIN inline_outer */
static inline __attribute__((always_inline)) uint64_t inline_outer(uint64_t x)
{
	uint64_t a = inline_inner(x);
	uint64_t b = inline_inner(x + 1);

	return a ^ (b << 1);
}
/* END inline_outer */

static uint64_t inner_expected(uint64_t x)
{
	return 3u * (uint64_t)INNER_LOOP * (INNER_LOOP - 1) / 2 + (uint64_t)INNER_LOOP * x;
}


/* BEGIN hot_loop */
NOINLINE static uint64_t hot_loop(uint64_t *iterations)
{
	uint64_t sum = 0, it = 0;

	do {
		sum += inline_outer(it & 0xffff);
		it++;
	} while (!target_past_deadline());
	*iterations = it;
	return sum;
}
/* END hot_loop */

int main(int argc, char **argv)
{
	const char *ready = NULL;
	double seconds = 5;
	uint64_t iterations = 0, sum, want = 0;

	if (target_options(argc, argv, "inline", &seconds, &ready))
		return 64;
	target_start_deadline(seconds);
	if (ready && target_write_ready(ready) != 0) {
		fprintf(stderr, "inline: cannot write '%s': %s\n", ready, strerror(errno));
		return 2;
	}

	sum = hot_loop(&iterations);

	for (uint64_t it = 0; it < iterations; it++) {
		uint64_t x = it & 0xffff;
		want += inner_expected(x) ^ (inner_expected(x + 1) << 1);
	}
	if (want == sum && iterations > 0) {
		printf("result: OK\n");
	} else {
		printf("result: BAD iterations=%llu sum=%llu expected=%llu\n",
		       (unsigned long long)iterations, (unsigned long long)sum,
		       (unsigned long long)want);
	}
	if (fflush(stdout) != 0)
		return 2;
	return want == sum && iterations > 0 ? 0 : 1;
}
