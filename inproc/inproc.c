/* SPDX-License-Identifier: MIT */
/*
 * libcprof-inproc.so: an in-process SIGPROF sampler loaded with LD_PRELOAD,
 * the classic design (gperftools, Go's runtime/pprof), kept as the baseline
 * that cprof's stop-the-world ptrace sampling is measured against.
 *
 * Contract (cprof record --inproc depends on it):
 *   CPROF_INPROC_OUTPUT  profile path; unset = the library does nothing
 *   CPROF_INPROC_HZ      samples per second per thread, 1..1000 (default 100)
 *   CPROF_INPROC_MODE    cpu (default): per-thread CPU-time timers;
 *                        wall: per-thread CLOCK_MONOTONIC timers
 *   CPROF_INPROC_FSYNC   set: wait for the disk to hold the profile (fsync)
 * The constructor removes these variables and this library's entry in
 * LD_PRELOAD, so programs the target execs are not profiled; a forked child
 * stops profiling too.  Every thread started through pthread_create gets a
 * timer of its own (timer_create, SIGEV_THREAD_ID, SIGPROF), one-shot: the
 * handler re-arms it at a random gap around the interval and values each
 * sample by the CPU (wall) time measured since the previous one.  The
 * handler
 * unwinds with libunwind's local unwinder and stores the pcs in a lock-free
 * ring; a background thread drains the ring into prof_stacks.  At exit (an
 * atexit handler, and the destructor as a fallback) the timers stop and the
 * symbolized profile is written in the format of cprof attach.
 *
 * Limits, inherent to sampling from inside:
 *  - The target's own SIGPROF use conflicts: a handler it installs replaces
 *    ours (and one it reset to SIG_DFL would let the next tick kill it), and
 *    its setitimer(ITIMER_PROF) ticks land in our handler.  We do not chain.
 *  - _exit, a fatal signal or a successful exec* end the process without
 *    running exit handlers: the profile is lost.
 *  - Threads created before the constructor ran, or not through
 *    pthread_create (raw clone), are not sampled.
 *  - wall mode interrupts sleeping threads: calls the kernel does not restart
 *    under SA_RESTART (nanosleep, poll, epoll_wait, select, ...) return
 *    EINTR, so a program that does not retry them behaves differently.
 *  - cpu mode's timers fire only at the kernel's scheduler ticks (4 ms at
 *    HZ=250): at most that rate, and phases quantized to that grid.
 *  - A sample taken while the thread holds the dynamic loader's lock or is
 *    inside libunwind's own cache update is still safe (libunwind blocks
 *    signals around its locks) but may be truncated.
 */
#include "config.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define UNW_LOCAL_ONLY
#include <libunwind.h>

#include "lib/clock.h"
#include "lib/grow.h"
#include "lib/random.h"
#include "profile/stacks.h"
#include "process/maps.h"
#include "process/modules.h"
#include "inproc/inproc.h"

#ifndef sigev_notify_thread_id
#define sigev_notify_thread_id _sigev_un._tid
#endif

#define INPROC_PUBLIC __attribute__((visibility("default")))
#define INPROC_TLS __thread __attribute__((tls_model("initial-exec")))

static bool inproc_active;	/* fixed by the constructor */

/* Sampling state shared with the signal handler: atomics only. */
static int inproc_running;		/* handler records samples */
struct inproc_record *inproc_ring;
static uint64_t inproc_head;		/* next index to reserve */
uint64_t inproc_tail;		/* next index to drain */
uint64_t inproc_dropped;		/* ring full */
static INPROC_TLS uint32_t inproc_self_key;
/* The calling thread's one-shot timer, re-armed by the handler at a random
 * gap (inproc_gap_ns) while armed; the clock at its last sample. */
static INPROC_TLS timer_t inproc_self_timer;
static INPROC_TLS volatile sig_atomic_t inproc_self_armed;
static INPROC_TLS uint64_t inproc_self_last_ns;
static INPROC_TLS uint64_t inproc_self_due_ns;	/* the clock value it is armed for */
static INPROC_TLS uint64_t inproc_self_rng;

/* Thread table: key - 1 indexes it.  Never touched by the handler. */
pthread_mutex_t inproc_threads_lock = PTHREAD_MUTEX_INITIALIZER;
struct inproc_thread *inproc_threads;
size_t inproc_n_threads;
static size_t inproc_cap_threads;
static bool inproc_timers_stopped;	/* under inproc_threads_lock */

int64_t inproc_start_realtime_ns;
uint64_t inproc_start_mono_ns;

static pthread_t inproc_drainer;
static bool inproc_have_drainer;

static int inproc_finished;		/* inproc_finish ran (atomic) */

typedef int (*inproc_create_fn)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);
static inproc_create_fn inproc_real_create;

static pid_t inproc_gettid(void)
{
	return (pid_t)syscall(SYS_gettid);
}

/* ---- the signal handler -------------------------------------------------- */

/* The thread's timer clock now: its CPU time, or the monotonic clock in
 * wall mode.  Both are clock_gettime, async-signal-safe. */
static uint64_t inproc_clock_ns(void)
{
	return inproc_mode == INPROC_WALL ? cprof_now_ns() : cprof_thread_cpu_ns();
}

/*
 * The gap to the thread's next sample, drawn uniformly from [interval/2,
 * 3*interval/2), as cprof attach draws its ticks: a periodic
 * timer samples a loop that repeats at a commensurate period at one phase
 * for a whole run (mover -w 10, fn_a the first 7 ms of every 10: 99% of
 * the samples at -F 100, where it has 70% of the time).
 */
static uint64_t inproc_gap_ns(void)
{
	return (uint64_t)inproc_interval_ns / 2 +
	       cprof_rand_below(&inproc_self_rng, (uint64_t)inproc_interval_ns);
}

/*
 * Arms the calling thread's one-shot timer for its next sample, gap after
 * the one it was armed for (TIMER_ABSTIME on the timer's clock), so that
 * the rate holds: a CPU-time timer fires only at a scheduler tick after
 * its expiry (4 ms apart at HZ=250), and re-armed from the moment it fired
 * it gave 166 samples a second at -F 200.  A thread far behind (it was
 * stopped, or the signal was blocked) starts afresh from now.
 */
static int inproc_arm(uint64_t now, uint64_t gap)
{
	struct itimerspec its;

	inproc_self_due_ns += gap;
	if (inproc_self_due_ns <= now)
		inproc_self_due_ns = now + gap;
	memset(&its, 0, sizeof(its));
	its.it_value.tv_sec = (time_t)(inproc_self_due_ns / 1000000000u);
	its.it_value.tv_nsec = (long)(inproc_self_due_ns % 1000000000u);
	return timer_settime(inproc_self_timer, TIMER_ABSTIME, &its, NULL);
}

/*
 * Async-signal-safe: atomics, libunwind's local unwinder (signal-safe by
 * design: it blocks signals around its caches) and stores into the
 * preallocated ring.  The ucontext is the interrupted code's, so the first
 * frame is the interrupted pc, not this handler.
 */
static void inproc_on_sigprof(int sig, siginfo_t *si, void *uc)
{
	int saved_errno = errno;
	struct inproc_record *r;
	unw_cursor_t cursor;
	uint64_t head, idx, value = (uint64_t)inproc_interval_ns;
	uint32_t n = 0;
	bool next_exact = true;

	if (!__atomic_load_n(&inproc_running, __ATOMIC_RELAXED))
		goto out;
	/* Our own timer (not a SIGPROF of the program's): what this sample
	 * stands for is measured, and the next one is drawn.  Never re-armed
	 * once sampling stopped or the thread deleted its timer, so no
	 * timer id that the program may have been given since is touched. */
	if (si && si->si_code == SI_TIMER && inproc_self_armed) {
		uint64_t now = inproc_clock_ns();

		value = now - inproc_self_last_ns;
		inproc_self_last_ns = now;
		inproc_arm(now, inproc_gap_ns());
	}
	head = __atomic_load_n(&inproc_head, __ATOMIC_RELAXED);
	do {
		if (head - __atomic_load_n(&inproc_tail, __ATOMIC_ACQUIRE) >= INPROC_RING_SLOTS) {
			__atomic_add_fetch(&inproc_dropped, 1, __ATOMIC_RELAXED);
			goto out;
		}
	} while (!__atomic_compare_exchange_n(&inproc_head, &head, head + 1, true,
					      __ATOMIC_ACQ_REL, __ATOMIC_RELAXED));
	idx = head;
	r = &inproc_ring[idx % INPROC_RING_SLOTS];
	r->key = inproc_self_key;
	r->tid = (uint32_t)inproc_gettid();
	r->value_ns = value;
	r->exact[0] = r->exact[1] = 0;
	if (uc && unw_init_local2(&cursor, (unw_context_t *)uc, UNW_INIT_SIGNAL_FRAME) == 0) {
		do {
			unw_word_t ip;

			if (unw_get_reg(&cursor, UNW_REG_IP, &ip) < 0 || !ip)
				break;
			r->pcs[n] = ip;
			if (next_exact)
				r->exact[n / 64] |= 1ull << (n % 64);
			/* Past a signal trampoline the next frame was
			 * interrupted, not called: its pc is exact. */
			next_exact = unw_is_signal_frame(&cursor) > 0;
			n++;
		} while (n < INPROC_MAX_FRAMES && unw_step(&cursor) > 0);
	}
	r->n = n;
	__atomic_store_n(&r->seq, idx + 1, __ATOMIC_RELEASE);
out:
	errno = saved_errno;
}

/* ---- threads and timers --------------------------------------------------- */

/* Registers the calling thread and arms its timer.  Not in a signal handler. */
static void inproc_thread_begin(void)
{
	struct sigevent sev;
	struct inproc_thread *t;
	clockid_t clk = inproc_mode == INPROC_WALL ? CLOCK_MONOTONIC : CLOCK_THREAD_CPUTIME_ID;
	timer_t timer;
	uint32_t key;

	pthread_mutex_lock(&inproc_threads_lock);
	if (inproc_timers_stopped)
		goto out;
	if (cprof_grow(&inproc_threads, &inproc_cap_threads, inproc_n_threads + 1,
		       sizeof(*inproc_threads), 64) < 0)
		goto out;
	t = &inproc_threads[inproc_n_threads];
	*t = (struct inproc_thread){ .tid = inproc_gettid(), .alive = true };
	prctl(PR_GET_NAME, t->name, 0, 0, 0);
	key = (uint32_t)++inproc_n_threads;

	memset(&sev, 0, sizeof(sev));
	sev.sigev_notify = SIGEV_THREAD_ID;
	sev.sigev_signo = SIGPROF;
	sev.sigev_notify_thread_id = t->tid;
	if (timer_create(clk, &sev, &timer) < 0)
		goto out;	/* the thread is named but never sampled */
	/* Before the timer can fire, so every sample carries its key. */
	inproc_self_key = key;
	inproc_self_timer = timer;
	inproc_self_rng = ((uint64_t)t->tid << 32) ^ cprof_now_ns();
	inproc_self_last_ns = inproc_self_due_ns = inproc_clock_ns();
	inproc_self_armed = 1;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	/* A random first phase too, [0, interval); then the handler draws
	 * each gap. */
	if (inproc_arm(inproc_self_last_ns, inproc_gap_ns() - (uint64_t)inproc_interval_ns / 2 + 1) < 0) {
		inproc_self_armed = 0;
		__atomic_signal_fence(__ATOMIC_SEQ_CST);
		timer_delete(timer);
		goto out;
	}
	t->timer = timer;
	t->has_timer = true;
out:
	pthread_mutex_unlock(&inproc_threads_lock);
}

/* The calling thread ends: its timer goes, and its name is read now, after
 * whatever renaming it did while it ran. */
static void inproc_thread_end(void *unused)
{
	struct inproc_thread *t;

	if (!inproc_self_key)
		return;
	/* Our handler must not re-arm the timer once it is deleted. */
	inproc_self_armed = 0;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	pthread_mutex_lock(&inproc_threads_lock);
	t = &inproc_threads[inproc_self_key - 1];
	if (t->has_timer) {
		timer_delete(t->timer);
		t->has_timer = false;
	}
	prctl(PR_GET_NAME, t->name, 0, 0, 0);
	t->alive = false;
	pthread_mutex_unlock(&inproc_threads_lock);
	inproc_self_key = 0;
}

struct inproc_start {
	void *(*fn)(void *);
	void *arg;
};

static void *inproc_thread_main(void *p)
{
	struct inproc_start s = *(struct inproc_start *)p;
	void *ret;

	free(p);
	inproc_thread_begin();
	/* The cleanup handler covers pthread_exit and cancellation too. */
	pthread_cleanup_push(inproc_thread_end, NULL);
	ret = s.fn(s.arg);
	pthread_cleanup_pop(1);
	return ret;
}

static inproc_create_fn inproc_resolve_create(void)
{
	inproc_create_fn fn = __atomic_load_n(&inproc_real_create, __ATOMIC_ACQUIRE);

	if (!fn) {
		/* Another library's constructor may create threads before ours
		 * runs: resolve on first use; a second resolution is harmless. */
		fn = (inproc_create_fn)dlsym(RTLD_NEXT, "pthread_create");
		__atomic_store_n(&inproc_real_create, fn, __ATOMIC_RELEASE);
	}
	return fn;
}

INPROC_PUBLIC int pthread_create(pthread_t *thread, const pthread_attr_t *attr,
				 void *(*start)(void *), void *arg)
{
	inproc_create_fn real = inproc_resolve_create();
	struct inproc_start *s;
	int ret;

	if (!real)
		return EAGAIN;
	if (!__atomic_load_n(&inproc_running, __ATOMIC_ACQUIRE))
		return real(thread, attr, start, arg);
	s = malloc(sizeof(*s));
	if (!s)
		return EAGAIN;
	s->fn = start;
	s->arg = arg;
	ret = real(thread, attr, inproc_thread_main, s);
	if (ret)
		free(s);
	return ret;
}

/* ---- the end ------------------------------------------------------------ */

static void inproc_read_comm(struct inproc_thread *t)
{
	char path[64];
	ssize_t n;
	int fd;

	/* /proc/TID, not /proc/self/task/TID: an entry cached under the
	 * process's directory is freed by its thread's exit, and the wait that
	 * reaps the program spins while that exit is preempted (doc/cost.md,
	 * "The reaping of cprof"). */
	snprintf(path, sizeof(path), "/proc/%d/comm", (int)t->tid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	n = read(fd, t->name, sizeof(t->name) - 1);
	close(fd);
	if (n <= 0)
		return;
	t->name[n] = '\0';
	if (t->name[n - 1] == '\n')
		t->name[n - 1] = '\0';
}

/*
 * Stops sampling and names the live threads as they are named now.  The
 * timers are one-shot and re-armed only by their own thread's handler
 * while sampling runs: each fires at most once more, into a handler that
 * returns at once.  Another thread's timer is not deleted here: its
 * handler may be about to re-arm it, and the id, once freed, may be the
 * program's own next timer.  The calling thread's goes now; the others'
 * when their threads end, or with the process.
 */
static void inproc_stop_timers(void)
{
	size_t i;

	__atomic_store_n(&inproc_running, 0, __ATOMIC_RELEASE);
	inproc_self_armed = 0;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	pthread_mutex_lock(&inproc_threads_lock);
	inproc_timers_stopped = true;
	for (i = 0; i < inproc_n_threads; i++) {
		struct inproc_thread *t = &inproc_threads[i];

		if (t->has_timer && i + 1 == inproc_self_key) {
			timer_delete(t->timer);
			t->has_timer = false;
		}
		if (t->alive)
			inproc_read_comm(t);
	}
	pthread_mutex_unlock(&inproc_threads_lock);
}

/* At exit: stop sampling, drain, write.  Runs once, whichever hook is first. */
static void inproc_finish(void)
{
	int ret;

	if (!inproc_active || __atomic_exchange_n(&inproc_finished, 1, __ATOMIC_ACQ_REL))
		return;
	inproc_stop_timers();
	if (inproc_have_drainer) {
		pthread_mutex_lock(&inproc_drain_lock);
		inproc_drain_stop = true;
		pthread_cond_signal(&inproc_drain_cond);
		pthread_mutex_unlock(&inproc_drain_lock);
		pthread_join(inproc_drainer, NULL);
		inproc_have_drainer = false;
	}
	if (!inproc_mods || !inproc_stacks) {
		ret = -ENOMEM;
		goto out;
	}
	inproc_drain();
	ret = inproc_write();
out:
	if (ret < 0)
		fprintf(stderr, "cprof-inproc: cannot write '%s': %s\n", inproc_output,
			strerror(-ret));
}

/* ---- set-up ---------------------------------------------------------------- */

/* In a child made by fork: the profile belongs to the parent. */
static void inproc_atfork_child(void)
{
	__atomic_store_n(&inproc_running, 0, __ATOMIC_RELAXED);
	inproc_active = false;
	inproc_have_drainer = false;
	/* The other threads' locks may be held forever here: this thread must
	 * not take inproc_threads_lock when it ends.  Its timer was not
	 * inherited: its id may be the child's own next one. */
	inproc_self_key = 0;
	inproc_self_armed = 0;
}

static int inproc_setup(void)
{
	struct sigaction sa;
	pthread_condattr_t ca;
	void *ring;
	int ret;

	ring = mmap(NULL, INPROC_RING_SLOTS * sizeof(struct inproc_record),
		    PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (ring == MAP_FAILED)
		return -errno;
	inproc_ring = ring;
	ret = prof_stacks_create(&inproc_stacks, 2);
	if (ret < 0)
		return ret;
	ret = proc_modules_create(&inproc_mods, getpid());
	if (ret < 0)
		return ret;
	if (proc_maps_read(getpid(), &inproc_maps) == 0)
		proc_modules_update(inproc_mods, &inproc_maps);
	if (!inproc_resolve_create())
		return -ENOSYS;

	/* libunwind sets up its caches and reads the unwind tables of the
	 * loaded objects on first use: do that here, not in the first signal. */
	{
		void *warm[8];

		unw_backtrace(warm, 8);
	}

	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&inproc_drain_cond, &ca);
	pthread_condattr_destroy(&ca);
	ret = -inproc_real_create(&inproc_drainer, NULL, inproc_drain_main, NULL);
	if (ret < 0)
		return ret;
	inproc_have_drainer = true;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = inproc_on_sigprof;
	sa.sa_flags = SA_RESTART | SA_SIGINFO;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGPROF, &sa, NULL) < 0)
		return -errno;
	pthread_atfork(NULL, NULL, inproc_atfork_child);
	atexit(inproc_finish);

	inproc_start_realtime_ns = cprof_realtime_ns();
	inproc_start_mono_ns = cprof_now_ns();
	__atomic_store_n(&inproc_running, 1, __ATOMIC_RELEASE);
	inproc_thread_begin();
	return 0;
}

__attribute__((constructor)) static void inproc_init(void)
{
	const char *output = getenv("CPROF_INPROC_OUTPUT");
	bool ok;
	int ret;

	if (!output)
		return;
	ok = inproc_configure(output);
	unsetenv("CPROF_INPROC_FSYNC");
	unsetenv("CPROF_INPROC_OUTPUT");
	unsetenv("CPROF_INPROC_HZ");
	unsetenv("CPROF_INPROC_MODE");
	inproc_unpreload();
	if (!ok)
		return;
	inproc_active = true;
	ret = inproc_setup();
	if (ret < 0) {
		fprintf(stderr, "cprof-inproc: cannot start sampling: %s\n", strerror(-ret));
		__atomic_store_n(&inproc_running, 0, __ATOMIC_RELEASE);
		inproc_active = false;
	}
}

__attribute__((destructor)) static void inproc_fini(void)
{
	inproc_finish();
}
