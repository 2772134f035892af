/* SPDX-License-Identifier: MIT */
/* loadall: live profiling target that runs code in each of the libraries it is given.
 *
 * loadall [-s SECONDS] [-r READYFILE] LIB...
 *
 * Each LIB is a copy of libhostile-corrupt.so (tests/targets/hostile-lib.c),
 * corrupted by the test where the dynamic loader does not look (CFI, DWARF,
 * section headers, string tables, a cut tail): each is dlopened, and the
 * main thread calls hostile_corrupt_work of each in turn until SECONDS pass
 * (default 5) or SIGUSR2, checking every result.  At the end "result: OK
 * calls=N" (or "result: BAD ...") is printed.  "ready\n" is written to
 * READYFILE once every library has run.  Built -O0 -g -fno-omit-frame-pointer. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "target.h"

#define MAX_LIBS 64
#define LIB_LOOP 2000u		/* as in hostile-lib.c */

typedef uint64_t (*work_fn)(uint64_t);

static uint64_t expected(uint64_t x)
{
	return 5ull * LIB_LOOP * (LIB_LOOP - 1) / 2 + LIB_LOOP * x;
}

/* Runs each library's function once; returns how many answered wrong. */
static __attribute__((noinline)) int round_of(work_fn *fns, int n, uint64_t *calls)
{
	int bad = 0;

	for (int i = 0; i < n; i++) {
		uint64_t x = *calls & 0xff;

		bad += fns[i](x) != expected(x);
		(*calls)++;
	}
	return bad;
}

int main(int argc, char **argv)
{
	static work_fn fns[MAX_LIBS];
	const char *ready = NULL;
	double seconds = 5;
	uint64_t calls = 0;
	int n = 0, bad = 0, opt;

	while ((opt = getopt(argc, argv, "s:r:")) != -1) {
		switch (opt) {
		case 's': seconds = strtod(optarg, NULL); break;
		case 'r': ready = optarg; break;
		default: goto usage;
		}
	}
	if (optind == argc || argc - optind > MAX_LIBS || !(seconds > 0))
		goto usage;
	for (int i = optind; i < argc; i++) {
		void *h = dlopen(argv[i], RTLD_NOW | RTLD_LOCAL);

		if (!h || !(fns[n] = (work_fn)dlsym(h, "hostile_corrupt_work"))) {
			fprintf(stderr, "loadall: cannot load '%s': %s\n", argv[i], dlerror());
			return 2;
		}
		n++;
	}
	target_start_deadline(seconds);
	bad += round_of(fns, n, &calls);
	if (ready && target_write_ready(ready) != 0) {
		fprintf(stderr, "loadall: cannot write '%s': %s\n", ready, strerror(errno));
		return 2;
	}
	while (!target_past_deadline())
		bad += round_of(fns, n, &calls);
	if (bad)
		printf("result: BAD calls=%llu wrong=%d\n", (unsigned long long)calls, bad);
	else
		printf("result: OK calls=%llu\n", (unsigned long long)calls);
	return fflush(stdout) != 0 || bad;

usage:
	fprintf(stderr, "usage: loadall [-s SECONDS] [-r READYFILE] LIB...\n");
	return 64;
}
