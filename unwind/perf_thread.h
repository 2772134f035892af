/* SPDX-License-Identifier: MIT */
/*
 * One thread sampled by the kernel instead of by stops: task-clock perf
 * events on the thread (perf_event_open(2)), one per CPU, whose samples
 * carry the user registers and the top of the user stack, copied by the
 * kernel at the timer interrupt into that CPU's ring (unwind/perf_rings.h),
 * which cprof reads when it likes.  The thread is never stopped, so a
 * sample costs it the copy alone, and costs cprof no ptrace request, no
 * wait and no wake-up (perf record's approach, and its layout: an event
 * per thread per CPU, each CPU's events writing into one ring, so that the
 * rings' memory does not grow with the threads).  cpu mode only: the
 * clock runs while the thread does.
 */
#ifndef CPROF_UNWIND_PERF_THREAD_H
#define CPROF_UNWIND_PERF_THREAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "unwind/snapshot.h"

struct perf_thread;
struct perf_rings;

/* The kernel's limit on the stack bytes a sample carries (a u16 size,
 * rounded down to 8). */
#define PERF_THREAD_STACK_MAX 65528u

/*
 * Starts sampling tid every period_ns of its CPU time, each sample
 * carrying stack_size bytes of stack (8..PERF_THREAD_STACK_MAX, a multiple
 * of 8) into the ring of the CPU it ran on.  Samples taken in the kernel
 * (a system call) carry the user registers and stack at its entry; where
 * perf_event_paranoid forbids that, they are not taken, and their CPU
 * time goes to the thread's next sample.  With user_chain, samples carry
 * the kernel's frame-pointer walk of the user stack too (snap.user): Go
 * code keeps frame pointers, and the walk follows them where the stack
 * copy ends (a switch to the g0 stack: unwind/go_chain.c).  Returns 0, or
 * -errno: -ENOENT/-ESRCH (the thread is gone), -EACCES/-EPERM (not
 * permitted), -EMFILE (a descriptor per CPU), -ENOMEM.
 */
int perf_thread_open(struct perf_thread **out, struct perf_rings *rings, pid_t tid,
		     uint64_t period_ns, size_t stack_size, bool user_chain, unsigned follow);

/* perf_thread_open's follow. */
enum {
	/* The threads tid starts (and theirs) get events of their own (see
	 * below). */
	PERF_THREAD_INHERIT = 1 << 0,
	/* With PERF_THREAD_INHERIT: the processes they start too (fork,
	 * clone without CLONE_THREAD), as perf record follows a command's
	 * tree; the rings tell of a new process as of a new thread. */
	PERF_THREAD_PROCESSES = 1 << 1,
	/* The events count from tid's next exec on (enable_on_exec): a
	 * command started by cprof, waiting to exec, is sampled from its
	 * first instruction and not before. */
	PERF_THREAD_ON_EXEC = 1 << 2,
};

/*
 * With PERF_THREAD_INHERIT, the threads tid starts (and theirs) get
 * events of their own, in the same rings, whose samples name tid's event
 * (the first ancestor's): the threads are followed without a stop, as
 * perf record -p follows them, and the rings carry their births and
 * exits (perf_rings_next returns 4 and 5) and execs.  Closing or
 * disabling tid's events would end its descendants' too:
 * perf_thread_retire stops its own sampling alone, and it stays open
 * until they are done.  A kernel that cannot read an inherited event's
 * count in its samples (before Linux 6.12) refuses inherit with -EINVAL.
 *
 * perf_thread_inherited: the record of such a thread, born with
 * inherited events: no event of its own (its samples name its ancestor's
 * event), its CPU time accounted from the counts its samples carry; with
 * from (may be NULL) the stack size and frame-pointer walk its samples
 * carry are from's, otherwise stack_size and user_chain.  Returns 0 or
 * -ENOMEM.
 */
int perf_thread_inherited(struct perf_thread **out, struct perf_rings *rings, pid_t tid,
			  const struct perf_thread *from, size_t stack_size, bool user_chain);
bool perf_thread_is_inherited(const struct perf_thread *pt);
/* tid samples no more (its events stay open for its descendants'). */
void perf_thread_retire(struct perf_thread *pt);
/* Closes its events: their records still in the rings are skipped. */
void perf_thread_close(struct perf_thread *pt);

/* The bytes of ring a sample of stack_size bytes of stack takes, at most
 * (with the user frame-pointer walk or without). */
size_t perf_thread_record_size(size_t stack_size);

/* The thread, and the stack bytes a sample asks for (stack_size). */
pid_t perf_thread_tid(const struct perf_thread *pt);
size_t perf_thread_stack_size(const struct perf_thread *pt);
/* Whether its samples carry the user frame-pointer walk (user_chain). */
bool perf_thread_user_chain(const struct perf_thread *pt);

/* A sample of its event slot read count (the event's CPU time): returns
 * the thread's CPU time the sample stands for, since the event's previous
 * sample (what perf_thread_carry added included), and whether the event
 * took lattice samples at its period, or this is its first sample, taken
 * at its first gap (*redraw: see perf_thread_set_period). */
uint64_t perf_thread_sampled(struct perf_thread *pt, unsigned slot, uint64_t count,
			     unsigned lattice, bool *redraw);

/* Adds ns of CPU time to what the next sample stands for: the time events
 * these replace had not sampled yet (perf_thread_unsampled). */
void perf_thread_carry(struct perf_thread *pt, uint64_t ns);

/*
 * The thread's CPU time since the last samples taken out of the rings
 * (perf_thread_sampled), read now.  Returns 0 or -errno.
 */
int perf_thread_unsampled(struct perf_thread *pt, uint64_t *ns);

/* The next gaps between samples of event slot, in ns of the thread's CPU
 * time: the caller draws them (see the sampler's period_fraction).
 * Returns 0 or -errno. */
int perf_thread_set_period(struct perf_thread *pt, unsigned slot, uint64_t period_ns);

/*
 * The descriptor of a task-clock event on tid (0: the caller) on cpu,
 * sampling as perf_thread_open's do; disabled: one that never samples,
 * the owner of a ring (perf_rings), whose descriptor polls readable
 * (POLLIN, once) each time wake_bytes more were written into its ring
 * (0: never).  *callchain (in: the kernel's call chain asked for) says
 * whether samples carry it.  Returns it or -errno.
 */
int perf_thread_event(pid_t tid, int cpu, uint64_t period_ns, size_t stack_size, bool disabled,
		      size_t wake_bytes, bool *callchain);

/*
 * Whether perf events can sample another process's threads here, with the
 * user registers and stack: 0, or the -errno perf_event_open gave for the
 * calling thread itself (the first obstacle: kernel support, seccomp,
 * perf_event_paranoid).
 */
int perf_thread_probe(void);

/* Whether events that inherit (perf_thread_open's inherit) can be
 * opened here: 0 or -errno. */
int perf_thread_probe_inherit(void);

/* Whether perf events here may sample in the kernel, and so take kernel
 * frames (root, CAP_PERFMON, or perf_event_paranoid <= 1). */
bool perf_thread_kernel_allowed(void);

#endif
