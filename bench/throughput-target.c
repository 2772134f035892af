/* SPDX-License-Identifier: MIT */
/* throughput-target: fixed arithmetic work on a few threads among many idle
 * ones; its rate drops by what a profiler takes from it.  The target of
 * bench/throughput.sh.
 *
 * throughput-target -o FILE [-s SECONDS] [-b NBUSY] [-i NIDLE] [-w WARMUP_MS]
 *
 * NBUSY "busy" threads (default 2) repeat a fixed unit of integer work (a
 * dependent chain of 256 multiply-xorshift steps in a noinline chain
 * work_outer -> work_unit) and count units; NIDLE "idle" threads (default 20)
 * block in pthread_cond_wait for the whole run.  After WARMUP_MS (default
 * 300: past a profiler's attach) the main thread reads the counts, sleeps
 * SECONDS (default 5, fractions allowed), reads them again and writes
 *   "ITERS_PER_S TOTAL_ITERS ELAPSED_NS BUSY_CPU_NS\n"
 * to FILE (all busy threads together, per second of CLOCK_MONOTONIC; the
 * last field is the CPU time the busy threads got over the same window,
 * from their pthread_getcpuclockid clocks: on a shared machine it tells
 * work lost to other jobs from work lost to the profiler), then returns
 * from main, so exit handlers (an in-process profiler's) run.
 * Exit 0, 2 on an error, 64 on a usage error.  Built with gcc -O2 -g -pthread. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline, noipa))
#define MAX_BUSY 64

struct busy {
	uint64_t count;		/* units done; written by its thread only */
	char pad[56];		/* one cache line each */
};

static struct busy busy[MAX_BUSY];
static clockid_t busy_clock[MAX_BUSY];
static pthread_mutex_t idle_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t idle_cv = PTHREAD_COND_INITIALIZER;
static int done;
static volatile uint64_t sink;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

NOINLINE static uint64_t work_unit(uint64_t x)
{
	for (int i = 0; i < 256; i++) {
		x = x * 6364136223846793005ull + 1442695040888963407ull;
		x ^= x >> 29;
	}
	return x;
}

NOINLINE static void work_outer(struct busy *b, uint64_t seed)
{
	uint64_t x = seed, n = 0;

	while (!__atomic_load_n(&done, __ATOMIC_RELAXED)) {
		x = work_unit(x);
		__atomic_store_n(&b->count, ++n, __ATOMIC_RELAXED);
	}
	sink = x;
}

NOINLINE static void *busy_main(void *arg)
{
	struct busy *b = arg;

	pthread_setname_np(pthread_self(), "busy");
	work_outer(b, (uint64_t)(uintptr_t)b);
	return NULL;
}

NOINLINE static void *idle_main(void *arg)
{
	pthread_setname_np(pthread_self(), "idle");
	pthread_mutex_lock(&idle_mu);
	while (!done)
		pthread_cond_wait(&idle_cv, &idle_mu);
	pthread_mutex_unlock(&idle_mu);
	return arg;
}

static uint64_t total(int n)
{
	uint64_t s = 0;

	for (int i = 0; i < n; i++)
		s += __atomic_load_n(&busy[i].count, __ATOMIC_RELAXED);
	return s;
}

static uint64_t busy_cpu_ns(int n)
{
	uint64_t s = 0;

	for (int i = 0; i < n; i++) {
		struct timespec ts;

		if (clock_gettime(busy_clock[i], &ts) == 0)
			s += (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
	}
	return s;
}

static void sleep_ns(uint64_t ns)
{
	struct timespec ts = { (time_t)(ns / 1000000000u), (long)(ns % 1000000000u) };

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

int main(int argc, char **argv)
{
	const char *out = NULL;
	int nbusy = 2, nidle = 20, opt;
	double secs = 5;
	long warmup_ms = 300;
	uint64_t c0, c1, t0, t1, u0, u1;
	pthread_t th;
	FILE *f;

	while ((opt = getopt(argc, argv, "o:s:b:i:w:")) != -1) {
		switch (opt) {
		case 'o': out = optarg; break;
		case 's': secs = atof(optarg); break;
		case 'b': nbusy = atoi(optarg); break;
		case 'i': nidle = atoi(optarg); break;
		case 'w': warmup_ms = atol(optarg); break;
		default: goto usage;
		}
	}
	if (!out || secs <= 0 || nbusy < 1 || nbusy > MAX_BUSY || nidle < 0 || nidle > 4096 ||
	    warmup_ms < 0 || optind != argc)
		goto usage;
	for (int i = 0; i < nidle; i++)
		if (pthread_create(&th, NULL, idle_main, NULL))
			return 2;
	for (int i = 0; i < nbusy; i++)
		if (pthread_create(&th, NULL, busy_main, &busy[i]) ||
		    pthread_getcpuclockid(th, &busy_clock[i]))
			return 2;
	sleep_ns((uint64_t)warmup_ms * 1000000u);
	t0 = now_ns();
	u0 = busy_cpu_ns(nbusy);
	c0 = total(nbusy);
	sleep_ns((uint64_t)(secs * 1e9));
	c1 = total(nbusy);
	u1 = busy_cpu_ns(nbusy);
	t1 = now_ns();
	__atomic_store_n(&done, 1, __ATOMIC_RELAXED);
	pthread_mutex_lock(&idle_mu);
	pthread_cond_broadcast(&idle_cv);
	pthread_mutex_unlock(&idle_mu);
	f = fopen(out, "w");
	if (!f) {
		fprintf(stderr, "throughput-target: cannot open '%s': %s\n", out, strerror(errno));
		return 2;
	}
	fprintf(f, "%.1f %llu %llu %llu\n", (double)(c1 - c0) * 1e9 / (double)(t1 - t0),
		(unsigned long long)(c1 - c0), (unsigned long long)(t1 - t0),
		(unsigned long long)(u1 - u0));
	if (fclose(f) != 0) {
		fprintf(stderr, "throughput-target: cannot write '%s': %s\n", out, strerror(errno));
		return 2;
	}
	return 0;
usage:
	fprintf(stderr, "usage: throughput-target -o FILE [-s SECONDS] [-b NBUSY] [-i NIDLE] "
		"[-w WARMUP_MS]\n");
	return 64;
}
