/* SPDX-License-Identifier: MIT */
/*
 * Profile windows over one sampling session, for cprof serve.
 *
 * Any number of windows may be open at once.  While at least one is, one
 * session (session/session.h: one tracer, the perf maps and debuginfo
 * followed as for attach) samples the target and hands every sample to each
 * open window; when the last one ends, the session ends and the target is
 * let go, so between requests it is not traced at all.  A session has one
 * mode: a window of the other mode, or a thread dump, is refused with
 * -EBUSY while it runs.
 *
 * Threads: hub_open, hub_dump_begin/end, hub_totals and hub_shutdown may be
 * called from any thread.  The build and done callbacks run on the hub's own
 * threads (the session thread, or the thread that ran the session), never
 * two at a time, never with a hub lock held.
 */
#ifndef CPROF_SERVE_HUB_H
#define CPROF_SERVE_HUB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "profile/stacks.h"
#include "process/modules.h"
#include "symbolize/symbolize.h"
#include "unwind/sampler.h"

struct hub;
struct hub_window;

/* What a window's profile is built from: valid during the build call only. */
struct hub_profile {
	enum sampler_mode mode;
	const struct sampler *sampler;	/* for sampler_thread_label() */
	const struct prof_stacks *stacks;	/* the window's samples */
	const struct proc_modules *mods;
	struct sym_ctx *sym;		/* NULL: no symbols could be loaded */
	/* The window's share of the session: counts, stop times and
	 * elapsed_ns over the window; stopped fractions and threads_seen over
	 * the session until the window's end; start_realtime_ns its start. */
	const struct sampler_stats *stats;
};

struct hub_window {
	/* Set by the caller before hub_open. */
	enum sampler_mode mode;
	uint64_t duration_ns;
	int client_fd;		/* polled for a hang-up while open; -1: none */
	void *user;
	/* Set by the hub before done is called. */
	int err;		/* 0, or -errno: no session could sample (attach failed) */
	bool attach_failed;	/* err came from attaching */
	bool client_gone;	/* the client hung up: nothing was built */
	bool target_exited;	/* the target exited before the window's end */
	/* Private to the hub. */
	struct hub_window *next;
	struct prof_stacks *stacks;
	struct sampler_stats *start;	/* stats when the window began */
	struct sampler_stats *end;	/* stats when it ended, NULL while open */
	uint64_t open_ns;	/* CLOCK_MONOTONIC at hub_open */
	bool active;		/* receiving samples */
};

struct hub_opts {
	pid_t pid;
	unsigned hz;
	size_t stack_size;
	size_t perf_stack_size;	/* sampler_opts.perf_stack_size */
	enum sampler_stop stop;
	enum sampler_source source;
	bool kernel_frames;	/* sampler_opts.kernel_frames (CPU profiles) */
	bool python;		/* sampler_opts.python */
	bool debuginfod;		/* sess_opts.debuginfod */
	uint64_t debuginfod_timeout_ns;
	struct conf_helper *helper;	/* sess_opts.helper */
	/* Builds w's result from p (stores it through w->user).  Returns 0 or
	 * -errno, which lands in w->err. */
	int (*build)(struct hub_window *w, const struct hub_profile *p, void *arg);
	/* w is finished (built, failed or abandoned): the hub no longer
	 * touches it, and its owner frees it with hub_window_fini. */
	void (*done)(struct hub_window *w, void *arg);
	/* A session ended: stats are its totals, err its error (0 or -errno). */
	void (*session_end)(const struct sampler_stats *stats, int err, void *arg);
	void *arg;
};

/* Counters over every session so far, the running one included. */
struct hub_totals {
	struct sampler_stats sum;	/* summed; stop_ns_max and stopped_fraction_max the max */
	uint64_t sessions;
	uint64_t windows[SAMPLER_WALL + 1];	/* profiles built, by mode */
	uint64_t windows_failed;
	uint64_t clients_gone;
	uint64_t dumps;
	bool sampling;		/* a session runs now */
	enum sampler_mode mode;	/* its mode */
	unsigned open_windows;
};

/* Returns 0 or -errno. */
int hub_create(struct hub **out, const struct hub_opts *o);
/* After hub_shutdown, once every window is done. */
void hub_destroy(struct hub *h);

/*
 * Prepares w (zeroes the hub's fields).  Returns 0 or -ENOMEM; on success
 * hub_window_fini must follow, after done if w was opened.
 */
int hub_window_init(struct hub_window *w);
void hub_window_fini(struct hub_window *w);

/*
 * Opens w: from now on until done, w is the hub's.  Returns 0, -EBUSY (a
 * session of the other mode or a dump runs; *retry_ns is how long it has
 * left, at least 1 s) or -ESHUTDOWN.
 */
int hub_open(struct hub *h, struct hub_window *w, uint64_t *retry_ns);

/* Exclusive use of the target for a one-off capture (dump-threads): 0,
 * -EBUSY (a session runs; *retry_ns as for hub_open) or -ESHUTDOWN. */
int hub_dump_begin(struct hub *h, uint64_t *retry_ns);
void hub_dump_end(struct hub *h);

void hub_totals(struct hub *h, struct hub_totals *t);

/* CLOCK_MONOTONIC in nanoseconds: the clock of open_ns and retry times. */
uint64_t hub_now_ns(void);

/*
 * Ends the session if one runs (each open window gets what was sampled, as
 * when the target exits), waits until every window is done and refuses new
 * ones.
 */
void hub_shutdown(struct hub *h);

#endif
