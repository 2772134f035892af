/* SPDX-License-Identifier: MIT */
/*
 * Raw stacks + modules -> a symbolized pprof profile: one mapping per module
 * that appears in a sample (the main binary first), one location per
 * distinct (module, address) with its inline chain, labels per thread.
 */
#ifndef CPROF_PROFILE_EXPORT_H
#define CPROF_PROFILE_EXPORT_H

#include <stdint.h>
#include <sys/types.h>

#include "profile/profile.h"
#include "profile/stacks.h"
#include "process/modules.h"
#include "symbolize/kallsyms.h"
#include "symbolize/symbolize.h"

/* What the second value of a sample (after its count) measures, in ns. */
enum prof_value {
	PROF_VALUE_CPU = 1,	/* "cpu": CPU time */
	PROF_VALUE_WALL,	/* "wall": wall-clock time */
};

struct prof_export_opts {
	enum prof_value value;		/* required: 0 is -EINVAL */
	unsigned hz;			/* 1..: the period is 1e9/hz ns */
	int64_t time_nanos;		/* start, CLOCK_REALTIME */
	int64_t duration_nanos;
	/*
	 * Thread key of prof_stacks -> tid and name (NULL: no labels).
	 * Returns 0, -ENOENT (the thread is unknown: its samples get no
	 * label) or another -errno, which fails the export.
	 */
	int (*thread_label)(uint32_t key, pid_t *tid, const char **name, void *arg);
	/* Thread key -> its process's pid and name, as string labels "pid"
	 * and "process_name" (NULL: none); returns as thread_label does. */
	int (*process_label)(uint32_t key, pid_t *pid, const char **name, void *arg);
	/*
	 * A PROF_FRAME_PYTHON frame's location id -> its function, file and
	 * line (the strings need live only during the call).  Returns 0, or
	 * -ENOENT: the frame is left out.  NULL: every such frame is.
	 */
	int (*python_line)(uint64_t id, struct prof_line *out, void *arg);
	void *arg;
	/* CLOCK_MONOTONIC ns (lib/clock.h) past which no more frames are
	 * symbolized; 0: no limit.  See prof_export_cut. */
	uint64_t sym_deadline_ns;
	/* Names the kernel frames (PROF_FRAME_KERNEL) in their
	 * "[kernel.kallsyms]" mapping; NULL: addresses only. */
	const struct sym_kallsyms *kernel;
};

/*
 * Builds the profile (sample types samples/count and VALUE/nanoseconds,
 * period type VALUE/nanoseconds, period 1e9/hz, where VALUE is "cpu" or
 * "wall" as o->value says) from st, symbolizing with sym (NULL: addresses
 * only).  Returns 0 or -errno (-EINVAL: bad options); on success *out is
 * the builder, to be written and destroyed by the caller.
 */
int prof_export(const struct prof_stacks *st, const struct proc_modules *mods,
		struct sym_ctx *sym, const struct prof_export_opts *o, struct prof_builder **out);

/*
 * Adds st's samples to b, a profile prof_export made with the same value
 * type and hz: one more sampling session of the same target (cprof top
 * resumed after a pause), whose module ids are its own (mods).  Its
 * modules get mappings of their own.  o's time is not used; its
 * sym_deadline_ns cuts as in prof_export_cut, *modules_cut (may be NULL)
 * saying how many modules it cut.  Returns 0 or -errno (b then holds part
 * of st).
 */
int prof_export_add(struct prof_builder *b, const struct prof_stacks *st,
		    const struct proc_modules *mods, struct sym_ctx *sym,
		    const struct prof_export_opts *o, size_t *modules_cut);

/*
 * prof_export, which also says in *modules_cut (may be NULL) how many
 * modules o->sym_deadline_ns cut: a module whose frames were still to be
 * looked up when it passed is not named at all, its mapping marked as
 * having no functions, so that a reader (pprof) symbolizes its addresses
 * from the build id later.
 */
int prof_export_cut(const struct prof_stacks *st, const struct proc_modules *mods,
		    struct sym_ctx *sym, const struct prof_export_opts *o,
		    struct prof_builder **out, size_t *modules_cut);

#endif
