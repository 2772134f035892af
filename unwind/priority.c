/* SPDX-License-Identifier: MIT */
/* The tracing thread's scheduling policy: real-time when permitted, safely. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "lib/clock.h"
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
/* PRIO_RT_ADAPT: whether real-time now, since when, for how long in all */
static __thread bool adaptive, rt_now;
static __thread uint64_t rt_since, rt_total;
static __thread unsigned switches;

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

/* The first line of a small /proc file into buf.  Returns 0 or -errno. */
static int read_line(const char *path, char *buf, size_t size)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t r;

	if (fd < 0)
		return -errno;
	r = read(fd, buf, size - 1);
	close(fd);
	if (r <= 0)
		return r < 0 ? -errno : -EINVAL;
	buf[r] = '\0';
	return 0;
}

/*
 * Whether the CPUs are contended, with hysteresis around was (the answer
 * last time): the kernel's CPU pressure, "some avg10=P" in
 * /proc/pressure/cpu; where there is none (a kernel without it), whether
 * more tasks are runnable than there are CPUs, the reader aside
 * (/proc/loadavg's "R/T").
 */
static bool contended(bool was)
{
	char buf[256], *p;
	long cpus;
	double v;

	if (read_line("/proc/pressure/cpu", buf, sizeof(buf)) == 0 &&
	    (p = strstr(buf, "avg10=")) != NULL) {
		v = strtod(p + 6, NULL);
		return v >= (was ? PRIO_PRESSURE_OFF : PRIO_PRESSURE_ON);
	}
	cpus = sysconf(_SC_NPROCESSORS_ONLN);
	if (cpus < 1 || read_line("/proc/loadavg", buf, sizeof(buf)) < 0 ||
	    sscanf(buf, "%*s %*s %*s %lf", &v) != 1)
		return was;
	return v - 1 >= (double)cpus + (was ? -0.5 : 0.5);
}

/* PRIO_RT_ADAPT: the holder into (rt) or out of real-time, the time kept. */
static void set_rt(bool rt, uint64_t now)
{
	struct sched_param sp = { .sched_priority = rt ? sched_get_priority_min(SCHED_FIFO) : 0 };

	if (rt == rt_now)
		return;
	if (sched_setscheduler(0, (rt ? SCHED_FIFO : SCHED_OTHER) | SCHED_RESET_ON_FORK, &sp) < 0)
		return;
	if (!rt) {
		setpriority(PRIO_PROCESS, (id_t)gettid(), NICE_BOOST);
		rt_total += now - rt_since;
	} else {
		rt_since = now;
	}
	rt_now = rt;
	switches++;
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

	if ((want == PRIO_RT || want == PRIO_RT_ADAPT) &&
	    __atomic_compare_exchange_n(&rt_tid, &none, tid, false, __ATOMIC_ACQ_REL,
					__ATOMIC_ACQUIRE)) {
		if (enter_rt() == 0) {
			uint64_t now = cprof_now_ns();

			holder = true;
			adaptive = want == PRIO_RT_ADAPT;
			rt_now = true;
			rt_since = now;
			rt_total = 0;
			switches = 0;
			if (adaptive) {
				set_rt(contended(false), now);
				switches = 0;	/* the start is no switch */
			}
			return want;
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

	if (!holder)
		return;
	if (drop_reason != PRIO_KEPT) {
		/* Dropped (by the handler, maybe): the real-time stretch ends
		 * about now, for prio_rt_ns. */
		if (rt_now) {
			rt_total += now - rt_since;
			rt_now = false;
		}
		return;
	}
	if (!window_start) {
		window_start = now;
		window_cpu = cprof_thread_cpu_ns();
		return;
	}
	if (now - window_start < PRIO_WINDOW_NS)
		return;
	cpu = cprof_thread_cpu_ns();
	if (rt_now && (double)(cpu - window_cpu) > PRIO_MAX_SHARE * (double)(now - window_start)) {
		drop_reason = PRIO_DROP_SHARE;
		drop_to_other(rt_tid);
	} else if (adaptive) {
		set_rt(contended(rt_now), now);
	}
	window_start = now;
	window_cpu = cpu;
}

uint64_t prio_rt_ns(uint64_t now)
{
	if (!holder)
		return 0;
	return rt_total + (rt_now && drop_reason == PRIO_KEPT ? now - rt_since : 0);
}

unsigned prio_switches(void)
{
	return holder ? switches : 0;
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
		[PRIO_RT_ADAPT] = "auto",
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
