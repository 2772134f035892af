/* SPDX-License-Identifier: MIT */
/* chain: live profiling target with a known call chain and a 70/30 CPU split.
 *
 * chain [-t NTHREADS] [-s SECONDS] [-r READYFILE] [-x]
 *
 * NTHREADS worker threads named "worker-K" spin for SECONDS in the noinline
 * chain worker_main -> do_work -> leaf_a / leaf_b.  Every do_work call makes
 * 7 calls of leaf_a and 3 of leaf_b, and both leaves run the same fixed
 * arithmetic loop, so leaf_a gets 70% of the leaf CPU time.  Each worker
 * keeps a checksum that is a closed-form function of its iteration count;
 * main verifies it at the end (a profiler that corrupts registers or memory
 * of the target makes it print "result: BAD ...").  Once every worker runs,
 * "ready\n" is written to READYFILE (via READYFILE.tmp and rename).  Built
 * -O0 -g -fno-omit-frame-pointer so the frames stay as written.  SIGUSR2 ends
 * the run early (as if SECONDS had passed).  -x: before the workers start,
 * zero the program's .eh_frame_hdr in memory (made writable, written, made
 * read-only again): the file still holds the table, memory no longer, so
 * an unwinder that reads the target's memory finds no unwind information
 * for the program's code (built without frame pointers: chain-nofp). */
#define _GNU_SOURCE
#include <errno.h>
#include <link.h>
#include <signal.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "target.h"

/* noipa as well: configure's CFLAGS (-O2 by default) come after the per-target
 * flags, and at -O2 GCC would merge the identical leaves (ICF) or clone
 * functions under other names (constprop). */
#define NOINLINE __attribute__((noinline, noipa))

#define LEAF_LOOP 2000u		/* arithmetic steps per leaf call */
#define MAX_THREADS 256

struct worker {
	pthread_t thread;
	int index;
	uint64_t iterations;
	uint64_t checksum;
};

static int started;		/* workers running; atomic builtins only */

/* Same work in both leaves: sum_{k<LEAF_LOOP} (3k + x) = 3*L(L-1)/2 + L*x. */
static uint64_t leaf_expected(uint64_t x)
{
	return 3u * (uint64_t)LEAF_LOOP * (LEAF_LOOP - 1) / 2 + (uint64_t)LEAF_LOOP * x;
}

NOINLINE static uint64_t leaf_a(uint64_t x)
{
	volatile uint64_t acc = 0;
	for (unsigned k = 0; k < LEAF_LOOP; k++)
		acc += 3u * k + x;
	asm volatile("" ::: "memory");
	return acc;
}

NOINLINE static uint64_t leaf_b(uint64_t x)
{
	volatile uint64_t acc = 0;
	for (unsigned k = 0; k < LEAF_LOOP; k++)
		acc += 3u * k + x;
	asm volatile("" ::: "memory");
	return acc;
}

/* One work unit: 7 x leaf_a, 3 x leaf_b, interleaved. */
NOINLINE static uint64_t do_work(uint64_t x)
{
	uint64_t sum = 0;
	sum += leaf_a(x);
	sum += leaf_b(x + 1);
	sum += leaf_a(x + 2);
	sum += leaf_a(x + 3);
	sum += leaf_b(x + 4);
	sum += leaf_a(x + 5);
	sum += leaf_a(x + 6);
	sum += leaf_b(x + 7);
	sum += leaf_a(x + 8);
	sum += leaf_a(x + 9);
	return sum;
}

static uint64_t do_work_expected(uint64_t x)
{
	uint64_t sum = 0;
	for (uint64_t j = 0; j < 10; j++)
		sum += leaf_expected(x + j);
	return sum;
}

NOINLINE static void *worker_main(void *arg)
{
	struct worker *w = arg;
	char name[16];

	snprintf(name, sizeof(name), "worker-%d", w->index);
	pthread_setname_np(pthread_self(), name);
	__atomic_add_fetch(&started, 1, __ATOMIC_SEQ_CST);
	do {
		w->checksum += do_work(w->iterations & 0xffff);
		w->iterations++;
	} while (!target_past_deadline());
	return NULL;
}

/* dl_iterate_phdr's callback: zeroes the first object's (the program's)
 * .eh_frame_hdr.  Returns 1 when done, -1 on failure. */
static int scramble_eh_frame_hdr(struct dl_phdr_info *info, size_t size, void *arg)
{
	long page = sysconf(_SC_PAGESIZE);

	(void)size;
	(void)arg;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t at, lo, hi;

		if (ph->p_type != PT_GNU_EH_FRAME)
			continue;
		at = info->dlpi_addr + ph->p_vaddr;
		lo = at & ~(uintptr_t)(page - 1);
		hi = (at + ph->p_memsz + page - 1) & ~(uintptr_t)(page - 1);
		if (mprotect((void *)lo, hi - lo, PROT_READ | PROT_WRITE) != 0)
			return -1;
		memset((void *)at, 0, ph->p_memsz);
		return mprotect((void *)lo, hi - lo, PROT_READ) == 0 ? 1 : -1;
	}
	return -1;
}

static void usage(void)
{
	fprintf(stderr, "usage: chain [-t NTHREADS] [-s SECONDS] [-r READYFILE] [-x]\n");
	exit(64);
}

int main(int argc, char **argv)
{
	static struct worker workers[MAX_THREADS];
	const char *ready = NULL;
	double seconds = 5;
	int nthreads = 2, opt, bad = 0, scramble = 0;

	while ((opt = getopt(argc, argv, "t:s:r:x")) != -1) {
		switch (opt) {
		case 't': nthreads = atoi(optarg); break;
		case 's': seconds = strtod(optarg, NULL); break;
		case 'r': ready = optarg; break;
		case 'x': scramble = 1; break;
		default: usage();
		}
	}
	if (nthreads < 1 || nthreads > MAX_THREADS || !(seconds > 0))
		usage();

	if (scramble && dl_iterate_phdr(scramble_eh_frame_hdr, NULL) != 1) {
		fprintf(stderr, "chain: cannot zero the program's .eh_frame_hdr: %s\n",
			strerror(errno));
		return 2;
	}
	target_start_deadline(seconds);

	for (int i = 0; i < nthreads; i++) {
		workers[i].index = i;
		int err = pthread_create(&workers[i].thread, NULL, worker_main, &workers[i]);
		if (err) {
			fprintf(stderr, "chain: pthread_create: %s\n", strerror(err));
			return 2;
		}
	}
	while (__atomic_load_n(&started, __ATOMIC_SEQ_CST) < nthreads) {
		struct timespec ms = { 0, 1000000 };
		nanosleep(&ms, NULL);
	}
	if (ready && target_write_ready(ready) != 0) {
		fprintf(stderr, "chain: cannot write '%s': %s\n", ready, strerror(errno));
		return 2;
	}

	for (int i = 0; i < nthreads; i++)
		pthread_join(workers[i].thread, NULL);

	for (int i = 0; i < nthreads; i++) {
		uint64_t want = 0;
		for (uint64_t it = 0; it < workers[i].iterations; it++)
			want += do_work_expected(it & 0xffff);
		if (want != workers[i].checksum || workers[i].iterations == 0) {
			printf("result: BAD worker-%d iterations=%llu checksum=%llu expected=%llu\n",
			       i, (unsigned long long)workers[i].iterations,
			       (unsigned long long)workers[i].checksum,
			       (unsigned long long)want);
			bad = 1;
		}
	}
	if (!bad)
		printf("result: OK\n");
	if (fflush(stdout) != 0)
		return 2;
	return bad;
}
