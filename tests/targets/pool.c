/* SPDX-License-Identifier: MIT */
/* pool: live target with many parked threads and a few busy ones.
 *
 * pool [-n PARKED] [-b BUSY] [-p NAP_MS] [-B BURST_MS] [-s SECONDS] [-r READYFILE]
 *
 * PARKED threads (default 1000), named "park-N", each loop on
 *   park_thread -> park_outer -> park_inner -> nanosleep(NAP_MS, default 1000)
 * or, with -p 0, wait there in pause() for the whole run (no wake-ups);
 * with -B, each parked thread spins for BURST_MS in park_burst (under
 * park_outer) before each nap: threads that run in bursts, then sleep
 * and BUSY threads (default 2), named "busy-N", spin in
 *   busy_thread -> busy_outer -> busy_inner (a loop on a volatile counter).
 * The ready file is written once every thread has started.  The run ends
 * SECONDS after the start (default 60) or at SIGUSR2; main then prints
 * "result: OK parked=P busy=B" and exits 0, ending every thread.
 *
 * Threads get 64 KiB stacks, so that thousands of them fit anywhere.  This
 * is the shape of a server's thread pool: the tests check that cprof's cost
 * and its file descriptors do not grow with the parked threads, and
 * bench/pool.sh measures it (a short NAP_MS makes a "waking" pool). */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "target.h"

#define NOINLINE __attribute__((noinline, noipa))
#define KEEP_FRAME() asm volatile("" ::: "memory")

static long nap_ms = 1000;
static long burst_ms;
static volatile unsigned long spin_counter;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t started_cond = PTHREAD_COND_INITIALIZER;
static long started;

NOINLINE static void park_inner(void)
{
	struct timespec ts = { .tv_sec = nap_ms / 1000, .tv_nsec = (nap_ms % 1000) * 1000000L };

	if (nap_ms)
		nanosleep(&ts, NULL);
	else
		pause();
	KEEP_FRAME();
}

NOINLINE static void park_burst(void)
{
	struct timespec t0, now;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		unsigned i;

		for (i = 0; i < 10000; i++)
			spin_counter++;
		clock_gettime(CLOCK_MONOTONIC, &now);
	} while ((now.tv_sec - t0.tv_sec) * 1000 + (now.tv_nsec - t0.tv_nsec) / 1000000 < burst_ms);
	KEEP_FRAME();
}

NOINLINE static void park_outer(void)
{
	if (burst_ms)
		park_burst();
	park_inner();
	KEEP_FRAME();
}

NOINLINE static void busy_inner(void)
{
	unsigned i;

	for (i = 0; i < 100000; i++)
		spin_counter++;
	KEEP_FRAME();
}

NOINLINE static void busy_outer(void)
{
	busy_inner();
	KEEP_FRAME();
}

static void mark_started(void)
{
	pthread_mutex_lock(&lock);
	started++;
	pthread_cond_signal(&started_cond);
	pthread_mutex_unlock(&lock);
}

NOINLINE static void *park_thread(void *arg)
{
	(void)arg;
	mark_started();
	for (;;)
		park_outer();
	return NULL;
}

NOINLINE static void *busy_thread(void *arg)
{
	(void)arg;
	mark_started();
	for (;;)
		busy_outer();
	return NULL;
}

static int start(void *(*fn)(void *), const char *prefix, long i, const pthread_attr_t *attr)
{
	pthread_t th;
	char name[16];
	int ret;

	ret = pthread_create(&th, attr, fn, NULL);
	if (ret) {
		fprintf(stderr, "pool: cannot create thread %s%ld: %s\n", prefix, i, strerror(ret));
		return -1;
	}
	snprintf(name, sizeof(name), "%s%ld", prefix, i);
	pthread_setname_np(th, name);
	pthread_detach(th);
	return 0;
}

int main(int argc, char **argv)
{
	long parked = 1000, busy = 2, i;
	double seconds = 60;
	const char *ready = NULL;
	pthread_attr_t attr;
	int c;

	while ((c = getopt(argc, argv, "n:b:p:B:s:r:")) != -1) {
		switch (c) {
		case 'n': parked = atol(optarg); break;
		case 'b': busy = atol(optarg); break;
		case 'p': nap_ms = atol(optarg); break;
		case 'B': burst_ms = atol(optarg); break;
		case 's': seconds = atof(optarg); break;
		case 'r': ready = optarg; break;
		default:
			fprintf(stderr, "usage: pool [-n PARKED] [-b BUSY] [-p NAP_MS] [-B BURST_MS] [-s SECONDS] [-r READYFILE]\n");
			return 2;
		}
	}
	if (parked < 0 || busy < 0 || nap_ms < 0 || burst_ms < 0) {
		fprintf(stderr, "pool: bad arguments\n");
		return 2;
	}
	target_start_deadline(seconds);
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 64 << 10);
	for (i = 0; i < parked; i++)
		if (start(park_thread, "park-", i, &attr) < 0)
			return 1;
	for (i = 0; i < busy; i++)
		if (start(busy_thread, "busy-", i, &attr) < 0)
			return 1;
	pthread_mutex_lock(&lock);
	while (started < parked + busy)
		pthread_cond_wait(&started_cond, &lock);
	pthread_mutex_unlock(&lock);
	if (ready && target_write_ready(ready) < 0) {
		perror("pool: ready file");
		return 1;
	}
	while (!target_past_deadline()) {
		struct timespec ts = { 0, 10000000L };

		nanosleep(&ts, NULL);
	}
	printf("result: OK parked=%ld busy=%ld\n", parked, busy);
	fflush(stdout);
	return 0;
}
