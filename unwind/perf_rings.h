/* SPDX-License-Identifier: MIT */
/*
 * The rings the kernel writes perf samples into: one per CPU, shared by
 * every thread's event on that CPU (PERF_EVENT_IOC_SET_OUTPUT joins only
 * events of one CPU), so their memory grows with the CPUs, not with the
 * threads, as perf record -p lays them out.  Each ring follows
 * perf_event_open(2): a metadata page, then 2^n data pages the kernel
 * writes records into at data_head while the reader frees them by moving
 * data_tail.  A sample names its event (PERF_SAMPLE_IDENTIFIER), which
 * names its thread (unwind/perf_thread.h).
 */
#ifndef CPROF_UNWIND_PERF_RINGS_H
#define CPROF_UNWIND_PERF_RINGS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "process/maps.h"
#include "unwind/snapshot.h"

struct perf_rings;
struct perf_thread;

/* perf_rings_open's flags. */
enum {
	/* Samples taken in the kernel carry the kernel's part of the call
	 * chain too (snap.kernel), where perf_event_paranoid permits samples
	 * in the kernel; otherwise the flag is ignored. */
	PERF_RINGS_KERNEL = 1 << 0,
};

/*
 * A ring of ring_bytes (a power of two, in pages) for each CPU, each
 * owned by an event that never samples.  Where the kernel's budget of
 * locked memory (perf_event_mlock_kb, then RLIMIT_MEMLOCK) refuses that,
 * the rings are halved, down to min_bytes.  Returns 0 or -errno: -EPERM
 * (the budget is used up), -EACCES (not permitted), -ENOSYS, -EMFILE,
 * -ENOMEM.
 */
int perf_rings_open(struct perf_rings **out, size_t ring_bytes, size_t min_bytes, unsigned flags);
/* Unmaps the rings: no snapshot may view them any more (perf_rings_holds). */
void perf_rings_close(struct perf_rings *r);

/* The rings, their CPUs and owners' descriptors, and one's data bytes.
 * An owner's descriptor polls readable (POLLIN, once) each time half its
 * ring was written since the last time: a reader that sleeps until then
 * (or a bound of its own) finds the other half free. */
unsigned perf_rings_count(const struct perf_rings *r);
int perf_rings_cpu(const struct perf_rings *r, unsigned i);
int perf_rings_fd(const struct perf_rings *r, unsigned i);
size_t perf_rings_size(const struct perf_rings *r);
/* Whether samples carry the kernel's call chain. */
bool perf_rings_callchain(const struct perf_rings *r);

/* Event id (PERF_EVENT_IOC_ID) is pt's event slot from now on; forgotten
 * with all of pt's.  Returns 0 or -ENOMEM. */
int perf_rings_add(struct perf_rings *r, uint64_t id, struct perf_thread *pt, unsigned slot);
void perf_rings_forget(struct perf_rings *r, const struct perf_thread *pt);

/* Whether ring i holds a record. */
bool perf_rings_pending(const struct perf_rings *r, unsigned i);

/*
 * Takes the oldest record out of ring i.  A sample goes into sn: tid (the
 * thread it was taken in, which an inherited event's owner is not; its
 * process: perf_rings_sample_pid), registers (every general register; fs_base and orig_rax are not
 * carried), the stack copy from SP (stack_limited when the copy filled
 * its size: the stack may go on beyond it) and, in sn->cpu_ns, the count
 * of the event (in the thread) that took it, for perf_thread_sampled;
 * with PERF_RINGS_KERNEL, in sn->kernel the kernel frames of a sample
 * taken in the kernel; *owner the thread whose event it names and *slot
 * the event's.  sn's capacity must hold owner's stack_size bytes.
 * Returns 1 (a sample); 2 when the record is a rename instead
 * (perf_rings_comm tells it; sn is untouched); 3 when it is an executable
 * file mapping a thread made (perf_rings_mapping); 4, 5 and 6 when it is
 * a thread's birth, exit or exec (perf_rings_task; an exec is a rename
 * too); 0 when the ring is
 * empty; or -EIO (a record the kernel did not write as documented: the
 * ring is skipped to its end).  Samples of events no longer known are
 * skipped.  With view, the stack copy is left in the ring where it can be
 * (snap_view): the record is then the caller's, and the kernel writes no
 * sample over it, until perf_rings_release.
 */
int perf_rings_next(struct perf_rings *r, unsigned i, struct snap *sn, bool view,
		    struct perf_thread **owner, unsigned *slot);

/* The process of the sample perf_rings_next returned 1 for. */
pid_t perf_rings_sample_pid(const struct perf_rings *r);
/* The thread and process of the birth, exit or exec perf_rings_next
 * returned 4, 5 or 6 for. */
void perf_rings_task(const struct perf_rings *r, pid_t *pid, pid_t *tid);
/* After a birth (4): the thread that started it. */
pid_t perf_rings_task_parent(const struct perf_rings *r);

/* Gives the kernel back the records perf_rings_next left viewed: the
 * snapshots that view them must be unwound or kept (snap_keep) first. */
void perf_rings_release(struct perf_rings *r);

/* Whether p points into one of the rings (a snapshot's view of it). */
bool perf_rings_holds(const struct perf_rings *r, const void *p);

/* The rename perf_rings_next returned 2 for: the thread and its new
 * name. */
const char *perf_rings_comm(const struct perf_rings *r, pid_t *tid);

/* The mapping perf_rings_next returned 3 for, and its process: valid
 * until the next call. */
const struct proc_map *perf_rings_mapping(const struct perf_rings *r, pid_t *pid);

/* The samples the kernel dropped because a ring was full, so far, and
 * the times its throttling withheld samples (PERF_RECORD_THROTTLE). */
uint64_t perf_rings_lost(const struct perf_rings *r);
uint64_t perf_rings_throttled(const struct perf_rings *r);

#endif
