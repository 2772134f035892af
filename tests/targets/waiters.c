/* SPDX-License-Identifier: MIT */
/* waiters: live target for dump-threads, threads blocked in known call chains.
 *
 * waiters [-s SECONDS] [-r READYFILE]
 *
 * Every thread sits in its own noinline chain for the whole run:
 *   "cond-a"    cond_a_thread -> wait_a_outer -> wait_a_inner -> pthread_cond_wait
 *   "cond-b"    cond_b_thread -> wait_b_outer -> wait_b_inner -> pthread_cond_wait
 *   "sleeper"   sleeper_thread -> sleep_outer -> sleep_inner -> nanosleep
 *   "reader"    reader_thread -> read_outer -> read_inner -> read (a pipe)
 *   "poller"    poller_thread -> poll_outer -> poll_inner -> epoll_wait
 *   "sigwaiter" sigwaiter_thread -> sigwait_outer -> sigwait_inner -> sigtimedwait
 *   "spinner"   spinner_thread -> spin_outer -> spin_inner (a busy loop)
 * and main waits in main -> main_wait -> sigtimedwait for SIGUSR2 or SECONDS.
 *
 * epoll_wait and sigtimedwait fail with EINTR when their thread is stopped and
 * resumed (signal(7), "Interruption of system call and library functions by
 * stop signals"), even without a signal handler; a tool that reads a blocked
 * thread without stopping it leaves them alone.  Every EINTR seen before the
 * end of the run is counted (main's sigtimedwait, read and nanosleep too, which
 * should never see one).  At the end main wakes every thread, joins it and
 * prints per-call counts, then "result: OK eintr=N" (N the total) and exits 0;
 * "result: BAD ..." and exit 1 when a thread misbehaved.
 *
 * SIGUSR1, SIGUSR2 and SIGWAKE are blocked in every thread (SIGWAKE is
 * unblocked in the sleeper only, to end its nanosleep).  Each function of a
 * chain is noinline and noipa, and ends in an empty asm after its call so
 * that -O2 turns no call into a tail call: the frames stay as written.  The
 * "BEGIN name" and "END name" comments mark each function's first and last
 * line: the tests check reported source lines against them. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "target.h"

#define NOINLINE __attribute__((noinline, noipa))
#define KEEP_FRAME() asm volatile("" ::: "memory")
#define SIGWAKE SIGURG

enum { T_COND_A, T_COND_B, T_SLEEPER, T_READER, T_POLLER, T_SIGWAITER, T_SPINNER, N_THREADS };

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond_a = PTHREAD_COND_INITIALIZER;
static pthread_cond_t cond_b = PTHREAD_COND_INITIALIZER;
static pthread_cond_t started_cond = PTHREAD_COND_INITIALIZER;
static int done;		/* under lock: the run is over */
static int started;		/* under lock: threads about to block */
static int stopping;		/* atomic: the run is over (lock-free readers) */
static int pipe_fds[2];		/* reader blocks on [0] */
static int epoll_fd, event_fd;	/* poller blocks on epoll_fd, woken via event_fd */

/* EINTR counts, atomic builtins only. */
static unsigned long eintr_epoll, eintr_sigwait, eintr_read, eintr_sleep, eintr_main;
static int bad_thread = -1;	/* a thread that saw an unexpected error */
static const char *bad_what;
static unsigned long spins;
static pid_t tids[N_THREADS];

static int is_stopping(void)
{					/* BEGIN is_stopping */
	return __atomic_load_n(&stopping, __ATOMIC_SEQ_CST);
}					/* END is_stopping */

static void count(unsigned long *c)
{					/* BEGIN count */
	__atomic_add_fetch(c, 1, __ATOMIC_SEQ_CST);
}					/* END count */

static void set_bad(int which, const char *what)
{					/* BEGIN set_bad */
	bad_what = what;
	__atomic_store_n(&bad_thread, which, __ATOMIC_SEQ_CST);
}					/* END set_bad */

/* Records the calling thread's tid as thread which. */
static void set_tid(int which)
{					/* BEGIN set_tid */
	__atomic_store_n(&tids[which], gettid(), __ATOMIC_SEQ_CST);
}					/* END set_tid */

/* Tell main this thread is (about to be) blocked; called under lock. */
static void announce_locked(void)
{					/* BEGIN announce_locked */
	started++;
	pthread_cond_signal(&started_cond);
}					/* END announce_locked */

static void announce(void)
{					/* BEGIN announce */
	pthread_mutex_lock(&lock);
	announce_locked();
	pthread_mutex_unlock(&lock);
}					/* END announce */

static void on_wake(int sig)
{					/* BEGIN on_wake */
	(void)sig;
}					/* END on_wake */

/* ---- cond-a ------------------------------------------------------------- */

NOINLINE static void wait_a_inner(void)
{					/* BEGIN wait_a_inner */
	pthread_mutex_lock(&lock);
	announce_locked();
	while (!done)
		pthread_cond_wait(&cond_a, &lock);
	pthread_mutex_unlock(&lock);
	KEEP_FRAME();
}					/* END wait_a_inner */

NOINLINE static void wait_a_outer(void)
{					/* BEGIN wait_a_outer */
	wait_a_inner();
	KEEP_FRAME();
}					/* END wait_a_outer */

NOINLINE static void *cond_a_thread(void *arg)
{					/* BEGIN cond_a_thread */
	set_tid(T_COND_A);
	pthread_setname_np(pthread_self(), "cond-a");
	wait_a_outer();
	KEEP_FRAME();
	return arg;
}					/* END cond_a_thread */

/* ---- cond-b ------------------------------------------------------------- */

NOINLINE static void wait_b_inner(void)
{					/* BEGIN wait_b_inner */
	pthread_mutex_lock(&lock);
	announce_locked();
	while (!done)
		pthread_cond_wait(&cond_b, &lock);
	pthread_mutex_unlock(&lock);
	KEEP_FRAME();
}					/* END wait_b_inner */

NOINLINE static void wait_b_outer(void)
{					/* BEGIN wait_b_outer */
	wait_b_inner();
	KEEP_FRAME();
}					/* END wait_b_outer */

NOINLINE static void *cond_b_thread(void *arg)
{					/* BEGIN cond_b_thread */
	set_tid(T_COND_B);
	pthread_setname_np(pthread_self(), "cond-b");
	wait_b_outer();
	KEEP_FRAME();
	return arg;
}					/* END cond_b_thread */

/* ---- sleeper ------------------------------------------------------------ */

/* An hour at a time: only SIGWAKE from main ends the sleep. */
NOINLINE static void sleep_inner(void)
{					/* BEGIN sleep_inner */
	sigset_t wake;

	sigemptyset(&wake);
	sigaddset(&wake, SIGWAKE);
	pthread_sigmask(SIG_UNBLOCK, &wake, NULL);
	announce();
	while (!is_stopping()) {
		struct timespec hour = { 3600, 0 };

		if (nanosleep(&hour, NULL) < 0) {
			if (errno != EINTR)
				set_bad(T_SLEEPER, "nanosleep");
			else if (!is_stopping())
				count(&eintr_sleep);
		}
	}
	KEEP_FRAME();
}					/* END sleep_inner */

NOINLINE static void sleep_outer(void)
{					/* BEGIN sleep_outer */
	sleep_inner();
	KEEP_FRAME();
}					/* END sleep_outer */

NOINLINE static void *sleeper_thread(void *arg)
{					/* BEGIN sleeper_thread */
	set_tid(T_SLEEPER);
	pthread_setname_np(pthread_self(), "sleeper");
	sleep_outer();
	KEEP_FRAME();
	return arg;
}					/* END sleeper_thread */

/* ---- reader ------------------------------------------------------------- */

NOINLINE static void read_inner(void)
{					/* BEGIN read_inner */
	char c;
	ssize_t n;

	announce();
	for (;;) {
		n = read(pipe_fds[0], &c, 1);
		if (n == 1)
			break;
		if (n < 0 && errno == EINTR) {
			count(&eintr_read);
			continue;
		}
		set_bad(T_READER, "read");
		break;
	}
	KEEP_FRAME();
}					/* END read_inner */

NOINLINE static void read_outer(void)
{					/* BEGIN read_outer */
	read_inner();
	KEEP_FRAME();
}					/* END read_outer */

NOINLINE static void *reader_thread(void *arg)
{					/* BEGIN reader_thread */
	set_tid(T_READER);
	pthread_setname_np(pthread_self(), "reader");
	read_outer();
	KEEP_FRAME();
	return arg;
}					/* END reader_thread */

/* ---- poller ------------------------------------------------------------- */

NOINLINE static void poll_inner(void)
{					/* BEGIN poll_inner */
	struct epoll_event ev;
	int n;

	announce();
	for (;;) {
		n = epoll_wait(epoll_fd, &ev, 1, -1);
		if (n == 1)
			break;
		if (n < 0 && errno == EINTR) {
			count(&eintr_epoll);
			continue;
		}
		set_bad(T_POLLER, "epoll_wait");
		break;
	}
	KEEP_FRAME();
}					/* END poll_inner */

NOINLINE static void poll_outer(void)
{					/* BEGIN poll_outer */
	poll_inner();
	KEEP_FRAME();
}					/* END poll_outer */

NOINLINE static void *poller_thread(void *arg)
{					/* BEGIN poller_thread */
	set_tid(T_POLLER);
	pthread_setname_np(pthread_self(), "poller");
	poll_outer();
	KEEP_FRAME();
	return arg;
}					/* END poller_thread */

/* ---- sigwaiter ---------------------------------------------------------- */

/* Waits for SIGUSR1 (blocked everywhere), which main sends at the end. */
NOINLINE static void sigwait_inner(void)
{					/* BEGIN sigwait_inner */
	sigset_t set;
	int sig;

	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	announce();
	for (;;) {
		struct timespec hour = { 3600, 0 };

		sig = sigtimedwait(&set, NULL, &hour);
		if (sig == SIGUSR1)
			break;
		if (sig < 0 && errno == EINTR) {
			count(&eintr_sigwait);
			continue;
		}
		if (sig < 0 && errno == EAGAIN)
			continue;
		set_bad(T_SIGWAITER, "sigtimedwait");
		break;
	}
	KEEP_FRAME();
}					/* END sigwait_inner */

NOINLINE static void sigwait_outer(void)
{					/* BEGIN sigwait_outer */
	sigwait_inner();
	KEEP_FRAME();
}					/* END sigwait_outer */

NOINLINE static void *sigwaiter_thread(void *arg)
{					/* BEGIN sigwaiter_thread */
	set_tid(T_SIGWAITER);
	pthread_setname_np(pthread_self(), "sigwaiter");
	sigwait_outer();
	KEEP_FRAME();
	return arg;
}					/* END sigwaiter_thread */

/* ---- spinner ------------------------------------------------------------ */

/* The whole loop is here: wherever it is interrupted, its pc is in spin_inner. */
NOINLINE static void spin_inner(void)
{					/* BEGIN spin_inner */
	unsigned long n = 0;

	announce();
	while (!is_stopping())
		n++;
	__atomic_store_n(&spins, n, __ATOMIC_SEQ_CST);
	KEEP_FRAME();
}					/* END spin_inner */

NOINLINE static void spin_outer(void)
{					/* BEGIN spin_outer */
	spin_inner();
	KEEP_FRAME();
}					/* END spin_outer */

NOINLINE static void *spinner_thread(void *arg)
{					/* BEGIN spinner_thread */
	set_tid(T_SPINNER);
	pthread_setname_np(pthread_self(), "spinner");
	spin_outer();
	KEEP_FRAME();
	return arg;
}					/* END spinner_thread */

/* ---- main --------------------------------------------------------------- */

/* Waits for SIGUSR2 or the end of the run. */
NOINLINE static void main_wait(double seconds)
{					/* BEGIN main_wait */
	struct timespec end, now, left;
	sigset_t set;

	sigemptyset(&set);
	sigaddset(&set, SIGUSR2);
	clock_gettime(CLOCK_MONOTONIC, &end);
	end.tv_sec += (time_t)seconds;
	end.tv_nsec += (long)((seconds - (double)(time_t)seconds) * 1e9);
	if (end.tv_nsec >= 1000000000L) {
		end.tv_sec++;
		end.tv_nsec -= 1000000000L;
	}
	for (;;) {
		clock_gettime(CLOCK_MONOTONIC, &now);
		left.tv_sec = end.tv_sec - now.tv_sec;
		left.tv_nsec = end.tv_nsec - now.tv_nsec;
		if (left.tv_nsec < 0) {
			left.tv_sec--;
			left.tv_nsec += 1000000000L;
		}
		if (left.tv_sec < 0)
			break;
		if (sigtimedwait(&set, NULL, &left) == SIGUSR2)
			break;
		if (errno == EINTR)
			count(&eintr_main);
	}
	KEEP_FRAME();
}					/* END main_wait */

/* The system calls a blocked thread may wait in (glibc picks among them). */
static int expected_syscall(int which, long nr)
{
	switch (which) {
	case T_COND_A:
	case T_COND_B: return nr == SYS_futex;
	case T_SLEEPER: return nr == SYS_nanosleep || nr == SYS_clock_nanosleep;
	case T_READER: return nr == SYS_read;
	case T_POLLER: return nr == SYS_epoll_wait || nr == SYS_epoll_pwait;
	case T_SIGWAITER: return nr == SYS_rt_sigtimedwait;
	default: return 0;
	}
}

/* Waits (10 s at most) until thread which sits in its system call, as
 * /proc/self/task/TID/syscall shows it. */
static int wait_in_syscall(int which)
{
	for (int i = 0; i < 10000; i++) {
		struct timespec ms = { 0, 1000000L };
		pid_t tid = __atomic_load_n(&tids[which], __ATOMIC_SEQ_CST);
		char path[64];
		long nr = -1;
		FILE *f;

		snprintf(path, sizeof(path), "/proc/self/task/%d/syscall", (int)tid);
		f = tid ? fopen(path, "r") : NULL;
		if (f) {
			if (fscanf(f, "%ld", &nr) != 1)
				nr = -1;
			fclose(f);
		}
		if (nr >= 0 && expected_syscall(which, nr))
			return 0;
		nanosleep(&ms, NULL);
	}
	return -1;
}

static void usage(void)
{
	fprintf(stderr, "usage: waiters [-s SECONDS] [-r READYFILE]\n");
	exit(64);
}

/* Joins t, sending it SIGWAKE every 20 ms while it runs (a signal sent just
 * before it went back to nanosleep would be lost otherwise). */
static int join_waking(pthread_t t, int wake)
{
	for (int i = 0; i < 3000; i++) {	/* 60 s */
		struct timespec ts;

		if (wake)
			pthread_kill(t, SIGWAKE);
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += 20000000L;
		if (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
		int err = pthread_timedjoin_np(t, NULL, &ts);

		if (err == 0)
			return 0;
		if (err != ETIMEDOUT)
			return -1;
	}
	return -1;
}

int main(int argc, char **argv)
{					/* BEGIN main */
	static void *(*const fns[N_THREADS])(void *) = {
		cond_a_thread, cond_b_thread, sleeper_thread, reader_thread,
		poller_thread, sigwaiter_thread, spinner_thread,
	};
	static const char *const names[N_THREADS] = {
		"cond-a", "cond-b", "sleeper", "reader", "poller", "sigwaiter", "spinner",
	};
	pthread_t threads[N_THREADS];
	const char *ready = NULL;
	double seconds = 60;
	int opt, err, bad = 0;
	struct sigaction sa;
	sigset_t blocked;
	struct epoll_event ev = { .events = EPOLLIN };
	uint64_t one = 1;

	while ((opt = getopt(argc, argv, "s:r:")) != -1) {
		switch (opt) {
		case 's': seconds = strtod(optarg, NULL); break;
		case 'r': ready = optarg; break;
		default: usage();
		}
	}
	if (optind < argc || !(seconds > 0))
		usage();

	memset(&sa, 0, sizeof(sa));
	sigemptyset(&sa.sa_mask);
	sa.sa_handler = on_wake;	/* no SA_RESTART: ends nanosleep */
	sigaction(SIGWAKE, &sa, NULL);
	sigemptyset(&blocked);
	sigaddset(&blocked, SIGUSR1);
	sigaddset(&blocked, SIGUSR2);
	sigaddset(&blocked, SIGWAKE);
	pthread_sigmask(SIG_BLOCK, &blocked, NULL);	/* inherited by every thread */
	if (pipe(pipe_fds) < 0 || (event_fd = eventfd(0, 0)) < 0 ||
	    (epoll_fd = epoll_create1(0)) < 0) {
		fprintf(stderr, "waiters: cannot create pipe/eventfd/epoll: %s\n", strerror(errno));
		return 2;
	}
	ev.data.fd = event_fd;
	if (epoll_ctl(epoll_fd, EPOLL_CTL_ADD, event_fd, &ev) < 0) {
		fprintf(stderr, "waiters: epoll_ctl: %s\n", strerror(errno));
		return 2;
	}

	for (int i = 0; i < N_THREADS; i++) {
		err = pthread_create(&threads[i], NULL, fns[i], NULL);
		if (err) {
			fprintf(stderr, "waiters: pthread_create: %s\n", strerror(err));
			return 2;
		}
	}
	pthread_mutex_lock(&lock);
	while (started < N_THREADS)
		pthread_cond_wait(&started_cond, &lock);
	pthread_mutex_unlock(&lock);
	/* Every thread announced itself just before blocking: "ready" once
	 * each blocked thread is inside its system call. */
	for (int i = 0; i < N_THREADS; i++) {
		if (i != T_SPINNER && wait_in_syscall(i) < 0) {
			fprintf(stderr, "waiters: thread %s did not block within 10 s\n", names[i]);
			return 2;
		}
	}
	if (ready && target_write_ready(ready) != 0) {
		fprintf(stderr, "waiters: cannot write '%s': %s\n", ready, strerror(errno));
		return 2;
	}

	main_wait(seconds);

	/* Wake everyone. */
	__atomic_store_n(&stopping, 1, __ATOMIC_SEQ_CST);
	pthread_mutex_lock(&lock);
	done = 1;
	pthread_cond_broadcast(&cond_a);
	pthread_cond_broadcast(&cond_b);
	pthread_mutex_unlock(&lock);
	if (write(pipe_fds[1], "x", 1) != 1 || write(event_fd, &one, sizeof(one)) != sizeof(one)) {
		fprintf(stderr, "waiters: cannot wake the reader or poller: %s\n", strerror(errno));
		return 2;
	}
	pthread_kill(threads[T_SIGWAITER], SIGUSR1);
	for (int i = 0; i < N_THREADS; i++) {
		if (join_waking(threads[i], i == T_SLEEPER) < 0) {
			printf("result: BAD thread %s did not end\n", names[i]);
			fflush(stdout);
			return 1;
		}
	}

	unsigned long total = eintr_epoll + eintr_sigwait + eintr_read + eintr_sleep + eintr_main;

	printf("eintr: epoll_wait=%lu sigtimedwait=%lu read=%lu nanosleep=%lu main=%lu\n",
	       eintr_epoll, eintr_sigwait, eintr_read, eintr_sleep, eintr_main);
	if (bad_thread >= 0) {
		printf("result: BAD thread %s: %s failed\n", names[bad_thread], bad_what);
		bad = 1;
	} else if (spins == 0) {
		printf("result: BAD the spinner never ran\n");
		bad = 1;
	} else {
		printf("result: OK eintr=%lu\n", total);
	}
	if (fflush(stdout) != 0)
		return 2;
	return bad;
}					/* END main */
