/* SPDX-License-Identifier: MIT */
/*
 * Remote unwinding of a snapshot with libunwind and cprof's own accessors:
 * registers from the snapshot, stack memory from the snapshot, unwind tables
 * (.eh_frame_hdr/.eh_frame) and code from the modules' open files, at the
 * file offsets of the target's read-only mappings, with a page cache (the
 * target's memory through process/memory.c only where no file holds what
 * is mapped).  Nothing here stops a thread
 * or re-reads /proc/PID/maps; libunwind-ptrace's per-word PEEKDATA and its
 * one-entry ELF cache stay off the hot path (doc/ptrace.md, remote memory).
 * The vdso is unwound like any other module, from its in-memory image.
 */
#ifndef CPROF_UNWIND_REMOTE_H
#define CPROF_UNWIND_REMOTE_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "profile/stacks.h"
#include "process/maps.h"
#include "process/modules.h"
#include "unwind/snapshot.h"

struct walk_log;

/*
 * Why a walk ended.  Only COMPLETE and GO_SWITCH reached a root (see
 * remote_end_is_root); every other end is a cut stack.  ERROR stays last.
 */
enum remote_end {
	REMOTE_END_COMPLETE,	/* reached a thread root, or a frame CFI marks outermost */
	REMOTE_END_TRUNCATED,	/* the stack went beyond the snapshot */
	REMOTE_END_NO_INFO,	/* no unwind information for a frame */
	REMOTE_END_BAD_MEMORY,	/* memory needed for a step could not be read */
	REMOTE_END_MAX_FRAMES,	/* stopped at the frame limit */
	REMOTE_END_NEED_REGS,	/* a register the snapshot lacks (regs_partial) was needed */
	REMOTE_END_BAD_FRAME,	/* a frame's unwind rules gave an impossible caller */
	REMOTE_END_GO_SWITCH,	/* reached a Go switch to the g0 stack (mcall, systemstack...) */
	REMOTE_END_PARSER,	/* the confined parser died or failed walking it: leaf only */
	REMOTE_END_ERROR,	/* libunwind reported another error */
};

struct remote_unwinder;

/*
 * An unwinder for process pid.  mods and maps are the sampler's, kept up to
 * date by it and read (never changed) here; they must outlive the unwinder.
 * pid 0: the target's memory is never read (the confined parser's
 * unwinder): a walk that needs it (code no file holds, a parked
 * goroutine's stack) ends there.  Returns 0 or -errno.
 */
int remote_create(struct remote_unwinder **out, pid_t pid, const struct proc_modules *mods,
		  const struct proc_maps *maps);
void remote_destroy(struct remote_unwinder *u);

/* Forgets cached memory and unwind state: call when mappings changed. */
void remote_flush(struct remote_unwinder *u);

/*
 * Reads now what a walk would read of module id the first time (its
 * .eh_frame_hdr search table's header, its thread roots), so that the
 * first walks do not (dump-threads: before the threads are read).
 * Returns 0, or -ENOENT when id is no mapped module.
 */
int remote_warm(struct remote_unwinder *u, uint32_t id);

/*
 * Unwinds s into frames (leaf first, each tagged with its module), at most
 * max.  *end says why the walk ended; a walk that reached no root (and did
 * not end for NEED_REGS) ends with a PROF_FRAME_TRUNCATED frame.  Returns
 * the number of frames (>= 1 when the pc is known).
 */
size_t remote_unwind(struct remote_unwinder *u, const struct snap *s, struct prof_frame *frames,
		     size_t max, enum remote_end *end);

/*
 * How many bytes of the snapshot's stack, from its SP, the last
 * remote_unwind read: the end of the highest read from s->stack, over every
 * walk it made.  For a snapshot with every register (taken at a stop), a
 * copy of that many bytes from the same SP would have given the same walk.
 */
size_t remote_stack_used(const struct remote_unwinder *u);

/*
 * Whether the walk the last remote_unwind returned needed stack beyond the
 * end of the copy.  Its end is then REMOTE_END_TRUNCATED, or COMPLETE when
 * it had passed a C thread's start function (what lay beyond is dropped).
 */
bool remote_ran_off_copy(const struct remote_unwinder *u);

/*
 * Whether the last remote_unwind gave a remembered walk: one made of an
 * earlier copy with the same pc and SP whose every register and stack word
 * read holds the same value in this one, under the same maps
 * (unwind/walk_memo.h).  The result is the one a walk would give.
 */
bool remote_reused(const struct remote_unwinder *u);

/*
 * Whether the last remote_unwind gave the kernel's frame-pointer walk of
 * a Go sample (snap.user), checked against the copy's first frames,
 * instead of walking the copy (unwind/go_chain.c).
 */
bool remote_from_chain(const struct remote_unwinder *u);

/*
 * What the last remote_unwind read, when it made a walk it remembered
 * (a first walk that reached a root and read only registers, the copy
 * and files): another process's memo may remember it too
 * (walk_log_check).  NULL otherwise.  Valid until the next walk on u.
 */
const struct walk_log *remote_walk_log(const struct remote_unwinder *u);

/* Register reg (libunwind's numbering, as walk logs name registers) of s,
 * 0 when it lacks it. */
uint64_t remote_snap_reg(const struct snap *s, unsigned reg);

/*
 * The pages of code and unwind tables the unwinder read since the last
 * call: *from_file through the modules' open files, *from_memory from the
 * target's memory (mappings no module's file holds as mapped: anonymous
 * code, relocated read-only data, a file not known to be the mapped one).
 */
void remote_take_pages(struct remote_unwinder *u, uint64_t *from_file, uint64_t *from_memory);

/*
 * Whether a walk made without the target's memory (by an unwinder with
 * pid 0, the parser's), which gave frames[0..n) and ended so, would have
 * gone on with it: it needed memory no copy or file holds (bad_memory),
 * or it stopped at Go's switch to a cgo call (runtime.asmcgocall), whose
 * goroutine's stack is read live.  u is an unwinder of the same process.
 */
bool remote_walk_needs_target(struct remote_unwinder *u, const struct prof_frame *frames,
			      size_t n, enum remote_end end);

/* Bytes of the target's memory, read by the privileged side for a walk
 * in the parser (see remote_set_live). */
struct remote_live {
	uint64_t start;
	size_t len;
	const uint8_t *data;
};

/*
 * For an unwinder without a pid (the parser's): the target's memory that
 * the next walks may read where an unwinder with a pid reads it live, n
 * spans of it (the caller's, kept until the next call; n 0: none).  A read
 * of live memory that they do not hold fails, and the last such read is
 * remembered (remote_needed).
 */
void remote_set_live(struct remote_unwinder *u, const struct remote_live *live, size_t n);

/* The address of the last read of live memory that the last remote_unwind
 * wanted and could not make (no pid, no span held it), 0 for none. */
uint64_t remote_needed(const struct remote_unwinder *u);

/* Whether e means the walk reached a thread root or a Go stack switch. */
bool remote_end_is_root(enum remote_end e);

/* The key of e in summaries and JSON counts ("truncated", "no_info", ...). */
const char *remote_end_key(enum remote_end e);

/* A short English description of e, for notes and JSON. */
const char *remote_end_str(enum remote_end e);

#endif
