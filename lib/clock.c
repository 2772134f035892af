/* SPDX-License-Identifier: MIT */
/* Monotonic and real-time clocks in nanoseconds. */
#include "config.h"

#include <time.h>

#include "lib/clock.h"

uint64_t cprof_now_ns(void)
{
	struct timespec ts;

	/* CLOCK_MONOTONIC cannot fail on Linux: the clock id is valid */
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint64_t cprof_thread_cpu_ns(void)
{
	struct timespec ts;

	if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) < 0)
		return 0;
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int64_t cprof_realtime_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}
