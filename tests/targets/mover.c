/* SPDX-License-Identifier: MIT */
/* mover: live profiling target whose CPU split between fn_a and fn_b is a flag.
 *
 * mover [-p PERCENT] [-s SECONDS] [-w MS] [-r READYFILE]
 *
 * The main thread spins for SECONDS in the noinline chain main -> run ->
 * fn_a / fn_b; out of every 100 work units PERCENT (default 50) run in fn_a
 * and the rest in fn_b, both the same fixed arithmetic loop.  Two runs with
 * different PERCENT make a known move of work for `cprof diff` to find.
 * With -w the split follows the clock instead: fn_a runs in the first
 * PERCENT% of every MS-millisecond window and fn_b in the rest, a workload
 * in lockstep with any sampler that ticks every MS milliseconds; it prints
 * the shares of the units and of the wall time each function really got
 * ("split: ...", which a loaded machine moves away from PERCENT).  A
 * checksum with a closed form catches a profiler that corrupts the target
 * ("result: BAD"), else "result: OK".  READYFILE is written once it runs. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "target.h"

/* noipa: identical functions must stay two functions (no ICF, no clones). */
#define NOINLINE __attribute__((noinline, noipa))

#define LOOP 4000u		/* arithmetic steps per work unit */

/* sum_{k<LOOP} (3k + x) */
static uint64_t unit_expected(uint64_t x)
{
	return 3u * (uint64_t)LOOP * (LOOP - 1) / 2 + (uint64_t)LOOP * x;
}

NOINLINE static uint64_t fn_a(uint64_t x)
{
	volatile uint64_t acc = 0;
	for (unsigned k = 0; k < LOOP; k++)
		acc += 3u * k + x;
	return acc;
}

NOINLINE static uint64_t fn_b(uint64_t x)
{
	volatile uint64_t acc = 0;
	for (unsigned k = 0; k < LOOP; k++)
		acc += 3u * k + x;
	return acc;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Work in rounds of 100 units until the deadline; returns the rounds done. */
NOINLINE static uint64_t run(int percent, double seconds, uint64_t *sum)
{
	double end = now_s() + seconds;
	uint64_t rounds = 0;

	do {
		for (int i = 0; i < 100; i++)
			*sum += i < percent ? fn_a((uint64_t)i) : fn_b((uint64_t)i);
		rounds++;
	} while (now_s() < end);
	return rounds;
}

/* What -w did: units run in fn_a and fn_b, and the wall time spent in
 * each (a unit's, preemption included): the shares a profile must show in
 * cpu and wall mode, whatever the machine's load did to the 70/30 plan. */
static uint64_t phased_units[2];
static double phased_wall[2];

/* -w: work units until the deadline, fn_a in the first percent% of every
 * window of window_s seconds; returns the expected sum of the units done. */
NOINLINE static uint64_t run_phased(int percent, double seconds, double window_s,
				    uint64_t *sum)
{
	double start = now_s(), end = start + seconds, t;
	uint64_t want = 0, x = 0;

	while ((t = now_s()) < end) {
		double phase = (t - start) / window_s;
		int b;

		phase -= (double)(uint64_t)phase;
		x = (x + 1) % 100;
		b = !(phase * 100 < percent);
		*sum += b ? fn_b(x) : fn_a(x);
		want += unit_expected(x);
		phased_units[b]++;
		phased_wall[b] += now_s() - t;
	}
	return want;
}

static void usage(void)
{
	fprintf(stderr, "usage: mover [-p PERCENT] [-s SECONDS] [-w MS] [-r READYFILE]\n");
	exit(64);
}

int main(int argc, char **argv)
{
	const char *ready = NULL;
	double seconds = 2, window_ms = 0;
	int percent = 50, opt;
	uint64_t sum = 0, want = 0, rounds;

	while ((opt = getopt(argc, argv, "p:s:w:r:")) != -1) {
		switch (opt) {
		case 'p': percent = atoi(optarg); break;
		case 's': seconds = strtod(optarg, NULL); break;
		case 'w': window_ms = strtod(optarg, NULL); break;
		case 'r': ready = optarg; break;
		default: usage();
		}
	}
	if (percent < 0 || percent > 100 || !(seconds > 0) || window_ms < 0)
		usage();
	if (ready && target_write_ready(ready) != 0) {
		fprintf(stderr, "mover: cannot write '%s': %s\n", ready, strerror(errno));
		return 2;
	}
	if (window_ms > 0) {
		want = run_phased(percent, seconds, window_ms / 1e3, &sum);
		rounds = 1;
	} else {
		rounds = run(percent, seconds, &sum);
		for (int i = 0; i < 100; i++)
			want += unit_expected((uint64_t)i);
	}
	if (sum != want * rounds) {
		printf("result: BAD rounds=%llu sum=%llu expected=%llu\n",
		       (unsigned long long)rounds, (unsigned long long)sum,
		       (unsigned long long)(want * rounds));
		return 1;
	}
	if (window_ms > 0)
		printf("split: fn_a %.1f%% of the units, %.1f%% of the wall time\n",
		       100.0 * (double)phased_units[0] / (double)(phased_units[0] + phased_units[1]),
		       100.0 * phased_wall[0] / (phased_wall[0] + phased_wall[1]));
	printf("result: OK\n");
	return fflush(stdout) != 0 ? 2 : 0;
}
