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

/*
 * Opens thread tid's NAME (stat, schedstat, syscall, comm, status) as
 * /proc/TID/NAME, read-only, close-on-exec.  Returns fd or -errno (-ESRCH:
 * the thread is gone).  Never /proc/PID/task/TID/NAME: a file looked up
 * there stays in the kernel's cache under /proc/PID, and the thread's exit
 * frees it after the thread has left its process; if the thread is
 * preempted there (a busy machine), the wait4 that reaps the process spins
 * on that entry until the thread runs again (doc/cost.md, "The reaping of
 * cprof") -- cprof's own reaping, or record's of its command.  Under
 * /proc/TID the thread's exit frees it too, but nothing that reaps the
 * process waits for it.  The files are the thread's own, but for stat's
 * utime and stime, which there are the whole process's.
 */
int procfs_open_thread(pid_t tid, const char *name);

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

/*
 * The per-thread files cprof re-reads, opened on demand and kept open while
 * file descriptors allow: a process may have more threads than cprof may
 * open files (a soft RLIMIT_NOFILE of 1024 is common), so the cache holds
 * at most a budget of them and closes the least recently used one to open
 * another.  Beyond the budget every read still works, at the price of an
 * open and a close.  A procfs_task is embedded in the caller's per-thread
 * record; calls for one cache must not run concurrently.
 */
enum procfs_file {
	PROCFS_STAT,
	PROCFS_SCHEDSTAT,
	PROCFS_SYSCALL,
	PROCFS_COMM,
	PROCFS_NFILES,
};

struct procfs_fd {
	int fd;			/* -1: closed */
	struct procfs_fd *prev, *next;	/* in the cache's LRU list while open */
};

struct procfs_task {
	pid_t tid;
	pid_t pid;		/* its process; 0: the cache's */
	struct procfs_fd f[PROCFS_NFILES];
};

struct procfs_fdcache {
	pid_t pid;
	size_t open, budget;
	bool raised;		/* the soft file limit was raised (once) */
	struct procfs_fd lru;	/* sentinel: lru.next is the most recent */
	uint64_t opens, evictions;	/* for statistics */
};

/* An empty cache for the threads of pid; its budget is set from
 * RLIMIT_NOFILE (procfs_fdcache_budget). */
void procfs_fdcache_init(struct procfs_fdcache *c, pid_t pid);

/*
 * How many files the cache may hold open: the soft RLIMIT_NOFILE minus a
 * reserve for everything else cprof opens (modules, debuginfo, output).
 * When wanted files exceed it and the hard limit is higher, the soft limit
 * is raised to the hard one first (only the calling process's, once).
 */
size_t procfs_fdcache_budget(struct procfs_fdcache *c, size_t wanted);

/* Makes t a closed record for thread tid. */
void procfs_task_init(struct procfs_task *t, pid_t tid);

/* Closes t's files; t may be initialized again. */
void procfs_task_close(struct procfs_fdcache *c, struct procfs_task *t);

/* The open fd of file k of t, opening it (and closing the least recently
 * used file of the cache to stay within budget) if needed.  The fd stays
 * the cache's.  Returns it or -errno (-ESRCH: the thread is gone). */
int procfs_task_fd(struct procfs_fdcache *c, struct procfs_task *t, enum procfs_file k);

/* procfs_read_stat, procfs_read_sched and procfs_read_syscall on t's file. */
int procfs_task_stat(struct procfs_fdcache *c, struct procfs_task *t, struct procfs_stat *st);
int procfs_task_sched(struct procfs_fdcache *c, struct procfs_task *t, struct procfs_sched *sc);
int procfs_task_syscall(struct procfs_fdcache *c, struct procfs_task *t,
			struct procfs_syscall *sc);
/* Whether t is running or runnable: its syscall file says "running" (the
 * kernel answers that at once for such a thread, where stat formats 52
 * fields).  Returns 1, 0 or -errno. */
int procfs_task_running(struct procfs_fdcache *c, struct procfs_task *t);
/* t's name (comm), sanitized as procfs_stat's.  Returns 0 or -errno. */
int procfs_task_comm(struct procfs_fdcache *c, struct procfs_task *t, char *name, size_t size);

/* Lists /proc/PID/task into a malloc'd array.  Returns 0 or -errno. */
int procfs_list_tasks(pid_t pid, pid_t **tids, size_t *n);
/* The children of every thread of pid (/proc/PID/task/TID/children; the
 * kernel lists a child under the thread that forked it), into a malloc'd
 * array.  Returns 0 or -errno (-ESRCH: no such process). */
int procfs_list_children(pid_t pid, pid_t **pids, size_t *n);

/* The value of a "Key:\tnumber" line of /proc/PID/status.  Returns 0 or -errno
 * (-ENOENT when the key is absent). */
int procfs_status_field(pid_t pid, const char *key, long *value);

/* Stat of the process (its leader), by pid.  Returns 0 or -errno. */
int procfs_stat_pid(pid_t pid, struct procfs_stat *st);

/* Copies comm-like bytes into dst (size n), replacing bytes that are not
 * printable ASCII or part of valid UTF-8 with '?'. */
void procfs_sanitize_name(char *dst, size_t n, const char *src, size_t len);

#endif
