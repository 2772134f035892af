/* SPDX-License-Identifier: MIT */
/* Following a Linux x86_64 rt_sigframe to the code it interrupted. */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "process/memory.h"
#include "unwind/sigframe.h"
#include "unwind/snapshot.h"

/* uc_mcontext.gregs indices (<sys/ucontext.h> REG_*), spelled out so that
 * this file does not depend on _GNU_SOURCE. */
enum {
	G_R8, G_R9, G_R10, G_R11, G_R12, G_R13, G_R14, G_R15, G_RDI, G_RSI, G_RBP, G_RBX,
	G_RDX, G_RAX, G_RCX, G_RSP, G_RIP,
};

/* ucontext: uc_flags, uc_link, then uc_stack { ss_sp, ss_flags, ss_size }. */
#define UC_SS_SP 16
#define UC_SS_SIZE 32
/* Signal numbers are 1..SIGFRAME_NSIG. */
#define SIGFRAME_NSIG 64
/* Nested handler entries followed at most (see sigframe_leave_handler). */
#define SIGFRAME_MAX_NESTED 8

bool sigframe_is_restorer_code(const uint8_t code[SIGFRAME_RESTORER_LEN])
{
	static const uint8_t restorer[SIGFRAME_RESTORER_LEN] = {
		0x48, 0xc7, 0xc0, 0x0f, 0x00, 0x00, 0x00,	/* mov $15,%rax */
		0x0f, 0x05,					/* syscall */
	};

	return !memcmp(code, restorer, sizeof(restorer));
}

/* Where ptrace has each gregs word, in the G_* order. */
static const uint8_t gregs_at[SIGFRAME_GREGS] = {
	SNAP_REG(r8), SNAP_REG(r9), SNAP_REG(r10), SNAP_REG(r11), SNAP_REG(r12), SNAP_REG(r13),
	SNAP_REG(r14), SNAP_REG(r15), SNAP_REG(rdi), SNAP_REG(rsi), SNAP_REG(rbp), SNAP_REG(rbx),
	SNAP_REG(rdx), SNAP_REG(rax), SNAP_REG(rcx), SNAP_REG(rsp), SNAP_REG(rip),
};

void sigframe_regs(const uint64_t g[SIGFRAME_GREGS], struct user_regs_struct *r)
{
	snap_regs_from(r, g, gregs_at, SIGFRAME_GREGS);
}

static uint64_t word(const struct snap *s, size_t off)
{
	uint64_t v;

	memcpy(&v, s->stack + off, 8);
	return v;
}

/* Copies [sp, end of its mapping) into s->stack2, up to stack_cap bytes. */
static int copy_second(struct snap *s, pid_t pid, const struct proc_map *stack, uint64_t sp)
{
	size_t want;
	ssize_t n;

	if (!s->stack2) {
		s->stack2 = malloc(s->stack_cap);
		if (!s->stack2)
			return -ENOMEM;
	}
	want = s->stack_cap;
	if (stack->end - sp < want)
		want = (size_t)(stack->end - sp);
	n = proc_mem_read(pid, sp, s->stack2, want);
	if (n > 0) {
		s->stack2_start = sp;
		s->stack2_len = (size_t)n;
	}
	return 0;
}

int sigframe_capture_vdso_caller(struct snap *s, pid_t pid, const struct proc_maps *maps)
{
	const struct proc_map *code, *stack;
	uint64_t sp = s->regs.r12;

	if (s->regs_partial || s->stack2_len || !sp ||
	    (sp >= s->stack_start && sp < s->stack_start + s->stack_len))
		return 0;
	code = proc_maps_find(maps, s->regs.rip);
	if (!code || !code->path || strcmp(code->path, "[vdso]"))
		return 0;
	stack = proc_maps_find(maps, sp);
	if (!stack || (stack->perms & (PROC_MAP_R | PROC_MAP_W | PROC_MAP_X)) !=
			      (PROC_MAP_R | PROC_MAP_W))
		return 0;
	return copy_second(s, pid, stack, sp);
}

int sigframe_capture(struct snap *s, pid_t pid, const struct proc_maps *maps)
{
	const size_t uc = 8;	/* the handler's return address comes first */
	const struct proc_map *code, *stack;
	uint64_t ss_sp, ss_size, sp, ip;

	s->stack2_len = 0;
	if (s->regs_partial || s->stack_len < uc + SIGFRAME_GREGS_OFFSET + SIGFRAME_GREGS * 8)
		return 0;
	/* The frame describes the alternate stack it lies on, and the
	 * interrupted context is executable code on another stack: data that
	 * happens to look like this does not also hold the current SP. */
	ss_sp = word(s, uc + UC_SS_SP);
	ss_size = word(s, uc + UC_SS_SIZE);
	if (ss_size < 2048 || ss_size > (64u << 20) || s->stack_start < ss_sp ||
	    s->stack_start >= ss_sp + ss_size)
		return 0;
	sp = word(s, uc + SIGFRAME_GREGS_OFFSET + 8 * G_RSP);
	ip = word(s, uc + SIGFRAME_GREGS_OFFSET + 8 * G_RIP);
	if ((sp >= ss_sp && sp < ss_sp + ss_size) || !sp)
		return 0;
	code = proc_maps_find(maps, ip);
	stack = proc_maps_find(maps, sp);
	if (!code || !(code->perms & PROC_MAP_X) || !stack || (stack->perms & PROC_MAP_X))
		return 0;
	return copy_second(s, pid, stack, sp);
}

/* Whether the code at addr in process pid is a restorer. */
static bool restorer_at(pid_t pid, uint64_t addr)
{
	uint8_t code[SIGFRAME_RESTORER_LEN];

	return proc_mem_read_all(pid, addr, code, sizeof(code)) == 0 &&
	       sigframe_is_restorer_code(code);
}

/* s's second copy becomes its first (and the other way round): the copy
 * of the stack that holds the new SP. */
static void swap_copies(struct snap *s, const struct proc_maps *maps)
{
	const struct proc_map *m = proc_maps_find(maps, s->stack2_start);
	uint8_t *buf = s->stack;
	uint64_t start = s->stack_start;
	size_t len = s->stack_len;

	s->stack = s->stack2;
	s->stack_start = s->stack2_start;
	s->stack_len = s->stack2_len;
	s->stack2 = buf;
	s->stack2_start = start;
	s->stack2_len = len;
	s->sp_unmapped = !m;
	s->stack_short = m && m->end - s->stack_start > s->stack_len;
	s->stack_limited = false;	/* copy_second copies all it may */
}

/*
 * One level of sigframe_leave_handler: s at the entry of the handler of
 * signal sig (0: of any signal) becomes the capture of the code that signal
 * interrupted.  Returns false, s unchanged, when it is not at such an entry
 * or the interrupted stack cannot be copied.
 */
static bool leave_one(struct snap *s, pid_t pid, int sig, const struct proc_maps *maps)
{
	const size_t uc = 8;	/* the restorer's address comes first */
	const struct proc_map *m;
	struct user_regs_struct r;
	uint64_t gregs[SIGFRAME_GREGS], sp = s->regs.rsp;

	/* The siginfo is written only for SA_SIGINFO handlers: not checked. */
	if (s->regs_partial || s->stack_start != sp ||
	    s->stack_len < uc + SIGFRAME_GREGS_OFFSET + sizeof(gregs))
		return false;
	if ((sig ? s->regs.rdi != (unsigned long long)sig : s->regs.rdi - 1 >= SIGFRAME_NSIG) ||
	    s->regs.rdx != sp + uc || s->regs.rsi != sp + uc + SIGFRAME_UCONTEXT_SIZE ||
	    s->regs.rax != 0 || !restorer_at(pid, word(s, 0)))
		return false;
	memcpy(gregs, s->stack + uc + SIGFRAME_GREGS_OFFSET, sizeof(gregs));
	sigframe_regs(gregs, &r);
	if (!r.rsp || !r.rip)
		return false;
	if (r.rsp >= s->stack_start && r.rsp < s->stack_start + s->stack_len) {
		size_t skip = (size_t)(r.rsp - s->stack_start);

		memmove(s->stack, s->stack + skip, s->stack_len - skip);
		s->stack_start = r.rsp;
		s->stack_len -= skip;
	} else {
		/* On an alternate signal stack: the interrupted stack is
		 * elsewhere, copied already by sigframe_capture, or now. */
		if (!s->stack2_len || s->stack2_start != r.rsp) {
			m = proc_maps_find(maps, r.rsp);
			if (!m || (m->perms & (PROC_MAP_W | PROC_MAP_X)) != PROC_MAP_W ||
			    copy_second(s, pid, m, r.rsp) < 0 || !s->stack2_len ||
			    s->stack2_start != r.rsp)
				return false;
		}
		swap_copies(s, maps);
	}
	/* The segment and base registers are the thread's, not the frame's. */
	r.fs_base = s->regs.fs_base;
	r.gs_base = s->regs.gs_base;
	r.cs = s->regs.cs;
	r.ss = s->regs.ss;
	r.ds = s->regs.ds;
	r.es = s->regs.es;
	r.fs = s->regs.fs;
	r.gs = s->regs.gs;
	r.eflags = s->regs.eflags;
	r.orig_rax = (unsigned long long)-1;
	s->regs = r;
	return true;
}

bool sigframe_leave_handler(struct snap *s, pid_t pid, int sig, const struct proc_maps *maps)
{
	int depth;

	if (sig <= 0 || !leave_one(s, pid, sig, maps))
		return false;
	/* Signals delivered one after another before the thread ran again
	 * stack their frames: the code the last one interrupted may be the
	 * entry of the handler of the one before. */
	for (depth = 1; depth < SIGFRAME_MAX_NESTED && leave_one(s, pid, 0, maps); depth++)
		;
	if (!s->stack2_len)
		sigframe_capture_vdso_caller(s, pid, maps);
	return true;
}
