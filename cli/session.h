/* SPDX-License-Identifier: MIT */
/* The session attach and record share, and its report: the state that
 * session.c (the session) and session_print.c (its printing) share. */
#ifndef CPROF_CLI_SESSION_H
#define CPROF_CLI_SESSION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cli/cli.h"
#include "process/modules.h"
#include "symbolize/live.h"

#define SESSION_N_COMMENTS 5
#define SESSION_COMMENT_MAX 320

/*
 * The live status line on a terminal: rewritten in place with '\r', padded
 * over the longer line it replaces (no terminal escapes needed).  Written
 * by the session thread while the main thread waits for it, then by the
 * main thread: never by both at once.
 */
struct progress {
	uint64_t duration_ns;
	size_t shown;		/* length of the line on the terminal, 0: none */
	struct sym_live *live;	/* whose downloads the line shows; NULL: none */
};

/* What the summary says about symbols, gathered around the write. */
struct sym_note {
	struct sym_live *live;			/* downloads, perf map; NULL: none */
	struct conf_helper *helper;		/* the confined parser; NULL: none */
	const struct sampler *sampler;		/* whose walks the parser failed on */
	const struct proc_modules *mods;
	const struct proc_module **unnamed;	/* looked up, nothing named */
	size_t n_unnamed, cap_unnamed;
	struct sym_note_failed {		/* the parser answered an error for */
		const struct proc_module *mod;
		int err;			/* -errno */
	} *failed;
	size_t n_failed, cap_failed;
};

/* After sampling, for the summary and --json. */
struct session_end {
	uint64_t finish_ns;	/* from the end of sampling to the profile written */
	uint64_t timeout_ns;	/* --write-timeout */
	uint64_t sync_ns;	/* fsync's part of finish_ns (--fsync) */
	size_t modules_cut;	/* modules --write-timeout left unsymbolized */
	size_t parser_deaths;	/* times the confined parser died */
	size_t parser_errors;	/* modules the parser answered an error for */
	bool fsync;
};

/* The profile's comments: how it was made and what it cost. */
void session_format_comments(char line[SESSION_N_COMMENTS][SESSION_COMMENT_MAX],
			     const struct cli_session *a, const char *what,
			     const struct sampler_stats *st);

/* The status line: show text, erase it (pr may be NULL), and the sampler's
 * progress callback (arg: the struct progress) that rewrites it. */
void session_progress_show(struct progress *pr, const char *text);
void session_progress_clear(struct progress *pr);
void session_progress_update(const struct sampler_stats *st, void *arg);

/* Why perf events were not used, or NULL when they were; buf holds it
 * when it is made up. */
const char *session_perf_refusal(const struct sampler_stats *st, char *buf, size_t size);

/* session_python.c: the interpreter found and the samples with its frames
 * (or why its layout was refused): a line on stderr; the "python" and
 * "python_error" members of --json. */
void session_print_python(const struct cli_session *a, const struct sampler *s);
void session_json_python(const struct cli_session *a, const struct sampler *s);

/* After the profile is written: the summary and what debuginfo was missing
 * (unless -q), and the JSON object with --json. */
void session_report(const struct cli_session *a, pid_t pid, const struct sampler *s,
		    const struct sym_note *note, const struct session_end *end);

#endif
