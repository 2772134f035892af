/* SPDX-License-Identifier: MIT */
/*
 * The stop source, the base: a thread's registers and stack copied by
 * cprof at a ptrace stop it asks for, or read in place while the thread
 * is blocked in a system call (no stop).  cpu mode interrupts only the
 * threads that run; wall mode samples every thread at every tick.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <sys/syscall.h>

#include "lib/clock.h"
#include "lib/grow.h"
#include "unwind/python_sample.h"
#include "unwind/sigframe.h"
#include "unwind/source_stop.h"

/* How long --stop process holds copied threads for the others' stops. */
#define HOLD_MAX_NS 2000000ull
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
/* The adaptive stack copy (see copy_limit): bytes copied beyond the
 * highest stack address a thread's walks needed. */
#define COPY_MARGIN 512u

/* wall mode: the time a sample of st taken at this tick stands for, since
 * its previous sample (or since it was seized): missed ticks and threads
 * skipped by the rotation are not lost but carried by the next sample, so
 * a thread's samples add up to the time it was traced. */
static uint64_t wall_value(struct sampler *s, struct samp_thread *st)
{
	uint64_t tick_ns = stop_state(s)->tick_ns;
	uint64_t v = tick_ns > st->wall_ns ? tick_ns - st->wall_ns : 0;

	st->wall_ns = tick_ns;
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
 * thread's next copy full (see ran_out).
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

static void stop_ran_out(struct sampler *s, struct tracer_thread *th)
{
	struct samp_thread *st = th->user;

	(void)s;
	st->stack_top = 0;
}

static bool stop_stopped(struct sampler *s, struct tracer_thread *th, bool group_stopped)
{
	struct samp_thread *st = th->user;
	bool hold = stop_state(s)->holding;
	struct samp_proc *p;
	struct snap *sn;

	/* A job-control stop uses no CPU: nothing to sample in cpu mode. */
	if (!st || (group_stopped && s->o.mode == SAMPLER_CPU))
		return false;
	if (samp_before_exec(s, st->proc))
		return false;
	p = st->proc;
	if (!p->ready && procs_refresh(p, cprof_now_ns()) < 0)
		return false;
	sn = samp_next_snap(s);
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
	samp_py_read(s, p, sn);
	sn->own_maps = false;
	sn->unstopped = false;
	/* Still stopped: a library mapped for a moment (dlopen and dlclose
	 * in a loop) is in the maps now and may be gone once the thread
	 * runs.  Modules are made from this copy later, off the stop.  Not
	 * rate-limited: it costs one read of maps per sample whose pc is in
	 * code nobody knows yet (never for JIT code in anonymous memory, see
	 * procs_pc_unknown). */
	if (procs_pc_unknown(p, sn->regs.rip) && procs_read_stop_maps(p, cprof_now_ns()) == 0)
		sn->own_maps = true;
	sn->cpu_ns = s->o.mode == SAMPLER_WALL ? wall_value(s, st) : st->seen_run_ns - st->sampled_run_ns;
	sn->key = st->label;
	st->sampled_run_ns = st->seen_run_ns;
	st->signal_defers = 0;
	s->n_snaps++;
	/* thread policy: copied, so resume at once; process policy: hold
	 * until every sampled thread is copied. */
	return hold;
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
	struct snap *blocked = &stop_state(s)->blocked;
	struct procfs_sched after;
	enum remote_end end;
	size_t n, used;
	bool ran_off;
	int fd;

	fd = procfs_task_fd(fds, &th->task, PROCFS_SYSCALL);
	if (fd < 0 || !p->unwinder ||
	    snap_capture_in_place(blocked, p->pid, th->tid, fd, &p->maps, nr) < 0)
		return 0;
	/* Its Python frames too, before the check that it did not run. */
	samp_py_read(s, p, blocked);
	n = samp_unwind_snap(s, p, blocked, &end, &used, &ran_off);
	if (!n || end == REMOTE_END_NEED_REGS)
		return 0;
	if (procfs_task_sched(fds, &th->task, &after) < 0 || !procfs_sched_same(&after, now))
		return 0;
	n = samp_py_splice(s, p, blocked, n);
	s->stats.samples_unstopped++;
	s->stats.ends[end]++;
	return n;
}

/* Wall mode: a sample of st's last stack again, its time since then. */
static bool add_last(struct sampler *s, struct samp_thread *st)
{
	s->stats.samples_reused++;
	return samp_add_sample(s, st->label, st->last_frames, st->n_last, wall_value(s, st),
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
	samp_remember(s, th, s->frames, n);
	return samp_add_sample(s, st->label, s->frames, n, wall_value(s, st), &st->last_entry) == 0;
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
	if (samp_add_sample(s, st->label, s->frames, n, now->run_ns - st->sampled_run_ns, NULL) == 0)
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

/* cpu mode part of stop_wants: sc is the thread's schedstat now. */
static bool wants_stop_cpu(struct sampler *s, struct tracer_thread *th,
			   const struct procfs_sched *sc)
{
	struct samp_thread *st = th->user;
	struct procfs_fdcache *fds = tracer_fds(s->tracer);
	bool ran = sc->run_ns != st->read_run_ns;
	uint64_t owed = sc->run_ns - st->sampled_run_ns;
	/* worth charging where it waits, if blocked (charge_in_place) */
	bool charge = owed && (s->read_all || owed >= s->period_ns);
	char comm[64];
	int running;

	stop_state(s)->hot_run_ns += sc->run_ns - st->read_run_ns;
	st->read_run_ns = sc->run_ns;
	/* Only a thread that ran since it was last read can be running now
	 * (or one woken and not yet on a CPU: it is seen once it ran).  One
	 * that did not keeps its CPU since its last sample for the sample
	 * that comes when it is next found running. */
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
		samp_update_label(s, th, comm);
	if (!running) {
		if (charge)
			charge_in_place(s, th, sc);
		return false;
	}
	st->seen_run_ns = sc->run_ns;
	st->hot_tick = s->stats.ticks + SAMP_HOT_TICKS;
	return true;
}

/* wall mode part of stop_wants. */
static bool wants_stop_wall(struct sampler *s, struct tracer_thread *th,
			    const struct procfs_sched *sc)
{
	struct samp_thread *st = th->user;
	char comm[64];

	if (st->have_last && procfs_sched_same(&st->captured, sc)) {
		sample_in_place(s, th, sc);
		return false;
	}
	if (procfs_task_comm(tracer_fds(s->tracer), &th->task, comm, sizeof(comm)) < 0)
		return false;
	samp_update_label(s, th, comm);
	/* Whether it runs, the syscall file read in place tells. */
	if (sample_in_place(s, th, sc))
		return false;
	if (th->listening) {
		/* Stopped by job control and not readable in place: an
		 * interrupt would wake it in the kernel only to stop again, and
		 * its state would flicker for whoever watches the stop.  It
		 * runs none of its code meanwhile: its last stack stands for
		 * the stop, or its time goes to its next sample. */
		if (st->have_last) {
			st->captured = *sc;
			add_last(s, st);
		}
		return false;
	}
	st->seen_run_ns = sc->run_ns;
	st->captured = *sc;
	return true;
}

bool stop_wants(struct sampler *s, struct tracer_thread *th)
{
	struct samp_thread *st = th->user;
	struct procfs_sched sc;
	bool pre_exec;

	if (!st || th->pending || th->held)
		return false;
	/* A process new to the session: its maps, before its first sample. */
	if (!st->proc->ready && procs_refresh(st->proc, cprof_now_ns()) < 0)
		return false;
	samp_py_check(s, st->proc);
	/* schedstat first: one pread says whether the thread ran at all. */
	if (procfs_task_sched(tracer_fds(s->tracer), &th->task, &sc) < 0)
		return false;
	s->stats.sched_reads++;
	pre_exec = samp_before_exec(s, st->proc);
	if (!st->primed || pre_exec) {
		/* (Before the exec: not yet the program, its CPU not counted.) */
		st->sampled_run_ns = sc.run_ns;
		st->read_run_ns = sc.run_ns;
		st->primed = true;
		if (pre_exec)
			return false;
	}
	if (s->o.mode == SAMPLER_CPU)
		return wants_stop_cpu(s, th, &sc);
	return wants_stop_wall(s, th, &sc);
}

/* Waits until no interrupt is outstanding (or ns passed: a thread in
 * uninterruptible sleep stops late, and its stop is then served by the
 * main loop). */
static int wait_stops_for(struct sampler *s, uint64_t ns)
{
	int r = tracer_wait_stops(s->tracer, ns);

	if (r < 0)
		return r;
	s->pending_events |= r;
	return 0;
}

/* --stop process: hold the copied threads until all are copied, but not
 * for long: a thread that finds no CPU to reach its stop on would
 * otherwise keep the others stopped for the whole wait on a loaded
 * machine.  Past HOLD_MAX_NS the held ones run, and late stops are resumed
 * as they come. */
static int stop_together(struct sampler *s, size_t chosen)
{
	struct stop_state *ss = stop_state(s);
	size_t i;
	int r;

	ss->holding = true;
	for (i = 0; i < chosen; i++) {
		struct tracer_thread *th = tracer_find_thread(s->tracer, ss->pick[i]);

		if (th && !defer_for_signal(s, th))
			tracer_interrupt(s->tracer, th);
	}
	r = wait_stops_for(s, HOLD_MAX_NS);
	ss->holding = false;
	tracer_resume_held(s->tracer);
	if (r >= 0)
		r = wait_stops_for(s, STOP_WAIT_NS);
	return r;
}

/* --stop thread: one at a time, each resumed as soon as it is copied. */
static int stop_one_by_one(struct sampler *s, size_t chosen)
{
	struct stop_state *ss = stop_state(s);
	size_t i;
	int r = 0;

	for (i = 0; i < chosen && r >= 0; i++) {
		struct tracer_thread *th = tracer_find_thread(s->tracer, ss->pick[i]);

		/* The others' stops and signals were served meanwhile. */
		if (!th || defer_for_signal(s, th))
			continue;
		if (tracer_interrupt(s->tracer, th) == 0)
			r = wait_stops_for(s, THREAD_WAIT_NS);
		if (s->pending_events & TRACER_EV_GONE)
			break;
	}
	return r;
}

static int stop_collect(struct sampler *s)
{
	struct stop_state *ss = stop_state(s);
	size_t n = tracer_thread_count(s->tracer), chosen;

	if (!s->source_threads[s->base])
		return 0;
	if (s->o.mode == SAMPLER_WALL)
		ss->tick_cpu_ns = cprof_thread_cpu_ns();
	/* Grown with the thread count, never freed per tick: the hot path
	 * allocates nothing once the process stops growing. */
	if (cprof_grow(&ss->pick, &ss->cap_pick, n, sizeof(*ss->pick), n) < 0)
		return -ENOMEM;
	/* Choose first, then stop.  By tid, not by pointer: a thread that
	 * exits while we wait for another's stop is freed by the tracer. */
	chosen = stop_choose(s, n);
	if (s->o.stop == SAMPLER_STOP_PROCESS)
		return stop_together(s, chosen);
	return stop_one_by_one(s, chosen);
}

static void stop_after_tick(struct sampler *s)
{
	if (s->o.mode == SAMPLER_WALL && !s->read_all && s->source_threads[s->base])
		stop_adapt_wall_cap(s, tracer_thread_count(s->tracer),
				    cprof_thread_cpu_ns() - stop_state(s)->tick_cpu_ns);
}

static uint64_t stop_tick_period(const struct sampler *s)
{
	return s->source_threads[s->base] ? s->period_ns : 0;
}

static int stop_start(struct sampler *s)
{
	struct stop_state *ss = calloc(1, sizeof(*ss));

	if (!ss)
		return -ENOMEM;
	if (snap_init(&ss->blocked, s->o.stack_size) < 0) {
		free(ss);
		return -ENOMEM;
	}
	s->source_state[s->base] = ss;
	return SAMP_START_RUN;
}

static int stop_take(struct sampler *s, struct tracer_thread *th)
{
	(void)s;
	(void)th;
	return 0;
}

static void stop_drop(struct sampler *s, struct tracer_thread *th)
{
	(void)s;
	(void)th;
}

static void stop_destroy(struct sampler *s)
{
	struct stop_state *ss = stop_state(s);

	if (!ss)
		return;
	snap_fini(&ss->blocked);
	free(ss->pick);
	free(ss);
	s->source_state[s->base] = NULL;
}

const struct samp_source samp_source_stop = {
	.name = "ptrace",
	.start = stop_start,
	.take = stop_take,
	.drop = stop_drop,
	.collect = stop_collect,
	.after_tick = stop_after_tick,
	.tick_period = stop_tick_period,
	.ran_out = stop_ran_out,
	.stopped = stop_stopped,
	.destroy = stop_destroy,
};
