/* SPDX-License-Identifier: MIT */
/* The tracing thread's real-time policy and its safeguards (unwind/priority.c). */
#include "config.h"

#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "lib/clock.h"
#include "tests/tap.h"
#include "unwind/priority.h"

#define POLICY_MASK (~0x40000000)	/* without SCHED_RESET_ON_FORK */

struct run {
	enum prio_policy got;
	enum prio_drop dropped, left;
	int policy_after;	/* sched_getscheduler once dropped */
	int child_policy;	/* of a thread created while real-time */
	uint64_t took_ns;
};

static void *child_main(void *arg)
{
	*(int *)arg = sched_getscheduler(0);
	return NULL;
}

/* Real-time, then spinning without ever sleeping: RLIMIT_RTTIME's SIGXCPU
 * must drop the thread (and kill nothing). */
static void *spin_main(void *arg)
{
	struct run *r = arg;
	uint64_t start;
	pthread_t child;

	r->got = prio_enter(PRIO_RT);
	if (r->got != PRIO_RT)
		return NULL;
	r->child_policy = -1;
	if (pthread_create(&child, NULL, child_main, &r->child_policy) == 0)
		pthread_join(child, NULL);
	start = cprof_now_ns();
	while (prio_dropped() == PRIO_KEPT && cprof_now_ns() - start < 5000000000ull)
		;
	r->took_ns = cprof_now_ns() - start;
	r->dropped = prio_dropped();
	r->policy_after = sched_getscheduler(0) & POLICY_MASK;
	r->left = prio_leave();
	return NULL;
}

/* Real-time, busy 90% of the time but sleeping every 10 ms (so
 * RLIMIT_RTTIME never fires): the watchdog must drop it. */
static void *busy_main(void *arg)
{
	struct run *r = arg;
	struct timespec nap = { 0, 1000000 };
	uint64_t start, t;

	r->got = prio_enter(PRIO_RT);
	if (r->got != PRIO_RT)
		return NULL;
	start = cprof_now_ns();
	while (prio_dropped() == PRIO_KEPT && (t = cprof_now_ns()) - start < 5000000000ull) {
		while (cprof_now_ns() - t < 9000000)
			;
		nanosleep(&nap, NULL);
		prio_watch(cprof_now_ns());
	}
	r->took_ns = cprof_now_ns() - start;
	r->dropped = prio_dropped();
	r->policy_after = sched_getscheduler(0) & POLICY_MASK;
	r->left = prio_leave();
	return NULL;
}

static void run_thread(void *(*fn)(void *), struct run *r)
{
	pthread_t th;

	memset(r, 0, sizeof(*r));
	if (pthread_create(&th, NULL, fn, r) == 0)
		pthread_join(th, NULL);
}

int main(void)
{
	struct rlimit before, after;
	struct sigaction sa_before, sa_after;
	struct run r;

	check(strcmp(prio_policy_name(PRIO_RT), "rt") == 0 &&
	      strcmp(prio_policy_name(PRIO_NICE), "nice") == 0 &&
	      strcmp(prio_policy_name(PRIO_NORMAL), "normal") == 0, "policy names");
	check(!prio_drop_name(PRIO_KEPT) && strcmp(prio_drop_name(PRIO_DROP_RTTIME), "rttime") == 0 &&
	      strcmp(prio_drop_name(PRIO_DROP_SHARE), "cpu_share") == 0, "drop names");
	if (prio_rt_permitted() < 0)
		skip_all("real-time scheduling is not permitted here (needs CAP_SYS_NICE or RLIMIT_RTPRIO)");
	check(sched_getscheduler(0) == SCHED_OTHER, "probing leaves the caller's policy as it was");

	getrlimit(RLIMIT_RTTIME, &before);
	sigaction(SIGXCPU, NULL, &sa_before);

	run_thread(spin_main, &r);
	check(r.got == PRIO_RT, "a thread asking for real-time gets it");
	check(r.child_policy == SCHED_OTHER, "a thread it creates is not real-time (policy %d)",
	      r.child_policy);
	check(r.dropped == PRIO_DROP_RTTIME,
	      "spinning without sleeping, it is dropped by RLIMIT_RTTIME's SIGXCPU (%d after %.2f s)",
	      (int)r.dropped, (double)r.took_ns / 1e9);
	check(r.policy_after == SCHED_OTHER, "dropped, it runs SCHED_OTHER (policy %d)", r.policy_after);
	check(r.left == PRIO_DROP_RTTIME, "prio_leave reports why");

	getrlimit(RLIMIT_RTTIME, &after);
	sigaction(SIGXCPU, NULL, &sa_after);
	check(after.rlim_cur == before.rlim_cur && after.rlim_max == before.rlim_max,
	      "RLIMIT_RTTIME is as it was after prio_leave");
	check(sa_after.sa_handler == sa_before.sa_handler, "SIGXCPU's action is as it was after prio_leave");

	run_thread(busy_main, &r);
	check(r.got == PRIO_RT, "a second thread gets real-time once the first left");
	check(r.dropped == PRIO_DROP_SHARE,
	      "busy 90%% of the time but sleeping, it is dropped by the watchdog (%d after %.2f s)",
	      (int)r.dropped, (double)r.took_ns / 1e9);
	check(r.policy_after == SCHED_OTHER, "dropped by the watchdog, it runs SCHED_OTHER (policy %d)",
	      r.policy_after);
	check(prio_enter(PRIO_NICE) != PRIO_RT && sched_getscheduler(0) == SCHED_OTHER,
	      "asking for nice -10 never gives real-time");
	return tap_done();
}
