/* SPDX-License-Identifier: MIT */
/* Walks remembered with what they read (see walk_memo.h). */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "unwind/walk_memo.h"

#define MEMO_SETS 64u	/* chosen by (pc, sp) */
#define MEMO_WAYS 4u	/* walks kept per set: one pc and SP under several
			 * callers (a leaf called from several places) */

struct memo_slot {
	uint64_t pc, sp;
	uint64_t gen;		/* the generation it was made under */
	size_t max;
	bool used;
	unsigned n_reads;
	struct walk_read reads[WALK_MEMO_READS];
	struct walk_result result;
	struct prof_frame frames[WALK_MEMO_FRAMES];
};

struct memo_set {
	struct memo_slot way[MEMO_WAYS];
	unsigned next;		/* the way the next walk stored replaces */
};

struct walk_memo {
	struct memo_set sets[MEMO_SETS];
};

int walk_memo_create(struct walk_memo **out)
{
	*out = calloc(1, sizeof(**out));
	return *out ? 0 : -ENOMEM;
}

void walk_memo_destroy(struct walk_memo *m)
{
	free(m);
}

static struct memo_set *set_of(struct walk_memo *m, uint64_t pc, uint64_t sp)
{
	uint64_t h = (pc ^ (sp * 0x9e3779b97f4a7c15ull)) * 0xff51afd7ed558ccdull;

	return &m->sets[(h >> 58) & (MEMO_SETS - 1)];
}

void walk_log_begin(struct walk_log *l, const struct snap *s)
{
	l->off = s->regs_partial;
	l->spoiled = false;
	l->n = 0;
}

static struct walk_read *next_read(struct walk_log *l)
{
	if (l->off || l->spoiled)
		return NULL;
	if (l->n == WALK_MEMO_READS) {
		l->spoiled = true;
		return NULL;
	}
	return &l->reads[l->n++];
}

void walk_log_reg(struct walk_log *l, unsigned reg, uint64_t val)
{
	struct walk_read *r = next_read(l);

	if (r)
		*r = (struct walk_read){ .addr = reg, .val = val, .len = 0 };
}

void walk_log_stack(struct walk_log *l, uint64_t addr, const void *bytes, size_t len)
{
	struct walk_read *r;

	if (len == 0 || len > 8) {
		walk_log_spoil(l);
		return;
	}
	r = next_read(l);
	if (!r)
		return;
	r->addr = addr;
	r->val = 0;
	memcpy(&r->val, bytes, len);
	r->len = (uint8_t)len;
}

/* Whether read r gives the same value in s. */
static bool same_read(const struct walk_read *r, const struct snap *s,
		      uint64_t (*reg_of)(const struct snap *s, unsigned reg))
{
	uint64_t v = 0;

	if (!r->len)
		return reg_of(s, (unsigned)r->addr) == r->val;
	/* (no sum that could wrap: a log from the parser is not trusted) */
	if (r->addr < s->stack_start || r->addr - s->stack_start > s->stack_len ||
	    r->len > s->stack_len - (r->addr - s->stack_start))
		return false;
	memcpy(&v, s->stack + (r->addr - s->stack_start), r->len);
	return v == r->val;
}

bool walk_log_check(const struct walk_log *l, const struct snap *s,
		    uint64_t (*reg_of)(const struct snap *s, unsigned reg))
{
	unsigned i;

	if (l->off || l->spoiled || l->n > WALK_MEMO_READS || s->regs_partial || s->stack2_len)
		return false;
	for (i = 0; i < l->n; i++) {
		const struct walk_read *r = &l->reads[i];

		if (r->len > 8 || (!r->len && r->addr >= WALK_MEMO_REGS) ||
		    !same_read(r, s, reg_of))
			return false;
	}
	return true;
}

bool walk_memo_find(struct walk_memo *m, const struct snap *s, uint64_t gen, size_t max,
		    uint64_t (*reg_of)(const struct snap *s, unsigned reg),
		    struct prof_frame *frames, struct walk_result *r)
{
	const struct memo_set *set;
	unsigned w, i;

	if (s->regs_partial || s->stack2_len)
		return false;
	set = set_of(m, s->regs.rip, s->regs.rsp);
	for (w = 0; w < MEMO_WAYS; w++) {
		const struct memo_slot *e = &set->way[w];

		if (!e->used || e->pc != s->regs.rip || e->sp != s->regs.rsp || e->gen != gen ||
		    e->max != max)
			continue;
		for (i = 0; i < e->n_reads && same_read(&e->reads[i], s, reg_of); i++)
			;
		if (i < e->n_reads)
			continue;
		memcpy(frames, e->frames, e->result.n_frames * sizeof(*frames));
		*r = e->result;
		return true;
	}
	return false;
}

bool walk_memo_keeps(const struct walk_log *l, const struct snap *s, size_t n_frames)
{
	return !l->off && !l->spoiled && !s->stack2_len && n_frames <= WALK_MEMO_FRAMES;
}

void walk_memo_store(struct walk_memo *m, const struct snap *s, uint64_t gen, size_t max,
		     const struct walk_log *l, const struct prof_frame *frames,
		     const struct walk_result *r)
{
	struct memo_set *set;
	struct memo_slot *e;

	if (!walk_memo_keeps(l, s, r->n_frames))
		return;
	set = set_of(m, s->regs.rip, s->regs.rsp);
	e = &set->way[set->next];
	set->next = (set->next + 1) % MEMO_WAYS;
	e->used = true;
	e->pc = s->regs.rip;
	e->sp = s->regs.rsp;
	e->gen = gen;
	e->max = max;
	e->n_reads = l->n;
	memcpy(e->reads, l->reads, l->n * sizeof(l->reads[0]));
	e->result = *r;
	memcpy(e->frames, frames, r->n_frames * sizeof(*frames));
}
