/* SPDX-License-Identifier: MIT */
/*
 * One sampling session, whichever command runs it: the sampler over a
 * process (and, with tracer_flags, its tree), the thread that follows every
 * process of the tree for its perf map and downloads the debuginfo its
 * modules lack (symbolize/live.h), and the symbolizer that uses what that
 * thread learned.  A command chooses the sampler's options and where the
 * samples go (the sampler's stacks for a profile file, a sink of its own
 * for windows) and nothing else, so that what is added here reaches
 * attach, record, serve and top alike.
 *
 * Threads: sess_run blocks its caller while the session runs on the
 * sampler's own thread, where the progress and sink callbacks run;
 * sess_stop may be called from any thread.
 */
#ifndef CPROF_SESSION_SESSION_H
#define CPROF_SESSION_SESSION_H

#include <stdbool.h>
#include <stdint.h>

#include "symbolize/live.h"
#include "symbolize/symbolize.h"
#include "unwind/sampler.h"

/* Lookups a run's debuginfod budget allows at the full per-lookup bound. */
#define SESS_DEBUGINFOD_LOOKUPS 6

struct sess_opts {
	/* The sampler's options, the command's progress and sink included. */
	struct sampler_opts sampler;
	bool debuginfod;		/* download missing debuginfo (DEBUGINFOD_URLS) */
	uint64_t debuginfod_timeout_ns;	/* bound of one lookup */
	/* The confined parser symbolizers parse in (symbolize.h,
	 * sym_use_helper), which outlives the session; NULL: in this process. */
	struct conf_helper *helper;
};

struct sess;

/* Makes the sampler and starts following the target's perf map and
 * modules.  Returns 0 or -errno (the sampler could not be made). */
int sess_create(struct sess **out, const struct sess_opts *o);
void sess_destroy(struct sess *s);

/*
 * The whole session (sampler_session), the tree's processes followed as
 * the sampler meets them; once it returns, the following has stopped and
 * what it learned is final.  Once per session.  Returns sampler_session's
 * result.
 */
int sess_run(struct sess *s);

/* Ends the session as sampler_stop does.  Any thread. */
void sess_stop(struct sess *s);

struct sampler *sess_sampler(const struct sess *s);

/* What the thread learns (the download under way, and once the session
 * ended the modules left without debuginfo); NULL when it could not
 * start. */
struct sym_live *sess_live(const struct sess *s);

/* Makes sym use the perf maps and downloads of the session (for a
 * symbolizer the caller makes itself, such as prof_write_session's). */
void sess_apply_symbols(struct sess *s, struct sym_ctx *sym);

/*
 * A symbolizer over the session's modules with what was learned so far:
 * made on first need, and made again when the thread has learned names or
 * files since (its answers are cached).  While the session runs, only on
 * its thread (the progress and sink callbacks); after it, on the caller's.
 * NULL when none could be made (addresses only).  The session's.
 */
struct sym_ctx *sess_symbolizer(struct sess *s);

#endif
