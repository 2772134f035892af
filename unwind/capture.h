/* SPDX-License-Identifier: MIT */
/*
 * One consistent picture of every thread of a process, for dump-threads:
 * no thread runs between the first capture and the last.  Threads blocked
 * in the kernel are not changing their stacks, so they are read without
 * being stopped (SP and PC from /proc/PID/task/TID/syscall) and checked
 * afterwards not to have run; only running threads, and blocked ones whose
 * check or unwind fails, are stopped — all together, held while the
 * blocked ones are re-checked, then resumed together.
 */
#ifndef CPROF_UNWIND_CAPTURE_H
#define CPROF_UNWIND_CAPTURE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "profile/stacks.h"
#include "process/maps.h"
#include "process/modules.h"
#include "process/procfs.h"
#include "confine/confine.h"
#include "python/python.h"
#include "unwind/remote.h"
#include "unwind/remote_client.h"
#include "unwind/snapshot.h"

enum capture_how {
	CAPTURE_NONE,		/* not captured (err says why) */
	CAPTURE_BLOCKED,	/* read while blocked, without a stop */
	CAPTURE_STOPPED,	/* read during a ptrace stop */
};

struct capture_thread {
	pid_t tid;
	char name[64];
	char state;		/* as /proc said before the capture */
	uint64_t cpu_ns;	/* CPU time used so far */
	long syscall_nr;	/* the system call it is blocked in, -1 if none */
	enum capture_how how;
	int err;		/* -errno when how == CAPTURE_NONE */
	struct snap snap;
	struct prof_frame *frames;	/* unwound, leaf first */
	size_t n_frames;
	enum remote_end end;
};

struct capture_opts {
	size_t stack_size;	/* bytes of stack copied per thread */
	size_t max_frames;
	const pid_t *only;	/* capture only these tids (NULL: all) */
	size_t n_only;
	bool python;		/* splice CPython's frames in, when it runs there */
	/* The confined parser the stacks are walked in (unwind/remote_client.h);
	 * NULL: in this process. */
	struct conf_helper *helper;
};

struct capture {
	pid_t pid;
	struct capture_thread *threads;	/* main thread first, then by tid; with python,
					 * frames has room for 2 * max_frames */
	size_t n;
	struct proc_maps maps;
	struct proc_modules *mods;	/* owned; for symbolization */
	uint64_t freeze_ns;	/* first interrupt to last resume; 0 if nothing stopped */
	uint64_t stopped_ns;	/* sum over stopped threads of their stop time */
	size_t n_stopped;
	size_t n_blocked;	/* captured without a stop */
	uint64_t wall_ns;	/* the whole capture, attach to release */
	bool attached;		/* false: the error came from attaching */
	/* CPython (opts.python): py is the interpreter found, or NULL, then
	 * py_err says why: -ENOENT none, -EPROTO unknown layout (py_why). */
	struct py_proc *py;
	int py_err;
	char py_why[160];
	size_t n_py_threads;	/* threads that got Python frames */
	uint64_t py_read_ns;	/* reading the frame chains, in the freeze (the last read) */
	/* Modules the parser failed on walking (opts.helper; it did not die):
	 * malloc'd, n_parser_errors of them. */
	struct remote_client_error *parser_errors;
	size_t n_parser_errors;
};

/*
 * Captures and unwinds every thread (or o->only) of pid into *c.  Runs the
 * ptrace work on a thread of its own, whose exit detaches the target
 * without stopping anything (see tracer_release).  Returns 0 or -errno;
 * per-thread failures are in the thread's err/end, not here.
 */
int capture_process(pid_t pid, const struct capture_opts *o, struct capture *c);
void capture_free(struct capture *c);

#endif
