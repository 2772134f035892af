/* SPDX-License-Identifier: MIT */
/*
 * What symbolization must learn while the target still runs, on a thread of
 * its own, never on the sampling path: the runtime's perf map (re-read as it
 * grows, forgotten at exec) and, later, debuginfo downloads.  Sampling never
 * waits for it; the symbolizer uses what it learned once it is stopped.
 */
#ifndef CPROF_SYMBOLIZE_LIVE_H
#define CPROF_SYMBOLIZE_LIVE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "symbolize/perfmap.h"

struct sym_live_opts {
	pid_t pid;
};

struct sym_live;

/* Starts watching pid.  Returns 0 or -errno. */
int sym_live_start(struct sym_live **out, const struct sym_live_opts *o);

/*
 * Stops the thread, after one last read of the perf map if the target is
 * still there.  Returns once the thread has ended.  Idempotent.
 */
void sym_live_stop(struct sym_live *l);

/* Stops (if needed) and frees. */
void sym_live_destroy(struct sym_live *l);

/* The perf map learned so far; for lookups only once l is stopped. */
struct sym_perfmap *sym_live_perfmap(struct sym_live *l);

#endif
