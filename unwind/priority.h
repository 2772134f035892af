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
 */
#ifndef CPROF_UNWIND_PRIORITY_H
#define CPROF_UNWIND_PRIORITY_H

#include <stdbool.h>
#include <stdint.h>

/* Continuous run time without sleeping before SIGXCPU (microseconds). */
#define PRIO_RTTIME_US 500000u
/* The most of one CPU the tracing thread may use while real-time... */
#define PRIO_MAX_SHARE 0.25
/* ...over a window this long. */
#define PRIO_WINDOW_NS 1000000000ull

/* The policy a thread runs with. */
enum prio_policy {
	PRIO_NORMAL,	/* as inherited (SCHED_OTHER, nice unchanged) */
	PRIO_NICE,	/* SCHED_OTHER at nice -10 */
	PRIO_RT,	/* SCHED_FIFO at priority 1 */
};

/* Why a real-time thread was dropped to SCHED_OTHER, if it was. */
enum prio_drop {
	PRIO_KEPT,
	PRIO_DROP_RTTIME,	/* it ran PRIO_RTTIME_US without sleeping */
	PRIO_DROP_SHARE,	/* it used more than PRIO_MAX_SHARE of a CPU */
};

/*
 * The calling thread at the highest of the policies permitted up to want:
 * PRIO_RT, else PRIO_NICE, else PRIO_NORMAL.  For PRIO_RT it installs the
 * SIGXCPU handler and sets RLIMIT_RTTIME (both process-wide) first; they
 * stay until prio_leave.  Returns the policy in force.
 */
enum prio_policy prio_enter(enum prio_policy want);

/*
 * The watchdog, called by the thread that entered whenever it likes (each
 * wait): at most every PRIO_WINDOW_NS it reads its own CPU time and drops
 * itself to SCHED_OTHER past PRIO_MAX_SHARE.  now is CLOCK_MONOTONIC in ns.
 * Cheap when nothing is due.
 */
void prio_watch(uint64_t now);

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

/* "rt", "nice" or "normal". */
const char *prio_policy_name(enum prio_policy p);

/* NULL for PRIO_KEPT, else "rttime" or "cpu_share". */
const char *prio_drop_name(enum prio_drop d);

#endif
