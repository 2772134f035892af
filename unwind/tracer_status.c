/* SPDX-License-Identifier: MIT */
/* Serving one wait status of a tracee: exits, stops, events, signals. */
#include "config.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <elf.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <sys/wait.h>

#include "lib/clock.h"
#include "lib/reaped.h"
#include "process/procfs.h"
#include "unwind/tracer-impl.h"


static bool is_stop_signal(int sig)
{
	return sig == SIGSTOP || sig == SIGTSTP || sig == SIGTTIN || sig == SIGTTOU;
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
			tracer_remove_thread(t, i);
		}
		free(tids);
	}
	if (!tracer_lookup(t, pid, NULL))
		tracer_add_thread(t, pid, pid, true);
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
	tracer_account_stop(t, th);
	return false;
}

/*
 * The first stop of a tid not traced yet: a clone's first stop can come
 * before its parent's PTRACE_EVENT_CLONE, so unknown tids are new threads,
 * or new processes (fork, vfork, clone without CLONE_THREAD).  Returns the
 * thread, or NULL when it was let go.
 */
static struct tracer_thread *adopt_unknown(struct tracer *t, pid_t tid)
{
	struct tracer_thread *th;
	pid_t tgid = tgid_of(tid);

	if (tgid != t->pid && !(t->flags & (TRACER_FOLLOW | TRACER_DESCENDANTS))) {
		/* A process TRACECLONE brought along, not followed:
		 * let it go from this, its first stop. */
		ptrace(PTRACE_DETACH, tid, NULL, NULL);
		return NULL;
	}
	th = tracer_add_thread(t, tid, tgid, true);
	if (!th)
		ptrace(PTRACE_CONT, tid, NULL, NULL);
	return th;
}

/*
 * PTRACE_EVENT_STOP: our interrupt's stop, or a group-stop (the process is
 * stopped by job control).  LISTEN keeps a group-stop stopped yet lets
 * SIGCONT through; CONT would wrongly resume it.
 */
static void event_stop(struct tracer *t, struct tracer_thread *th, pid_t tid, int sig)
{
	th->listening = is_stop_signal(sig);
	if (th->listening)
		t->stats.group_stops++;
	if (th->pending && serve_interrupt(t, th))
		return;		/* held by on_stop */
	if (th->listening)
		ptrace(PTRACE_LISTEN, tid, NULL, NULL);
	else
		tracer_resume(t, tid, 0);
}

/* PTRACE_EVENT_CLONE, _FORK, _VFORK: the new task is traced already. */
static void event_new_task(struct tracer *t, struct tracer_thread *th, int event)
{
	unsigned long msg;

	if (ptrace(PTRACE_GETEVENTMSG, th->tid, NULL, &msg) == 0 &&
	    !tracer_lookup(t, (pid_t)msg, NULL)) {
		pid_t tgid = event == PTRACE_EVENT_CLONE ? tgid_of((pid_t)msg) : (pid_t)msg;

		/* Not followed, it is let go at its first stop. */
		if (tgid == th->tgid || (t->flags & (TRACER_FOLLOW | TRACER_DESCENDANTS)))
			tracer_add_thread(t, (pid_t)msg, tgid, true);
	}
	tracer_resume(t, th->tid, 0);
}

void tracer_handle_status(struct tracer *t, pid_t tid, int status)
{
	struct tracer_thread *th;
	int sig, event;

	th = tracer_lookup(t, tid, NULL);
	if (WIFEXITED(status) || WIFSIGNALED(status)) {
		/* not a thread of ours: a child of cprof's own (the parser),
		 * reaped by the drain's waitpid(-1); its owner wants how it ended */
		if (!th && tid != t->pid)
			cprof_reaped_note(tid, status);
		if (tid == t->pid) {
			t->stats.leader_exited = true;
			t->stats.leader_status = status;
		}
		tracer_forget_tid(t, tid);
		return;
	}
	if (!WIFSTOPPED(status))
		return;
	if (!th && !(th = adopt_unknown(t, tid)))
		return;
	sig = WSTOPSIG(status);
	event = status >> 16;

	switch (event) {
	case PTRACE_EVENT_STOP:
		event_stop(t, th, tid, sig);
		return;
	case PTRACE_EVENT_CLONE:
	case PTRACE_EVENT_FORK:
	case PTRACE_EVENT_VFORK:
		event_new_task(t, th, event);
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
		tracer_resume(t, tid, 0);
		return;
	case 0:
		/* Signal-delivery-stop: hand the signal back untouched.  Our
		 * interrupt, if any, still follows as its own stop, after the
		 * kernel has set up the signal's handler. */
		t->stats.signals_reinjected++;
		th->last_signal = sig;
		tracer_resume(t, tid, sig);
		th->signal_ns = cprof_now_ns();
		tracer_account_signal(t);
		return;
	default:
		tracer_resume(t, tid, 0);
		return;
	}
}
