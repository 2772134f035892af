/* SPDX-License-Identifier: MIT */
/*
 * CPython's frames in the sampler's samples (sampler_opts.python): each
 * process found to run CPython gets a reader (python/), opened when the
 * process is first sampled and again after it execs; at each stop of one
 * of its threads (and each read in place of a blocked one) the thread's
 * Python frames are read into the copy, while the thread cannot change
 * them, and spliced into its native stack after the unwind.  Tracing
 * thread only.
 */
#ifndef CPROF_UNWIND_PYTHON_SAMPLE_H
#define CPROF_UNWIND_PYTHON_SAMPLE_H

#include <stdbool.h>
#include <stddef.h>

#include "unwind/procs.h"
#include "unwind/snapshot.h"

struct sampler;

/* Opens p's reader if p may run CPython and it is due (first sight, maps
 * changed, an interpreter not yet initialized tried again); cheap when
 * nothing is due.  Not during a stop: it reads symbol tables. */
void samp_py_check(struct sampler *s, struct samp_proc *p);

/* Whether p runs CPython (found, layout checked or not yet): its samples
 * want stops, where heap frames can be read. */
bool samp_py_runs(struct sampler *s, struct samp_proc *p);

/* Whether some process of the session may still turn out to run CPython
 * (starting, its reader not opened yet): a source that cannot read its
 * frames asks again later (samp_py_runs). */
bool samp_py_pending(struct sampler *s);

/* sn's thread is stopped (or blocked and not running): its Python frames
 * into sn->py (emptied first). */
void samp_py_read(struct sampler *s, struct samp_proc *p, struct snap *sn);

/* After sn is unwound into s->frames (n of them): its Python frames
 * spliced in.  Returns the new count (at most s->max_stack). */
size_t samp_py_splice(struct sampler *s, struct samp_proc *p, struct snap *sn, size_t n);

/* Whether a sample's frames hold Python frames (false at once when no
 * reader was ever opened). */
bool samp_py_in(const struct sampler *s, const struct prof_frame *f, size_t n);

/* p execed: its reader is the old image's (kept for the frames it named). */
void samp_py_exec(struct sampler *s, struct samp_proc *p);

void samp_py_destroy(struct sampler *s);

#endif
