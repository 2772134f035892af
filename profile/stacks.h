/* SPDX-License-Identifier: MIT */
/*
 * Raw (unsymbolized) samples aggregated in memory during a session:
 * (thread, frames) -> summed values.  Frames are runtime addresses tagged
 * with the module they were in when sampled, so a later dlclose cannot make
 * them ambiguous.  Allocation-free once the set of distinct stacks stops
 * growing.
 */
#ifndef CPROF_PROFILE_STACKS_H
#define CPROF_PROFILE_STACKS_H

#include <stddef.h>
#include <stdint.h>

enum {
	PROF_FRAME_EXACT = 1 << 0,	/* addr is an exact pc (leaf, signal frame): no -1 */
	PROF_FRAME_TRUNCATED = 1 << 1,	/* no frame: the walk ended before a root (addr 0) */
	/* An interpreter's frame (CPython's, python/): addr is a location id
	 * its reader names (prof_export_opts.python_line), module is 0. */
	PROF_FRAME_PYTHON = 1 << 2,
	/* addr is in the kernel (module 0): named from its symbols, in the
	 * profile's "[kernel.kallsyms]" mapping, as perf does */
	PROF_FRAME_KERNEL = 1 << 3,
};

struct prof_frame {
	uint64_t addr;
	uint32_t module;	/* proc_module id, 0 when in no known module */
	uint32_t flags;		/* PROF_FRAME_* */
};

struct prof_stacks;

/* n_values: values per sample (e.g. 2: count, cpu ns).  Returns 0 or -ENOMEM. */
int prof_stacks_create(struct prof_stacks **out, size_t n_values);
void prof_stacks_destroy(struct prof_stacks *s);

/* Adds values to the (thread, frames) entry, creating it.  Frames leaf first.
 * Returns 0 or -ENOMEM. */
int prof_stacks_add(struct prof_stacks *s, uint32_t thread, const struct prof_frame *frames,
		    size_t n_frames, const int64_t *values);

/*
 * prof_stacks_add, remembering the entry: *entry (0 the first time) is set
 * to the entry the values went to, and a later call given it adds there
 * without hashing the frames again.  Pass the same thread and frames as
 * the call that set it, or reset it to 0.  Returns 0, -EINVAL or -ENOMEM.
 */
int prof_stacks_add_ref(struct prof_stacks *s, uint32_t *entry, uint32_t thread,
			const struct prof_frame *frames, size_t n_frames, const int64_t *values);

/* Number of distinct entries. */
size_t prof_stacks_count(const struct prof_stacks *s);

typedef int (*prof_stacks_fn)(uint32_t thread, const struct prof_frame *frames, size_t n_frames,
			      const int64_t *values, void *arg);

/* Calls fn for every entry in insertion order; stops at and returns the first
 * non-zero return of fn. */
int prof_stacks_foreach(const struct prof_stacks *s, prof_stacks_fn fn, void *arg);

#endif
