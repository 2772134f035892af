/* SPDX-License-Identifier: MIT */
/* plt: target whose hot loop calls a shared library's function through
 * the PLT (built without -fno-plt), for PLT stub names.
 *
 * plt [-s SECONDS] [-r READYFILE]
 *
 * A thread named "caller" runs call_loop, which calls plt_hot_step in
 * libplt-hot.so (linked in, bound at the first call) until SECONDS pass or
 * SIGUSR2; then "result: OK". */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>

#include "target.h"

#define NOINLINE __attribute__((noinline, noipa))

uint64_t plt_hot_step(uint64_t x);

static volatile uint64_t sink;

NOINLINE static void *call_loop(void *arg)
{
	uint64_t x = 1;
	unsigned i;

	(void)arg;
	while (!target_past_deadline()) {
		for (i = 0; i < 100000; i++)
			x = plt_hot_step(x);
		sink = x;
	}
	return NULL;
}

int main(int argc, char **argv)
{
	double seconds = 10;
	const char *ready = NULL;
	int r = target_options(argc, argv, "plt", &seconds, &ready);

	if (r)
		return r;
	target_start_deadline(seconds);
	if (target_run_worker(call_loop, "caller", ready))
		return 1;
	puts("result: OK");
	return 0;
}
