/* SPDX-License-Identifier: MIT */
/*
 * Reads of a target's memory: the one place cprof copies bytes out of
 * another process's address space (stack copies, signal frames, the vdso,
 * and the code and unwind tables the unwinder reads beyond its copies).
 * Each call is one process_vm_readv, which needs no stop of the target and
 * the same permission as ptrace attach (PTRACE_MODE_ATTACH_REALCREDS); it
 * never writes to the target.  Thread-safe: no state is kept.
 */
#ifndef CPROF_PROCESS_MEMORY_H
#define CPROF_PROCESS_MEMORY_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/*
 * Copies up to len bytes at the target's address addr into buf.  One read,
 * which stops cleanly at the first page that cannot be read: the count may
 * be short, and a short count is how a caller that does not know where a
 * mapping ends (a stack) learns it.  Returns the bytes copied (at least 1),
 * or -errno: -EFAULT (nothing readable at addr), -ESRCH (the process is
 * gone), -EPERM.
 */
ssize_t proc_mem_read(pid_t pid, uint64_t addr, void *buf, size_t len);

/* Exactly len bytes at addr, or -EFAULT (a short read) or another -errno. */
int proc_mem_read_all(pid_t pid, uint64_t addr, void *buf, size_t len);

/*
 * Exactly len bytes at addr through /proc/PID/mem, which some kernels
 * allow where process_vm_readv is refused (the [vdso] and other special
 * mappings).  Opens the file for this one read: not for hot paths.
 * Returns 0 or -errno (-EIO on a short read).
 */
int proc_mem_read_special(pid_t pid, uint64_t addr, void *buf, size_t len);

#endif
