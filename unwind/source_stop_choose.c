/* SPDX-License-Identifier: MIT */
/* The stop source's choice of the threads a tick reads and stops. */
#include "config.h"

#include <time.h>

#include "lib/clock.h"
#include "unwind/source_stop.h"

/* cpu mode: CPU time the process used beyond what the threads read every
 * tick account for, above which the others are read too (see
 * stop_choose): one period's worth, at least this. */
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
/* wall mode: at least this many threads a tick, however slow each is. */
#define WALL_MIN_THREADS 16

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
 * wall mode: every thread is sampled at every tick while a tick can read
 * them all within 1/WALL_SHARE of a period; beyond that (thousands of
 * threads, or a high rate) a rotating subset of wall_cap threads, adjusted
 * from the measured cost of a thread, so the ticks keep their rate.  Each
 * sample then stands for the time since its thread's previous one
 * (wall_value): shares and totals stay unbiased, and the rate each thread
 * is sampled at is reported (sampler_stats.effective_hz).
 */
static size_t choose_wall(struct sampler *s, size_t n)
{
	struct stop_state *ss = stop_state(s);
	size_t i, k, chosen = 0, cap = ss->wall_cap && !s->read_all ? ss->wall_cap : n;

	if (cap >= n) {
		cap = n;
		ss->wall_cursor = 0;
	} else {
		s->stats.ticks_rotated++;
	}
	for (k = 0; k < cap; k++) {
		struct tracer_thread *th;

		i = (ss->wall_cursor + k) % n;
		th = samp_thread_at(s, i);
		if (th && stop_wants(s, th))
			ss->pick[chosen++] = th->tid;
	}
	if (cap < n)
		ss->wall_cursor = (ss->wall_cursor + cap) % n;
	ss->wall_visited = cap;
	return chosen;
}

/* wall mode, after a tick that read `visited` threads using tick_ns of CPU
 * (CPU, not elapsed time: the budget is a share of a core, and a tick
 * preempted or waiting for a stop costs no more): the number of threads
 * the next ones can read in 1/WALL_SHARE of a period. */
void stop_adapt_wall_cap(struct sampler *s, size_t n, uint64_t tick_ns)
{
	struct stop_state *ss = stop_state(s);
	uint64_t per = ss->wall_visited ? tick_ns / ss->wall_visited : 0, want;

	if (!per)
		return;
	want = s->period_ns / WALL_SHARE / per;
	/* smoothed: one slow tick (a page fault, a preemption) must not halve it */
	want = ss->wall_cap ? (3 * (uint64_t)ss->wall_cap + want) / 4 : want;
	if (want < WALL_MIN_THREADS)
		want = WALL_MIN_THREADS;
	ss->wall_cap = want >= n ? 0 : (size_t)want;
}

/* cpu mode: reads the process CPU clock, and schedules the next read so
 * that reading it costs under 1/CLOCK_SHARE of the time. */
static bool read_clock_paced(struct sampler *s, uint64_t *clock, size_t *procs)
{
	uint64_t t0 = cprof_now_ns(), cost;
	bool ok = read_proc_clock(s, clock, procs);

	cost = cprof_now_ns() - t0;
	stop_state(s)->clock_tick = s->stats.ticks + 1 + cost * CLOCK_SHARE / s->period_ns;
	return ok;
}

/* Beside another source, only the threads it could not take (few): each
 * tick reads them all. */
static size_t choose_left_over(struct sampler *s, size_t n)
{
	struct stop_state *ss = stop_state(s);
	size_t i, chosen = 0;

	for (i = 0; i < n; i++) {
		struct tracer_thread *th = samp_thread_at(s, i);

		if (th && stop_owns(s, th) && stop_wants(s, th))
			ss->pick[chosen++] = th->tid;
	}
	return chosen;
}

/* cpu mode: the threads outside the hot tier too, when the process clock
 * says one of them ran.  Returns the new count of chosen threads. */
static size_t choose_cold(struct sampler *s, size_t n, size_t chosen)
{
	struct stop_state *ss = stop_state(s);
	size_t i;

	for (i = 0; i < n; i++) {
		struct tracer_thread *th = samp_thread_at(s, i);

		if (th && !is_hot(s, th) && stop_wants(s, th))
			ss->pick[chosen++] = th->tid;
	}
	return chosen;
}

/*
 * This tick's threads to stop, into pick; returns how many.
 *
 * wall mode reads every thread.  cpu mode reads every tick only the hot
 * tier, threads sampled in the last SAMP_HOT_TICKS ticks (and new ones),
 * and the others only when something says one of them ran: the target's
 * process CPU clock grew by more than the hot threads' schedstat did.
 * Both count the same thing (a task's sum_exec_runtime), and each
 * thread's reads telescope, so the difference summed over ticks is the
 * CPU the other threads used, up to the few microseconds the reads of one
 * tick are apart: past one period's worth of it (the resolution of the
 * profile, COLD_SLACK_NS at least), or COLD_MAX_NS after the last full
 * read, every thread is read.  Nothing is lost: a thread's value is its
 * CPU time since its previous sample, whenever that sample comes.  The
 * clock costs the kernel a walk over every thread, so with many threads or
 * a high rate it is read every few ticks (CLOCK_SHARE); the hot tier's
 * reads add up in between.
 */
size_t stop_choose(struct sampler *s, size_t n)
{
	struct stop_state *ss = stop_state(s);
	uint64_t now = cprof_now_ns(), clock = 0;
	uint64_t slack = s->period_ns > COLD_SLACK_NS ? s->period_ns : COLD_SLACK_NS;
	size_t i, chosen = 0, procs = 0;
	bool all, checked = false;

	ss->tick_ns = now;
	if (s->o.mode == SAMPLER_WALL)
		return choose_wall(s, n);
	if (samp_others_on(s))
		return choose_left_over(s, n);
	all = s->read_all || now - ss->cold_read_ns >= COLD_MAX_NS;
	/* A full read sets a new baseline: the clock is read with it. */
	if (all || s->stats.ticks >= ss->clock_tick) {
		checked = true;
		/* A process that came or went changes what the clock sums. */
		if (!read_clock_paced(s, &clock, &procs) || procs != ss->clock_procs)
			all = true;
	}
	for (i = 0; i < n; i++) {
		struct tracer_thread *th = samp_thread_at(s, i);

		if (th && (all || is_hot(s, th)) && stop_wants(s, th))
			ss->pick[chosen++] = th->tid;
	}
	if (checked && !all) {
		ss->unexplained_ns += (int64_t)(clock - ss->proc_cpu_ns) - (int64_t)ss->hot_run_ns;
		if (ss->unexplained_ns > (int64_t)slack) {
			all = true;
			chosen = choose_cold(s, n, chosen);
		}
	}
	if (all) {
		ss->unexplained_ns = 0;
		ss->cold_read_ns = now;
		s->stats.full_reads++;
	}
	if (checked) {
		ss->hot_run_ns = 0;
		ss->proc_cpu_ns = clock;
		ss->clock_procs = procs;
	}
	return chosen;
}
