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
#include "lib/grow.h"
#include "profile/export.h"
#include "profile/profile.h"
#include "session/session.h"
#include "symbolize/symbolize.h"

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
};

void top_interval_free(struct top_interval *iv)
{
	if (!iv)
		return;
	prof_stacks_destroy(iv->stacks);
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

	if (iv && f->cur && snapshot_names(iv, sess_sampler(sess)) == 0) {
		iv->stacks = f->cur;
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

static int label_of(uint32_t key, pid_t *tid, const char **name, void *arg)
{
	return sampler_thread_label(arg, key, tid, name);
}

static int process_label_of(uint32_t key, pid_t *pid, const char **name, void *arg)
{
	return sampler_process_label(arg, key, pid, name);
}

/* Adds segment g (not the first) to the profile b. */
static int add_segment(struct top_feed *f, struct prof_builder *b, struct segment *g,
		       struct sym_ctx *sym)
{
	struct prof_export_opts o = {
		.value = f->a.mode == SAMPLER_WALL ? PROF_VALUE_WALL : PROF_VALUE_CPU,
		.hz = f->a.hz,
		.thread_label = label_of,
		.process_label = process_label_of,
		.arg = sess_sampler(g->sess),
	};

	return prof_export_add(b, g->whole, sampler_modules(sess_sampler(g->sess)), sym, &o);
}

static int build_whole(struct top_feed *f, struct prof_builder **b)
{
	struct sym_ctx *sym;
	struct segment *g;
	char what[64];
	size_t i;
	int ret = 0;

	snprintf(what, sizeof(what), "top -p %d", (int)f->pid);
	*b = NULL;
	for (i = 0; i < f->n_segs && ret == 0; i++) {
		g = &f->segs[i];
		if (!g->ended || !g->whole)
			continue;
		/* Without symbols the profile keeps addresses and build ids;
		 * the session's symbolizer names JIT code and downloads too. */
		sym = sess_symbolizer(g->sess);
		if (!*b)
			ret = cli_session_profile(&f->a, what, sess_sampler(g->sess), g->whole, sym,
						  &g->final, b);
		else
			ret = add_segment(f, *b, g, sym);
	}
	if (ret == 0 && !*b)
		ret = -ENODATA;
	return ret;
}

int top_feed_write(struct top_feed *f, const char *path)
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
	ret = build_whole(f, &b);
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
	close(f->wake_fd);
	pthread_mutex_destroy(&f->mu);
	free(f);
}
