/* SPDX-License-Identifier: MIT */
/* ptrace seize/interrupt/event loop/detach for all threads of one process. */
#include "config.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <elf.h>
#include <sys/ptrace.h>
#include <sys/resource.h>
#include <sys/uio.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "lib/clock.h"
#include "lib/hash.h"
#include "lib/htab.h"
#include "process/procfs.h"
#include "unwind/priority.h"
#include "unwind/tracer.h"

#define SEIZE_OPTIONS (PTRACE_O_TRACECLONE | PTRACE_O_TRACEEXEC)
/* A wait shorter than this is taken whole as a stop's bound (see
 * reach_after_wait): not worth a read of schedstat. */
#define REACH_READ_NS 50000ull
/* Auto-attached children inherit these: a child of a followed process is
 * followed too, from its first instruction. */
#define FOLLOW_OPTIONS (SEIZE_OPTIONS | PTRACE_O_TRACEFORK | PTRACE_O_TRACEVFORK)

/* tracer_set_spin_adaptive: the score of a polling that always pays, and
 * how often a wait polls when it has not been paying. */
#define SPIN_SCORE_MAX 64u
#define SPIN_PROBE_EVERY 16u

struct tracer {
	pid_t pid;
	unsigned flags;		/* TRACER_* of tracer_run_tree */
	long options;		/* PTRACE_O_* every tracee is seized with */
	size_t n_root_threads;	/* threads of pid itself still traced */
	int sigfd;
	const struct tracer_ops *ops;
	void *arg;
	struct tracer_thread **threads;
	struct cprof_htab by_tid;	/* index of threads[] by tid */
	bool by_tid_stale;	/* a thread was removed: rebuild before use */
	struct procfs_fdcache fds;
	size_t n_threads, cap_threads;
	size_t n_pending;
	/* tids interrupted whose stop may not be reaped yet: a superset of the
	 * pending threads, trimmed as they are served (see reap_wanted). */
	pid_t *wanted;
	size_t n_wanted, cap_wanted;
	/* A SIGCHLD was read and not followed by a full drain: some tracee's
	 * status may be queued (SIGCHLDs coalesce). */
	bool undrained;
	bool stop_requested;
	uint64_t fraction_floor_ns;
	uint64_t spin_ns;
	/* tracer_set_spin_adaptive: how well polling has been paying, 0..64;
	 * the waits since a probe. */
	bool spin_adapt;
	unsigned spin_score, spin_waits;
	/* From when a status reaped now has waited, at the latest: the end of
	 * the last drain (it found the queue empty), or the wake-up from a
	 * wait that came since.  See account_signal. */
	uint64_t look_ns;
	/* Bounds of when a stop reaped now was reached (see account_stop):
	 * the stops a pass over the tracees finds were reached after
	 * reach_floor_ns, the start of the pass before (or the estimated
	 * moment a wait was woken); reach_next_ns is that bound for the
	 * next pass. */
	uint64_t reach_floor_ns, reach_next_ns;
	int self_sched_fd;		/* the tracing thread's own schedstat, or -1 */
	uint64_t self_wait_ns;		/* its time waiting for a CPU, last read */
	struct tracer_stats stats;
};

static uint32_t tid_hash(const struct tracer *t, const pid_t *tid)
{
	(void)t;
	return cprof_hash_finish((uint64_t)(uint32_t)*tid);
}

#define HTAB_NAME tid_index
#define HTAB_CTX struct tracer
#define HTAB_KEY pid_t
#define HTAB_HASH(t, key) tid_hash(t, key)
#define HTAB_COMPARE(t, i, key) ((t)->threads[i]->tid == *(key))
#include "lib/htab-type.h"

/* The index has no deletion: a removal marks it stale, and it is rebuilt
 * before its next use (once for any number of removals in a row). */
static void reindex(struct tracer *t)
{
	size_t i;

	t->by_tid_stale = false;
	cprof_htab_clear(&t->by_tid);
	for (i = 0; i < t->n_threads; i++)
		cprof_htab_add(&t->by_tid, tid_hash(t, &t->threads[i]->tid), i);
}

/* By tid, through the index: every event and every sample looks a thread
 * up, and a process may have thousands. */
static struct tracer_thread *find_thread(struct tracer *t, pid_t tid, size_t *index)
{
	uint32_t ref;

	if (!t)
		return NULL;
	if (t->by_tid_stale)
		reindex(t);
	ref = tid_index_find(&t->by_tid, t, &tid, NULL);
	if (!ref)
		return NULL;
	if (index)
		*index = ref - 1;
	return t->threads[ref - 1];
}


static struct tracer_thread *add_thread(struct tracer *t, pid_t tid, pid_t tgid)
{
	struct tracer_thread *th, **nv;

	if (t->n_threads == t->cap_threads) {
		size_t cap = t->cap_threads ? t->cap_threads * 2 : 64;

		nv = realloc(t->threads, cap * sizeof(*nv));
		if (!nv)
			return NULL;
		t->threads = nv;
		t->cap_threads = cap;
	}
	if (t->by_tid_stale)
		reindex(t);
	if (cprof_htab_reserve(&t->by_tid, 1) < 0)
		return NULL;
	th = calloc(1, sizeof(*th));
	if (!th)
		return NULL;
	th->tid = tid;
	th->tgid = tgid;
	th->appeared_ns = cprof_now_ns();
	procfs_task_init(&th->task, tid);
	th->task.pid = tgid;
	cprof_htab_add(&t->by_tid, tid_hash(t, &tid), t->n_threads);
	t->threads[t->n_threads++] = th;
	if (tgid == t->pid)
		t->n_root_threads++;
	/* Two files a thread are what sampling re-reads (schedstat, and the
	 * syscall file of one that ran): raise the soft file limit if that
	 * helps keep them open. */
	procfs_fdcache_budget(&t->fds, t->n_threads * 2);
	t->stats.threads_seen++;
	if (t->ops && t->ops->on_thread)
		t->ops->on_thread(t, th, true, t->arg);
	return th;
}

static void fold_fraction_into(struct tracer_stats *st, uint64_t floor_ns,
			       const struct tracer_thread *th, uint64_t now)
{
	uint64_t lived = now - th->appeared_ns;
	double f;

	if (lived < floor_ns || lived == 0)
		return;
	f = (double)th->stopped_ns / (double)lived;
	if (f > st->stopped_fraction_max)
		st->stopped_fraction_max = f;
	st->stopped_fraction_sum += f;
	st->stopped_fraction_threads++;
}

static void fold_fraction(struct tracer *t, const struct tracer_thread *th)
{
	fold_fraction_into(&t->stats, t->fraction_floor_ns, th, cprof_now_ns());
}

static void remove_thread(struct tracer *t, size_t i)
{
	struct tracer_thread *th = t->threads[i];

	fold_fraction(t, th);
	if (t->ops && t->ops->on_thread)
		t->ops->on_thread(t, th, false, t->arg);
	if (th->pending)
		t->n_pending--;
	if (th->tgid == t->pid)
		t->n_root_threads--;
	procfs_task_close(&t->fds, &th->task);
	free(th);
	t->threads[i] = t->threads[--t->n_threads];
	t->by_tid_stale = true;
}

static void forget_tid(struct tracer *t, pid_t tid)
{
	size_t i;

	if (find_thread(t, tid, &i))
		remove_thread(t, i);
}

/* A thread is ours when /proc says its tracer is this thread (ptrace is
 * per thread, and cprof traces from a thread of its own): threads
 * auto-attached through PTRACE_O_TRACECLONE answer EPERM to a second seize. */
static bool traced_by_us(pid_t tid)
{
	long tracer;

	if (procfs_status_field(tid, "TracerPid", &tracer) < 0)
		return false;
	return tracer == (long)gettid();
}

/* A thread that is exiting answers EPERM too (it is a zombie until its
 * exit is reaped), and so does one that has gone. */
static bool exiting(pid_t pid, pid_t tid)
{
	struct procfs_stat st;
	int fd = procfs_open_task(pid, tid, "stat"), ret;

	if (fd < 0)
		return true;
	ret = procfs_read_stat(fd, &st);
	close(fd);
	return ret < 0 || st.state == 'Z' || st.state == 'X';
}

/*
 * One pass over /proc/PID/task of process pid; *added counts newly seized
 * threads.  A descendant (not the root) that cannot be seized is left
 * alone: it is gone, or not ours to trace (a setuid program).
 */
static int seize_pass(struct tracer *t, pid_t pid, size_t *added)
{
	pid_t *tids;
	size_t n, i;
	int ret;

	ret = procfs_list_tasks(pid, &tids, &n);
	if (ret < 0)
		return pid == t->pid ? ret : 0;
	for (i = 0; i < n; i++) {
		pid_t tid = tids[i];

		if (find_thread(t, tid, NULL))
			continue;
		if (ptrace(PTRACE_SEIZE, tid, NULL, (void *)t->options) < 0) {
			int e = errno;

			if (e == ESRCH)
				continue;	/* exiting: drop quietly */
			if (e == EPERM && traced_by_us(tid)) {
				/* Auto-attached by a clone we already trace. */
			} else if (e == EPERM && tid != t->pid && exiting(pid, tid)) {
				continue;	/* drop quietly */
			} else if (pid != t->pid) {
				continue;	/* a descendant we may not trace */
			} else {
				free(tids);
				return -e;
			}
		}
		if (!add_thread(t, tid, pid)) {
			free(tids);
			return -ENOMEM;
		}
		(*added)++;
	}
	free(tids);
	return 0;
}

/* Whether some traced thread belongs to process pid. */
static bool process_known(const struct tracer *t, pid_t pid)
{
	size_t i;

	for (i = 0; i < t->n_threads; i++) {
		if (t->threads[i]->tgid == pid)
			return true;
	}
	return false;
}

/* The children of every traced process not traced yet, seized (see
 * TRACER_DESCENDANTS); *added counts the new threads. */
static int seize_children(struct tracer *t, size_t *added)
{
	pid_t *kids;
	size_t i, k, n;
	int ret;

	/* By index: the processes seized here are searched as well. */
	for (i = 0; i < t->n_threads; i++) {
		const struct tracer_thread *th = t->threads[i];

		if (th->tid != th->tgid || procfs_list_children(th->tgid, &kids, &n) < 0)
			continue;
		for (k = 0; k < n; k++) {
			if (process_known(t, kids[k]))
				continue;
			ret = seize_pass(t, kids[k], added);
			if (ret < 0) {
				free(kids);
				return ret;
			}
		}
		free(kids);
	}
	return 0;
}

static void tracer_release(struct tracer *t, struct tracer_stats *final);

/* Seizes every thread of pid (and its descendants'); see tracer_run_tree. */
static int tracer_attach(struct tracer **out, pid_t pid, unsigned flags,
			 const struct tracer_ops *ops, void *arg)
{
	struct tracer *t;
	sigset_t mask;
	size_t added;
	int ret, quiet_passes = 0;

	t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	t->pid = pid;
	t->self_sched_fd = -1;
	t->flags = flags;
	t->options = flags & (TRACER_FOLLOW | TRACER_DESCENDANTS) ? FOLLOW_OPTIONS : SEIZE_OPTIONS;
	procfs_fdcache_init(&t->fds, pid);
	t->ops = ops;
	t->arg = arg;
	t->look_ns = cprof_now_ns();

	sigemptyset(&mask);
	sigaddset(&mask, SIGCHLD);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGHUP);
	if (sigprocmask(SIG_BLOCK, &mask, NULL) < 0) {
		ret = -errno;
		goto err_free;
	}
	t->sigfd = signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
	if (t->sigfd < 0) {
		ret = -errno;
		goto err_free;
	}

	/* The leader first: its failure is the one to report. */
	if (ptrace(PTRACE_SEIZE, pid, NULL, (void *)t->options) < 0) {
		ret = -errno;
		goto err_sigfd;
	}
	if (!add_thread(t, pid, pid)) {
		ret = -ENOMEM;
		goto err_detach;
	}
	/* Rescan until two passes find nothing new, as gdb does: a thread may
	 * be created between reading the directory and seizing its parent. */
	while (quiet_passes < 2) {
		added = 0;
		ret = seize_pass(t, pid, &added);
		if (ret == 0 && (flags & TRACER_DESCENDANTS))
			ret = seize_children(t, &added);
		if (ret < 0)
			goto err_detach;
		quiet_passes = added ? 0 : quiet_passes + 1;
	}
	/* Without it (no schedstat), stops count from a bound farther back. */
	t->self_sched_fd = procfs_open_task(getpid(), gettid(), "schedstat");
	if (t->self_sched_fd >= 0) {
		struct procfs_sched sc;

		if (procfs_read_sched(t->self_sched_fd, &sc) == 0) {
			t->self_wait_ns = sc.wait_ns;
		} else {
			close(t->self_sched_fd);
			t->self_sched_fd = -1;
		}
	}
	*out = t;
	return 0;

err_detach:
	/* The caller's thread exits after a failed attach, releasing these. */
	tracer_release(t, NULL);
	return ret;
err_sigfd:
	close(t->sigfd);
err_free:
	free(t);
	return ret;
}

static bool is_stop_signal(int sig)
{
	return sig == SIGSTOP || sig == SIGTSTP || sig == SIGTTIN || sig == SIGTTOU;
}

static void resume(struct tracer *t, pid_t tid, int sig)
{
	/* ESRCH: the thread died under us; its exit is reported separately. */
	ptrace(PTRACE_CONT, tid, NULL, (void *)(long)sig);
}

static unsigned hist_bucket(uint64_t v)
{
	unsigned e;

	if (v < 8)
		return (unsigned)v;
	e = 63u - (unsigned)__builtin_clzll(v);	/* v in [2^e, 2^(e+1)) */
	return e * 8 + (unsigned)((v >> (e - 3)) & 7);
}

/* The lower bound of bucket b: the inverse of hist_bucket. */
static uint64_t hist_value(unsigned b)
{
	unsigned e = b / 8, m = b % 8;

	if (b < 8)
		return b;
	return (8ull + m) << (e - 3);
}

static uint64_t hist_percentile(const uint64_t hist[TRACER_HIST_BUCKETS], uint64_t n,
				uint64_t max, double p)
{
	uint64_t want, seen = 0;
	unsigned b;

	if (!n)
		return 0;
	want = (uint64_t)((p / 100.0) * (double)n + 0.5);
	if (want < 1)
		want = 1;
	for (b = 0; b < TRACER_HIST_BUCKETS; b++) {
		seen += hist[b];
		if (seen >= want)
			return hist_value(b);
	}
	return max;
}

uint64_t tracer_stop_percentile(const struct tracer_stats *st, double p)
{
	return hist_percentile(st->stop_hist, st->stops, st->stop_ns_max, p);
}

uint64_t tracer_signal_percentile(const struct tracer_stats *st, double p)
{
	return hist_percentile(st->signal_hist, st->signals_reinjected, st->signal_ns_max, p);
}

uint64_t tracer_at_stop_percentile(const struct tracer_stats *st, double p)
{
	return hist_percentile(st->at_stop_hist, st->stops, st->at_stop_ns_max, p);
}

void tracer_set_fraction_floor(struct tracer *t, uint64_t ns)
{
	t->fraction_floor_ns = ns;
}

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


void tracer_stats_add_stop(struct tracer_stats *st, uint64_t d)
{
	st->stop_hist[hist_bucket(d)]++;
	st->stops++;
	st->stop_ns_total += d;
	if (d > st->stop_ns_max)
		st->stop_ns_max = d;
}

/*
 * A signal-delivery-stop was just served.  When the thread stopped is not
 * known; look_ns bounds it: when the tracing thread slept, the stop woke
 * it (the time it took to be scheduled is not counted), and when it was
 * busy, the stop came after its last look found none (the whole busy
 * stretch is counted, an upper bound).
 */
static void account_signal(struct tracer *t)
{
	uint64_t now = cprof_now_ns(), d = now > t->look_ns ? now - t->look_ns : 0;

	t->stats.signal_hist[hist_bucket(d)]++;
	t->stats.signal_ns_total += d;
	if (d > t->stats.signal_ns_max)
		t->stats.signal_ns_max = d;
}

/*
 * A stop counts from the interrupt to the resume (stop_ns), and the thread
 * was held stopped from the moment it reached the stop (at_stop_ns, and its
 * stopped fraction).  The two differ when the thread was preempted as it
 * was interrupted: it reaches its stop only when it next gets a CPU, and
 * until then it is runnable, not stopped.  Nothing says when it got there;
 * reached_ns estimates it: the start of the pass over the tracees before
 * the one that found the stop, or, after a wait, the moment the wait was
 * woken (its end minus the time the tracing thread then waited for a CPU,
 * from its own schedstat).  That can be early (a wake-up for another
 * reason, a wait for a CPU counted since an earlier read: the stop then
 * counts longer) or late by the time the tracing thread takes to return
 * from its wait once running, microseconds (bench/saturated.sh compares
 * the estimate with the scheduler's trace).
 */
static void account_stop(struct tracer *t, struct tracer_thread *th)
{
	uint64_t now = cprof_now_ns(), d = now - th->interrupt_ns;
	uint64_t held = now - (th->reached_ns > th->interrupt_ns ? th->reached_ns : th->interrupt_ns);

	th->stopped_ns += held;
	tracer_stats_add_stop(&t->stats, d);
	t->stats.at_stop_hist[hist_bucket(held)]++;
	t->stats.at_stop_ns_total += held;
	if (held > t->stats.at_stop_ns_max)
		t->stats.at_stop_ns_max = held;
}

/* Called as a pass over the tracees' statuses starts. */
static void reach_pass(struct tracer *t)
{
	uint64_t now = cprof_now_ns();

	t->reach_floor_ns = t->reach_next_ns;
	t->reach_next_ns = now;
}

/*
 * After a wait from enter to now: the moment it was woken, as a bound for
 * the stops the next pass finds.  Only when a stop is awaited and the wait
 * was long enough for the tracing thread's own wait for a CPU to matter;
 * otherwise the start of the wait stands (a bound too).  That own wait is
 * read since the last read, which may count more than this wait's:
 * the bound only moves earlier.
 */
static void reach_after_wait(struct tracer *t, uint64_t enter, uint64_t now)
{
	struct procfs_sched sc;
	uint64_t waited, woke;

	if (t->self_sched_fd < 0 || !t->n_pending || now - enter < REACH_READ_NS ||
	    procfs_read_sched(t->self_sched_fd, &sc) < 0)
		return;
	waited = sc.wait_ns - t->self_wait_ns;
	t->self_wait_ns = sc.wait_ns;
	woke = now > waited ? now - waited : 0;
	if (woke > t->reach_next_ns)
		t->reach_next_ns = woke < enter ? enter : woke;
}

/* After exec only the execing thread survives, now under the leader's tid. */
static void handle_exec(struct tracer *t, pid_t pid)
{
	pid_t *tids;
	size_t n, i, j;

	t->stats.execs++;
	if (procfs_list_tasks(pid, &tids, &n) == 0) {
		for (i = 0; i < t->n_threads;) {
			bool alive = t->threads[i]->tgid != pid;

			for (j = 0; j < n; j++)
				alive |= tids[j] == t->threads[i]->tid;
			if (alive) {
				i++;
				continue;
			}
			remove_thread(t, i);
		}
		free(tids);
	}
	if (!find_thread(t, pid, NULL))
		add_thread(t, pid, pid);
	if (t->ops && t->ops->on_exec)
		t->ops->on_exec(t, pid, t->arg);
}

#define ERESTARTNOHAND 514	/* the kernel's, not in user headers */

/*
 * PTRACE_INTERRUPT makes a thread's signal_pending() true, and a system
 * call that does not restart itself (epoll_wait, sigtimedwait, ...) returns
 * -EINTR on the way to our stop.  cpu mode interrupts only running threads,
 * but one may enter such a call between our look at its state and the
 * interrupt (tests/attach-eintr-evloop.test makes it happen).  Turning -EINTR into -ERESTARTNOHAND hands the decision back to
 * the kernel, as if it had returned that itself: with no signal handler to
 * run, the call is restarted when the thread resumes (with its original
 * timeout: a relative one starts again); with a handler, the caller gets
 * EINTR exactly as it would have without cprof.
 */
static void restart_interrupted_syscall(struct tracer *t, struct tracer_thread *th)
{
	struct iovec iov = { .iov_base = &th->regs, .iov_len = sizeof(th->regs) };

	if ((long long)th->regs.orig_rax < 0 || (long long)th->regs.rax != -EINTR)
		return;
	th->regs.rax = (unsigned long long)-ERESTARTNOHAND;
	if (ptrace(PTRACE_SETREGSET, th->tid, (void *)NT_PRSTATUS, &iov) == 0)
		t->stats.syscalls_restarted++;
	/* The caller sees the registers the thread will resume with, but
	 * its pc is where it stopped: report EINTR's place, not a restart. */
	th->regs.rax = (unsigned long long)-EINTR;
}

static void read_regs_at_interrupt(struct tracer *t, struct tracer_thread *th)
{
	struct iovec iov = { .iov_base = &th->regs, .iov_len = sizeof(th->regs) };

	if (ptrace(PTRACE_GETREGSET, th->tid, (void *)NT_PRSTATUS, &iov) < 0) {
		memset(&th->regs, 0, sizeof(th->regs));
		return;
	}
	restart_interrupted_syscall(t, th);
}

/* The process tid belongs to (tid itself when /proc no longer knows). */
static pid_t tgid_of(pid_t tid)
{
	long tgid;

	return procfs_status_field(tid, "Tgid", &tgid) == 0 ? (pid_t)tgid : tid;
}

/* The stop an interrupt asked for: registers read, on_stop told.  Returns
 * true when on_stop holds the thread (tracer_resume_held lets it go); else
 * the stop is accounted and the caller resumes or listens. */
static bool serve_interrupt(struct tracer *t, struct tracer_thread *th)
{
	bool hold;

	th->reached_ns = t->reach_floor_ns;
	th->pending = false;
	t->n_pending--;
	read_regs_at_interrupt(t, th);
	hold = t->ops && t->ops->on_stop && t->ops->on_stop(t, th, th->listening, t->arg);
	th->last_signal = 0;
	if (hold) {
		th->held = true;
		return true;
	}
	account_stop(t, th);
	return false;
}

static void handle_status(struct tracer *t, pid_t tid, int status)
{
	struct tracer_thread *th;
	unsigned long msg;
	int sig, event;

	th = find_thread(t, tid, NULL);
	if (WIFEXITED(status) || WIFSIGNALED(status)) {
		if (tid == t->pid) {
			t->stats.leader_exited = true;
			t->stats.leader_status = status;
		}
		forget_tid(t, tid);
		return;
	}
	if (!WIFSTOPPED(status))
		return;
	if (!th) {
		/* A clone's first stop can come before its parent's
		 * PTRACE_EVENT_CLONE: unknown tids are new threads, or new
		 * processes (fork, vfork, clone without CLONE_THREAD). */
		pid_t tgid = tgid_of(tid);

		if (tgid != t->pid && !(t->flags & (TRACER_FOLLOW | TRACER_DESCENDANTS))) {
			/* A process TRACECLONE brought along, not followed:
			 * let it go from this, its first stop. */
			ptrace(PTRACE_DETACH, tid, NULL, NULL);
			return;
		}
		th = add_thread(t, tid, tgid);
		if (!th) {
			ptrace(PTRACE_CONT, tid, NULL, NULL);
			return;
		}
	}
	sig = WSTOPSIG(status);
	event = status >> 16;

	switch (event) {
	case PTRACE_EVENT_STOP:
		/* Group-stop: the process is stopped by job control.  LISTEN
		 * keeps it stopped yet lets SIGCONT through; CONT would wrongly
		 * resume it. */
		th->listening = is_stop_signal(sig);
		if (th->listening)
			t->stats.group_stops++;
		if (th->pending && serve_interrupt(t, th))
			return;		/* held by on_stop */
		if (th->listening)
			ptrace(PTRACE_LISTEN, tid, NULL, NULL);
		else
			resume(t, tid, 0);
		return;
	case PTRACE_EVENT_CLONE:
	case PTRACE_EVENT_FORK:
	case PTRACE_EVENT_VFORK:
		if (ptrace(PTRACE_GETEVENTMSG, tid, NULL, &msg) == 0 &&
		    !find_thread(t, (pid_t)msg, NULL)) {
			pid_t tgid = event == PTRACE_EVENT_CLONE ? tgid_of((pid_t)msg) : (pid_t)msg;

			/* Not followed, it is let go at its first stop. */
			if (tgid == th->tgid || (t->flags & (TRACER_FOLLOW | TRACER_DESCENDANTS)))
				add_thread(t, (pid_t)msg, tgid);
		}
		resume(t, tid, 0);
		return;
	case PTRACE_EVENT_EXEC:
		/* A ptrace-stop that happens while an interrupt is pending may
		 * satisfy it (ptrace(2), PTRACE_INTERRUPT): then no stop of its
		 * own follows, and the thread would count as pending forever. */
		if (th->pending) {
			th->pending = false;
			t->n_pending--;
		}
		handle_exec(t, th->tgid);
		resume(t, tid, 0);
		return;
	case 0:
		/* Signal-delivery-stop: hand the signal back untouched.  Our
		 * interrupt, if any, still follows as its own stop, after the
		 * kernel has set up the signal's handler. */
		t->stats.signals_reinjected++;
		th->last_signal = sig;
		resume(t, tid, sig);
		th->signal_ns = cprof_now_ns();
		account_signal(t);
		return;
	default:
		resume(t, tid, 0);
		return;
	}
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
	reach_pass(t);
	for (;;) {
		tid = waitpid(-1, &status, WNOHANG | __WALL);
		if (tid <= 0)
			break;
		handle_status(t, tid, status);
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
	if (t->n_root_threads == 0)
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

	reach_pass(t);
	while (i < t->n_wanted) {
		pid_t tid = t->wanted[i], r;
		struct tracer_thread *th = find_thread(t, tid, NULL);

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
		handle_status(t, tid, status);
		n++;
	}
	return n;
}

/* Waits up to timeout_ns for a signal (SIGCHLD included) and reads what
 * came.  Returns 0 or -errno. */
static int wait_signal(struct tracer *t, uint64_t timeout_ns)
{
	struct pollfd pfd = { .fd = t->sigfd, .events = POLLIN };
	struct timespec ts;
	uint64_t enter = cprof_now_ns();

	/* Each wait is the watchdog's turn (unwind/priority.h). */
	prio_watch(enter);
	ts.tv_sec = (time_t)(timeout_ns / 1000000000u);
	ts.tv_nsec = (long)(timeout_ns % 1000000000u);
	if (ppoll(&pfd, 1, &ts, NULL) < 0 && errno != EINTR)
		return -errno;
	t->look_ns = cprof_now_ns();
	reach_after_wait(t, enter, t->look_ns);
	return read_signals(t);
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
	}
	if ((t->undrained && drain(t) > 0) || timeout_ns == 0 || status_mask(t))
		return status_mask(t);
	r = wait_signal(t, timeout_ns);
	if (r < 0)
		return r;
	if (t->undrained)
		drain(t);
	return status_mask(t);
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
	if (t->n_wanted == t->cap_wanted) {
		size_t cap = t->cap_wanted ? t->cap_wanted * 2 : 16;
		pid_t *nv = realloc(t->wanted, cap * sizeof(*nv));

		/* Without room its stop is reaped by a full drain. */
		if (!nv)
			return 0;
		t->wanted = nv;
		t->cap_wanted = cap;
	}
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
		account_stop(t, th);
		if (th->listening)
			ptrace(PTRACE_LISTEN, th->tid, NULL, NULL);
		else
			resume(t, th->tid, 0);
		n++;
	}
	return n;
}

/* Lets go of every thread without stopping any, and frees t; the calling
 * thread must exit right after (see tracer_run). */
static void tracer_release(struct tracer *t, struct tracer_stats *final)
{
	/* Serve what is already queued so no signal waits on us. */
	tracer_resume_held(t);
	drain(t);
	/* Thread removal folds each one's stopped fraction into the stats. */
	while (t->n_threads > 0)
		remove_thread(t, t->n_threads - 1);
	if (final)
		*final = t->stats;
	close(t->sigfd);
	if (t->self_sched_fd >= 0)
		close(t->self_sched_fd);
	free(t->wanted);
	free(t->threads);
	cprof_htab_free(&t->by_tid);
	free(t);
}

size_t tracer_thread_count(const struct tracer *t)
{
	return t->n_threads;
}

struct tracer_thread *tracer_thread_at(struct tracer *t, size_t i)
{
	return i < t->n_threads ? t->threads[i] : NULL;
}

struct tracer_thread *tracer_find_thread(struct tracer *t, pid_t tid)
{
	return find_thread(t, tid, NULL);
}

size_t tracer_pending_count(const struct tracer *t)
{
	return t->n_pending;
}

const struct tracer_stats *tracer_get_stats(const struct tracer *t)
{
	return &t->stats;
}

void tracer_stats_now(const struct tracer *t, struct tracer_stats *out)
{
	uint64_t now = cprof_now_ns();
	size_t i;

	*out = t->stats;
	for (i = 0; i < t->n_threads; i++)
		fold_fraction_into(out, t->fraction_floor_ns, t->threads[i], now);
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
