/* SPDX-License-Identifier: MIT */
/*
 * ptrace control of every thread of one process: seize once for the whole
 * session, follow clones and exec, interrupt on request, and an event loop
 * that reaps stops promptly so the target's signals are re-injected at once
 * and job-control stops are respected (PTRACE_LISTEN).  Never PTRACE_ATTACH,
 * never PTRACE_O_EXITKILL: if cprof dies the kernel detaches and the target
 * runs on.  Or, with TRACER_WATCH, seize nothing and keep the same table
 * of threads from what the caller learns elsewhere, seizing a thread only
 * when asked.  All calls must come from the thread that created the
 * tracer.
 */
#ifndef CPROF_UNWIND_TRACER_H
#define CPROF_UNWIND_TRACER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/user.h>

#include "process/procfs.h"
#include "unwind/priority.h"

struct tracer;

struct tracer_thread {
	pid_t tid;
	pid_t tgid;		/* its process */
	struct procfs_task task;	/* its /proc files, through tracer_fds() */
	bool pending;		/* PTRACE_INTERRUPT sent, its stop not seen yet */
	bool listening;		/* in group-stop (job control); PTRACE_LISTEN issued */
	bool held;		/* kept in its stop by on_stop; see tracer_resume_held */
	bool seized;		/* ptrace-seized; false: only watched (TRACER_WATCH) */
	/* The signal last re-injected to this thread since its last
	 * interrupt stop, 0 if none.  The kernel sets up its handler as the
	 * thread resumes, and an interrupt that comes before the thread is
	 * back in user mode stops it at the handler's first instruction
	 * (doc/ptrace.md).  Read it in on_stop. */
	int last_signal;
	uint64_t signal_ns;	/* CLOCK_MONOTONIC when a signal was last re-injected to it */
	uint64_t interrupt_ns;	/* CLOCK_MONOTONIC when interrupted */
	/* When it reached that stop, estimated: a thread that is preempted
	 * when interrupted reaches its stop only when it next gets a CPU (see
	 * tracer_account_stop in tracer_stats.c). */
	uint64_t reached_ns;
	struct user_regs_struct regs;	/* read at the stop an interrupt asked for */
	uint64_t appeared_ns;	/* when it was seized or born */
	uint64_t stopped_ns;	/* total time in stops cprof asked for */
	void *user;		/* the tracer's user's, set in on_thread */
};

struct tracer_ops {
	/*
	 * The thread is in the stop its interrupt asked for; group_stopped
	 * tells whether that stop is a job-control stop; th->regs holds its
	 * registers.  The callback may read
	 * its registers and memory.  Returning false resumes it (or, in a
	 * job-control stop, listens) at once; true holds it stopped until
	 * tracer_resume_held, for a picture of several threads at one instant.
	 */
	bool (*on_stop)(struct tracer *t, struct tracer_thread *th, bool group_stopped, void *arg);
	/* A thread appeared (seized, cloned) or is about to be forgotten. */
	void (*on_thread)(struct tracer *t, struct tracer_thread *th, bool appeared, void *arg);
	/* Process pid called execve: its address space is new. */
	void (*on_exec)(struct tracer *t, pid_t pid, void *arg);
};

/* Stop durations, log-linear: 8 buckets per power of two of nanoseconds. */
#define TRACER_HIST_BUCKETS (64 * 8)

struct tracer_stats {
	uint64_t stops;		/* interrupt stops served */
	uint64_t stop_ns_total;	/* sum of interrupt-to-resume times */
	uint64_t stop_ns_max;
	uint64_t stop_hist[TRACER_HIST_BUCKETS];
	/* The same stops from the moment each thread reached its stop (the
	 * time it was held stopped, without its way to the stop): */
	uint64_t at_stop_ns_total;
	uint64_t at_stop_ns_max;
	uint64_t at_stop_hist[TRACER_HIST_BUCKETS];
	/* Per thread, time held in its stops / time traced: the worst and the sum (for
	 * the mean), over threads that lived at least one sampling period. */
	double stopped_fraction_max;
	double stopped_fraction_sum;
	uint64_t stopped_fraction_threads;
	int stop_signal;	/* the signal that ended the session, 0 if none */
	bool stop_signal_from_user; /* it came from kill(2), not the terminal */
	bool leader_exited;
	int leader_status;	/* wait status of the main thread, when it exited */
	uint64_t signals_reinjected;	/* signal-delivery-stops served */
	uint64_t spins, spins_paid;	/* waits that polled; those whose stops came meanwhile */
	/* Their turnaround: from when the tracing thread could first see the
	 * stop (its wake-up by SIGCHLD, or the end of its last look that
	 * found no stop waiting) to the re-injection.  Same histogram as
	 * stop_hist. */
	uint64_t signal_ns_total;
	uint64_t signal_ns_max;
	uint64_t signal_hist[TRACER_HIST_BUCKETS];
	uint64_t syscalls_restarted;	/* see restart_interrupted_syscall() */
	uint64_t interrupts_expired;	/* see tracer_expire_interrupts() */
	uint64_t group_stops;
	uint64_t execs;
	uint64_t threads_seen;
	uint64_t thread_cpu_ns;	/* CPU time of the tracing thread (tracer_run) */
	bool boosted;		/* the tracing thread runs at raised priority */
	enum prio_policy sched_policy;	/* the tracing thread's, from the start */
	enum prio_drop sched_drop;	/* whether a real-time policy was dropped, why */
	uint64_t sched_rt_ns;		/* PRIO_RT_ADAPT: how long it was real-time */
	unsigned sched_switches;	/* PRIO_RT_ADAPT: how often it changed */
};

enum {
	TRACER_EV_STOP_REQUESTED = 1 << 0, /* SIGINT, SIGTERM or SIGHUP reached cprof */
	TRACER_EV_GONE = 1 << 1,	    /* the target (the root process) has no threads left */
	TRACER_EV_WAKE = 1 << 2,	    /* a descriptor of tracer_set_wake_fds is readable */
};

/* tracer_run_tree's flags. */
enum {
	/* Follow every new process of the tree (fork, vfork, clone without
	 * CLONE_THREAD), from its first instruction, and its execs. */
	TRACER_FOLLOW = 1 << 0,
	/* Seize the root's existing descendants as well (from
	 * /proc/PID/task/TID/children, rescanned like the threads), and
	 * follow new ones.  A descendant that cannot be seized (gone, or
	 * not permitted: a setuid program) is left alone. */
	TRACER_DESCENDANTS = 1 << 1,
	/* The tracing thread real-time when permitted (unwind/priority.h);
	 * without it, nice -10 when permitted. */
	TRACER_RT = 1 << 2,
	/* With TRACER_RT: real-time only while the CPUs are contended
	 * (PRIO_RT_ADAPT). */
	TRACER_RT_ADAPT = 1 << 3,
	/* Seize nothing at first: the threads of pid are listed from
	 * /proc/PID/task and watched (tracer_thread.seized false), their
	 * births, exits and execs told by the caller (tracer_watch_*), who
	 * learns them elsewhere (the perf source's ring records), and the
	 * root's exit seen on a pidfd.  tracer_seize_all turns the tracer
	 * into a seizing one.  With TRACER_FOLLOW or TRACER_DESCENDANTS the
	 * births told may be of new processes of the tree, and with
	 * TRACER_DESCENDANTS the root's descendants are listed too (from
	 * /proc/PID/task/TID/children); the root's exit is still its own. */
	TRACER_WATCH = 1 << 4,
};

/*
 * The whole traced life of pid, on a thread of its own ("the tracing
 * thread"): only that thread may issue ptrace requests for its tracees,
 * and its exit is the detach (see below).  tracer_run blocks SIGCHLD,
 * SIGINT, SIGTERM and SIGHUP in the calling thread (the tracing thread
 * inherits the mask and reads them from a signalfd, so a Ctrl-C during
 * attach is not lost), starts the tracing thread and waits for it.  That
 * thread raises its priority when allowed (unwind/priority.h: nice -10, or
 * real-time with TRACER_RT), seizes every thread of pid (rescanning
 * /proc/PID/task until two passes find none new), calls fn(t, arg), then
 * lets go of every thread and exits.
 *
 * Letting go is the thread's exit: the kernel detaches a tracer's tracees
 * when the tracing thread exits, which interrupts nothing (a thread blocked
 * in epoll_wait or sigtimedwait does not see EINTR, unlike PTRACE_DETACH,
 * which needs each thread brought to a stop first).  Threads in a
 * job-control stop stay stopped; a signal whose delivery-stop had not been
 * reaped is delivered.
 *
 * ops' callbacks get arg too.  If final is not NULL, the statistics are
 * copied there at the end, with every thread's stopped fraction folded in
 * (also after a failed attach: then they are zero).  *attached (may be
 * NULL) tells whether every thread was seized.  Returns fn's result, or
 * the attach error: -ESRCH (no such process), -EPERM (not permitted; the
 * caller diagnoses why), or another -errno.
 */
int tracer_run(pid_t pid, const struct tracer_ops *ops, void *arg,
	       int (*fn)(struct tracer *t, void *arg), struct tracer_stats *final, bool *attached);

/*
 * tracer_run over a process tree: pid is the root; flags (TRACER_*) say
 * which of its descendants are traced too.  Every guarantee of tracer_run
 * holds for each traced process.  The session's target is the root:
 * TRACER_EV_GONE and leader_exited are about it, and descendants still
 * running when fn returns are let go with the rest.  Without flags, a
 * process that a clone without CLONE_THREAD brings along is let go at its
 * first stop.
 */
int tracer_run_tree(pid_t pid, unsigned flags, const struct tracer_ops *ops, void *arg,
		    int (*fn)(struct tracer *t, void *arg), struct tracer_stats *final,
		    bool *attached);

/* Whether the tracer only watches (TRACER_WATCH, not seized since). */
bool tracer_watching(const struct tracer *t);

/*
 * A watching tracer seizes every thread it watches and every thread of
 * the process not known yet (rescanning /proc/PID/task until two passes
 * find none new), and follows clones and execs through ptrace from then
 * on, as if started without TRACER_WATCH.  Returns 0 or -errno (the
 * leader could not be seized).
 */
int tracer_seize_all(struct tracer *t);

/* Watching: th is seized from now on (a source samples it at stops); its
 * clones are then followed through ptrace.  Returns 0 or -errno. */
int tracer_seize_thread(struct tracer *t, struct tracer_thread *th);

/* Watching: one pass over /proc/PID/task (and, with TRACER_DESCENDANTS,
 * over the root's descendants'), each thread not known yet watched from
 * now on (on_thread told).  Returns how many, or -errno. */
int tracer_watch_rescan(struct tracer *t);
/* Watching: thread tid of process tgid (the root, or with TRACER_FOLLOW
 * or TRACER_DESCENDANTS a process of its tree) was born; nothing when it
 * is known.  Returns it, or NULL (out of memory, or not followed). */
struct tracer_thread *tracer_watch_birth(struct tracer *t, pid_t tid, pid_t tgid);
/* Watching: thread tid exited (forgotten, on_thread told). */
void tracer_watch_exit(struct tracer *t, pid_t tid);
/* Watching: a thread of process pid called execve (on_exec told); the
 * process's other threads are gone, and that thread's tid is pid now. */
void tracer_watch_exec(struct tracer *t, pid_t pid);

/* Threads living shorter than this are left out of the stopped fractions:
 * one stop in a thread that lived 50 us says nothing about the target. */
void tracer_set_fraction_floor(struct tracer *t, uint64_t ns);

/*
 * While interrupts are outstanding, tracer_wait_stops polls for up to ns
 * before it sleeps, every time: for a one-off freeze (dump-threads).  While
 * sampling continuously a polling tracer may take the CPU its tracees need
 * to reach their stops (doc/ptrace.md): see tracer_set_spin_adaptive.
 */
void tracer_set_spin(struct tracer *t, uint64_t ns);

/*
 * The same for continuous sampling, where polling pays only while the
 * threads interrupted are on a CPU of their own and reach their stops
 * within ns (a few microseconds, when a CPU is free): a poll that ends in
 * a sleep all the same took that CPU time for nothing, and on a CPU the
 * stopping thread waits for, made its stop longer.  So the tracer keeps
 * score: while most polls lately saw their stops come, each wait polls up
 * to ns; otherwise one wait in 16 does, to notice when it pays again.
 * tracer_stats spins and spins_paid count them.
 */
void tracer_set_spin_adaptive(struct tracer *t, uint64_t ns);

/*
 * Forgets interrupts older than max_age_ns whose stop never came: another
 * ptrace-stop at the same moment (a signal's, an exec's) can satisfy an
 * interrupt, and then no stop of its own follows (ptrace(2)).  Without
 * this such a thread stays "pending" and is never sampled again.  A stop
 * that still arrives later is resumed like any unexpected one.  Returns
 * how many were forgotten.
 */
size_t tracer_expire_interrupts(struct tracer *t, uint64_t max_age_ns);

/* Sends PTRACE_INTERRUPT to th.  Returns 0 or -errno (-ESRCH: exiting). */
int tracer_interrupt(struct tracer *t, struct tracer_thread *th);

/*
 * Handles every event already queued, then waits up to timeout_ns for more
 * (0: do not wait).  Returns a mask of TRACER_EV_* or -errno.
 */
int tracer_poll(struct tracer *t, uint64_t timeout_ns);

/*
 * Descriptors whose readability (POLLIN) ends a wait as well (tracer_poll's
 * and tracer_wait_stops'): the next tracer_poll reports it once, as
 * TRACER_EV_WAKE.  The n descriptors are copied (n 0: none); the caller
 * keeps them open while they are set.  Returns 0 or -ENOMEM.
 */
int tracer_set_wake_fds(struct tracer *t, const int *fds, size_t n);

/*
 * Serves events until no interrupt is outstanding, the target is gone or
 * timeout_ns passed (a thread in uninterruptible sleep stops late; its
 * stop is then served by a later tracer_poll).  Returns the TRACER_EV_*
 * seen meanwhile, or -errno.
 */
int tracer_wait_stops(struct tracer *t, uint64_t timeout_ns);

/* Resumes every thread that on_stop held.  Returns how many. */
size_t tracer_resume_held(struct tracer *t);

/* Threads currently traced; valid until the next tracer call (a thread
 * that exits meanwhile is freed: keep tids, not pointers, across calls). */
size_t tracer_thread_count(const struct tracer *t);
struct tracer_thread *tracer_thread_at(struct tracer *t, size_t i);
/* The traced thread tid, or NULL (t may be NULL: then NULL). */
struct tracer_thread *tracer_find_thread(struct tracer *t, pid_t tid);
size_t tracer_pending_count(const struct tracer *t);

const struct tracer_stats *tracer_get_stats(const struct tracer *t);

/* The statistics as tracer_release would give them now: the stopped
 * fractions of the threads still traced folded in as well. */
void tracer_stats_now(const struct tracer *t, struct tracer_stats *out);

/* The cache of the traced threads' /proc files (their tracer_thread.task):
 * the files of thousands of threads cannot all stay open. */
struct procfs_fdcache *tracer_fds(struct tracer *t);

/* Counts one stop of d ns in st (total, maximum and histogram). */
void tracer_stats_add_stop(struct tracer_stats *st, uint64_t d);

/* The p-th percentile (0..100) of stop durations in ns, 0 if none: the
 * lower bound of the histogram bucket it falls in (buckets are 12.5%
 * wide). */
uint64_t tracer_stop_percentile(const struct tracer_stats *st, double p);

/* The same for the turnaround of signal-delivery-stops. */
uint64_t tracer_signal_percentile(const struct tracer_stats *st, double p);

/* The same for the time from reaching the stop to the resume. */
uint64_t tracer_at_stop_percentile(const struct tracer_stats *st, double p);

#endif
