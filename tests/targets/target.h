/* SPDX-License-Identifier: MIT */
/*
 * What the live test targets share: the ready file the tests wait for, and
 * the run's end, SECONDS after the start or at SIGUSR2 (the tests stop a
 * target with it once they are done instead of waiting for SECONDS).
 * Header-only: each target is one program built from one file.
 */
#ifndef CPROF_TESTS_TARGET_H
#define CPROF_TESTS_TARGET_H

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define TARGET_UNUSED __attribute__((unused))

static struct timespec target_deadline;
static volatile sig_atomic_t target_stop_early;

static void target_on_usr2(int sig)
{
	(void)sig;
	target_stop_early = 1;
}

/* Starts the clock: the run ends seconds from now, or at SIGUSR2. */
static TARGET_UNUSED void target_start_deadline(double seconds)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_RESTART;
	sa.sa_handler = target_on_usr2;
	sigaction(SIGUSR2, &sa, NULL);
	clock_gettime(CLOCK_MONOTONIC, &target_deadline);
	target_deadline.tv_sec += (time_t)seconds;
	target_deadline.tv_nsec += (long)((seconds - (double)(time_t)seconds) * 1e9);
	if (target_deadline.tv_nsec >= 1000000000L) {
		target_deadline.tv_sec++;
		target_deadline.tv_nsec -= 1000000000L;
	}
}

static TARGET_UNUSED int target_past_deadline(void)
{
	struct timespec now;

	if (target_stop_early)
		return 1;
	clock_gettime(CLOCK_MONOTONIC, &now);
	return now.tv_sec > target_deadline.tv_sec ||
	       (now.tv_sec == target_deadline.tv_sec && now.tv_nsec >= target_deadline.tv_nsec);
}

/* The options of a target that takes only [-s SECONDS] [-r READYFILE]:
 * into *seconds (left as it is without -s) and *ready.  Returns 0, or 64
 * after printing the usage of name (an unknown option, an operand, or
 * SECONDS not above 0). */
static TARGET_UNUSED int target_options(int argc, char **argv, const char *name,
					double *seconds, const char **ready)
{
	int opt;

	while ((opt = getopt(argc, argv, "s:r:")) != -1) {
		switch (opt) {
		case 's': *seconds = strtod(optarg, NULL); break;
		case 'r': *ready = optarg; break;
		default: goto usage;
		}
	}
	if (optind == argc && *seconds > 0)
		return 0;
usage:
	fprintf(stderr, "usage: %s [-s SECONDS] [-r READYFILE]\n", name);
	return 64;
}

/* Writes "ready" to path through path.tmp and a rename, so that a test
 * polling for path never reads it half written.  Returns 0 or -1. */
static TARGET_UNUSED int target_write_ready(const char *path)
{
	char tmp[4096];
	FILE *f;

	if (snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= (int)sizeof(tmp))
		return -1;
	f = fopen(tmp, "w");
	if (!f)
		return -1;
	fputs("ready\n", f);
	if (fclose(f) != 0)
		return -1;
	return rename(tmp, path);
}

/* The run of a target whose work is one thread: starts fn on a thread
 * named name, writes the ready file (if any) once it is started, and joins
 * it.  Returns 0, or 1 after saying what failed. */
static TARGET_UNUSED int target_run_worker(void *(*fn)(void *), const char *name,
					   const char *ready)
{
	pthread_t t;

	if (pthread_create(&t, NULL, fn, NULL)) {
		perror("pthread_create");
		return 1;
	}
	pthread_setname_np(t, name);
	if (ready && target_write_ready(ready) < 0) {
		perror("ready file");
		return 1;
	}
	pthread_join(t, NULL);
	return 0;
}

#endif
