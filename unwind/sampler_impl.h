/* SPDX-License-Identifier: MIT */
/*
 * The sampler's insides, shared by the files that make it up and by
 * nothing else: the session (sampler.c), its labels and processes
 * (labels.c), the round that unwinds and aggregates what the sources
 * deliver (round.c), and the sample sources (source.h).  Everything here
 * runs on the tracing thread, except where a comment says otherwise.
 */
#ifndef CPROF_UNWIND_SAMPLER_IMPL_H
#define CPROF_UNWIND_SAMPLER_IMPL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "process/procfs.h"
#include "unwind/procs.h"
#include "unwind/remote_client.h"
#include "unwind/sampler.h"
#include "unwind/snapshot.h"
#include "unwind/source.h"
#include "unwind/tracer.h"

/* While a tick reads threads or unwinds copies, stops that came meanwhile
 * (a signal's, waiting to be passed on) are served at least this often. */
#define SAMP_SERVE_NS 20000ull
/* cpu mode: a thread stays in the tier read every tick for this many
 * ticks after it was last sampled. */
#define SAMP_HOT_TICKS 8

struct samp_label {
	pid_t tid;
	char name[64];
	struct samp_proc *proc;	/* the process the thread was in */
	char proc_name[64];	/* its name then (an exec renames it) */
};

/* What the sampler keeps per traced thread (tracer_thread.user).  The
 * accounting is the session's: whichever source samples the thread, its
 * samples carry the CPU (or wall) time since the previous one. */
struct samp_thread {
	uint64_t sampled_run_ns;	/* schedstat run time at its last sample */
	uint64_t seen_run_ns;		/* ... when it was chosen for this one */
	struct procfs_sched captured;	/* wall: schedstat when last captured */
	uint64_t read_run_ns;		/* cpu: schedstat run time when last read */
	uint64_t hot_tick;		/* cpu: in the hot tier until this tick */
	unsigned signal_defers;		/* cpu: ticks in a row its sample was put off */
	uint64_t wall_ns;		/* wall: where the time its next sample stands for starts */
	uint64_t stack_top;		/* the highest stack address its walks needed; 0: unknown */
	uint32_t label;
	struct samp_proc *proc;
	/* The source that samples it (an index in samp_sources), and what
	 * that source keeps for it, which only that source reads. */
	unsigned source;
	void *source_data;
	bool primed;
	bool have_last;			/* wall: last_frames hold its stack */
	uint32_t last_entry;		/* wall: its entry in the stacks, 0: unknown */
	size_t n_last;
	struct prof_frame *last_frames;
};

struct sampler {
	struct sampler_opts o;
	struct tracer *tracer;
	struct proc_modules *mods;	/* the modules of every process (the store) */
	struct samp_proc **procs;	/* every process seen; procs[0] is the root */
	size_t n_procs, cap_procs;
	bool retire;		/* some process is gone: release its state */
	struct prof_stacks *stacks;
	struct snap *snaps;	/* delivered this round, waiting to be unwound */
	size_t n_snaps, cap_snaps;
	struct prof_frame *frames;
	struct prof_frame *frames2;	/* a second walk of the same copy */
	/* With a parser: the walks of the round's copies it answered, one
	 * per copy (by index), each with max_frames of room. */
	struct samp_walked {
		struct remote_walk w;
		uint64_t maps_gen;	/* its process's maps_gen at the walk */
		bool done;
	} *walked;
	size_t cap_walked;
	const struct snap **batch;	/* one call's copies ... */
	struct remote_walk *batch_walks;	/* ... and their answers */
	size_t cap_batch;
	/* frames' room for one sample's user frames: max_frames, twice that
	 * with Python frames spliced in (kernel frames go under them) */
	size_t max_stack;
	struct samp_py *py;	/* CPython readers (python_sample.c), or NULL */
	struct samp_label *labels;
	size_t n_labels, cap_labels;
	uint64_t period_ns;
	int pending_events;	/* TRACER_EV_* seen while waiting for stops */
	bool stop;		/* sampler_stop(): atomic builtins only */
	int error;		/* -ENOMEM met in a callback: ends the session */
	uint64_t served_ns;	/* when samp_serve_waiting last looked */
	uint64_t due_ns;	/* when this tick came due */
	uint64_t rng;		/* the gaps between ticks (samp_period_fraction) */
	bool read_all;		/* the next tick reads every thread (the last one) */
	bool sources_started;	/* threads born from now on are offered to the sources */
	bool root_execed;	/* the root process execed (see sampler_opts.from_exec) */
	/* Per source (samp_sources): whether it runs, the threads it
	 * samples, and its own state, which only it reads. */
	unsigned base;		/* the base source's index: the last */
	bool source_on[SAMP_SOURCES];
	size_t source_threads[SAMP_SOURCES];
	void *source_state[SAMP_SOURCES];
	struct sampler_stats stats;
};

/* labels.c: the thread labels samples carry, and the processes. */

/* Returns the new label (1..N), or 0 with s->error set: out of memory. */
uint32_t samp_add_label(struct sampler *s, pid_t tid, const char *name, struct samp_proc *p);
/* Keeps the thread's label in step with its name (threads rename). */
void samp_update_label(struct sampler *s, struct tracer_thread *th, const char *comm);
/* After p's exec: its threads' labels name the new program. */
void samp_relabel(struct sampler *s, const struct samp_proc *p);
/* The record of process pid, made when first seen; NULL with s->error
 * set: out of memory. */
struct samp_proc *samp_proc_of(struct sampler *s, pid_t pid);
/* Whether p is the root process still waiting to exec the program to
 * profile (sampler_opts.from_exec). */
bool samp_before_exec(const struct sampler *s, const struct samp_proc *p);

/* round.c: what every source's copies go through. */

/* The next free snapshot of the round (not counted until the caller
 * increments n_snaps), or NULL: out of memory. */
struct snap *samp_next_snap(struct sampler *s);
/* Unwinds and aggregates the snapshots delivered so far.  Returns 0 or
 * -errno. */
int samp_process_snaps(struct sampler *s);
/*
 * Unwinds sn of process p into s->frames, again with fresh maps when its
 * frames say the cached ones are stale.  *used: the bytes of the copy the
 * walks read; *ran_off: the walk kept ran off the copy.  Returns the
 * number of frames.
 */
size_t samp_unwind_snap(struct sampler *s, struct samp_proc *p, const struct snap *sn,
			enum remote_end *end, size_t *used, bool *ran_off);
/* One sample into the stacks or the sink; entry: NULL, or the thread's
 * last_entry when f are its last_frames.  Returns 0 or -errno. */
int samp_add_sample(struct sampler *s, uint32_t label, const struct prof_frame *f, size_t n,
		    uint64_t value, uint32_t *entry);
/* Wall mode keeps each thread's last stack, to reuse while it does not run. */
void samp_remember(struct sampler *s, struct tracer_thread *th, const struct prof_frame *f,
		   size_t n);
/* Serves the stops that came while the tracing thread was busy (at most
 * every SAMP_SERVE_NS): a thread in a signal-delivery-stop must not wait
 * for the tick.  Threads may appear or go meanwhile: callers look them up
 * again after it, and a stop served here may add a snapshot. */
void samp_serve_waiting(struct sampler *s);
/* The thread at index i after samp_serve_waiting, or NULL. */
struct tracer_thread *samp_thread_at(struct sampler *s, size_t i);
/* Frees a copy's own maps, used or not. */
void samp_drop_snap_maps(struct snap *sn);

/* sampler.c */

/* th goes to the base source.  owed: the CPU time th used that its source
 * did not sample yet (its next sample carries it), or NULL: its accounting
 * stays as it was (its source took no sample of it). */
void samp_hand_to_base(struct sampler *s, struct tracer_thread *th, const uint64_t *owed);
/* src samples nothing any more (its threads were handed to the base). */
void samp_source_stopped(struct sampler *s, const struct samp_source *src);
/* Whether a source other than the base samples threads of this session. */
bool samp_others_on(const struct sampler *s);

/* A uniformly random fraction of the period, [0, period). */
uint64_t samp_period_fraction(struct sampler *s);
/* The source of a thread. */
static inline const struct samp_source *samp_source_of(const struct samp_thread *st)
{
	return samp_sources[st->source];
}

/* A source's index in samp_sources (its slot in the session's arrays). */
static inline unsigned samp_source_index(const struct samp_source *src)
{
	unsigned i;

	for (i = 0; i < SAMP_SOURCES && samp_sources[i] && samp_sources[i] != src; i++)
		;
	return i;
}

#endif
