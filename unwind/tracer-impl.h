/* SPDX-License-Identifier: MIT */
/*
 * The tracer's state, shared by the files that make it: tracer.c (the
 * event loop, interrupts and the tracing thread), tracer_threads.c (the
 * table of traced threads), tracer_attach.c (seizing), tracer_status.c
 * (serving one wait status) and tracer_stats.c (accounting of stops and
 * signals).  Nothing outside unwind/tracer*.c includes it.  Every function
 * here must be called from the tracing thread (see tracer.h).
 */
#ifndef CPROF_UNWIND_TRACER_IMPL_H
#define CPROF_UNWIND_TRACER_IMPL_H

#include <poll.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/ptrace.h>
#include <sys/types.h>

#include "lib/htab.h"
#include "process/procfs.h"
#include "unwind/tracer.h"

/* tracer_set_spin_adaptive: the score of a polling that always pays. */
#define SPIN_SCORE_MAX 64u

struct tracer {
	pid_t pid;
	unsigned flags;		/* TRACER_* of tracer_run_tree */
	long options;		/* PTRACE_O_* every tracee is seized with */
	size_t n_root_threads;	/* threads of pid itself still traced */
	int sigfd;
	int pidfd;		/* TRACER_WATCH: the root's pidfd (readable once it exited), or -1 */
	bool root_exited;	/* ... and it was */
	/* What a wait polls: sigfd, pidfd, then n_wake descriptors of
	 * tracer_set_wake_fds; one of those was readable since the last
	 * tracer_poll (woken). */
	struct pollfd *pfd;
	size_t n_wake;
	bool woken;
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
	 * wait that came since.  See tracer_account_signal. */
	uint64_t look_ns;
	/* Bounds of when a stop reaped now was reached (see tracer_account_stop):
	 * the stops a pass over the tracees finds were reached after
	 * reach_floor_ns, the start of the pass before (or the estimated
	 * moment a wait was woken); reach_next_ns is that bound for the
	 * next pass. */
	uint64_t reach_floor_ns, reach_next_ns;
	int self_sched_fd;		/* the tracing thread's own schedstat, or -1 */
	uint64_t self_wait_ns;		/* its time waiting for a CPU, last read */
	struct tracer_stats stats;
};

/* ---- tracer_threads.c: the table of traced threads ------------------- */

/* The traced thread tid, or NULL (also when t is NULL); *index, when not
 * NULL, is set to its place in t->threads. */
struct tracer_thread *tracer_lookup(struct tracer *t, pid_t tid, size_t *index);
/* Adds a thread of process tgid (seized already, or watched) and tells
 * on_thread.  Returns it, or NULL when out of memory. */
struct tracer_thread *tracer_add_thread(struct tracer *t, pid_t tid, pid_t tgid, bool seized);
/* Forgets t->threads[i] (on_thread told, its stopped fraction folded into
 * the stats, its /proc files closed); the last thread takes its place. */
void tracer_remove_thread(struct tracer *t, size_t i);
/* tracer_remove_thread by tid; nothing when tid is not traced. */
void tracer_forget_tid(struct tracer *t, pid_t tid);

/* ---- tracer_stats.c: accounting ---------------------------------------- */

/* Folds th's stopped fraction at now into st, if it lived floor_ns. */
void tracer_fold_fraction(struct tracer_stats *st, uint64_t floor_ns,
			  const struct tracer_thread *th, uint64_t now);
/* A signal-delivery-stop was just served. */
void tracer_account_signal(struct tracer *t);
/* th's interrupt stop ends now: its duration and time held. */
void tracer_account_stop(struct tracer *t, struct tracer_thread *th);
/* A pass over the tracees' statuses starts. */
void tracer_reach_pass(struct tracer *t);
/* A wait from enter to now has ended. */
void tracer_reach_after_wait(struct tracer *t, uint64_t enter, uint64_t now);

/* ---- tracer_attach.c, tracer.c: a tracer's life ----------------------- */

/* Seizes every thread of pid (and its descendants' with
 * TRACER_DESCENDANTS) from the calling thread, which becomes the tracing
 * thread.  0, or negative errno (the leader's seize failing is the one
 * reported); on failure the caller's thread must exit (see tracer_run). */
int tracer_attach(struct tracer **out, pid_t pid, unsigned flags,
		  const struct tracer_ops *ops, void *arg);
/* Lets go of every thread and frees t; *final (may be NULL) gets the
 * stats.  The calling thread must exit right after. */
void tracer_release(struct tracer *t, struct tracer_stats *final);

/* ---- tracer_watch.c: a tracer that watches ------------------------------ */

/* Lists every thread of t->pid as watched, and opens the root's pidfd.
 * Returns 0 or -errno (-ESRCH: no such process). */
int tracer_watch_start(struct tracer *t);
/* The root's pidfd became readable: it exited. */
void tracer_watch_exited(struct tracer *t);

/* tracer_attach.c: seizes the threads of t->pid not seized yet, rescanning
 * until two passes find none new (and its descendants' with
 * TRACER_DESCENDANTS).  Returns 0 or -errno. */
int tracer_seize_threads(struct tracer *t);

/* ---- tracer_status.c: one wait status ---------------------------------- */

/* Serves the status waitpid reported for tid: exit, group-stop, our
 * interrupt's stop, clone/fork/exec events, signal-delivery-stops. */
void tracer_handle_status(struct tracer *t, pid_t tid, int status);

static inline void tracer_resume(struct tracer *t, pid_t tid, int sig)
{
	(void)t;
	/* ESRCH: the thread died under us; its exit is reported separately. */
	ptrace(PTRACE_CONT, tid, NULL, (void *)(long)sig);
}

#endif
