/* SPDX-License-Identifier: MIT */
/*
 * The round: the copies the sources delivered are unwound and aggregated
 * into the stacks (or the caller's sink), whichever source took them.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "lib/clock.h"
#include "lib/grow.h"
#include "unwind/python_sample.h"
#include "unwind/sampler_impl.h"

/* The adaptive stack copy (see the stop source's copy_limit): a walk
 * that reached a root says how high the thread's stack goes. */

struct snap *samp_next_snap(struct sampler *s)
{
	size_t cap = s->cap_snaps, i;

	if (s->n_snaps < s->cap_snaps) {
		s->snaps[s->n_snaps].py.n_threads = 0;	/* a source's copy has none */
		return &s->snaps[s->n_snaps];
	}
	if (cprof_grow(&s->snaps, &cap, s->n_snaps + 1, sizeof(*s->snaps), 16) < 0)
		return NULL;
	for (i = s->cap_snaps; i < cap; i++) {
		if (snap_init(&s->snaps[i], s->o.stack_size) < 0)
			break;
	}
	s->cap_snaps = i;
	return s->n_snaps < s->cap_snaps ? &s->snaps[s->n_snaps] : NULL;
}

/* What a walk of a copy teaches about the thread's next copy, and the
 * count of the copy's kind. */
static void learn_copy(struct sampler *s, const struct snap *sn, enum remote_end end,
		       size_t used, bool ran_off)
{
	struct tracer_thread *th = s->tracer ? tracer_find_thread(s->tracer, sn->tid) : NULL;
	struct samp_thread *st = th ? th->user : NULL;
	uint64_t top = sn->stack_start + used;

	if (!sn->stack_limited) {
		s->stats.copies_full++;
	} else if (ran_off || end == REMOTE_END_TRUNCATED) {
		/* Ran off the short copy: the frames beyond are lost to this
		 * sample, which ends [truncated] (or at its thread's start
		 * function, see remote_ran_off_copy); the next copy is
		 * larger, as its source sees to. */
		s->stats.copies_short_ran_out++;
		if (st)
			samp_source_of(st)->ran_out(s, th);
		return;
	} else {
		s->stats.copies_short++;
	}
	/* Only a walk that reached a root knows how deep the stack goes. */
	if (st && remote_end_is_root(end) && top > st->stack_top)
		st->stack_top = top;
}

/*
 * Whether a sample's frames say the cached maps are stale: its SP or a pc
 * lies in no mapping we know, or in a file mapping we have no module for
 * (a library mapped since, e.g. libc right after exec), or in memory that
 * is not executable.  A pc in a known anonymous executable mapping (JIT
 * code) is no reason: re-reading would find the same.
 */
static bool needs_maps_retry(const struct samp_proc *p, const struct snap *sn,
			     const struct prof_frame *f, size_t n)
{
	size_t i;

	if (!procs_may_reread(p, cprof_now_ns()))
		return false;
	if (sn->sp_unmapped)
		return true;
	for (i = 0; i < n; i++) {
		const struct proc_map *m;

		if (f[i].module || (f[i].flags & PROF_FRAME_TRUNCATED))
			continue;
		m = proc_maps_find(&p->maps, f[i].addr);
		if (!m || !(m->perms & PROC_MAP_X) || m->path[0] == '/')
			return true;
	}
	return false;
}

static size_t unknown_frames(const struct prof_frame *f, size_t n)
{
	size_t i, k = 0;

	for (i = 0; i < n; i++)
		k += !f[i].module && !(f[i].flags & PROF_FRAME_TRUNCATED);
	return k;
}

/* Whether a copy's second walk (s->frames2, n2 frames), under maps read
 * again, knows more than its first (s->frames, n): fewer unknown frames,
 * or as many and more frames. */
static bool second_knows_more(const struct sampler *s, size_t n, size_t n2)
{
	size_t u = unknown_frames(s->frames, n), u2 = unknown_frames(s->frames2, n2);

	return u2 < u || (u2 == u && n2 > n);
}

/* The pages the unwinder u read for the last walk, counted. */
static void count_pages(struct sampler *s, struct remote_unwinder *u)
{
	uint64_t from_file, from_memory;

	remote_take_pages(u, &from_file, &from_memory);
	s->stats.pages_file += from_file;
	s->stats.pages_memory += from_memory;
}

/* samp_unwind_snap in this process (no parser, or no memory for the
 * call to it). */
static size_t unwind_here(struct sampler *s, struct samp_proc *p, const struct snap *sn,
			  enum remote_end *end, size_t *used, bool *ran_off)
{
	struct remote_unwinder *u = procs_unwinder(p);
	size_t n = remote_unwind(u, sn, s->frames, s->o.max_frames, end);
	enum remote_end end2;
	size_t n2;

	s->stats.walks_here++;
	*used = remote_stack_used(u);
	*ran_off = remote_ran_off_copy(u);
	s->stats.unwinds_reused += remote_reused(u);
	s->stats.unwinds_kernel_chain += remote_from_chain(u);
	count_pages(s, u);
	if (!needs_maps_retry(p, sn, s->frames, n) || procs_refresh(p, cprof_now_ns()) < 0)
		return n;
	/* A library or thread stack new since the last read: unwind the copy
	 * again with the new modules.  But the maps are read after the thread
	 * resumed, and a library mapped for a moment may be gone from them:
	 * keep whichever walk knows more frames. */
	u = procs_unwinder(p);
	n2 = remote_unwind(u, sn, s->frames2, s->o.max_frames, &end2);
	count_pages(s, u);
	if (remote_stack_used(u) > *used)
		*used = remote_stack_used(u);
	if (second_knows_more(s, n, n2)) {
		memcpy(s->frames, s->frames2, n2 * sizeof(*s->frames));
		*end = end2;
		*ran_off = remote_ran_off_copy(u);
		return n2;
	}
	return n;
}

/* The parser's pages and walks counted, after a call on p's walker. */
static void count_parser(struct sampler *s, struct samp_proc *p, size_t walks)
{
	uint64_t from_file, from_memory;

	remote_client_take_pages(p->client, &from_file, &from_memory);
	s->stats.pages_file += from_file;
	s->stats.pages_memory += from_memory;
	s->stats.walks_parser += walks;
}

/* One copy walked in the parser (or answered by its walks remembered
 * here) into frames.  Returns the frame count. */
static size_t walk_one(struct sampler *s, struct samp_proc *p, const struct snap *sn,
		       struct prof_frame *frames, struct remote_walk *w)
{
	struct remote_client *c = procs_client(p);
	int r;

	*w = (struct remote_walk){ .frames = frames };
	r = remote_client_unwind(c, &sn, w, 1, s->o.max_frames);
	if (r < 0) {
		w->n_frames = 0;
		w->end = REMOTE_END_ERROR;
		return 0;
	}
	count_parser(s, p, (size_t)r);
	return w->n_frames;
}

/*
 * What comes after the parser's walk w of sn (its frames in s->frames,
 * walked under maps_gen; one that needed the target's memory was
 * continued there with it, remote_client_unwind): a walk whose frames say the maps are stale
 * is made again in the parser with fresh ones (as unwind_here), or with
 * those another copy's retry read since.  Returns the frame count.
 */
static size_t after_parser(struct sampler *s, struct samp_proc *p, const struct snap *sn,
			   const struct remote_walk *w, uint64_t maps_gen, enum remote_end *end,
			   size_t *used, bool *ran_off)
{
	struct remote_walk w2;
	size_t n = w->n_frames, n2;

	*end = w->end;
	*used = w->stack_used;
	*ran_off = w->ran_off;
	s->stats.unwinds_reused += w->reused;
	s->stats.unwinds_kernel_chain += w->from_chain;
	s->stats.walks_continued += w->continued;
	/* (no call made: out of memory here) */
	if (w->end == REMOTE_END_ERROR && !n)
		return unwind_here(s, p, sn, end, used, ran_off);
	if (w->end == REMOTE_END_PARSER)
		return n;	/* the leaf alone: the parser died on it */
	if (!(maps_gen != p->maps_gen && unknown_frames(s->frames, n)) &&
	    (!needs_maps_retry(p, sn, s->frames, n) || procs_refresh(p, cprof_now_ns()) < 0))
		return n;
	n2 = walk_one(s, p, sn, s->frames2, &w2);
	if (w2.end == REMOTE_END_PARSER || w2.end == REMOTE_END_ERROR)
		return n;
	if (w2.stack_used > *used)
		*used = w2.stack_used;
	if (second_knows_more(s, n, n2)) {
		memcpy(s->frames, s->frames2, n2 * sizeof(*s->frames));
		*end = w2.end;
		*ran_off = w2.ran_off;
		return n2;
	}
	return n;
}

size_t samp_unwind_snap(struct sampler *s, struct samp_proc *p, const struct snap *sn,
			enum remote_end *end, size_t *used, bool *ran_off)
{
	struct remote_walk w;

	if (!p->client)
		return unwind_here(s, p, sn, end, used, ran_off);
	walk_one(s, p, sn, s->frames, &w);
	return after_parser(s, p, sn, &w, p->maps_gen, end, used, ran_off);
}

int samp_add_sample(struct sampler *s, uint32_t label, const struct prof_frame *f, size_t n,
		    uint64_t value, uint32_t *entry)
{
	int64_t values[2] = { 1, (int64_t)value };
	int ret;

	if (!n)
		return 0;
	if (s->o.sink) {
		s->o.sink(label, f, n, values, s->o.sink_arg);
	} else {
		ret = prof_stacks_add_ref(s->stacks, entry, label, f, n, values);
		if (ret < 0)
			return ret;
	}
	s->stats.samples++;
	s->stats.value_ns += value;
	s->stats.python_samples += samp_py_in(s, f, n);
	if (label && s->labels[label - 1].proc) {
		s->labels[label - 1].proc->samples++;
		s->labels[label - 1].proc->value_ns += value;
	}
	return 0;
}

void samp_remember(struct sampler *s, struct tracer_thread *th, const struct prof_frame *f,
		   size_t n)
{
	struct samp_thread *st = th ? th->user : NULL;

	if (!st || s->o.mode != SAMPLER_WALL)
		return;
	if (!st->last_frames) {
		st->last_frames = malloc(s->max_stack * sizeof(*f));
		if (!st->last_frames)
			return;
	}
	memcpy(st->last_frames, f, n * sizeof(*f));
	st->last_entry = 0;
	st->n_last = n;
	st->have_last = n > 0;
}

/* The process a copy was taken in, through its thread's label. */
static struct samp_proc *snap_proc(const struct sampler *s, const struct snap *sn)
{
	return sn->key && sn->key <= s->n_labels ? s->labels[sn->key - 1].proc : NULL;
}

void samp_serve_waiting(struct sampler *s)
{
	uint64_t now = cprof_now_ns();
	int r;

	/* Watching, with every thread sampled by perf events, no thread is
	 * seized: no stop to serve, and two system calls a sample saved. */
	if (!s->tracer || now - s->served_ns < SAMP_SERVE_NS ||
	    (tracer_watching(s->tracer) && !s->stats.perf_fallbacks))
		return;
	s->served_ns = now;
	r = tracer_poll(s->tracer, 0);
	if (r > 0)
		s->pending_events |= r;
}

struct tracer_thread *samp_thread_at(struct sampler *s, size_t i)
{
	samp_serve_waiting(s);
	return tracer_thread_at(s->tracer, i);
}

void samp_drop_snap_maps(struct snap *sn)
{
	if (!sn->maps)
		return;
	proc_maps_free(sn->maps);
	free(sn->maps);
	sn->maps = NULL;
}

/* Puts the kernel frames of a perf sample under its n user frames
 * (s->frames has room for them).  Returns the new count. */
static size_t add_kernel_frames(struct sampler *s, const struct snap *sn, size_t n)
{
	size_t i;

	if (!sn->n_kernel)
		return n;
	memmove(s->frames + sn->n_kernel, s->frames, n * sizeof(*s->frames));
	for (i = 0; i < sn->n_kernel; i++)
		s->frames[i] = (struct prof_frame){
			.addr = sn->kernel[i],
			.flags = PROF_FRAME_KERNEL | (i == 0 ? PROF_FRAME_EXACT : 0),
		};
	s->stats.kernel_samples++;
	s->stats.kernel_ns += sn->cpu_ns;
	return n + sn->n_kernel;
}

/* Unwinds and aggregates the snapshot at index i: from its walk in the
 * parser (walk_round) when there is one. */
static int process_snap(struct sampler *s, size_t i)
{
	struct snap *sn = &s->snaps[i];
	struct samp_proc *p = snap_proc(s, sn);
	struct samp_walked *wd = i < s->cap_walked ? &s->walked[i] : NULL;
	enum remote_end end;
	size_t n, used;
	bool ran_off;

	if (!p || !p->unwinder)
		return 0;
	if (wd && wd->done && p->client) {
		wd->done = false;
		memcpy(s->frames, wd->w.frames, wd->w.n_frames * sizeof(*s->frames));
		n = after_parser(s, p, sn, &wd->w, wd->maps_gen, &end, &used, &ran_off);
	} else {
		n = samp_unwind_snap(s, p, sn, &end, &used, &ran_off);
	}
	learn_copy(s, sn, end, used, ran_off);
	if (!n)
		return 0;
	s->stats.ends[end]++;
	s->stats.samples_unstopped += sn->unstopped;
	n = samp_py_splice(s, p, sn, n);
	n = add_kernel_frames(s, sn, n);
	samp_remember(s, tracer_find_thread(s->tracer, sn->tid), s->frames, n);
	return samp_add_sample(s, sn->key, s->frames, n, sn->cpu_ns, NULL);
}

/* Sets the maps read at this round's stops aside for its copies. */
static void round_maps_begin(struct sampler *s, size_t n0)
{
	size_t i;

	for (i = 0; i < n0; i++) {
		struct samp_proc *p = snap_proc(s, &s->snaps[i]);

		if (p)
			procs_round_begin(p);
	}
	for (i = 0; i < n0; i++) {
		struct samp_proc *p = snap_proc(s, &s->snaps[i]);

		if (p)
			procs_hold_stop_maps(p);
	}
}

/* Room for the round's n0 walks in the parser.  Returns 0 or -ENOMEM. */
static int walk_room(struct sampler *s, size_t n0)
{
	size_t cap = s->cap_walked, i;

	if (n0 > s->cap_batch) {
		size_t cb = s->cap_batch;

		if (cprof_grow(&s->batch, &cb, n0, sizeof(*s->batch), 16) < 0)
			return -ENOMEM;
		cb = s->cap_batch;
		if (cprof_grow(&s->batch_walks, &cb, n0, sizeof(*s->batch_walks), 16) < 0)
			return -ENOMEM;
		s->cap_batch = cb;
	}
	if (n0 <= s->cap_walked)
		return 0;
	if (cprof_grow(&s->walked, &cap, n0, sizeof(*s->walked), 16) < 0)
		return -ENOMEM;
	for (i = s->cap_walked; i < cap; i++) {
		s->walked[i] = (struct samp_walked){ 0 };
		s->walked[i].w.frames = malloc(s->o.max_frames * sizeof(*s->frames));
		if (!s->walked[i].w.frames)
			break;
	}
	s->cap_walked = i;
	return n0 <= s->cap_walked ? 0 : -ENOMEM;
}

/*
 * Walks in the parser the copies [from, to) of this pass, in one call per
 * process (as few as its shared area allows), under the maps in place
 * now: none of them carries maps of its own but the first.  The answers
 * wait in s->walked for process_snap.
 */
static void walk_round(struct sampler *s, size_t from, size_t to, int pass)
{
	size_t i, k, n;
	int r;

	for (i = from; i < to; i++)
		s->walked[i].done = false;
	for (i = from; i < to; i++) {
		struct samp_proc *p = snap_proc(s, &s->snaps[i]);

		if (s->snaps[i].own_maps != pass || s->walked[i].done || !p || !p->unwinder ||
		    !p->client)
			continue;
		for (k = i, n = 0; k < to; k++) {
			if (s->snaps[k].own_maps != pass || snap_proc(s, &s->snaps[k]) != p)
				continue;
			s->batch[n] = &s->snaps[k];
			s->batch_walks[n] = (struct remote_walk){ .frames = s->walked[k].w.frames };
			s->walked[k].done = true;
			n++;
		}
		r = remote_client_unwind(procs_client(p), s->batch, s->batch_walks, n,
					 s->o.max_frames);
		if (r < 0) {
			for (k = i; k < to; k++)
				if (snap_proc(s, &s->snaps[k]) == p)
					s->walked[k].done = false;
			continue;
		}
		count_parser(s, p, (size_t)r);
		for (k = i, n = 0; k < to; k++) {
			if (s->snaps[k].own_maps != pass || snap_proc(s, &s->snaps[k]) != p)
				continue;
			s->walked[k].w = s->batch_walks[n++];
			s->walked[k].maps_gen = p->maps_gen;
		}
	}
}

/* One pass over the round's first n0 copies: those whose own_maps is pass. */
static int round_pass(struct sampler *s, size_t n0, int pass)
{
	size_t i, seg_end = 0;
	int ret;

	for (i = 0; pass && i < n0; i++) {
		struct samp_proc *p = snap_proc(s, &s->snaps[i]);

		if (p && p->round_maps_valid && p->unwinder)
			procs_take_round_maps(p);
	}
	for (i = 0; i < n0; i++) {
		if (s->snaps[i].own_maps != pass)
			continue;
		/* A stop served here may grow (and move) s->snaps:
		 * process_snap takes its pointer after. */
		samp_serve_waiting(s);
		if (s->snaps[i].maps) {
			struct samp_proc *p = snap_proc(s, &s->snaps[i]);

			if (p && p->unwinder)
				procs_use_maps(p, s->snaps[i].maps);
		}
		/* With a parser, the copies up to the next one with maps of
		 * its own are walked there together, under the maps now. */
		if (s->o.helper && i >= seg_end && walk_room(s, n0) == 0) {
			for (seg_end = i + 1; seg_end < n0; seg_end++)
				if (s->snaps[seg_end].own_maps == pass && s->snaps[seg_end].maps)
					break;
			walk_round(s, i, seg_end, pass);
		}
		ret = process_snap(s, i);
		samp_drop_snap_maps(&s->snaps[i]);
		if (ret < 0)
			return ret;
	}
	return 0;
}

/* After a round: the sources get back what their copies lent, and the
 * processes gone are released once no copy waits for them. */
static void round_end(struct sampler *s)
{
	size_t i;

	for (i = 0; samp_sources[i]; i++) {
		if (s->source_on[i] && samp_sources[i]->give_back)
			samp_sources[i]->give_back(s);
	}
	if (s->retire && !s->n_snaps) {
		s->retire = false;
		for (i = 0; i < s->n_procs; i++) {
			if (s->procs[i]->gone && s->procs[i]->unwinder)
				procs_retire(s->procs[i]);
		}
	}
}

/*
 * Unwinds and aggregates the snapshots taken so far; their threads run
 * again already.  Only the copies there are now: a stop served in this
 * loop adds one, and the maps read at that stop are held for it by the
 * next call.
 *
 * Two passes.  First the copies whose pc was found in the cached maps at
 * their stop (procs_pc_unknown), unwound against those maps; then the
 * copies made at stops that read the maps anew, against what was read
 * then.  One set of maps for the whole round named wrongly: a copy made
 * in a library that another thread dlclosed before a later stop of the
 * round read the maps was unwound with maps without that library.
 */
int samp_process_snaps(struct sampler *s)
{
	size_t i, n0 = s->n_snaps;
	int pass, ret;

	for (i = 0; i < s->cap_walked; i++)
		s->walked[i].done = false;
	round_maps_begin(s, n0);
	for (pass = 0; pass < 2; pass++) {
		ret = round_pass(s, n0, pass);
		if (ret < 0)
			return ret;
	}
	/* The copies made meanwhile to the front, for the next call. */
	for (i = n0; i < s->n_snaps; i++) {
		struct snap t = s->snaps[i - n0];

		s->snaps[i - n0] = s->snaps[i];
		s->snaps[i] = t;
	}
	s->n_snaps -= n0;
	round_end(s);
	return 0;
}
