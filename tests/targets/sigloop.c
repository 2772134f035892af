/* SPDX-License-Identifier: MIT */
/* sigloop: threads that take signals in a tight loop, as a JVM takes SIGSEGV
 * for its implicit null checks; the target of bench/signals.sh and of
 * tests/attach-signal-entry.test.
 *
 * sigloop [-m segv|usr1|spin] [-t THREADS] [-w WORK] [-H HANDLER_WORK] [-s SECONDS] [-l LOGFILE]
 *         [-r READYFILE]
 *
 * THREADS workers (default 1), named "worker-N", each in a loop:
 *   segv  WORK steps of integer work (work_between), then a load from a
 *         PROT_NONE guard page (guard_load): the SIGSEGV handler (on_segv)
 *         moves the interrupted pc past the faulting instruction in the
 *         ucontext, as a JVM's handler sends the thread on to its
 *         exception path, and counts the signal;
 *   usr1  the same work, then tgkill(2) of SIGUSR1 to itself, whose handler
 *         (on_usr1) counts it;
 *   spin  spin_leaf only, forever: the signals come from another process
 *         (SIGUSR1 or SIGRTMIN+1, counted by on_usr1 and on_rt).
 * With -H, the SIGUSR1 and SIGRTMIN+1 handlers also do HANDLER_WORK steps
 * of the same work (in handler_work) before they return.
 * The main thread blocks SIGUSR1 and SIGRTMIN+1, so a signal sent to the
 * process is taken by a worker.  In segv and usr1 modes each worker also
 * times each signal, from just before it is raised to the handler's first
 * statement (CLOCK_MONOTONIC): under ptrace that includes the tracer's
 * turnaround of the signal-delivery-stop.
 *
 * Every 100 ms the main thread appends to LOGFILE (when given) one line:
 *   MONO_NS SIGNALS WORKER_CPU_NS LAT_COUNT LAT_SUM_NS B0 B1 ... B159
 * all cumulative since the start: CLOCK_MONOTONIC now, signals handled by
 * every worker, their CPU time, how many signals were timed and their total
 * latency, and a histogram of the latencies: bucket 4e+m (e >= 2, m 0..3)
 * counts latencies in [2^e (1 + m/4), 2^e (1 + (m+1)/4)) ns, buckets 0..3
 * those of 0..3 ns, the last also all longer ones.  A reader takes two
 * lines and subtracts.  "ready\n" goes to READYFILE once every worker runs.  The
 * run ends after SECONDS (default 10) or at SIGUSR2; it prints
 * "signals=N" on stdout.  Exit 0, 2 on an error, 64 on a usage error. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#include "target.h"

#define NOINLINE __attribute__((noinline, noipa))
#define MAX_WORKERS 64
/* Latency histogram: 4 buckets per power of two of nanoseconds, up to 2^40. */
#define LAT_BUCKETS (40 * 4)

enum mode { MODE_SEGV, MODE_USR1, MODE_SPIN };

struct worker {
	uint64_t signals;		/* written by its own thread (and handler) only */
	uint64_t lat_count, lat_sum;
	uint64_t lat[LAT_BUCKETS];
	uint64_t raised_ns;		/* when the pending signal was raised */
	pid_t tid;
	clockid_t clock;
	pthread_t thread;
	char pad[64];
};

static struct worker workers[MAX_WORKERS];
static __thread struct worker *self;
static enum mode mode;
static long work = 2000, handler_steps;
static int *guard;
static int stop;
static volatile uint64_t sink;

/*
 * guard_load(p): returns *p.  The load is at guard_fault, and the SIGSEGV
 * handler resumes a fault there at guard_resume with -1 in %eax.  Plain
 * assembly with CFI, so unwinders walk through it.
 */
int guard_load(const int *p);
extern const char guard_fault[], guard_resume[];
__asm__(".text\n"
	".globl guard_load\n"
	".type guard_load, @function\n"
	"guard_load:\n"
	".cfi_startproc\n"
	".globl guard_fault\n"
	"guard_fault:\n"
	"\tmovl (%rdi), %eax\n"
	".globl guard_resume\n"
	"guard_resume:\n"
	"\tret\n"
	".cfi_endproc\n"
	".size guard_load, .-guard_load\n");

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The histogram bucket of d ns: [2^e (1 + m/4), 2^e (1 + (m+1)/4)). */
static unsigned lat_bucket(uint64_t d)
{
	unsigned e, b;

	if (d < 4)
		return (unsigned)d;
	e = 63u - (unsigned)__builtin_clzll(d);
	b = e * 4 + (unsigned)((d >> (e - 2)) & 3);
	return b < LAT_BUCKETS ? b : LAT_BUCKETS - 1;
}

/* Counts a signal taken by worker w, and its latency when it was timed.
 * Each counter has one writer, the worker's thread (the handler runs on
 * it); the main thread only reads them. */
static void count_signal(struct worker *w)
{
	if (w->raised_ns) {
		uint64_t d = now_ns() - w->raised_ns;
		unsigned k = lat_bucket(d);

		w->raised_ns = 0;
		__atomic_store_n(&w->lat[k], w->lat[k] + 1, __ATOMIC_RELAXED);
		__atomic_store_n(&w->lat_sum, w->lat_sum + d, __ATOMIC_RELAXED);
		__atomic_store_n(&w->lat_count, w->lat_count + 1, __ATOMIC_RELAXED);
	}
	__atomic_store_n(&w->signals, w->signals + 1, __ATOMIC_RELAXED);
}

NOINLINE static void on_segv(int sig, siginfo_t *si, void *ucv)
{
	ucontext_t *uc = ucv;

	(void)sig;
	(void)si;
	if (uc->uc_mcontext.gregs[REG_RIP] != (greg_t)(uintptr_t)guard_fault)
		abort();	/* a real crash: not ours to hide */
	uc->uc_mcontext.gregs[REG_RIP] = (greg_t)(uintptr_t)guard_resume;
	uc->uc_mcontext.gregs[REG_RAX] = -1;
	if (self)
		count_signal(self);
}

NOINLINE static uint64_t work_between(uint64_t x, long n)
{
	for (long i = 0; i < n; i++) {
		x = x * 6364136223846793005ull + 1442695040888963407ull;
		x ^= x >> 29;
	}
	return x;
}

NOINLINE static void handler_work(void)
{
	sink += work_between(sink, handler_steps);
}

/* The empty asm after the call keeps it from becoming a jump (a tail call
 * would leave the handler's frame out of the stacks). */
NOINLINE static void on_usr1(int sig)
{
	(void)sig;
	if (self)
		count_signal(self);
	if (handler_steps)
		handler_work();
	__asm__ volatile("" ::: "memory");
}

NOINLINE static void on_rt(int sig)
{
	(void)sig;
	if (self)
		count_signal(self);
	if (handler_steps)
		handler_work();
	__asm__ volatile("" ::: "memory");
}

NOINLINE static void spin_leaf(void)
{
	for (unsigned k = 0; k < 1000; k++)
		sink += k;
}

NOINLINE static void raise_segv(struct worker *w)
{
	w->raised_ns = now_ns();
	if (guard_load(guard) != -1)
		abort();
}

NOINLINE static void raise_usr1(struct worker *w)
{
	w->raised_ns = now_ns();
	syscall(SYS_tgkill, getpid(), w->tid, SIGUSR1);
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	uint64_t x = (uint64_t)(uintptr_t)w;
	char name[16];

	self = w;
	w->tid = (pid_t)syscall(SYS_gettid);
	snprintf(name, sizeof(name), "worker-%d", (int)(w - workers));
	pthread_setname_np(pthread_self(), name);
	pthread_getcpuclockid(pthread_self(), &w->clock);
	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
		switch (mode) {
		case MODE_SEGV:
			x = work_between(x, work);
			raise_segv(w);
			break;
		case MODE_USR1:
			x = work_between(x, work);
			raise_usr1(w);
			break;
		case MODE_SPIN:
			spin_leaf();
			break;
		}
	}
	sink = x;
	return NULL;
}

static uint64_t clock_ns(clockid_t c)
{
	struct timespec ts;

	if (clock_gettime(c, &ts) < 0)
		return 0;
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int log_line(FILE *f, int n)
{
	uint64_t sig = 0, cpu = 0, cnt = 0, sum = 0, lat[LAT_BUCKETS] = { 0 };
	int i, k;

	for (i = 0; i < n; i++) {
		sig += __atomic_load_n(&workers[i].signals, __ATOMIC_RELAXED);
		cnt += __atomic_load_n(&workers[i].lat_count, __ATOMIC_RELAXED);
		sum += __atomic_load_n(&workers[i].lat_sum, __ATOMIC_RELAXED);
		cpu += clock_ns(workers[i].clock);
		for (k = 0; k < LAT_BUCKETS; k++)
			lat[k] += __atomic_load_n(&workers[i].lat[k], __ATOMIC_RELAXED);
	}
	fprintf(f, "%llu %llu %llu %llu %llu", (unsigned long long)now_ns(), (unsigned long long)sig,
		(unsigned long long)cpu, (unsigned long long)cnt, (unsigned long long)sum);
	for (k = 0; k < LAT_BUCKETS; k++)
		fprintf(f, " %llu", (unsigned long long)lat[k]);
	fputc('\n', f);
	return fflush(f);
}

static int usage(void)
{
	fprintf(stderr, "usage: sigloop [-m segv|usr1|spin] [-t THREADS] [-w WORK] [-H HANDLER_WORK] "
			"[-s SECONDS] [-l LOGFILE] [-r READYFILE]\n");
	return 64;
}

int main(int argc, char **argv)
{
	const char *ready = NULL, *logpath = NULL;
	double seconds = 10;
	struct sigaction sa;
	sigset_t mask;
	FILE *logf = NULL;
	uint64_t total = 0;
	int opt, n = 1, i, err;

	while ((opt = getopt(argc, argv, "m:t:w:H:s:l:r:")) != -1) {
		switch (opt) {
		case 'm':
			if (!strcmp(optarg, "segv"))
				mode = MODE_SEGV;
			else if (!strcmp(optarg, "usr1"))
				mode = MODE_USR1;
			else if (!strcmp(optarg, "spin"))
				mode = MODE_SPIN;
			else
				return usage();
			break;
		case 't': n = atoi(optarg); break;
		case 'w': work = atol(optarg); break;
		case 'H': handler_steps = atol(optarg); break;
		case 's': seconds = strtod(optarg, NULL); break;
		case 'l': logpath = optarg; break;
		case 'r': ready = optarg; break;
		default: return usage();
		}
	}
	if (optind != argc || n < 1 || n > MAX_WORKERS || work < 0 || handler_steps < 0 ||
	    !(seconds > 0))
		return usage();

	guard = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (guard == MAP_FAILED) {
		perror("sigloop: mmap");
		return 2;
	}
	if (logpath && !(logf = fopen(logpath, "w"))) {
		fprintf(stderr, "sigloop: cannot open '%s': %s\n", logpath, strerror(errno));
		return 2;
	}
	memset(&sa, 0, sizeof(sa));
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sa.sa_sigaction = on_segv;
	sigaction(SIGSEGV, &sa, NULL);
	sa.sa_flags = SA_RESTART;
	sa.sa_handler = on_usr1;
	sigaction(SIGUSR1, &sa, NULL);
	sa.sa_handler = on_rt;
	sigaction(SIGRTMIN + 1, &sa, NULL);
	target_start_deadline(seconds);

	for (i = 0; i < n; i++) {
		err = pthread_create(&workers[i].thread, NULL, worker_main, &workers[i]);
		if (err) {
			fprintf(stderr, "sigloop: pthread_create: %s\n", strerror(err));
			return 2;
		}
	}
	/* Signals sent to the process go to a worker, not to main. */
	sigemptyset(&mask);
	sigaddset(&mask, SIGUSR1);
	sigaddset(&mask, SIGRTMIN + 1);
	pthread_sigmask(SIG_BLOCK, &mask, NULL);
	for (i = 0; i < n; i++) {
		while (!__atomic_load_n(&workers[i].tid, __ATOMIC_SEQ_CST)) {
			struct timespec ms = { 0, 1000000 };

			nanosleep(&ms, NULL);
		}
	}
	if (ready && target_write_ready(ready) != 0) {
		fprintf(stderr, "sigloop: cannot write '%s': %s\n", ready, strerror(errno));
		return 2;
	}
	while (!target_past_deadline()) {
		struct timespec ms = { 0, 100000000 };

		if (logf && log_line(logf, n) != 0) {
			fprintf(stderr, "sigloop: cannot write '%s': %s\n", logpath, strerror(errno));
			return 2;
		}
		nanosleep(&ms, NULL);
	}
	__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
	for (i = 0; i < n; i++) {
		pthread_join(workers[i].thread, NULL);
		total += workers[i].signals;
	}
	if (logf && fclose(logf) != 0) {
		fprintf(stderr, "sigloop: cannot write '%s': %s\n", logpath, strerror(errno));
		return 2;
	}
	printf("signals=%llu\n", (unsigned long long)total);
	return fflush(stdout) == 0 ? 0 : 2;
}
