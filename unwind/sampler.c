/* SPDX-License-Identifier: MIT */
/*
 * The sampling session: seize the target, offer each thread to the sample
 * sources (unwind/source.h), tick until the session ends, and let go.  The
 * round (round.c) unwinds what the sources deliver; labels.c names the
 * threads and processes.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/clock.h"
#include "lib/random.h"
#include "unwind/perf_thread.h"
#include "unwind/python_sample.h"
#include "unwind/sampler_impl.h"

/* An interrupt whose stop has not come after this is forgotten (see
 * tracer_expire_interrupts): longer than any stop seen under load. */
#define EXPIRE_NS 200000000ull
/* How long a tick polls for the stops it asked for before it sleeps, while
 * polling pays (tracer_set_spin_adaptive): a thread on a CPU reaches its
 * stop within a few microseconds, and a sleep and wake-up cost more. */
#define SPIN_NS 20000ull
/* The live status (sampler_opts.progress) at most this often. */
#define PROGRESS_NS 250000000u

bool samp_others_on(const struct sampler *s)
{
	unsigned i;

	for (i = 0; samp_sources[i]; i++) {
		if (i != s->base && s->source_on[i])
			return true;
	}
	return false;
}

void samp_source_stopped(struct sampler *s, const struct samp_source *src)
{
	s->source_on[samp_source_index(src)] = false;
}

/* th is sampled by source i from now on: at stops (the base), seized
 * first when the tracer only watches (a thread gone meanwhile is no
 * error: its exit comes). */
static void give(struct sampler *s, struct tracer_thread *th, unsigned i)
{
	struct samp_thread *st = th->user;
	int r;

	st->source = i;
	s->source_threads[i]++;
	if (i == s->base && s->sources_started && !th->seized) {
		r = tracer_seize_thread(s->tracer, th);
		if (r < 0 && r != -ESRCH && !s->error)
			s->error = r;
	}
}

void samp_hand_to_base(struct sampler *s, struct tracer_thread *th, const uint64_t *owed)
{
	struct samp_thread *st = th->user;
	struct procfs_sched sc;

	if (s->source_threads[st->source])
		s->source_threads[st->source]--;
	st->source_data = NULL;
	give(s, th, s->base);
	if (owed && procfs_task_sched(tracer_fds(s->tracer), &th->task, &sc) == 0) {
		st->sampled_run_ns = sc.run_ns > *owed ? sc.run_ns - *owed : 0;
		st->read_run_ns = st->sampled_run_ns;
		st->primed = true;
	}
}

/* Offers th to the sources that run, in order; the base takes it last. */
static void offer(struct sampler *s, struct tracer_thread *th)
{
	unsigned i;

	for (i = 0; i < s->base; i++) {
		if (s->source_on[i] && samp_sources[i]->take(s, th) == 0) {
			give(s, th, i);
			return;
		}
	}
	samp_sources[s->base]->take(s, th);
	give(s, th, s->base);
}

/* A thread is going: what its source took of it goes to the round. */
static void thread_gone(struct sampler *s, struct samp_thread *st, struct tracer_thread *th)
{
	samp_source_of(st)->drop(s, th);
	if (s->source_threads[st->source])
		s->source_threads[st->source]--;
	if (st->proc && --st->proc->n_threads == 0) {
		/* Released after the copies waiting are unwound. */
		st->proc->gone = true;
		s->retire = true;
	}
	free(st->last_frames);
	free(st);
}

static void on_thread(struct tracer *t, struct tracer_thread *th, bool appeared, void *arg)
{
	struct sampler *s = arg;
	struct samp_thread *st = th->user;
	struct procfs_sched sc;
	char comm[64];

	if (!appeared) {
		if (st)
			thread_gone(s, st, th);
		th->user = NULL;
		return;
	}
	st = calloc(1, sizeof(*st));
	if (!st) {
		s->error = -ENOMEM;	/* ends the session at the next tick */
		return;
	}
	st->proc = samp_proc_of(s, th->tgid);
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
	st->hot_tick = s->stats.ticks + SAMP_HOT_TICKS;
	st->wall_ns = cprof_now_ns();
	if (procfs_task_comm(tracer_fds(t), &th->task, comm, sizeof(comm)) < 0)
		comm[0] = '\0';
	st->label = samp_add_label(s, th->tid, comm, st->proc);
	/* Born during the session (a thread reported here is in its first
	 * stop): a source before it runs.  At attach, session_start offers
	 * the threads once every one is seized. */
	if (s->sources_started)
		offer(s, th);
	else
		st->source = s->base;
}

static void on_exec(struct tracer *t, pid_t pid, void *arg)
{
	struct sampler *s = arg;
	struct samp_proc *p = samp_proc_of(s, pid);
	size_t i, n = tracer_thread_count(t);

	for (i = 0; samp_sources[i]; i++) {
		if (s->source_on[i] && samp_sources[i]->exec)
			samp_sources[i]->exec(s, p, false);
	}
	if (p) {
		procs_exec(p, cprof_now_ns());
		samp_py_exec(s, p);
		samp_relabel(s, p);
	}
	if (p == s->procs[0])
		s->root_execed = true;
	for (i = 0; samp_sources[i]; i++) {
		if (s->source_on[i] && samp_sources[i]->exec)
			samp_sources[i]->exec(s, p, true);
	}
	/* Stacks kept for reuse belong to the old image. */
	n = tracer_thread_count(t);
	for (i = 0; i < n; i++) {
		struct samp_thread *st = tracer_thread_at(t, i)->user;

		if (st && st->proc == p) {
			st->have_last = false;
			st->stack_top = 0;
		}
	}
}

/* The stop a source asked for: the thread's source copies it. */
static bool on_stop(struct tracer *t, struct tracer_thread *th, bool group_stopped, void *arg)
{
	struct sampler *s = arg;
	struct samp_thread *st = th->user;
	const struct samp_source *src = st ? samp_source_of(st) : samp_sources[s->base];

	(void)t;
	return src->stopped ? src->stopped(s, th, group_stopped) : false;
}

static const struct tracer_ops sampler_ops = {
	.on_stop = on_stop,
	.on_thread = on_thread,
	.on_exec = on_exec,
};

/* Every source that runs delivers its copies, the round unwinds them. */
static int tick(struct sampler *s)
{
	unsigned i;
	int r;

	tracer_expire_interrupts(s->tracer, EXPIRE_NS);
	/* The last tick: every thread at the base, which charges each one's
	 * CPU since its last sample where it is. */
	for (i = 0; s->read_all && samp_sources[i]; i++) {
		if (s->source_on[i] && samp_sources[i]->hand_off) {
			r = samp_sources[i]->hand_off(s);
			if (r < 0)
				return r;
		}
	}
	for (i = 0; samp_sources[i]; i++) {
		if (s->source_on[i]) {
			r = samp_sources[i]->collect(s);
			if (r < 0)
				return r;
		}
	}
	r = samp_process_snaps(s);
	for (i = 0; samp_sources[i]; i++) {
		if (s->source_on[i] && samp_sources[i]->after_tick)
			samp_sources[i]->after_tick(s);
	}
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
	while (samp_sources[s->base + 1])
		s->base++;
	s->max_stack = s->o.python ? 2 * s->o.max_frames : s->o.max_frames;
	/* (room for a perf sample's kernel frames under the user ones) */
	s->frames = calloc(s->max_stack + SNAP_KERNEL_MAX, sizeof(*s->frames));
	s->frames2 = calloc(s->o.max_frames, sizeof(*s->frames2));
	if (!s->frames || !s->frames2)
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
	ret = procs_create(&s->procs[0], o->pid, NULL, &s->mods, o->helper);
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
	for (i = 0; samp_sources[i]; i++)
		samp_sources[i]->destroy(s);
	samp_py_destroy(s);
	/* The views first: the root's table holds their modules. */
	for (i = s->n_procs; i-- > 0;)
		procs_destroy(s->procs[i]);
	free(s->procs);
	if (s->mods)
		proc_modules_destroy(s->mods);
	if (s->stacks)
		prof_stacks_destroy(s->stacks);
	for (i = 0; i < s->cap_snaps; i++) {
		samp_drop_snap_maps(&s->snaps[i]);
		snap_fini(&s->snaps[i]);
	}
	free(s->snaps);
	free(s->frames);
	free(s->frames2);
	for (i = 0; i < s->cap_walked; i++)
		free(s->walked[i].w.frames);
	free(s->walked);
	free(s->batch);
	free(s->batch_walks);
	free(s->labels);
	free(s);
}

/* Source i starts: offered every thread no earlier source took.  Returns
 * 0 or -errno. */
static int start_source(struct sampler *s, unsigned i)
{
	const struct samp_source *src = samp_sources[i];
	size_t k, n = tracer_thread_count(s->tracer);
	int r = src->start(s);

	if (r != SAMP_START_RUN)
		return r < 0 ? r : 0;
	s->source_on[i] = true;
	for (k = 0; k < n; k++) {
		struct tracer_thread *th = tracer_thread_at(s->tracer, k);
		struct samp_thread *st = th->user;

		if (st && st->source == s->base && src->take(s, th) == 0)
			give(s, th, i);
	}
	r = src->started ? src->started(s) : SAMP_START_RUN;
	if (r != SAMP_START_RUN)
		s->source_on[i] = false;
	return r < 0 ? r : 0;
}

/* Right after every thread is seized, before the first tick: the
 * sources, each taking what the ones before it did not. */
static int start_sources(struct sampler *s)
{
	size_t k, n = tracer_thread_count(s->tracer);
	unsigned i;
	int r;

	s->stats.source = SAMPLER_SOURCE_PTRACE;
	for (k = 0; k < n; k++) {
		struct samp_thread *st = tracer_thread_at(s->tracer, k)->user;

		if (st)
			st->source = s->base;
	}
	for (i = 0; i < s->base; i++) {
		r = start_source(s, i);
		if (r < 0)
			return r;
	}
	r = samp_sources[s->base]->start(s);
	if (r < 0)
		return r;
	s->source_on[s->base] = true;
	for (k = 0; k < n; k++) {
		struct tracer_thread *th = tracer_thread_at(s->tracer, k);
		struct samp_thread *st = th->user;

		if (st && st->source == s->base)
			s->source_threads[s->base]++;
	}
	return 0;
}

/* Watching: the threads at stops seized.  Returns 0 or -errno. */
static int seize_base(struct sampler *s)
{
	size_t k;
	int r;

	for (k = 0; k < tracer_thread_count(s->tracer); k++) {
		struct tracer_thread *th = tracer_thread_at(s->tracer, k);
		struct samp_thread *st = th->user;

		if (!st || st->source != s->base)
			continue;
		r = tracer_seize_thread(s->tracer, th);
		if (r < 0 && r != -ESRCH)
			return r;
	}
	return 0;
}

/* Right after every thread is seized (or listed, TRACER_WATCH), before
 * the first tick. */
static int session_start(struct sampler *s)
{
	int ret;

	/* Watching, the attach that may be refused is the seizes below. */
	s->stats.attached = !tracer_watching(s->tracer);
	tracer_set_fraction_floor(s->tracer, s->period_ns);
	tracer_set_spin_adaptive(s->tracer, SPIN_NS);
	s->stats.start_realtime_ns = (uint64_t)cprof_realtime_ns();
	ret = procs_refresh(s->procs[0], cprof_now_ns());
	if (ret < 0)
		return ret;
	/* Before the sources start: a CPython target is sampled at stops. */
	samp_py_check(s, s->procs[0]);
	s->rng ^= cprof_now_ns() ^ ((uint64_t)getpid() << 32);
	ret = start_sources(s);
	s->sources_started = true;
	/* Watching, with no source that samples without stops: every
	 * thread seized, as without TRACER_WATCH; with one, the threads it
	 * could not take. */
	if (ret == 0 && tracer_watching(s->tracer) && !samp_others_on(s))
		ret = tracer_seize_all(s->tracer);
	else if (ret == 0 && tracer_watching(s->tracer))
		ret = seize_base(s);
	if (ret < 0)
		return ret;
	s->stats.attached = true;
	if (s->o.after_attach)
		s->o.after_attach(s->o.after_attach_arg);
	return 0;
}

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
uint64_t samp_period_fraction(struct sampler *s)
{
	return cprof_rand_below(&s->rng, s->period_ns);
}

/* The gap the sources want between ticks: the shortest any asks for.
 * Ticks that only empty the perf rings come as seldom as the rings allow;
 * threads sampled at stops need the period. */
static uint64_t tick_period(const struct sampler *s)
{
	uint64_t period = 0, p;
	unsigned i;

	for (i = 0; samp_sources[i]; i++) {
		if (!s->source_on[i])
			continue;
		p = samp_sources[i]->tick_period(s);
		if (p && (!period || p < period))
			period = p;
	}
	return period ? period : s->period_ns;
}

/* What ends the loop: a stop asked for, or the target gone. */
static bool session_over(struct sampler *s)
{
	if (s->pending_events & TRACER_EV_STOP_REQUESTED) {
		s->stats.stop_requested = true;
		return true;
	}
	if (__atomic_load_n(&s->stop, __ATOMIC_ACQUIRE))
		return true;
	if (s->pending_events & TRACER_EV_GONE) {
		s->stats.target_exited = true;
		return true;
	}
	return false;
}

/* A tick, and when the next one comes: a gap uniform in
 * [period / 2, 3 * period / 2) after this one's due time; ticks already
 * missed are counted and skipped.  Returns 0 or -errno. */
static int tick_and_schedule(struct sampler *s, uint64_t *next, uint64_t period)
{
	uint64_t now;
	int r;

	s->due_ns = *next;
	r = tick(s);
	if (r < 0)
		return r;
	s->stats.ticks++;
	*next += period / 2 + cprof_rand_below(&s->rng, period);
	now = cprof_now_ns();
	if (*next <= now) {
		uint64_t behind = (now - *next) / period + 1;

		s->stats.ticks_missed += behind;
		*next += behind * period;
	}
	return 0;
}

/* Until the next tick, the deadline or the next status: stops and signals
 * served, and the copies they made unwound.  Returns 0 or -errno. */
static int wait_between(struct sampler *s, uint64_t now, uint64_t until)
{
	int r = tracer_poll(s->tracer, until - now);

	if (r < 0)
		return r;
	s->pending_events |= r;
	return samp_process_snaps(s);
}

static int session_loop(struct sampler *s)
{
	uint64_t start = cprof_now_ns(), next, now, period, until;
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
	next = start + samp_period_fraction(s);	/* a uniform first phase */
	for (;;) {
		period = tick_period(s);
		now = cprof_now_ns();
		if (now >= deadline)
			break;
		if (now >= next_progress) {
			report_progress(s, start, cpu0, now);
			next_progress = now + PROGRESS_NS;
		}
		/* A source's descriptor woke the wait (a perf ring half
		 * full): its tick is now, and the next one a gap after it. */
		if (s->pending_events & TRACER_EV_WAKE) {
			s->pending_events &= ~TRACER_EV_WAKE;
			if (next > now)
				next = now;
		}
		if (now >= next) {
			r = tick_and_schedule(s, &next, period);
		} else {
			/* at a low -F, wake for the status line as well */
			until = deadline < next ? deadline : next;
			r = wait_between(s, now, next_progress < until ? next_progress : until);
		}
		if (r < 0 || session_over(s))
			break;
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
	unsigned i;
	int ret;

	s->tracer = t;
	ret = session_start(s);
	if (ret == 0)
		ret = session_loop(s);
	for (i = 0; samp_sources[i]; i++) {
		if (s->source_on[i] && samp_sources[i]->finish)
			samp_sources[i]->finish(s);
		s->source_on[i] = i == s->base;
	}
	/* Stops that arrived after the last tick are still samples. */
	tracer_poll(t, 0);
	s->tracer = NULL;
	return ret;
}

/*
 * Whether the session starts by watching its threads instead of seizing
 * them (TRACER_WATCH): when perf events may sample them all and follow
 * the threads and processes they start (inherit), a seized thread would
 * stop at each signal it receives for nothing.  A tree of processes is
 * followed as perf record follows one (the processes there at start
 * listed from /proc, the new ones inheriting their parents' events), and
 * a command cprof starts is sampled from its exec (enable_on_exec).
 */
static bool session_watches(const struct sampler *s)
{
	return s->o.mode == SAMPLER_CPU && s->o.source != SAMPLER_SOURCE_PTRACE &&
	       s->o.stop == SAMPLER_STOP_THREAD && perf_thread_probe_inherit() == 0;
}

int sampler_session(struct sampler *s)
{
	uint64_t cpu0;
	int ret, r;

	ret = tracer_run_tree(s->o.pid,
			      s->o.tracer_flags | (session_watches(s) ? TRACER_WATCH : 0),
			      &sampler_ops, s, session_main, &s->stats.tracer, NULL);
	s->stats.boosted = s->stats.tracer.boosted;
	/* The tracer let go: unwind the copies still waiting. */
	cpu0 = cprof_thread_cpu_ns();
	r = samp_process_snaps(s);
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

int sampler_walk_error(const struct sampler *s, uint32_t id)
{
	const struct remote_client_error *e;
	size_t i, k, n;

	for (i = 0; i < s->n_procs; i++) {
		e = procs_walk_errors(s->procs[i], &n);
		for (k = 0; k < n; k++)
			if (e[k].module == id)
				return e[k].err;
	}
	return 0;
}
