/* SPDX-License-Identifier: MIT */
/*
 * The perf source: every thread gets a task-clock perf event whose samples
 * carry its registers and the top of its stack, copied by the kernel at a
 * timer interrupt of the thread's own CPU clock (unwind/perf_thread.h).  A
 * tick takes the samples out of the rings into the round, viewed where
 * the kernel wrote them, and gives the records back once they are
 * unwound.  Nothing stops a thread, so none of the stop's guarantees is at
 * stake (signals, EINTR, job control); the tracer still follows threads,
 * forks and execs.  When the session ends, or cannot go on with perf
 * events (a Go program), each thread goes to the stop source with its CPU
 * time since its last sample, which is charged where the thread is: the
 * accounting stays exact.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>

#include "lib/clock.h"
#include "unwind/perf_thread.h"
#include "unwind/python_sample.h"
#include "unwind/sampler_impl.h"

/* A thread's ring holds this many samples at least: the rings are emptied
 * every DRAIN_PERIODS periods or so (at most 1.5 times that, 12 samples at
 * the shortest period), and the slack is for a tracing thread that waits
 * for a CPU. */
#define RING_RECORDS 14u
/* ... and emptied every DRAIN_PERIODS periods on average, at random gaps:
 * see perf_tick_period. */
#define DRAIN_PERIODS 4u
/* A thread's sampling period is drawn anew at the first emptying that
 * finds it took this many samples at the current one: see
 * perf_tick_period. */
#define LATTICE 8u
/* ... and the memory of all the rings, locked by the kernel, stays under
 * this: past it, auto sampling uses stops (sampler_stats.perf_refused). */
#define RING_BUDGET (64ull << 20)
/* The stack each sample carries, unless --stack-size asks for less: the
 * kernel copies it at every sample, in the thread's time. */
#define STACK_DEFAULT (16u << 10)

struct perf_state {
	bool starting;		/* offered the threads there at start */
	int first_error;	/* ... and the first that could not have an event */
	size_t opened;		/* ... and how many could */
	bool viewed;		/* some ring holds records read: see perf_give_back */
	bool check_go;		/* a process is new or execed: see perf_check */
	size_t stack;		/* bytes of stack a sample carries, at first */
	size_t stack_max;	/* ... once a walk ran off the first (perf_grow) */
	uint64_t ring_total;	/* bytes of all the rings */
};

/* What the source keeps per thread (samp_thread.source_data). */
struct perf_src_thread {
	struct perf_thread *pt;
	bool grow;		/* a walk ran off its samples' copy: see perf_grow */
	unsigned lattice;	/* samples its event took at its current period */
};

static unsigned self(void)
{
	return samp_source_index(&samp_source_perf);
}

static struct perf_state *state(const struct sampler *s)
{
	return s->source_state[self()];
}

/* th's event, or NULL when another source samples th. */
static struct perf_src_thread *of(const struct tracer_thread *th)
{
	const struct samp_thread *st = th->user;

	return st && st->source == self() ? st->source_data : NULL;
}

/*
 * The gaps.  The ticks only empty the rings, every DRAIN_PERIODS periods
 * on average, at random gaps as the stop source's ticks.
 *
 * The kernel samples a thread at a fixed period until cprof draws another
 * (perf_gap, every LATTICE samples): the samples in between are a
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
static uint64_t perf_tick_period(const struct sampler *s)
{
	return s->period_ns * DRAIN_PERIODS;
}

/* A thread's next period, in its CPU time, drawn from [0.53, 1.43)
 * periods.  A draw restarts the kernel's timer, which loses the part of a
 * period already run: drawn every 3 samples from [0.5, 1.4), the rate was
 * 0.91 times -F on xz at 100 Hz; every 8 samples, 1.04 times, and 0.97
 * from [0.55, 1.45). */
static uint64_t perf_gap(struct sampler *s)
{
	return s->period_ns * 53 / 100 + samp_period_fraction(s) * 9 / 10;
}

/* A new thread's first period: shorter, so that a thread that lives less
 * than a period (a pool's short task) is sampled about as often as the
 * stop source's ticks find it running; not much shorter, since it holds
 * until the first emptying of the ring. */
static uint64_t perf_first_gap(struct sampler *s)
{
	return s->period_ns / 4 + samp_period_fraction(s) * 3 / 4;
}

/* The ring for samples of stack bytes: RING_RECORDS of them at least. */
static size_t perf_ring_for(size_t stack)
{
	size_t want = perf_thread_record_size(stack) * RING_RECORDS, ring = 4096;

	while (ring < want)
		ring *= 2;
	return ring;
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
 * The maps a sample of p is unwound against, when the cached ones do not
 * know its pc.  A stop reads maps while the thread is stopped; a perf
 * sample is read some milliseconds after it was taken, and a library
 * mapped for a moment (dlopen, dlclose) may be gone or elsewhere by then.
 * The kernel announced each executable mapping the thread made, in order
 * with its samples (take_samples keeps them, procs_announce): the one
 * holding pc when the sample was read from the ring is the one it ran in.
 * The sample gets maps of its own: those read at this drain (once per
 * drain and process), with that mapping over them.  Returns 0 or -ENOMEM.
 */
static int sample_maps(struct sampler *s, struct samp_proc *p, struct snap *sn)
{
	uint64_t pc = snap_pc(sn);
	const struct proc_map *a = proc_maps_find(&p->announced, pc);
	const struct proc_map *c = proc_maps_find(&p->maps, pc);
	const struct proc_maps *drain;
	struct proc_maps *m;

	if (a ? c && procs_same_mapping(a, c) :
		proc_modules_lookup(p->mods, pc) ||
		/* JIT code in anonymous memory: a read finds the same */
		(c && (c->perms & PROC_MAP_X) && c->path[0] != '/'))
		return 0;
	drain = procs_drain_maps(p, s->stats.perf_drains);
	if (!drain)
		return 0;
	m = calloc(1, sizeof(*m));
	/* (merged into nothing: a copy) */
	if (!m || proc_maps_merge_older(m, drain) < 0 || (a && add_announced(m, a) < 0)) {
		proc_maps_free(m);
		free(m);
		return -ENOMEM;
	}
	sn->maps = m;
	sn->own_maps = true;
	return 0;
}

/* One record that is no sample (r: what perf_thread_next said): a mapping
 * announced, or a thread renamed.  Returns 0 or -ENOMEM. */
static int take_record(struct sampler *s, struct tracer_thread *th, int r)
{
	struct samp_thread *st = th->user;
	struct perf_src_thread *pst = st->source_data;

	if (r == 3) {
		pid_t pid;
		const struct proc_map *m = perf_thread_mapping(pst->pt, &pid);

		return pid == st->proc->pid ? procs_announce(st->proc, m) : 0;
	}
	if (r == 2) {
		pid_t tid;
		const char *comm = perf_thread_comm(pst->pt, &tid);
		struct tracer_thread *named = tid == th->tid ? th : tracer_find_thread(s->tracer, tid);

		if (named && named->user)
			samp_update_label(s, named, comm);
	}
	return 0;
}

/* Takes th's samples out of its ring into the round; keep: false drops
 * them (taken before an exec: of the old image).  Returns 0 or -ENOMEM. */
static int take_samples(struct sampler *s, struct tracer_thread *th, bool keep)
{
	struct samp_thread *st = th->user;
	struct perf_src_thread *pst = st->source_data;
	struct perf_state *ps = state(s);
	size_t taken = 0;
	struct snap *sn;
	int r;

	/* the records read stay in the ring until perf_give_back */
	ps->viewed |= perf_thread_pending(pst->pt);
	while (perf_thread_pending(pst->pt)) {
		sn = samp_next_snap(s);
		if (!sn)
			return -ENOMEM;
		r = perf_thread_next(pst->pt, sn, true);
		if (r == 2 || r == 3) {
			if (take_record(s, th, r) < 0)
				return -ENOMEM;
			continue;
		}
		if (r <= 0)
			break;
		/* Before the exec: not yet the program, its CPU not counted. */
		if (!keep || samp_before_exec(s, st->proc))
			continue;
		if (!st->proc->ready) {
			if (procs_refresh(st->proc, cprof_now_ns()) < 0)
				continue;
			ps->check_go = true;
		}
		sn->tid = th->tid;
		sn->key = st->label;
		sn->sp_unmapped = !proc_maps_find(&st->proc->maps, snap_sp(sn));
		if (sample_maps(s, st->proc, sn) < 0)
			return -ENOMEM;
		s->n_snaps++;
		taken++;
	}
	/* A period drawn anew every few samples: see perf_tick_period. */
	pst->lattice += taken;
	if (pst->lattice >= LATTICE) {
		perf_thread_set_period(pst->pt, perf_gap(s));
		pst->lattice = 0;
	}
	return 0;
}

/* Gives th an event (in pst) whose samples carry stack bytes.  Returns 0
 * or -errno. */
static int open_event(struct sampler *s, struct tracer_thread *th, struct perf_src_thread *pst,
		      size_t stack)
{
	struct perf_state *ps = state(s);
	size_t ring = perf_ring_for(stack);
	int r;

	r = perf_thread_open(&pst->pt, th->tid, perf_first_gap(s), stack, ring,
			     s->o.kernel_frames ? PERF_THREAD_KERNEL : 0);
	if (r < 0) {
		pst->pt = NULL;
		return r;
	}
	ps->ring_total += ring;
	pst->lattice = 0;
	s->stats.perf_threads++;
	return 0;
}

/* Closes an event whose samples were taken: its counts into the stats,
 * its ring out of the budget. */
static void release_event(struct sampler *s, struct perf_thread *pt)
{
	size_t i;

	/* The samples still waiting to be unwound keep their copies. */
	for (i = 0; i < s->n_snaps; i++) {
		if (snap_viewing(&s->snaps[i]) && perf_thread_holds(pt, s->snaps[i].stack))
			snap_keep(&s->snaps[i]);
	}
	s->stats.perf_lost += perf_thread_lost(pt);
	s->stats.perf_throttled += perf_thread_throttled(pt);
	state(s)->ring_total -= perf_ring_for(perf_thread_stack_size(pt));
	perf_thread_close(pt);
}

/* th's samples taken (keep: see take_samples), its event closed and
 * forgotten. */
static void close_thread(struct sampler *s, struct tracer_thread *th, bool keep)
{
	struct samp_thread *st = th->user;
	struct perf_src_thread *pst = of(th);

	if (!pst)
		return;
	if (take_samples(s, th, keep) < 0)
		s->error = -ENOMEM;
	release_event(s, pst->pt);
	free(pst);
	st->source_data = NULL;
}

/*
 * A walk of th's sample ran off its copy: the stack goes deeper than the
 * first size (STACK_DEFAULT, cheap for the kernel to copy at every
 * sample).  Its event is replaced by one carrying the largest copy
 * (stack_max), as the memory budget allows; the samples the old ring
 * still holds are taken first, and the CPU time it had not sampled yet is
 * carried over.
 */
static void perf_grow(struct sampler *s, struct tracer_thread *th)
{
	struct perf_state *ps = state(s);
	struct perf_src_thread *pst = of(th);
	struct perf_thread *old = pst->pt;
	size_t ring = perf_ring_for(ps->stack_max);
	uint64_t owed = 0;

	pst->grow = false;
	if (perf_thread_stack_size(old) >= ps->stack_max || ps->ring_total + ring > RING_BUDGET)
		return;
	if (take_samples(s, th, true) < 0 || perf_thread_unsampled(old, &owed) < 0)
		return;
	if (open_event(s, th, pst, ps->stack_max) < 0) {
		pst->pt = old;
		return;
	}
	perf_thread_carry(pst->pt, owed);
	release_event(s, old);
}

/* The threads perf_grow was asked for, once their samples are unwound. */
static void perf_after_tick(struct sampler *s)
{
	size_t i, n = tracer_thread_count(s->tracer);

	for (i = 0; s->source_on[self()] && i < n; i++) {
		struct tracer_thread *th = tracer_thread_at(s->tracer, i);
		struct perf_src_thread *pst = of(th);

		if (pst && pst->grow)
			perf_grow(s, th);
	}
}

static void perf_ran_out(struct sampler *s, struct tracer_thread *th)
{
	struct perf_src_thread *pst = of(th);

	(void)s;
	if (pst)
		pst->grow = true;
}

/* Every thread's samples so far into the round. */
static int drain(struct sampler *s)
{
	size_t i, n = tracer_thread_count(s->tracer);
	int r;

	s->stats.perf_drains++;
	for (i = 0; i < n; i++) {
		struct tracer_thread *th = tracer_thread_at(s->tracer, i);

		if (of(th)) {
			r = take_samples(s, th, true);
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
 * handed to the stop source (as the schedstat baseline it charges from).
 * The next tick interrupts the threads that run, and reads the blocked
 * ones in place.
 */
static int perf_hand_off(struct sampler *s)
{
	size_t i, n = tracer_thread_count(s->tracer);
	uint64_t owed;
	int r;

	if (!s->source_on[self()])
		return 0;
	r = drain(s);
	for (i = 0; i < n; i++) {
		struct tracer_thread *th = tracer_thread_at(s->tracer, i);
		struct perf_src_thread *pst = of(th);
		bool known;

		if (!pst)
			continue;
		known = perf_thread_unsampled(pst->pt, &owed) == 0;
		close_thread(s, th, true);
		samp_hand_to_base(s, th, known ? &owed : NULL);
	}
	samp_source_stopped(s, &samp_source_perf);
	return r;
}

/* With SAMPLER_SOURCE_AUTO, a process of the session turned out to run Go
 * (at attach, after an exec, or new): the session goes on at stops. */
static int perf_check(struct sampler *s)
{
	size_t i;

	state(s)->check_go = false;
	if (s->o.source != SAMPLER_SOURCE_AUTO)
		return 0;
	for (i = 0; i < s->n_procs; i++) {
		struct samp_proc *p = s->procs[i];

		if (p->gone || !p->ready || samp_before_exec(s, p) ||
		    !(runs_go(p) || samp_py_runs(s, p)))
			continue;
		s->stats.perf_refused = runs_go(p) ? SAMPLER_PERF_GO : SAMPLER_PERF_PYTHON;
		/* (the samples taken so far were perf's: samples_unstopped) */
		s->stats.source = SAMPLER_SOURCE_PTRACE;
		return perf_hand_off(s);
	}
	return 0;
}

static int perf_collect(struct sampler *s)
{
	int r = drain(s);

	if (r == 0 && state(s)->check_go)
		r = perf_check(s);
	return r;
}

/* The rings' records the samples unwound viewed go back to the kernel,
 * once no sample waiting views any. */
static void perf_give_back(struct sampler *s)
{
	struct perf_state *ps = state(s);
	size_t i, n;

	/* (no tracer: the session is over, its rings closed) */
	if (!ps->viewed || !s->tracer)
		return;
	for (i = 0; i < s->n_snaps; i++) {
		if (snap_viewing(&s->snaps[i]))
			return;
	}
	n = tracer_thread_count(s->tracer);
	for (i = 0; i < n; i++) {
		struct perf_src_thread *pst = of(tracer_thread_at(s->tracer, i));

		if (pst)
			perf_thread_release(pst->pt);
	}
	ps->viewed = false;
}

/* Process p execs: the samples the kernel took before are of the old
 * image; after it, a Go program goes to stops from its first
 * instruction.  (Maps that could not be read now are read at the next
 * sample, which asks again.) */
static void perf_exec(struct sampler *s, struct samp_proc *p, bool done)
{
	size_t i, n = tracer_thread_count(s->tracer);

	if (!s->source_on[self()])
		return;
	if (done) {
		if (perf_check(s) < 0)
			s->error = -ENOMEM;
		return;
	}
	for (i = 0; i < n; i++) {
		struct tracer_thread *th = tracer_thread_at(s->tracer, i);
		struct samp_thread *st = th->user;

		if (of(th) && st->proc == p && take_samples(s, th, false) < 0)
			s->error = -ENOMEM;
	}
}

/* Memory and stack sizes. */
static void perf_sizes(struct sampler *s, struct perf_state *ps)
{
	size_t stack = s->o.perf_stack_size ? s->o.perf_stack_size : s->o.stack_size;

	if (stack > PERF_THREAD_STACK_MAX)
		stack = PERF_THREAD_STACK_MAX;
	ps->stack_max = stack & ~(size_t)7;
	/* First the small copy, unless a size was asked for. */
	ps->stack = s->o.perf_stack_size || ps->stack_max < STACK_DEFAULT ?
		    ps->stack_max : STACK_DEFAULT;
	s->stats.perf_stack = ps->stack;
}

/* Why SAMPLER_SOURCE_AUTO samples at stops from the start, or
 * SAMPLER_PERF_USED. */
static enum sampler_perf_refusal auto_refusal(struct sampler *s, const struct perf_state *ps)
{
	size_t n = tracer_thread_count(s->tracer);

	if (s->o.perf_stack_size > PERF_THREAD_STACK_MAX)
		return SAMPLER_PERF_STACK;
	if ((uint64_t)n * perf_ring_for(ps->stack) > RING_BUDGET)
		return SAMPLER_PERF_THREADS;
	if (!samp_before_exec(s, s->procs[0]) && runs_go(s->procs[0]))
		return SAMPLER_PERF_GO;
	if (samp_py_runs(s, s->procs[0]))
		return SAMPLER_PERF_PYTHON;
	return SAMPLER_PERF_USED;
}

/*
 * Right after attach: perf events when asked for and possible.  With
 * SAMPLER_SOURCE_AUTO a refusal (perf events not permitted or not there,
 * more threads than the rings' budget, a deeper copy asked for than a
 * sample carries, Go code) is no error: the session samples at stops, and
 * stats.perf_refused says why.  A thread whose event cannot be opened
 * while others' could is sampled at stops (perf_fallbacks).
 */
static int perf_start(struct sampler *s)
{
	bool auto_ = s->o.source == SAMPLER_SOURCE_AUTO;
	struct perf_state *ps;
	int r;

	if (s->o.source == SAMPLER_SOURCE_PTRACE || s->o.mode != SAMPLER_CPU ||
	    s->o.stop != SAMPLER_STOP_THREAD)
		return SAMP_START_REFUSED;
	ps = calloc(1, sizeof(*ps));
	if (!ps)
		return -ENOMEM;
	s->source_state[self()] = ps;
	perf_sizes(s, ps);
	if (auto_) {
		s->stats.perf_refused = auto_refusal(s, ps);
		if (s->stats.perf_refused != SAMPLER_PERF_USED)
			return SAMP_START_REFUSED;
	}
	r = perf_thread_probe();
	if (r < 0) {
		s->stats.perf_refused = SAMPLER_PERF_ERRNO;
		s->stats.perf_errno = r;
		return auto_ ? SAMP_START_REFUSED : r;
	}
	ps->starting = true;
	return SAMP_START_RUN;
}

static int perf_take(struct sampler *s, struct tracer_thread *th)
{
	struct perf_state *ps = state(s);
	struct samp_thread *st = th->user;
	struct perf_src_thread *pst = calloc(1, sizeof(*pst));
	int r = pst ? open_event(s, th, pst, ps->stack) : -ENOMEM;

	if (r == 0) {
		st->source_data = pst;
		ps->opened++;
		return 0;
	}
	free(pst);
	/* (a thread gone meanwhile is no refusal at start) */
	if (!ps->starting || (r != -ESRCH && r != -ENOENT)) {
		if (!ps->first_error)
			ps->first_error = r;
		s->stats.perf_fallbacks++;
	}
	return r;
}

/* The threads there at start were offered: with none of them taken, the
 * source is refused (or, asked for by name, an error). */
static int perf_started(struct sampler *s)
{
	struct perf_state *ps = state(s);
	size_t i;
	int r;

	ps->starting = false;
	if (ps->opened) {
		s->stats.source = SAMPLER_SOURCE_PERF;
		for (i = 0; i < s->n_procs; i++) {
			if (procs_announce_gap(s->procs[i]) < 0)
				return -ENOMEM;
		}
		return SAMP_START_RUN;
	}
	r = ps->first_error ? ps->first_error : -ESRCH;
	s->stats.perf_fallbacks = 0;
	s->stats.perf_threads = 0;
	s->stats.perf_refused = SAMPLER_PERF_ERRNO;
	s->stats.perf_errno = r;
	return s->o.source == SAMPLER_SOURCE_AUTO ? SAMP_START_REFUSED : r;
}

static void perf_drop(struct sampler *s, struct tracer_thread *th)
{
	/* Its samples until it went are still samples. */
	close_thread(s, th, true);
}

/* Not handed off (the target went, or an error): the samples the rings
 * hold are still samples. */
static void perf_finish(struct sampler *s)
{
	size_t i;

	for (i = 0; s->source_on[self()] && i < tracer_thread_count(s->tracer); i++)
		close_thread(s, tracer_thread_at(s->tracer, i), true);
}

static void perf_destroy(struct sampler *s)
{
	free(s->source_state[self()]);
	s->source_state[self()] = NULL;
}

const struct samp_source samp_source_perf = {
	.name = "perf",
	.start = perf_start,
	.take = perf_take,
	.started = perf_started,
	.drop = perf_drop,
	.exec = perf_exec,
	.collect = perf_collect,
	.give_back = perf_give_back,
	.after_tick = perf_after_tick,
	.tick_period = perf_tick_period,
	.hand_off = perf_hand_off,
	.ran_out = perf_ran_out,
	.finish = perf_finish,
	.destroy = perf_destroy,
};
