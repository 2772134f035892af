/* SPDX-License-Identifier: MIT */
/* Register and stack copy of a ptrace-stopped thread. */
#include "config.h"

#include <elf.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/uio.h>

#include "process/memory.h"
#include "process/procfs.h"
#include "unwind/sigframe.h"
#include "unwind/snapshot.h"

void snap_regs_from(struct user_regs_struct *r, const uint64_t *words, const uint8_t *where,
		    size_t n)
{
	size_t i;

	memset(r, 0, sizeof(*r));
	for (i = 0; i < n; i++)
		memcpy((char *)r + where[i], &words[i], sizeof(words[i]));
}

int snap_init(struct snap *s, size_t cap)
{
	memset(s, 0, sizeof(*s));
	s->stack = malloc(cap);
	if (!s->stack)
		return -ENOMEM;
	s->stack_cap = cap;
	return 0;
}

void snap_fini(struct snap *s)
{
	snap_unview(s);
	free(s->stack);
	free(s->stack2);
	s->stack = NULL;
	s->stack2 = NULL;
	s->stack2_len = 0;
	s->stack_cap = 0;
	py_stacks_free(&s->py);
}

void snap_unview(struct snap *s)
{
	if (!s->own)
		return;
	s->stack = s->own;
	s->own = NULL;
}

void snap_keep(struct snap *s)
{
	const uint8_t *view = s->stack;

	if (!s->own)
		return;
	snap_unview(s);
	memcpy(s->stack, view, s->stack_len);
}

/* One read from SP: it stops cleanly at the first unmapped page, so an
 * unknown stack end costs only a short read.
 * limit (0: none) caps the copy below the capacity and the mapping's end. */
static int copy_stack(struct snap *s, pid_t pid, const struct proc_maps *maps, size_t limit)
{
	const struct proc_map *m;
	uint64_t stack_end;
	size_t want;
	ssize_t r;

	s->stack_start = s->regs.rsp;
	m = proc_maps_find(maps, s->stack_start);
	s->sp_unmapped = !m;
	stack_end = m ? m->end : 0;

	want = s->stack_cap;
	if (stack_end > s->stack_start && stack_end - s->stack_start < want)
		want = (size_t)(stack_end - s->stack_start);
	else if (stack_end > s->stack_start)
		s->stack_short = true;
	if (limit && limit < want) {
		want = limit;
		s->stack_limited = true;
	}
	r = proc_mem_read(pid, s->stack_start, s->stack, want);
	if (r > 0)
		s->stack_len = (size_t)r;
	return r < 0 ? (int)r : 0;
}

/* Forgets the last capture: s is about to hold thread tid's. */
static void snap_reset(struct snap *s, pid_t tid, bool regs_partial)
{
	snap_unview(s);
	s->tid = tid;
	s->stack_len = 0;
	s->stack2_len = 0;
	s->stack_short = false;
	s->stack_limited = false;
	s->regs_partial = regs_partial;
	s->n_kernel = 0;
	s->n_user = 0;
}

int snap_capture_limited(struct snap *s, pid_t pid, pid_t tid,
			 const struct user_regs_struct *regs, const struct proc_maps *maps,
			 size_t limit)
{
	snap_reset(s, tid, false);
	if (!regs->rsp && !regs->rip)
		return -ESRCH;	/* the tracer could not read them: the thread died */
	s->regs = *regs;
	/* An unreadable stack still leaves the pc: not an error. */
	copy_stack(s, pid, maps, limit);
	sigframe_capture(s, pid, maps);
	sigframe_capture_vdso_caller(s, pid, maps);
	return 0;
}

int snap_capture(struct snap *s, pid_t pid, pid_t tid, const struct user_regs_struct *regs,
		 const struct proc_maps *maps)
{
	return snap_capture_limited(s, pid, tid, regs, maps, 0);
}

int snap_capture_blocked(struct snap *s, pid_t pid, pid_t tid, uint64_t sp, uint64_t pc,
			 const struct proc_maps *maps)
{
	snap_reset(s, tid, true);
	memset(&s->regs, 0, sizeof(s->regs));
	s->regs.rsp = sp;
	s->regs.rip = pc;
	return copy_stack(s, pid, maps, 0);
}

int snap_capture_in_place(struct snap *s, pid_t pid, pid_t tid, int syscall_fd,
			  const struct proc_maps *maps, long *nr)
{
	struct procfs_syscall sc;
	int ret;

	if (nr)
		*nr = -1;
	ret = procfs_read_syscall(syscall_fd, &sc);
	if (ret < 0)
		return ret;
	if (sc.running)
		return -EAGAIN;
	if (nr)
		*nr = sc.nr;
	if (sc.nr < 0)
		return -EAGAIN;
	return snap_capture_blocked(s, pid, tid, sc.sp, sc.pc, maps);
}
