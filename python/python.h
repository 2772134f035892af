/* SPDX-License-Identifier: MIT */
/*
 * Python frames of a running CPython 3.8-3.13, read from outside: the
 * interpreter found by its _PyRuntime symbol, its struct layout taken from
 * _Py_DebugOffsets (3.13) or from a table generated from each version's
 * headers (python/layouts.h) and checked against the live process, each
 * thread state's frame chain read while its thread cannot change it (stopped,
 * or blocked without the GIL), and the frames spliced into the native stack
 * where _PyEval_EvalFrameDefault runs them.  Free-threaded builds and
 * subinterpreters other than the main one are not covered.
 */
#ifndef CPROF_PYTHON_PYTHON_H
#define CPROF_PYTHON_PYTHON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "process/modules.h"
#include "profile/stacks.h"

struct py_proc;

/* One frame as read from the target: resolved later, by py_splice. */
struct py_raw_frame {
	uint64_t code;		/* code object address */
	uint64_t instr;		/* 3.8-3.10: f_lasti; 3.11+: instruction pointer */
	bool last_of_c_frame;	/* the outermost frame its C frame runs */
};

/* The Python frames of every thread state, read at one moment. */
struct py_stacks {
	struct py_thread_stack {
		pid_t tid;
		size_t first, n;	/* frames[first..first+n), innermost first */
	} *threads;
	size_t n_threads, cap_threads;
	struct py_raw_frame *frames;
	size_t n_frames, cap_frames;
};

struct py_location {
	const char *function;	/* co_qualname (3.11+) or co_name */
	const char *file;	/* co_filename */
	int line;		/* 0 when unknown */
};

/*
 * Finds CPython in pid through its mapped modules (the executable or a
 * libpython), and checks the layout against the live process.  Returns 0;
 * -ENOENT when pid runs no CPython; -EPROTO when it does but its layout is
 * unknown or does not check out (why gets the one-line reason); other
 * -errno.  mods must outlive the result.
 */
int py_proc_open(struct py_proc **out, pid_t pid, const struct proc_modules *mods, char *why,
		 size_t why_len);
void py_proc_close(struct py_proc *py);

/* "3.11.2", and the module it was found in. */
const char *py_proc_version(const struct py_proc *py);
const char *py_proc_module(const struct py_proc *py);

/*
 * Reads every thread state's frames into s (emptied first).  The threads
 * whose frames are wanted must not run meanwhile (stopped, or blocked: a
 * thread changes only its own frames).  Reads the target's memory, nothing
 * else.  Returns 0 or -errno (-EFAULT: a pointer led nowhere).
 */
int py_read_stacks(struct py_proc *py, struct py_stacks *s);

/*
 * Appends thread tid's frames to s (as py_read_stacks does for all), for a
 * sample: tid must be stopped.  Its thread state is remembered from the
 * last walk of the list, walked again when tid is not in it (at most once
 * an epoch, py_proc_new_epoch).  Returns 0,
 * -ENOENT when tid has no thread state (a thread Python does not know, or
 * one that ended), or -errno.
 */
int py_read_thread(struct py_proc *py, pid_t tid, struct py_stacks *s);
void py_stacks_free(struct py_stacks *s);

/*
 * Splices tid's frames of s into the native frames (leaf first, n of them,
 * room for max) where each _PyEval_EvalFrameDefault runs them: each such
 * C frame gets, just above it, the Python frames it is executing.  Frames
 * of a thread whose native walk has fewer interpreter frames go above the
 * outermost one.  Reads code objects (cached by address, checked once per
 * epoch).  Allocation-free once warm.  Returns the new number of frames.
 */
size_t py_splice(struct py_proc *py, const struct py_stacks *s, pid_t tid,
		 struct prof_frame *frames, size_t n, size_t max);

/*
 * The code objects read so far may have been freed and their addresses
 * reused: each is checked once more (a few fields compared) at its next
 * use by py_splice; and a thread not found in the thread states may be
 * looked for again.  A sampler calls it once per tick.
 */
void py_proc_new_epoch(struct py_proc *py);

/* The function, file and line of location id (a PROF_FRAME_PYTHON addr).
 * Returns 0 or -ENOENT. */
int py_location(const struct py_proc *py, uint64_t id, struct py_location *out);

#endif
