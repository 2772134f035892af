/* SPDX-License-Identifier: MIT */
/* sigthreads: thread-directed signals, counted per thread, and job control.
 *
 * sigthreads [-n RT_PER_THREAD] [-u USR1_PER_THREAD] [-P PARKED] [-s SECONDS] [-r READYFILE]
 *
 * Four workers: "spin-0" and "spin-1" spin, "sleeper" loops in 5 ms
 * nanosleeps, "reader" blocks in read on a pipe (SA_RESTART restarts it).
 * Main first puts the process in a process group of its own (setpgid), so
 * that SIGTSTP stops it whatever group the caller runs in (the kernel drops
 * SIGTSTP for an orphaned process group).
 *
 * Once "ready" is written, the first SIGUSR2 starts the sending phase; main
 * is the sender, with SIGUSR1, SIGRTMIN+2 and SIGUSR2 blocked (the workers
 * block only SIGUSR2):
 *   - RT_PER_THREAD rounds of rt_tgsigqueueinfo(pid, tid[i], SIGRTMIN+2) to
 *     each worker i, value i << 20 | k (k the round); EAGAIN (queue full) is
 *     retried, for 30 s at most.  The handler checks that the value names
 *     the thread it runs on (a thread-local index, and gettid() == tid[i]),
 *     and that k is the next expected one for that thread (real-time
 *     signals queue in order): it counts received, wrong-thread and
 *     out-of-order per thread.
 *   - USR1_PER_THREAD rounds of tgkill(pid, tid[i], SIGUSR1) to each worker,
 *     each one sent only after the previous one was counted (SIGUSR1 does
 *     not queue); the handler checks gettid() against the intended thread.
 * Then main waits (30 s at most) until every real-time signal was counted,
 * and prints "signals done" on stdout.
 *
 * A SIGCONT handler counts its runs; main prints "cont=N" each time the
 * count changes (polled every 10 ms), so that a caller can wait for the
 * handler before it stops the process again.
 *
 * The second SIGUSR2 (or SECONDS) ends the run: the workers are joined and
 * main prints one line per worker
 *   "<name>: rt sent=S recv=R wrong=W order=O usr1 sent=S recv=R wrong=W"
 * then "conts=N" and "result: OK" (exit 0) when every count matches and no
 * signal went to a wrong thread, "result: BAD ..." (exit 1) otherwise.
 *
 * -P PARKED adds that many threads ("park-N", 64 KiB stacks) looping in
 * epoll_wait with a 1 s timeout on an empty epoll set, every signal
 * blocked: the shape of a server's idle pool, and a system call that
 * returns EINTR when a ptrace stop interrupts it (signal(7)), where no
 * signal of the test can; but a job-control stop and SIGCONT do too.
 * Before the worker lines main prints "parked: n=N eintr=E jobctl_eintr=J":
 * E the EINTRs they saw until "signals done", J those after it, when the
 * caller may stop and continue the process. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "target.h"

#define NOINLINE __attribute__((noinline, noipa))
#define N_WORKERS 4
#define SIGRT_TEST (SIGRTMIN + 2)

static const char *const names[N_WORKERS] = { "spin-0", "spin-1", "sleeper", "reader" };

struct counts {
	unsigned long rt_sent, rt_recv, rt_wrong, rt_order, rt_next;
	unsigned long usr1_sent, usr1_recv, usr1_wrong;
};

static struct counts c[N_WORKERS];	/* atomic builtins for the handler's fields */
static pid_t tids[N_WORKERS];
static __thread int my_index = -1;
static unsigned long stray;		/* a counted signal on a non-worker thread */
static unsigned long conts;
static int stopping;
static int read_pipe[2];
static volatile unsigned long sink;

static pid_t my_tid(void)
{
	return (pid_t)syscall(SYS_gettid);
}

static void on_rt(int sig, siginfo_t *si, void *uc)
{
	unsigned v = (unsigned)si->si_value.sival_int;
	int i = (int)(v >> 20);
	unsigned long k = v & 0xfffff;

	(void)sig;
	(void)uc;
	if (my_index < 0) {
		__atomic_add_fetch(&stray, 1, __ATOMIC_SEQ_CST);
		return;
	}
	__atomic_add_fetch(&c[my_index].rt_recv, 1, __ATOMIC_SEQ_CST);
	if (i != my_index || my_tid() != tids[my_index]) {
		__atomic_add_fetch(&c[my_index].rt_wrong, 1, __ATOMIC_SEQ_CST);
		return;
	}
	if (k != c[i].rt_next)
		__atomic_add_fetch(&c[i].rt_order, 1, __ATOMIC_SEQ_CST);
	c[i].rt_next = k + 1;
}

static int usr1_intent = -1;	/* the worker the pending SIGUSR1 is for */

static void on_usr1(int sig)
{
	int want = __atomic_load_n(&usr1_intent, __ATOMIC_SEQ_CST);

	(void)sig;
	if (my_index < 0) {
		__atomic_add_fetch(&stray, 1, __ATOMIC_SEQ_CST);
		return;
	}
	if (want != my_index || my_tid() != tids[my_index])
		__atomic_add_fetch(&c[my_index].usr1_wrong, 1, __ATOMIC_SEQ_CST);
	__atomic_add_fetch(&c[my_index].usr1_recv, 1, __ATOMIC_SEQ_CST);
}

static void on_cont(int sig)
{
	(void)sig;
	__atomic_add_fetch(&conts, 1, __ATOMIC_SEQ_CST);
}

static int is_stopping(void)
{
	return __atomic_load_n(&stopping, __ATOMIC_SEQ_CST);
}

static void start_worker(int i)
{
	my_index = i;
	pthread_setname_np(pthread_self(), names[i]);
	__atomic_store_n(&tids[i], my_tid(), __ATOMIC_SEQ_CST);
}

NOINLINE static void spin_some(void)
{
	for (unsigned k = 0; k < 1000; k++)
		sink += k;
}

NOINLINE static void *spin_thread(void *arg)
{
	start_worker((int)(long)arg);
	while (!is_stopping())
		spin_some();
	return NULL;
}

NOINLINE static void *sleeper_thread(void *arg)
{
	start_worker((int)(long)arg);
	while (!is_stopping()) {
		struct timespec ts = { 0, 5000000L };

		nanosleep(&ts, NULL);	/* EINTR from a handler: just loop */
	}
	return NULL;
}

static int reader_bad;

static unsigned long parked_eintr[2];	/* before and after "signals done" */
static int signals_done;
static int epoll_fd = -1;

NOINLINE static void *parked_thread(void *arg)
{
	char name[16];
	struct epoll_event ev;
	sigset_t all;

	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);
	snprintf(name, sizeof(name), "park-%ld", (long)arg);
	pthread_setname_np(pthread_self(), name);
	while (!is_stopping()) {
		if (epoll_wait(epoll_fd, &ev, 1, 1000) < 0 && errno == EINTR)
			__atomic_add_fetch(&parked_eintr[__atomic_load_n(&signals_done,
									 __ATOMIC_SEQ_CST)],
					   1, __ATOMIC_SEQ_CST);
	}
	return NULL;
}

/* n parked threads into *out (malloc'd).  Returns 0 or an errno. */
static int start_parked(unsigned long n, pthread_t **out)
{
	pthread_attr_t attr;
	pthread_t *t = calloc(n ? n : 1, sizeof(*t));
	int err = 0;

	if (!t)
		return ENOMEM;
	epoll_fd = epoll_create1(EPOLL_CLOEXEC);
	if (epoll_fd < 0) {
		free(t);
		return errno;
	}
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 64 * 1024);
	for (unsigned long i = 0; i < n && !err; i++)
		err = pthread_create(&t[i], &attr, parked_thread, (void *)(long)i);
	pthread_attr_destroy(&attr);
	*out = t;
	return err;
}

NOINLINE static void *reader_thread(void *arg)
{
	char ch;
	ssize_t n;

	start_worker((int)(long)arg);
	for (;;) {
		n = read(read_pipe[0], &ch, 1);
		if (n == 1)
			break;
		if (n < 0 && errno == EINTR)
			continue;	/* not expected under SA_RESTART; harmless */
		reader_bad = 1;
		break;
	}
	return NULL;
}

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void pause_us(long us)
{
	struct timespec ts = { 0, us * 1000L };

	nanosleep(&ts, NULL);
}

static unsigned long last_conts;

/* Waits up to ms for SIGUSR2 (blocked in every thread), reporting changes
 * of the SIGCONT count meanwhile.  1: SIGUSR2 came. */
static int wait_usr2(int64_t ms)
{
	int64_t end = now_ns() + ms * 1000000;
	sigset_t set;

	sigemptyset(&set);
	sigaddset(&set, SIGUSR2);
	for (;;) {
		struct timespec ts = { 0, 10000000L };
		unsigned long n = __atomic_load_n(&conts, __ATOMIC_SEQ_CST);

		if (n != last_conts) {
			last_conts = n;
			printf("cont=%lu\n", n);
			fflush(stdout);
		}
		if (sigtimedwait(&set, NULL, &ts) == SIGUSR2)
			return 1;
		if (now_ns() >= end)
			return 0;
	}
}

static int send_rt(int i, unsigned long k)
{
	int64_t give_up = now_ns() + 30000000000LL;
	siginfo_t si;

	memset(&si, 0, sizeof(si));
	si.si_signo = SIGRT_TEST;
	si.si_code = SI_QUEUE;
	si.si_pid = getpid();
	si.si_uid = getuid();
	si.si_value.sival_int = (int)((unsigned)i << 20 | (unsigned)k);
	for (;;) {
		if (syscall(SYS_rt_tgsigqueueinfo, getpid(), tids[i], SIGRT_TEST, &si) == 0) {
			c[i].rt_sent++;
			return 0;
		}
		if (errno != EAGAIN || now_ns() > give_up) {
			fprintf(stderr, "sigthreads: rt_tgsigqueueinfo to %s: %s\n", names[i],
				strerror(errno));
			return -1;
		}
		pause_us(200);
	}
}

static int send_usr1(int i)
{
	unsigned long before = __atomic_load_n(&c[i].usr1_recv, __ATOMIC_SEQ_CST);
	int64_t give_up = now_ns() + 10000000000LL;

	__atomic_store_n(&usr1_intent, i, __ATOMIC_SEQ_CST);
	if (syscall(SYS_tgkill, getpid(), tids[i], SIGUSR1) < 0) {
		fprintf(stderr, "sigthreads: tgkill to %s: %s\n", names[i], strerror(errno));
		return -1;
	}
	c[i].usr1_sent++;
	while (__atomic_load_n(&c[i].usr1_recv, __ATOMIC_SEQ_CST) == before) {
		if (now_ns() > give_up) {
			fprintf(stderr, "sigthreads: SIGUSR1 number %lu to %s not taken within 10 s\n",
				c[i].usr1_sent, names[i]);
			return -1;
		}
		pause_us(20);
	}
	return 0;
}

static int rt_all_received(void)
{
	for (int i = 0; i < N_WORKERS; i++)
		if (__atomic_load_n(&c[i].rt_recv, __ATOMIC_SEQ_CST) < c[i].rt_sent)
			return 0;
	return 1;
}

int main(int argc, char **argv)
{
	static void *(*const fns[N_WORKERS])(void *) = {
		spin_thread, spin_thread, sleeper_thread, reader_thread,
	};
	pthread_t threads[N_WORKERS];
	const char *ready = NULL;
	unsigned long rt_n = 1000, usr1_n = 250, parked_n = 0;
	pthread_t *parked = NULL;
	double seconds = 120;
	struct sigaction sa;
	sigset_t set;
	int opt, err, bad = 0, send_failed = 0;
	int64_t end;

	while ((opt = getopt(argc, argv, "n:u:P:s:r:")) != -1) {
		switch (opt) {
		case 'n': rt_n = strtoul(optarg, NULL, 10); break;
		case 'P': parked_n = strtoul(optarg, NULL, 10); break;
		case 'u': usr1_n = strtoul(optarg, NULL, 10); break;
		case 's': seconds = strtod(optarg, NULL); break;
		case 'r': ready = optarg; break;
		default:
			fprintf(stderr, "usage: sigthreads [-n RT] [-u USR1] [-P PARKED] [-s SECONDS] [-r READYFILE]\n");
			return 64;
		}
	}
	if (optind < argc || !(seconds > 0) || rt_n >= (1u << 20)) {
		fprintf(stderr, "usage: sigthreads [-n RT] [-u USR1] [-P PARKED] [-s SECONDS] [-r READYFILE]\n");
		return 64;
	}
	end = now_ns() + (int64_t)(seconds * 1e9);
	if (setpgid(0, 0) < 0) {
		fprintf(stderr, "sigthreads: setpgid: %s\n", strerror(errno));
		return 2;
	}
	if (pipe(read_pipe) < 0) {
		fprintf(stderr, "sigthreads: pipe: %s\n", strerror(errno));
		return 2;
	}
	memset(&sa, 0, sizeof(sa));
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_RESTART | SA_SIGINFO;
	sa.sa_sigaction = on_rt;
	sigaction(SIGRT_TEST, &sa, NULL);
	sa.sa_flags = SA_RESTART;
	sa.sa_handler = on_usr1;
	sigaction(SIGUSR1, &sa, NULL);
	sa.sa_handler = on_cont;
	sigaction(SIGCONT, &sa, NULL);

	/* The workers inherit this mask: only SIGUSR2 blocked. */
	sigemptyset(&set);
	sigaddset(&set, SIGUSR2);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	for (int i = 0; i < N_WORKERS; i++) {
		err = pthread_create(&threads[i], NULL, fns[i], (void *)(long)i);
		if (err) {
			fprintf(stderr, "sigthreads: pthread_create: %s\n", strerror(err));
			return 2;
		}
	}
	err = start_parked(parked_n, &parked);
	if (err) {
		fprintf(stderr, "sigthreads: cannot start %lu parked threads: %s\n", parked_n,
			strerror(err));
		return 2;
	}
	/* Main (the sender) takes none of the counted signals. */
	sigaddset(&set, SIGUSR1);
	sigaddset(&set, SIGRT_TEST);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	for (int i = 0; i < N_WORKERS; i++)
		while (!__atomic_load_n(&tids[i], __ATOMIC_SEQ_CST))
			pause_us(1000);
	if (ready && target_write_ready(ready) != 0) {
		fprintf(stderr, "sigthreads: cannot write '%s': %s\n", ready, strerror(errno));
		return 2;
	}

	if (wait_usr2((end - now_ns()) / 1000000)) {
		/* The sending phase. */
		for (unsigned long k = 0; k < rt_n && !send_failed; k++)
			for (int i = 0; i < N_WORKERS && !send_failed; i++)
				send_failed = send_rt(i, k) < 0;
		for (unsigned long k = 0; k < usr1_n && !send_failed; k++)
			for (int i = 0; i < N_WORKERS && !send_failed; i++)
				send_failed = send_usr1(i) < 0;
		for (int64_t give_up = now_ns() + 30000000000LL; !rt_all_received();) {
			if (now_ns() > give_up)
				break;
			pause_us(1000);
		}
		__atomic_store_n(&signals_done, 1, __ATOMIC_SEQ_CST);
		printf("signals done\n");
		fflush(stdout);
		wait_usr2((end - now_ns()) / 1000000);
	}

	__atomic_store_n(&stopping, 1, __ATOMIC_SEQ_CST);
	if (write(read_pipe[1], "x", 1) != 1) {
		fprintf(stderr, "sigthreads: cannot wake the reader: %s\n", strerror(errno));
		return 2;
	}
	for (int i = 0; i < N_WORKERS; i++)
		pthread_join(threads[i], NULL);
	for (unsigned long i = 0; i < parked_n; i++)
		pthread_join(parked[i], NULL);
	free(parked);
	if (parked_n)
		printf("parked: n=%lu eintr=%lu jobctl_eintr=%lu\n", parked_n,
		       __atomic_load_n(&parked_eintr[0], __ATOMIC_SEQ_CST),
		       __atomic_load_n(&parked_eintr[1], __ATOMIC_SEQ_CST));

	for (int i = 0; i < N_WORKERS; i++) {
		printf("%s: rt sent=%lu recv=%lu wrong=%lu order=%lu usr1 sent=%lu recv=%lu wrong=%lu\n",
		       names[i], c[i].rt_sent, c[i].rt_recv, c[i].rt_wrong, c[i].rt_order,
		       c[i].usr1_sent, c[i].usr1_recv, c[i].usr1_wrong);
		if (c[i].rt_sent != rt_n || c[i].rt_recv != c[i].rt_sent || c[i].rt_wrong ||
		    c[i].rt_order || c[i].usr1_sent != usr1_n ||
		    c[i].usr1_recv != c[i].usr1_sent || c[i].usr1_wrong)
			bad = 1;
	}
	printf("conts=%lu\n", __atomic_load_n(&conts, __ATOMIC_SEQ_CST));
	if (send_failed)
		printf("result: BAD sending failed\n");
	else if (stray)
		printf("result: BAD %lu signals reached a thread they were not sent to\n", stray);
	else if (reader_bad)
		printf("result: BAD the reader's read failed\n");
	else if (bad)
		printf("result: BAD per-thread counts differ\n");
	else
		printf("result: OK\n");
	if (fflush(stdout) != 0)
		return 2;
	return send_failed || stray || reader_bad || bad;
}
