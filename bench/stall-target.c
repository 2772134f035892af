/* SPDX-License-Identifier: MIT */
/* stall-target: a spinning thread that measures its own stalls, among
 * sleeping threads; the target of bench/wall-stall.sh and bench/stop-time.sh.
 *
 * stall-target -o GAPFILE [-t NTHREADS] [-s NSPIN] [-g GAP_NS]
 *              [-n MIN_MS:MAX_MS] [-r READYFILE]
 *
 * NSPIN (default 1) of the NTHREADS workers (default 64) are "spinner"
 * threads reading CLOCK_MONOTONIC in a tight loop; the others are "napper"
 * threads looping on nanosleep of MIN_MS..MAX_MS (default 10:50) in a
 * noinline chain nap_outer -> nap_inner.  The first spinner keeps, since the
 * last reset: the largest gap between two consecutive readings, the sum and
 * the count of the gaps over GAP_NS (default 20000), and the length of the
 * window.  A gap is time it did not run: stopped by a tracer, or preempted.
 * On SIGUSR1 the main thread writes
 *   "MAXGAP_NS SUMGAPS_NS NGAPS WINDOW_NS\n"
 * to GAPFILE (via GAPFILE.tmp and rename) and the window starts again; the
 * spinner itself takes the snapshot and resets, so nothing is lost between
 * the two.  With no spinner it writes "0 0 0 0".  SIGTERM ends it.
 *
 * It differs from bench/freeze-target.c in the threshold (a fixed 50 us
 * there, which misses whole stops of 25-50 us), the window and gap count in
 * the report, and the number of spinners.  Built with gcc -O2 -g -pthread. */
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

struct report {
	uint64_t max_gap, sum_gaps, n_gaps, window;
};

static uint64_t gap_ns = 20000;
static unsigned nap_min_ms = 10, nap_max_ms = 50;
static int reset_req;		/* main asks the first spinner for a report */
static struct report report;	/* written by the spinner before it clears reset_req */
static int running = 1;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

NOINLINE static void spin_inner(int keeper)
{
	uint64_t last = now_ns(), start = last, max_gap = 0, sum = 0, n = 0;

	while (__atomic_load_n(&running, __ATOMIC_RELAXED)) {
		uint64_t t = now_ns(), gap = t - last;

		last = t;
		if (!keeper)
			continue;
		if (gap > max_gap)
			max_gap = gap;
		if (gap > gap_ns) {
			sum += gap;
			n++;
		}
		if (__atomic_load_n(&reset_req, __ATOMIC_ACQUIRE)) {
			report = (struct report){ max_gap, sum, n, t - start };
			max_gap = sum = n = 0;
			start = t;
			__atomic_store_n(&reset_req, 0, __ATOMIC_RELEASE);
		}
	}
	asm volatile("" ::: "memory");
}

NOINLINE static void *spinner(void *arg)
{
	pthread_setname_np(pthread_self(), "spinner");
	spin_inner(arg != NULL);
	asm volatile("" ::: "memory");
	return arg;
}

NOINLINE static void nap_inner(unsigned seed)
{
	while (__atomic_load_n(&running, __ATOMIC_RELAXED)) {
		unsigned ms = nap_min_ms + rand_r(&seed) % (nap_max_ms - nap_min_ms + 1);
		struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

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
	int nthreads = 64, nspin = 1, opt, sig;
	struct report rep;
	pthread_t th;
	sigset_t set;
	char line[160];

	while ((opt = getopt(argc, argv, "o:t:s:g:n:r:")) != -1) {
		switch (opt) {
		case 'o': out = optarg; break;
		case 't': nthreads = atoi(optarg); break;
		case 's': nspin = atoi(optarg); break;
		case 'g': gap_ns = strtoull(optarg, NULL, 10); break;
		case 'n':
			if (sscanf(optarg, "%u:%u", &nap_min_ms, &nap_max_ms) != 2)
				goto usage;
			break;
		case 'r': ready = optarg; break;
		default: goto usage;
		}
	}
	if (!out || nthreads < 1 || nthreads > 4096 || nspin < 0 || nspin > nthreads ||
	    nap_min_ms < 1 || nap_max_ms < nap_min_ms || optind != argc)
		goto usage;
	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	for (int i = 0; i < nthreads; i++)
		if (pthread_create(&th, NULL, i < nspin ? spinner : napper,
				   i < nspin ? (void *)(uintptr_t)(i == 0) : (void *)(uintptr_t)(i * 7919)))
			return 2;
	if (ready && write_file(ready, "ready\n") != 0)
		return 2;
	for (;;) {
		if (sigwait(&set, &sig) != 0)
			return 2;
		if (sig != SIGUSR1)
			break;
		memset(&rep, 0, sizeof(rep));
		if (nspin) {
			__atomic_store_n(&reset_req, 1, __ATOMIC_RELEASE);
			while (__atomic_load_n(&reset_req, __ATOMIC_ACQUIRE)) {
				struct timespec ms = { 0, 100000L };

				nanosleep(&ms, NULL);
			}
			rep = report;
		}
		snprintf(line, sizeof(line), "%llu %llu %llu %llu\n", (unsigned long long)rep.max_gap,
			 (unsigned long long)rep.sum_gaps, (unsigned long long)rep.n_gaps,
			 (unsigned long long)rep.window);
		if (write_file(out, line) != 0) {
			fprintf(stderr, "stall-target: cannot write '%s': %s\n", out, strerror(errno));
			return 2;
		}
	}
	__atomic_store_n(&running, 0, __ATOMIC_RELAXED);
	return 0;
usage:
	fprintf(stderr, "usage: stall-target -o GAPFILE [-t NTHREADS] [-s NSPIN] [-g GAP_NS] "
		"[-n MIN_MS:MAX_MS] [-r READYFILE]\n");
	return 64;
}
