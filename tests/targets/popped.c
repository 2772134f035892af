/* SPDX-License-Identifier: MIT */
/* popped: a thread that stays in an epilogue, between `pop %rbp` and `ret`.
 *
 * popped [-s SECONDS] [-r READYFILE]
 *
 * The worker thread "popped" calls popped_outer() (frame pointer: its CFA
 * is %rbp-based), which calls popped_spin(), written in assembly: it
 * pushes %rbp, sets up its frame, pops %rbp again and then spins, before
 * its ret, until SECONDS pass.  Its CFI there says what a compiler's says
 * after an epilogue's pop: CFA = %rsp + 8, and the caller's %rbp saved at
 * CFA - 16, the word just below %rsp, which no copy of the stack from SP
 * holds.  That word is what the pop loaded: %rbp now.  Every sample is at
 * that point; a profiler that cannot read the word loses popped_outer's
 * callers.  Prints "result: OK" when done. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "target.h"

#define NOINLINE __attribute__((noinline, noipa))

volatile int popped_stop;

void popped_spin(void);
__asm__(".text\n"
	".globl popped_spin\n"
	".type popped_spin, @function\n"
	"popped_spin:\n"
	".cfi_startproc\n"
	"push %rbp\n"
	".cfi_def_cfa_offset 16\n"
	".cfi_offset %rbp, -16\n"
	"mov %rsp, %rbp\n"
	".cfi_def_cfa_register %rbp\n"
	"pop %rbp\n"
	".cfi_def_cfa %rsp, 8\n"
	"1: cmpl $0, popped_stop(%rip)\n"
	"je 1b\n"
	"ret\n"
	".cfi_endproc\n"
	".size popped_spin, .-popped_spin\n");

static uint64_t rounds;

/* Ends popped_spin once the deadline is past: from another thread, so
 * that popped_spin itself calls nothing. */
static void *stopper(void *arg)
{
	(void)arg;
	while (!target_past_deadline())
		usleep(10000);
	popped_stop = 1;
	return NULL;
}

NOINLINE static void popped_outer(void)
{
	popped_spin();
	rounds++;
}

static void *worker_main(void *arg)
{
	(void)arg;
	popped_outer();
	return NULL;
}

int main(int argc, char **argv)
{
	const char *ready = NULL;
	double seconds = 10;
	pthread_t t;

	if (target_options(argc, argv, "popped", &seconds, &ready))
		return 64;
	target_start_deadline(seconds);
	if (pthread_create(&t, NULL, stopper, NULL)) {
		perror("pthread_create");
		return 1;
	}
	if (target_run_worker(worker_main, "popped", ready))
		return 1;
	pthread_join(t, NULL);
	printf(rounds == 1 ? "result: OK\n" : "result: BAD rounds %llu\n",
	       (unsigned long long)rounds);
	return rounds != 1;
}
