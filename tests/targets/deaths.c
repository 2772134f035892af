/* SPDX-License-Identifier: MIT */
/* deaths: a target that ends (or changes) in other ways than a normal exit.
 *
 * deaths -m MODE [-s SECONDS] [-c CHILD_SECONDS] [-x PROGRAM] [-r READYFILE]
 *
 * Two threads "spin-0" and "spin-1" spin in death_spin -> death_work, each
 * keeping a checksum that is a closed-form function of its iteration count.
 * SIGUSR2 is blocked in every thread; after SIGUSR2 or SECONDS (default 60),
 * whichever comes first, main acts by MODE:
 *   thread-exit  a third thread "exiter" checks the checksums, prints
 *                "result: OK thread-exit" and calls exit(42): the process
 *                exits with status 42 from a thread other than main.
 *   segv         main checks the checksums, prints "result: OK before segv"
 *                and dereferences a null pointer: killed by SIGSEGV.
 *   exec         main checks the checksums, prints "result: OK before exec"
 *                and execs PROGRAM -t 2 -s CHILD_SECONDS (tests/targets/chain,
 *                which prints its own "result: OK"), SIGUSR2 unblocked again.
 *   fork         (at once, before "ready") main forks a child that spins in
 *                death_child_spin until SIGUSR2 (to the child) or
 *                CHILD_SECONDS and checks its own checksum (exit 0 if good,
 *                1 if not); the child's pid is printed as "child=PID".
 *                Then main waits for it (60 s at most) and prints
 *                "child status=N" and
 *                "result: OK" if the child exited 0 and the checksums hold.
 *   zombie       (at once) main forks a child that _exits at once, waits
 *                until it is a zombie, prints "zombie=PID" and never reaps
 *                it; then it waits and prints "result: OK".
 * "ready\n" goes to READYFILE (via .tmp and rename) once the spinners run. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "target.h"

#define NOINLINE __attribute__((noinline, noipa))

struct spinner {
	pthread_t thread;
	int index;
	uint64_t iterations;	/* atomic builtins: read while the spinner runs */
	uint64_t checksum;
};

static struct spinner spinners[2];
static int running;

static uint64_t work_expected(uint64_t x)
{
	return 3 * x * x + 7;
}

NOINLINE static uint64_t death_work(uint64_t x)
{
	volatile uint64_t v = x;

	return 3 * v * v + 7;
}

NOINLINE static void death_spin(struct spinner *s)
{
	for (;;) {
		/* The checksum first: the iteration count never runs ahead. */
		uint64_t it = s->iterations;

		s->checksum += death_work(it & 0xffff);
		__atomic_store_n(&s->iterations, it + 1, __ATOMIC_SEQ_CST);
	}
}

NOINLINE static void *spin_main(void *arg)
{
	struct spinner *s = arg;
	char name[16];

	snprintf(name, sizeof(name), "spin-%d", s->index);
	pthread_setname_np(pthread_self(), name);
	__atomic_add_fetch(&running, 1, __ATOMIC_SEQ_CST);
	death_spin(s);
	return NULL;
}

/* The spinners keep running: a consistent pair is taken by re-reading
 * until the iteration count holds still around the checksum. */
static int checksums_ok(void)
{
	for (int i = 0; i < 2; i++) {
		struct spinner *s = &spinners[i];
		uint64_t want = 0, it, sum;

		/* Consistent only if the spinner is not mid-update; retry. */
		for (int tries = 0;; tries++) {
			it = __atomic_load_n(&s->iterations, __ATOMIC_SEQ_CST);
			sum = __atomic_load_n(&s->checksum, __ATOMIC_SEQ_CST);
			if (__atomic_load_n(&s->iterations, __ATOMIC_SEQ_CST) == it)
				break;
			if (tries > 1000000)
				return 0;
		}
		/* sum may already include iteration it (checksum is updated
		 * first): accept either prefix. */
		for (uint64_t k = 0; k < it; k++)
			want += work_expected(k & 0xffff);
		if (it == 0 || (sum != want && sum != want + work_expected(it & 0xffff)))
			return 0;
	}
	return 1;
}

NOINLINE static uint64_t death_child_spin(double seconds)
{
	struct timespec start, now;
	uint64_t sum = 0, it = 0, want = 0;

	clock_gettime(CLOCK_MONOTONIC, &start);
	do {
		sigset_t pending;

		for (int k = 0; k < 1000; k++, it++)
			sum += death_work(it & 0xffff);
		sigpending(&pending);
		if (sigismember(&pending, SIGUSR2))
			break;
		clock_gettime(CLOCK_MONOTONIC, &now);
	} while ((double)(now.tv_sec - start.tv_sec) +
		 (double)(now.tv_nsec - start.tv_nsec) / 1e9 < seconds);
	for (uint64_t k = 0; k < it; k++)
		want += work_expected(k & 0xffff);
	return sum == want && it > 0;
}

NOINLINE static void *exiter_main(void *arg)
{
	pthread_setname_np(pthread_self(), "exiter");
	if (checksums_ok())
		printf("result: OK thread-exit\n");
	else
		printf("result: BAD checksums before exit\n");
	exit(42);	/* flushes stdout; ends every thread */
	return arg;
}

static void sleep_s(double s)
{
	struct timespec ts = { (time_t)s, (long)((s - (double)(time_t)s) * 1e9) };

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

static void usage(void)
{
	fprintf(stderr, "usage: deaths -m thread-exit|segv|exec|fork|zombie [-s SECONDS] "
		"[-c CHILD_SECONDS] [-x PROGRAM] [-r READYFILE]\n");
	exit(64);
}

int main(int argc, char **argv)
{
	const char *ready = NULL, *mode = NULL, *program = NULL;
	double seconds = 60, child_seconds = 60;
	sigset_t usr2;
	pid_t child = -1;
	int opt, err;

	while ((opt = getopt(argc, argv, "m:s:c:x:r:")) != -1) {
		switch (opt) {
		case 'm': mode = optarg; break;
		case 's': seconds = strtod(optarg, NULL); break;
		case 'c': child_seconds = strtod(optarg, NULL); break;
		case 'x': program = optarg; break;
		case 'r': ready = optarg; break;
		default: usage();
		}
	}
	if (!mode || optind < argc || !(seconds > 0) || !(child_seconds > 0))
		usage();
	if (strcmp(mode, "exec") == 0 && !program)
		usage();
	setvbuf(stdout, NULL, _IOLBF, 0);
	sigemptyset(&usr2);
	sigaddset(&usr2, SIGUSR2);
	pthread_sigmask(SIG_BLOCK, &usr2, NULL);	/* inherited by threads and child */

	if (strcmp(mode, "fork") == 0) {
		fflush(stdout);
		child = fork();
		if (child < 0) {
			fprintf(stderr, "deaths: fork: %s\n", strerror(errno));
			return 2;
		}
		if (child == 0)
			_exit(death_child_spin(child_seconds) ? 0 : 1);
		printf("child=%d\n", (int)child);
	} else if (strcmp(mode, "zombie") == 0) {
		char path[64], state = 0;

		child = fork();
		if (child < 0) {
			fprintf(stderr, "deaths: fork: %s\n", strerror(errno));
			return 2;
		}
		if (child == 0)
			_exit(0);
		snprintf(path, sizeof(path), "/proc/%d/stat", (int)child);
		for (int i = 0; i < 10000 && state != 'Z'; i++) {
			FILE *f = fopen(path, "r");

			if (f) {
				if (fscanf(f, "%*d (%*[^)]) %c", &state) != 1)
					state = 0;
				fclose(f);
			}
			if (state != 'Z')
				sleep_s(0.001);
		}
		if (state != 'Z') {
			fprintf(stderr, "deaths: child %d did not become a zombie\n", (int)child);
			return 2;
		}
		printf("zombie=%d\n", (int)child);
	}

	for (int i = 0; i < 2; i++) {
		spinners[i].index = i;
		err = pthread_create(&spinners[i].thread, NULL, spin_main, &spinners[i]);
		if (err) {
			fprintf(stderr, "deaths: pthread_create: %s\n", strerror(err));
			return 2;
		}
	}
	while (__atomic_load_n(&running, __ATOMIC_SEQ_CST) < 2)
		sleep_s(0.001);
	if (ready && target_write_ready(ready) != 0) {
		fprintf(stderr, "deaths: cannot write '%s': %s\n", ready, strerror(errno));
		return 2;
	}
	{
		struct timespec ts = { (time_t)seconds,
				       (long)((seconds - (double)(time_t)seconds) * 1e9) };

		while (sigtimedwait(&usr2, NULL, &ts) < 0 && errno == EINTR)
			;
	}

	if (strcmp(mode, "thread-exit") == 0) {
		pthread_t t;

		err = pthread_create(&t, NULL, exiter_main, NULL);
		if (err) {
			fprintf(stderr, "deaths: pthread_create: %s\n", strerror(err));
			return 2;
		}
		for (;;)
			pause();	/* exit(42) from the exiter ends this */
	}
	if (strcmp(mode, "segv") == 0) {
		volatile int *volatile null = NULL;

		printf(checksums_ok() ? "result: OK before segv\n" : "result: BAD checksums\n");
		fflush(stdout);
		return *null;
	}
	if (strcmp(mode, "exec") == 0) {
		char secs[32];

		snprintf(secs, sizeof(secs), "%g", child_seconds);
		printf(checksums_ok() ? "result: OK before exec\n" : "result: BAD checksums\n");
		fflush(stdout);
		pthread_sigmask(SIG_UNBLOCK, &usr2, NULL);
		execl(program, "chain", "-t", "2", "-s", secs, (char *)NULL);
		fprintf(stderr, "deaths: cannot exec '%s': %s\n", program, strerror(errno));
		return 2;
	}
	if (strcmp(mode, "fork") == 0) {
		int status = -1, ok = checksums_ok();
		pid_t r = 0;

		for (int i = 0; i < 60000 && r == 0; i++) {
			r = waitpid(child, &status, WNOHANG);
			if (r == 0)
				sleep_s(0.001);
		}
		if (r != child) {
			printf("result: BAD child %d did not end within 60 s\n", (int)child);
			return 1;
		}
		printf("child status=%d\n", WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
		if (ok && WIFEXITED(status) && WEXITSTATUS(status) == 0) {
			printf("result: OK\n");
			return 0;
		}
		printf("result: BAD %s\n", ok ? "child failed" : "checksums");
		return 1;
	}
	if (strcmp(mode, "zombie") == 0) {
		printf(checksums_ok() ? "result: OK\n" : "result: BAD checksums\n");
		return 0;
	}
	usage();
	return 64;
}
