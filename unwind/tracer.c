/* SPDX-License-Identifier: MIT */
/* A tracer's event loop, interrupts and resumes, release, and its thread. */
#include "config.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/ptrace.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "lib/clock.h"
#include "lib/grow.h"
#include "lib/htab.h"
#include "process/procfs.h"
#include "unwind/priority.h"
#include "unwind/tracer-impl.h"

/* tracer_set_spin_adaptive: how often a wait polls when polling has not
 * been paying. */
#define SPIN_PROBE_EVERY 16u

void tracer_set_spin(struct tracer *t, uint64_t ns)
{
	t->spin_ns = ns;
	t->spin_adapt = false;
}

void tracer_set_spin_adaptive(struct tracer *t, uint64_t ns)
{
	t->spin_ns = ns;
	t->spin_adapt = true;
	t->spin_score = SPIN_SCORE_MAX;
}

/* How long this wait polls before it sleeps. */
static uint64_t spin_budget(struct tracer *t)
{
	if (!t->spin_adapt || t->spin_score >= SPIN_SCORE_MAX / 2)
		return t->spin_ns;
	/* Not paying lately: poll one wait in SPIN_PROBE_EVERY, to notice
	 * when it pays again. */
	return ++t->spin_waits % SPIN_PROBE_EVERY ? 0 : t->spin_ns;
}

/* After a wait that polled: whether the stops came while it polled. */
static void spin_scored(struct tracer *t, bool paid)
{
	if (!t->spin_adapt)
		return;
	if (paid)
		t->spin_score += (SPIN_SCORE_MAX - t->spin_score + 3) / 4;
	else
		t->spin_score -= (t->spin_score + 3) / 4;
	t->stats.spins++;
	t->stats.spins_paid += paid;
}

/*
 * Reaps every queued status without blocking.  Returns how many.
 * waitpid(-1) looks at every tracee in the kernel, so a call costs in
 * proportion to the threads traced, idle ones included: call it only when
 * a SIGCHLD says some tracee changed state (t->undrained), and wait for a
 * tick's own stops with reap_wanted.  The SIGCHLD is read before the
 * drain, so a change after it raises a new one.
 */
static int drain(struct tracer *t)
{
	int status, n = 0;
	pid_t tid;

	t->undrained = false;
	tracer_reach_pass(t);
	for (;;) {
		tid = waitpid(-1, &status, WNOHANG | __WALL);
		if (tid <= 0)
			break;
		tracer_handle_status(t, tid, status);
		n++;
	}
	t->look_ns = cprof_now_ns();
	return n;
}

/* Reads what the signalfd holds, in one read: its signals (SIGCHLD, SIGINT,
 * SIGTERM, SIGHUP) are standard ones, each pending once at most, and a read
 * takes as many as the buffer holds. */
static int read_signals(struct tracer *t)
{
	struct signalfd_siginfo si[4];
	ssize_t r;
	size_t i;

	r = read(t->sigfd, si, sizeof(si));
	if (r < 0)
		return errno == EAGAIN || errno == EINTR ? 0 : -errno;
	for (i = 0; i < (size_t)r / sizeof(si[0]); i++) {
		if (si[i].ssi_signo == SIGCHLD)
			t->undrained = true;
		if (si[i].ssi_signo != SIGCHLD && !t->stop_requested) {
			t->stop_requested = true;
			t->stats.stop_signal = (int)si[i].ssi_signo;
			t->stats.stop_signal_from_user = si[i].ssi_code == SI_USER;
		}
	}
	return 0;
}

static int status_mask(const struct tracer *t)
{
	int m = 0;

	if (t->stop_requested)
		m |= TRACER_EV_STOP_REQUESTED;
	if (t->n_root_threads == 0 || t->root_exited)
		m |= TRACER_EV_GONE;
	return m;
}

/*
 * Reaps the statuses of the threads an interrupt was sent to, one
 * waitpid(tid) each: the kernel looks at that thread alone, where
 * waitpid(-1) walks every tracee.  Returns how many statuses.
 */
static int reap_wanted(struct tracer *t)
{
	size_t i = 0;
	int status, n = 0;

	tracer_reach_pass(t);
	while (i < t->n_wanted) {
		pid_t tid = t->wanted[i], r;
		struct tracer_thread *th = tracer_lookup(t, tid, NULL);

		if (!th || !th->pending) {
			t->wanted[i] = t->wanted[--t->n_wanted];
			continue;
		}
		r = waitpid(tid, &status, WNOHANG | __WALL);
		if (r != tid) {
			i++;
			continue;
		}
		/* A signal's stop may come first: the same tid is looked at
		 * again, still pending or not. */
		tracer_handle_status(t, tid, status);
		n++;
	}
	return n;
}

/* Waits up to timeout_ns for a signal (SIGCHLD included) and reads what
 * came.  Returns 0 or -errno. */
static int wait_signal(struct tracer *t, uint64_t timeout_ns)
{
	struct pollfd two[2], *pfd = t->pfd ? t->pfd : two;
	struct timespec ts;
	uint64_t enter = cprof_now_ns();
	size_t i;

	pfd[0] = (struct pollfd){ .fd = t->sigfd, .events = POLLIN };
	pfd[1] = (struct pollfd){ .fd = t->pidfd, .events = POLLIN };	/* (-1: ignored) */
	/* Each wait is the watchdog's turn (unwind/priority.h). */
	prio_watch(enter);
	ts.tv_sec = (time_t)(timeout_ns / 1000000000u);
	ts.tv_nsec = (long)(timeout_ns % 1000000000u);
	if (ppoll(pfd, 2 + t->n_wake, &ts, NULL) < 0 && errno != EINTR)
		return -errno;
	if (pfd[1].revents)
		tracer_watch_exited(t);
	for (i = 0; i < t->n_wake; i++)
		t->woken |= (pfd[2 + i].revents & POLLIN) != 0;
	t->look_ns = cprof_now_ns();
	tracer_reach_after_wait(t, enter, t->look_ns);
	return read_signals(t);
}

int tracer_set_wake_fds(struct tracer *t, const int *fds, size_t n)
{
	struct pollfd *pfd = NULL;
	size_t i;

	if (n) {
		pfd = calloc(2 + n, sizeof(*pfd));
		if (!pfd)
			return -ENOMEM;
		for (i = 0; i < n; i++)
			pfd[2 + i] = (struct pollfd){ .fd = fds[i], .events = POLLIN };
	}
	free(t->pfd);
	t->pfd = pfd;
	t->n_wake = n;
	t->woken = false;
	return 0;
}

/* The status mask, with TRACER_EV_WAKE once after a wake-up. */
static int events_mask(struct tracer *t)
{
	int m = status_mask(t) | (t->woken ? TRACER_EV_WAKE : 0);

	t->woken = false;
	return m;
}

int tracer_poll(struct tracer *t, uint64_t timeout_ns)
{
	int r;

	/* With a timeout, the wait returns at once when a signal is pending:
	 * no read before it (one system call less for each signal passed
	 * on). */
	if (timeout_ns == 0) {
		r = read_signals(t);
		if (r < 0)
			return r;
		if (t->pidfd >= 0) {
			struct pollfd pfd = { .fd = t->pidfd, .events = POLLIN };

			if (poll(&pfd, 1, 0) > 0)
				tracer_watch_exited(t);
		}
	}
	if ((t->undrained && drain(t) > 0) || timeout_ns == 0 || status_mask(t) || t->woken)
		return events_mask(t);
	r = wait_signal(t, timeout_ns);
	if (r < 0)
		return r;
	if (t->undrained)
		drain(t);
	return events_mask(t);
}

int tracer_wait_stops(struct tracer *t, uint64_t timeout_ns)
{
	uint64_t now = cprof_now_ns(), deadline = now + timeout_ns, spin = spin_budget(t);
	uint64_t spin_until = now + spin;
	bool slept = false;
	int r;

	r = read_signals(t);
	if (r < 0)
		return r;
	if (t->undrained)
		drain(t);
	for (;;) {
		reap_wanted(t);
		if (t->n_pending == 0 || (status_mask(t) & TRACER_EV_GONE))
			break;
		now = cprof_now_ns();
		if (now >= deadline)
			break;
		/* See tracer_set_spin: poll instead of sleeping until SIGCHLD
		 * wakes us, so the wake-up latency is not added to a stop. */
		if (now < spin_until)
			continue;
		r = wait_signal(t, deadline - now);
		slept = true;
		if (r < 0)
			return r;
		/* Not our stop, or not only ours (SIGCHLDs coalesce): another
		 * tracee's signal or exit is served now, not after the tick.
		 * While stops are still awaited (--stop process holds the
		 * copied threads meanwhile), the full drain costs no one a
		 * wait; with none left the tick ends soon, and the next
		 * tracer_poll drains. */
		if (t->undrained && (reap_wanted(t) == 0 || t->n_pending > 0))
			drain(t);
	}
	if (spin)
		spin_scored(t, t->n_pending == 0 && !slept);
	return status_mask(t);
}

size_t tracer_expire_interrupts(struct tracer *t, uint64_t max_age_ns)
{
	uint64_t now = cprof_now_ns();
	size_t i, n = 0;

	for (i = 0; i < t->n_threads && t->n_pending > 0; i++) {
		struct tracer_thread *th = t->threads[i];

		if (!th->pending || now - th->interrupt_ns <= max_age_ns)
			continue;
		th->pending = false;
		t->n_pending--;
		t->stats.interrupts_expired++;
		n++;
	}
	return n;
}

int tracer_interrupt(struct tracer *t, struct tracer_thread *th)
{
	if (th->pending)
		return 0;
	th->interrupt_ns = cprof_now_ns();
	if (ptrace(PTRACE_INTERRUPT, th->tid, NULL, NULL) < 0)
		return -errno;
	th->pending = true;
	t->n_pending++;
	/* Without room its stop is reaped by a full drain. */
	if (cprof_grow(&t->wanted, &t->cap_wanted, t->n_wanted + 1, sizeof(*t->wanted), 16) < 0)
		return 0;
	t->wanted[t->n_wanted++] = th->tid;
	return 0;
}

size_t tracer_resume_held(struct tracer *t)
{
	size_t i, n = 0;

	for (i = 0; i < t->n_threads; i++) {
		struct tracer_thread *th = t->threads[i];

		if (!th->held)
			continue;
		th->held = false;
		tracer_account_stop(t, th);
		if (th->listening)
			ptrace(PTRACE_LISTEN, th->tid, NULL, NULL);
		else
			tracer_resume(t, th->tid, 0);
		n++;
	}
	return n;
}

/* Lets go of every thread without stopping any, and frees t; the calling
 * thread must exit right after (see tracer_run). */
void tracer_release(struct tracer *t, struct tracer_stats *final)
{
	/* Serve what is already queued so no signal waits on us. */
	tracer_resume_held(t);
	drain(t);
	/* Thread removal folds each one's stopped fraction into the stats. */
	while (t->n_threads > 0)
		tracer_remove_thread(t, t->n_threads - 1);
	if (final)
		*final = t->stats;
	close(t->sigfd);
	if (t->pidfd >= 0)
		close(t->pidfd);
	if (t->self_sched_fd >= 0)
		close(t->self_sched_fd);
	free(t->pfd);
	free(t->wanted);
	free(t->threads);
	cprof_htab_free(&t->by_tid);
	free(t);
}

size_t tracer_pending_count(const struct tracer *t)
{
	return t->n_pending;
}

struct procfs_fdcache *tracer_fds(struct tracer *t)
{
	return &t->fds;
}

struct run_ctx {
	pid_t pid;
	unsigned flags;
	const struct tracer_ops *ops;
	void *arg;
	int (*fn)(struct tracer *t, void *arg);
	struct tracer_stats stats;
	bool attached;
	int ret;
};

static void *tracing_thread(void *arg)
{
	struct run_ctx *x = arg;
	uint64_t cpu0 = cprof_thread_cpu_ns();
	enum prio_policy policy = prio_enter(!(x->flags & TRACER_RT) ? PRIO_NICE :
					     x->flags & TRACER_RT_ADAPT ? PRIO_RT_ADAPT : PRIO_RT);
	struct tracer *t = NULL;

	x->ret = tracer_attach(&t, x->pid, x->flags, x->ops, x->arg);
	if (x->ret < 0) {
		prio_leave();
		return NULL;	/* the exit releases what attach seized */
	}
	x->attached = true;
	t->stats.sched_policy = policy;
	t->stats.boosted = policy != PRIO_NORMAL;
	x->ret = x->fn(t, x->arg);
	t->stats.thread_cpu_ns = cprof_thread_cpu_ns() - cpu0;
	t->stats.sched_rt_ns = prio_rt_ns(cprof_now_ns());
	t->stats.sched_switches = prio_switches();
	t->stats.sched_drop = prio_leave();
	tracer_release(t, &x->stats);
	/* Returning ends this thread: the kernel detaches the target here. */
	return NULL;
}

int tracer_run(pid_t pid, const struct tracer_ops *ops, void *arg,
	       int (*fn)(struct tracer *t, void *arg), struct tracer_stats *final, bool *attached)
{
	return tracer_run_tree(pid, 0, ops, arg, fn, final, attached);
}

int tracer_run_tree(pid_t pid, unsigned flags, const struct tracer_ops *ops, void *arg,
		    int (*fn)(struct tracer *t, void *arg), struct tracer_stats *final,
		    bool *attached)
{
	struct run_ctx x = { .pid = pid, .flags = flags, .ops = ops, .arg = arg, .fn = fn };
	struct sigaction sa, old;
	pthread_t th;
	sigset_t mask;
	int ret;

	/* The tracer learns of its tracees' stops from SIGCHLD, which the
	 * kernel does not send while it is ignored or SA_NOCLDSTOP is set,
	 * and an ignored SIGCHLD also reaps children unasked: both are
	 * inherited across exec, from whatever started cprof.  Back to the
	 * default action, which the mask below keeps from running. */
	sigemptyset(&sa.sa_mask);
	sa.sa_handler = SIG_DFL;
	sa.sa_flags = 0;
	if (sigaction(SIGCHLD, NULL, &old) == 0 &&
	    (old.sa_handler == SIG_IGN || (old.sa_flags & SA_NOCLDSTOP)))
		sigaction(SIGCHLD, &sa, NULL);
	/* Blocked here first, so no thread of cprof takes them by default
	 * action; the tracing thread inherits the mask and reads them from
	 * its signalfd. */
	sigemptyset(&mask);
	sigaddset(&mask, SIGCHLD);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGHUP);
	ret = pthread_sigmask(SIG_BLOCK, &mask, NULL);
	if (ret)
		return -ret;
	ret = pthread_create(&th, NULL, tracing_thread, &x);
	if (ret)
		return -ret;
	pthread_join(th, NULL);
	if (final)
		*final = x.stats;
	if (attached)
		*attached = x.attached;
	return x.ret;
}
