/* SPDX-License-Identifier: MIT */
/*
 * Sample sources: where a thread's registers and stack copy come from,
 * kept apart from what is done with them (as libdwfl's
 * Dwfl_Thread_Callbacks feed one unwinder that never knows which backend
 * it runs on).
 *
 * The session (sampler.c) offers every thread to the sources in the order
 * of samp_sources; the first that takes it samples it until the thread
 * exits or the source hands its threads off.  The last source is the base:
 * it takes every thread the others do not, and every thread handed off.
 * At each tick every running source delivers its copies into the round
 * (s->snaps, through samp_next_snap), which unwinds and aggregates them
 * (round.c) without asking which source took them; then each source gets
 * back what it lent (give_back).
 *
 * A new source is one file with a `const struct samp_source` and one line
 * in the table of source.c.  Every callback runs on the tracing thread.
 */
#ifndef CPROF_UNWIND_SOURCE_H
#define CPROF_UNWIND_SOURCE_H

#include <stdbool.h>
#include <stdint.h>

struct sampler;
struct samp_proc;
struct tracer_thread;

/* At most this many sources in the table. */
#define SAMP_SOURCES 4

/* What start() answers. */
enum samp_start {
	SAMP_START_RUN,		/* it samples this session: take() is offered threads */
	SAMP_START_REFUSED,	/* it does not (why: in the session's stats) */
};

struct samp_source {
	const char *name;
	/*
	 * Right after every thread is seized: whether it samples this
	 * session (its state allocated here).  Returns enum samp_start or
	 * -errno, which ends the session before its first tick.
	 */
	int (*start)(struct sampler *s);
	/* Offered a thread no earlier source took, at start and when one is
	 * born: 0 it samples it from now on, or -errno (then the next source
	 * is offered it). */
	int (*take)(struct sampler *s, struct tracer_thread *th);
	/* After the threads there at start were offered: SAMP_START_RUN, or
	 * SAMP_START_REFUSED when it gave every thread back (through
	 * samp_hand_to_base), or -errno.  NULL: nothing to check. */
	int (*started)(struct sampler *s);
	/* One of its threads exits: what it took of it goes to the round. */
	void (*drop)(struct sampler *s, struct tracer_thread *th);
	/* Process p is about to be given its new image by an exec (done
	 * false: what was taken of the old one is dropped), or was given it
	 * (done true).  NULL: nothing to do. */
	void (*exec)(struct sampler *s, struct samp_proc *p, bool done);
	/* The tick: its copies into the round.  Returns 0 or -errno. */
	int (*collect)(struct sampler *s);
	/* After the round was unwound: what its copies lent (memory shared
	 * with the kernel) is given back.  NULL: nothing lent. */
	void (*give_back)(struct sampler *s);
	/* After each tick's round: what the walks taught it.  NULL: nothing. */
	void (*after_tick)(struct sampler *s);
	/* The gap it wants between ticks, in ns; 0 while it has no thread
	 * to sample. */
	uint64_t (*tick_period)(const struct sampler *s);
	/* Gives all its threads to the base source (samp_hand_to_base), with
	 * the CPU time it did not sample yet: before the session's last tick,
	 * or when it turns out it cannot sample the session.  NULL for the
	 * base.  Returns 0 or -errno. */
	int (*hand_off)(struct sampler *s);
	/* A walk of a copy of th ran off the copy's end: the next copy must
	 * be larger. */
	void (*ran_out)(struct sampler *s, struct tracer_thread *th);
	/* The tracer stopped th because the source asked it to (it is the
	 * only one that may): see tracer_ops.on_stop.  NULL: never asks. */
	bool (*stopped)(struct sampler *s, struct tracer_thread *th, bool group_stopped);
	/* The session ends: what it took goes to the round, nothing of it
	 * stays open.  NULL: nothing to close. */
	void (*finish)(struct sampler *s);
	/* Frees its state (the session may never have started). */
	void (*destroy)(struct sampler *s);
};

extern const struct samp_source samp_source_perf;
extern const struct samp_source samp_source_stop;

/* The sources, in the order threads are offered to them, NULL-terminated;
 * the last is the base. */
extern const struct samp_source *const samp_sources[SAMP_SOURCES + 1];

#endif
