/* SPDX-License-Identifier: MIT */
/*
 * A thread sampled by task-clock perf events, one per CPU, each writing
 * into its CPU's ring; see perf_thread.h.  The rings and the records in
 * them are unwind/perf_rings.c's.
 */
#include "config.h"

#include <errno.h>
#include <linux/perf_event.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "unwind/perf_rings.h"
#include "unwind/perf_thread.h"

/* x86-64's perf register numbers (asm/perf_regs.h): the mask of every
 * general register (AX..SS, R8..R15); DS, ES, FS and GS (12..15) are
 * refused on x86-64.  perf_rings.c reads them in this order. */
#define REGS_MASK (((1ull << 12) - 1) | (((1ull << 24) - 1) & ~((1ull << 16) - 1)))
#define N_REGS 20

/* One event of the thread: on one CPU, writing into that CPU's ring. */
struct perf_ev {
	int fd;
	uint64_t last_count;	/* the task clock at its last sample taken out */
	unsigned lattice;	/* samples it took at its current period */
	bool drawn;		/* its period was drawn since its first gap */
};

struct perf_thread {
	struct perf_rings *rings;
	pid_t tid;
	size_t stack_size;
	bool user_chain;	/* samples carry the user frame-pointer walk */
	uint64_t owed;		/* CPU time carried to the next sample */
	unsigned follow;	/* PERF_THREAD_*: its events pass to the threads it starts */
	bool inherited;		/* it has no events of its own: see perf_thread_inherited */
	unsigned n;		/* events: one per ring */
	struct perf_ev ev[];
};

/* -1: not known yet; 0: samples in the kernel are refused
 * (perf_event_paranoid), so kernel samples are excluded; 1: allowed. */
static int kernel_allowed = -1;

static void fill_attr(struct perf_event_attr *a, uint64_t period_ns, size_t stack_size,
		      bool exclude_kernel, bool callchain, bool user_chain, unsigned follow)
{
	memset(a, 0, sizeof(*a));
	a->size = sizeof(*a);
	a->type = PERF_TYPE_SOFTWARE;
	a->config = PERF_COUNT_SW_TASK_CLOCK;
	a->sample_period = period_ns;
	/* The event first, whose thread the sample is of: one ring holds
	 * every thread's samples on its CPU. */
	a->sample_type = PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_TID | PERF_SAMPLE_READ |
			 PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER;
	a->sample_regs_user = REGS_MASK;
	a->sample_stack_user = (uint32_t)stack_size;
	if (callchain) {
		/* The kernel part alone: the user part is the stack copy's to
		 * unwind (the kernel's walks frame pointers only). */
		a->sample_type |= PERF_SAMPLE_CALLCHAIN;
		a->exclude_callchain_user = 1;
		a->sample_max_stack = SNAP_KERNEL_MAX;
	}
	if (user_chain) {
		/* ... and the user part too (unwind/go_chain.c). */
		a->sample_type |= PERF_SAMPLE_CALLCHAIN;
		a->exclude_callchain_user = 0;
		a->exclude_callchain_kernel = !callchain;
		a->sample_max_stack = (callchain ? SNAP_KERNEL_MAX : 0) + SNAP_USER_MAX;
	}
	a->exclude_kernel = exclude_kernel;
	a->exclude_hv = 1;
	/* A rename comes in the ring, in order with the samples: a thread
	 * that names itself and exits before the ring is read keeps it. */
	a->comm = 1;
	/* So are the executable mappings the thread makes (dlopen), with
	 * what identifies their file: a library mapped and unmapped between
	 * two reads of the ring is still known for the samples taken in it. */
	a->mmap = 1;
	a->mmap2 = 1;
	if (follow & PERF_THREAD_INHERIT) {
		/* The threads it starts get events of their own, from their
		 * first instruction, writing into the same rings (perf record
		 * -p's way of following threads), and the rings tell of the
		 * births, exits and execs (comm_exec) in order with the
		 * samples.  Threads only, unless the processes they start
		 * are followed too (perf record -- cmd's way). */
		a->inherit = 1;
		a->inherit_thread = !(follow & PERF_THREAD_PROCESSES);
		a->task = 1;
		a->comm_exec = 1;
	}
	if (follow & PERF_THREAD_ON_EXEC) {
		/* Enabled by the kernel at the exec, before the exec's own
		 * comm record and the new image's mappings. */
		a->disabled = 1;
		a->enable_on_exec = 1;
	}
}

static int open_event(pid_t tid, int cpu, uint64_t period_ns, size_t stack_size,
		      bool exclude_kernel, bool callchain, bool user_chain, bool disabled,
		      size_t wake_bytes, unsigned follow)
{
	struct perf_event_attr a;
	long fd;

	fill_attr(&a, period_ns, stack_size, exclude_kernel, callchain, user_chain, follow);
	if (disabled) {
		/* A ring's owner: it never counts, so never samples, nor
		 * reports the calling thread's renames and mappings.  Its
		 * descriptor polls readable each time the threads' events
		 * wrote wake_bytes into the ring (the watermark is the
		 * ring's, whoever writes); 0: never, the reader comes on its
		 * own schedule. */
		a.disabled = 1;
		a.comm = a.mmap = a.mmap2 = 0;
		a.watermark = 1;
		a.wakeup_watermark = wake_bytes && wake_bytes < UINT32_MAX >> 1 ?
				     (uint32_t)wake_bytes : UINT32_MAX >> 1;
	}
	fd = syscall(SYS_perf_event_open, &a, tid, cpu, -1, PERF_FLAG_FD_CLOEXEC);
	return fd < 0 ? -errno : (int)fd;
}

int perf_thread_event(pid_t tid, int cpu, uint64_t period_ns, size_t stack_size, bool disabled,
		      size_t wake_bytes, bool *callchain)
{
	int allowed = __atomic_load_n(&kernel_allowed, __ATOMIC_RELAXED);
	int fd;

	if (allowed != 0) {
		fd = open_event(tid, cpu, period_ns, stack_size, false, *callchain, false, disabled,
				wake_bytes, 0);
		if (fd != -EACCES && fd != -EPERM) {
			if (fd >= 0)
				__atomic_store_n(&kernel_allowed, 1, __ATOMIC_RELAXED);
			return fd;
		}
	}
	*callchain = false;
	fd = open_event(tid, cpu, period_ns, stack_size, true, false, false, disabled, wake_bytes, 0);
	if (fd >= 0)
		__atomic_store_n(&kernel_allowed, 0, __ATOMIC_RELAXED);
	return fd;
}

int perf_thread_probe(void)
{
	bool callchain = false;
	int fd = perf_thread_event(0, -1, 10000000, 64, false, 0, &callchain);

	if (fd < 0)
		return fd;
	close(fd);
	return 0;
}

int perf_thread_probe_inherit(void)
{
	int fd = open_event(0, 0, 10000000, 64, true, false, false, false, 0, PERF_THREAD_INHERIT);

	if (fd < 0)
		return fd;
	close(fd);
	return 0;
}

bool perf_thread_kernel_allowed(void)
{
	return perf_thread_probe() == 0 &&
	       __atomic_load_n(&kernel_allowed, __ATOMIC_RELAXED) == 1;
}

size_t perf_thread_record_size(size_t stack_size)
{
	/* header, id, pid/tid, read value, call chain (its length, a context
	 * marker and the frames of each part), abi, registers, size, stack,
	 * dyn_size */
	return 8 + 8 + 8 + 8 + 8 * (3 + SNAP_KERNEL_MAX + SNAP_USER_MAX) + 8 + 8 * N_REGS + 8 +
	       stack_size + 8;
}

/* Opens pt's event on ring i's CPU, writing into that ring.  Returns 0 or
 * -errno. */
static int open_slot(struct perf_thread *pt, unsigned i, uint64_t period_ns)
{
	bool callchain = perf_rings_callchain(pt->rings);
	uint64_t id;
	int fd;

	fd = open_event(pt->tid, perf_rings_cpu(pt->rings, i), period_ns, pt->stack_size,
			__atomic_load_n(&kernel_allowed, __ATOMIC_RELAXED) == 0, callchain,
			pt->user_chain, false, 0, pt->follow);
	if (fd < 0)
		return fd;
	pt->ev[i].fd = fd;
	if (ioctl(fd, PERF_EVENT_IOC_SET_OUTPUT, perf_rings_fd(pt->rings, i)) < 0 ||
	    ioctl(fd, PERF_EVENT_IOC_ID, &id) < 0)
		return -errno;
	return perf_rings_add(pt->rings, id, pt, i);
}

/* A thread's record, no event open yet.  NULL: out of memory. */
static struct perf_thread *thread_new(struct perf_rings *rings, pid_t tid, size_t stack_size,
				      bool user_chain)
{
	unsigned i, n = perf_rings_count(rings);
	struct perf_thread *pt = calloc(1, sizeof(*pt) + n * sizeof(pt->ev[0]));

	if (!pt)
		return NULL;
	pt->rings = rings;
	pt->tid = tid;
	pt->stack_size = stack_size;
	pt->user_chain = user_chain;
	for (i = 0; i < n; i++)
		pt->ev[i].fd = -1;
	pt->n = n;
	return pt;
}

int perf_thread_inherited(struct perf_thread **out, struct perf_rings *rings, pid_t tid,
			  const struct perf_thread *from, size_t stack_size, bool user_chain)
{
	struct perf_thread *pt = thread_new(rings, tid, from ? from->stack_size : stack_size,
					    from ? from->user_chain : user_chain);

	if (!pt)
		return -ENOMEM;
	pt->inherited = true;
	*out = pt;
	return 0;
}

bool perf_thread_is_inherited(const struct perf_thread *pt)
{
	return pt->inherited;
}

void perf_thread_retire(struct perf_thread *pt)
{
	/* Its period alone: PERF_EVENT_IOC_PERIOD changes the event it is
	 * given, not the ones its threads inherited, as closing or
	 * disabling it would. */
	uint64_t never = 1ull << 62;
	unsigned i;

	for (i = 0; i < pt->n; i++) {
		if (pt->ev[i].fd >= 0)
			ioctl(pt->ev[i].fd, PERF_EVENT_IOC_PERIOD, &never);
	}
}

int perf_thread_open(struct perf_thread **out, struct perf_rings *rings, pid_t tid,
		     uint64_t period_ns, size_t stack_size, bool user_chain, unsigned follow)
{
	unsigned i, n = perf_rings_count(rings);
	struct perf_thread *pt;
	int r = 0;

	if (!stack_size || stack_size > PERF_THREAD_STACK_MAX || stack_size % 8)
		return -EINVAL;
	pt = thread_new(rings, tid, stack_size, user_chain);
	if (!pt)
		return -ENOMEM;
	pt->follow = follow;
	for (i = 0; i < n && r == 0; i++)
		r = open_slot(pt, i, period_ns);
	if (r < 0) {
		perf_thread_close(pt);
		return r;
	}
	*out = pt;
	return 0;
}

void perf_thread_close(struct perf_thread *pt)
{
	unsigned i;

	if (!pt)
		return;
	perf_rings_forget(pt->rings, pt);
	for (i = 0; i < pt->n; i++) {
		if (pt->ev[i].fd >= 0)
			close(pt->ev[i].fd);
	}
	free(pt);
}

pid_t perf_thread_tid(const struct perf_thread *pt)
{
	return pt->tid;
}

size_t perf_thread_stack_size(const struct perf_thread *pt)
{
	return pt->stack_size;
}

bool perf_thread_user_chain(const struct perf_thread *pt)
{
	return pt->user_chain;
}

uint64_t perf_thread_sampled(struct perf_thread *pt, unsigned slot, uint64_t count,
			     unsigned lattice, bool *redraw)
{
	struct perf_ev *e = &pt->ev[slot];
	uint64_t ns = count - e->last_count + pt->owed;

	e->last_count = count;
	pt->owed = 0;
	/* The first gap is short (a thread that lives less than a period
	 * is still sampled): drawn anew at its first sample, or a busy
	 * thread's first lattice would be sampled that much faster. */
	*redraw = ++e->lattice >= lattice || !e->drawn;
	if (*redraw) {
		e->lattice = 0;
		e->drawn = true;
	}
	return ns;
}

void perf_thread_carry(struct perf_thread *pt, uint64_t ns)
{
	pt->owed += ns;
}

int perf_thread_unsampled(struct perf_thread *pt, uint64_t *ns)
{
	uint64_t count, sum = pt->owed;
	unsigned i;
	ssize_t r;

	/* (an inherited event's count is read with its samples alone) */
	if (pt->inherited)
		return -ENOTSUP;
	for (i = 0; i < pt->n; i++) {
		r = read(pt->ev[i].fd, &count, sizeof(count));
		if (r < 0)
			return -errno;
		if (r != (ssize_t)sizeof(count))
			return -EIO;
		sum += count > pt->ev[i].last_count ? count - pt->ev[i].last_count : 0;
	}
	*ns = sum;
	return 0;
}

int perf_thread_set_period(struct perf_thread *pt, unsigned slot, uint64_t period_ns)
{
	/* An inherited event keeps the period it was born with: the ioctl
	 * reaches the event it is given alone. */
	if (pt->ev[slot].fd < 0)
		return 0;
	return ioctl(pt->ev[slot].fd, PERF_EVENT_IOC_PERIOD, &period_ns) < 0 ? -errno : 0;
}
