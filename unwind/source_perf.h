/* SPDX-License-Identifier: MIT */
/*
 * The perf source's state, shared by its files: source_perf.c (threads,
 * events, hand-off) and source_perf_drain.c (the rings' records into the
 * round).
 */
#ifndef CPROF_UNWIND_SOURCE_PERF_H
#define CPROF_UNWIND_SOURCE_PERF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "unwind/sampler_impl.h"

/* A thread's sampling period is drawn anew at the first emptying that
 * finds it took this many samples at the current one: see source_perf.c's
 * perf_tick_period. */
#define LATTICE 16u

struct perf_state {
	bool starting;		/* offered the threads there at start */
	int first_error;	/* ... and the first that could not have an event */
	size_t opened;		/* ... and how many could */
	bool viewed;		/* some ring holds records read: see perf_give_back */
	bool check_go;		/* a process is new or execed: see perf_check */
	size_t stack;		/* bytes of stack a sample carries, at first */
	size_t stack_max;	/* ... once a walk ran off the first (perf_grow) */
	struct perf_rings *rings;
	size_t fds, fd_budget;	/* descriptors of the events, and their limit */
	/* The tracer only watches (TRACER_WATCH): the events inherit, the
	 * rings tell of births, exits and execs (source_perf_drain.c). */
	bool watch;
	bool rescan;		/* ... /proc/PID/task read again at the first tick */
	/* perf_take is offered a thread born with inherited events: their
	 * owner (may be NULL). */
	bool born;
	struct perf_thread *born_from;
	/* Exits and execs read from the rings, applied once every ring is
	 * read (a sample of the thread may wait in another ring), and the
	 * threads that exited lately, whose late samples are not births. */
	struct perf_task *tasks;
	size_t n_tasks, cap_tasks;
	bool applying;
	/* The exec of the command cprof started was read: the drain stops
	 * there and goes on once it is applied (see perf_src_drain). */
	bool exec_cut;
	/* Some thread with events of its own started a thread in this drain. */
	bool forked;
	pid_t gone[64];
	unsigned n_gone;
	/* Events retired but open: threads they passed to still use them. */
	struct perf_thread **retired;
	size_t n_retired, cap_retired;
};

/* An exit or an exec the rings told of. */
struct perf_task {
	bool exec;
	pid_t pid, tid;
};

/* What the source keeps per thread (samp_thread.source_data). */
struct perf_src_thread {
	struct perf_thread *pt;
	bool grow;		/* a walk ran off its samples' copy: see perf_grow */
	bool rechain;		/* its process runs Go: see perf_grow */
	bool forked;		/* started a thread since the last drain: see perf_src_drain */
};

static inline unsigned perf_src_self(void)
{
	return samp_source_index(&samp_source_perf);
}

static inline struct perf_state *perf_src_state(const struct sampler *s)
{
	return s->source_state[perf_src_self()];
}

/* th's events, or NULL when another source samples th. */
static inline struct perf_src_thread *perf_src_of(const struct tracer_thread *th)
{
	const struct samp_thread *st = th->user;

	return st && st->source == perf_src_self() ? st->source_data : NULL;
}

/* A CPU's ring holds this many samples at least: a CPU runs one thread at
 * a time, so its task clocks take about one sample a period together; a
 * ring wakes the sampling thread once half of it was written (perf_rings_fd),
 * and the other half is slack for a sampling thread that waits for a CPU
 * and for the records still viewed by samples being unwound. */
#define RING_RECORDS 14u
/* ... and this many at least, or the rings' memory budget is used up. */
#define RING_RECORDS_MIN 4u
/* ... and the rings of deeper copies (perf_grow) hold this many. */
#define RING_RECORDS_DEEP 8u
/* The stack each sample carries, unless --stack-size asks for less: the
 * kernel copies it at every sample, in the thread's time. */
#define STACK_DEFAULT (16u << 10)

/* The ring for records samples of stack bytes (source_perf_size.c). */
size_t perf_src_ring_for(size_t stack, unsigned records);
/* The stack copies' sizes into ps. */
void perf_src_sizes(struct sampler *s, struct perf_state *ps);
/* The descriptors the events may take (the soft limit raised first). */
size_t perf_src_fd_budget(void);
/* Why SAMPLER_SOURCE_AUTO samples at stops from the start, or
 * SAMPLER_PERF_USED. */
enum sampler_perf_refusal perf_src_auto_refusal(struct sampler *s, const struct perf_state *ps);
/* The rings into ps.  Returns 0 or -errno. */
int perf_src_open_rings(struct sampler *s, struct perf_state *ps);

/* A thread's next period, in its CPU time (source_perf.c). */
uint64_t perf_src_gap(struct sampler *s);
/* A new thread's first period (source_perf.c). */
uint64_t perf_src_first_gap(struct sampler *s);

/* Watching: every thread goes to stops (seized first), the events all
 * closed.  Returns 0 or -errno (source_perf.c's perf_hand_off). */
int perf_src_to_stops(struct sampler *s);

/* Every ring's samples so far into the round (but those of process skip):
 * the records read stay in the rings until perf_give_back.  Returns 0 or
 * -ENOMEM. */
int perf_src_drain(struct sampler *s, const struct samp_proc *skip);

#endif
