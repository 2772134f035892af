/* SPDX-License-Identifier: MIT */
/* Thread states' frame chains read from the target, and spliced into native stacks. */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "lib/grow.h"
#include "lib/hash.h"
#include "python/internal.h"

/* Bounds against corrupt or cyclic lists. */
#define MAX_INTERPS 64
#define MAX_TSTATES 4096
#define MAX_DEPTH 1024
/* Bytes of a frame read: past every field cprof reads, in every layout. */
#define FRAME_BYTES 128
/* Bytes of a thread state read for a sample (tstate_still). */
#define TSTATE_BYTES 256

enum {
	OWNED_BY_GENERATOR = 1,
	OWNED_BY_CSTACK = 3,	/* 3.12+: the C frame's entry marker, not Python code */
};

static bool loc_eq(const struct py_proc *py, uint32_t index, const struct py_loc *k)
{
	return py->locs[index].code == k->code && py->locs[index].line == k->line;
}

#define HTAB_NAME loc_index
#define HTAB_CTX struct py_proc
#define HTAB_KEY struct py_loc
#define HTAB_HASH(py, k) cprof_hash_finish(cprof_hash_mix((k)->code, (uint64_t)(k)->line))
#define HTAB_COMPARE loc_eq
#include "lib/htab-type.h"

/* The innermost frame from a thread state's frame field f (3.11-3.12:
 * its cframe), 0 if none. */
static uint64_t frame_of(const struct py_proc *py, uint64_t f)
{
	if (f && (py->l.minor == 11 || py->l.minor == 12) &&
	    py_word(py->pid, f, py->l.cframe_current_frame, &f) < 0)
		return 0;
	return f;
}

/* The innermost frame of thread state ts, 0 if none. */
static uint64_t top_frame(const struct py_proc *py, uint64_t ts)
{
	uint64_t f = 0;

	if (py_word(py->pid, ts, py->l.ts_frame, &f) < 0)
		return 0;
	return frame_of(py, f);
}

static int push_frame(struct py_stacks *s, const struct py_raw_frame *f)
{
	if (cprof_grow(&s->frames, &s->cap_frames, s->n_frames + 1, sizeof(*s->frames), 256) < 0)
		return -ENOMEM;
	s->frames[s->n_frames++] = *f;
	return 0;
}

/* The previous pushed frame of thread t ends its C frame's share. */
static void end_c_frame(struct py_stacks *s, const struct py_thread_stack *t)
{
	if (s->n_frames > t->first)
		s->frames[s->n_frames - 1].last_of_c_frame = true;
}

/* Reads one frame at addr: pushes it (unless it is no Python code), *prev
 * gets the next outer frame.  Returns 0 or -errno. */
static int read_frame(const struct py_proc *py, struct py_stacks *s, struct py_thread_stack *t,
		      uint64_t addr, uint64_t *prev)
{
	const struct py_layout *l = &py->l;
	struct py_raw_frame f = { 0 };
	uint8_t raw[FRAME_BYTES];
	uint8_t owner;

	if (py_mem(py->pid, addr, raw, sizeof(raw)) < 0)
		return -EFAULT;
	memcpy(prev, raw + l->fr_previous, sizeof(*prev));
	memcpy(&f.code, raw + l->fr_code, sizeof(f.code));
	if (l->minor <= 10) {
		int32_t lasti;

		memcpy(&lasti, raw + l->fr_lasti, sizeof(lasti));
		f.instr = (uint64_t)(int64_t)lasti;
		f.last_of_c_frame = true;	/* one C frame per Python frame */
		return push_frame(s, &f);
	}
	memcpy(&f.instr, raw + l->fr_instr, sizeof(f.instr));
	owner = raw[l->fr_owner];
	if (l->minor >= 12 && owner == OWNED_BY_CSTACK) {
		end_c_frame(s, t);
		return 0;
	}
	if (l->minor == 11 && raw[l->fr_is_entry])
		f.last_of_c_frame = true;
	/* A frame being set up has not run an instruction yet (3.11-3.12). */
	if (l->minor <= 12 && owner != OWNED_BY_GENERATOR && f.instr < f.code + l->co_code_adaptive) {
		if (f.last_of_c_frame)
			end_c_frame(s, t);
		return 0;
	}
	return push_frame(s, &f);
}

/* Reads the frames of thread tid from its innermost, f, outward. */
static int read_thread(const struct py_proc *py, struct py_stacks *s, uint64_t f, pid_t tid)
{
	struct py_thread_stack *t;
	size_t depth;
	int ret;

	if (cprof_grow(&s->threads, &s->cap_threads, s->n_threads + 1, sizeof(*s->threads), 16) < 0)
		return -ENOMEM;
	t = &s->threads[s->n_threads];
	t->tid = tid;
	t->first = s->n_frames;
	for (depth = 0; f && depth < MAX_DEPTH; depth++) {
		ret = read_frame(py, s, t, f, &f);
		if (ret == -ENOMEM)
			return ret;
		if (ret < 0)
			break;	/* what was read stays: a cut Python stack */
	}
	t->n = s->n_frames - t->first;
	if (t->tid > 0)
		s->n_threads++;
	else
		s->n_frames = t->first;
	return 0;
}

/* Walks every interpreter's thread states into py->tstates (tid, address);
 * with s, reads each one's frames too.  Returns 0 or -errno. */
static int walk_tstates(struct py_proc *py, struct py_stacks *s)
{
	const struct py_layout *l = &py->l;
	uint64_t interp, ts;
	size_t ni, nt;
	pid_t tid;
	int ret;

	py->n_tstates = 0;
	if (py_word(py->pid, py->runtime, l->rt_interp_head, &interp) < 0)
		return -EFAULT;
	for (ni = 0; interp && ni < MAX_INTERPS; ni++) {
		if (py_word(py->pid, interp, l->is_tstate_head, &ts) < 0)
			return -EFAULT;
		for (nt = 0; ts && nt < MAX_TSTATES; nt++) {
			tid = py_tstate_tid(py, ts);
			if (cprof_grow(&py->tstates, &py->cap_tstates, py->n_tstates + 1,
				       sizeof(*py->tstates), 16) < 0)
				return -ENOMEM;
			py->tstates[py->n_tstates++] = (struct py_tstate){ .tid = tid, .addr = ts };
			ret = s ? read_thread(py, s, top_frame(py, ts), tid) : 0;
			if (ret < 0)
				return ret;
			if (py_word(py->pid, ts, l->ts_next, &ts) < 0)
				break;
		}
		if (py_word(py->pid, interp, l->is_next, &interp) < 0)
			break;
	}
	return 0;
}

int py_read_stacks(struct py_proc *py, struct py_stacks *s)
{
	s->n_threads = 0;
	s->n_frames = 0;
	return walk_tstates(py, s);
}

static uint64_t tstate_of(const struct py_proc *py, pid_t tid)
{
	size_t i;

	for (i = 0; i < py->n_tstates; i++)
		if (py->tstates[i].tid == tid)
			return py->tstates[i].addr;
	return 0;
}

static uint64_t word_at(const uint8_t *raw, uint16_t off)
{
	uint64_t v;

	memcpy(&v, raw + off, sizeof(v));
	return v;
}

/*
 * Whether the remembered thread state ts is still tid's: one that no
 * longer names an interpreter or that thread was freed (its thread ended,
 * the tid was reused).  *f gets its innermost frame.  The fields lie in
 * the state's first bytes in every layout: one read, inside the stop.
 */
static bool tstate_still(const struct py_proc *py, uint64_t ts, pid_t tid, uint64_t *f)
{
	const struct py_layout *l = &py->l;
	uint16_t tid_off = l->minor >= 11 ? l->ts_native_thread_id : l->ts_thread_id;
	uint8_t raw[TSTATE_BYTES];
	uint64_t id;

	size_t end = l->ts_interp > tid_off ? l->ts_interp : tid_off;

	if (l->ts_frame > end)
		end = l->ts_frame;
	if (end + sizeof(id) > sizeof(raw)) {
		uint64_t back;

		if (py_word(py->pid, ts, l->ts_interp, &back) < 0 || !back ||
		    py_tstate_tid(py, ts) != tid)
			return false;
		*f = top_frame(py, ts);
		return true;
	}
	if (py_mem(py->pid, ts, raw, sizeof(raw)) < 0 || !word_at(raw, l->ts_interp))
		return false;
	id = word_at(raw, tid_off);
	if ((l->minor >= 11 ? (pid_t)id : py_pthread_tid(py, id)) != tid)
		return false;
	*f = frame_of(py, word_at(raw, l->ts_frame));
	return true;
}

int py_read_thread(struct py_proc *py, pid_t tid, struct py_stacks *s)
{
	uint64_t ts = tstate_of(py, tid), f = 0;
	int ret;

	if (ts && !tstate_still(py, ts, tid, &f))
		ts = 0;
	if (!ts) {
		/* A thread Python does not know (a native pool's) is looked
		 * for once an epoch, not at each of its samples. */
		if (py->walked == py->epoch + 1)
			return -ENOENT;
		py->walked = py->epoch + 1;
		ret = walk_tstates(py, NULL);
		if (ret < 0)
			return ret;
		ts = tstate_of(py, tid);
		if (!ts)
			return -ENOENT;
		f = top_frame(py, ts);
	}
	return read_thread(py, s, f, tid);
}

void py_stacks_free(struct py_stacks *s)
{
	free(s->threads);
	free(s->frames);
	memset(s, 0, sizeof(*s));
}

/* The location id (>= 1) of raw frame f, 0 when its code cannot be read. */
static uint64_t location_of(struct py_proc *py, const struct py_raw_frame *f)
{
	const struct py_code *c;
	struct py_loc k;
	uint32_t hash, ref;

	c = py_code_get(py, f->code, &k.code);
	if (!c)
		return 0;
	k.line = py_code_line(py, c, f->instr);
	ref = loc_index_find(&py->loc_index, py, &k, &hash);
	if (ref)
		return ref;
	if (cprof_htab_reserve(&py->loc_index, 1) < 0 ||
	    cprof_grow(&py->locs, &py->cap_locs, py->n_locs + 1, sizeof(*py->locs), 256) < 0)
		return 0;
	py->locs[py->n_locs] = k;
	cprof_htab_add(&py->loc_index, hash, py->n_locs);
	return ++py->n_locs;
}

static const struct py_thread_stack *stack_of(const struct py_stacks *s, pid_t tid)
{
	size_t i;

	for (i = 0; i < s->n_threads; i++)
		if (s->threads[i].tid == tid)
			return &s->threads[i];
	return NULL;
}

static bool in_eval(const struct py_proc *py, const struct prof_frame *f)
{
	uint64_t pc = f->flags & PROF_FRAME_EXACT ? f->addr : f->addr - 1;

	return !(f->flags & (PROF_FRAME_TRUNCATED | PROF_FRAME_PYTHON)) && pc >= py->eval_start &&
	       pc < py->eval_end;
}

/* Appends the Python frames of one C frame's share, from *next on. */
static size_t put_share(struct py_proc *py, const struct py_stacks *s,
			const struct py_thread_stack *t, size_t *next, struct prof_frame *out,
			size_t k, size_t max)
{
	while (*next < t->n && k < max) {
		const struct py_raw_frame *f = &s->frames[t->first + (*next)++];
		uint64_t id = location_of(py, f);

		if (id)
			out[k++] = (struct prof_frame){ .addr = id, .flags = PROF_FRAME_PYTHON };
		if (f->last_of_c_frame)
			break;
	}
	return k;
}

size_t py_splice(struct py_proc *py, const struct py_stacks *s, pid_t tid,
		 struct prof_frame *frames, size_t n, size_t max)
{
	const struct py_thread_stack *t = stack_of(s, tid);
	struct prof_frame *out;
	size_t i, k = 0, next = 0;

	if (!t || !t->n || n >= max ||
	    cprof_grow(&py->splice, &py->cap_splice, max, sizeof(*py->splice), 256) < 0)
		return n;
	out = py->splice;
	for (i = 0; i < n && k < max; i++) {
		/* Frames no C frame was found for go at the root end. */
		if (frames[i].flags & PROF_FRAME_TRUNCATED)
			while (next < t->n && k < max)
				k = put_share(py, s, t, &next, out, k, max);
		if (in_eval(py, &frames[i]))
			k = put_share(py, s, t, &next, out, k, max);
		if (k < max)
			out[k++] = frames[i];
	}
	while (next < t->n && k < max)
		k = put_share(py, s, t, &next, out, k, max);
	memcpy(frames, out, k * sizeof(*out));
	return k;
}

int py_location(const struct py_proc *py, uint64_t id, struct py_location *out)
{
	const struct py_loc *l;
	const struct py_code *c;

	if (!id || id > py->n_locs)
		return -ENOENT;
	l = &py->locs[id - 1];
	c = &py->codes[l->code];
	out->function = c->name ? c->name : "??";
	out->file = c->file;
	out->line = l->line;
	return 0;
}
