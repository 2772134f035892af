/* SPDX-License-Identifier: MIT */
/*
 * Walks remembered with what they read, to skip the walk of a later copy
 * that would read the same (unwind/remote.c).
 *
 * A walk of a snapshot is a function of its pc, its stack pointer, the
 * registers and stack words it read, and of code and unwind tables in
 * read-only file mappings, which stay the same for as long as the maps do
 * (the caller's generation).  A memo keeps, per (pc, sp) (a few walks for
 * each: one pc and SP may be reached from several callers), the registers
 * and stack words a walk read, with their values, and its result; a later
 * copy with the same pc and sp gets that result only when every one of
 * those registers and words holds the same value in it.  Walks that read
 * anything else (live memory, a second stack, more than fits) are not
 * remembered.
 */
#ifndef CPROF_UNWIND_WALK_MEMO_H
#define CPROF_UNWIND_WALK_MEMO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "profile/stacks.h"
#include "unwind/snapshot.h"

#define WALK_MEMO_READS 48	/* reads a walk may make and be remembered */
#define WALK_MEMO_FRAMES 64	/* frames a remembered walk may have */
#define WALK_MEMO_REGS 64	/* register numbers a log may name: below this */

/* What a walk in progress read (walk_memo_record_*), and whether it may be
 * remembered. */
struct walk_log {
	bool off;		/* not recording */
	bool spoiled;		/* read something a memo cannot check */
	unsigned n;
	struct walk_read {
		uint64_t addr;	/* stack address, or the register number */
		uint64_t val;
		uint8_t len;	/* bytes (1..8); 0: a register */
	} reads[WALK_MEMO_READS];
};

/* The result a walk gave. */
struct walk_result {
	size_t n_frames;
	int end;		/* enum remote_end */
	size_t stack_used;
	bool ran_off;
};

struct walk_memo;

/* Returns 0 or -ENOMEM. */
int walk_memo_create(struct walk_memo **out);
void walk_memo_destroy(struct walk_memo *m);

/* Starts a log for a walk of s (recording off for a copy with only SP and
 * PC: such walks guess from the whole copy). */
void walk_log_begin(struct walk_log *l, const struct snap *s);

/* A register the walk read from the snapshot's registers. */
void walk_log_reg(struct walk_log *l, unsigned reg, uint64_t val);

/* len bytes the walk read at addr from the snapshot's stack copy. */
void walk_log_stack(struct walk_log *l, uint64_t addr, const void *bytes, size_t len);

/* The walk read something else that may change: it cannot be remembered. */
static inline void walk_log_spoil(struct walk_log *l)
{
	l->spoiled = true;
}

/*
 * The remembered walk of a copy with s's pc and sp, made under generation
 * gen with at most max frames, if every register and stack word it read
 * holds the same value in s: frames (at least max of them) and *r are
 * filled and true returned.  reg_of(s, reg) gives a register's value.
 */
bool walk_memo_find(struct walk_memo *m, const struct snap *s, uint64_t gen, size_t max,
		    uint64_t (*reg_of)(const struct snap *s, unsigned reg),
		    struct prof_frame *frames, struct walk_result *r);

/*
 * Whether log l, made by a walk of s elsewhere (the confined parser),
 * could be what a walk of s read: at most WALK_MEMO_READS reads, none
 * spoiled, each a register below WALK_MEMO_REGS or 1..8 bytes inside s's
 * stack copy, and each holding in s the value it says.  A log that passes
 * pins a remembered walk to copies that read as s does; a false one can
 * only make such copies reuse the walk that came with it.
 */
bool walk_log_check(const struct walk_log *l, const struct snap *s,
		    uint64_t (*reg_of)(const struct snap *s, unsigned reg));

/* Whether a walk of s that log l recorded, of n_frames frames, may be
 * remembered: recorded whole, reading nothing a memo cannot check, of one
 * stack, within WALK_MEMO_FRAMES. */
bool walk_memo_keeps(const struct walk_log *l, const struct snap *s, size_t n_frames);

/* Remembers the walk of s that log l recorded, unless walk_memo_keeps says
 * it may not be. */
void walk_memo_store(struct walk_memo *m, const struct snap *s, uint64_t gen, size_t max,
		     const struct walk_log *l, const struct prof_frame *frames,
		     const struct walk_result *r);

#endif
