/* SPDX-License-Identifier: MIT */
/*
 * A thread's registers and the top of its stack, copied while it is stopped
 * so that it can be resumed at once and unwound afterwards (perf's and
 * tbstack's approach).
 */
#ifndef CPROF_UNWIND_SNAPSHOT_H
#define CPROF_UNWIND_SNAPSHOT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/types.h>
#include <sys/user.h>

#include "process/maps.h"
#include "python/python.h"

/* The kernel frames a snapshot holds at most (perf source): deeper
 * kernel stacks are rare, and the ring's records stay small. */
#define SNAP_KERNEL_MAX 64
/* The user frames of the kernel's frame-pointer walk a snapshot holds at
 * most (perf source, Go programs: see unwind/go_chain.h); with the kernel
 * frames, within the kernel's default perf_event_max_stack (127). */
#define SNAP_USER_MAX 63

/* Where a register sits in ptrace's struct user_regs_struct: tables of
 * these say where each word of another layout goes (snap_regs_from). */
#define SNAP_REG(field) offsetof(struct user_regs_struct, field)

/*
 * Fills r from words[0..n) of another layout (a perf sample's, a signal
 * frame's): word i is the register at SNAP_REG offset where[i]; registers
 * no word names are 0.
 */
void snap_regs_from(struct user_regs_struct *r, const uint64_t *words, const uint8_t *where,
		    size_t n);

struct snap {
	pid_t tid;
	struct user_regs_struct regs;
	uint64_t stack_start;	/* target address of stack[0] (the SP) */
	size_t stack_len;	/* bytes copied */
	size_t stack_cap;	/* bytes allocated in stack */
	bool stack_short;	/* the copy stopped before the end of the stack mapping */
	bool stack_limited;	/* ... because the caller asked for less (snap_capture_limited) */
	bool sp_unmapped;	/* SP is in no mapping that maps knew of: maps are stale */
	bool regs_partial;	/* only SP and PC are known (captured without a stop) */
	/* The copy: stack_cap bytes of the snapshot's own, or a view of
	 * memory the caller keeps for it (snap_view); then own is the
	 * snapshot's buffer. */
	uint8_t *stack;
	uint8_t *own;
	/* The stack a signal handler interrupted, when the thread stopped at
	 * the handler's entry on an alternate stack (unwind/sigframe.h). */
	uint64_t stack2_start;
	size_t stack2_len;	/* 0: none */
	uint8_t *stack2;	/* stack_cap bytes, allocated on first need */
	uint64_t cpu_ns;	/* CPU time the thread used since its previous sample */
	uint32_t key;		/* the caller's tag (the sampler's thread label) */
	bool own_maps;		/* the caller's: maps were read at this stop */
	bool unstopped;		/* the caller's: copied without a stop (the kernel's) */
	/* The caller's: maps of its own to unwind this copy against (perf
	 * samples in a library mapped for a moment), or NULL. */
	struct proc_maps *maps;
	/* The kernel's part of the sample's call chain, leaf first (the
	 * instruction it was at, then return addresses), when it was taken in
	 * the kernel and kernel frames were asked for (perf source only: at a
	 * stop there is no kernel stack to read); n_kernel 0: none. */
	size_t n_kernel;
	uint64_t kernel[SNAP_KERNEL_MAX];
	/* The caller's: the thread's Python frames, read while it could not
	 * change them (unwind/python_sample.h); n_threads 0: none. */
	struct py_stacks py;
	/* The kernel's frame-pointer walk of the user stack at the sample,
	 * leaf first (the pc, then the return addresses it read from each
	 * frame record from %rbp on), when it was asked for (perf source, Go
	 * programs); n_user 0: none. */
	size_t n_user;
	uint64_t user[SNAP_USER_MAX];
};

/* Allocates a snapshot able to hold cap bytes of stack.  Returns 0 or -ENOMEM. */
int snap_init(struct snap *s, size_t cap);
void snap_fini(struct snap *s);

/*
 * Makes s's copy the bytes at view, nothing copied: the caller keeps them
 * mapped and unchanged until the copy is unwound, or calls snap_keep
 * first (a perf sample read in its ring).  The bytes are only read.
 */
static inline void snap_view(struct snap *s, const uint8_t *view)
{
	if (!s->own)
		s->own = s->stack;
	s->stack = (uint8_t *)(uintptr_t)view;
}

/* Whether s's copy is a view (snap_view). */
static inline bool snap_viewing(const struct snap *s)
{
	return s->own != NULL;
}

/* s's copy in its own buffer again: a view's bytes copied there (snap_keep)
 * or dropped (snap_unview, before the buffer is written). */
void snap_keep(struct snap *s);
void snap_unview(struct snap *s);

/*
 * Copies the registers (regs, as the tracer read them at the stop) and the
 * stack of tid (of process pid), which must be ptrace-stopped by the caller.  The copy runs from SP to the end of the
 * mapping that maps says holds SP, capped by the capacity; when maps does not
 * know SP, up to the capacity, accepting a short read, and sp_unmapped is set.
 * Returns 0 or -errno (the registers could not be read).  An unreadable
 * stack is not an error: stack_len is then 0.
 */
int snap_capture(struct snap *s, pid_t pid, pid_t tid, const struct user_regs_struct *regs,
		 const struct proc_maps *maps);

/*
 * The same, copying at most limit bytes of stack from SP (0: no limit
 * beyond the capacity and the mapping).  stack_limited says whether the
 * limit cut the copy: a walk that runs off its end then lost frames the
 * full copy would have had.  The caller chooses limit from what earlier
 * walks of the thread needed (see doc/unwinding.md, the adaptive copy).
 */
int snap_capture_limited(struct snap *s, pid_t pid, pid_t tid,
			 const struct user_regs_struct *regs, const struct proc_maps *maps,
			 size_t limit);

/*
 * The same for a thread that is blocked and NOT stopped: sp and pc come from
 * /proc/PID/task/TID/syscall, the other registers are unknown
 * (regs_partial).  The caller must check afterwards that the thread did not
 * run during the copy (procfs_read_sched).  Returns 0 or -errno.
 */
int snap_capture_blocked(struct snap *s, pid_t pid, pid_t tid, uint64_t sp, uint64_t pc,
			 const struct proc_maps *maps);

/*
 * Reads a thread that is blocked in a system call, without stopping it:
 * its SP and PC from /proc/PID/task/TID/syscall (syscall_fd, open on that
 * file), then its stack as snap_capture_blocked does.  *nr (may be NULL)
 * gets the system call number.  Returns 0; -EAGAIN when the thread is
 * running or not in a system call (it must be stopped to be read); or
 * -errno.  The caller re-reads schedstat afterwards (procfs_sched_same)
 * to know that the copy is of one instant.
 */
int snap_capture_in_place(struct snap *s, pid_t pid, pid_t tid, int syscall_fd,
			  const struct proc_maps *maps, long *nr);

/* The 8-byte word at target address addr, if the copy holds it. */
static inline bool snap_word(const struct snap *s, uint64_t addr, uint64_t *v)
{
	if (addr < s->stack_start || addr + 8 > s->stack_start + s->stack_len)
		return false;
	memcpy(v, s->stack + (addr - s->stack_start), 8);
	return true;
}

/* The stack pointer and program counter of a snapshot. */
static inline uint64_t snap_sp(const struct snap *s)
{
	return s->regs.rsp;
}

static inline uint64_t snap_pc(const struct snap *s)
{
	return s->regs.rip;
}

#endif
