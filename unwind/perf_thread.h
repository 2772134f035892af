/* SPDX-License-Identifier: MIT */
/*
 * One thread sampled by the kernel instead of by stops: a task-clock
 * perf event on the thread (perf_event_open(2)) whose samples carry the
 * user registers and the top of the user stack, copied by the kernel at
 * the timer interrupt into a ring that cprof reads when it likes.  The
 * thread is never stopped, so a sample costs it the copy alone, and costs
 * cprof no ptrace request, no wait and no wake-up (perf record -g dwarf's
 * approach).  cpu mode only: the clock runs while the thread does.
 */
#ifndef CPROF_UNWIND_PERF_THREAD_H
#define CPROF_UNWIND_PERF_THREAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "unwind/snapshot.h"

struct perf_thread;

/* The kernel's limit on the stack bytes a sample carries (a u16 size,
 * rounded down to 8). */
#define PERF_THREAD_STACK_MAX 65528u

/* perf_thread_open's flags. */
enum {
	/* Samples taken in the kernel carry the kernel's part of the call
	 * chain too (snap.kernel), where perf_event_paranoid permits samples
	 * in the kernel; otherwise the flag is ignored. */
	PERF_THREAD_KERNEL = 1 << 0,
};

/*
 * Starts sampling tid every period_ns of its CPU time, each sample
 * carrying stack_size bytes of stack (8..PERF_THREAD_STACK_MAX, a multiple
 * of 8) into a ring of ring_bytes (a power of two, in pages).  Samples
 * taken in the kernel (a system call) carry the user registers and stack
 * at its entry; where perf_event_paranoid forbids that, they are not
 * taken, and their CPU time goes to the thread's next sample.  Returns 0,
 * or -errno: -ENOENT/-ESRCH (the thread is gone), -EACCES/-EPERM (not
 * permitted), -ENOSYS/-EOPNOTSUPP (no perf events here), -EMFILE, -ENOMEM.
 */
int perf_thread_open(struct perf_thread **out, pid_t tid, uint64_t period_ns, size_t stack_size,
		     size_t ring_bytes, unsigned flags);
void perf_thread_close(struct perf_thread *pt);

/*
 * The bytes of ring a sample of stack_size bytes of stack takes, at most.
 */
size_t perf_thread_record_size(size_t stack_size);

/*
 * Takes the oldest sample out of the ring into sn: tid, registers
 * (every general register; fs_base and orig_rax are not carried), the
 * stack copy from SP (stack_limited when the copy filled stack_size: the
 * stack may go on beyond it) and, in sn->cpu_ns, the thread's CPU time
 * since its previous sample (or since the event was opened), samples lost
 * or not taken included; with PERF_THREAD_KERNEL, in sn->kernel the
 * kernel frames of a sample taken in the kernel.  sn's capacity must hold
 * stack_size bytes.
 * Returns 1; 2 when the next record is a rename instead (perf_thread_comm
 * tells it; sn is untouched); 3 when it is an executable file mapping the
 * thread made (perf_thread_mapping); 0 when the ring is empty; or -EIO (a record
 * the kernel did not write as documented: the ring is skipped to its end).
 * With view, the stack copy is left in the ring where it can be
 * (snap_view): the record is then the caller's, and the kernel writes no
 * sample over it, until perf_thread_release.
 */
int perf_thread_next(struct perf_thread *pt, struct snap *sn, bool view);

/* Gives the kernel back the records perf_thread_next left viewed: the
 * snapshots that view them must be unwound or kept (snap_keep) first. */
void perf_thread_release(struct perf_thread *pt);

/* Whether p points into pt's ring (a snapshot's view of it). */
bool perf_thread_holds(const struct perf_thread *pt, const void *p);

/* The stack bytes a sample asks for (perf_thread_open's stack_size). */
size_t perf_thread_stack_size(const struct perf_thread *pt);

/* Adds ns of CPU time to what the next sample stands for: the time an
 * event this one replaces had not sampled yet (perf_thread_unsampled). */
void perf_thread_carry(struct perf_thread *pt, uint64_t ns);

/* The rename perf_thread_next returned 2 for: the thread (this one, or
 * one it renamed) and its new name. */
const char *perf_thread_comm(const struct perf_thread *pt, pid_t *tid);

/* The mapping perf_thread_next returned 3 for, and its process: valid
 * until the next call. */
const struct proc_map *perf_thread_mapping(const struct perf_thread *pt, pid_t *pid);

/* Whether the ring holds a record. */
bool perf_thread_pending(const struct perf_thread *pt);

/* The samples the kernel dropped because the ring was full, so far. */
uint64_t perf_thread_lost(const struct perf_thread *pt);

/* Samples the kernel's throttling withheld (PERF_RECORD_THROTTLE seen). */
uint64_t perf_thread_throttled(const struct perf_thread *pt);

/*
 * The thread's CPU time since its last sample taken out of the ring
 * (perf_thread_next), read now.  Returns 0 or -errno.
 */
int perf_thread_unsampled(struct perf_thread *pt, uint64_t *ns);

/* The next gaps between samples, in ns of the thread's CPU time: the
 * caller draws them (see the sampler's period_fraction).  Returns 0 or
 * -errno. */
int perf_thread_set_period(struct perf_thread *pt, uint64_t period_ns);

/*
 * Whether perf events can sample another process's threads here, with the
 * user registers and stack: 0, or the -errno perf_event_open gave for the
 * calling thread itself (the first obstacle: kernel support, seccomp,
 * perf_event_paranoid).
 */
int perf_thread_probe(void);

/* Whether perf events here may sample in the kernel, and so take kernel
 * frames (root, CAP_PERFMON, or perf_event_paranoid <= 1). */
bool perf_thread_kernel_allowed(void);

#endif
