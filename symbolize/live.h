/* SPDX-License-Identifier: MIT */
/*
 * What symbolization must learn while the target still runs, on a thread of
 * its own, never on the sampling path: the runtime's perf map (re-read as it
 * grows, forgotten at exec) and the debuginfo of modules that have none on
 * this machine, downloaded from debuginfod servers within a time bound per
 * lookup and per run.  Sampling never waits for it; once it is stopped, the
 * symbolizer uses what it learned, and a download that did not finish in
 * time is abandoned (those samples keep their addresses and build ids).
 */
#ifndef CPROF_SYMBOLIZE_LIVE_H
#define CPROF_SYMBOLIZE_LIVE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "symbolize/perfmap.h"
#include "symbolize/symbolize.h"

struct sym_live_opts {
	pid_t pid;
	bool debuginfod;		/* download missing debuginfo (DEBUGINFOD_URLS) */
	uint64_t debuginfod_timeout_ns;	/* bound of one lookup */
	uint64_t debuginfod_budget_ns;	/* bound of all lookups of the run */
};

struct sym_live;

/* Starts watching pid.  Returns 0 or -errno. */
int sym_live_start(struct sym_live **out, const struct sym_live_opts *o);

/*
 * Stops the thread, giving up a download under way, after one last read of
 * the perf map if the target is still there.  Returns once the thread has
 * ended (a download notices within about a second), or after 3 s at most:
 * a thread that has not ended by then is left running, and l then offers
 * nothing (no perf map names, no downloads, no missing list) and is freed
 * only with the process.  Idempotent.
 */
void sym_live_stop(struct sym_live *l);

/* Stops (if needed) and frees. */
void sym_live_destroy(struct sym_live *l);

/* Makes ctx use the perf map and the downloads of l, which is stopped and
 * outlives ctx. */
void sym_live_apply(struct sym_live *l, struct sym_ctx *ctx);

/*
 * While a download runs, describes it ("debuginfo of libfoo.so: 1.2 of
 * 3.4 MB") into buf and returns true.  Thread-safe.
 */
bool sym_live_download_status(struct sym_live *l, char *buf, size_t len);

/*
 * The i-th module (0..) left without debuginfo, once l is stopped: its path
 * as the target sees it, its build id, and why (a phrase).  Returns false
 * past the last one.  Modules whose lookup found nothing are listed too.
 */
bool sym_live_missing(const struct sym_live *l, size_t i, const char **module,
		      const char **build_id, const char **why);

#endif
