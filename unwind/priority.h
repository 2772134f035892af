/* SPDX-License-Identifier: MIT */
/*
 * The scheduling policy of the tracing thread.  A thread stopped for a
 * sample waits until the tracing thread runs to copy and resume it; on a
 * saturated machine that wait is most of the stop unless the tracing thread
 * preempts whatever runs (doc/ptrace.md).  A real-time policy does that, and
 * three safeguards keep it from ever taking a machine over:
 *   - only the tracing thread is real-time, at the lowest priority, with
 *     SCHED_RESET_ON_FORK (a thread or process it creates is not);
 *   - RLIMIT_RTTIME: if it runs PRIO_RTTIME_US without sleeping, the
 *     kernel sends SIGXCPU, whose handler here drops it to SCHED_OTHER
 *     (nothing else: cprof goes on);
 *   - prio_watch: if it used more than PRIO_MAX_SHARE of a CPU over a
 *     window of PRIO_WINDOW_NS, it drops to SCHED_OTHER as well.
 * Dropped, or when real-time is not permitted, it runs at nice -10 if
 * permitted, else as it was.  One thread of the process at a time may hold
 * the real-time policy; another asking gets nice -10.
 *
 * Real-time is a cost where CPUs are idle: the kernel wakes a real-time
 * thread on the CPU it last ran on, often an idle one that is slow to wake
 * (a virtual CPU most of all), where a normal thread is woken on the CPU of
 * the thread that woke it, the one just stopped.  So the adaptive policy
 * (PRIO_RT_ADAPT) holds the safeguards but is real-time only while the
 * machine's CPUs are contended: the kernel's CPU pressure (the share of
 * time some task waited for a CPU, /proc/pressure/cpu over 10 s) above
 * PRIO_PRESSURE_ON percent, until it falls under PRIO_PRESSURE_OFF; where
 * the kernel keeps no pressure figures, runnable tasks beyond the CPUs.
 */
#ifndef CPROF_UNWIND_PRIORITY_H
#define CPROF_UNWIND_PRIORITY_H

#include <stdbool.h>
#include <stdint.h>

/* Continuous run time without sleeping before SIGXCPU (microseconds). */
#define PRIO_RTTIME_US 500000u
/* The most of one CPU the tracing thread may use while real-time... */
#define PRIO_MAX_SHARE 0.25
/* ...over a window this long (also how often PRIO_RT_ADAPT looks again). */
#define PRIO_WINDOW_NS 1000000000ull
/* PRIO_RT_ADAPT: real-time from this CPU pressure (percent)... */
#define PRIO_PRESSURE_ON 20.0
/* ...until it is under this. */
#define PRIO_PRESSURE_OFF 10.0

/* The policy a thread runs with. */
enum prio_policy {
	PRIO_NORMAL,	/* as inherited (SCHED_OTHER, nice unchanged) */
	PRIO_NICE,	/* SCHED_OTHER at nice -10 */
	PRIO_RT,	/* SCHED_FIFO at priority 1 */
	PRIO_RT_ADAPT,	/* PRIO_RT while the CPUs are contended, else PRIO_NICE */
};

/* Why a real-time thread was dropped to SCHED_OTHER, if it was. */
enum prio_drop {
	PRIO_KEPT,
	PRIO_DROP_RTTIME,	/* it ran PRIO_RTTIME_US without sleeping */
	PRIO_DROP_SHARE,	/* it used more than PRIO_MAX_SHARE of a CPU */
};

/*
 * The calling thread at the highest of the policies permitted up to want:
 * PRIO_RT (or PRIO_RT_ADAPT), else PRIO_NICE, else PRIO_NORMAL.  For
 * PRIO_RT and PRIO_RT_ADAPT it installs the SIGXCPU handler and sets
 * RLIMIT_RTTIME (both process-wide) first; they stay until prio_leave.
 * Returns the policy in force (PRIO_RT_ADAPT: whichever of real-time and
 * nice -10 the CPUs' contention calls for, switched by prio_watch).
 */
enum prio_policy prio_enter(enum prio_policy want);

/*
 * The watchdog, called by the thread that entered whenever it likes (each
 * wait): at most every PRIO_WINDOW_NS it reads its own CPU time and drops
 * itself to SCHED_OTHER past PRIO_MAX_SHARE, and under PRIO_RT_ADAPT
 * switches between real-time and nice -10 as the CPUs' contention says.
 * now is CLOCK_MONOTONIC in ns.  Cheap when nothing is due.
 */
void prio_watch(uint64_t now);

/* Under PRIO_RT_ADAPT: the time the calling thread was real-time since
 * prio_enter (now as for prio_watch), and how many times it switched. */
uint64_t prio_rt_ns(uint64_t now);
unsigned prio_switches(void);

/* Whether and why the calling thread was dropped since prio_enter. */
enum prio_drop prio_dropped(void);

/*
 * Undoes prio_enter on the calling thread: SCHED_OTHER, and the process's
 * RLIMIT_RTTIME and SIGXCPU action as they were.  Returns prio_dropped().
 */
enum prio_drop prio_leave(void);

/*
 * Whether this process may use the real-time policy (root, CAP_SYS_NICE or
 * an RLIMIT_RTPRIO of at least 1): tried on the calling thread and undone.
 * Returns 0 or the negative errno of the refusal.
 */
int prio_rt_permitted(void);

/* "rt", "nice", "normal" or "auto" (PRIO_RT_ADAPT). */
const char *prio_policy_name(enum prio_policy p);

/* NULL for PRIO_KEPT, else "rttime" or "cpu_share". */
const char *prio_drop_name(enum prio_drop d);

#endif
