/* SPDX-License-Identifier: MIT */
/* The tracing thread's scheduling policy: real-time when permitted, safely. */
#include "config.h"

#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "unwind/priority.h"

#ifndef SCHED_RESET_ON_FORK
#define SCHED_RESET_ON_FORK 0x40000000
#endif

#define NICE_BOOST (-10)

/* The thread holding the real-time policy, 0 if none.  Read by the SIGXCPU
 * handler, which may run on any thread of the process. */
static pid_t rt_tid;
/* enum prio_drop; written by the handler and by prio_watch. */
static volatile sig_atomic_t drop_reason;
/* Saved by prio_enter for prio_leave; touched by the holder only. */
static struct rlimit old_rttime;
static struct sigaction old_xcpu;
static uint64_t window_start, window_cpu;
static __thread bool holder;

static uint64_t thread_cpu_ns(void)
{
	struct timespec ts;

	if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) < 0)
		return 0;
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Async-signal-safe: two system calls on a thread id.  Reset-on-fork stays,
 * so nothing the thread creates later inherits its nice -10 either. */
static void drop_to_other(pid_t tid)
{
	struct sched_param sp = { .sched_priority = 0 };

	sched_setscheduler(tid, SCHED_OTHER | SCHED_RESET_ON_FORK, &sp);
	setpriority(PRIO_PROCESS, (id_t)tid, NICE_BOOST);
}

/*
 * RLIMIT_RTTIME's SIGXCPU: the real-time thread ran too long without
 * sleeping.  The handler drops it, whichever thread the signal reached
 * (the kernel sends it to the process).  A SIGXCPU of RLIMIT_CPU, which
 * cprof never sets, would be absorbed too: the hard limit's SIGKILL still
 * ends the process.
 */
static void on_xcpu(int sig)
{
	int saved = errno;
	pid_t tid = __atomic_load_n(&rt_tid, __ATOMIC_ACQUIRE);

	(void)sig;
	if (tid > 0 && drop_reason == PRIO_KEPT) {
		drop_reason = PRIO_DROP_RTTIME;
		drop_to_other(tid);
	}
	errno = saved;
}

/* The safeguards first, then the policy; on failure nothing is left set. */
static int enter_rt(void)
{
	struct sched_param sp = { .sched_priority = sched_get_priority_min(SCHED_FIFO) };
	struct sigaction sa;
	struct rlimit rl;
	rlim_t limit = PRIO_RTTIME_US;
	int ret;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_xcpu;
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	if (getrlimit(RLIMIT_RTTIME, &old_rttime) < 0)
		return -errno;
	/* Below a finite hard limit, whose crossing is a SIGKILL. */
	if (old_rttime.rlim_max != RLIM_INFINITY && old_rttime.rlim_max / 2 < limit)
		limit = old_rttime.rlim_max / 2;
	if (old_rttime.rlim_cur != RLIM_INFINITY && old_rttime.rlim_cur < limit)
		limit = old_rttime.rlim_cur;
	if (limit == 0)
		return -EPERM;
	if (sigaction(SIGXCPU, &sa, &old_xcpu) < 0)
		return -errno;
	rl.rlim_cur = limit;
	rl.rlim_max = old_rttime.rlim_max;
	if (setrlimit(RLIMIT_RTTIME, &rl) < 0) {
		ret = -errno;
		goto err_handler;
	}
	drop_reason = PRIO_KEPT;
	window_start = 0;
	if (sched_setscheduler(0, SCHED_FIFO | SCHED_RESET_ON_FORK, &sp) < 0) {
		ret = -errno;
		goto err_rlimit;
	}
	return 0;

err_rlimit:
	setrlimit(RLIMIT_RTTIME, &old_rttime);
err_handler:
	sigaction(SIGXCPU, &old_xcpu, NULL);
	return ret;
}

enum prio_policy prio_enter(enum prio_policy want)
{
	pid_t none = 0, tid = gettid();

	if (want == PRIO_RT &&
	    __atomic_compare_exchange_n(&rt_tid, &none, tid, false, __ATOMIC_ACQ_REL,
					__ATOMIC_ACQUIRE)) {
		if (enter_rt() == 0) {
			holder = true;
			return PRIO_RT;
		}
		__atomic_store_n(&rt_tid, 0, __ATOMIC_RELEASE);
	}
	if (want != PRIO_NORMAL && setpriority(PRIO_PROCESS, (id_t)tid, NICE_BOOST) == 0)
		return PRIO_NICE;
	return PRIO_NORMAL;
}

void prio_watch(uint64_t now)
{
	uint64_t cpu;

	if (!holder || drop_reason != PRIO_KEPT)
		return;
	if (!window_start) {
		window_start = now;
		window_cpu = thread_cpu_ns();
		return;
	}
	if (now - window_start < PRIO_WINDOW_NS)
		return;
	cpu = thread_cpu_ns();
	if ((double)(cpu - window_cpu) > PRIO_MAX_SHARE * (double)(now - window_start)) {
		drop_reason = PRIO_DROP_SHARE;
		drop_to_other(rt_tid);
	}
	window_start = now;
	window_cpu = cpu;
}

enum prio_drop prio_dropped(void)
{
	return holder ? (enum prio_drop)drop_reason : PRIO_KEPT;
}

enum prio_drop prio_leave(void)
{
	struct sched_param sp = { .sched_priority = 0 };
	enum prio_drop d = prio_dropped();

	if (!holder)
		return PRIO_KEPT;
	holder = false;
	sched_setscheduler(0, SCHED_OTHER | SCHED_RESET_ON_FORK, &sp);
	/* No SIGXCPU can be about this thread any more. */
	__atomic_store_n(&rt_tid, 0, __ATOMIC_RELEASE);
	setrlimit(RLIMIT_RTTIME, &old_rttime);
	sigaction(SIGXCPU, &old_xcpu, NULL);
	return d;
}

int prio_rt_permitted(void)
{
	struct sched_param sp = { .sched_priority = sched_get_priority_min(SCHED_FIFO) }, old;
	int policy = sched_getscheduler(0);

	if (policy < 0 || sched_getparam(0, &old) < 0)
		return -errno;
	if ((policy & ~SCHED_RESET_ON_FORK) == SCHED_FIFO || (policy & ~SCHED_RESET_ON_FORK) == SCHED_RR)
		return 0;
	if (sched_setscheduler(0, SCHED_FIFO, &sp) < 0)
		return -errno;
	/* Back to what it was: leaving a real-time policy is always allowed. */
	sched_setscheduler(0, policy, &old);
	return 0;
}

const char *prio_policy_name(enum prio_policy p)
{
	static const char *const names[] = {
		[PRIO_NORMAL] = "normal", [PRIO_NICE] = "nice", [PRIO_RT] = "rt",
	};

	return names[p];
}

const char *prio_drop_name(enum prio_drop d)
{
	static const char *const names[] = {
		[PRIO_KEPT] = NULL, [PRIO_DROP_RTTIME] = "rttime", [PRIO_DROP_SHARE] = "cpu_share",
	};

	return names[d];
}
