/* SPDX-License-Identifier: MIT */
/*
 * A profiling session over one process.
 *
 * cpu mode: at each tick, the threads that are running or runnable and used
 * CPU since their previous sample are interrupted, their registers and
 * stack copied, resumed, then unwound from the copy; a sample's value is the
 * CPU time the thread used since its previous sample.  Blocked threads are
 * never interrupted, so their system calls never see EINTR because of cprof.
 *
 * cpu mode through perf events (sampler_source): no thread is stopped.
 * Each thread has a task-clock event whose samples carry its registers and
 * the top of its stack, copied by the kernel (unwind/perf_thread.h); the
 * ticks only take them out of the rings and unwind them.
 *
 * wall mode: every thread at every tick.  A thread that has not run since
 * its last capture has the same stack, which is reused; a blocked one is
 * read without a stop (SP and PC from /proc/PID/task/TID/syscall) and only
 * stopped when that fails.
 */
#ifndef CPROF_UNWIND_SAMPLER_H
#define CPROF_UNWIND_SAMPLER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "profile/stacks.h"
#include "python/python.h"
#include "process/modules.h"
#include "unwind/remote.h"
#include "unwind/tracer.h"

enum sampler_mode {
	SAMPLER_CPU,
	SAMPLER_WALL,
};

enum sampler_stop {
	SAMPLER_STOP_THREAD,	/* one thread at a time; the others run on */
	SAMPLER_STOP_PROCESS,	/* the sampled threads held together: one instant */
};

/* Who takes a cpu-mode sample's registers and stack copy. */
enum sampler_source {
	SAMPLER_SOURCE_PTRACE,	/* cprof, at a ptrace stop it asks for */
	SAMPLER_SOURCE_PERF,	/* the kernel, at a timer interrupt: no stop */
	/* perf when perf events work here, their rings fit the kernel's
	 * budget and their descriptors the limit (cpu mode, --stop thread),
	 * Go programs included; ptrace otherwise */
	SAMPLER_SOURCE_AUTO,
};

/* Why SAMPLER_SOURCE_AUTO sampled at stops, or stopped using perf events. */
enum sampler_perf_refusal {
	SAMPLER_PERF_USED,	/* not refused (or not asked for) */
	SAMPLER_PERF_ERRNO,	/* perf_event_open or mmap failed: perf_errno */
	/* more threads than the descriptors left for their events (one per
	 * thread per CPU) */
	SAMPLER_PERF_THREADS,
	/* the kernel's budget of locked memory has no room for the rings
	 * (perf_event_mlock_kb, RLIMIT_MEMLOCK): perf_errno */
	SAMPLER_PERF_RINGS,
	SAMPLER_PERF_STACK,	/* a larger stack copy asked for than a sample can carry */
	/* CPython keeps its frames in the heap, which a kernel stack copy
	 * does not hold: they are read at stops (sampler_opts.python). */
	SAMPLER_PERF_PYTHON,
};

struct sampler_stats;
struct conf_helper;

struct sampler_opts {
	pid_t pid;
	unsigned hz;		/* ticks per second, 1..1000 */
	uint64_t duration_ns;	/* 0: until a stop signal or the target's exit */
	size_t stack_size;	/* bytes of stack copied per sample */
	/* perf source: bytes of stack each sample carries, copied by the
	 * kernel in the thread's time; 0: 16 KiB, or stack_size if less */
	size_t perf_stack_size;
	size_t max_frames;
	/* perf source: samples taken in the kernel carry its frames, under
	 * the user stack (perf_thread.h PERF_THREAD_KERNEL), where permitted */
	bool kernel_frames;
	enum sampler_mode mode;
	enum sampler_stop stop;
	enum sampler_source source;
	/* TRACER_FOLLOW, TRACER_DESCENDANTS: the processes of pid's tree
	 * sampled too (see tracer_run_tree); 0: pid alone. */
	unsigned tracer_flags;
	/* Called on the session thread once every thread is seized and before
	 * the first tick (record uses it to let its child exec). */
	void (*after_attach)(void *arg);
	void *after_attach_arg;
	/* pid is sampled from its first exec on: before it, it is not yet the
	 * program to profile (record's child runs cprof's code until it execs
	 * the command), and its CPU until then is not counted. */
	bool from_exec;
	/* CPython's frames read at each stop of a thread of a process found
	 * to run it, and spliced into its native stack where
	 * _PyEval_EvalFrameDefault runs them; with SAMPLER_SOURCE_AUTO such a
	 * process is sampled at stops (perf's copies hold no heap frames). */
	bool python;
	/* NULL, or called on the session thread from the sampling loop, at
	 * most every 250 ms, with the statistics so far (elapsed_ns,
	 * cprof_cpu_ns and tracer brought up to date for it): a live status
	 * for the CLI.  It may read sampler_modules() and
	 * sampler_thread_label() (the session thread is their only writer)
	 * and call sampler_stop(); nothing else of the sampler. */
	void (*progress)(const struct sampler_stats *st, void *arg);
	void *progress_arg;
	/* NULL, or called on the session thread with every sample, instead of
	 * adding it to sampler_stacks() (which then stays empty): lets a
	 * caller cut one session into windows of its own (cprof serve).
	 * values are {1, cpu or wall ns}; frames and values are valid during
	 * the call only.  The statistics count the sample either way. */
	void (*sink)(uint32_t thread, const struct prof_frame *frames, size_t n_frames,
		     const int64_t *values, void *arg);
	void *sink_arg;
	/* The confined parser (confine/confine.h) the copies are walked in,
	 * in one call per process a round (unwind/remote_client.h); NULL:
	 * walked in this process.  The caller's; it outlives the sampler. */
	struct conf_helper *helper;
};

struct sampler_stats {
	uint64_t ticks;
	uint64_t ticks_missed;	/* ticks skipped because cprof fell behind */
	uint64_t samples;
	uint64_t samples_reused; /* wall mode: stack unchanged, capture reused */
	uint64_t samples_unstopped; /* taken without a stop: wall mode reads of blocked threads, perf samples */
	/* Stopped at a signal handler's first instruction, the signal having
	 * come between the interrupt and its stop: taken in the code the
	 * signal interrupted (sigframe_leave_handler). */
	uint64_t samples_signal_entry;
	/* cpu mode: samples put off to a later tick because the thread's
	 * signal was passed on after the tick came due (see defer_for_signal). */
	uint64_t samples_signal_deferred;
	uint64_t sched_reads;	/* threads' schedstat read */
	uint64_t full_reads;	/* ticks that read every thread (cpu: not only the hot tier) */
	uint64_t ticks_rotated;	/* wall: ticks that read only a rotating subset */
	double effective_hz;	/* wall: the rate each thread was sampled at */
	uint64_t ends[REMOTE_END_ERROR + 1]; /* fresh samples by how their unwind ended */
	/* Stack copies taken at a stop, by kind (doc/unwinding.md, the
	 * adaptive copy): full (capacity or mapping end), short and enough,
	 * short and a walk ran off its end (that sample is [truncated]). */
	uint64_t copies_full;
	uint64_t copies_short;
	uint64_t copies_short_ran_out;
	/* Unwinds answered by a remembered walk (remote_reused). */
	uint64_t unwinds_reused;
	/* Go samples whose stack was the kernel's frame-pointer walk, not a
	 * walk of the copy (remote_from_chain). */
	uint64_t unwinds_kernel_chain;
	/* Pages of code and unwind tables the unwinder read from the
	 * modules' files, and from the target (remote_take_pages). */
	uint64_t pages_file;
	uint64_t pages_memory;
	/* With a parser (sampler_opts.helper): copies it walked, and those of
	 * them whose walk needed the target's memory (a Go goroutine's stack
	 * under a cgo call or reached from g0, code no file holds), walked
	 * again there with raw memory cprof read for it.  walks_here: copies
	 * walked in cprof (all of them without a parser; with one, only when
	 * cprof had no memory for the call). */
	uint64_t walks_parser;
	uint64_t walks_continued;
	uint64_t walks_here;
	uint64_t value_ns;	/* sum of the samples' cpu or wall time */
	uint64_t start_realtime_ns;
	uint64_t elapsed_ns;
	uint64_t cprof_cpu_ns;	/* CPU time of the sampling thread */
	/* The source the session ended with (PTRACE or PERF: a switch to
	 * stops leaves the samples taken before it counted in
	 * samples_unstopped); with AUTO asked, why perf events were not used,
	 * or stopped being used (the session then went on at stops). */
	enum sampler_source source;
	enum sampler_perf_refusal perf_refused;
	int perf_errno;			/* SAMPLER_PERF_ERRNO: -errno */
	uint64_t perf_threads;		/* threads given a perf event */
	uint64_t perf_fallbacks;	/* ... that could not have one: sampled by stops */
	int perf_fallback_errno;	/* ... why the first could not (-errno) */
	size_t perf_ring_bytes;		/* bytes of the rings (one per CPU) */
	uint64_t perf_lost;		/* samples the kernel dropped, its ring full */
	uint64_t perf_throttled;	/* times the kernel throttled a thread's samples */
	uint64_t perf_drains;		/* ticks that took samples out of the rings */
	size_t perf_stack;		/* bytes of stack a perf sample carries */
	/* Samples with kernel frames (kernel_frames), and their value. */
	uint64_t kernel_samples;
	uint64_t kernel_ns;
	/* With python: samples with Python frames (reused ones too), and the
	 * time threads were held for reading them (part of the stops). */
	uint64_t python_samples;
	uint64_t python_read_ns;
	struct tracer_stats tracer;
	bool attached;
	bool boosted;		/* the sampling thread runs at raised priority */
	bool target_exited;
	bool stop_requested;
};

struct sampler;

/* Whether SAMPLER_SOURCE_PERF can work here (perf events on other
 * processes, with registers and stack): 0 or -errno. */
int sampler_perf_probe(void);

/* Returns 0 or -errno. */
int sampler_create(struct sampler **out, const struct sampler_opts *o);
void sampler_destroy(struct sampler *s);

/*
 * The whole session, on a thread of its own: seize every thread of the
 * target, sample until the duration ends, SIGINT/SIGTERM/SIGHUP arrives or
 * the target exits, then let go.  Letting go is that thread's exit: the
 * kernel then detaches every tracee without stopping it (see
 * tracer_release), so no blocked system call of the target sees EINTR.
 * Blocks SIGINT, SIGTERM, SIGHUP and SIGCHLD in the calling thread (they are
 * the session's to read).  Returns 0 or -errno; stats.attached tells whether
 * the error came from attaching (nothing sampled) or later (what was
 * sampled is kept).
 */
int sampler_session(struct sampler *s);

/*
 * Ends the session as a stop signal would, from any thread: the sampling
 * loop sees it at its next wake-up (within one tick, or 250 ms when
 * progress is set).  stats.stop_requested stays false (it means a signal).
 */
void sampler_stop(struct sampler *s);

const struct prof_stacks *sampler_stacks(const struct sampler *s);
const struct proc_modules *sampler_modules(const struct sampler *s);

/*
 * The error the confined parser answered (it did not die) for module id
 * while walking the copies of a process still sampled, or 0.  Read as
 * sampler_modules() is (the session thread, or after the session).
 */
int sampler_walk_error(const struct sampler *s, uint32_t id);
const struct sampler_stats *sampler_get_stats(const struct sampler *s);

/* The thread a prof_stacks thread key stands for.  Returns 0 or -ENOENT. */
int sampler_thread_label(const struct sampler *s, uint32_t key, pid_t *tid, const char **name);

/* The process of that thread, and its name when the thread was seen under
 * this key.  Returns 0 or -ENOENT. */
int sampler_process_label(const struct sampler *s, uint32_t key, pid_t *pid, const char **name);

/* The processes of the session, the root first, in the order first seen
 * (a pid reused after its process exited counts again).  The name is the
 * one after the process's last exec; valid while s lives.  Read them
 * after the session, or from the progress callback. */
struct sampler_process {
	pid_t pid;
	const char *name;
	uint64_t samples;
	uint64_t value_ns;
};
size_t sampler_process_count(const struct sampler *s);
int sampler_process_at(const struct sampler *s, size_t i, struct sampler_process *out);

/* A traced thread's time held in the stops cprof asked for, so far.  Only
 * during the session, from the progress callback: i from 0 until -ENOENT. */
struct sampler_thread_stop {
	pid_t tid;
	const char *name;	/* its label's; valid until the next sampler call */
	uint64_t appeared_ns;	/* CLOCK_MONOTONIC: seized or born */
	uint64_t stopped_ns;
};
int sampler_thread_stopped(const struct sampler *s, size_t i, struct sampler_thread_stop *out);

/* With python: the interpreter found (the first, if several processes run
 * one), or why a layout was refused when none could be read.  The strings
 * live as long as s. */
struct sampler_python {
	const char *version;	/* "3.11.2"; NULL: none found */
	const char *module;	/* the executable or libpython it was found in */
	size_t readers;		/* processes (and execs) it was read in */
	const char *refused;	/* NULL, or the one-line refusal */
};
void sampler_python_info(const struct sampler *s, struct sampler_python *out);

/* The function, file and line of a PROF_FRAME_PYTHON frame of s's samples
 * (its addr).  Returns 0 or -ENOENT.  After the session, or on the
 * session thread. */
int sampler_python_location(const struct sampler *s, uint64_t id, struct py_location *out);

#endif
