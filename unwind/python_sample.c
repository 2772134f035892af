/* SPDX-License-Identifier: MIT */
/* CPython's frames read at the sampler's stops and spliced into its samples. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/clock.h"
#include "lib/grow.h"
#include "python/python.h"
#include "unwind/python_sample.h"
#include "unwind/sampler_impl.h"

/* A reader not opened is tried again at most this often: for a process
 * with no _PyRuntime, only once its maps changed too (a libpython loaded
 * after an exec); for one whose layout did not check out, while its
 * interpreter may still be starting (an exec, a fork's child). */
#define RETRY_NS 100000000ull
#define STARTING_NS 2000000000ull

/* One process's reader, and when it was last tried. */
struct samp_py_proc {
	struct py_proc *py;	/* NULL: none (yet); else also in samp_py.all */
	uint32_t slot;		/* its index in samp_py.all, + 1 */
	int err;		/* the last try's: -ENOENT, -EPROTO... */
	bool tried;
	uint64_t tried_ns;
	size_t tried_mods;	/* p's modules then: a new one may be a libpython */
	uint64_t since_ns;	/* first try since first sight or the last exec */
	uint64_t epoch_tick;	/* the tick its reader's epoch began at, + 1 */
};

/* The session's readers: every one opened stays until the sampler goes,
 * since the samples' Python frames are named from it at export (a frame's
 * id holds its reader's slot, python_id). */
struct samp_py {
	struct py_proc **all;
	size_t n_all, cap_all;
	char version[32];	/* of the first found */
	char module[512];
	char why[200];		/* the last refusal, while none was read */
};

static struct samp_py *state(struct sampler *s)
{
	if (!s->py)
		s->py = calloc(1, sizeof(*s->py));
	return s->py;
}

static struct samp_py_proc *proc_state(struct samp_proc *p)
{
	if (!p->py)
		p->py = calloc(1, sizeof(*p->py));
	return p->py;
}

/* Whether p is starting: first seen or exec'd moments ago. */
static bool starting(const struct samp_py_proc *pp, uint64_t now)
{
	return !pp->tried || now - pp->since_ns < STARTING_NS;
}

/*
 * Whether a reader for p is due another try now.  No _PyRuntime found: once
 * p maps a module more (its maps read again here while it starts, since
 * the loader maps libpython after the exec); a layout refused: while the
 * interpreter may still be initializing.
 */
static bool due(struct samp_proc *p, const struct samp_py_proc *pp, uint64_t now)
{
	if (!pp->tried)
		return true;
	if (now - pp->tried_ns < RETRY_NS)
		return false;
	if (pp->err != -ENOENT)
		return starting(pp, now);
	if (starting(pp, now))
		(void)procs_refresh(p, now);
	return proc_modules_count(p->mods) != pp->tried_mods;
}

/* p's reader opened: kept in the session's list, named in the summary. */
static void opened(struct samp_py *sp, struct samp_py_proc *pp, struct py_proc *py)
{
	if (cprof_grow(&sp->all, &sp->cap_all, sp->n_all + 1, sizeof(*sp->all), 4) < 0) {
		py_proc_close(py);
		pp->err = -ENOMEM;
		return;
	}
	sp->all[sp->n_all++] = py;
	pp->py = py;
	pp->slot = (uint32_t)sp->n_all;
	if (!sp->version[0]) {
		snprintf(sp->version, sizeof(sp->version), "%s", py_proc_version(py));
		snprintf(sp->module, sizeof(sp->module), "%s", py_proc_module(py));
	}
}

void samp_py_check(struct sampler *s, struct samp_proc *p)
{
	struct samp_py_proc *pp;
	struct samp_py *sp;
	struct py_proc *py;
	uint64_t now;
	char why[sizeof(sp->why)];

	if (!s->o.python || !p->ready || !p->mods || samp_before_exec(s, p) || (p->py && p->py->py))
		return;
	pp = proc_state(p);
	sp = state(s);
	now = cprof_now_ns();
	if (!pp || !sp || !due(p, pp, now))
		return;
	if (!pp->tried)
		pp->since_ns = now;
	pp->tried = true;
	pp->tried_ns = now;
	pp->tried_mods = proc_modules_count(p->mods);
	pp->err = py_proc_open(&py, p->pid, p->mods, why, sizeof(why));
	if (pp->err == 0)
		opened(sp, pp, py);
	else if (pp->err == -EPROTO)
		snprintf(sp->why, sizeof(sp->why), "%s", why);
}

bool samp_py_pending(struct sampler *s)
{
	uint64_t now = cprof_now_ns();
	size_t i;

	for (i = 0; s->o.python && i < s->n_procs; i++) {
		struct samp_proc *p = s->procs[i];

		if (!p->gone && !samp_before_exec(s, p) && !(p->py && p->py->py) &&
		    (!p->py || starting(p->py, now)))
			return true;
	}
	return false;
}

bool samp_py_runs(struct sampler *s, struct samp_proc *p)
{
	samp_py_check(s, p);
	return p->py && (p->py->py || p->py->err == -EPROTO);
}

void samp_py_read(struct sampler *s, struct samp_proc *p, struct snap *sn)
{
	uint64_t t0;

	sn->py.n_threads = 0;
	sn->py.n_frames = 0;
	if (!p->py || !p->py->py)
		return;
	/* Code objects may be freed between ticks, not within one. */
	if (p->py->epoch_tick != s->stats.ticks + 1) {
		py_proc_new_epoch(p->py->py);
		p->py->epoch_tick = s->stats.ticks + 1;
	}
	t0 = cprof_now_ns();
	/* What cannot be read is no error: the sample keeps its native frames. */
	(void)py_read_thread(p->py->py, sn->tid, &sn->py);
	s->stats.python_read_ns += cprof_now_ns() - t0;
}

size_t samp_py_splice(struct sampler *s, struct samp_proc *p, struct snap *sn, size_t n)
{
	struct samp_py_proc *pp = p->py;
	size_t i, k = n;

	if (pp && pp->py && sn->py.n_threads && n) {
		k = py_splice(pp->py, &sn->py, sn->tid, s->frames, n, s->max_stack);
		/* Ids unique across the session's readers: the slot above. */
		for (i = 0; i < k; i++)
			if (s->frames[i].flags & PROF_FRAME_PYTHON)
				s->frames[i].addr |= (uint64_t)pp->slot << 32;
	}
	sn->py.n_threads = 0;
	sn->py.n_frames = 0;
	return k;
}

bool samp_py_in(const struct sampler *s, const struct prof_frame *f, size_t n)
{
	size_t i;

	if (!s->py)
		return false;
	for (i = 0; i < n; i++)
		if (f[i].flags & PROF_FRAME_PYTHON)
			return true;
	return false;
}

void samp_py_exec(struct sampler *s, struct samp_proc *p)
{
	(void)s;
	if (p && p->py)
		memset(p->py, 0, sizeof(*p->py));
}

void samp_py_destroy(struct sampler *s)
{
	size_t i;

	for (i = 0; i < s->n_procs; i++) {
		free(s->procs[i]->py);
		s->procs[i]->py = NULL;
	}
	if (!s->py)
		return;
	for (i = 0; i < s->py->n_all; i++)
		py_proc_close(s->py->all[i]);
	free(s->py->all);
	free(s->py);
	s->py = NULL;
}

void sampler_python_info(const struct sampler *s, struct sampler_python *out)
{
	const struct samp_py *sp = s->py;

	memset(out, 0, sizeof(*out));
	if (!sp)
		return;
	out->readers = sp->n_all;
	out->version = sp->version[0] ? sp->version : NULL;
	out->module = sp->version[0] ? sp->module : NULL;
	out->refused = !sp->n_all && sp->why[0] ? sp->why : NULL;
}

int sampler_python_location(const struct sampler *s, uint64_t id, struct py_location *out)
{
	uint64_t slot = id >> 32;

	if (!s->py || !slot || slot > s->py->n_all)
		return -ENOENT;
	return py_location(s->py->all[slot - 1], id & 0xffffffffu, out);
}
