/* SPDX-License-Identifier: MIT */
/* blockers: live target with threads blocked in accept, select and poll.
 *
 * blockers [-s SECONDS] [-r READYFILE]
 *
 * Every thread blocks for the whole run in one call:
 *   "acceptor"   accept on a listening 127.0.0.1 socket, no timeout
 *   "acceptor-t" accept on another one with SO_RCVTIMEO (1 hour): signal(7)
 *                lists this one among the calls that fail with EINTR after
 *                a stop and SIGCONT even without a handler
 *   "selector"   select on a pipe, no timeout
 *   "poller"     poll on another pipe, no timeout
 *   "spinner"    a busy loop (something for cpu mode to sample)
 * and main waits in sigtimedwait for SIGUSR2 or SECONDS.
 *
 * Every EINTR that one of these calls returns before the end of the run is
 * counted.  At the end main sets the stop flag, connects to both sockets and
 * writes to both pipes, joins every thread and prints
 *   "eintr: accept=A accept_timeo=B select=C poll=D main=E"
 *   "result: OK eintr=N"   (N the total)
 * and exits 0; "result: BAD ..." and exit 1 when a call failed otherwise or
 * a thread did not end.  SIGUSR2 is blocked in every thread.  "ready\n" goes
 * to READYFILE (via .tmp and rename) once every blocked thread is inside its
 * system call (/proc/self/task/TID/syscall). */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "target.h"

#define NOINLINE __attribute__((noinline, noipa))

enum { T_ACCEPT, T_ACCEPT_TIMEO, T_SELECT, T_POLL, T_SPIN, N_THREADS };

static const char *const names[N_THREADS] = {
	"acceptor", "acceptor-t", "selector", "poller", "spinner",
};

static int stopping;		/* atomic builtins only */
static int listen_fd[2];	/* [0] plain, [1] with SO_RCVTIMEO */
static struct sockaddr_in listen_addr[2];
static int sel_pipe[2], poll_pipe[2];
static unsigned long eintr[N_THREADS], eintr_main;
static int bad_thread = -1;
static const char *bad_what;
static pid_t tids[N_THREADS];
static unsigned long spins;

static int is_stopping(void)
{
	return __atomic_load_n(&stopping, __ATOMIC_SEQ_CST);
}

static void set_bad(int which, const char *what)
{
	bad_what = what;
	__atomic_store_n(&bad_thread, which, __ATOMIC_SEQ_CST);
}

static void count(int which)
{
	if (!is_stopping())
		__atomic_add_fetch(&eintr[which], 1, __ATOMIC_SEQ_CST);
}

static void set_me(int which)
{
	__atomic_store_n(&tids[which], (pid_t)syscall(SYS_gettid), __ATOMIC_SEQ_CST);
	pthread_setname_np(pthread_self(), names[which]);
}

NOINLINE static void accept_loop(int which, int fd)
{
	for (;;) {
		int c = accept(fd, NULL, NULL);

		if (c >= 0) {
			close(c);
			if (is_stopping())
				break;
			continue;
		}
		if (errno == EINTR) {
			count(which);
			continue;
		}
		if (errno == EAGAIN || errno == EWOULDBLOCK)
			continue;	/* SO_RCVTIMEO ran out (after an hour) */
		set_bad(which, "accept");
		break;
	}
}

NOINLINE static void *acceptor_thread(void *arg)
{
	set_me(T_ACCEPT);
	accept_loop(T_ACCEPT, listen_fd[0]);
	return arg;
}

NOINLINE static void *acceptor_timeo_thread(void *arg)
{
	set_me(T_ACCEPT_TIMEO);
	accept_loop(T_ACCEPT_TIMEO, listen_fd[1]);
	return arg;
}

NOINLINE static void *selector_thread(void *arg)
{
	set_me(T_SELECT);
	for (;;) {
		fd_set rd;
		int n;

		FD_ZERO(&rd);
		FD_SET(sel_pipe[0], &rd);
		n = select(sel_pipe[0] + 1, &rd, NULL, NULL, NULL);
		if (n == 1)
			break;
		if (n < 0 && errno == EINTR) {
			count(T_SELECT);
			continue;
		}
		set_bad(T_SELECT, "select");
		break;
	}
	return arg;
}

NOINLINE static void *poller_thread(void *arg)
{
	set_me(T_POLL);
	for (;;) {
		struct pollfd p = { .fd = poll_pipe[0], .events = POLLIN };
		int n = poll(&p, 1, -1);

		if (n == 1)
			break;
		if (n < 0 && errno == EINTR) {
			count(T_POLL);
			continue;
		}
		set_bad(T_POLL, "poll");
		break;
	}
	return arg;
}

NOINLINE static void spin_inner(void)
{
	unsigned long n = 0;

	while (!is_stopping())
		n++;
	__atomic_store_n(&spins, n, __ATOMIC_SEQ_CST);
}

NOINLINE static void *spinner_thread(void *arg)
{
	set_me(T_SPIN);
	spin_inner();
	return arg;
}

static int expected_syscall(int which, long nr)
{
	switch (which) {
	case T_ACCEPT:
	case T_ACCEPT_TIMEO: return nr == SYS_accept || nr == SYS_accept4;
	case T_SELECT: return nr == SYS_select || nr == SYS_pselect6;
	case T_POLL: return nr == SYS_poll || nr == SYS_ppoll;
	default: return 1;
	}
}

/* Waits (10 s at most) until thread which sits in its system call. */
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

static int listen_on(int i, int timeo)
{
	socklen_t len = sizeof(listen_addr[i]);

	listen_fd[i] = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (listen_fd[i] < 0)
		return -1;
	memset(&listen_addr[i], 0, sizeof(listen_addr[i]));
	listen_addr[i].sin_family = AF_INET;
	listen_addr[i].sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	listen_addr[i].sin_port = 0;
	if (timeo) {
		struct timeval tv = { 3600, 0 };

		if (setsockopt(listen_fd[i], SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) < 0)
			return -1;
	}
	if (bind(listen_fd[i], (struct sockaddr *)&listen_addr[i], sizeof(listen_addr[i])) < 0 ||
	    listen(listen_fd[i], 8) < 0 ||
	    getsockname(listen_fd[i], (struct sockaddr *)&listen_addr[i], &len) < 0)
		return -1;
	return 0;
}

static int poke(int i)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	int ret;

	if (fd < 0)
		return -1;
	ret = connect(fd, (struct sockaddr *)&listen_addr[i], sizeof(listen_addr[i]));
	close(fd);
	return ret;
}

/* Waits for SIGUSR2 or SECONDS. */
NOINLINE static void main_wait(double seconds)
{
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
			eintr_main++;
	}
}

/* Joins t within 60 s, poking its wake-up source every 20 ms. */
static int join_waking(pthread_t t, int which)
{
	for (int i = 0; i < 3000; i++) {
		struct timespec ts;
		int err;

		if (which == T_ACCEPT || which == T_ACCEPT_TIMEO)
			poke(which == T_ACCEPT ? 0 : 1);
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += 20000000L;
		if (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
		err = pthread_timedjoin_np(t, NULL, &ts);
		if (err == 0)
			return 0;
		if (err != ETIMEDOUT)
			return -1;
	}
	return -1;
}

int main(int argc, char **argv)
{
	static void *(*const fns[N_THREADS])(void *) = {
		acceptor_thread, acceptor_timeo_thread, selector_thread, poller_thread,
		spinner_thread,
	};
	pthread_t threads[N_THREADS];
	const char *ready = NULL;
	double seconds = 60;
	sigset_t blocked;
	unsigned long total;
	int err;

	if (target_options(argc, argv, "blockers", &seconds, &ready))
		return 64;
	sigemptyset(&blocked);
	sigaddset(&blocked, SIGUSR2);
	pthread_sigmask(SIG_BLOCK, &blocked, NULL);
	if (listen_on(0, 0) < 0 || listen_on(1, 1) < 0 || pipe(sel_pipe) < 0 ||
	    pipe(poll_pipe) < 0) {
		fprintf(stderr, "blockers: cannot set up sockets and pipes: %s\n", strerror(errno));
		return 2;
	}
	for (int i = 0; i < N_THREADS; i++) {
		err = pthread_create(&threads[i], NULL, fns[i], NULL);
		if (err) {
			fprintf(stderr, "blockers: pthread_create: %s\n", strerror(err));
			return 2;
		}
	}
	for (int i = 0; i < N_THREADS; i++) {
		if (i != T_SPIN && wait_in_syscall(i) < 0) {
			fprintf(stderr, "blockers: thread %s did not block within 10 s\n", names[i]);
			return 2;
		}
	}
	if (ready && target_write_ready(ready) != 0) {
		fprintf(stderr, "blockers: cannot write '%s': %s\n", ready, strerror(errno));
		return 2;
	}

	main_wait(seconds);

	__atomic_store_n(&stopping, 1, __ATOMIC_SEQ_CST);
	if (write(sel_pipe[1], "x", 1) != 1 || write(poll_pipe[1], "x", 1) != 1) {
		fprintf(stderr, "blockers: cannot wake the selector or poller: %s\n", strerror(errno));
		return 2;
	}
	for (int i = 0; i < N_THREADS; i++) {
		if (join_waking(threads[i], i) < 0) {
			printf("result: BAD thread %s did not end\n", names[i]);
			fflush(stdout);
			return 1;
		}
	}
	total = eintr[T_ACCEPT] + eintr[T_ACCEPT_TIMEO] + eintr[T_SELECT] + eintr[T_POLL] + eintr_main;
	printf("eintr: accept=%lu accept_timeo=%lu select=%lu poll=%lu main=%lu\n",
	       eintr[T_ACCEPT], eintr[T_ACCEPT_TIMEO], eintr[T_SELECT], eintr[T_POLL], eintr_main);
	if (bad_thread >= 0)
		printf("result: BAD thread %s: %s failed\n", names[bad_thread], bad_what);
	else if (spins == 0)
		printf("result: BAD the spinner never ran\n");
	else
		printf("result: OK eintr=%lu\n", total);
	if (fflush(stdout) != 0)
		return 2;
	return bad_thread >= 0 || spins == 0;
}
