/* SPDX-License-Identifier: MIT */
/* What attach and record share: the session, up to its profile written
 * (its printing is session_print.c). */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/session.h"
#include "lib/clock.h"
#include "lib/grow.h"
#include "profile/output.h"
#include "session/session.h"
#include "symbolize/live.h"

static int label_of(uint32_t key, pid_t *tid, const char **name, void *arg)
{
	return sampler_thread_label(arg, key, tid, name);
}

static int process_label_of(uint32_t key, pid_t *pid, const char **name, void *arg)
{
	return sampler_process_label(arg, key, pid, name);
}

/* A Python frame's function, file and line, from the session's readers. */
static int python_line_of(uint64_t id, struct prof_line *out, void *arg)
{
	struct py_location loc;
	int ret = sampler_python_location(arg, id, &loc);

	if (ret < 0)
		return ret;
	*out = (struct prof_line){ .function = loc.function, .filename = loc.file,
				   .line = loc.line };
	return 0;
}

void cli_session_export(const struct cli_session *a, const struct sampler *s,
			struct prof_export_opts *o)
{
	*o = (struct prof_export_opts){
		.value = a->mode == SAMPLER_WALL ? PROF_VALUE_WALL : PROF_VALUE_CPU,
		.hz = a->hz,
		.thread_label = label_of,
		.process_label = process_label_of,
		.python_line = python_line_of,
		.arg = (void *)s,
		.kernel = a->kallsyms,
	};
}

static const enum prof_format formats[] = {
	[CLI_FORMAT_PPROF] = PROF_FORMAT_PPROF,
	[CLI_FORMAT_COLLAPSED] = PROF_FORMAT_COLLAPSED,
	[CLI_FORMAT_SVG] = PROF_FORMAT_SVG,
};

static void setup_sym(struct sym_ctx *sym, void *arg)
{
	struct sym_note *note = arg;

	sym_use_helper(sym, note->helper);
	sym_live_apply(note->live, sym);
}

/* m, which the parser answered err for, into note (reported after the write). */
static void note_failed(struct sym_note *note, const struct proc_module *m, int err)
{
	/* as for the unnamed: no room for the note is no error */
	if (cprof_grow(&note->failed, &note->cap_failed, note->n_failed + 1,
		       sizeof(*note->failed), 4) < 0)
		return;
	note->failed[note->n_failed++] = (struct sym_note_failed){ m, err };
}

static void after_sym(struct sym_ctx *sym, void *arg)
{
	struct sym_note *note = arg;
	const struct proc_module *m;
	size_t i, n = proc_modules_count(note->mods);
	int err;

	for (i = 1; i <= n; i++) {
		m = proc_modules_get(note->mods, (uint32_t)i);
		/* named, or walked: either way its frames keep their addresses */
		err = m ? sym_module_parser_error(sym, m) : 0;
		if (m && !err && note->sampler)
			err = sampler_walk_error(note->sampler, m->id);
		if (err)
			note_failed(note, m, err);
		if (!m || m->is_vdso || !sym_module_unnamed(sym, m))
			continue;
		/* the note is a courtesy: no room for it is no error */
		if (cprof_grow(&note->unnamed, &note->cap_unnamed, note->n_unnamed + 1,
			       sizeof(*note->unnamed), 8) < 0)
			return;
		note->unnamed[note->n_unnamed++] = m;
	}
}

/* What a profile of s says, as write_profile and cli_session_profile make it. */
struct session_text {
	char lines[SESSION_N_COMMENTS][SESSION_COMMENT_MAX];
	const char *comments[SESSION_N_COMMENTS];
	char title[256];
};

/* The session to write: everything but format, path and symbol set-up. */
static void session_of(struct prof_session *ps, struct session_text *t,
		       const struct cli_session *a, const char *what, const struct sampler *s,
		       const struct prof_stacks *stacks, const struct sampler_stats *st)
{
	size_t i;

	session_format_comments(t->lines, a, what, st);
	for (i = 0; i < SESSION_N_COMMENTS; i++)
		t->comments[i] = t->lines[i];
	snprintf(t->title, sizeof(t->title), "cprof %s (%s)", what,
		 a->mode == SAMPLER_WALL ? "wall time" : "CPU time");
	*ps = (struct prof_session){
		.stacks = stacks,
		.mods = sampler_modules(s),
		.comments = t->comments,
		.n_comments = SESSION_N_COMMENTS,
		.title = t->title,
	};
	cli_session_export(a, s, &ps->export);
	ps->export.time_nanos = (int64_t)st->start_realtime_ns;
	ps->export.duration_nanos = (int64_t)st->elapsed_ns;
}

/*
 * When sampling ended, on CLOCK_MONOTONIC: the sampler dates its start on
 * CLOCK_REALTIME and measures the time it sampled; the tracer's release,
 * the last unwinds and the watcher's stop come after.
 */
static uint64_t sampling_end_ns(const struct sampler_stats *st)
{
	uint64_t now = cprof_now_ns();
	int64_t since = cprof_realtime_ns() - (int64_t)(st->start_realtime_ns + st->elapsed_ns);

	if (!st->start_realtime_ns || since < 0 || (uint64_t)since > now)
		return now;
	return now - (uint64_t)since;
}

/* Writes the profile, symbolized until a->write_timeout_ns after sampling
 * ended (at end_ns); fills end. */
static int write_profile(struct sampler *s, struct sym_note *note, const struct cli_session *a,
			 pid_t pid, const char *what, struct progress *pr, uint64_t end_ns,
			 struct session_end *end)
{
	struct prof_session ps;
	struct prof_session_result res;
	struct session_text text;
	size_t i;
	int ret;

	session_of(&ps, &text, a, what, s, sampler_stacks(s), sampler_get_stats(s));
	ps.setup_sym = setup_sym;
	ps.after_sym = after_sym;
	ps.setup_arg = note;
	ps.format = formats[a->format];
	ps.path = a->output;
	ps.fsync = a->fsync;
	ps.export.sym_deadline_ns = end_ns + a->write_timeout_ns;
	ret = prof_write_session(&ps, &res);
	*end = (struct session_end){
		.finish_ns = cprof_now_ns() - end_ns,
		.timeout_ns = a->write_timeout_ns,
		.sync_ns = res.sync_ns,
		.modules_cut = res.modules_cut,
		.parser_errors = note->n_failed,
		.fsync = a->fsync,
	};
	if (res.sym_err < 0 || ret < 0 || res.modules_cut || note->n_failed)
		session_progress_clear(pr);
	/* Addresses alone still make a profile: it was written. */
	if (res.sym_err < 0)
		cli_error("cannot load symbols for pid %d: %s (the profile keeps raw addresses)",
			  (int)pid, strerror(-res.sym_err));
	if (ret < 0 && res.failed == PROF_STAGE_BUILD)
		cli_error("cannot build the profile of pid %d: %s", (int)pid, strerror(-ret));
	else if (ret < 0)
		cli_error("cannot write '%s': %s", a->output, strerror(-ret));
	else if (res.modules_cut)
		cli_error("symbolizing pid %d ran out of time (--write-timeout %.3g s): the frames "
			  "of %zu modules keep their addresses and build ids (pprof can symbolize "
			  "them; a longer --write-timeout names them now)", (int)pid,
			  (double)a->write_timeout_ns / 1e9, res.modules_cut);
	for (i = 0; ret >= 0 && i < note->n_failed; i++)
		cli_helper_report_error(note->failed[i].mod, note->failed[i].err);
	return ret;
}

/* A window's profile for cprof serve: the same export and comments as
 * write_profile's, kept in memory for the caller to send. */
int cli_session_profile(const struct cli_session *a, const char *what, const struct sampler *s,
			const struct prof_stacks *stacks, struct sym_ctx *sym,
			const struct sampler_stats *st, struct prof_builder **out,
			size_t *modules_cut)
{
	struct prof_session ps;
	struct session_text text;

	session_of(&ps, &text, a, what, s, stacks, st);
	/* The window just ended: its answer has the same budget as a file. */
	if (a->write_timeout_ns)
		ps.export.sym_deadline_ns = cprof_now_ns() + a->write_timeout_ns;
	return prof_session_build(&ps, sym, out, modules_cut);
}

/*
 * How sampling ended (ret from sampler_session), reported: CPROF_EXIT_OK,
 * _PARTIAL (stopped early; what was collected is still written) or _FATAL
 * (never attached: nothing to write).
 */
static int session_outcome(const struct sampler *s, int ret, pid_t pid, struct progress *pr)
{
	const struct sampler_stats *st = sampler_get_stats(s);
	char why[256];

	if (ret >= 0)
		return CPROF_EXIT_OK;
	session_progress_clear(pr);
	if ((st->perf_refused == SAMPLER_PERF_ERRNO || st->perf_refused == SAMPLER_PERF_RINGS) &&
	    !st->ticks) {
		/* --source perf, and perf events could not be opened: nothing
		 * was sampled (auto would have used stops). */
		cli_error("cannot sample pid %d with perf events: %s (--source auto or ptrace "
			  "samples at stops)", (int)pid, session_perf_refusal(st, why, sizeof(why)));
		return CPROF_EXIT_FATAL;
	}
	if (!sampler_get_stats(s)->attached) {
		if (!cli_attach_obstacle(pid, ret, why, sizeof(why)))
			snprintf(why, sizeof(why), "%s", strerror(-ret));
		cli_error("cannot attach to pid %d: %s", (int)pid, why);
		return CPROF_EXIT_FATAL;
	}
	cli_error("sampling pid %d stopped early: %s", (int)pid, strerror(-ret));
	return CPROF_EXIT_PARTIAL;
}

/* After sampling (ret from sampler_session): the profile written and the
 * session reported.  Returns the exit code. */
static int finish_session(const struct cli_session *a, pid_t pid, const char *what, struct sampler *s,
			  int ret, struct sym_live *live, struct progress *pr,
			  struct sampler_stats *final, struct conf_helper *helper)
{
	uint64_t end_ns = sampling_end_ns(sampler_get_stats(s));
	struct sym_note note = { .live = live, .mods = sampler_modules(s), .helper = helper,
				 .sampler = s };
	struct session_end end;
	int code;

	sym_live_stop(live);
	if (final)
		*final = *sampler_get_stats(s);
	/* symbols and the write can take seconds: say so instead of freezing */
	if (pr->shown)
		session_progress_show(pr, "cprof: writing profile...");
	code = session_outcome(s, ret, pid, pr);
	if (code == CPROF_EXIT_FATAL)
		return code;
	ret = write_profile(s, &note, a, pid, what, pr, end_ns, &end);
	session_progress_clear(pr);
	end.parser_deaths = cli_helper_deaths(helper);
	if (ret < 0)
		code = CPROF_EXIT_FATAL;
	else
		session_report(a, pid, s, &note, &end);
	/* modules left unnamed, by the deadline or by the parser's error */
	if (ret >= 0 && (end.modules_cut || end.parser_errors) && code == CPROF_EXIT_OK)
		code = CPROF_EXIT_PARTIAL;
	free(note.unnamed);
	free(note.failed);
	return code;
}

int cli_session_run(const struct cli_session *args, pid_t pid, const char *what,
		    void (*after_attach)(void *), void *arg, struct sampler_stats *final)
{
	struct cli_session run = *args, *a = &run;
	struct sess_opts o = {
		.sampler = {
			.pid = pid,
			.hz = a->hz,
			.duration_ns = a->duration_ns,
			.stack_size = a->stack_size,
			.perf_stack_size = a->stack_size_given ? a->stack_size : 0,
			.mode = a->mode,
			.stop = a->stop,
			.source = a->source,
			.python = !a->python_off,
			.tracer_flags = a->tracer_flags |
					(a->sched == CLI_SCHED_NORMAL ? 0 : TRACER_RT) |
					(a->sched == CLI_SCHED_AUTO ? TRACER_RT_ADAPT : 0),
			.after_attach = after_attach,
			.after_attach_arg = arg,
			/* record: its child is a copy of cprof until it execs */
			.from_exec = after_attach != NULL,
		},
		.debuginfod = !a->no_debuginfod,
		.debuginfod_timeout_ns = a->debuginfod_timeout_ns,
	};
	struct progress pr = { .duration_ns = a->duration_ns };
	struct sess *sess = NULL;
	int code, ret;

	/* before the target is touched, while cprof has a single thread */
	code = cli_helper_start(a->helper_user, &o.helper);
	if (code != CPROF_EXIT_OK)
		return code;
	o.sampler.kernel_frames = cli_kernel_setup(a, a->mode, a->quiet);
	/* a status line is for a person watching; logs and pipes get the summary alone */
	if (!a->quiet && isatty(STDERR_FILENO)) {
		o.sampler.progress = session_progress_update;
		o.sampler.progress_arg = &pr;
	}
	ret = sess_create(&sess, &o);
	if (ret < 0) {
		cli_error("cannot set up sampling of pid %d: %s", (int)pid, strerror(-ret));
		cli_kernel_done(a);
		cli_helper_end(o.helper);
		return CPROF_EXIT_FATAL;
	}
	pr.live = sess_live(sess);
	ret = sess_run(sess);
	code = finish_session(a, pid, what, sess_sampler(sess), ret, sess_live(sess), &pr, final,
			      o.helper);
	sess_destroy(sess);
	cli_kernel_done(a);
	/* the profile is written: a parser's death only lost names */
	if (cli_helper_end(o.helper) != CPROF_EXIT_OK && code == CPROF_EXIT_OK)
		code = CPROF_EXIT_PARTIAL;
	return code;
}
