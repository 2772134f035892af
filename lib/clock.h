/* SPDX-License-Identifier: MIT */
/* Reading the clocks cprof measures with. */
#ifndef CPROF_LIB_CLOCK_H
#define CPROF_LIB_CLOCK_H

#include <stdint.h>

/* CLOCK_MONOTONIC in nanoseconds: for intervals and deadlines. */
uint64_t cprof_now_ns(void);

/* The calling thread's CPU time (CLOCK_THREAD_CPUTIME_ID) in ns; 0 if unreadable. */
uint64_t cprof_thread_cpu_ns(void);

/* CLOCK_REALTIME in nanoseconds since the epoch: for time stamps such as
 * a profile's time_nanos. */
int64_t cprof_realtime_ns(void);

#endif
