/* SPDX-License-Identifier: MIT */
/*
 * Linux x86_64 signal frames.  A handler runs on top of an rt_sigframe: its
 * return address is the restorer (mov $15,%rax; syscall), and above it the
 * ucontext holds every register of the code the signal interrupted.  Go
 * installs its handler with SA_ONSTACK and a restorer without CFI, so
 * libunwind cannot step through it, and the interrupted goroutine's stack is
 * elsewhere than the signal stack that was copied.  Two parts here:
 *  - at capture time (thread stopped), a sample taken at a handler's first
 *    instruction on an alternate stack gets the interrupted stack copied too
 *    (snap.stack2): a thread interrupted by cprof while a signal is being
 *    delivered stops exactly there;
 *  - at unwind time, the registers of the interrupted code, read from the
 *    ucontext, so the walk goes on from them.
 * A sample the tracer knows was stopped at a handler's entry because a
 * signal came between its interrupt and its stop is instead made a capture
 * of the interrupted code (sigframe_leave_handler): the CPU time it stands
 * for was used there, not in a handler that has not run yet.
 * The same second region serves Go's calls into the vdso (time.now,
 * runtime.nanotime1), made on the g0 stack with the goroutine's SP in %r12.
 */
#ifndef CPROF_UNWIND_SIGFRAME_H
#define CPROF_UNWIND_SIGFRAME_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/user.h>

#include "process/maps.h"

struct snap;

/*
 * When s (just captured, thread still stopped) is at the entry of a signal
 * handler running on an alternate stack, copies the stack the signal
 * interrupted into s->stack2 (up to s->stack_cap bytes).  Only words of the
 * copy already made are inspected; one process_vm_readv when the frame is
 * there.  Returns 0 or -errno (-ENOMEM); nothing found is not an error.
 */
int sigframe_capture(struct snap *s, pid_t pid, const struct proc_maps *maps);

/*
 * When s (just captured, thread still stopped) is in the vdso with %r12
 * pointing into another writable stack region than the one copied (Go's
 * time.now and runtime.nanotime1 call the vdso on the g0 stack and keep the
 * goroutine's SP there), copies that region into s->stack2, unless it holds
 * something already.  One lookup in maps per call; one process_vm_readv
 * when the case is there.  Returns 0 or -ENOMEM.
 */
int sigframe_capture_vdso_caller(struct snap *s, pid_t pid, const struct proc_maps *maps);

/*
 * When s (just captured, thread still stopped) is at the first instruction
 * of the handler of signal sig, on the frame the kernel built for it, makes
 * s the capture of the code the signal interrupted: the registers saved in
 * the frame's ucontext, and the stack from their SP (the part of the copy
 * above it; on an alternate signal stack, the interrupted stack that
 * sigframe_capture copied).  The kernel builds the frame below the
 * interrupted SP, so what lies above it is as the interrupted code left it.
 * At such an entry the kernel has set %rdi to the signal, %rax to 0, %rsi
 * and %rdx to the frame's siginfo and ucontext, and [%rsp] is the
 * restorer: all are checked, and the restorer's code read (one
 * process_vm_readv).  Signals delivered one after another before the
 * thread ran again stack their frames: the entries of the handlers below
 * are left the same way.  Returns true when s was changed; s is left as it
 * was otherwise.
 */
bool sigframe_leave_handler(struct snap *s, pid_t pid, int sig, const struct proc_maps *maps);

/* Bytes of code at a restorer: mov $15 (rt_sigreturn),%rax; syscall. */
#define SIGFRAME_RESTORER_LEN 9
bool sigframe_is_restorer_code(const uint8_t code[SIGFRAME_RESTORER_LEN]);

/* Offset of the interrupted registers (uc_mcontext.gregs) from the
 * ucontext, and how many words of them are read. */
#define SIGFRAME_GREGS_OFFSET 40
#define SIGFRAME_GREGS 17
/* Size of the kernel's ucontext: the siginfo follows it in the frame. */
#define SIGFRAME_UCONTEXT_SIZE 304

/* Fills regs from the gregs words read at ucontext + SIGFRAME_GREGS_OFFSET. */
void sigframe_regs(const uint64_t gregs[SIGFRAME_GREGS], struct user_regs_struct *regs);

#endif
