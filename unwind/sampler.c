/* SPDX-License-Identifier: MIT */
/* The attach/record sampling loop: ticks, captures, unwinding, aggregation. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "lib/clock.h"
#include "lib/random.h"
#include "process/maps.h"
#include "process/procfs.h"
#include "unwind/perf_thread.h"
#include "unwind/procs.h"
#include "unwind/sampler.h"
#include "unwind/sigframe.h"
#include "unwind/snapshot.h"

/* Re-read maps at most this often (see needs_maps_retry). */
#define MAPS_MIN_NS 5000000ull
/* How long --stop process holds copied threads for the others' stops. */
#define HOLD_MAX_NS 2000000ull
/* An interrupt whose stop has not come after this is forgotten (see
 * tracer_expire_interrupts): longer than any stop seen under load. */
#define EXPIRE_NS 200000000ull
/* While a tick reads threads or unwinds copies, stops that came meanwhile
 * (a signal's, waiting to be passed on) are served at least this often. */
#define SERVE_NS 20000ull
/* cpu mode: ticks in a row a thread's sample may be put off because of its
 * signals (see defer_for_signal). */
#define SIGNAL_DEFER_MAX 4
/* How long a tick waits for the stops it asked for. */
#define STOP_WAIT_NS 20000000ull
/* --stop thread: how long a tick waits for one thread's stop before it
 * interrupts the next.  A thread on a CPU gets there within tens of
 * microseconds; one that was preempted gets there only when it next runs,
 * milliseconds on a busy machine, and is served whenever it comes. */
#define THREAD_WAIT_NS 250000ull
/* cpu mode: a thread stays in the tier read every tick for this many
 * ticks after it was last sampled. */
#define HOT_TICKS 8
/* cpu mode: CPU time the process used beyond what the threads read every
 * tick account for, above which the others are read too (see choose()):
 * one period's worth, at least this. */
#define COLD_SLACK_NS 1000000ull
/* cpu mode: the others are read at least this often anyway. */
#define COLD_MAX_NS 1000000000ull
/* cpu mode: the process CPU clock is read at most once a tick, and no
 * oftener than keeps its cost (the kernel sums every thread for it) under
 * 1/CLOCK_SHARE of the period. */
#define CLOCK_SHARE 100
/* wall mode: a tick reads threads for at most 1/WALL_SHARE of a period,
 * so cprof stays under that share of a core however many threads there
 * are; past it, a rotating subset (see choose_wall). */
#define WALL_SHARE 4
/* How long a tick polls for the stops it asked for before it sleeps, while
 * polling pays (tracer_set_spin_adaptive): a thread on a CPU reaches its
 * stop within a few microseconds, and a sleep and wake-up cost more. */
#define SPIN_NS 20000ull
/* wall mode: at least this many threads a tick, however slow each is. */
#define WALL_MIN_THREADS 16
/* The adaptive stack copy (see copy_limit): bytes copied beyond the
 * highest stack address a thread's walks needed. */
#define COPY_MARGIN 512u
/* perf source: a thread's ring holds this many samples at least: the
 * rings are emptied every PERF_DRAIN_PERIODS periods or so (at most 1.5
 * times that, 12 samples at the shortest period), and the slack is for a
 * tracing thread that waits for a CPU. */
#define PERF_RING_RECORDS 14u
/* ... and emptied every PERF_DRAIN_PERIODS periods on average, at random
 * gaps: see perf_drain_period. */
#define PERF_DRAIN_PERIODS 4u
/* A thread's sampling period is drawn anew at the first emptying that
 * finds it took this many samples at the current one: see
 * perf_drain_period. */
#define PERF_LATTICE 8u
/* ... and the memory of all the rings, locked by the kernel, stays under
 * this: past it, auto sampling uses stops (sampler_stats.perf_refused). */
#define PERF_RING_BUDGET (64ull << 20)
/* The stack each perf sample carries, unless --stack-size asks for less:
 * the kernel copies it at every sample, in the thread's time. */
#define PERF_STACK_DEFAULT (16u << 10)
/* The executable mappings kept per process from perf's announcements. */
#define PERF_ANNOUNCED_MAX 1024

struct label {
	pid_t tid;
	char name[64];
	struct samp_proc *proc;	/* the process the thread was in */
	char proc_name[64];	/* its name then (an exec renames it) */
};

/* What the sampler keeps per traced thread (tracer_thread.user). */
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
	struct perf_thread *perf;	/* perf source: its event; NULL: sampled by stops */
	bool perf_grow;			/* a walk ran off its samples' copy: see perf_grow */
	unsigned perf_lattice;		/* samples its event took at its current period */
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
	struct snap *snaps;	/* captured this round, waiting to be unwound */
	size_t n_snaps, cap_snaps;
	struct snap blocked;	/* wall: a blocked thread's copy */
	struct prof_frame *frames;
	struct prof_frame *frames2;	/* a second walk of the same copy */
	pid_t *pick;		/* this tick's threads to stop */
	size_t cap_pick;
	struct label *labels;
	size_t n_labels, cap_labels;
	uint64_t period_ns;
	int pending_events;	/* TRACER_EV_* seen while waiting for stops */
	bool holding;		/* on_stop holds threads (--stop process, gathering) */
	bool stop;		/* sampler_stop(): atomic builtins only */
	int error;		/* -ENOMEM met in a callback: ends the session */
	uint64_t proc_cpu_ns;	/* the traced processes' CPU clocks at the previous tick */
	size_t clock_procs;	/* ... and how many processes that sum was over */
	int64_t unexplained_ns;	/* its growth the hot tier did not account for */
	uint64_t hot_run_ns;	/* CPU the threads read used, since the clock was read */
	uint64_t clock_tick;	/* the tick the clock is read at next */
	uint64_t cold_read_ns;	/* when every thread was last read */
	uint64_t tick_ns;	/* when this tick started: wall samples end there */
	uint64_t served_ns;	/* when serve_waiting last looked */
	uint64_t due_ns;	/* when this tick came due */
	uint64_t rng;		/* the gaps between ticks (period_fraction) */
	size_t wall_cap;	/* wall: threads a tick can read (see choose_wall) */
	size_t wall_cursor;	/* wall: where the next tick's threads start */
	size_t wall_visited;	/* wall: threads this tick read */
	bool read_all;		/* the next tick reads every thread (the last one) */
	bool root_execed;	/* the root process execed (see sampler_opts.from_exec) */
	/* perf source (see perf_start): threads have events while perf_on;
	 * n_unperf of them could not have one and are sampled by stops. */
	bool perf_on;
	bool perf_viewed;	/* some ring holds records read: see perf_give_back */
	bool perf_check_go;	/* a process is new or execed: see perf_check */
	size_t perf_stack;	/* bytes of stack a sample carries, at first */
	size_t perf_stack_max;	/* ... once a walk ran off the first (perf_grow) */
	uint64_t perf_ring_total;	/* bytes of all the rings */
	size_t n_unperf;
	struct sampler_stats stats;
};

/* Returns the new label (1..N), or 0 with s->error set: out of memory. */
static uint32_t add_label(struct sampler *s, pid_t tid, const char *name, struct samp_proc *p)
{
	if (s->n_labels == s->cap_labels) {
		size_t cap = s->cap_labels ? s->cap_labels * 2 : 64;
		struct label *nv = realloc(s->labels, cap * sizeof(*nv));

		if (!nv) {
			s->error = -ENOMEM;
			return 0;
		}
		s->labels = nv;
		s->cap_labels = cap;
	}
	s->labels[s->n_labels].tid = tid;
	snprintf(s->labels[s->n_labels].name, sizeof(s->labels[0].name), "%s", name);
	s->labels[s->n_labels].proc = p;
	snprintf(s->labels[s->n_labels].proc_name, sizeof(s->labels[0].proc_name), "%s",
		 p ? p->name : "");
	return (uint32_t)++s->n_labels;
}

/* Keeps the thread's label in step with its name (threads rename). */
static void update_label(struct sampler *s, struct tracer_thread *th, const char *comm)
{
	struct samp_thread *st = th->user;

	if (!st->label || strcmp(s->labels[st->label - 1].name, comm) != 0 ||
	    strcmp(s->labels[st->label - 1].proc_name, st->proc->name) != 0)
		st->label = add_label(s, th->tid, comm, st->proc);
}

/* The record of process pid, made when first seen; NULL with s->error set:
 * out of memory. */
static struct samp_proc *proc_of(struct sampler *s, pid_t pid)
{
	struct samp_proc *p;
	size_t i;

	/* Newest first: a thread's process is usually one seen lately. */
	for (i = s->n_procs; i-- > 0;) {
		if (s->procs[i]->pid == pid && !s->procs[i]->gone)
			return s->procs[i];
	}
	if (s->n_procs == s->cap_procs) {
		size_t cap = s->cap_procs ? s->cap_procs * 2 : 8;
		struct samp_proc **nv = realloc(s->procs, cap * sizeof(*nv));

		if (!nv)
			goto nomem;
		s->procs = nv;
		s->cap_procs = cap;
	}
	if (procs_create(&p, pid, s->mods, NULL) < 0)
		goto nomem;
	s->procs[s->n_procs++] = p;
	return p;
nomem:
	s->error = -ENOMEM;
	return NULL;
}

static int refresh_maps(struct samp_proc *p)
{
	return procs_refresh(p, cprof_now_ns());
}

static int perf_open_thread(struct sampler *s, struct tracer_thread *th, size_t stack);
static void perf_close_thread(struct sampler *s, struct tracer_thread *th, bool keep);
static int perf_sample_maps(struct sampler *s, struct samp_proc *p, struct snap *sn);

static void on_thread(struct tracer *t, struct tracer_thread *th, bool appeared, void *arg)
{
	struct sampler *s = arg;
	struct samp_thread *st = th->user;
	struct procfs_sched sc;
	char comm[64];

	if (!appeared) {
		if (st) {
			if (s->perf_on && !st->perf && s->n_unperf)
				s->n_unperf--;
			/* Its samples until it went are still samples. */
			perf_close_thread(s, th, true);
			if (st->proc && --st->proc->n_threads == 0) {
				/* Released after the copies waiting are unwound. */
				st->proc->gone = true;
				s->retire = true;
			}
			free(st->last_frames);
			free(st);
		}
		th->user = NULL;
		return;
	}
	st = calloc(1, sizeof(*st));
	if (!st) {
		s->error = -ENOMEM;	/* ends the session at the next tick */
		return;
	}
	st->proc = proc_of(s, th->tgid);
	if (!st->proc) {
		free(st);
		return;
	}
	st->proc->n_threads++;
	th->user = st;
	/* CPU used before we saw the thread is not ours to attribute. */
	if (procfs_task_sched(tracer_fds(t), &th->task, &sc) == 0) {
		st->sampled_run_ns = sc.run_ns;
		st->read_run_ns = sc.run_ns;
		st->primed = true;
	}
	st->hot_tick = s->stats.ticks + HOT_TICKS;
	st->wall_ns = cprof_now_ns();
	if (procfs_task_comm(tracer_fds(t), &th->task, comm, sizeof(comm)) == 0)
		st->label = add_label(s, th->tid, comm, st->proc);
	else
		st->label = add_label(s, th->tid, "", st->proc);
	/* Born during a perf session: an event of its own, before it runs
	 * (a thread reported here is in its first stop). */
	if (s->perf_on && perf_open_thread(s, th, s->perf_stack) < 0) {
		s->n_unperf++;
		s->stats.perf_fallbacks++;
	}
}

static struct snap *next_snap(struct sampler *s)
{
	if (s->n_snaps == s->cap_snaps) {
		size_t cap = s->cap_snaps ? s->cap_snaps * 2 : 16, i;
		struct snap *nv = realloc(s->snaps, cap * sizeof(*nv));

		if (!nv)
			return NULL;
		s->snaps = nv;
		for (i = s->cap_snaps; i < cap; i++) {
			if (snap_init(&s->snaps[i], s->o.stack_size) < 0)
				break;
		}
		s->cap_snaps = i;
		if (s->n_snaps == s->cap_snaps)
			return NULL;
	}
	return &s->snaps[s->n_snaps];
}

/* wall mode: the time a sample of st taken at this tick stands for, since
 * its previous sample (or since it was seized): missed ticks and threads
 * skipped by the rotation are not lost but carried by the next sample, so
 * a thread's samples add up to the time it was traced. */
static uint64_t wall_value(struct sampler *s, struct samp_thread *st)
{
	uint64_t v = s->tick_ns > st->wall_ns ? s->tick_ns - st->wall_ns : 0;

	st->wall_ns = s->tick_ns;
	return v;
}

/*
 * The adaptive stack copy: how much of the stack to copy from sp, 0 for a
 * full copy.  A thread's stack keeps its outermost frames at the same
 * addresses for as long as it runs the same stack: the walks that reached
 * a root say how high they read (stack_top), and the copy stops a margin
 * above that.  Off that stack (a signal's alternate stack, a coroutine's,
 * another goroutine's above it) sp is past stack_top or too far below,
 * and the copy is full.  A walk that runs off a short copy makes the
 * thread's next copy full (see learn_copy).
 */
static size_t copy_limit(const struct samp_thread *st, uint64_t sp, size_t cap)
{
	uint64_t end;

	if (!st->stack_top || st->stack_top <= sp)
		return 0;
	end = st->stack_top + COPY_MARGIN;
	if (end - sp >= cap)
		return 0;
	return (size_t)(end - sp);
}

/* What a walk of a copy taken at a stop teaches about the thread's next
 * copy, and the count of the copy's kind. */
static void learn_copy(struct sampler *s, const struct snap *sn, enum remote_end end,
		       size_t used, bool ran_off)
{
	struct tracer_thread *th = s->tracer ? tracer_find_thread(s->tracer, sn->tid) : NULL;
	struct samp_thread *st = th ? th->user : NULL;
	uint64_t top = sn->stack_start + used;

	if (!sn->stack_limited) {
		s->stats.copies_full++;
	} else if (ran_off || end == REMOTE_END_TRUNCATED) {
		/* Ran off the short copy: the frames beyond are lost to this
		 * sample, which ends [truncated] (or at its thread's start
		 * function, see remote_ran_off_copy); the next copy is full. */
		s->stats.copies_short_ran_out++;
		if (st && sn->unstopped)
			st->perf_grow = true;
		else if (st)
			st->stack_top = 0;
		return;
	} else {
		s->stats.copies_short++;
	}
	/* Only a walk that reached a root knows how deep the stack goes. */
	if (st && remote_end_is_root(end) && top > st->stack_top)
		st->stack_top = top;
}

/* Whether p is the root process still waiting to exec the program to
 * profile (sampler_opts.from_exec). */
static bool before_exec(const struct sampler *s, const struct samp_proc *p)
{
	return s->o.from_exec && !s->root_execed && p == s->procs[0];
}

/*
 * The perf source.  perf_start gives every thread a task-clock event; a
 * tick takes the samples out of the rings (perf_drain) into s->snaps,
 * which are unwound as a stop's copies are.  Nothing stops a thread, so
 * none of the stop's guarantees is at stake (signals, EINTR, job
 * control); the tracer still follows threads, forks and execs.  When the
 * session ends, or goes on at stops (perf_check), perf_handoff closes
 * the events and hands each thread's CPU time since its last sample to
 * the stop path, which charges it where the thread is: the accounting
 * stays exact.
 */

/* A gap to the thread's next sample, in its CPU time (period_fraction),
 * and its first one. */
static uint64_t perf_gap(struct sampler *s);
static uint64_t perf_first_gap(struct sampler *s);

/* The ring for samples of stack bytes: PERF_RING_RECORDS of them at least. */
static size_t perf_ring_for(size_t stack)
{
	size_t want = perf_thread_record_size(stack) * PERF_RING_RECORDS, ring = 4096;

	while (ring < want)
		ring *= 2;
	return ring;
}

/* Takes th's samples out of its ring into s->snaps; keep: false drops
 * them (taken before an exec: of the old image).  Returns 0 or -ENOMEM. */
static int perf_take(struct sampler *s, struct tracer_thread *th, bool keep)
{
	struct samp_thread *st = th->user;
	size_t taken = 0;
	struct snap *sn;
	int r;

	/* the records read stay in the ring until perf_give_back */
	s->perf_viewed |= perf_thread_pending(st->perf);
	while (perf_thread_pending(st->perf)) {
		sn = next_snap(s);
		if (!sn)
			return -ENOMEM;
		r = perf_thread_next(st->perf, sn, true);
		if (r == 3) {
			pid_t pid;
			const struct proc_map *m = perf_thread_mapping(st->perf, &pid);
			struct samp_proc *p = pid == st->proc->pid ? st->proc : NULL;

			/* Past PERF_ANNOUNCED_MAX the history starts again: the
			 * maps read at a drain know the mappings of the moment. */
			if (p && p->announced.n >= PERF_ANNOUNCED_MAX)
				proc_maps_free(&p->announced);
			if (p && proc_maps_add(&p->announced, m) < 0)
				return -ENOMEM;
			continue;
		}
		if (r == 2) {
			pid_t tid;
			const char *comm = perf_thread_comm(st->perf, &tid);
			struct tracer_thread *named = tid == th->tid ? th :
						      tracer_find_thread(s->tracer, tid);

			if (named && named->user)
				update_label(s, named, comm);
			continue;
		}
		if (r <= 0)
			break;
		/* Before the exec: not yet the program, its CPU not counted. */
		if (!keep || before_exec(s, st->proc))
			continue;
		if (!st->proc->ready) {
			if (refresh_maps(st->proc) < 0)
				continue;
			s->perf_check_go = true;
		}
		sn->tid = th->tid;
		sn->key = st->label;
		sn->sp_unmapped = !proc_maps_find(&st->proc->maps, snap_sp(sn));
		if (perf_sample_maps(s, st->proc, sn) < 0)
			return -ENOMEM;
		s->n_snaps++;
		taken++;
	}
	/* A period drawn anew every few samples: see perf_gap. */
	st->perf_lattice += taken;
	if (st->perf_lattice >= PERF_LATTICE) {
		perf_thread_set_period(st->perf, perf_gap(s));
		st->perf_lattice = 0;
	}
	return 0;
}

/* Gives th an event whose samples carry stack bytes.  Returns 0 or -errno. */
static int perf_open_thread(struct sampler *s, struct tracer_thread *th, size_t stack)
{
	struct samp_thread *st = th->user;
	size_t ring = perf_ring_for(stack);
	int r;

	r = perf_thread_open(&st->perf, th->tid, perf_first_gap(s), stack, ring,
			     s->o.kernel_frames ? PERF_THREAD_KERNEL : 0);
	if (r < 0) {
		st->perf = NULL;
		return r;
	}
	s->perf_ring_total += ring;
	st->perf_lattice = 0;
	s->stats.perf_threads++;
	return 0;
}

/* Closes an event whose samples were taken: its counts into the stats,
 * its ring out of the budget. */
static void perf_release(struct sampler *s, struct perf_thread *pt)
{
	size_t i;

	/* The samples still waiting to be unwound keep their copies. */
	for (i = 0; i < s->n_snaps; i++) {
		if (snap_viewing(&s->snaps[i]) && perf_thread_holds(pt, s->snaps[i].stack))
			snap_keep(&s->snaps[i]);
	}
	s->stats.perf_lost += perf_thread_lost(pt);
	s->stats.perf_throttled += perf_thread_throttled(pt);
	s->perf_ring_total -= perf_ring_for(perf_thread_stack_size(pt));
	perf_thread_close(pt);
}

static void perf_close_thread(struct sampler *s, struct tracer_thread *th, bool keep)
{
	struct samp_thread *st = th->user;

	if (!st || !st->perf)
		return;
	if (perf_take(s, th, keep) < 0)
		s->error = -ENOMEM;
	perf_release(s, st->perf);
	st->perf = NULL;
}

/*
 * A walk of th's sample ran off its copy: the stack goes deeper than the
 * first size (PERF_STACK_DEFAULT, cheap for the kernel to copy at every
 * sample).  Its event is replaced by one carrying the largest copy
 * (perf_stack_max), as the memory budget allows; the samples the old
 * ring still holds are taken first, and the CPU time it had not sampled
 * yet is carried over.
 */
static void perf_grow(struct sampler *s, struct tracer_thread *th)
{
	struct samp_thread *st = th->user;
	struct perf_thread *old = st->perf;
	size_t ring = perf_ring_for(s->perf_stack_max);
	uint64_t owed = 0;

	st->perf_grow = false;
	if (!old || perf_thread_stack_size(old) >= s->perf_stack_max ||
	    s->perf_ring_total + ring > PERF_RING_BUDGET)
		return;
	if (perf_take(s, th, true) < 0 || perf_thread_unsampled(old, &owed) < 0)
		return;
	if (perf_open_thread(s, th, s->perf_stack_max) < 0) {
		st->perf = old;
		return;
	}
	perf_thread_carry(st->perf, owed);
	perf_release(s, old);
}

/* The threads perf_grow was asked for, once their samples are unwound. */
static void perf_grow_all(struct sampler *s)
{
	size_t i, n = tracer_thread_count(s->tracer);

	for (i = 0; s->perf_on && i < n; i++) {
		struct tracer_thread *th = tracer_thread_at(s->tracer, i);
		struct samp_thread *st = th->user;

		if (st && st->perf_grow)
			perf_grow(s, th);
	}
}

/* Whether two mappings are the same one (the cached maps against the
 * kernel's announcement). */
static bool same_mapping(const struct proc_map *a, const struct proc_map *b)
{
	return a->start == b->start && a->end == b->end && a->inode == b->inode &&
	       a->offset == b->offset;
}

/*
 * Puts an announced text mapping into m, with the mapping of the file's
 * start below it that the loader made first (not executable, so not
 * announced): without it the module's base was taken from another load of
 * the same library (dlopen churn), and its pcs were read at offsets past
 * the file's end.  Loaders map a library's segments at their file offsets
 * from that base.  Returns 0 or -ENOMEM.
 */
static int add_announced(struct proc_maps *m, const struct proc_map *a)
{
	struct proc_map head = *a;

	if (a->offset && a->offset <= a->start) {
		head.start = a->start - a->offset;
		head.end = a->start;
		head.offset = 0;
		head.perms = PROC_MAP_R | PROC_MAP_P;
		if (proc_maps_add(m, &head) < 0)
			return -ENOMEM;
	}
	return proc_maps_add(m, a);
}

/*
 * The maps a perf sample of p is unwound against, when the cached ones
 * do not know its pc.  A stop reads maps while the thread is stopped
 * (on_stop); a perf sample is read some milliseconds after it was taken,
 * and a library mapped for a moment (dlopen, dlclose) may be gone or
 * elsewhere by then.  The kernel announced each executable mapping the
 * thread made, in order with its samples (perf_take keeps them in
 * p->announced): the one holding pc when the sample was read from the
 * ring is the one it ran in.  The sample gets maps of its own: those read
 * at this drain (once per drain and process), with that mapping over
 * them.  Returns 0 or -ENOMEM.
 */
static int perf_sample_maps(struct sampler *s, struct samp_proc *p, struct snap *sn)
{
	uint64_t pc = snap_pc(sn);
	const struct proc_map *a = proc_maps_find(&p->announced, pc);
	const struct proc_map *c = proc_maps_find(&p->maps, pc);
	struct proc_maps *m;

	if (a ? c && same_mapping(a, c) :
		proc_modules_lookup(p->mods, pc) ||
		/* JIT code in anonymous memory: a read finds the same */
		(c && (c->perms & PROC_MAP_X) && c->path[0] != '/'))
		return 0;
	if (!p->drain_maps_valid || p->drain_maps_at != s->stats.perf_drains) {
		if (proc_maps_read(p->pid, &p->drain_maps) < 0)
			return 0;
		p->drain_maps_valid = true;
		p->drain_maps_at = s->stats.perf_drains;
	}
	m = calloc(1, sizeof(*m));
	/* (merged into nothing: a copy) */
	if (!m || proc_maps_merge_older(m, &p->drain_maps) < 0 || (a && add_announced(m, a) < 0)) {
		proc_maps_free(m);
		free(m);
		return -ENOMEM;
	}
	sn->maps = m;
	sn->own_maps = true;
	return 0;
}

/*
 * The kernel announces the mappings made after a thread's event is open;
 * the maps read at attach know those made before that read.  A library
 * mapped in between (a dlopen during the perf_event_open probe, which can
 * take 10 ms) and unmapped before the drain that reads its samples was
 * known to neither: attach-hostile's churned library had a sample without
 * a name.  A read of maps once every event is open gives the executable
 * mappings the first read did not see as if announced.  Returns 0 or
 * -ENOMEM.
 */
static int perf_announce_gap(struct samp_proc *p)
{
	struct proc_maps now = { 0 };
	size_t i;
	int r = 0;

	if (!p->ready || proc_maps_read(p->pid, &now) < 0)
		return 0;
	for (i = 0; i < now.n && r == 0; i++) {
		const struct proc_map *m = &now.v[i];
		const struct proc_map *c = proc_maps_find(&p->maps, m->start);

		if ((m->perms & PROC_MAP_X) && m->path[0] == '/' && !(c && same_mapping(c, m)))
			r = proc_maps_add(&p->announced, m);
	}
	proc_maps_free(&now);
	return r;
}

/* Every thread's samples so far into s->snaps. */
static int perf_drain(struct sampler *s)
{
	size_t i, n = tracer_thread_count(s->tracer);
	int r;

	s->stats.perf_drains++;
	for (i = 0; i < n; i++) {
		struct tracer_thread *th = tracer_thread_at(s->tracer, i);
		struct samp_thread *st = th->user;

		if (st && st->perf) {
			r = perf_take(s, th, true);
			if (r < 0)
				return r;
		}
	}
	return 0;
}

/* Whether process p runs Go code (see SAMPLER_PERF_GO). */
static bool runs_go(const struct samp_proc *p)
{
	size_t i, n = proc_modules_count(p->mods);

	for (i = 1; i <= n; i++) {
		const struct proc_module *m = proc_modules_get(p->mods, (uint32_t)i);

		if (m && m->mapped && m->go_build_id)
			return true;
	}
	return false;
}

/*
 * Before the session's last tick, or to go on at stops: every thread's
 * samples taken, its event closed, and its CPU time since its last sample
 * handed to the stop path (as the schedstat baseline it charges from).
 * The next tick interrupts the threads that run, and reads the blocked
 * ones in place.
 */
static int perf_handoff(struct sampler *s)
{
	size_t i, n = tracer_thread_count(s->tracer);
	struct procfs_sched sc;
	uint64_t owed;
	int r;

	if (!s->perf_on)
		return 0;
	r = perf_drain(s);
	for (i = 0; i < n; i++) {
		struct tracer_thread *th = tracer_thread_at(s->tracer, i);
		struct samp_thread *st = th->user;

		if (!st || !st->perf)
			continue;
		if (perf_thread_unsampled(st->perf, &owed) == 0 &&
		    procfs_task_sched(tracer_fds(s->tracer), &th->task, &sc) == 0) {
			st->sampled_run_ns = sc.run_ns > owed ? sc.run_ns - owed : 0;
			st->read_run_ns = st->sampled_run_ns;
			st->primed = true;
		}
		perf_close_thread(s, th, true);
	}
	s->perf_on = false;
	s->n_unperf = 0;
	return r;
}

/* With SAMPLER_SOURCE_AUTO, a process of the session turned out to run Go
 * (at attach, after an exec, or new): the session goes on at stops. */
static int perf_check(struct sampler *s)
{
	size_t i;

	s->perf_check_go = false;
	if (s->o.source != SAMPLER_SOURCE_AUTO)
		return 0;
	for (i = 0; i < s->n_procs; i++) {
		struct samp_proc *p = s->procs[i];

		if (p->gone || !p->ready || before_exec(s, p) || !runs_go(p))
			continue;
		s->stats.perf_refused = SAMPLER_PERF_GO;
		/* (the samples taken so far were perf's: samples_unstopped) */
		s->stats.source = SAMPLER_SOURCE_PTRACE;
		return perf_handoff(s);
	}
	return 0;
}

/* Memory and stack sizes for the perf source. */
static void perf_sizes(struct sampler *s)
{
	size_t stack = s->o.perf_stack_size ? s->o.perf_stack_size : s->o.stack_size;

	if (stack > PERF_THREAD_STACK_MAX)
		stack = PERF_THREAD_STACK_MAX;
	s->perf_stack_max = stack & ~(size_t)7;
	/* First the small copy, unless a size was asked for. */
	s->perf_stack = s->o.perf_stack_size || s->perf_stack_max < PERF_STACK_DEFAULT ?
			s->perf_stack_max : PERF_STACK_DEFAULT;
	s->stats.perf_stack = s->perf_stack;
}

/*
 * Right after attach: the perf source when asked for and possible.  With
 * SAMPLER_SOURCE_AUTO a refusal (perf events not permitted or not there,
 * more threads than the rings' budget, a deeper copy asked for than a
 * sample carries, Go code) is no error: the session samples at stops, and
 * stats.perf_refused says why.  A thread whose event cannot be opened
 * while others' could is sampled at stops (perf_fallbacks).  Returns 0
 * or, with SAMPLER_SOURCE_PERF, -errno.
 */
static int perf_start(struct sampler *s)
{
	size_t i, n = tracer_thread_count(s->tracer), opened = 0;
	bool auto_ = s->o.source == SAMPLER_SOURCE_AUTO;
	int r = 0, first = 0;

	s->stats.source = SAMPLER_SOURCE_PTRACE;
	if (s->o.source == SAMPLER_SOURCE_PTRACE || s->o.mode != SAMPLER_CPU ||
	    s->o.stop != SAMPLER_STOP_THREAD)
		return 0;
	perf_sizes(s);
	if (auto_ && s->o.perf_stack_size > PERF_THREAD_STACK_MAX) {
		s->stats.perf_refused = SAMPLER_PERF_STACK;
		return 0;
	}
	if (auto_ && (uint64_t)n * perf_ring_for(s->perf_stack) > PERF_RING_BUDGET) {
		s->stats.perf_refused = SAMPLER_PERF_THREADS;
		return 0;
	}
	if (auto_ && !before_exec(s, s->procs[0]) && runs_go(s->procs[0])) {
		s->stats.perf_refused = SAMPLER_PERF_GO;
		return 0;
	}
	r = perf_thread_probe();
	if (r < 0)
		goto refused;
	s->perf_on = true;
	for (i = 0; i < n; i++) {
		struct tracer_thread *th = tracer_thread_at(s->tracer, i);

		if (!th->user)
			continue;
		r = perf_open_thread(s, th, s->perf_stack);
		if (r == 0) {
			opened++;
		} else if (r != -ESRCH && r != -ENOENT) {
			/* (a thread gone meanwhile is not refused) */
			if (!first)
				first = r;
			s->n_unperf++;
			s->stats.perf_fallbacks++;
		}
	}
	if (opened) {
		s->stats.source = SAMPLER_SOURCE_PERF;
		for (i = 0; i < s->n_procs; i++) {
			if (perf_announce_gap(s->procs[i]) < 0)
				return -ENOMEM;
		}
		return 0;
	}
	r = first ? first : -ESRCH;
	for (i = 0; i < n; i++)
		perf_close_thread(s, tracer_thread_at(s->tracer, i), false);
	s->perf_on = false;
	s->n_unperf = 0;
	s->stats.perf_fallbacks = 0;
	s->stats.perf_threads = 0;
refused:
	s->stats.perf_refused = SAMPLER_PERF_ERRNO;
	s->stats.perf_errno = r;
	return auto_ ? 0 : r;
}

/*
 * The maps at this stop, for the unwind after it.  Maps read at an earlier
 * stop of the same round and not taken yet are kept under them: the copy
 * made then needs them (a library its thread ran in may be gone by now).
 */
static int read_stop_maps(struct samp_proc *p)
{
	struct proc_maps now = { NULL, 0 };
	int ret;

	if (!p->stop_maps_valid)
		return proc_maps_read(p->pid, &p->stop_maps);
	ret = proc_maps_read(p->pid, &now);
	if (ret == 0)
		ret = proc_maps_merge_older(&now, &p->stop_maps);
	if (ret < 0) {
		proc_maps_free(&now);
		return ret;
	}
	proc_maps_free(&p->stop_maps);
	p->stop_maps = now;
	return 0;
}

static bool on_stop(struct tracer *t, struct tracer_thread *th, bool group_stopped, void *arg)
{
	struct sampler *s = arg;
	struct samp_thread *st = th->user;
	bool hold = s->holding;
	struct samp_proc *p;
	struct snap *sn;

	/* A job-control stop uses no CPU: nothing to sample in cpu mode. */
	if (!st || (group_stopped && s->o.mode == SAMPLER_CPU))
		return false;
	if (before_exec(s, st->proc))
		return false;
	p = st->proc;
	if (!p->ready && refresh_maps(p) < 0)
		return false;
	sn = next_snap(s);
	if (!sn) {
		s->error = -ENOMEM;
		return false;
	}
	if (snap_capture_limited(sn, p->pid, th->tid, &th->regs, &p->maps,
				 copy_limit(st, th->regs.rsp, s->o.stack_size)) < 0)
		return false;
	/* A signal came since the last sample: this stop may be at its
	 * handler's first instruction, and then the time since that sample
	 * was used by the code the signal interrupted (and the kernel's
	 * delivery), not by a handler that has not run yet. */
	if (th->last_signal && sigframe_leave_handler(sn, p->pid, th->last_signal, &p->maps))
		s->stats.samples_signal_entry++;
	sn->own_maps = false;
	sn->unstopped = false;
	if (procs_pc_unknown(p, sn->regs.rip) && read_stop_maps(p) == 0) {
		/* Still stopped: a library mapped for a moment (dlopen and
		 * dlclose in a loop) is in the maps now and may be gone once
		 * the thread runs.  Modules are made from this copy later,
		 * off the stop.  Not rate-limited: it costs one read of maps
		 * per sample whose pc is in code nobody knows yet (never for
		 * JIT code in anonymous memory, see pc_unknown). */
		p->stop_maps_valid = true;
		p->maps_read_ns = cprof_now_ns();
		sn->own_maps = true;
	}
	sn->cpu_ns = s->o.mode == SAMPLER_WALL ? wall_value(s, st) : st->seen_run_ns - st->sampled_run_ns;
	sn->key = st->label;
	st->sampled_run_ns = st->seen_run_ns;
	st->signal_defers = 0;
	s->n_snaps++;
	/* thread policy: copied, so resume at once; process policy: hold
	 * until every sampled thread is copied. */
	return hold;
}

static void on_exec(struct tracer *t, pid_t pid, void *arg)
{
	struct sampler *s = arg;
	struct samp_proc *p = proc_of(s, pid);
	size_t i, n = tracer_thread_count(t);

	/* Samples the kernel took before the exec are of the old image. */
	for (i = 0; s->perf_on && i < n; i++) {
		struct tracer_thread *th = tracer_thread_at(t, i);
		struct samp_thread *st = th->user;

		if (st && st->proc == p && st->perf && perf_take(s, th, false) < 0)
			s->error = -ENOMEM;
	}
	if (p)
		procs_exec(p, cprof_now_ns());
	if (p == s->procs[0])
		s->root_execed = true;
	/* A Go program: at stops from its first instruction.  (Maps that
	 * could not be read now are read at the next sample, which asks
	 * again.) */
	if (s->perf_on && perf_check(s) < 0)
		s->error = -ENOMEM;
	/* Stacks kept for reuse belong to the old image. */
	for (i = 0; i < n; i++) {
		struct samp_thread *st = tracer_thread_at(t, i)->user;

		if (st && st->proc == p) {
			st->have_last = false;
			st->stack_top = 0;
		}
	}
}

static const struct tracer_ops sampler_ops = {
	.on_stop = on_stop,
	.on_thread = on_thread,
	.on_exec = on_exec,
};

/*
 * Whether a sample's frames say the cached maps are stale: its SP or a pc
 * lies in no mapping we know, or in a file mapping we have no module for
 * (a library mapped since, e.g. libc right after exec), or in memory that
 * is not executable.  A pc in a known anonymous executable mapping (JIT
 * code) is no reason: re-reading would find the same.
 * MAPS_MIN_NS keeps a burst of such samples to one re-read.
 */
static bool needs_maps_retry(const struct samp_proc *p, const struct snap *sn,
			     const struct prof_frame *f, size_t n)
{
	size_t i;

	/* Maps read while a thread of this round was stopped know more than
	 * a read now, after the threads ran on: a library mapped for a moment
	 * is in them and may be gone since.  Re-read at the next round. */
	if (p->stop_maps_taken || cprof_now_ns() - p->maps_read_ns < MAPS_MIN_NS)
		return false;
	if (sn->sp_unmapped)
		return true;
	for (i = 0; i < n; i++) {
		const struct proc_map *m;

		if (f[i].module || (f[i].flags & PROF_FRAME_TRUNCATED))
			continue;
		m = proc_maps_find(&p->maps, f[i].addr);
		if (!m || !(m->perms & PROC_MAP_X) || m->path[0] == '/')
			return true;
	}
	return false;
}

static size_t unknown_frames(const struct prof_frame *f, size_t n)
{
	size_t i, k = 0;

	for (i = 0; i < n; i++)
		k += !f[i].module && !(f[i].flags & PROF_FRAME_TRUNCATED);
	return k;
}

/* *used: the bytes of the copy the walks read (remote_stack_used);
 * *ran_off: the walk kept ran off the copy (remote_ran_off_copy). */
static size_t unwind_snap(struct sampler *s, struct samp_proc *p, const struct snap *sn,
			  enum remote_end *end, size_t *used, bool *ran_off)
{
	size_t n = remote_unwind(p->unwinder, sn, s->frames, s->o.max_frames, end);
	enum remote_end end2;
	size_t n2;

	*used = remote_stack_used(p->unwinder);
	*ran_off = remote_ran_off_copy(p->unwinder);
	s->stats.unwinds_reused += remote_reused(p->unwinder);
	if (!needs_maps_retry(p, sn, s->frames, n) || refresh_maps(p) < 0)
		return n;
	/* A library or thread stack new since the last read: unwind the copy
	 * again with the new modules.  But the maps are read after the thread
	 * resumed, and a library mapped for a moment may be gone from them:
	 * keep whichever walk knows more frames. */
	n2 = remote_unwind(p->unwinder, sn, s->frames2, s->o.max_frames, &end2);
	if (remote_stack_used(p->unwinder) > *used)
		*used = remote_stack_used(p->unwinder);
	if (unknown_frames(s->frames2, n2) < unknown_frames(s->frames, n) ||
	    (unknown_frames(s->frames2, n2) == unknown_frames(s->frames, n) && n2 > n)) {
		memcpy(s->frames, s->frames2, n2 * sizeof(*s->frames));
		*end = end2;
		*ran_off = remote_ran_off_copy(p->unwinder);
		return n2;
	}
	return n;
}

/* entry: NULL, or the thread's last_entry when f are its last_frames (see
 * prof_stacks_add_ref). */
static int add_sample(struct sampler *s, uint32_t label, const struct prof_frame *f, size_t n,
		      uint64_t value, uint32_t *entry)
{
	int64_t values[2] = { 1, (int64_t)value };
	int ret;

	if (!n)
		return 0;
	if (s->o.sink) {
		s->o.sink(label, f, n, values, s->o.sink_arg);
	} else {
		ret = prof_stacks_add_ref(s->stacks, entry, label, f, n, values);
		if (ret < 0)
			return ret;
	}
	s->stats.samples++;
	s->stats.value_ns += value;
	if (label && s->labels[label - 1].proc) {
		s->labels[label - 1].proc->samples++;
		s->labels[label - 1].proc->value_ns += value;
	}
	return 0;
}

/* Wall mode keeps each thread's last stack, to reuse while it does not run. */
static void remember(struct sampler *s, struct tracer_thread *th, const struct prof_frame *f,
		     size_t n)
{
	struct samp_thread *st = th ? th->user : NULL;

	if (!st || s->o.mode != SAMPLER_WALL)
		return;
	if (!st->last_frames) {
		st->last_frames = malloc(s->o.max_frames * sizeof(*f));
		if (!st->last_frames)
			return;
	}
	memcpy(st->last_frames, f, n * sizeof(*f));
	st->last_entry = 0;
	st->n_last = n;
	st->have_last = n > 0;
}

/* The process a copy was taken in, through its thread's label. */
static struct samp_proc *snap_proc(const struct sampler *s, const struct snap *sn)
{
	return sn->key && sn->key <= s->n_labels ? s->labels[sn->key - 1].proc : NULL;
}

/*
 * Serves the stops that came while the tracing thread was busy with a
 * tick's reads or unwinding, at most every SERVE_NS: a thread in a
 * signal-delivery-stop waits until its signal is passed on, and must not
 * wait for the tick.  One read of the signalfd when nothing came.  A
 * thread may appear or go meanwhile: callers look threads up again after
 * it, and an interrupt stop served here may add a snapshot.
 */
static void serve_waiting(struct sampler *s)
{
	uint64_t now = cprof_now_ns();
	int r;

	if (!s->tracer || now - s->served_ns < SERVE_NS)
		return;
	s->served_ns = now;
	r = tracer_poll(s->tracer, 0);
	if (r > 0)
		s->pending_events |= r;
}

/* The thread at index i after serve_waiting, or NULL when fewer threads
 * are left. */
static struct tracer_thread *thread_at(struct sampler *s, size_t i)
{
	serve_waiting(s);
	return tracer_thread_at(s->tracer, i);
}

/* Frees a copy's own maps (perf_sample_maps), used or not. */
static void drop_snap_maps(struct snap *sn)
{
	if (!sn->maps)
		return;
	proc_maps_free(sn->maps);
	free(sn->maps);
	sn->maps = NULL;
}

/* Puts the kernel frames of a perf sample under its n user frames
 * (s->frames has room for them).  Returns the new count. */
static size_t add_kernel_frames(struct sampler *s, const struct snap *sn, size_t n)
{
	size_t i;

	if (!sn->n_kernel)
		return n;
	memmove(s->frames + sn->n_kernel, s->frames, n * sizeof(*s->frames));
	for (i = 0; i < sn->n_kernel; i++)
		s->frames[i] = (struct prof_frame){
			.addr = sn->kernel[i],
			.flags = PROF_FRAME_KERNEL | (i == 0 ? PROF_FRAME_EXACT : 0),
		};
	s->stats.kernel_samples++;
	s->stats.kernel_ns += sn->cpu_ns;
	return n + sn->n_kernel;
}

/* Unwinds and aggregates the snapshot at index i. */
static int process_snap(struct sampler *s, size_t i)
{
	struct snap *sn = &s->snaps[i];
	struct samp_proc *p = snap_proc(s, sn);
	enum remote_end end;
	size_t n, used;
	bool ran_off;

	if (!p || !p->unwinder)
		return 0;
	n = unwind_snap(s, p, sn, &end, &used, &ran_off);
	learn_copy(s, sn, end, used, ran_off);
	if (!n)
		return 0;
	s->stats.ends[end]++;
	s->stats.samples_unstopped += sn->unstopped;
	n = add_kernel_frames(s, sn, n);
	remember(s, tracer_find_thread(s->tracer, sn->tid), s->frames, n);
	return add_sample(s, sn->key, s->frames, n, sn->cpu_ns, NULL);
}

/* The rings' records the samples unwound viewed go back to the kernel,
 * once no sample waiting views any. */
static void perf_give_back(struct sampler *s)
{
	size_t i, n;

	/* (no tracer: the session is over, its rings closed) */
	if (!s->perf_viewed || !s->tracer)
		return;
	n = tracer_thread_count(s->tracer);
	for (i = 0; i < s->n_snaps; i++) {
		if (snap_viewing(&s->snaps[i]))
			return;
	}
	for (i = 0; i < n; i++) {
		struct samp_thread *st = tracer_thread_at(s->tracer, i)->user;

		if (st && st->perf)
			perf_thread_release(st->perf);
	}
	s->perf_viewed = false;
}

/*
 * Unwinds and aggregates the snapshots taken so far; their threads run
 * again already.  Only the copies there are now: a stop served in this
 * loop adds one, and the maps read at that stop are held for it by the
 * next call.
 *
 * Two passes.  First the copies whose pc was found in the cached maps at
 * their stop (procs_pc_unknown), unwound against those maps; then the
 * copies made at stops that read the maps anew, against what was read
 * then.  One set of maps for the whole round named wrongly: a copy made
 * in a library that another thread dlclosed before a later stop of the
 * round read the maps was unwound with maps without that library.
 */
static int process_snaps(struct sampler *s)
{
	size_t i, n0 = s->n_snaps;
	int pass, ret;

	for (i = 0; i < n0; i++) {
		struct samp_proc *p = snap_proc(s, &s->snaps[i]);

		if (p)
			p->stop_maps_taken = false;
	}
	for (i = 0; i < n0; i++) {
		struct samp_proc *p = snap_proc(s, &s->snaps[i]);

		if (p && p->stop_maps_valid && p->unwinder) {
			procs_hold_stop_maps(p);
			p->stop_maps_taken = true;
		}
	}
	for (pass = 0; pass < 2; pass++) {
		for (i = 0; pass && i < n0; i++) {
			struct samp_proc *p = snap_proc(s, &s->snaps[i]);

			if (p && p->round_maps_valid && p->unwinder)
				procs_take_round_maps(p);
		}
		for (i = 0; i < n0; i++) {
			if (s->snaps[i].own_maps != pass)
				continue;
			/* A stop served here may grow (and move) s->snaps:
			 * process_snap takes its pointer after. */
			serve_waiting(s);
			if (s->snaps[i].maps) {
				struct samp_proc *p = snap_proc(s, &s->snaps[i]);

				if (p && p->unwinder)
					procs_use_maps(p, s->snaps[i].maps);
			}
			ret = process_snap(s, i);
			drop_snap_maps(&s->snaps[i]);
			if (ret < 0)
				return ret;
		}
	}
	/* The copies made meanwhile to the front, for the next call. */
	for (i = n0; i < s->n_snaps; i++) {
		struct snap t = s->snaps[i - n0];

		s->snaps[i - n0] = s->snaps[i];
		s->snaps[i] = t;
	}
	s->n_snaps -= n0;
	perf_give_back(s);
	if (s->retire && !s->n_snaps) {
		/* No copy waits for them any more. */
		s->retire = false;
		for (i = 0; i < s->n_procs; i++) {
			if (s->procs[i]->gone && s->procs[i]->unwinder)
				procs_retire(s->procs[i]);
		}
	}
	return 0;
}

/*
 * A blocked thread's stack read in place, without a stop: SP and PC from
 * its syscall file, the stack copied, unwound into s->frames, and its
 * schedstat read again (now is the one read before): if it ran meanwhile
 * the copy may mix two moments, and nothing is taken.  nr (may be NULL)
 * gets the system call it is blocked in.  Returns the number of frames, 0
 * when the thread must be stopped to be sampled.
 */
static size_t read_in_place(struct sampler *s, struct tracer_thread *th,
			    const struct procfs_sched *now, long *nr)
{
	struct samp_thread *st = th->user;
	struct samp_proc *p = st->proc;
	struct procfs_fdcache *fds = tracer_fds(s->tracer);
	struct procfs_sched after;
	enum remote_end end;
	size_t n, used;
	bool ran_off;
	int fd;

	fd = procfs_task_fd(fds, &th->task, PROCFS_SYSCALL);
	if (fd < 0 || !p->unwinder ||
	    snap_capture_in_place(&s->blocked, p->pid, th->tid, fd, &p->maps, nr) < 0)
		return 0;
	n = unwind_snap(s, p, &s->blocked, &end, &used, &ran_off);
	if (!n || end == REMOTE_END_NEED_REGS)
		return 0;
	if (procfs_task_sched(fds, &th->task, &after) < 0 || !procfs_sched_same(&after, now))
		return 0;
	s->stats.samples_unstopped++;
	s->stats.ends[end]++;
	return n;
}

/* Wall mode: a sample of st's last stack again, its time since then. */
static bool add_last(struct sampler *s, struct samp_thread *st)
{
	s->stats.samples_reused++;
	return add_sample(s, st->label, st->last_frames, st->n_last, wall_value(s, st),
			  &st->last_entry) == 0;
}

/*
 * Wall mode: reuse the thread's last stack if it did not run since, else
 * read it in place if it is blocked (its syscall file says where; one that
 * runs, or is stopped outside a system call, says nothing we can use).
 * Returns true when sampled (no stop needed).
 */
static bool sample_in_place(struct sampler *s, struct tracer_thread *th,
			    const struct procfs_sched *now)
{
	struct samp_thread *st = th->user;
	size_t n;

	if (st->have_last && procfs_sched_same(&st->captured, now))
		return add_last(s, st);
	n = read_in_place(s, th, now, NULL);
	if (!n)
		return false;
	st->captured = *now;
	remember(s, th, s->frames, n);
	return add_sample(s, st->label, s->frames, n, wall_value(s, st), &st->last_entry) == 0;
}

/*
 * cpu mode, a blocked thread that used CPU since its last sample: the
 * sample that would find it running may never come (a thread that wakes
 * for microseconds), so its CPU is charged where it waits, read in place,
 * once it is a sample's worth, and at the session's last tick whatever it
 * is: the profile's total stays the CPU its threads used.  Not while it is
 * in execve: the stack is the old program's, which the exec replaces (for
 * cprof record, a copy of cprof waiting to become the command), and the
 * CPU goes with its next sample, in the program it became.
 */
static void charge_in_place(struct sampler *s, struct tracer_thread *th,
			    const struct procfs_sched *now)
{
	struct samp_thread *st = th->user;
	long nr = -1;
	size_t n = read_in_place(s, th, now, &nr);

	if (!n || nr == SYS_execve || nr == SYS_execveat)
		return;
	if (add_sample(s, st->label, s->frames, n, now->run_ns - st->sampled_run_ns, NULL) == 0)
		st->sampled_run_ns = now->run_ns;
}

/*
 * cpu mode: whether th's sample waits for a later tick.  A thread whose
 * signal was passed on after this tick came due was stopped in that
 * signal's delivery when it came due, using no CPU; interrupted now it
 * would stop where its handler starts, just after the re-injection.  The
 * tracing thread is awake at such moments because of the signal, so on a
 * thread that takes signals in a loop the samples would all come at that
 * point of its loop, however its CPU time is spent.  Its CPU time goes to
 * its next sample instead, which comes within SIGNAL_DEFER_MAX ticks.
 */
static bool defer_for_signal(struct sampler *s, struct tracer_thread *th)
{
	struct samp_thread *st = th->user;

	if (s->o.mode != SAMPLER_CPU || !st || th->signal_ns < s->due_ns ||
	    st->signal_defers >= SIGNAL_DEFER_MAX)
		return false;
	st->signal_defers++;
	s->stats.samples_signal_deferred++;
	return true;
}

/* Decides whether th must be interrupted this tick (and samples it in
 * place when it need not). */
static bool wants_stop(struct sampler *s, struct tracer_thread *th)
{
	struct samp_thread *st = th->user;
	struct procfs_fdcache *fds = tracer_fds(s->tracer);
	struct procfs_sched sc;
	char comm[64];
	bool pre_exec;

	if (!st || th->pending || th->held)
		return false;
	/* A process new to the session: its maps, before its first sample. */
	if (!st->proc->ready && refresh_maps(st->proc) < 0)
		return false;
	/* schedstat first: one pread says whether the thread ran at all. */
	if (procfs_task_sched(fds, &th->task, &sc) < 0)
		return false;
	s->stats.sched_reads++;
	pre_exec = before_exec(s, st->proc);
	if (!st->primed || pre_exec) {
		/* (Before the exec: not yet the program, its CPU not counted.) */
		st->sampled_run_ns = sc.run_ns;
		st->read_run_ns = sc.run_ns;
		st->primed = true;
		if (pre_exec)
			return false;
	}
	if (s->o.mode == SAMPLER_CPU) {
		bool ran = sc.run_ns != st->read_run_ns;
		uint64_t owed = sc.run_ns - st->sampled_run_ns;
		/* worth charging where it waits, if blocked (charge_in_place) */
		bool charge = owed && (s->read_all || owed >= s->period_ns);
		int running;

		s->hot_run_ns += sc.run_ns - st->read_run_ns;
		st->read_run_ns = sc.run_ns;
		/* Only a thread that ran since it was last read can be running
		 * now (or one woken and not yet on a CPU: it is seen once it
		 * ran).  One that did not keeps its CPU since its last sample
		 * for the sample that comes when it is next found running. */
		if (th->listening || !owed || (!ran && !charge))
			return false;
		running = procfs_task_running(fds, &th->task);
		if (running < 0)
			return false;
		/* Only one about to be interrupted: see defer_for_signal. */
		if (running && defer_for_signal(s, th))
			return false;
		/* Its name now: threads rename. */
		if ((running || charge) && procfs_task_comm(fds, &th->task, comm, sizeof(comm)) == 0)
			update_label(s, th, comm);
		if (!running) {
			if (charge)
				charge_in_place(s, th, &sc);
			return false;
		}
		st->seen_run_ns = sc.run_ns;
		st->hot_tick = s->stats.ticks + HOT_TICKS;
		return true;
	}
	if (st->have_last && procfs_sched_same(&st->captured, &sc)) {
		sample_in_place(s, th, &sc);
		return false;
	}
	if (procfs_task_comm(fds, &th->task, comm, sizeof(comm)) < 0)
		return false;
	update_label(s, th, comm);
	/* Whether it runs, the syscall file read in place tells. */
	if (sample_in_place(s, th, &sc))
		return false;
	if (th->listening) {
		/* Stopped by job control and not readable in place: an
		 * interrupt would wake it in the kernel only to stop again, and
		 * its state would flicker for whoever watches the stop.  It
		 * runs none of its code meanwhile: its last stack stands for
		 * the stop, or its time goes to its next sample. */
		if (st->have_last) {
			st->captured = sc;
			add_last(s, st);
		}
		return false;
	}
	st->seen_run_ns = sc.run_ns;
	st->captured = sc;
	return true;
}

/* Waits until no interrupt is outstanding (or STOP_WAIT_NS passed: a thread
 * in uninterruptible sleep stops late, and its stop is then served by the
 * main loop). */
static int wait_stops_for(struct sampler *s, uint64_t ns)
{
	int r = tracer_wait_stops(s->tracer, ns);

	if (r < 0)
		return r;
	s->pending_events |= r;
	return 0;
}

static int wait_stops(struct sampler *s)
{
	return wait_stops_for(s, STOP_WAIT_NS);
}

static bool is_hot(const struct sampler *s, const struct tracer_thread *th)
{
	const struct samp_thread *st = th->user;

	return !st || st->hot_tick > s->stats.ticks;
}

/* The sum of the traced processes' CPU clocks: the CPU time of all their
 * threads, dead ones included.  Returns false if one cannot be read. */
static bool read_proc_clock(struct sampler *s, uint64_t *ns, size_t *procs)
{
	struct timespec ts;
	size_t i;

	*ns = 0;
	*procs = 0;
	for (i = 0; i < s->n_procs; i++) {
		/* The kernel's encoding of a process CPU clock (CPUCLOCK_SCHED). */
		clockid_t clk = (clockid_t)((~(unsigned)s->procs[i]->pid << 3) | 2);

		if (s->procs[i]->gone)
			continue;
		if (clock_gettime(clk, &ts) < 0)
			return false;
		*ns += (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
		(*procs)++;
	}
	return true;
}

/*
 * This tick's threads to stop, into s->pick; returns how many.
 *
 * wall mode reads every thread.  cpu mode reads every tick only the hot
 * tier, threads sampled in the last HOT_TICKS ticks (and new ones), and the
 * others only when something says one of them ran: the target's process
 * CPU clock grew by more than the hot threads' schedstat did.  Both count
 * the same thing (a task's sum_exec_runtime), and each thread's reads
 * telescope, so the difference summed over ticks is the CPU the other
 * threads used, up to the few microseconds the reads of one tick are
 * apart: past one period's worth of it (the resolution of the profile,
 * COLD_SLACK_NS at least), or COLD_MAX_NS after the last full read, every
 * thread is read.  Nothing is lost: a thread's value is its CPU time since
 * its previous sample, whenever that sample comes.  The clock costs the
 * kernel a walk over every thread, so with many threads or a high rate it
 * is read every few ticks (CLOCK_SHARE); the hot tier's reads add up in
 * between.
 */
/*
 * wall mode: every thread is sampled at every tick while a tick can read
 * them all within 1/WALL_SHARE of a period; beyond that (thousands of threads, or a
 * high rate) a rotating subset of wall_cap threads, adjusted from the
 * measured cost of a thread, so the ticks keep their rate.  Each sample
 * then stands for the time since its thread's previous one (wall_value):
 * shares and totals stay unbiased, and the rate each thread is sampled at
 * is reported (sampler_stats.effective_hz).
 */
static size_t choose_wall(struct sampler *s, size_t n)
{
	size_t i, k, chosen = 0, cap = s->wall_cap && !s->read_all ? s->wall_cap : n;

	if (cap >= n) {
		cap = n;
		s->wall_cursor = 0;
	} else {
		s->stats.ticks_rotated++;
	}
	for (k = 0; k < cap; k++) {
		struct tracer_thread *th;

		i = (s->wall_cursor + k) % n;
		th = thread_at(s, i);
		if (th && wants_stop(s, th))
			s->pick[chosen++] = th->tid;
	}
	if (cap < n)
		s->wall_cursor = (s->wall_cursor + cap) % n;
	s->wall_visited = cap;
	return chosen;
}

/* wall mode, after a tick that read `visited` threads using tick_ns of CPU
 * (CPU, not elapsed time: the budget is a share of a core, and a tick
 * preempted or waiting for a stop costs no more): the number of threads
 * the next ones can read in 1/WALL_SHARE of a period. */
static void adapt_wall_cap(struct sampler *s, size_t n, uint64_t tick_ns)
{
	uint64_t per = s->wall_visited ? tick_ns / s->wall_visited : 0, want;

	if (!per)
		return;
	want = s->period_ns / WALL_SHARE / per;
	/* smoothed: one slow tick (a page fault, a preemption) must not halve it */
	want = s->wall_cap ? (3 * (uint64_t)s->wall_cap + want) / 4 : want;
	if (want < WALL_MIN_THREADS)
		want = WALL_MIN_THREADS;
	s->wall_cap = want >= n ? 0 : (size_t)want;
}

/* cpu mode: reads the process CPU clock, and schedules the next read so
 * that reading it costs under 1/CLOCK_SHARE of the time. */
static bool read_clock_paced(struct sampler *s, uint64_t *clock, size_t *procs)
{
	uint64_t t0 = cprof_now_ns(), cost;
	bool ok = read_proc_clock(s, clock, procs);

	cost = cprof_now_ns() - t0;
	s->clock_tick = s->stats.ticks + 1 + cost * CLOCK_SHARE / s->period_ns;
	return ok;
}

static size_t choose(struct sampler *s, size_t n)
{
	uint64_t now = cprof_now_ns(), clock = 0;
	uint64_t slack = s->period_ns > COLD_SLACK_NS ? s->period_ns : COLD_SLACK_NS;
	size_t i, chosen = 0, procs = 0;
	bool all, checked = false;

	s->tick_ns = now;
	if (s->o.mode == SAMPLER_WALL)
		return choose_wall(s, n);
	if (s->perf_on) {
		/* Only the threads perf events could not take (few): each
		 * tick reads them all. */
		for (i = 0; i < n; i++) {
			struct tracer_thread *th = thread_at(s, i);
			struct samp_thread *st = th ? th->user : NULL;

			if (st && !st->perf && wants_stop(s, th))
				s->pick[chosen++] = th->tid;
		}
		return chosen;
	}

	all = s->read_all || now - s->cold_read_ns >= COLD_MAX_NS;
	/* A full read sets a new baseline: the clock is read with it. */
	if (all || s->stats.ticks >= s->clock_tick) {
		checked = true;
		/* A process that came or went changes what the clock sums. */
		if (!read_clock_paced(s, &clock, &procs) || procs != s->clock_procs)
			all = true;
	}
	for (i = 0; i < n; i++) {
		struct tracer_thread *th = thread_at(s, i);

		if (th && (all || is_hot(s, th)) && wants_stop(s, th))
			s->pick[chosen++] = th->tid;
	}
	if (checked && !all) {
		s->unexplained_ns += (int64_t)(clock - s->proc_cpu_ns) - (int64_t)s->hot_run_ns;
		if (s->unexplained_ns > (int64_t)slack) {
			all = true;
			for (i = 0; i < n; i++) {
				struct tracer_thread *th = thread_at(s, i);

				if (th && !is_hot(s, th) && wants_stop(s, th))
					s->pick[chosen++] = th->tid;
			}
		}
	}
	if (all) {
		s->unexplained_ns = 0;
		s->cold_read_ns = now;
		s->stats.full_reads++;
	}
	if (checked) {
		s->hot_run_ns = 0;
		s->proc_cpu_ns = clock;
		s->clock_procs = procs;
	}
	return chosen;
}

static int tick(struct sampler *s)
{
	size_t i, n = tracer_thread_count(s->tracer), chosen = 0;
	uint64_t cpu0 = s->o.mode == SAMPLER_WALL ? cprof_thread_cpu_ns() : 0;
	int r = 0;

	/* Grown with the thread count, never freed per tick: the hot path
	 * allocates nothing once the process stops growing. */
	if (n > s->cap_pick) {
		pid_t *nv = realloc(s->pick, n * sizeof(*nv));

		if (!nv)
			return -ENOMEM;
		s->pick = nv;
		s->cap_pick = n;
	}
	tracer_expire_interrupts(s->tracer, EXPIRE_NS);
	if (s->read_all) {
		r = perf_handoff(s);
		if (r < 0)
			return r;
	} else if (s->perf_on) {
		r = perf_drain(s);
		if (r == 0 && s->perf_check_go)
			r = perf_check(s);
		if (r < 0)
			return r;
		if (s->perf_on && !s->n_unperf) {
			r = process_snaps(s);
			perf_grow_all(s);
			return r < 0 ? r : s->error;
		}
		/* else the threads perf could not take, at stops */
	}
	/* Choose first, then stop.  By tid, not by pointer: a thread that
	 * exits while we wait for another's stop is freed by the tracer. */
	chosen = choose(s, n);
	if (s->o.stop == SAMPLER_STOP_PROCESS) {
		/* Hold the copied threads until all are copied, but not for
		 * long: a thread that finds no CPU to reach its stop on would
		 * otherwise keep the others stopped for the whole wait on a
		 * loaded machine.  Past HOLD_MAX_NS the
		 * held ones run, and late stops are resumed as they come. */
		s->holding = true;
		for (i = 0; i < chosen; i++) {
			struct tracer_thread *th = tracer_find_thread(s->tracer, s->pick[i]);

			if (th && !defer_for_signal(s, th))
				tracer_interrupt(s->tracer, th);
		}
		r = wait_stops_for(s, HOLD_MAX_NS);
		s->holding = false;
		tracer_resume_held(s->tracer);
		if (r >= 0)
			r = wait_stops(s);
	} else {
		for (i = 0; i < chosen && r >= 0; i++) {
			struct tracer_thread *th = tracer_find_thread(s->tracer, s->pick[i]);

			/* The others' stops and signals were served meanwhile. */
			if (!th || defer_for_signal(s, th))
				continue;
			if (tracer_interrupt(s->tracer, th) == 0)
				r = wait_stops_for(s, THREAD_WAIT_NS);
			if (s->pending_events & TRACER_EV_GONE)
				break;
		}
	}
	if (r < 0)
		return r;
	r = process_snaps(s);
	perf_grow_all(s);
	if (s->o.mode == SAMPLER_WALL && !s->read_all)
		adapt_wall_cap(s, n, cprof_thread_cpu_ns() - cpu0);
	return r < 0 ? r : s->error;
}

int sampler_perf_probe(void)
{
	return perf_thread_probe();
}

int sampler_create(struct sampler **out, const struct sampler_opts *o)
{
	struct sampler *s;
	int ret = -ENOMEM;

	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->o = *o;
	if (!s->o.max_frames)
		s->o.max_frames = 256;
	s->period_ns = 1000000000u / s->o.hz;
	/* (room for a perf sample's kernel frames under the user ones) */
	s->frames = calloc(s->o.max_frames + SNAP_KERNEL_MAX, sizeof(*s->frames));
	s->frames2 = calloc(s->o.max_frames, sizeof(*s->frames2));
	if (!s->frames || !s->frames2)
		goto err;
	ret = snap_init(&s->blocked, s->o.stack_size);
	if (ret < 0)
		goto err;
	ret = prof_stacks_create(&s->stacks, 2);
	if (ret < 0)
		goto err;
	s->procs = calloc(1, sizeof(*s->procs));
	if (!s->procs) {
		ret = -ENOMEM;
		goto err;
	}
	s->cap_procs = 1;
	ret = procs_create(&s->procs[0], o->pid, NULL, &s->mods);
	if (ret < 0)
		goto err;
	s->n_procs = 1;
	*out = s;
	return 0;
err:
	sampler_destroy(s);
	return ret;
}

void sampler_destroy(struct sampler *s)
{
	size_t i;

	if (!s)
		return;
	/* The views first: the root's table holds their modules. */
	for (i = s->n_procs; i-- > 0;)
		procs_destroy(s->procs[i]);
	free(s->procs);
	if (s->mods)
		proc_modules_destroy(s->mods);
	if (s->stacks)
		prof_stacks_destroy(s->stacks);
	for (i = 0; i < s->cap_snaps; i++) {
		drop_snap_maps(&s->snaps[i]);
		snap_fini(&s->snaps[i]);
	}
	snap_fini(&s->blocked);
	free(s->snaps);
	free(s->pick);
	free(s->frames);
	free(s->frames2);
	free(s->labels);
	free(s);
}

/* Right after every thread is seized, before the first tick. */
static int session_start(struct sampler *s)
{
	int ret;

	s->stats.attached = true;
	tracer_set_fraction_floor(s->tracer, s->period_ns);
	tracer_set_spin_adaptive(s->tracer, SPIN_NS);
	s->stats.start_realtime_ns = (uint64_t)cprof_realtime_ns();
	ret = refresh_maps(s->procs[0]);
	if (ret < 0)
		return ret;
	s->rng ^= cprof_now_ns() ^ ((uint64_t)getpid() << 32);
	ret = perf_start(s);
	if (ret < 0)
		return ret;
	if (s->o.after_attach)
		s->o.after_attach(s->o.after_attach_arg);
	return 0;
}

#define PROGRESS_NS 250000000u

/* The live numbers the session keeps only at its end, then the callback. */
static void report_progress(struct sampler *s, uint64_t start, uint64_t cpu0, uint64_t now)
{
	s->stats.elapsed_ns = now - start;
	s->stats.cprof_cpu_ns = cprof_thread_cpu_ns() - cpu0;
	tracer_stats_now(s->tracer, &s->stats.tracer);
	s->o.progress(&s->stats, s->o.progress_arg);
}

/*
 * A uniformly random fraction of the period, [0, period).
 *
 * Ticks at exact multiples of the period sample in lockstep with any work
 * that repeats at a period commensurate with it: a loop of 0.5 ms work
 * units under 100 Hz ticks was seen in the same phase for a whole second,
 * giving its two functions 55% and 82% of the samples in two runs of the
 * same work (binomial noise at 100 samples is +-5 points), and a loop
 * that changes function every 10 ms had one of them at 0% for 70% of the
 * time.  So the gap from one tick to the next is drawn uniformly from
 * [period/2, 3*period/2): the rate stays, each tick's phase against any
 * loop is uniform whatever the previous phases were, and that phase is
 * independent of the gap just drawn, which is what the sample stands for
 * (the CPU or wall time since the previous one).  One tick at a random
 * point of each period would also break the lockstep, but a tick late in
 * its period then follows a longer gap: on the 10 ms loop it gave fn_a
 * 59.5% of the time where it had 70%.
 */
static uint64_t period_fraction(struct sampler *s)
{
	return cprof_rand_below(&s->rng, s->period_ns);
}

/*
 * The perf source's ticks only empty the rings, every PERF_DRAIN_PERIODS
 * periods on average, at random gaps as the stop path's ticks.
 *
 * The kernel samples a thread at a fixed period until cprof draws another
 * (perf_gap, every PERF_LATTICE samples): the samples in between are a
 * lattice.  Each lattice's period is drawn from a range 0.9 periods wide,
 * so its step modulo the period of work that repeats faster than that is
 * uniform: any two samples of a lattice fall at independent phases of the
 * work, and a share has the variance of independent samples, whatever the
 * lattice's length.  Simulated (bench/lattice-sim.py: 70/30 work
 * repeating every 0.5 to 33 ms, 100 samples at 100 Hz), the sd is the same
 * for lattices of 1, 3, 6 and 8 samples; long ones only fatten the far
 * tails a little.  A draw costs an ioctl that waits for the thread's CPU
 * (an IPI, about 35 us of cprof's time on this VM): at one draw every 3
 * samples it was a third of cprof's CPU on xz at 100 Hz, and the
 * emptyings' wake-ups a fifth.
 */
static uint64_t perf_drain_period(const struct sampler *s)
{
	return s->period_ns * PERF_DRAIN_PERIODS;
}

/* A thread's next period, in its CPU time, drawn from [0.53, 1.43)
 * periods.  A draw restarts the kernel's timer, which loses the part of a
 * period already run: drawn every 3 samples from [0.5, 1.4), the rate was
 * 0.91 times -F on xz at 100 Hz; every 8 samples, 1.04 times, and 0.97
 * from [0.55, 1.45). */
static uint64_t perf_gap(struct sampler *s)
{
	return s->period_ns * 53 / 100 + period_fraction(s) * 9 / 10;
}

/* A new thread's first period: shorter, so that a thread that lives less
 * than a period (a pool's short task) is sampled about as often as the
 * stop path's ticks find it running; not much shorter, since it holds
 * until the first emptying of the ring. */
static uint64_t perf_first_gap(struct sampler *s)
{
	return s->period_ns / 4 + period_fraction(s) * 3 / 4;
}

static int session_loop(struct sampler *s)
{
	uint64_t period;
	bool drain_only;
	uint64_t start = cprof_now_ns(), next, now, wait;
	uint64_t deadline = s->o.duration_ns ? start + s->o.duration_ns : UINT64_MAX;
	/* the first report after one interval: at 0 s there is nothing to say,
	 * and the CPU share of a few microseconds is noise */
	uint64_t cpu0 = cprof_thread_cpu_ns();
	uint64_t next_progress = s->o.progress ? start + PROGRESS_NS : UINT64_MAX;
	size_t i;
	int r = 0;

	/* wall time is counted from here for the threads seized at attach */
	for (i = 0; i < tracer_thread_count(s->tracer); i++) {
		struct samp_thread *st = tracer_thread_at(s->tracer, i)->user;

		if (st)
			st->wall_ns = start;
	}

	s->rng ^= start ^ ((uint64_t)getpid() << 32);
	next = start + period_fraction(s);	/* a uniform first phase */
	for (;;) {
		/* Ticks that only empty the rings come as seldom as the rings
		 * allow; threads sampled at stops need the period (perf_check
		 * may end the perf source on the way). */
		drain_only = s->perf_on && !s->n_unperf;
		period = drain_only ? perf_drain_period(s) : s->period_ns;
		now = cprof_now_ns();
		if (now >= deadline)
			break;
		if (now >= next_progress) {
			report_progress(s, start, cpu0, now);
			next_progress = now + PROGRESS_NS;
		}
		if (now >= next) {
			s->due_ns = next;
			r = tick(s);
			if (r < 0)
				break;
			s->stats.ticks++;
			/* a gap uniform in [period / 2, 3 * period / 2) */
			next += period / 2 + cprof_rand_below(&s->rng, period);
			now = cprof_now_ns();
			if (next <= now) {
				uint64_t behind = (now - next) / period + 1;

				s->stats.ticks_missed += behind;
				next += behind * period;
			}
		} else {
			wait = (deadline < next ? deadline : next) - now;
			/* at a low -F, wake for the status line as well */
			if (next_progress - now < wait)
				wait = next_progress - now;
			r = tracer_poll(s->tracer, wait);
			if (r < 0)
				break;
			s->pending_events |= r;
			r = process_snaps(s);
			if (r < 0)
				break;
		}
		if (s->pending_events & TRACER_EV_STOP_REQUESTED) {
			s->stats.stop_requested = true;
			break;
		}
		if (__atomic_load_n(&s->stop, __ATOMIC_ACQUIRE))
			break;
		if (s->pending_events & TRACER_EV_GONE) {
			s->stats.target_exited = true;
			break;
		}
	}
	if (r >= 0 && (s->stats.ticks_rotated || s->o.mode == SAMPLER_CPU) &&
	    !(s->pending_events & TRACER_EV_GONE)) {
		/* One last tick over every thread, so that each thread's
		 * samples add up to the whole session: in wall mode the
		 * rotation left most threads' last stretch unsampled; in cpu
		 * mode a blocked thread's CPU since its last sample is
		 * charged where it waits (charge_in_place). */
		s->read_all = true;
		s->due_ns = cprof_now_ns();
		r = tick(s);
		s->read_all = false;
	}
	s->stats.elapsed_ns = cprof_now_ns() - start;
	if (s->o.mode == SAMPLER_WALL && s->stats.value_ns)
		s->stats.effective_hz = (double)s->stats.samples * 1e9 / (double)s->stats.value_ns;
	return r < 0 ? r : 0;
}

/* The session on the tracing thread, every thread seized (tracer_run). */
static int session_main(struct tracer *t, void *arg)
{
	struct sampler *s = arg;
	int ret;

	s->tracer = t;
	ret = session_start(s);
	if (ret == 0)
		ret = session_loop(s);
	/* Not handed off (the target went, or an error): the samples the
	 * rings hold are still samples. */
	for (size_t i = 0; s->perf_on && i < tracer_thread_count(t); i++)
		perf_close_thread(s, tracer_thread_at(t, i), true);
	s->perf_on = false;
	/* Stops that arrived after the last tick are still samples. */
	tracer_poll(t, 0);
	s->tracer = NULL;
	return ret;
}

int sampler_session(struct sampler *s)
{
	uint64_t cpu0;
	int ret, r;

	ret = tracer_run_tree(s->o.pid, s->o.tracer_flags, &sampler_ops, s, session_main,
			      &s->stats.tracer, NULL);
	s->stats.boosted = s->stats.tracer.boosted;
	/* The tracer let go: unwind the copies still waiting. */
	cpu0 = cprof_thread_cpu_ns();
	r = process_snaps(s);
	s->stats.cprof_cpu_ns = s->stats.tracer.thread_cpu_ns + (cprof_thread_cpu_ns() - cpu0);
	return ret < 0 ? ret : r;
}

void sampler_stop(struct sampler *s)
{
	__atomic_store_n(&s->stop, true, __ATOMIC_RELEASE);
}

const struct prof_stacks *sampler_stacks(const struct sampler *s)
{
	return s->stacks;
}

const struct proc_modules *sampler_modules(const struct sampler *s)
{
	return s->mods;
}

const struct sampler_stats *sampler_get_stats(const struct sampler *s)
{
	return &s->stats;
}

int sampler_thread_label(const struct sampler *s, uint32_t key, pid_t *tid, const char **name)
{
	if (key == 0 || key > s->n_labels)
		return -ENOENT;
	*tid = s->labels[key - 1].tid;
	*name = s->labels[key - 1].name;
	return 0;
}

int sampler_process_label(const struct sampler *s, uint32_t key, pid_t *pid, const char **name)
{
	if (key == 0 || key > s->n_labels || !s->labels[key - 1].proc)
		return -ENOENT;
	*pid = s->labels[key - 1].proc->pid;
	*name = s->labels[key - 1].proc_name;
	return 0;
}

size_t sampler_process_count(const struct sampler *s)
{
	return s->n_procs;
}

int sampler_process_at(const struct sampler *s, size_t i, struct sampler_process *out)
{
	if (i >= s->n_procs)
		return -ENOENT;
	out->pid = s->procs[i]->pid;
	out->name = s->procs[i]->name;
	out->samples = s->procs[i]->samples;
	out->value_ns = s->procs[i]->value_ns;
	return 0;
}
