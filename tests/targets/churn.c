/* SPDX-License-Identifier: MIT */
/* churn: live profiling target with constant thread creation and exit.
 *
 * churn [-s SECONDS] [-r READYFILE]
 *
 * A long-lived thread named "spinner" spins for SECONDS while the main thread
 * keeps creating short-lived threads named "churn-K", each spinning about
 * 5-10 ms in the noinline churn_work and exiting; main joins each one.  At
 * the end it prints "result: OK created=N joined=N".  "ready\n" is written to
 * READYFILE (via READYFILE.tmp and rename) once the spinner runs.  SIGUSR2 ends
 * the run early (as if SECONDS had passed). */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "target.h"

/* noipa as well: configure's CFLAGS (-O2 by default) come after the per-target
 * flags, and at -O2 GCC would merge the identical leaves (ICF) or clone
 * functions under other names (constprop). */
#define NOINLINE __attribute__((noinline, noipa))

static int spinner_running;
static volatile uint64_t sink;

static int64_t now_ns(void)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (int64_t)now.tv_sec * 1000000000 + now.tv_nsec;
}

NOINLINE static void spin_some(void)
{
	for (unsigned k = 0; k < 1000; k++)
		sink += k;
}

NOINLINE static void *spinner_main(void *arg)
{
	pthread_setname_np(pthread_self(), "spinner");
	__atomic_store_n(&spinner_running, 1, __ATOMIC_SEQ_CST);
	while (!target_past_deadline())
		spin_some();
	return NULL;
}

/* Spin between 5 and 10 ms of wall time, depending on the thread number. */
NOINLINE static void churn_work(long k)
{
	int64_t end = now_ns() + 5000000 + (k % 6) * 1000000;

	while (now_ns() < end)
		spin_some();
}

static void *churn_main(void *arg)
{
	long k = (long)(intptr_t)arg;
	char name[16];

	snprintf(name, sizeof(name), "churn-%ld", k);
	pthread_setname_np(pthread_self(), name);
	churn_work(k);
	return NULL;
}

int main(int argc, char **argv)
{
	const char *ready = NULL;
	double seconds = 5;
	unsigned long created = 0, joined = 0;
	pthread_t spinner;
	int err;

	if (target_options(argc, argv, "churn", &seconds, &ready))
		return 64;
	target_start_deadline(seconds);

	err = pthread_create(&spinner, NULL, spinner_main, NULL);
	if (err) {
		fprintf(stderr, "churn: pthread_create: %s\n", strerror(err));
		return 2;
	}
	while (!__atomic_load_n(&spinner_running, __ATOMIC_SEQ_CST)) {
		struct timespec ms = { 0, 1000000 };
		nanosleep(&ms, NULL);
	}
	if (ready && target_write_ready(ready) != 0) {
		fprintf(stderr, "churn: cannot write '%s': %s\n", ready, strerror(errno));
		return 2;
	}

	while (!target_past_deadline()) {
		pthread_t t;

		err = pthread_create(&t, NULL, churn_main, (void *)(intptr_t)created);
		if (err) {
			fprintf(stderr, "churn: pthread_create: %s\n", strerror(err));
			break;
		}
		created++;
		err = pthread_join(t, NULL);
		if (err) {
			fprintf(stderr, "churn: pthread_join: %s\n", strerror(err));
			break;
		}
		joined++;
	}
	pthread_join(spinner, NULL);

	printf("result: %s created=%lu joined=%lu\n",
	       created == joined && created > 0 ? "OK" : "BAD", created, joined);
	if (fflush(stdout) != 0)
		return 2;
	return created == joined && created > 0 ? 0 : 1;
}
