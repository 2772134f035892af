/* SPDX-License-Identifier: MIT */
/* sigcount: target for signal re-injection through the profiler.
 *
 * sigcount [-s SECONDS] [-r READYFILE]
 *
 * A thread named "spinner" spins (so the profiler samples it) while handlers
 * count SIGUSR1 and SIGRTMIN+1 (SA_RESTART; the real-time handler also
 * records the sigqueue value to detect duplicates).  It runs for SECONDS or
 * until SIGTERM, then waits until no counted signal is still pending for the
 * process, and prints "usr1=N rt=M rt_distinct=D" (D: distinct sigqueue
 * values seen).  "ready\n" goes to READYFILE (via .tmp and rename) once the
 * handlers are installed and the spinner runs. */
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

#include "target.h"

/* noipa as well: configure's CFLAGS (-O2 by default) come after the per-target
 * flags, and at -O2 GCC would merge the identical leaves (ICF) or clone
 * functions under other names (constprop). */
#define NOINLINE __attribute__((noinline, noipa))

#define MAX_VALUE (1u << 20)

static unsigned long usr1_count, rt_count, rt_distinct, rt_out_of_range;
static unsigned char seen[MAX_VALUE];
static volatile sig_atomic_t stop_requested;
static int spinner_running, spinner_stop;
static volatile uint64_t sink;

static void on_usr1(int sig)
{
	__atomic_add_fetch(&usr1_count, 1, __ATOMIC_SEQ_CST);
}

static void on_rt(int sig, siginfo_t *si, void *uc)
{
	unsigned v = (unsigned)si->si_value.sival_int;

	__atomic_add_fetch(&rt_count, 1, __ATOMIC_SEQ_CST);
	if (v >= MAX_VALUE)
		__atomic_add_fetch(&rt_out_of_range, 1, __ATOMIC_SEQ_CST);
	else if (__atomic_exchange_n(&seen[v], 1, __ATOMIC_SEQ_CST) == 0)
		__atomic_add_fetch(&rt_distinct, 1, __ATOMIC_SEQ_CST);
}

static void on_term(int sig)
{
	stop_requested = 1;
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
	while (!__atomic_load_n(&spinner_stop, __ATOMIC_SEQ_CST))
		spin_some();
	return NULL;
}

static int64_t now_ns(void)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (int64_t)now.tv_sec * 1000000000 + now.tv_nsec;
}

int main(int argc, char **argv)
{
	const char *ready = NULL;
	double seconds = 5;
	struct sigaction sa;
	sigset_t counted, pending;
	pthread_t spinner;
	int64_t end, drain_end;
	int err, drained = 0;

	if (target_options(argc, argv, "sigcount", &seconds, &ready))
		return 64;
	end = now_ns() + (int64_t)(seconds * 1e9);

	memset(&sa, 0, sizeof(sa));
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_RESTART;
	sa.sa_handler = on_usr1;
	sigaction(SIGUSR1, &sa, NULL);
	sa.sa_handler = on_term;
	sigaction(SIGTERM, &sa, NULL);
	sa.sa_flags = SA_RESTART | SA_SIGINFO;
	sa.sa_sigaction = on_rt;
	sigaction(SIGRTMIN + 1, &sa, NULL);

	err = pthread_create(&spinner, NULL, spinner_main, NULL);
	if (err) {
		fprintf(stderr, "sigcount: pthread_create: %s\n", strerror(err));
		return 2;
	}
	while (!__atomic_load_n(&spinner_running, __ATOMIC_SEQ_CST)) {
		struct timespec ms = { 0, 1000000 };
		nanosleep(&ms, NULL);
	}
	if (ready && target_write_ready(ready) != 0) {
		fprintf(stderr, "sigcount: cannot write '%s': %s\n", ready, strerror(errno));
		return 2;
	}

	/* Main sleeps (and may take signals itself) until the time is up. */
	while (!stop_requested && now_ns() < end) {
		struct timespec ms = { 0, 10000000 };
		nanosleep(&ms, NULL);
	}

	/* Let the spinner take whatever is still queued for the process: block
	 * the counted signals here and wait (bounded) until none is pending. */
	sigemptyset(&counted);
	sigaddset(&counted, SIGUSR1);
	sigaddset(&counted, SIGRTMIN + 1);
	pthread_sigmask(SIG_BLOCK, &counted, NULL);
	drain_end = now_ns() + 10000000000LL;
	while (now_ns() < drain_end) {
		struct timespec ms = { 0, 1000000 };

		sigpending(&pending);
		if (!sigismember(&pending, SIGUSR1) && !sigismember(&pending, SIGRTMIN + 1)) {
			drained = 1;
			break;
		}
		nanosleep(&ms, NULL);
	}
	__atomic_store_n(&spinner_stop, 1, __ATOMIC_SEQ_CST);
	pthread_join(spinner, NULL);

	printf("usr1=%lu rt=%lu rt_distinct=%lu%s%s\n",
	       __atomic_load_n(&usr1_count, __ATOMIC_SEQ_CST),
	       __atomic_load_n(&rt_count, __ATOMIC_SEQ_CST),
	       __atomic_load_n(&rt_distinct, __ATOMIC_SEQ_CST),
	       drained ? "" : " (signals still pending)",
	       rt_out_of_range ? " (rt value out of range)" : "");
	if (fflush(stdout) != 0)
		return 2;
	return 0;
}
