/* SPDX-License-Identifier: MIT */
/* evloop: event-loop threads that alternate short bursts of work and waits.
 *
 * evloop [-t NTHREADS] [-s SECONDS] [-r READYFILE]
 *
 * NTHREADS (default 16) threads named "loop-K" each repeat: about 10 us of
 * arithmetic, epoll_wait on an idle eventfd with a 1 ms timeout, nanosleep
 * of 0.3 ms.  So a thread that a profiler sees running is, a few
 * microseconds later, often asleep in epoll_wait, which fails with EINTR
 * when the thread is interrupted (PTRACE_INTERRUPT) there.  Every EINTR is
 * counted.  After SECONDS (default 60) or SIGUSR2 (blocked everywhere, main
 * waits for it) main stops and joins the threads and prints
 *   "loops=N eintr: epoll_wait=A nanosleep=B"
 *   "result: OK eintr=A+B"
 * exit 0.  "ready\n" goes to READYFILE (via .tmp and rename) once every
 * thread has looped. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "target.h"

#define NOINLINE __attribute__((noinline, noipa))
#define MAX_THREADS 64

static volatile unsigned long sink;
static unsigned long eintr_epoll, eintr_sleep, loops;
static int epoll_fd, stopping, looping;

static int is_stopping(void)
{
	return __atomic_load_n(&stopping, __ATOMIC_SEQ_CST);
}

NOINLINE static void burst(void)
{
	for (unsigned k = 0; k < 3000; k++)
		sink += k;
}

NOINLINE static void *loop_thread(void *arg)
{
	char name[16];
	int first = 1;

	snprintf(name, sizeof(name), "loop-%d", (int)(long)arg);
	pthread_setname_np(pthread_self(), name);
	while (!is_stopping()) {
		struct epoll_event ev;
		struct timespec ts = { 0, 300000L };

		burst();
		if (epoll_wait(epoll_fd, &ev, 1, 1) < 0 && errno == EINTR && !is_stopping())
			__atomic_add_fetch(&eintr_epoll, 1, __ATOMIC_SEQ_CST);
		if (nanosleep(&ts, NULL) < 0 && errno == EINTR && !is_stopping())
			__atomic_add_fetch(&eintr_sleep, 1, __ATOMIC_SEQ_CST);
		__atomic_add_fetch(&loops, 1, __ATOMIC_SEQ_CST);
		if (first) {
			first = 0;
			__atomic_add_fetch(&looping, 1, __ATOMIC_SEQ_CST);
		}
	}
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t threads[MAX_THREADS];
	struct epoll_event ev = { .events = EPOLLIN };
	const char *ready = NULL;
	double seconds = 60;
	int nthreads = 16, opt, err, efd;
	struct timespec ts;
	sigset_t usr2;

	while ((opt = getopt(argc, argv, "t:s:r:")) != -1) {
		switch (opt) {
		case 't': nthreads = atoi(optarg); break;
		case 's': seconds = strtod(optarg, NULL); break;
		case 'r': ready = optarg; break;
		default:
			fprintf(stderr, "usage: evloop [-t NTHREADS] [-s SECONDS] [-r READYFILE]\n");
			return 64;
		}
	}
	if (optind < argc || nthreads < 1 || nthreads > MAX_THREADS || !(seconds > 0)) {
		fprintf(stderr, "usage: evloop [-t NTHREADS] [-s SECONDS] [-r READYFILE]\n");
		return 64;
	}
	sigemptyset(&usr2);
	sigaddset(&usr2, SIGUSR2);
	pthread_sigmask(SIG_BLOCK, &usr2, NULL);
	epoll_fd = epoll_create1(0);
	efd = eventfd(0, 0);
	ev.data.fd = efd;
	if (epoll_fd < 0 || efd < 0 || epoll_ctl(epoll_fd, EPOLL_CTL_ADD, efd, &ev) < 0) {
		fprintf(stderr, "evloop: epoll/eventfd: %s\n", strerror(errno));
		return 2;
	}
	for (int i = 0; i < nthreads; i++) {
		err = pthread_create(&threads[i], NULL, loop_thread, (void *)(long)i);
		if (err) {
			fprintf(stderr, "evloop: pthread_create: %s\n", strerror(err));
			return 2;
		}
	}
	while (__atomic_load_n(&looping, __ATOMIC_SEQ_CST) < nthreads) {
		struct timespec ms = { 0, 1000000L };

		nanosleep(&ms, NULL);
	}
	if (ready && target_write_ready(ready) != 0) {
		fprintf(stderr, "evloop: cannot write '%s': %s\n", ready, strerror(errno));
		return 2;
	}
	ts.tv_sec = (time_t)seconds;
	ts.tv_nsec = (long)((seconds - (double)(time_t)seconds) * 1e9);
	while (sigtimedwait(&usr2, NULL, &ts) < 0 && errno == EINTR)
		;
	__atomic_store_n(&stopping, 1, __ATOMIC_SEQ_CST);
	for (int i = 0; i < nthreads; i++)
		pthread_join(threads[i], NULL);
	printf("loops=%lu eintr: epoll_wait=%lu nanosleep=%lu\n", loops, eintr_epoll, eintr_sleep);
	printf("result: OK eintr=%lu\n", eintr_epoll + eintr_sleep);
	if (fflush(stdout) != 0)
		return 2;
	return 0;
}
