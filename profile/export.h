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
#include "symbolize/symbolize.h"

struct prof_export_opts {
	unsigned hz;
	const char *value_type;		/* "cpu" (NULL) or "wall": sample values in ns */
	int64_t time_nanos;		/* start, CLOCK_REALTIME */
	int64_t duration_nanos;
	/* Thread key of prof_stacks -> tid and name.  Returns 0 or -ENOENT. */
	int (*thread_label)(uint32_t key, pid_t *tid, const char **name, void *arg);
	void *arg;
};

/*
 * Builds the profile (sample types samples/count and VALUE/nanoseconds,
 * period type VALUE/nanoseconds, period 1e9/hz, where VALUE is o->value_type)
 * from st, symbolizing with sym.  Returns 0 or -errno; on
 * success *out is the builder, to be written and destroyed by the caller.
 */
int prof_export_cpu(const struct prof_stacks *st, const struct proc_modules *mods,
		    struct sym_ctx *sym, const struct prof_export_opts *o,
		    struct prof_builder **out);

#endif
