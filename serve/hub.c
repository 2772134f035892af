/* SPDX-License-Identifier: MIT */
/* Profile windows over one sampling session: cprof serve's requests share a tracer. */
#include "config.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "serve/hub.h"
#include "session/session.h"
#include "unwind/tracer.h"

#define NS 1000000000ull

/*
 * Who touches what: pending, n_open, sess, running, mode, dumping, shutdown,
 * live, past and the counters under mu.  active and the windows' private
 * fields belong to the session thread while a session runs, and to the
 * runner thread before and after it (sampler_session's thread creation and
 * join order the two).
 */
struct hub {
	struct hub_opts o;
	pthread_mutex_t mu;
	pthread_cond_t cond;		/* running or dumping became false */
	struct hub_window *pending;	/* opened, not receiving samples yet */
	struct hub_window *active;	/* receiving samples, or ended and not built */
	unsigned n_open;
	struct sess *sess;		/* the running session */
	pthread_t runner;
	bool runner_joinable;
	bool running;			/* the runner thread lives */
	enum sampler_mode mode;		/* of the running session */
	bool dumping;
	bool shutdown;
	uint64_t busy_until_ns;		/* when the last window opened in this session ends */
	struct sampler_stats live;	/* the running session, as of its last progress */
	struct sampler_stats past;	/* the finished sessions, summed */
	struct hub_totals counts;	/* everything but sum, sampling, mode, open_windows */
};

/* ---- statistics ----------------------------------------------------------- */

/* The counters that a window takes as a difference and the finished
 * sessions as a sum, each applied as X(field). */
#define HUB_COUNTERS(X)							\
	X(ticks) X(ticks_missed) X(samples) X(samples_reused)		\
	X(samples_unstopped) X(value_ns) X(elapsed_ns) X(cprof_cpu_ns)	\
	X(samples_signal_entry) X(samples_signal_deferred)		\
	X(tracer.stops) X(tracer.stop_ns_total) X(tracer.at_stop_ns_total)	\
	X(tracer.signals_reinjected) X(tracer.signal_ns_total)		\
	X(tracer.syscalls_restarted)					\
	X(tracer.interrupts_expired) X(tracer.group_stops) X(tracer.execs)	\
	X(copies_full) X(copies_short) X(copies_short_ran_out)		\
	X(unwinds_reused) X(pages_file) X(pages_memory)		\
	X(walks_parser) X(walks_continued) X(walks_here)		\
	X(tracer.spins) X(tracer.spins_paid)				\
	X(tracer.sched_rt_ns) X(tracer.sched_switches)			\
	X(perf_threads) X(perf_fallbacks) X(perf_lost) X(perf_throttled)	\
	X(perf_drains)

/* The same for the arrays of counters, each applied as X(array, length). */
#define HUB_COUNTER_ARRAYS(X)						\
	X(ends, REMOTE_END_ERROR + 1) X(tracer.stop_hist, TRACER_HIST_BUCKETS) \
	X(tracer.signal_hist, TRACER_HIST_BUCKETS)				\
	X(tracer.at_stop_hist, TRACER_HIST_BUCKETS)

/* d = b - a for the counters; the rest as b has it.  The window's largest
 * stop is not known exactly: the upper bound of its highest histogram
 * bucket, capped by the session's largest. */
static void stats_window(struct sampler_stats *d, const struct sampler_stats *a,
			 const struct sampler_stats *b)
{
	size_t i;
	uint64_t bound;

	*d = *b;
#define SUB(f) d->f = b->f - a->f;
#define SUB_ARRAY(f, n) for (i = 0; i < (n); i++) SUB(f[i])
	HUB_COUNTERS(SUB)
	HUB_COUNTER_ARRAYS(SUB_ARRAY)
#undef SUB_ARRAY
#undef SUB
	d->start_realtime_ns = b->start_realtime_ns + a->elapsed_ns;
	bound = d->tracer.stops ? tracer_stop_percentile(&d->tracer, 100) : 0;
	if (bound < d->tracer.stop_ns_max)
		d->tracer.stop_ns_max = bound;
	bound = d->tracer.signals_reinjected ? tracer_signal_percentile(&d->tracer, 100) : 0;
	if (bound < d->tracer.signal_ns_max)
		d->tracer.signal_ns_max = bound;
	bound = d->tracer.stops ? tracer_at_stop_percentile(&d->tracer, 100) : 0;
	if (bound < d->tracer.at_stop_ns_max)
		d->tracer.at_stop_ns_max = bound;
}

/* d += b: counters summed, maxima kept. */
static void stats_add(struct sampler_stats *d, const struct sampler_stats *b)
{
	size_t i;

#define ADD(f) d->f += b->f;
#define ADD_ARRAY(f, n) for (i = 0; i < (n); i++) ADD(f[i])
	HUB_COUNTERS(ADD)
	HUB_COUNTER_ARRAYS(ADD_ARRAY)
	ADD(tracer.stopped_fraction_sum)
	ADD(tracer.stopped_fraction_threads)
	ADD(tracer.threads_seen)
#undef ADD_ARRAY
#undef ADD
	if (b->tracer.stop_ns_max > d->tracer.stop_ns_max)
		d->tracer.stop_ns_max = b->tracer.stop_ns_max;
	if (b->tracer.signal_ns_max > d->tracer.signal_ns_max)
		d->tracer.signal_ns_max = b->tracer.signal_ns_max;
	if (b->tracer.at_stop_ns_max > d->tracer.at_stop_ns_max)
		d->tracer.at_stop_ns_max = b->tracer.at_stop_ns_max;
	if (b->tracer.stopped_fraction_max > d->tracer.stopped_fraction_max)
		d->tracer.stopped_fraction_max = b->tracer.stopped_fraction_max;
	d->boosted = d->boosted || b->boosted;
}

/* ---- windows -------------------------------------------------------------- */

int hub_window_init(struct hub_window *w)
{
	memset(w, 0, sizeof(*w));
	w->client_fd = -1;
	w->start = calloc(1, sizeof(*w->start));
	w->end = NULL;
	if (!w->start)
		return -ENOMEM;
	if (prof_stacks_create(&w->stacks, 2) < 0) {
		free(w->start);
		w->start = NULL;
		return -ENOMEM;
	}
	return 0;
}

void hub_window_fini(struct hub_window *w)
{
	if (w->stacks)
		prof_stacks_destroy(w->stacks);
	free(w->start);
	free(w->end);
	w->stacks = NULL;
	w->start = w->end = NULL;
}

static bool client_gone(const struct hub_window *w)
{
	struct pollfd p = { .fd = w->client_fd, .events = POLLRDHUP };

	if (w->client_fd < 0)
		return false;
	return poll(&p, 1, 0) == 1 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL));
}

/* Ends w's share of the session at st (NULL: it cannot end at all). */
static int window_end(struct hub_window *w, const struct sampler_stats *st)
{
	if (w->end)
		return 0;
	w->end = malloc(sizeof(*w->end));
	if (!w->end)
		return -ENOMEM;
	*w->end = *st;
	return 0;
}

/* Builds w (which has ended) unless its client left. */
static void window_build(struct hub *h, struct sess *sess, struct hub_window *w)
{
	const struct sampler *s = sess_sampler(sess);
	struct sampler_stats *d;
	struct hub_profile p;

	if (w->client_gone || w->err)
		return;
	d = malloc(sizeof(*d));
	if (!d) {
		w->err = -ENOMEM;
		return;
	}
	stats_window(d, w->start, w->end);
	p = (struct hub_profile){
		.mode = w->mode,
		.sampler = s,
		.stacks = w->stacks,
		.mods = sampler_modules(s),
		.sym = sess_symbolizer(sess),
		.stats = d,
	};
	w->err = h->o.build(w, &p, h->o.arg);
	free(d);
}

/* Hands w back to its owner. */
static void window_done(struct hub *h, struct hub_window *w)
{
	pthread_mutex_lock(&h->mu);
	h->n_open--;
	if (w->client_gone)
		h->counts.clients_gone++;
	else if (w->err)
		h->counts.windows_failed++;
	else
		h->counts.windows[w->mode]++;
	pthread_mutex_unlock(&h->mu);
	w->next = NULL;
	h->o.done(w, h->o.arg);
}

/* Takes the windows waiting for a session; h->mu held. */
static struct hub_window *take_pending(struct hub *h)
{
	struct hub_window *list = h->pending;

	h->pending = NULL;
	return list;
}

/* Moves the pending windows to active, starting at st.  Session side. */
static void activate_pending(struct hub *h, const struct sampler_stats *st)
{
	struct hub_window *w, *list;

	pthread_mutex_lock(&h->mu);
	list = take_pending(h);
	pthread_mutex_unlock(&h->mu);
	while (list) {
		w = list;
		list = w->next;
		*w->start = *st;
		w->active = true;
		w->next = h->active;
		h->active = w;
	}
}

/* ---- the session's callbacks (session thread) --------------------------- */

static void on_attached(void *arg)
{
	struct hub *h = arg;

	activate_pending(h, sampler_get_stats(sess_sampler(h->sess)));
}

static void on_sample(uint32_t thread, const struct prof_frame *frames, size_t n,
		      const int64_t *values, void *arg)
{
	struct hub *h = arg;
	struct hub_window *w;

	for (w = h->active; w; w = w->next) {
		/* On -ENOMEM the window misses this sample; the others go on. */
		if (!w->end)
			prof_stacks_add(w->stacks, thread, frames, n, values);
	}
}

/*
 * Every 250 ms: windows that are due end.  While other windows stay open
 * their profiles are built here, on the session thread (the only one that
 * may read its modules); the last one is left for after the session, when
 * the target is no longer traced.
 */
static void on_progress(const struct sampler_stats *st, void *arg)
{
	struct hub *h = arg;
	struct hub_window *w, **pp, *finished = NULL;
	bool open = false;

	pthread_mutex_lock(&h->mu);
	h->live = *st;
	pthread_mutex_unlock(&h->mu);
	activate_pending(h, st);

	for (w = h->active; w; w = w->next) {
		if (w->end)
			continue;
		if (client_gone(w))
			w->client_gone = true;
		if (w->client_gone || st->elapsed_ns - w->start->elapsed_ns >= w->duration_ns) {
			if (window_end(w, st) < 0)
				w->err = -ENOMEM;
		} else {
			open = true;
		}
	}
	if (!open) {
		sess_stop(h->sess);
		return;
	}
	for (pp = &h->active; (w = *pp);) {
		if (!w->end && !w->err) {
			pp = &w->next;
			continue;
		}
		*pp = w->next;
		window_build(h, h->sess, w);
		w->next = finished;
		finished = w;
	}
	while (finished) {
		w = finished;
		finished = w->next;
		window_done(h, w);
	}
}

/* ---- the runner thread ---------------------------------------------------- */

/* Runs one sampling session into *final.  Returns its result; *sp is the
 * session (NULL if none could be made), for the caller to destroy. */
static int sample_session(struct hub *h, enum sampler_mode mode, struct sess **sp,
			  struct sampler_stats *final)
{
	struct sess_opts o = {
		.sampler = {
			.pid = h->o.pid,
			.hz = h->o.hz,
			.stack_size = h->o.stack_size,
			.perf_stack_size = h->o.perf_stack_size,
			.mode = mode,
			.stop = h->o.stop,
			.source = h->o.source,
			.kernel_frames = h->o.kernel_frames && mode == SAMPLER_CPU,
			.python = h->o.python,
			.after_attach = on_attached,
			.after_attach_arg = h,
			.progress = on_progress,
			.progress_arg = h,
			.sink = on_sample,
			.sink_arg = h,
		},
		.debuginfod = h->o.debuginfod,
		.debuginfod_timeout_ns = h->o.debuginfod_timeout_ns,
		.helper = h->o.helper,
	};
	int ret;

	*sp = NULL;
	if (!final)
		return -ENOMEM;
	ret = sess_create(sp, &o);
	if (ret < 0)
		return ret;
	pthread_mutex_lock(&h->mu);
	h->sess = *sp;
	if (h->shutdown)
		sess_stop(*sp);
	pthread_mutex_unlock(&h->mu);
	ret = sess_run(*sp);
	*final = *sampler_get_stats(sess_sampler(*sp));
	return ret;
}

/*
 * The session is over: takes the windows that end with it, the active ones
 * then, unless another session will serve them, those opened meanwhile.
 * Returns them as one list.
 */
static struct hub_window *take_ending_windows(struct hub *h, const struct sampler_stats *final,
					      int ret)
{
	struct hub_window *list, *late = NULL;
	bool keep_pending;

	pthread_mutex_lock(&h->mu);
	h->sess = NULL;
	memset(&h->live, 0, sizeof(h->live));
	if (final) {
		stats_add(&h->past, final);
		h->counts.sessions += final->attached;
	}
	/* Windows opened while the session was ending wait for the next one,
	 * unless there will be none. */
	keep_pending = final && ret == 0 && !h->shutdown && !final->target_exited &&
		       !final->stop_requested;
	if (!keep_pending)
		late = take_pending(h);
	pthread_mutex_unlock(&h->mu);

	for (list = h->active; list && list->next; list = list->next)
		;
	if (list)
		list->next = late;
	else
		h->active = late;
	list = h->active;
	h->active = NULL;
	return list;
}

/* Closes window w at the end of the session that final describes. */
static void end_window(struct hub *h, struct sess *sess, struct hub_window *w,
		       const struct sampler_stats *final, int ret)
{
	if (!final || !final->attached) {
		/* Nothing was sampled: the window says why. */
		w->err = ret < 0 ? ret : -EIO;
		w->attach_failed = sess != NULL;
		return;
	}
	if (!w->active) {
		/* opened as the session ended: an empty window */
		*w->start = *final;
		w->active = true;
	}
	if (!w->end) {
		/* The process may have left mid-window: what was sampled is
		 * kept, as attach keeps it. */
		w->target_exited = final->target_exited;
		if (window_end(w, final) < 0)
			w->err = -ENOMEM;
	} else {
		/* It ended the session (the last window): the fractions the
		 * tracer gave at release are exact. */
		w->end->tracer.stopped_fraction_max = final->tracer.stopped_fraction_max;
		w->end->tracer.stopped_fraction_sum = final->tracer.stopped_fraction_sum;
		w->end->tracer.stopped_fraction_threads = final->tracer.stopped_fraction_threads;
	}
	if (!w->client_gone && client_gone(w))
		w->client_gone = true;
	window_build(h, sess, w);
}

static void run_session(struct hub *h, enum sampler_mode mode)
{
	struct sampler_stats *final = calloc(1, sizeof(*final));
	struct hub_window *w, *list;
	struct sess *sess;
	int ret;

	ret = sample_session(h, mode, &sess, final);
	/* Every window left ends now: the active ones, then the late ones. */
	list = take_ending_windows(h, final, ret);
	for (w = list; w; w = w->next)
		end_window(h, sess, w, final, ret);
	if (h->o.session_end)
		h->o.session_end(final ? final : &h->live, ret, h->o.arg);
	while (list) {
		w = list;
		list = w->next;
		window_done(h, w);
	}
	sess_destroy(sess);
	free(final);
}

static void *runner_main(void *arg)
{
	struct hub *h = arg;
	struct hub_window *w, *list;
	enum sampler_mode mode;

	pthread_mutex_lock(&h->mu);
	for (;;) {
		while (h->dumping)
			pthread_cond_wait(&h->cond, &h->mu);
		if (h->shutdown) {
			/* Never attach for a server that is going away. */
			list = take_pending(h);
			pthread_mutex_unlock(&h->mu);
			while (list) {
				w = list;
				list = w->next;
				w->err = -ECANCELED;
				window_done(h, w);
			}
			pthread_mutex_lock(&h->mu);
		}
		if (!h->pending)
			break;
		mode = h->mode = h->pending->mode;
		pthread_mutex_unlock(&h->mu);
		run_session(h, mode);
		pthread_mutex_lock(&h->mu);
		h->busy_until_ns = 0;
	}
	h->running = false;
	pthread_cond_broadcast(&h->cond);
	pthread_mutex_unlock(&h->mu);
	return NULL;
}

/* ---- the API -------------------------------------------------------------- */

uint64_t hub_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * NS + (uint64_t)ts.tv_nsec;
}

int hub_create(struct hub **out, const struct hub_opts *o)
{
	struct hub *h = calloc(1, sizeof(*h));

	if (!h)
		return -ENOMEM;
	h->o = *o;
	pthread_mutex_init(&h->mu, NULL);
	pthread_cond_init(&h->cond, NULL);
	*out = h;
	return 0;
}

void hub_destroy(struct hub *h)
{
	if (!h)
		return;
	if (h->runner_joinable)
		pthread_join(h->runner, NULL);
	pthread_cond_destroy(&h->cond);
	pthread_mutex_destroy(&h->mu);
	free(h);
}

static uint64_t retry_after(const struct hub *h)
{
	uint64_t now = hub_now_ns();

	return h->busy_until_ns > now + NS ? h->busy_until_ns - now : NS;
}

int hub_open(struct hub *h, struct hub_window *w, uint64_t *retry_ns)
{
	struct hub_window **pp;
	int ret = 0;

	pthread_mutex_lock(&h->mu);
	if (h->shutdown) {
		ret = -ESHUTDOWN;
		goto unlock;
	}
	if (h->running && h->mode != w->mode) {
		*retry_ns = retry_after(h);
		ret = -EBUSY;
		goto unlock;
	}
	w->open_ns = hub_now_ns();
	w->next = NULL;
	for (pp = &h->pending; *pp; pp = &(*pp)->next)
		;
	*pp = w;
	h->n_open++;
	if (w->open_ns + w->duration_ns > h->busy_until_ns)
		h->busy_until_ns = w->open_ns + w->duration_ns;
	if (!h->running) {
		/* A finished runner has left the lock for good: joining it
		 * here cannot wait for us. */
		if (h->runner_joinable)
			pthread_join(h->runner, NULL);
		h->runner_joinable = false;
		h->mode = w->mode;
		ret = -pthread_create(&h->runner, NULL, runner_main, h);
		if (ret < 0) {
			h->pending = NULL;
			h->n_open--;
			goto unlock;
		}
		h->running = true;
		h->runner_joinable = true;
	}
unlock:
	pthread_mutex_unlock(&h->mu);
	return ret;
}

int hub_dump_begin(struct hub *h, uint64_t *retry_ns)
{
	int ret = 0;

	pthread_mutex_lock(&h->mu);
	/* Dumps take a moment: one waits for another rather than failing. */
	while (h->dumping && !h->shutdown)
		pthread_cond_wait(&h->cond, &h->mu);
	if (h->shutdown) {
		ret = -ESHUTDOWN;
	} else if (h->running) {
		*retry_ns = retry_after(h);
		ret = -EBUSY;
	} else {
		h->dumping = true;
	}
	pthread_mutex_unlock(&h->mu);
	return ret;
}

void hub_dump_end(struct hub *h)
{
	pthread_mutex_lock(&h->mu);
	h->dumping = false;
	h->counts.dumps++;
	pthread_cond_broadcast(&h->cond);
	pthread_mutex_unlock(&h->mu);
}

void hub_totals(struct hub *h, struct hub_totals *t)
{
	pthread_mutex_lock(&h->mu);
	*t = h->counts;
	t->sum = h->past;
	if (h->sess)
		stats_add(&t->sum, &h->live);
	t->sampling = h->sess != NULL;
	t->mode = h->mode;
	t->open_windows = h->n_open;
	pthread_mutex_unlock(&h->mu);
}

void hub_shutdown(struct hub *h)
{
	pthread_mutex_lock(&h->mu);
	h->shutdown = true;
	if (h->sess)
		sess_stop(h->sess);
	pthread_cond_broadcast(&h->cond);
	while (h->running || h->dumping)
		pthread_cond_wait(&h->cond, &h->mu);
	pthread_mutex_unlock(&h->mu);
}
