/* SPDX-License-Identifier: MIT */
/* One sampling session for every command: sampler, perf maps and downloads of the whole tree. */
#include "config.h"

#include <errno.h>
#include <stdlib.h>

#include "session/session.h"

struct sess {
	struct sess_opts o;
	struct sampler *sampler;
	struct sym_live *live;
	size_t procs_told;	/* the sampler's processes given to live so far */
	struct sym_ctx *sym;	/* sess_symbolizer's */
	bool sym_tried;
	uint64_t sym_generation;	/* live's, when sym was made */
};

/* Gives live the processes the sampler met since the last call: the tree's
 * children are followed for their perf maps and modules as the root is. */
static void tell_processes(struct sess *s)
{
	struct sampler_process p;

	while (sampler_process_at(s->sampler, s->procs_told, &p) == 0) {
		/* without room, that process only lacks its JIT names */
		sym_live_add_process(s->live, p.pid);
		s->procs_told++;
	}
}

static void on_progress(const struct sampler_stats *st, void *arg)
{
	struct sess *s = arg;

	tell_processes(s);
	if (s->o.sampler.progress)
		s->o.sampler.progress(st, s->o.sampler.progress_arg);
}

int sess_create(struct sess **out, const struct sess_opts *o)
{
	struct sampler_opts so = o->sampler;
	struct sym_live_opts lo = {
		.pid = o->sampler.pid,
		.from_exec = o->sampler.from_exec,
		.debuginfod = o->debuginfod,
		.debuginfod_timeout_ns = o->debuginfod_timeout_ns,
		.debuginfod_budget_ns = SESS_DEBUGINFOD_LOOKUPS * o->debuginfod_timeout_ns,
		.helper = o->helper,
	};
	struct sess *s;
	int ret;

	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->o = *o;
	so.helper = o->helper;	/* the copies are walked there too */
	/* A tree's processes come and go while it runs: the progress callback
	 * (every 250 ms) is where they are learned.  One process needs none,
	 * and a session without a status line no extra wake-up. */
	if (so.progress || (so.tracer_flags & (TRACER_FOLLOW | TRACER_DESCENDANTS))) {
		so.progress = on_progress;
		so.progress_arg = s;
	}
	ret = sampler_create(&s->sampler, &so);
	if (ret < 0) {
		free(s);
		return ret;
	}
	/* Perf maps (and downloads) are followed on a thread of their own,
	 * from now on; without it the profile only lacks JIT names. */
	if (sym_live_start(&s->live, &lo) < 0)
		s->live = NULL;
	*out = s;
	return 0;
}

void sess_destroy(struct sess *s)
{
	if (!s)
		return;
	if (s->sym)
		sym_destroy(s->sym);
	sym_live_destroy(s->live);
	sampler_destroy(s->sampler);
	free(s);
}

int sess_run(struct sess *s)
{
	int ret;

	ret = sampler_session(s->sampler);
	/* the processes met since the last progress get their last look */
	tell_processes(s);
	sym_live_stop(s->live);
	return ret;
}

void sess_stop(struct sess *s)
{
	sampler_stop(s->sampler);
}

struct sampler *sess_sampler(const struct sess *s)
{
	return s->sampler;
}

struct sym_live *sess_live(const struct sess *s)
{
	return s->live;
}

void sess_apply_symbols(struct sess *s, struct sym_ctx *sym)
{
	sym_use_helper(sym, s->o.helper);
	sym_live_apply(s->live, sym);
}

struct sym_ctx *sess_symbolizer(struct sess *s)
{
	uint64_t g = sym_live_generation(s->live);

	if (s->sym && g != s->sym_generation) {
		sym_destroy(s->sym);
		s->sym = NULL;
		s->sym_tried = false;
	}
	if (!s->sym_tried) {
		s->sym_tried = true;
		s->sym_generation = g;
		if (sym_create(&s->sym, sampler_modules(s->sampler), 0) < 0)
			s->sym = NULL;
		else
			sess_apply_symbols(s, s->sym);
	}
	return s->sym;
}
