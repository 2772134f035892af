/* SPDX-License-Identifier: MIT */
/*
 * The one way a sampling session becomes a file, for cprof's own sampler and
 * the in-process one alike: raw stacks -> symbolized (symbolize/) ->
 * exported as a profile (export.h) -> written, atomically, as gzipped pprof,
 * collapsed stacks or an SVG flame graph drawn from that same profile.
 */
#ifndef CPROF_PROFILE_OUTPUT_H
#define CPROF_PROFILE_OUTPUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "process/modules.h"
#include "profile/export.h"
#include "profile/stacks.h"
#include "symbolize/symbolize.h"

enum prof_format {
	PROF_FORMAT_PPROF,	/* gzipped perftools.profiles.Profile */
	PROF_FORMAT_COLLAPSED,	/* folded stacks, flame.h */
	PROF_FORMAT_SVG,	/* SVG flame graph, flame.h */
};

struct prof_session {
	const struct prof_stacks *stacks;
	const struct proc_modules *mods;	/* the modules the stacks' frames name */
	/* Called on the symbolizer before it is used (what was learned while
	 * the target ran: perf map, downloads); NULL: nothing to add. */
	void (*setup_sym)(struct sym_ctx *sym, void *arg);
	/* Called once the profile is built, before the symbolizer goes, to ask
	 * it what it found; NULL: nothing to ask.  Gets setup_arg too. */
	void (*after_sym)(struct sym_ctx *sym, void *arg);
	void *setup_arg;
	struct prof_export_opts export;
	const char *const *comments;	/* n_comments lines for the pprof comment field */
	size_t n_comments;
	enum prof_format format;
	const char *title;		/* SVG only; NULL: "Flame Graph" */
	const char *path;		/* "-": standard output */
	bool fsync;			/* wait for the disk: fsync the file and its directory */
};

/* Which step of prof_write_session failed. */
enum prof_stage {
	PROF_STAGE_NONE,	/* nothing failed */
	PROF_STAGE_BUILD,	/* exporting the profile (out of memory, bad options) */
	PROF_STAGE_WRITE,	/* writing path */
};

struct prof_session_result {
	/* 0, or the -errno of loading symbols: the profile was then written
	 * with addresses only (the build ids let pprof symbolize it later) */
	int sym_err;
	enum prof_stage failed;	/* set when the call fails */
	/* modules left unsymbolized by export.sym_deadline_ns (export.h) */
	size_t modules_cut;
	uint64_t sync_ns;	/* time spent in fsync (with fsync) */
};

/*
 * The profile of s (its stacks exported with s->export, its comments
 * added), symbolized with sym (NULL: addresses only); s->format and
 * s->path are not used.  For callers that send the profile themselves
 * (cprof serve).  *modules_cut (may be NULL) as prof_export_cut says; a
 * comment says so in the profile (prof_note_cut).
 * Returns 0 or -errno; on success *out is the caller's.
 */
int prof_session_build(const struct prof_session *s, struct sym_ctx *sym,
		       struct prof_builder **out, size_t *modules_cut);

/*
 * Says in b's comments that the symbolizing deadline cut modules_cut
 * modules (nothing when 0), so that whoever reads the profile knows why
 * some frames are addresses.  prof_session_build and prof_write_session
 * do it themselves.  Returns 0 or -errno.
 */
int prof_note_cut(struct prof_builder *b, size_t modules_cut);

/*
 * Symbolizes, exports and writes s.  Failing to load symbols is not an
 * error (res->sym_err says it happened).  res may be NULL.
 * Returns 0 or -errno, res->failed saying of which step.
 */
int prof_write_session(const struct prof_session *s, struct prof_session_result *res);

#endif
