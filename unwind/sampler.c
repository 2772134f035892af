/* SPDX-License-Identifier: MIT */
/* The attach-mode CPU sampling loop: ticks, snapshots, unwinding, aggregation. */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "symbolize/maps.h"
#include "unwind/procfs.h"
#include "unwind/sampler.h"
#include "unwind/snapshot.h"
#include "unwind/tracer.h"

/* Re-read maps for an unknown pc at most this often (JIT code would
 * otherwise make every sample re-read them). */
#define MAPS_RETRY_NS 250000000ull

struct label {
	pid_t tid;
	char name[64];
};

struct sampler {
	struct sampler_opts o;
	struct tracer *tracer;
	struct sym_maps maps;
	struct sym_modtab *mods;
	struct remote_unwinder *unwinder;
	struct prof_stacks *stacks;
	struct snap *snaps;	/* captured this round, waiting to be unwound */
	size_t n_snaps, cap_snaps;
	struct prof_frame *frames;
	struct label *labels;
	size_t n_labels, cap_labels;
	uint64_t maps_read_ns;
	int pending_events;	/* TRACER_EV_* seen while waiting for stops */
	int session_ret;
	struct sampler_stats stats;
};

static uint32_t add_label(struct sampler *s, pid_t tid, const char *name)
{
	if (s->n_labels == s->cap_labels) {
		size_t cap = s->cap_labels ? s->cap_labels * 2 : 64;
		struct label *nv = realloc(s->labels, cap * sizeof(*nv));

		if (!nv)
			return 0;
		s->labels = nv;
		s->cap_labels = cap;
	}
	s->labels[s->n_labels].tid = tid;
	snprintf(s->labels[s->n_labels].name, sizeof(s->labels[0].name), "%s", name);
	return (uint32_t)++s->n_labels;
}

static int refresh_maps(struct sampler *s)
{
	int ret = sym_maps_read(s->o.pid, &s->maps);

	if (ret < 0)
		return ret;
	s->maps_read_ns = tracer_now_ns();
	ret = sym_modtab_update(s->mods, &s->maps);
	remote_flush(s->unwinder);
	return ret < 0 ? ret : 0;
}

static void on_thread(struct tracer *t, struct tracer_thread *th, bool appeared, void *arg)
{
	struct sampler *s = arg;
	struct procfs_stat st;

	if (!appeared)
		return;
	/* CPU used before we saw the thread is not ours to attribute. */
	if (th->schedstat_fd >= 0)
		procfs_read_schedstat(th->schedstat_fd, &th->user_run_ns);
	th->user_primed = true;
	if (th->stat_fd >= 0 && procfs_read_stat(th->stat_fd, &st) == 0)
		th->user_label = add_label(s, th->tid, st.comm);
	else
		th->user_label = add_label(s, th->tid, "");
}

static bool on_stop(struct tracer *t, struct tracer_thread *th, bool group_stopped, void *arg)
{
	struct sampler *s = arg;
	struct snap *sn;

	/* A job-control stop is not CPU use: nothing to sample. */
	if (group_stopped)
		return false;
	if (s->n_snaps == s->cap_snaps) {
		size_t cap = s->cap_snaps ? s->cap_snaps * 2 : 16, i;
		struct snap *nv = realloc(s->snaps, cap * sizeof(*nv));

		if (!nv)
			return false;
		s->snaps = nv;
		for (i = s->cap_snaps; i < cap; i++) {
			if (snap_init(&s->snaps[i], s->o.stack_size) < 0)
				break;
		}
		s->cap_snaps = i;
		if (s->n_snaps == s->cap_snaps)
			return false;
	}
	sn = &s->snaps[s->n_snaps];
	if (snap_capture(sn, s->o.pid, th->tid, &s->maps) < 0)
		return false;
	sn->cpu_ns = th->user_seen_run_ns - th->user_run_ns;
	sn->key = th->user_label;
	th->user_run_ns = th->user_seen_run_ns;
	s->n_snaps++;
	return false;	/* copied: resume at once */
}

static void on_exec(struct tracer *t, void *arg)
{
	struct sampler *s = arg;

	sym_modtab_unmap_all(s->mods);
	refresh_maps(s);
	s->stats.execs++;
}

static const struct tracer_ops sampler_ops = {
	.on_stop = on_stop,
	.on_thread = on_thread,
	.on_exec = on_exec,
};

static bool needs_maps_retry(const struct sampler *s, const struct snap *sn,
			     const struct prof_frame *f, size_t n)
{
	size_t i;

	if (sn->sp_unmapped)
		return true;
	if (tracer_now_ns() - s->maps_read_ns < MAPS_RETRY_NS)
		return false;
	for (i = 0; i < n; i++)
		if (!f[i].module)
			return true;
	return false;
}

/* Unwinds and aggregates the snapshots taken so far; the threads already
 * run again. */
static int process_snaps(struct sampler *s)
{
	size_t i, n;
	int ret;

	for (i = 0; i < s->n_snaps; i++) {
		struct snap *sn = &s->snaps[i];
		enum remote_end end;
		int64_t values[2];

		n = remote_unwind(s->unwinder, sn, s->frames, s->o.max_frames, &end);
		if (needs_maps_retry(s, sn, s->frames, n) && refresh_maps(s) >= 0) {
			/* A new library or thread stack since the last read.
			 * The SP-bounded copy is what it is; re-unwind with the
			 * new modules. */
			n = remote_unwind(s->unwinder, sn, s->frames, s->o.max_frames, &end);
		}
		if (!n)
			continue;
		values[0] = 1;
		values[1] = (int64_t)sn->cpu_ns;
		ret = prof_stacks_add(s->stacks, sn->key, s->frames, n, values);
		if (ret < 0)
			return ret;
		s->stats.samples++;
		s->stats.cpu_ns += sn->cpu_ns;
		s->stats.ends[end]++;
	}
	s->n_snaps = 0;
	return 0;
}

static bool thread_wants_sample(struct sampler *s, struct tracer_thread *th)
{
	struct procfs_stat st;
	uint64_t run_ns;

	if (th->pending || th->listening || th->schedstat_fd < 0 || th->stat_fd < 0)
		return false;
	/* schedstat first: a thread that has not run since its last sample
	 * has no CPU to report, and one pread is cheaper than parsing stat. */
	if (procfs_read_schedstat(th->schedstat_fd, &run_ns) < 0)
		return false;
	if (!th->user_primed) {
		th->user_run_ns = run_ns;
		th->user_primed = true;
		return false;
	}
	if (run_ns == th->user_run_ns)
		return false;
	if (procfs_read_stat(th->stat_fd, &st) < 0 || st.state != 'R')
		return false;
	if (th->user_label && strcmp(s->labels[th->user_label - 1].name, st.comm) != 0)
		th->user_label = add_label(s, th->tid, st.comm);
	th->user_seen_run_ns = run_ns;
	return true;
}

static int tick(struct sampler *s)
{
	uint64_t deadline;
	size_t i, n = tracer_thread_count(s->tracer);
	int r;

	for (i = 0; i < n; i++) {
		struct tracer_thread *th = tracer_thread_at(s->tracer, i);

		if (thread_wants_sample(s, th))
			tracer_interrupt(s->tracer, th);
	}
	/* Collect the stops; each thread is resumed as soon as it is copied.
	 * A thread that went into uninterruptible sleep may stop late: its
	 * stop is then served by the main loop. */
	deadline = tracer_now_ns() + 20000000u;
	while (tracer_pending_count(s->tracer) > 0) {
		uint64_t now = tracer_now_ns();

		if (now >= deadline)
			break;
		r = tracer_poll(s->tracer, deadline - now);
		if (r < 0)
			return r;
		s->pending_events |= r;
		if (r & TRACER_EV_GONE)
			break;
	}
	return process_snaps(s);
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
	s->frames = calloc(s->o.max_frames, sizeof(*s->frames));
	if (!s->frames)
		goto err;
	ret = prof_stacks_create(&s->stacks, 2);
	if (ret < 0)
		goto err;
	ret = sym_modtab_create(&s->mods, o->pid);
	if (ret < 0)
		goto err;
	ret = remote_create(&s->unwinder, o->pid, s->mods, &s->maps);
	if (ret < 0)
		goto err;
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
	remote_destroy(s->unwinder);
	if (s->mods)
		sym_modtab_destroy(s->mods);
	sym_maps_free(&s->maps);
	if (s->stacks)
		prof_stacks_destroy(s->stacks);
	for (i = 0; i < s->cap_snaps; i++)
		snap_fini(&s->snaps[i]);
	free(s->snaps);
	free(s->frames);
	free(s->labels);
	free(s);
}

static int session_attach(struct sampler *s)
{
	struct timespec ts;
	int ret;

	ret = tracer_attach(&s->tracer, s->o.pid, &sampler_ops, s);
	if (ret < 0)
		return ret;
	s->stats.attached = true;
	clock_gettime(CLOCK_REALTIME, &ts);
	s->stats.start_realtime_ns = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
	return refresh_maps(s);
}

static int session_loop(struct sampler *s)
{
	uint64_t period = 1000000000u / s->o.hz;
	uint64_t start = tracer_now_ns(), next = start, now, wait;
	uint64_t deadline = s->o.duration_ns ? start + s->o.duration_ns : UINT64_MAX;
	int r = 0;

	for (;;) {
		now = tracer_now_ns();
		if (now >= deadline)
			break;
		if (now >= next) {
			r = tick(s);
			if (r < 0)
				break;
			s->stats.ticks++;
			next += period;
			now = tracer_now_ns();
			if (next <= now) {
				uint64_t behind = (now - next) / period + 1;

				s->stats.ticks_missed += behind;
				next += behind * period;
			}
		} else {
			wait = (deadline < next ? deadline : next) - now;
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
		if (s->pending_events & TRACER_EV_GONE) {
			s->stats.target_exited = true;
			break;
		}
	}
	s->stats.elapsed_ns = tracer_now_ns() - start;
	return r < 0 ? r : 0;
}

static void session_release(struct sampler *s)
{
	const struct tracer_stats *ts = tracer_get_stats(s->tracer);

	/* Stops that arrived after the last tick are still samples. */
	tracer_poll(s->tracer, 0);
	s->stats.threads_seen = ts->threads_seen;
	s->stats.stops = ts->stops;
	s->stats.stop_ns_total = ts->stop_ns_total;
	s->stats.stop_ns_max = ts->stop_ns_max;
	s->stats.signals_reinjected = ts->signals_reinjected;
	tracer_release(s->tracer);
	s->tracer = NULL;
	process_snaps(s);
}

static void *session_main(void *arg)
{
	struct sampler *s = arg;
	int ret;

	ret = session_attach(s);
	if (ret == 0)
		ret = session_loop(s);
	if (s->tracer)
		session_release(s);
	s->session_ret = ret;
	/* Returning ends this thread: the kernel detaches the target here. */
	return NULL;
}

int sampler_session(struct sampler *s)
{
	pthread_t th;
	sigset_t mask;
	int ret;

	/* Blocked here first, so no thread of cprof takes them by default
	 * action; the session thread inherits the mask and reads them from
	 * its signalfd. */
	sigemptyset(&mask);
	sigaddset(&mask, SIGCHLD);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGHUP);
	ret = pthread_sigmask(SIG_BLOCK, &mask, NULL);
	if (ret)
		return -ret;
	ret = pthread_create(&th, NULL, session_main, s);
	if (ret)
		return -ret;
	pthread_join(th, NULL);
	return s->session_ret;
}

const struct prof_stacks *sampler_stacks(const struct sampler *s)
{
	return s->stacks;
}

const struct sym_modtab *sampler_modules(const struct sampler *s)
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
