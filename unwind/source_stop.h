/* SPDX-License-Identifier: MIT */
/*
 * The stop source's insides, shared by its two files: source_stop.c
 * (interrupts, copies at stops, reads in place) and source_stop_choose.c
 * (which threads a tick reads and stops).
 */
#ifndef CPROF_UNWIND_SOURCE_STOP_H
#define CPROF_UNWIND_SOURCE_STOP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "unwind/sampler_impl.h"

struct stop_state {
	struct snap blocked;	/* a blocked thread's copy, read in place */
	pid_t *pick;		/* this tick's threads to stop */
	size_t cap_pick;
	bool holding;		/* stopped() holds threads (--stop process, gathering) */
	uint64_t tick_ns;	/* when this tick started: wall samples end there */
	uint64_t tick_cpu_ns;	/* wall: the tracing thread's CPU clock then */
	uint64_t proc_cpu_ns;	/* the traced processes' CPU clocks at the previous tick */
	size_t clock_procs;	/* ... and how many processes that sum was over */
	int64_t unexplained_ns;	/* its growth the hot tier did not account for */
	uint64_t hot_run_ns;	/* CPU the threads read used, since the clock was read */
	uint64_t clock_tick;	/* the tick the clock is read at next */
	uint64_t cold_read_ns;	/* when every thread was last read */
	size_t wall_cap;	/* wall: threads a tick can read (see choose_wall) */
	size_t wall_cursor;	/* wall: where the next tick's threads start */
	size_t wall_visited;	/* wall: threads this tick read */
};

static inline struct stop_state *stop_state(const struct sampler *s)
{
	return s->source_state[s->base];
}

/* Whether th is sampled by the stop source. */
static inline bool stop_owns(const struct sampler *s, const struct tracer_thread *th)
{
	const struct samp_thread *st = th->user;

	return st && st->source == s->base;
}

/* source_stop_choose.c: this tick's threads to stop into pick; returns how
 * many.  n: the thread count when the tick started. */
size_t stop_choose(struct sampler *s, size_t n);
/* wall mode, after a tick: the threads the next ones can read. */
void stop_adapt_wall_cap(struct sampler *s, size_t n, uint64_t tick_ns);

/* source_stop.c: whether th must be interrupted this tick (and samples it
 * in place when it need not). */
bool stop_wants(struct sampler *s, struct tracer_thread *th);

#endif
