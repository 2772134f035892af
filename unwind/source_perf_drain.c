/* SPDX-License-Identifier: MIT */
/*
 * The perf source's drain: the records of the per-CPU rings into the
 * round, each sample to its thread, each announced mapping to its
 * process, each rename to its thread's label; when the tracer only
 * watches, each birth, exit and exec to the tracer, which tells the
 * session.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "lib/clock.h"
#include "lib/grow.h"
#include "unwind/perf_rings.h"
#include "unwind/perf_thread.h"
#include "unwind/source_perf.h"

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

/* Whether thread tid exited lately (its late samples are no birth). */
static bool gone_lately(const struct perf_state *ps, pid_t tid)
{
	unsigned i, n = ps->n_gone < 64 ? ps->n_gone : 64;

	for (i = 0; i < n; i++) {
		if (ps->gone[i] == tid)
			return true;
	}
	return false;
}

/* Watching: thread tid of process pid, not known, was born (from: the
 * events its samples name, or NULL).  Returns it, or NULL. */
static struct tracer_thread *born(struct sampler *s, pid_t pid, pid_t tid,
				  struct perf_thread *from)
{
	struct perf_state *ps = perf_src_state(s);
	struct tracer_thread *th;

	if (gone_lately(ps, tid))
		return NULL;
	ps->born = true;
	ps->born_from = from;
	th = tracer_watch_birth(s->tracer, tid, pid);
	ps->born = false;
	ps->born_from = NULL;
	return th;
}

/* An exit or an exec, kept until every ring is read.  Returns 0 or
 * -ENOMEM. */
static int defer_task(struct perf_state *ps, bool exec)
{
	struct perf_task *k;

	if (cprof_grow(&ps->tasks, &ps->cap_tasks, ps->n_tasks + 1, sizeof(*ps->tasks), 8) < 0)
		return -ENOMEM;
	k = &ps->tasks[ps->n_tasks++];
	k->exec = exec;
	perf_rings_task(ps->rings, &k->pid, &k->tid);
	return 0;
}

/* Watching: the exits and execs read, in their order.  An exec's drain
 * (the source's exec callback) may read more: they follow. */
static void apply_tasks(struct sampler *s)
{
	struct perf_state *ps = perf_src_state(s);
	size_t i;

	if (ps->applying)
		return;
	ps->applying = true;
	for (i = 0; i < ps->n_tasks; i++) {
		struct perf_task k = ps->tasks[i];

		if (k.exec) {
			/* The samples read so far are of the old image. */
			if (samp_process_snaps(s) < 0)
				s->error = -ENOMEM;
			tracer_watch_exec(s->tracer, k.pid);
			continue;
		}
		ps->gone[ps->n_gone++ % 64] = k.tid;
		tracer_watch_exit(s->tracer, k.tid);
	}
	ps->n_tasks = 0;
	ps->applying = false;
}

/*
 * The threads that started threads in this drain get a new first gap.  A
 * thread born with inherited events keeps, for good, the period its
 * parent's event had at the clone (an ioctl reaches the event it is
 * given alone), and the parent's period changes only with its own
 * samples: a parent that mostly waits (a main thread that starts a
 * thread per task and joins it) kept the one it drew at attach, and when
 * that was longer than its threads live on the CPU, none of them was
 * ever sampled, for the whole session (attach-threads.test, about one
 * run in three).  Drawn again at each drain in which it forked, the
 * period its children inherit varies over the session as a new thread's
 * first gap does.  One ioctl a CPU per forking thread per drain.
 */
static void redraw_forked(struct sampler *s)
{
	struct perf_state *ps = perf_src_state(s);
	size_t i, n = tracer_thread_count(s->tracer);
	unsigned slot, slots = perf_rings_count(ps->rings);

	ps->forked = false;
	for (i = 0; i < n; i++) {
		struct perf_src_thread *pst = perf_src_of(tracer_thread_at(s->tracer, i));

		if (!pst || !pst->forked)
			continue;
		pst->forked = false;
		if (!pst->pt || perf_thread_is_inherited(pst->pt))
			continue;
		for (slot = 0; slot < slots; slot++)
			perf_thread_set_period(pst->pt, slot, perf_src_first_gap(s));
	}
}

/* One record that is no sample (r: what perf_rings_next said): a mapping
 * announced, a thread renamed, born, exited or exec'd.  Returns 0 or
 * -ENOMEM. */
static int take_record(struct sampler *s, int r)
{
	struct perf_state *ps = perf_src_state(s);
	struct perf_rings *rings = ps->rings;
	pid_t pid, tid;

	if (r >= 4 && !ps->watch)
		return 0;
	if (r == 4) {
		struct tracer_thread *parent;
		struct perf_src_thread *pp;

		perf_rings_task(rings, &pid, &tid);
		born(s, pid, tid, NULL);
		parent = tracer_find_thread(s->tracer, perf_rings_task_parent(rings));
		pp = parent && parent->tid != tid ? perf_src_of(parent) : NULL;
		if (pp && pp->pt && !perf_thread_is_inherited(pp->pt))
			pp->forked = ps->forked = true;
		return 0;
	}
	if (r == 5)
		return defer_task(ps, false);
	if (r == 6 && defer_task(ps, true) < 0)
		return -ENOMEM;
	if (r == 6 && samp_before_exec(s, s->procs[0]) &&
	    ps->tasks[ps->n_tasks - 1].pid == s->procs[0]->pid)
		ps->exec_cut = true;
	if (r == 3) {
		const struct proc_map *m = perf_rings_mapping(rings, &pid);
		size_t i;

		for (i = 0; i < s->n_procs; i++) {
			if (s->procs[i]->pid == pid && !s->procs[i]->gone)
				return procs_announce(s->procs[i], m);
		}
		return 0;
	}
	if (r == 2 || r == 6) {
		const char *comm = perf_rings_comm(rings, &tid);
		struct tracer_thread *named = tracer_find_thread(s->tracer, tid);

		if (!named || !named->user)
			return 0;
		/* The exec is applied once every ring is read, but the threads
		 * the new image starts meanwhile (born at once) are its own: the
		 * process takes the program's name now, as the kernel gave it to
		 * the thread that exec'd, so that their labels say so. */
		if (r == 6) {
			struct samp_thread *st = named->user;

			snprintf(st->proc->name, sizeof(st->proc->name), "%s", comm);
		}
		samp_update_label(s, named, comm);
	}
	return 0;
}

/* The sample just read into sn (of pt's event slot) into the round,
 * unless it is of process skip (an exec's old image) or before its exec.
 * Returns 1 when it went in, 0 or -ENOMEM. */
static int take_sample(struct sampler *s, struct snap *sn, struct perf_thread *pt,
		       unsigned slot, const struct samp_proc *skip)
{
	struct perf_state *ps = perf_src_state(s);
	struct tracer_thread *th = tracer_find_thread(s->tracer, sn->tid);
	struct samp_thread *st;
	struct perf_src_thread *pst;
	bool redraw;

	/* Its birth's record may wait in another ring. */
	if (!th && ps->watch)
		th = born(s, perf_rings_sample_pid(ps->rings), sn->tid, pt);
	st = th ? th->user : NULL;
	pst = th ? perf_src_of(th) : NULL;
	/* (a thread the tracer forgot, or sampled by another source now;
	 * the samples of a thread with events of its own name them) */
	if (!pst || (pst->pt != pt && !perf_thread_is_inherited(pst->pt)))
		return 0;
	sn->cpu_ns = perf_thread_sampled(pst->pt, slot, sn->cpu_ns, LATTICE, &redraw);
	/* A period drawn anew every few samples: see source_perf.c's perf_tick_period. */
	if (redraw)
		perf_thread_set_period(pst->pt, slot, perf_src_gap(s));
	if (st->proc == skip)
		return 0;
	/* Before the exec: not yet the program, its CPU not counted. */
	if (samp_before_exec(s, st->proc))
		return 0;
	if (!st->proc->ready) {
		if (procs_refresh(st->proc, cprof_now_ns()) < 0)
			return 0;
		ps->check_go = true;
	}
	sn->key = st->label;
	sn->sp_unmapped = !proc_maps_find(&st->proc->maps, snap_sp(sn));
	if (sample_maps(s, st->proc, sn) < 0)
		return -ENOMEM;
	s->n_snaps++;
	return 1;
}

/* Takes ring i's records out: the samples into the round (but those of
 * process skip).  Returns 0 or -ENOMEM. */
static int drain_ring(struct sampler *s, unsigned i, const struct samp_proc *skip)
{
	struct perf_state *ps = perf_src_state(s);
	struct perf_thread *pt;
	struct snap *sn;
	unsigned slot;
	int r;

	while (!ps->exec_cut && perf_rings_pending(ps->rings, i)) {
		sn = samp_next_snap(s);
		if (!sn)
			return -ENOMEM;
		r = perf_rings_next(ps->rings, i, sn, true, &pt, &slot);
		if (r >= 2) {
			if (take_record(s, r) < 0)
				return -ENOMEM;
			continue;
		}
		if (r <= 0)
			break;
		if (take_sample(s, sn, pt, slot, skip) < 0)
			return -ENOMEM;
	}
	return 0;
}

/* Every ring's samples so far into the round (but those of process skip):
 * the records read stay in the rings until perf_give_back.  Returns 0 or
 * -ENOMEM. */
int perf_src_drain(struct sampler *s, const struct samp_proc *skip)
{
	struct perf_state *ps = perf_src_state(s);
	unsigned i, n = perf_rings_count(ps->rings);
	int r = 0;

	ps->viewed = true;
again:
	for (i = 0; i < n && r == 0 && !ps->exec_cut; i++)
		r = drain_ring(s, i, skip);
	s->stats.perf_lost = perf_rings_lost(ps->rings);
	s->stats.perf_throttled = perf_rings_throttled(ps->rings);
	if (ps->n_tasks)
		apply_tasks(s);
	if (ps->forked)
		redraw_forked(s);
	/* The command cprof started counts from its exec (enable_on_exec):
	 * its samples after the exec's record are of the new image, and are
	 * read once the exec is applied (its new maps), not dropped as
	 * samples before it.  (One that migrated to a ring read before is
	 * lost.)  Unless the exec took the session to stops. */
	if (ps->exec_cut) {
		ps->exec_cut = false;
		if (r == 0 && s->source_on[perf_src_self()] && ps->rings && ps->watch)
			goto again;
	}
	return r;
}

