/* SPDX-License-Identifier: MIT */
/*
 * cprof top's parts: the feed (top_session.c: the sampling sessions and the
 * intervals they hand over), the model (top_model.c: intervals folded into
 * function and thread tables, symbolized on the main thread) and the view
 * (top_view.c: the terminal, batch text and JSON lines).
 *
 * Threads: the session thread cuts intervals (sink and progress
 * callbacks) and queues them; the main thread takes them, symbolizes and
 * draws.  Nothing but the queue is shared, under the feed's lock.
 */
#ifndef CPROF_CLI_TOP_H
#define CPROF_CLI_TOP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "cli/cli.h"
#include "process/modules.h"
#include "profile/stacks.h"
#include "unwind/sampler.h"

/* How often the view is redrawn: one interval. */
#define TOP_INTERVAL_NS 1000000000ull

/* A thread key of one session, as the session thread read it. */
struct top_label {
	uint32_t key;
	pid_t tid;
	char name[32];
};

/*
 * One interval's samples, cut by the session thread.  mods are the
 * session's modules by id - 1 at the cut: a module never moves and the
 * fields symbolization reads never change once it is made, so the main
 * thread may use them while the session runs (sampler.h keeps the table
 * itself, which grows, to the session thread).
 */
struct sess;
struct sym_kallsyms;

/* A Python frame's location (PROF_FRAME_PYTHON addr id), named on the
 * session thread, which alone may read the interpreter's tables. */
struct top_pyloc {
	uint64_t id;
	char *function;
	char *file;
	int line;
};

/* The thread held stopped the longest share of the interval. */
struct top_stopped {
	double share;		/* of its time in the interval; 0: none stopped */
	pid_t tid;		/* 0: no thread lived long enough to say */
	char name[32];
};

struct top_interval {
	struct prof_stacks *stacks;
	const struct proc_module **mods;
	size_t n_mods;
	struct top_label *labels;
	size_t n_labels;
	struct top_pyloc *pylocs;	/* by id */
	size_t n_pylocs;
	struct sampler_stats st;	/* the session's, at the cut */
	struct top_stopped stopped;
	unsigned segment;		/* which session: each resume starts one */
	struct sess *sess;		/* that session (perf maps, downloads): the feed's */
	bool last;			/* the session's final cut */
	struct top_interval *next;
};

void top_interval_free(struct top_interval *iv);

/* ---- the feed (top_session.c) ------------------------------------------ */

/* Why a session ended, as the main thread learns it. */
struct top_end {
	int ret;			/* sampler_session's: 0 or -errno */
	struct sampler_stats st;	/* its final statistics */
	unsigned segment;
};

struct top_feed;

/* Returns 0 or -errno.  keep_whole: every sample is also kept, for -o. */
int top_feed_create(struct top_feed **out, const struct cli_session *a, pid_t pid,
		    unsigned tracer_flags, bool keep_whole);
/* Ends a session still running, then frees everything. */
void top_feed_destroy(struct top_feed *f);
/* Readable (an eventfd) when an interval or a session's end is queued. */
int top_feed_fd(const struct top_feed *f);
/* Starts a session (another one after top_feed_pause).  Returns 0 or -errno. */
int top_feed_start(struct top_feed *f);
/* Asks the running session to end (pause or quit); it ends within 250 ms. */
void top_feed_stop(struct top_feed *f);
/* Waits until the session (asked to stop) has ended and let the target go. */
void top_feed_wait(struct top_feed *f);
/* Whether a session is running (started and its end not yet taken). */
bool top_feed_running(const struct top_feed *f);
/* Takes the queued intervals (a list, oldest first) and, once the session
 * has ended, *end (returns true then; the session thread is joined). */
struct top_interval *top_feed_take(struct top_feed *f, struct top_end *end, bool *ended);
/* After the last session: writes every session's samples to path as one
 * profile, symbolized within --write-timeout (*modules_cut: the modules it
 * left unnamed).  Returns 0 or -errno (reported). */
int top_feed_write(struct top_feed *f, const char *path, size_t *modules_cut);
/* Samples kept for -o so far. */
uint64_t top_feed_whole_samples(const struct top_feed *f);

/* ---- the model (top_model.c) --------------------------------------------- */

enum top_scope { TOP_LAST, TOP_TOTAL };
enum top_sort { TOP_SORT_FLAT, TOP_SORT_CUM };
enum top_by { TOP_BY_FUNCTION, TOP_BY_LINE };

struct top_row {
	const char *name;
	const char *file;	/* NULL: unknown (and always in function rows) */
	int line;
	int64_t flat, cum;	/* ns */
};

struct top_thread_row {
	pid_t tid;
	const char *name;
	int64_t value;		/* ns */
	const char *hot;	/* its hottest function, NULL: none */
	int64_t hot_value;
};

/* What the header says, over the last interval. */
struct top_header {
	pid_t pid;
	char comm[64];
	unsigned threads;		/* in /proc/PID/task now */
	uint64_t samples;
	uint64_t interval_ns;		/* wall time the interval covered */
	double cprof_cpu;		/* cprof's CPU time / wall time (1 = one CPU) */
	struct top_stopped stopped;	/* the worst thread's share held stopped */
	double complete;		/* share of fresh walks that reached a root; <0: none */
	uint64_t elapsed_ns;		/* since top started */
	uint64_t total_samples;		/* since start (or the last reset) */
	int64_t value_last, value_total;	/* ns sampled: the shares' denominators */
	bool paused;
	bool wall;			/* wall mode */
	const char *source;		/* "perf" or "ptrace" */
};

struct top_model;

/* kernel: the kernel's symbols for kernel frames (NULL: none taken). */
int top_model_create(struct top_model **out, const struct sym_kallsyms *kernel);
void top_model_destroy(struct top_model *m);
/* Folds iv in: into the totals, and as the last interval unless as_last is
 * false (a sliver a session's end cut).  Returns 0 or -ENOMEM. */
int top_model_add(struct top_model *m, const struct top_interval *iv, bool as_last);
/* 'r': the totals start again from now. */
void top_model_reset(struct top_model *m);
/* The denominators: ns sampled in the scope. */
int64_t top_model_value(const struct top_model *m, enum top_scope scope);
uint64_t top_model_samples(const struct top_model *m, enum top_scope scope);
/*
 * The first max rows of the scope, by sort, into out (valid until the next
 * top_model_add or _reset).  Returns how many.
 */
size_t top_model_rows(struct top_model *m, enum top_by by, enum top_scope scope,
		      enum top_sort sort, struct top_row *out, size_t max);
size_t top_model_threads(struct top_model *m, enum top_scope scope, struct top_thread_row *out,
			 size_t max);

/* ---- the view (top_view.c) ----------------------------------------------- */

struct top_view_state {
	enum top_scope scope;
	enum top_sort sort;
	enum top_by by;
	bool threads;		/* the thread view */
};

/* The terminal: 0, or -errno when it cannot be set up (reported). */
int top_screen_open(void);
/* Restores the terminal; idempotent, safe from any path. */
void top_screen_close(void);
void top_screen_draw(struct top_model *m, const struct top_header *h,
		     const struct top_view_state *v);
/* Batch: one block of text (json: one JSON object) on stdout.  Returns 0 or
 * -EIO when stdout failed. */
int top_batch_print(struct top_model *m, const struct top_header *h,
		    const struct top_view_state *v, bool json);

#endif
