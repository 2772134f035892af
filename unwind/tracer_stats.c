/* SPDX-License-Identifier: MIT */
/* A tracer's accounting: stop and signal durations, stopped fractions. */
#include "config.h"

#include "lib/clock.h"
#include "process/procfs.h"
#include "unwind/tracer-impl.h"


/* A wait shorter than this is taken whole as a stop's bound (see
 * tracer_reach_after_wait): not worth a read of schedstat. */
#define REACH_READ_NS 50000ull

static unsigned hist_bucket(uint64_t v)
{
	unsigned e;

	if (v < 8)
		return (unsigned)v;
	e = 63u - (unsigned)__builtin_clzll(v);	/* v in [2^e, 2^(e+1)) */
	return e * 8 + (unsigned)((v >> (e - 3)) & 7);
}

/* The lower bound of bucket b: the inverse of hist_bucket. */
static uint64_t hist_value(unsigned b)
{
	unsigned e = b / 8, m = b % 8;

	if (b < 8)
		return b;
	return (8ull + m) << (e - 3);
}

static uint64_t hist_percentile(const uint64_t hist[TRACER_HIST_BUCKETS], uint64_t n,
				uint64_t max, double p)
{
	uint64_t want, seen = 0;
	unsigned b;

	if (!n)
		return 0;
	want = (uint64_t)((p / 100.0) * (double)n + 0.5);
	if (want < 1)
		want = 1;
	for (b = 0; b < TRACER_HIST_BUCKETS; b++) {
		seen += hist[b];
		if (seen >= want)
			return hist_value(b);
	}
	return max;
}

uint64_t tracer_stop_percentile(const struct tracer_stats *st, double p)
{
	return hist_percentile(st->stop_hist, st->stops, st->stop_ns_max, p);
}

uint64_t tracer_signal_percentile(const struct tracer_stats *st, double p)
{
	return hist_percentile(st->signal_hist, st->signals_reinjected, st->signal_ns_max, p);
}

uint64_t tracer_at_stop_percentile(const struct tracer_stats *st, double p)
{
	return hist_percentile(st->at_stop_hist, st->stops, st->at_stop_ns_max, p);
}

void tracer_set_fraction_floor(struct tracer *t, uint64_t ns)
{
	t->fraction_floor_ns = ns;
}

void tracer_stats_add_stop(struct tracer_stats *st, uint64_t d)
{
	st->stop_hist[hist_bucket(d)]++;
	st->stops++;
	st->stop_ns_total += d;
	if (d > st->stop_ns_max)
		st->stop_ns_max = d;
}

/*
 * A signal-delivery-stop was just served.  When the thread stopped is not
 * known; look_ns bounds it: when the tracing thread slept, the stop woke
 * it (the time it took to be scheduled is not counted), and when it was
 * busy, the stop came after its last look found none (the whole busy
 * stretch is counted, an upper bound).
 */
void tracer_account_signal(struct tracer *t)
{
	uint64_t now = cprof_now_ns(), d = now > t->look_ns ? now - t->look_ns : 0;

	t->stats.signal_hist[hist_bucket(d)]++;
	t->stats.signal_ns_total += d;
	if (d > t->stats.signal_ns_max)
		t->stats.signal_ns_max = d;
}

/*
 * A stop counts from the interrupt to the resume (stop_ns), and the thread
 * was held stopped from the moment it reached the stop (at_stop_ns, and its
 * stopped fraction).  The two differ when the thread was preempted as it
 * was interrupted: it reaches its stop only when it next gets a CPU, and
 * until then it is runnable, not stopped.  Nothing says when it got there;
 * reached_ns estimates it: the start of the pass over the tracees before
 * the one that found the stop, or, after a wait, the moment the wait was
 * woken (its end minus the time the tracing thread then waited for a CPU,
 * from its own schedstat).  That can be early (a wake-up for another
 * reason, a wait for a CPU counted since an earlier read: the stop then
 * counts longer) or late by the time the tracing thread takes to return
 * from its wait once running, microseconds (bench/saturated.sh compares
 * the estimate with the scheduler's trace).
 */
void tracer_account_stop(struct tracer *t, struct tracer_thread *th)
{
	uint64_t now = cprof_now_ns(), d = now - th->interrupt_ns;
	uint64_t held = now - (th->reached_ns > th->interrupt_ns ? th->reached_ns : th->interrupt_ns);

	th->stopped_ns += held;
	tracer_stats_add_stop(&t->stats, d);
	t->stats.at_stop_hist[hist_bucket(held)]++;
	t->stats.at_stop_ns_total += held;
	if (held > t->stats.at_stop_ns_max)
		t->stats.at_stop_ns_max = held;
}

/* Called as a pass over the tracees' statuses starts. */
void tracer_reach_pass(struct tracer *t)
{
	uint64_t now = cprof_now_ns();

	t->reach_floor_ns = t->reach_next_ns;
	t->reach_next_ns = now;
}

/*
 * After a wait from enter to now: the moment it was woken, as a bound for
 * the stops the next pass finds.  Only when a stop is awaited and the wait
 * was long enough for the tracing thread's own wait for a CPU to matter;
 * otherwise the start of the wait stands (a bound too).  That own wait is
 * read since the last read, which may count more than this wait's:
 * the bound only moves earlier.
 */
void tracer_reach_after_wait(struct tracer *t, uint64_t enter, uint64_t now)
{
	struct procfs_sched sc;
	uint64_t waited, woke;

	if (t->self_sched_fd < 0 || !t->n_pending || now - enter < REACH_READ_NS ||
	    procfs_read_sched(t->self_sched_fd, &sc) < 0)
		return;
	waited = sc.wait_ns - t->self_wait_ns;
	t->self_wait_ns = sc.wait_ns;
	woke = now > waited ? now - waited : 0;
	if (woke > t->reach_next_ns)
		t->reach_next_ns = woke < enter ? enter : woke;
}

void tracer_fold_fraction(struct tracer_stats *st, uint64_t floor_ns,
			       const struct tracer_thread *th, uint64_t now)
{
	uint64_t lived = now - th->appeared_ns;
	double f;

	if (lived < floor_ns || lived == 0)
		return;
	f = (double)th->stopped_ns / (double)lived;
	if (f > st->stopped_fraction_max)
		st->stopped_fraction_max = f;
	st->stopped_fraction_sum += f;
	st->stopped_fraction_threads++;
}

const struct tracer_stats *tracer_get_stats(const struct tracer *t)
{
	return &t->stats;
}

void tracer_stats_now(const struct tracer *t, struct tracer_stats *out)
{
	uint64_t now = cprof_now_ns();
	size_t i;

	*out = t->stats;
	for (i = 0; i < t->n_threads; i++)
		tracer_fold_fraction(out, t->fraction_floor_ns, t->threads[i], now);
}
