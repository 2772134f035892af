/* SPDX-License-Identifier: MIT */
/* deep: a live target whose stack is deeper than a small stack copy.
 *
 * deep [-d DEPTH] [-s SECONDS] [-r READYFILE] [-v]
 *
 * One worker thread "descender" recurses DEPTH (default 200) noinline levels of
 * descend(), each with a 512-byte frame, then spins in spin_leaf until
 * SECONDS pass (or SIGUSR2); the stack under the leaf is then over 100 KiB,
 * so a 4 KiB copy cannot reach the thread's start while the default one
 * can.  -v varies the depth instead: the descender goes down 1..DEPTH
 * levels (a fixed pseudo-random sequence), spins there about 3 ms, comes
 * back up and goes down again, until SECONDS pass: its samples are taken
 * at many depths of one stack.  Prints "result: OK" when the recursion
 * unwound back. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "target.h"

#define NOINLINE __attribute__((noinline, noipa))

static int depth = 200;
static int vary;
static volatile uint64_t sink;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

NOINLINE static uint64_t spin_leaf(void)
{
	uint64_t x = 0, until = vary ? now_ns() + 3000000u : UINT64_MAX;

	while (!target_past_deadline() && now_ns() < until) {
		unsigned i;

		for (i = 0; i < 100000; i++)
			x = x * 6364136223846793005ull + i;
	}
	return x;
}

NOINLINE static uint64_t descend(int n)
{
	volatile char pad[512];
	uint64_t r;

	pad[0] = (char)n;
	pad[511] = (char)n;
	r = n ? descend(n - 1) : spin_leaf();
	return r + (uint64_t)pad[0] + (uint64_t)pad[511];
}

static void *worker_main(void *arg)
{
	uint64_t r = 1;

	(void)arg;
	if (!vary) {
		sink = descend(depth);
		return NULL;
	}
	while (!target_past_deadline()) {
		r = r * 6364136223846793005ull + 1442695040888963407ull;
		sink += descend((int)((r >> 33) % (uint64_t)depth));
	}
	return NULL;
}

int main(int argc, char **argv)
{
	const char *ready = NULL;
	double seconds = 10;
	int c;

	while ((c = getopt(argc, argv, "d:s:r:v")) != -1) {
		switch (c) {
		case 'd': depth = atoi(optarg); break;
		case 's': seconds = atof(optarg); break;
		case 'r': ready = optarg; break;
		case 'v': vary = 1; break;
		default:
			fprintf(stderr, "usage: deep [-d DEPTH] [-s SECONDS] [-r READYFILE] [-v]\n");
			return 2;
		}
	}
	target_start_deadline(seconds);
	if (target_run_worker(worker_main, "descender", ready))
		return 1;
	printf("result: OK\n");
	return 0;
}
