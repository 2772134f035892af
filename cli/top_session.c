/* SPDX-License-Identifier: MIT */
/* cprof top's feed: sampling sessions cut into one-second intervals for the view. */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "cli/top.h"
#include "lib/clock.h"
#include "lib/grow.h"
#include "profile/export.h"
#include "profile/output.h"
#include "profile/profile.h"
#include "session/session.h"
#include "symbolize/symbolize.h"

/* A thread's time held stopped, as of a cut. */
struct held {
	pid_t tid;
	uint64_t stopped_ns;
};

/* One sampling session: top runs one, and one more after each pause. */
struct segment {
	struct sess *sess;	/* the sampler, perf maps and downloads */
	struct prof_stacks *whole;	/* every sample, for -o; NULL without -o */
	struct sampler_stats final;
	bool ended;
};

/*
 * Who touches what: head, tail, end and end_ready under mu.  cur, cut_ns
 * and the running segment's whole belong to the session thread while it
 * runs, and to the runner thread after (sampler_session's join orders the
 * two).  segs grows only on the main thread, while no session runs.
 */
struct top_feed {
	struct cli_session a;
	pid_t pid;
	unsigned tracer_flags;
	bool keep_whole;
	int wake_fd;
	pthread_mutex_t mu;
	struct top_interval *head, **tail;
	struct top_end end;
	bool end_ready;
	struct segment *segs;
	size_t n_segs, cap_segs;
	pthread_t runner;
	bool running;			/* the runner lives, its end not yet taken */
	struct prof_stacks *cur;	/* the interval being filled */
	uint64_t cut_ns;		/* elapsed_ns of the last cut */
	uint64_t cut_mono_ns;		/* CLOCK_MONOTONIC at the last cut */
	/* each traced thread's stopped time at the last cut (held), for the
	 * next cut's shares, and the next cut's (held_next) */
	struct held *held, *held_next;
	size_t n_held, cap_held, cap_held_next;
	/* scratch for the Python ids of the interval being cut */
	uint64_t *py_ids;
	size_t n_py_ids, cap_py_ids;
};

void top_interval_free(struct top_interval *iv)
{
	if (!iv)
		return;
	prof_stacks_destroy(iv->stacks);
	for (size_t i = 0; i < iv->n_pylocs; i++) {
		free(iv->pylocs[i].function);
		free(iv->pylocs[i].file);
	}
	free(iv->pylocs);
	free(iv->mods);
	free(iv->labels);
	free(iv);
}

static void wake(struct top_feed *f)
{
	uint64_t one = 1;

	/* a full counter already wakes the reader */
	if (write(f->wake_fd, &one, sizeof(one)) < 0)
		return;
}

/* ---- the session thread ---------------------------------------------------- */

static void on_sample(uint32_t thread, const struct prof_frame *frames, size_t n,
		      const int64_t *values, void *arg)
{
	struct top_feed *f = arg;
	struct segment *g = &f->segs[f->n_segs - 1];

	/* On -ENOMEM a sample is missing from the view, or from -o: the
	 * statistics still count it. */
	if (f->cur)
		prof_stacks_add(f->cur, thread, frames, n, values);
	if (g->whole)
		prof_stacks_add(g->whole, thread, frames, n, values);
}

/* The session's modules and thread names as of now, into iv. */
static int snapshot_names(struct top_interval *iv, const struct sampler *s)
{
	const struct proc_modules *mods = sampler_modules(s);
	size_t i, n = mods ? proc_modules_count(mods) : 0, cap = 0;
	const char *name;
	pid_t tid;

	iv->mods = calloc(n ? n : 1, sizeof(*iv->mods));
	if (!iv->mods)
		return -ENOMEM;
	for (i = 0; i < n; i++)
		iv->mods[i] = proc_modules_get(mods, (uint32_t)(i + 1));
	iv->n_mods = n;
	for (i = 1; sampler_thread_label(s, (uint32_t)i, &tid, &name) == 0; i++) {
		if (cprof_grow(&iv->labels, &cap, iv->n_labels + 1, sizeof(*iv->labels), 16) < 0)
			return -ENOMEM;
		iv->labels[iv->n_labels] = (struct top_label){ .key = (uint32_t)i, .tid = tid };
		snprintf(iv->labels[iv->n_labels].name, sizeof(iv->labels[0].name), "%s",
			 name ? name : "");
		iv->n_labels++;
	}
	return 0;
}

static int add_python_ids(uint32_t thread, const struct prof_frame *frames, size_t n,
			  const int64_t *values, void *arg)
{
	struct top_feed *f = arg;
	size_t i;

	(void)thread;
	(void)values;
	for (i = 0; i < n; i++) {
		if (!(frames[i].flags & PROF_FRAME_PYTHON))
			continue;
		if (cprof_grow(&f->py_ids, &f->cap_py_ids, f->n_py_ids + 1, sizeof(*f->py_ids),
			       256) < 0)
			return -ENOMEM;
		f->py_ids[f->n_py_ids++] = frames[i].addr;
	}
	return 0;
}

static int cmp_id(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* The Python locations iv's samples name, into iv (sorted by id): the
 * interpreter's tables grow on the session thread, which alone reads them. */
static int snapshot_python(struct top_feed *f, struct top_interval *iv, const struct sampler *s)
{
	struct py_location loc;
	struct top_pyloc *p;
	size_t i;
	int ret;

	f->n_py_ids = 0;
	ret = prof_stacks_foreach(iv->stacks, add_python_ids, f);
	if (ret < 0 || !f->n_py_ids)
		return ret;
	qsort(f->py_ids, f->n_py_ids, sizeof(*f->py_ids), cmp_id);
	iv->pylocs = calloc(f->n_py_ids, sizeof(*iv->pylocs));
	if (!iv->pylocs)
		return -ENOMEM;
	for (i = 0; i < f->n_py_ids; i++) {
		if ((i && f->py_ids[i] == f->py_ids[i - 1]) ||
		    sampler_python_location(s, f->py_ids[i], &loc) < 0)
			continue;
		p = &iv->pylocs[iv->n_pylocs++];
		p->id = f->py_ids[i];
		p->line = loc.line;
		p->function = strdup(loc.function);
		p->file = loc.file ? strdup(loc.file) : NULL;
		if (!p->function || (loc.file && !p->file))
			return -ENOMEM;
	}
	return 0;
}

/* A thread's time held stopped at the last cut (0: it is new). */
static uint64_t held_before(const struct top_feed *f, pid_t tid)
{
	size_t i;

	for (i = 0; i < f->n_held; i++)
		if (f->held[i].tid == tid)
			return f->held[i].stopped_ns;
	return 0;
}

/*
 * The thread held stopped the longest share of the interval, into iv, and
 * every thread's stopped time for the next cut.  During the session only
 * (its final cut has none).  A thread counts once it has lived a sampling
 * period in the interval: one stop of a thread just born is no share.
 */
static void snapshot_stopped(struct top_feed *f, struct top_interval *iv, const struct sampler *s)
{
	uint64_t now = cprof_now_ns(), floor = 1000000000ull / f->a.hz, from, held;
	struct sampler_thread_stop th;
	struct held *swap;
	size_t i, n = 0;
	double share;

	for (i = 0; sampler_thread_stopped(s, i, &th) == 0; i++) {
		from = th.appeared_ns > f->cut_mono_ns ? th.appeared_ns : f->cut_mono_ns;
		held = held_before(f, th.tid);
		/* (a tid used again by a new thread: its own time) */
		held = th.stopped_ns >= held ? th.stopped_ns - held : th.stopped_ns;
		share = now > from + floor ? (double)held / (double)(now - from) : -1;
		if (share > iv->stopped.share) {
			iv->stopped = (struct top_stopped){ .share = share, .tid = th.tid };
			snprintf(iv->stopped.name, sizeof(iv->stopped.name), "%s", th.name);
		}
		/* no room: the thread's next share counts its whole life, too high */
		if (cprof_grow(&f->held_next, &f->cap_held_next, n + 1, sizeof(*f->held_next),
			       64) == 0)
			f->held_next[n++] = (struct held){ th.tid, th.stopped_ns };
	}
	swap = f->held;
	f->held = f->held_next;
	f->held_next = swap;
	i = f->cap_held;
	f->cap_held = f->cap_held_next;
	f->cap_held_next = i;
	f->n_held = n;
	f->cut_mono_ns = now;
}

/*
 * Hands the interval filled so far to the main thread.  Called on the
 * session thread (the only one that may read its modules and labels), or
 * on the runner once the session has ended.  On -ENOMEM the interval is
 * lost, and the view shows the next one.
 */
static void cut(struct top_feed *f, struct sess *sess, const struct sampler_stats *st,
		bool last)
{
	struct top_interval *iv = calloc(1, sizeof(*iv));
	const struct sampler *s = sess_sampler(sess);

	if (iv)
		iv->stacks = f->cur;
	if (iv && f->cur && snapshot_names(iv, s) == 0 && snapshot_python(f, iv, s) == 0) {
		snapshot_stopped(f, iv, s);
		iv->sess = sess;
		iv->st = *st;
		iv->segment = (unsigned)(f->n_segs - 1);
		iv->last = last;
		f->cur = NULL;
		pthread_mutex_lock(&f->mu);
		*f->tail = iv;
		f->tail = &iv->next;
		pthread_mutex_unlock(&f->mu);
		iv = NULL;
		wake(f);
	}
	if (iv)
		iv->stacks = NULL;	/* still f->cur's, filled on */
	top_interval_free(iv);
	f->cut_ns = st->elapsed_ns;
	if (!f->cur && !last && prof_stacks_create(&f->cur, 2) < 0)
		f->cur = NULL;
}

/* Every 250 ms: an interval is cut once it is about a second long. */
static void on_progress(const struct sampler_stats *st, void *arg)
{
	struct top_feed *f = arg;

	if (st->elapsed_ns - f->cut_ns + TOP_INTERVAL_NS / 8 < TOP_INTERVAL_NS)
		return;
	cut(f, f->segs[f->n_segs - 1].sess, st, false);
}

/* ---- the runner thread ------------------------------------------------------ */

static void *runner_main(void *arg)
{
	struct top_feed *f = arg;
	struct segment *g = &f->segs[f->n_segs - 1];
	int ret;

	ret = sess_run(g->sess);
	/* The session thread is gone: what it owned is the runner's now. */
	g->final = *sampler_get_stats(sess_sampler(g->sess));
	g->ended = true;
	cut(f, g->sess, &g->final, true);
	pthread_mutex_lock(&f->mu);
	f->end = (struct top_end){ .ret = ret, .st = g->final, .segment = (unsigned)(f->n_segs - 1) };
	f->end_ready = true;
	pthread_mutex_unlock(&f->mu);
	wake(f);
	return NULL;
}

/* ---- the main thread -------------------------------------------------------- */

int top_feed_create(struct top_feed **out, const struct cli_session *a, pid_t pid,
		    unsigned tracer_flags, bool keep_whole)
{
	struct top_feed *f = calloc(1, sizeof(*f));

	if (!f)
		return -ENOMEM;
	f->a = *a;
	f->pid = pid;
	f->tracer_flags = tracer_flags;
	f->keep_whole = keep_whole;
	f->tail = &f->head;
	f->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (f->wake_fd < 0) {
		free(f);
		return -errno;
	}
	pthread_mutex_init(&f->mu, NULL);
	*out = f;
	return 0;
}

int top_feed_fd(const struct top_feed *f)
{
	return f->wake_fd;
}

bool top_feed_running(const struct top_feed *f)
{
	return f->running;
}

static int new_segment(struct top_feed *f, struct segment **out)
{
	struct segment *g;

	if (cprof_grow(&f->segs, &f->cap_segs, f->n_segs + 1, sizeof(*f->segs), 4) < 0)
		return -ENOMEM;
	g = &f->segs[f->n_segs];
	memset(g, 0, sizeof(*g));
	if (f->keep_whole && prof_stacks_create(&g->whole, 2) < 0)
		return -ENOMEM;
	*out = g;
	return 0;
}

static void sampler_opts_of(struct top_feed *f, struct sampler_opts *so)
{
	const struct cli_session *a = &f->a;

	*so = (struct sampler_opts){
		.pid = f->pid,
		.hz = a->hz,
		.stack_size = a->stack_size,
		.perf_stack_size = a->stack_size_given ? a->stack_size : 0,
		.mode = a->mode,
		.stop = a->stop,
		.source = a->source,
		.kernel_frames = a->kallsyms != NULL,
		.python = !a->python_off,
		.tracer_flags = f->tracer_flags | (a->sched == CLI_SCHED_NORMAL ? 0 : TRACER_RT) |
				(a->sched == CLI_SCHED_AUTO ? TRACER_RT_ADAPT : 0),
		.progress = on_progress,
		.progress_arg = f,
		.sink = on_sample,
		.sink_arg = f,
	};
}

int top_feed_start(struct top_feed *f)
{
	struct sess_opts so;
	struct segment *g;
	sigset_t winch, old;
	int ret;

	if (f->running)
		return -EBUSY;
	ret = new_segment(f, &g);
	if (ret < 0)
		return ret;
	so = (struct sess_opts){
		.debuginfod = !f->a.no_debuginfod,
		.debuginfod_timeout_ns = f->a.debuginfod_timeout_ns,
		.helper = f->a.helper,
	};
	sampler_opts_of(f, &so.sampler);
	ret = sess_create(&g->sess, &so);
	if (ret < 0) {
		prof_stacks_destroy(g->whole);
		return ret;
	}
	f->n_segs++;
	f->cut_ns = 0;
	/* a new session: its threads' stopped times start again */
	f->n_held = 0;
	f->cut_mono_ns = cprof_now_ns();
	if (!f->cur && prof_stacks_create(&f->cur, 2) < 0)
		f->cur = NULL;
	/* SIGWINCH is the terminal's, for the main thread's ncurses. */
	sigemptyset(&winch);
	sigaddset(&winch, SIGWINCH);
	pthread_sigmask(SIG_BLOCK, &winch, &old);
	ret = -pthread_create(&f->runner, NULL, runner_main, f);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (ret < 0)
		return ret;
	f->running = true;
	return 0;
}

void top_feed_stop(struct top_feed *f)
{
	if (f->running)
		sess_stop(f->segs[f->n_segs - 1].sess);
}

void top_feed_wait(struct top_feed *f)
{
	if (!f->running)
		return;
	pthread_join(f->runner, NULL);
	f->running = false;
}

struct top_interval *top_feed_take(struct top_feed *f, struct top_end *end, bool *ended)
{
	struct top_interval *list;

	pthread_mutex_lock(&f->mu);
	list = f->head;
	f->head = NULL;
	f->tail = &f->head;
	*ended = f->end_ready;
	if (f->end_ready)
		*end = f->end;
	f->end_ready = false;
	pthread_mutex_unlock(&f->mu);
	if (*ended && f->running) {
		pthread_join(f->runner, NULL);
		f->running = false;
	}
	return list;
}

uint64_t top_feed_whole_samples(const struct top_feed *f)
{
	uint64_t n = 0;
	size_t i;

	for (i = 0; i < f->n_segs; i++)
		n += f->segs[i].ended ? f->segs[i].final.samples : 0;
	return n;
}

/* Adds segment g (not the first) to the profile b, symbolized until
 * deadline_ns; *cut counts the modules the deadline left unnamed. */
static int add_segment(struct top_feed *f, struct prof_builder *b, struct segment *g,
		       struct sym_ctx *sym, uint64_t deadline_ns, size_t *cut)
{
	struct prof_export_opts o;
	size_t n = 0;
	int ret;

	cli_session_export(&f->a, sess_sampler(g->sess), &o);
	o.sym_deadline_ns = deadline_ns;
	ret = prof_export_add(b, g->whole, sampler_modules(sess_sampler(g->sess)), sym, &o, &n);
	*cut += n;
	return ret;
}

/*
 * The statistics of every session of the run added up, for the profile's
 * comments: counts and histograms add, maxima take the largest.  Threads
 * seen again after a pause are counted again.
 */
static void add_stats(struct sampler_stats *sum, const struct sampler_stats *st)
{
	struct tracer_stats *t = &sum->tracer;
	const struct tracer_stats *u = &st->tracer;
	size_t i;

	sum->ticks += st->ticks;
	sum->ticks_missed += st->ticks_missed;
	sum->samples += st->samples;
	sum->samples_reused += st->samples_reused;
	sum->samples_unstopped += st->samples_unstopped;
	for (i = 0; i <= REMOTE_END_ERROR; i++)
		sum->ends[i] += st->ends[i];
	sum->value_ns += st->value_ns;
	sum->elapsed_ns += st->elapsed_ns;
	sum->cprof_cpu_ns += st->cprof_cpu_ns;
	sum->kernel_samples += st->kernel_samples;
	sum->python_samples += st->python_samples;
	sum->python_read_ns += st->python_read_ns;
	t->stops += u->stops;
	t->stop_ns_total += u->stop_ns_total;
	t->at_stop_ns_total += u->at_stop_ns_total;
	t->stop_ns_max = u->stop_ns_max > t->stop_ns_max ? u->stop_ns_max : t->stop_ns_max;
	t->at_stop_ns_max = u->at_stop_ns_max > t->at_stop_ns_max ? u->at_stop_ns_max :
		t->at_stop_ns_max;
	for (i = 0; i < TRACER_HIST_BUCKETS; i++) {
		t->stop_hist[i] += u->stop_hist[i];
		t->at_stop_hist[i] += u->at_stop_hist[i];
	}
	if (u->stopped_fraction_max > t->stopped_fraction_max)
		t->stopped_fraction_max = u->stopped_fraction_max;
	t->stopped_fraction_sum += u->stopped_fraction_sum;
	t->stopped_fraction_threads += u->stopped_fraction_threads;
	t->threads_seen += u->threads_seen;
	t->sched_rt_ns += u->sched_rt_ns;
	t->sched_switches += u->sched_switches;
	t->sched_drop = t->sched_drop ? t->sched_drop : u->sched_drop;
	/* the source the run ended with, as a session's comments say */
	sum->source = st->source;
}

/* The profile of every segment, symbolized within --write-timeout from
 * now; *cut: the modules that bound left unnamed. */
static int build_whole(struct top_feed *f, struct prof_builder **b, size_t *cut)
{
	uint64_t deadline_ns = cprof_now_ns() + f->a.write_timeout_ns;
	size_t later_cut = 0;
	struct sampler_stats whole;
	struct sym_ctx *sym;
	struct segment *g;
	bool any = false;
	char what[64];
	size_t i;
	int ret = 0;

	snprintf(what, sizeof(what), "top -p %d", (int)f->pid);
	*b = NULL;
	for (i = 0; i < f->n_segs; i++) {
		g = &f->segs[i];
		if (!g->ended || !g->whole)
			continue;
		if (any)
			add_stats(&whole, &g->final);
		else
			whole = g->final;
		any = true;
	}
	for (i = 0; i < f->n_segs && ret == 0; i++) {
		g = &f->segs[i];
		if (!g->ended || !g->whole)
			continue;
		/* Without symbols the profile keeps addresses and build ids;
		 * the session's symbolizer names JIT code and downloads too. */
		sym = sess_symbolizer(g->sess);
		/* the comments: the whole run's statistics */
		if (!*b)
			ret = cli_session_profile(&f->a, what, sess_sampler(g->sess), g->whole, sym,
						  &whole, b, cut);
		else
			ret = add_segment(f, *b, g, sym, deadline_ns, &later_cut);
	}
	/* the first segment's cut is noted by cli_session_profile */
	if (ret == 0 && later_cut)
		ret = prof_note_cut(*b, later_cut);
	*cut += later_cut;
	if (ret == 0 && !*b)
		ret = -ENODATA;
	return ret;
}

int top_feed_write(struct top_feed *f, const char *path, size_t *modules_cut)
{
	struct prof_builder *b = NULL;
	const struct segment *first = NULL, *last = NULL;
	size_t i;
	int ret;

	for (i = 0; i < f->n_segs; i++) {
		if (!f->segs[i].ended)
			continue;
		first = first ? first : &f->segs[i];
		last = &f->segs[i];
	}
	if (!first || !first->final.attached) {
		cli_error("cannot write '%s': nothing was sampled", path);
		return -ENODATA;
	}
	*modules_cut = 0;
	ret = build_whole(f, &b, modules_cut);
	if (ret < 0) {
		cli_error("cannot build the profile of pid %d: %s", (int)f->pid, strerror(-ret));
		return ret;
	}
	/* From the first session's start to the last one's end, pauses included. */
	prof_set_time(b, (int64_t)first->final.start_realtime_ns,
		      (int64_t)(last->final.start_realtime_ns + last->final.elapsed_ns -
				first->final.start_realtime_ns));
	ret = prof_write_file(b, path);
	prof_builder_destroy(b);
	if (ret < 0)
		cli_error("cannot write '%s': %s", path, strerror(-ret));
	return ret;
}

void top_feed_destroy(struct top_feed *f)
{
	struct top_interval *iv;
	struct top_end end;
	bool ended = false;
	size_t i;

	if (!f)
		return;
	top_feed_stop(f);
	top_feed_wait(f);
	iv = top_feed_take(f, &end, &ended);
	while (iv) {
		struct top_interval *next = iv->next;

		top_interval_free(iv);
		iv = next;
	}
	for (i = 0; i < f->n_segs; i++) {
		prof_stacks_destroy(f->segs[i].whole);
		sess_destroy(f->segs[i].sess);
	}
	prof_stacks_destroy(f->cur);
	free(f->segs);
	free(f->held);
	free(f->held_next);
	free(f->py_ids);
	close(f->wake_fd);
	pthread_mutex_destroy(&f->mu);
	free(f);
}
