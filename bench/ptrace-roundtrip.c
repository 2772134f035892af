/* SPDX-License-Identifier: MIT */
/* ptrace-roundtrip: the bare cost of stopping a thread and reading its
 * registers, the floor under every ptrace sampler's stop time.
 *
 * ptrace-roundtrip -p PID [-c COMM] [-n ROUNDS] [-i INTERVAL_US] [-a] [-s]
 *
 * Seizes the threads of PID (those whose comm is COMM, if given; never the
 * others), then ROUNDS times (default 200), INTERVAL_US apart (default
 * 10000: 100 Hz, the pace of a sampler), and per thread:
 *   t0; PTRACE_INTERRUPT; waitpid(__WALL) until our stop; GETREGSET
 *   NT_PRSTATUS; t1; PTRACE_CONT; t2
 * t2 - t0 is the round trip; t1 - t0 the span cprof's stop_ns covers
 * (it reads its clock before PTRACE_CONT).  Default: one thread at a time
 * (cprof --stop thread); -a: interrupt all, then wait, read and resume each
 * (cprof --stop process), each thread's span still from its own interrupt.
 * The wait blocks in waitpid by default, so it includes the scheduler's
 * wake-up latency of this tracer (up to milliseconds when the CPUs are busy);
 * -s polls waitpid(WNOHANG) for up to SPIN_NS (100 us) first, keeping the
 * tracer on its CPU while a running thread reaches its stop, then blocks
 * (an unbounded spin would take the CPU the tracee needs to stop).
 * A signal delivered meanwhile is re-injected and the wait goes on.
 * Prints one line:
 *   threads N stops M rt_p50_us X rt_p99_us X rt_max_us X stop_p50_us X stop_p99_us X
 * Exit 0, 1 on an error (no such process, EPERM, no thread matched),
 * 64 on a usage error.  Built by bench/stop-time.sh with gcc -O2 -g -pthread.
 * Only the thread that seized a tracee may trace it: all here is one thread. */
#define _GNU_SOURCE
#include <dirent.h>
#include <elf.h>
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_THREADS 4096
#define SPIN_NS 100000u

struct thr {
	pid_t tid;
	bool alive;
	uint64_t t0;
};

static struct thr thr[MAX_THREADS];
static size_t n_thr;
static uint64_t *rt, *sp;	/* round trips and stop spans, ns */
static size_t n_samp, cap_samp;
static bool spin_wait;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static bool comm_matches(pid_t pid, pid_t tid, const char *want)
{
	char path[64], comm[64];
	FILE *f;
	size_t n;

	if (!want)
		return true;
	snprintf(path, sizeof(path), "/proc/%d/task/%d/comm", (int)pid, (int)tid);
	f = fopen(path, "r");
	if (!f)
		return false;
	n = fread(comm, 1, sizeof(comm) - 1, f);
	fclose(f);
	comm[n] = '\0';
	comm[strcspn(comm, "\n")] = '\0';
	return strcmp(comm, want) == 0;
}

static bool known(pid_t tid)
{
	for (size_t i = 0; i < n_thr; i++)
		if (thr[i].tid == tid)
			return true;
	return false;
}

/* One pass over /proc/PID/task; returns how many threads it seized, or -1. */
static int seize_pass(pid_t pid, const char *comm)
{
	char path[64];
	struct dirent *de;
	int added = 0;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	d = opendir(path);
	if (!d) {
		fprintf(stderr, "ptrace-roundtrip: cannot open '%s': %s\n", path, strerror(errno));
		return -1;
	}
	while ((de = readdir(d))) {
		pid_t tid = (pid_t)atoi(de->d_name);

		if (tid <= 0 || known(tid) || !comm_matches(pid, tid, comm))
			continue;
		if (n_thr == MAX_THREADS)
			break;
		if (ptrace(PTRACE_SEIZE, tid, NULL, NULL) < 0) {
			if (errno == ESRCH)
				continue;
			fprintf(stderr, "ptrace-roundtrip: cannot seize thread %d: %s\n", (int)tid,
				strerror(errno));
			closedir(d);
			return -1;
		}
		thr[n_thr].tid = tid;
		thr[n_thr].alive = true;
		n_thr++;
		added++;
	}
	closedir(d);
	return added;
}

/* Waits for tid's interrupt stop, re-injecting signals delivered meanwhile.
 * Returns 0 when stopped for us, -1 when the thread is gone. */
static int wait_stop(pid_t tid)
{
	int status;

	for (;;) {
		pid_t r = 0;

		if (spin_wait) {
			uint64_t until = now_ns() + SPIN_NS;

			while ((r = waitpid(tid, &status, __WALL | WNOHANG)) == 0 && now_ns() < until)
				;
		}
		if (r == 0)
			r = waitpid(tid, &status, __WALL);
		if (r < 0)
			return -1;
		if (WIFEXITED(status) || WIFSIGNALED(status))
			return -1;
		if (!WIFSTOPPED(status))
			continue;
		if ((status >> 16) == PTRACE_EVENT_STOP)
			return 0;
		if ((status >> 16) == 0) {
			/* signal-delivery-stop: pass it on; our stop follows */
			ptrace(PTRACE_CONT, tid, NULL, (void *)(long)WSTOPSIG(status));
			continue;
		}
		ptrace(PTRACE_CONT, tid, NULL, NULL);
	}
}

static void record(uint64_t t0, uint64_t t1, uint64_t t2)
{
	if (n_samp == cap_samp) {
		size_t c = cap_samp ? cap_samp * 2 : 1024;
		uint64_t *a = realloc(rt, c * sizeof(*a)), *b;

		if (!a)
			exit(1);
		rt = a;
		b = realloc(sp, c * sizeof(*b));
		if (!b)
			exit(1);
		sp = b;
		cap_samp = c;
	}
	rt[n_samp] = t2 - t0;
	sp[n_samp] = t1 - t0;
	n_samp++;
}

/* Stopped thread: read its registers, resume it, record its times. */
static void finish(struct thr *t)
{
	struct user_regs_struct regs;
	struct iovec iov = { &regs, sizeof(regs) };
	uint64_t t1, t2;

	if (ptrace(PTRACE_GETREGSET, t->tid, (void *)NT_PRSTATUS, &iov) < 0) {
		t->alive = false;
		return;
	}
	t1 = now_ns();
	if (ptrace(PTRACE_CONT, t->tid, NULL, NULL) < 0) {
		t->alive = false;
		return;
	}
	t2 = now_ns();
	record(t->t0, t1, t2);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static double pct_us(uint64_t *v, size_t n, double p)
{
	size_t i = (size_t)(p / 100.0 * (double)(n - 1) + 0.5);

	return (double)v[i] / 1e3;
}

static void sleep_us(long us)
{
	struct timespec ts = { us / 1000000, (us % 1000000) * 1000 };

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

int main(int argc, char **argv)
{
	const char *comm = NULL;
	long rounds = 200, interval_us = 10000;
	bool all = false;
	pid_t pid = 0;
	int opt, quiet = 0, r;

	while ((opt = getopt(argc, argv, "p:c:n:i:as")) != -1) {
		switch (opt) {
		case 'p': pid = (pid_t)atoi(optarg); break;
		case 'c': comm = optarg; break;
		case 'n': rounds = atol(optarg); break;
		case 'i': interval_us = atol(optarg); break;
		case 'a': all = true; break;
		case 's': spin_wait = true; break;
		default: goto usage;
		}
	}
	if (pid <= 0 || rounds < 1 || interval_us < 0 || optind != argc)
		goto usage;
	/* Rescan until two passes find nothing new. */
	while (quiet < 2) {
		r = seize_pass(pid, comm);
		if (r < 0)
			return 1;
		quiet = r ? 0 : quiet + 1;
	}
	if (!n_thr) {
		fprintf(stderr, "ptrace-roundtrip: no thread of %d %s%s%s\n", (int)pid,
			comm ? "is named '" : "", comm ? comm : "found", comm ? "'" : "");
		return 1;
	}
	for (long k = 0; k < rounds; k++) {
		if (all) {
			for (size_t i = 0; i < n_thr; i++) {
				if (!thr[i].alive)
					continue;
				thr[i].t0 = now_ns();
				if (ptrace(PTRACE_INTERRUPT, thr[i].tid, NULL, NULL) < 0)
					thr[i].alive = false;
			}
			for (size_t i = 0; i < n_thr; i++) {
				if (!thr[i].alive)
					continue;
				if (wait_stop(thr[i].tid) < 0) {
					thr[i].alive = false;
					continue;
				}
			}
			for (size_t i = 0; i < n_thr; i++)
				if (thr[i].alive)
					finish(&thr[i]);
		} else {
			for (size_t i = 0; i < n_thr; i++) {
				if (!thr[i].alive)
					continue;
				thr[i].t0 = now_ns();
				if (ptrace(PTRACE_INTERRUPT, thr[i].tid, NULL, NULL) < 0 ||
				    wait_stop(thr[i].tid) < 0) {
					thr[i].alive = false;
					continue;
				}
				finish(&thr[i]);
			}
		}
		sleep_us(interval_us);
	}
	/* Detach from a stop, so nothing is left pending. */
	for (size_t i = 0; i < n_thr; i++) {
		if (!thr[i].alive)
			continue;
		if (ptrace(PTRACE_INTERRUPT, thr[i].tid, NULL, NULL) == 0 && wait_stop(thr[i].tid) == 0)
			ptrace(PTRACE_DETACH, thr[i].tid, NULL, NULL);
	}
	if (!n_samp) {
		fprintf(stderr, "ptrace-roundtrip: every thread of %d exited before a stop\n", (int)pid);
		return 1;
	}
	qsort(rt, n_samp, sizeof(*rt), cmp_u64);
	qsort(sp, n_samp, sizeof(*sp), cmp_u64);
	printf("threads %zu stops %zu rt_p50_us %.2f rt_p99_us %.2f rt_max_us %.2f "
	       "stop_p50_us %.2f stop_p99_us %.2f\n",
	       n_thr, n_samp, pct_us(rt, n_samp, 50), pct_us(rt, n_samp, 99),
	       (double)rt[n_samp - 1] / 1e3, pct_us(sp, n_samp, 50), pct_us(sp, n_samp, 99));
	if (fclose(stdout) != 0) {
		perror("ptrace-roundtrip: cannot write the result");
		return 1;
	}
	return 0;
usage:
	fprintf(stderr, "usage: ptrace-roundtrip -p PID [-c COMM] [-n ROUNDS] [-i INTERVAL_US] [-a] [-s]\n");
	return 64;
}
