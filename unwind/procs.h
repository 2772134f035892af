/* SPDX-License-Identifier: MIT */
/*
 * What the sampler keeps per traced process of a tree: its maps, its view
 * of the session's modules (one numbering for the whole tree, see
 * proc_modules_create_shared), its unwinder, and its sample counts.  A
 * process's record outlives it (its counts are reported at the end); what
 * only sampling needs is released once it is gone (procs_retire).  Used on
 * the tracing thread only.
 *
 * The maps and their bookkeeping are this file's alone: other files read
 * the fields, and change them only through the functions below.  Every
 * change of the maps the unwinder walks against bumps maps_gen (as
 * strace's mmap cache does), and the unwinder is flushed once, when it is
 * next asked for (procs_unwinder), however many changes came meanwhile.
 */
#ifndef CPROF_UNWIND_PROCS_H
#define CPROF_UNWIND_PROCS_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "process/maps.h"
#include "process/modules.h"
#include "unwind/remote.h"
#include "unwind/remote_client.h"

struct samp_proc {
	pid_t pid;
	char name[64];		/* its comm when first seen, or after its last exec */
	struct proc_maps maps;
	struct proc_maps stop_maps;	/* read during a stop, for the unwind after it */
	bool stop_maps_valid;
	struct proc_maps round_maps;	/* stop_maps set aside for the round being unwound */
	bool round_maps_valid;
	bool stop_maps_taken;	/* this round's snapshots unwind against stop_maps */
	/* perf source: the executable file mappings its threads made, as the
	 * kernel announced them (PERF_RECORD_MMAP2), newest per range: what a
	 * read of maps after the samples no longer shows (a dlclose). */
	struct proc_maps announced;
	struct proc_maps drain_maps;	/* ... and maps read for the samples of one drain */
	bool drain_maps_valid;
	uint64_t drain_maps_at;		/* that drain's number */
	bool ready;		/* maps and modules read once (procs_refresh) */
	bool gone;		/* no thread of it is traced any more */
	bool owns_mods;		/* mods is a view of its own, not the store */
	int maps_fd;		/* /proc/PID/maps for PROCMAP_QUERY; -ENOTTY: unsupported */
	uint64_t maps_read_ns;
	uint64_t maps_gen;	/* bumped by every change of maps */
	uint64_t flushed_gen;	/* ... and the one the unwinder was flushed at */
	size_t n_threads;	/* traced threads now */
	struct proc_modules *mods;
	struct remote_unwinder *unwinder;
	/* its walker in the confined parser (procs_create's helper), or NULL */
	struct remote_client *client;
	uint64_t client_gen;	/* the maps_gen the client was flushed at */
	/* the client's errors (remote_client_errors), kept when it is
	 * retired: the summary reports them after the session */
	struct remote_client_error *walk_errs;
	size_t n_walk_errs;
	struct samp_py_proc *py;	/* its CPython reader (python_sample.c), or NULL */
	uint64_t samples;	/* samples taken of its threads */
	uint64_t value_ns;	/* their cpu or wall time */
};

/*
 * A record for process pid.  store NULL: pid is the root, and store_out
 * gets its table, which every later process shares (store_out may then
 * not be NULL).  helper: NULL, or the confined parser its copies are
 * walked in (procs_client).  Returns 0 or -errno.
 */
int procs_create(struct samp_proc **out, pid_t pid, struct proc_modules *store,
		 struct proc_modules **store_out, struct conf_helper *helper);

/* Frees p; a root's table (the store) is the caller's to destroy after
 * every other record. */
void procs_destroy(struct samp_proc *p);

/* Reads p's maps again and brings its modules in line.  Returns 0 or -errno. */
int procs_refresh(struct samp_proc *p, uint64_t now_ns);

/* p called execve: its modules are unmapped, its maps read anew, its name
 * read again. */
void procs_exec(struct samp_proc *p, uint64_t now_ns);

/* Sets the maps read during the stops so far (stop_maps) aside for the
 * round about to be unwound (round_maps): a stop served meanwhile reads
 * maps of its own for the next round. */
void procs_hold_stop_maps(struct samp_proc *p);

/* Makes the maps set aside by procs_hold_stop_maps the current ones. */
void procs_take_round_maps(struct samp_proc *p);

/* Makes m p's maps (and its modules follow); m gets the ones they
 * replace. */
void procs_use_maps(struct samp_proc *p, struct proc_maps *m);

/* Reads the maps during a stop of one of p's threads (stop_maps), for the
 * unwind of the copy made at that stop.  Returns 0 or -errno. */
int procs_read_stop_maps(struct samp_proc *p, uint64_t now_ns);

/* A round of copies is about to be unwound: none of them uses stop_maps yet. */
void procs_round_begin(struct samp_proc *p);

/* Whether a sample's stale-looking frames may read the maps again now:
 * not when maps read at a stop of this round know more than a read after
 * the threads ran on, and not more than once every few milliseconds. */
bool procs_may_reread(const struct samp_proc *p, uint64_t now_ns);

/* The unwinder, flushed first if the maps changed since it last was;
 * NULL once p is retired. */
struct remote_unwinder *procs_unwinder(struct samp_proc *p);

/* The modules the parser answered an error for while walking p's copies
 * (remote_client_errors), retired or not: *n of them, p's. */
const struct remote_client_error *procs_walk_errors(const struct samp_proc *p, size_t *n);

/* The walker in the parser, told first that the maps or the modules
 * changed if they did since it last was; NULL: none (no parser, or p is
 * retired). */
struct remote_client *procs_client(struct samp_proc *p);

/* perf source: an executable mapping the kernel announced (PERF_RECORD_MMAP2)
 * for p.  Returns 0 or -ENOMEM. */
int procs_announce(struct samp_proc *p, const struct proc_map *m);

/* perf source, once every event is open: the executable file mappings made
 * between the first read of maps and the events' start, as if announced.
 * Returns 0 or -ENOMEM. */
int procs_announce_gap(struct samp_proc *p);

/* perf source: maps read once per drain (drain, its number) for the samples
 * of that drain that need fresh ones, or NULL when they cannot be read. */
const struct proc_maps *procs_drain_maps(struct samp_proc *p, uint64_t drain);

/* Whether two mappings are the same one. */
bool procs_same_mapping(const struct proc_map *a, const struct proc_map *b);

/* Whether p's cached maps are wrong about pc (see the sampler's on_stop). */
bool procs_pc_unknown(struct samp_proc *p, uint64_t pc);

/* Releases what only sampling p needs (unwinder, maps, its view of the
 * modules); the modules themselves stay in the store. */
void procs_retire(struct samp_proc *p);

#endif
