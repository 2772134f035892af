/* SPDX-License-Identifier: MIT */
/*
 * What symbolization must learn while the target still runs, on a thread of
 * its own, never on the sampling path: the perf map of each process of the
 * target's tree (re-read as it grows, forgotten at exec) and the debuginfo
 * of the tree's modules that have none on this machine, downloaded from debuginfod servers within a time bound per
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
	pid_t pid;			/* the first process followed */
	/* pid is read from its first exec on: until then it is a copy of
	 * cprof (record's child), whose modules are not the target's */
	bool from_exec;
	bool debuginfod;		/* download missing debuginfo (DEBUGINFOD_URLS) */
	uint64_t debuginfod_timeout_ns;	/* bound of one lookup */
	uint64_t debuginfod_budget_ns;	/* bound of all lookups of the run */
	/* The confined parser the perf maps are parsed in (perfmap.h,
	 * sym_perfmap_use_helper), which outlives l; NULL: in this process. */
	struct conf_helper *helper;
};

struct sym_live;

/* Starts watching o->pid.  Returns 0 or -errno. */
int sym_live_start(struct sym_live **out, const struct sym_live_opts *o);

/*
 * Follows pid too from the next poll on (a process of the tree: a child,
 * or a process started since); a pid followed already is ignored.  Any
 * thread, until sym_live_stop, whose last look includes it; after that a
 * no-op.  Returns 0 or -ENOMEM.
 */
int sym_live_add_process(struct sym_live *l, pid_t pid);

/*
 * A counter bumped whenever l learned names or a debug file: a symbolizer
 * made before it moved may lack them (its answers are cached).  Any thread.
 */
uint64_t sym_live_generation(struct sym_live *l);

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

/* Makes ctx use the perf maps and the downloads of l, which outlives ctx.
 * l may still run: ctx's lookups then take l's lock, and see what it had
 * learned by each lookup. */
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
