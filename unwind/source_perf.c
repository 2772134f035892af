/* SPDX-License-Identifier: MIT */
/*
 * The perf source: every thread gets task-clock perf events (one per CPU)
 * whose samples carry its registers and the top of its stack, copied by
 * the kernel at a timer interrupt of the thread's own CPU clock
 * (unwind/perf_thread.h) into the ring of the CPU it ran on, which every
 * thread shares (unwind/perf_rings.h).  A tick takes the samples out of
 * the rings into the round, viewed where the kernel wrote them, and gives
 * the records back once they are unwound.  Nothing stops a thread, so none of the stop's guarantees is at
 * stake (signals, EINTR, job control); the tracer still follows threads,
 * forks and execs.  When the session ends, or cannot go on with perf
 * events (a CPython program), each thread goes to the stop source with its
 * CPU time since its last sample, which is charged where the thread is:
 * the accounting stays exact.  A Go program's samples carry the kernel's
 * frame-pointer walk too (unwind/go_chain.c).
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <unistd.h>

#include "lib/clock.h"
#include "lib/grow.h"
#include "unwind/perf_rings.h"
#include "unwind/perf_thread.h"
#include "unwind/python_sample.h"
#include "unwind/sampler_impl.h"
#include "unwind/source_perf.h"

/* The rings are emptied at least every DRAIN_PERIODS periods on average, at
 * random gaps: see perf_tick_period. */
#define DRAIN_PERIODS 16u

/*
 * The gaps.  The ticks only empty the rings: when one of them is half
 * full (its descriptor wakes the sampling thread: perf_rings_fd), and at
 * the latest DRAIN_PERIODS periods after the last, on average, at random
 * gaps as the stop source's ticks.  A wake-up is most of what a drain
 * costs (the sleep, the switches in and out): when a loaded machine gives
 * the threads little CPU, the bound is what sets the samples each finds,
 * 1.6 at 4 periods on bench/go-work at load 30.  The bound keeps a
 * sample's unwinding near its moment (the maps it is read against, a Go
 * goroutine's stack read then) and the threads born meanwhile known soon;
 * a session's end (-d, a signal, the target's exit) wakes it anyway.
 *
 * The kernel samples a thread at a fixed period until cprof draws another
 * (perf_src_gap, every LATTICE samples): the samples in between are a
 * lattice.  Each lattice's period is drawn from a range 0.9 periods wide,
 * so its step modulo the period of work that repeats faster than that is
 * uniform: any two samples of a lattice fall at independent phases of the
 * work, and a share has the variance of independent samples, whatever the
 * lattice's length.  Simulated (bench/lattice-sim.py: 70/30 work
 * repeating every 0.5 to 33 ms, 100 samples at 100 Hz), the sd is the same
 * for lattices of 1, 3, 6, 8 and 16 samples; long ones only fatten the
 * far tails a little (more than 14 points off: 0.6-0.9% of runs at 16,
 * 0.1-0.3% at 8, 1.3-2.3% at 24-32).  A draw costs an ioctl that waits
 * for the thread's CPU (an IPI, about 35 us of cprof's time on this VM):
 * at one draw every 3 samples it was a third of cprof's CPU on xz at 100
 * Hz, and the emptyings' wake-ups a fifth; at one every 8, 13% of the
 * sampling thread's on bench/go-work.  A draw takes effect at the drain
 * that reads the LATTICE-th sample, so when a drain finds more than that
 * of one thread, its lattices are as long as the drains' gaps.
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
uint64_t perf_src_gap(struct sampler *s)
{
	return s->period_ns * 53 / 100 + samp_period_fraction(s) * 9 / 10;
}

/* A new thread's first period: shorter, so that a thread that lives less
 * than a period (a pool's short task) is sampled about as often as the
 * stop source's ticks find it running; not much shorter, since it holds
 * until the drain that reads the thread's first sample (a thread whose
 * events are inherited, its parent's, keeps it: see redraw_forked). */
uint64_t perf_src_first_gap(struct sampler *s)
{
	return s->period_ns / 4 + samp_period_fraction(s) * 3 / 4;
}

static bool runs_go(const struct samp_proc *p);

/* What th's events follow (PERF_THREAD_*): watching, the threads it
 * starts, and the processes too when the session takes the tree; in the
 * command cprof started, waiting to exec, nothing before the exec. */
static unsigned follow_of(const struct sampler *s, const struct samp_proc *p)
{
	const struct perf_state *ps = perf_src_state(s);
	unsigned f = 0;

	if (ps->watch) {
		f |= PERF_THREAD_INHERIT;
		if (s->o.tracer_flags & (TRACER_FOLLOW | TRACER_DESCENDANTS))
			f |= PERF_THREAD_PROCESSES;
	}
	/* (at start alone: later, the exec may have come and not been
	 * read yet) */
	if (ps->starting && samp_before_exec(s, p))
		f |= PERF_THREAD_ON_EXEC;
	return f;
}

/* Gives th events (in pst) whose samples carry stack bytes, and the
 * kernel's frame-pointer walk in a Go program (unwind/go_chain.c), within
 * the descriptors' budget.  Returns 0 or -errno. */
static int open_event(struct sampler *s, struct tracer_thread *th, struct perf_src_thread *pst,
		      size_t stack)
{
	struct perf_state *ps = perf_src_state(s);
	struct samp_thread *st = th->user;
	unsigned n = perf_rings_count(ps->rings);
	unsigned follow = follow_of(s, st->proc);
	bool user_chain;
	int r;

	if (ps->fds + n > ps->fd_budget)
		return -EMFILE;
	/* A process the events follow into an exec (record's command, a
	 * tree's new process) may turn out to run Go, and the threads Go
	 * starts at once inherit these events before a drain could replace
	 * them (perf_grow leaves inherited events to their ancestor): so such
	 * events carry the kernel's walk from the start. */
	user_chain = runs_go(st->proc) || (follow & (PERF_THREAD_ON_EXEC | PERF_THREAD_PROCESSES));
	r = perf_thread_open(&pst->pt, ps->rings, th->tid, perf_src_first_gap(s), stack, user_chain,
			     follow);
	if (r < 0) {
		pst->pt = NULL;
		return r;
	}
	ps->fds += n;
	s->stats.perf_threads++;
	return 0;
}

/* Closes a thread's events, whose samples were taken; watching, events
 * that threads inherited stay open, retired (perf_thread.h). */
static void release_event(struct sampler *s, struct perf_thread *pt)
{
	struct perf_state *ps = perf_src_state(s);

	if (ps->watch && !perf_thread_is_inherited(pt) &&
	    cprof_grow(&ps->retired, &ps->cap_retired, ps->n_retired + 1, sizeof(*ps->retired),
		       16) == 0) {
		perf_thread_retire(pt);
		ps->retired[ps->n_retired++] = pt;
		return;
	}
	if (!perf_thread_is_inherited(pt))
		ps->fds -= perf_rings_count(ps->rings);
	perf_thread_close(pt);
}

/* The events retired, closed: the session ends, or goes on at stops. */
static void close_retired(struct perf_state *ps)
{
	size_t i;

	for (i = 0; i < ps->n_retired; i++) {
		ps->fds -= perf_rings_count(ps->rings);
		perf_thread_close(ps->retired[i]);
	}
	ps->n_retired = 0;
}

/* th's events closed and forgotten; its samples were taken (drain). */
static void close_thread(struct sampler *s, struct tracer_thread *th)
{
	struct samp_thread *st = th->user;
	struct perf_src_thread *pst = perf_src_of(th);

	if (!pst)
		return;
	release_event(s, pst->pt);
	free(pst);
	st->source_data = NULL;
}

/* The rings closed, once every thread's events are: the samples still
 * waiting to be unwound keep their copies. */
static void close_rings(struct sampler *s)
{
	struct perf_state *ps = perf_src_state(s);
	size_t i;

	if (!ps || !ps->rings)
		return;
	if (s->tracer)
		tracer_set_wake_fds(s->tracer, NULL, 0);
	for (i = 0; i < s->n_snaps; i++) {
		if (snap_viewing(&s->snaps[i]) && perf_rings_holds(ps->rings, s->snaps[i].stack))
			snap_keep(&s->snaps[i]);
	}
	close_retired(ps);
	perf_rings_close(ps->rings);
	ps->rings = NULL;
	ps->viewed = false;
}

/*
 * A walk of th's sample ran off its copy: the stack goes deeper than the
 * first size (STACK_DEFAULT, cheap for the kernel to copy at every
 * sample).  Its events are replaced by ones carrying the largest copy
 * (stack_max), as the rings allow; the samples the rings hold were taken
 * first (perf_after_tick), and the CPU time the old events had not
 * sampled yet is carried over.  So are the events of a thread whose
 * process turned out to run Go (rechain), by ones whose samples carry the
 * kernel's frame-pointer walk.
 */
static void perf_grow(struct sampler *s, struct tracer_thread *th)
{
	struct perf_state *ps = perf_src_state(s);
	struct perf_src_thread *pst = perf_src_of(th);
	struct perf_thread *old = pst->pt;
	size_t stack = pst->grow ? ps->stack_max : perf_thread_stack_size(old);
	bool rechain = pst->rechain && !perf_thread_user_chain(old);
	uint64_t owed = 0;

	pst->grow = pst->rechain = false;
	/* (an inherited event is its ancestor's to replace) */
	if (perf_thread_is_inherited(old) || (perf_thread_stack_size(old) >= stack && !rechain) ||
	    perf_rings_size(ps->rings) < perf_src_ring_for(stack, RING_RECORDS_MIN))
		return;
	if (perf_thread_unsampled(old, &owed) < 0)
		return;
	if (open_event(s, th, pst, stack) < 0) {
		pst->pt = old;
		return;
	}
	s->stats.perf_threads--;	/* (the same thread) */
	perf_thread_carry(pst->pt, owed);
	release_event(s, old);
}

/* The threads perf_grow was asked for, once their samples are unwound. */
static void perf_after_tick(struct sampler *s)
{
	size_t i, n = tracer_thread_count(s->tracer);
	bool drained = false;

	for (i = 0; s->source_on[perf_src_self()] && i < n; i++) {
		struct tracer_thread *th = tracer_thread_at(s->tracer, i);
		struct perf_src_thread *pst = perf_src_of(th);

		if (!pst || !(pst->grow || pst->rechain))
			continue;
		if (!drained && perf_src_drain(s, NULL) < 0) {
			s->error = -ENOMEM;
			return;
		}
		drained = true;
		perf_grow(s, th);
	}
}

static void perf_ran_out(struct sampler *s, struct tracer_thread *th)
{
	struct perf_src_thread *pst = perf_src_of(th);

	(void)s;
	if (pst)
		pst->grow = true;
}

/* Whether process p runs Go code (see unwind/go_chain.c). */
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
	struct perf_state *ps = perf_src_state(s);
	size_t i, n;
	uint64_t owed;
	int r;

	if (!s->source_on[perf_src_self()])
		return 0;
	r = perf_src_drain(s, NULL);
	/* Watching, the session's last tick stops nothing: what the threads
	 * ran since their last samples is left out, as perf record leaves it. */
	if (ps->watch && s->read_all)
		return r;
	if (ps->watch) {
		/* Stops need every thread seized; the events then follow no
		 * thread (born ones are seized as they come). */
		ps->watch = false;
		if (r == 0)
			r = tracer_seize_all(s->tracer);
		if (r < 0)
			return r;
	}
	n = tracer_thread_count(s->tracer);
	for (i = 0; i < n; i++) {
		struct tracer_thread *th = tracer_thread_at(s->tracer, i);
		struct perf_src_thread *pst = perf_src_of(th);
		bool known;

		if (!pst)
			continue;
		known = perf_thread_unsampled(pst->pt, &owed) == 0;
		close_thread(s, th);
		samp_hand_to_base(s, th, known ? &owed : NULL);
	}
	close_rings(s);
	samp_source_stopped(s, &samp_source_perf);
	return r;
}

int perf_src_to_stops(struct sampler *s)
{
	s->stats.source = SAMPLER_SOURCE_PTRACE;
	return perf_hand_off(s);
}

/* A process of the session turned out to run Go (after an exec, or new,
 * its maps read since its threads' events were opened): their samples
 * are to carry the kernel's frame-pointer walk (perf_grow, after the
 * tick). */
static void perf_check_go(struct sampler *s)
{
	size_t i, n = tracer_thread_count(s->tracer);

	for (i = 0; i < n; i++) {
		struct tracer_thread *th = tracer_thread_at(s->tracer, i);
		struct perf_src_thread *pst = perf_src_of(th);
		struct samp_thread *st = th->user;
		struct samp_proc *p = st ? st->proc : NULL;

		if (pst && p && !p->gone && p->ready && !samp_before_exec(s, p) &&
		    !perf_thread_user_chain(pst->pt) && runs_go(p))
			pst->rechain = true;
	}
}

/* With SAMPLER_SOURCE_AUTO, a process of the session turned out to run
 * CPython (at attach, after an exec, or new): the session goes on at
 * stops.  A Go process is sampled on (perf_check_go). */
static int perf_check(struct sampler *s)
{
	size_t i;

	perf_src_state(s)->check_go = false;
	perf_check_go(s);
	if (s->o.source != SAMPLER_SOURCE_AUTO)
		return 0;
	for (i = 0; i < s->n_procs; i++) {
		struct samp_proc *p = s->procs[i];

		if (p->gone || !p->ready || samp_before_exec(s, p) || !samp_py_runs(s, p))
			continue;
		s->stats.perf_refused = SAMPLER_PERF_PYTHON;
		/* (the samples taken so far were perf's: samples_unstopped) */
		s->stats.source = SAMPLER_SOURCE_PTRACE;
		return perf_hand_off(s);
	}
	/* An interpreter just exec'd may not have mapped its libpython yet. */
	perf_src_state(s)->check_go = samp_py_pending(s);
	return 0;
}

static int perf_collect(struct sampler *s)
{
	int r;
	struct perf_state *ps = perf_src_state(s);

	s->stats.perf_drains++;
	r = perf_src_drain(s, NULL);
	/* Threads born between the listing and their parents' events, once
	 * the births those events told of are known. */
	if (r == 0 && ps->rescan) {
		ps->rescan = false;
		/* (best effort: the directory may be gone, or no descriptor
		 * left to read it) */
		r = tracer_watch_rescan(s->tracer) == -ENOMEM ? -ENOMEM : 0;
	}
	if (r >= 0 && ps->check_go && s->source_on[perf_src_self()])
		r = perf_check(s);
	return r < 0 ? r : 0;
}

/* The rings' records the samples unwound viewed go back to the kernel,
 * once no sample waiting views any. */
static void perf_give_back(struct sampler *s)
{
	struct perf_state *ps = perf_src_state(s);
	size_t i;

	/* (no rings: the session is over, or at stops) */
	if (!ps->viewed || !ps->rings)
		return;
	for (i = 0; i < s->n_snaps; i++) {
		if (snap_viewing(&s->snaps[i]))
			return;
	}
	perf_rings_release(ps->rings);
	ps->viewed = false;
}

/* Process p execs: the samples the kernel took before are of the old
 * image; after it, a CPython program goes to stops, a Go program's
 * samples carry the frame-pointer walk (perf_check).  (Maps that could not be read now are read at the next
 * sample, which asks again.) */
static void perf_exec(struct sampler *s, struct samp_proc *p, bool done)
{
	if (!s->source_on[perf_src_self()])
		return;
	/* The command cprof started, watched: its events counted nothing
	 * before the exec (enable_on_exec), so the rings hold no sample of
	 * its old image, and the ones of the new wait for its new maps. */
	if (!done && perf_src_state(s)->watch && samp_before_exec(s, p))
		return;
	if ((done ? perf_check(s) : perf_src_drain(s, p)) < 0)
		s->error = -ENOMEM;
}

/*
 * Right after attach: perf events when asked for and possible.  With
 * SAMPLER_SOURCE_AUTO a refusal (perf events not permitted or not there,
 * more threads than descriptors for their events, no room for the rings
 * in the kernel's budget of locked memory, a deeper copy asked for than a
 * sample carries, CPython with --python) is no error: the session samples at stops, and
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
	s->source_state[perf_src_self()] = ps;
	perf_src_sizes(s, ps);
	ps->fd_budget = perf_src_fd_budget();
	ps->watch = tracer_watching(s->tracer);
	ps->rescan = ps->watch;
	if (auto_) {
		s->stats.perf_refused = perf_src_auto_refusal(s, ps);
		if (s->stats.perf_refused != SAMPLER_PERF_USED)
			return SAMP_START_REFUSED;
	}
	r = perf_thread_probe();
	if (r < 0) {
		s->stats.perf_refused = SAMPLER_PERF_ERRNO;
		s->stats.perf_errno = r;
		return auto_ ? SAMP_START_REFUSED : r;
	}
	r = perf_src_open_rings(s, ps);
	if (r < 0) {
		s->stats.perf_refused = SAMPLER_PERF_RINGS;
		s->stats.perf_errno = r;
		return auto_ ? SAMP_START_REFUSED : r;
	}
	ps->starting = true;
	return SAMP_START_RUN;
}

static int perf_take(struct sampler *s, struct tracer_thread *th)
{
	struct perf_state *ps = perf_src_state(s);
	struct samp_thread *st = th->user;
	struct perf_src_thread *pst = calloc(1, sizeof(*pst));
	int r = -ENOMEM;

	if (pst && ps->born) {
		/* It has events already, its parent's inherited. */
		r = perf_thread_inherited(&pst->pt, ps->rings, th->tid, ps->born_from, ps->stack,
					  runs_go(st->proc));
		s->stats.perf_threads += r == 0;
	} else if (pst) {
		r = open_event(s, th, pst, ps->stack);
	}
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
		if (!s->stats.perf_fallback_errno)
			s->stats.perf_fallback_errno = r;
		s->stats.perf_fallbacks++;
	}
	return r;
}

/* The sampling thread's waits end when a ring is half full (see
 * perf_tick_period).  Returns 0 or -ENOMEM. */
static int wake_on_rings(struct sampler *s, const struct perf_state *ps)
{
	unsigned i, n = perf_rings_count(ps->rings);
	int fds[64], *all = n <= 64 ? fds : calloc(n, sizeof(*all));
	int r;

	if (!all)
		return -ENOMEM;
	for (i = 0; i < n; i++)
		all[i] = perf_rings_fd(ps->rings, i);
	r = tracer_set_wake_fds(s->tracer, all, n);
	if (all != fds)
		free(all);
	return r;
}

/* The threads there at start were offered: with none of them taken, the
 * source is refused (or, asked for by name, an error). */
static int perf_started(struct sampler *s)
{
	struct perf_state *ps = perf_src_state(s);
	size_t i;
	int r;

	ps->starting = false;
	if (ps->opened) {
		s->stats.source = SAMPLER_SOURCE_PERF;
		r = wake_on_rings(s, ps);
		if (r < 0)
			return r;
		for (i = 0; i < s->n_procs; i++) {
			if (procs_announce_gap(s->procs[i]) < 0)
				return -ENOMEM;
		}
		return SAMP_START_RUN;
	}
	r = ps->first_error ? ps->first_error : -ESRCH;
	close_rings(s);
	s->stats.perf_fallbacks = 0;
	s->stats.perf_threads = 0;
	s->stats.perf_refused = SAMPLER_PERF_ERRNO;
	s->stats.perf_errno = r;
	return s->o.source == SAMPLER_SOURCE_AUTO ? SAMP_START_REFUSED : r;
}

static void perf_drop(struct sampler *s, struct tracer_thread *th)
{
	/* Its samples until it went are still samples (watching, its exit
	 * was read after them). */
	if (perf_src_of(th) && !perf_src_state(s)->watch && perf_src_drain(s, NULL) < 0)
		s->error = -ENOMEM;
	close_thread(s, th);
}

/* Not handed off (the target went, or an error): the samples the rings
 * hold are still samples. */
static void perf_finish(struct sampler *s)
{
	size_t i;

	if (!s->source_on[perf_src_self()] || !perf_src_state(s)->rings)
		return;
	if (perf_src_drain(s, NULL) < 0)
		s->error = -ENOMEM;
	for (i = 0; i < tracer_thread_count(s->tracer); i++)
		close_thread(s, tracer_thread_at(s->tracer, i));
	close_rings(s);
}

static void perf_destroy(struct sampler *s)
{
	struct perf_state *ps = perf_src_state(s);

	close_rings(s);
	if (ps) {
		free(ps->tasks);
		free(ps->retired);
	}
	free(s->source_state[perf_src_self()]);
	s->source_state[perf_src_self()] = NULL;
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
