/* SPDX-License-Identifier: MIT */
/* freeze-target: measures how long a stack dump freezes a running thread.
 *
 * freeze-target -o GAPFILE [-t NTHREADS] [-r READYFILE]
 *
 * One "spinner" thread reads CLOCK_MONOTONIC in a tight loop and keeps the
 * largest gap between two consecutive readings (the longest time it did not
 * run: a stop by a tracer, or a preemption) and the sum of the gaps over
 * 50 us.  NTHREADS - 1 "napper" threads (default 63) loop on nanosleep of
 * 10..50 ms in a noinline chain nap_outer -> nap_inner.  On SIGUSR1 the main
 * thread writes "MAXGAP_NS SUMGAPS_NS" (since the last SIGUSR1) to GAPFILE
 * (via GAPFILE.tmp and rename) and resets both.  SIGTERM ends it.  Built by
 * bench/dump-freeze.sh with gcc -O2 -g -pthread. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline, noipa))
#define BIG_GAP_NS 50000u

static uint64_t max_gap, sum_gaps;	/* written by the spinner only */
static int reset_req;			/* main asks the spinner to reset */
static int running = 1;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

NOINLINE static void spin_inner(void)
{
	uint64_t last = now_ns();

	while (__atomic_load_n(&running, __ATOMIC_RELAXED)) {
		uint64_t t = now_ns(), gap = t - last;

		last = t;
		if (__atomic_load_n(&reset_req, __ATOMIC_ACQUIRE)) {
			__atomic_store_n(&max_gap, 0, __ATOMIC_RELAXED);
			__atomic_store_n(&sum_gaps, 0, __ATOMIC_RELAXED);
			__atomic_store_n(&reset_req, 0, __ATOMIC_RELEASE);
			continue;
		}
		if (gap > __atomic_load_n(&max_gap, __ATOMIC_RELAXED))
			__atomic_store_n(&max_gap, gap, __ATOMIC_RELAXED);
		if (gap > BIG_GAP_NS)
			__atomic_store_n(&sum_gaps, sum_gaps + gap, __ATOMIC_RELAXED);
	}
	asm volatile("" ::: "memory");
}

NOINLINE static void *spinner(void *arg)
{
	pthread_setname_np(pthread_self(), "spinner");
	spin_inner();
	asm volatile("" ::: "memory");
	return arg;
}

NOINLINE static void nap_inner(unsigned seed)
{
	while (__atomic_load_n(&running, __ATOMIC_RELAXED)) {
		struct timespec ts = { 0, (long)(10 + rand_r(&seed) % 41) * 1000000L };

		nanosleep(&ts, NULL);
	}
	asm volatile("" ::: "memory");
}

NOINLINE static void nap_outer(unsigned seed)
{
	nap_inner(seed);
	asm volatile("" ::: "memory");
}

NOINLINE static void *napper(void *arg)
{
	pthread_setname_np(pthread_self(), "napper");
	nap_outer((unsigned)(uintptr_t)arg);
	asm volatile("" ::: "memory");
	return arg;
}

static int write_file(const char *path, const char *text)
{
	char tmp[4096];
	FILE *f;

	if (snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= (int)sizeof(tmp))
		return -1;
	f = fopen(tmp, "w");
	if (!f)
		return -1;
	fputs(text, f);
	if (fclose(f) != 0)
		return -1;
	return rename(tmp, path);
}

int main(int argc, char **argv)
{
	const char *out = NULL, *ready = NULL;
	int nthreads = 64, opt, sig;
	pthread_t th;
	sigset_t set;
	char line[128];

	while ((opt = getopt(argc, argv, "o:t:r:")) != -1) {
		switch (opt) {
		case 'o': out = optarg; break;
		case 't': nthreads = atoi(optarg); break;
		case 'r': ready = optarg; break;
		default: goto usage;
		}
	}
	if (!out || nthreads < 1 || nthreads > 4096)
		goto usage;
	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	if (pthread_create(&th, NULL, spinner, NULL))
		return 2;
	for (int i = 1; i < nthreads; i++)
		if (pthread_create(&th, NULL, napper, (void *)(uintptr_t)(i * 7919)))
			return 2;
	if (ready && write_file(ready, "ready\n") != 0)
		return 2;
	for (;;) {
		if (sigwait(&set, &sig) != 0)
			return 2;
		if (sig != SIGUSR1)
			break;
		snprintf(line, sizeof(line), "%llu %llu\n",
			 (unsigned long long)__atomic_load_n(&max_gap, __ATOMIC_RELAXED),
			 (unsigned long long)__atomic_load_n(&sum_gaps, __ATOMIC_RELAXED));
		__atomic_store_n(&reset_req, 1, __ATOMIC_RELEASE);
		while (__atomic_load_n(&reset_req, __ATOMIC_ACQUIRE)) {
			struct timespec ms = { 0, 100000L };

			nanosleep(&ms, NULL);
		}
		if (write_file(out, line) != 0) {
			fprintf(stderr, "freeze-target: cannot write '%s': %s\n", out, strerror(errno));
			return 2;
		}
	}
	__atomic_store_n(&running, 0, __ATOMIC_RELAXED);
	return 0;
usage:
	fprintf(stderr, "usage: freeze-target -o GAPFILE [-t NTHREADS] [-r READYFILE]\n");
	return 64;
}
