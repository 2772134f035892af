/* SPDX-License-Identifier: MIT */
/*
 * Cheap per-thread facts from /proc, read without stopping anything.  Files
 * that are re-read every tick are kept open and re-read with pread(), which
 * regenerates their contents without an open() per sample.
 */
#ifndef CPROF_PROCESS_PROCFS_H
#define CPROF_PROCESS_PROCFS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct procfs_stat {
	char state;		/* R, S, D, T, t, Z, X, ... */
	char comm[64];		/* sanitized to printable UTF-8 */
	uint64_t utime, stime;	/* clock ticks */
	unsigned long flags;	/* PF_* of the task */
};

/* Opens /proc/PID/task/TID/NAME read-only, close-on-exec.  Returns fd or -errno. */
int procfs_open_task(pid_t pid, pid_t tid, const char *name);

/* Parses a stat line read from fd (pread at 0).  Returns 0 or -errno (-ESRCH if gone). */
int procfs_read_stat(int fd, struct procfs_stat *st);

/* First field of schedstat: nanoseconds spent on the CPU.  Returns 0 or -errno. */
int procfs_read_schedstat(int fd, uint64_t *run_ns);

/* All of schedstat: ns on the CPU, ns waiting for it, timeslices run.  If
 * none changed between two reads, the thread did not run in between. */
struct procfs_sched {
	uint64_t run_ns, wait_ns, slices;
};
int procfs_read_sched(int fd, struct procfs_sched *sc);

/* Whether two schedstat reads of one thread say it did not run between
 * them (its run time and its count of timeslices are unchanged). */
static inline bool procfs_sched_same(const struct procfs_sched *a, const struct procfs_sched *b)
{
	return a->run_ns == b->run_ns && a->slices == b->slices;
}

/*
 * /proc/PID/task/TID/syscall: for a thread that is not running, the system
 * call it is in (nr -1 when none) with its arguments, and its user stack
 * pointer and program counter, which are enough to read and unwind its
 * stack without stopping it.
 */
struct procfs_syscall {
	bool running;
	long nr;
	uint64_t args[6];
	uint64_t sp, pc;
};
int procfs_read_syscall(int fd, struct procfs_syscall *sc);

/* The name of x86_64 system call nr ("futex"), or NULL. */
const char *procfs_syscall_name(long nr);

/* Lists /proc/PID/task into a malloc'd array.  Returns 0 or -errno. */
int procfs_list_tasks(pid_t pid, pid_t **tids, size_t *n);

/* The value of a "Key:\tnumber" line of /proc/PID/status.  Returns 0 or -errno
 * (-ENOENT when the key is absent). */
int procfs_status_field(pid_t pid, const char *key, long *value);

/* Stat of the process (its leader), by pid.  Returns 0 or -errno. */
int procfs_stat_pid(pid_t pid, struct procfs_stat *st);

/* Copies comm-like bytes into dst (size n), replacing bytes that are not
 * printable ASCII or part of valid UTF-8 with '?'. */
void procfs_sanitize_name(char *dst, size_t n, const char *src, size_t len);

#endif
