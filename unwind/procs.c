/* SPDX-License-Identifier: MIT */
/* Per-process sampling state of a traced process tree. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "process/procfs.h"
#include "unwind/procs.h"

/* Re-read maps at most this often (see procs_may_reread). */
#define MAPS_MIN_NS 5000000ull
/* The executable mappings kept per process from perf's announcements. */
#define ANNOUNCED_MAX 1024

static void read_name(struct samp_proc *p)
{
	struct procfs_stat st;

	if (procfs_stat_pid(p->pid, &st) == 0)
		snprintf(p->name, sizeof(p->name), "%s", st.comm);
}

int procs_create(struct samp_proc **out, pid_t pid, struct proc_modules *store,
		 struct proc_modules **store_out, struct conf_helper *helper)
{
	struct samp_proc *p = calloc(1, sizeof(*p));
	int ret;

	if (!p)
		return -ENOMEM;
	p->pid = pid;
	p->maps_fd = -1;
	if (store) {
		ret = proc_modules_create_shared(&p->mods, pid, store);
		p->owns_mods = true;
	} else {
		ret = proc_modules_create(&p->mods, pid);
	}
	if (ret < 0)
		goto err;
	ret = remote_create(&p->unwinder, pid, p->mods, &p->maps);
	if (ret < 0)
		goto err;
	/* the maps are p->maps at every walk: procs_use_maps swaps contents */
	ret = helper ? remote_client_create(&p->client, helper, pid, p->mods, &p->maps) : 0;
	if (ret < 0) {
		remote_destroy(p->unwinder);
		goto err;
	}
	read_name(p);
	if (!store)
		*store_out = p->mods;
	*out = p;
	return 0;
err:
	if (p->mods)
		proc_modules_destroy(p->mods);
	free(p);
	return ret;
}

void procs_retire(struct samp_proc *p)
{
	size_t n;

	remote_destroy(p->unwinder);
	p->unwinder = NULL;
	if (p->client) {
		const struct remote_client_error *e = remote_client_errors(p->client, &n);

		/* kept for the summary; no room for them is no error */
		p->walk_errs = n ? malloc(n * sizeof(*e)) : NULL;
		if (p->walk_errs) {
			memcpy(p->walk_errs, e, n * sizeof(*e));
			p->n_walk_errs = n;
		}
	}
	remote_client_destroy(p->client);
	p->client = NULL;
	proc_maps_free(&p->maps);
	proc_maps_free(&p->stop_maps);
	p->stop_maps_valid = false;
	proc_maps_free(&p->round_maps);
	p->round_maps_valid = false;
	proc_maps_free(&p->announced);
	proc_maps_free(&p->drain_maps);
	p->drain_maps_valid = false;
	if (p->maps_fd >= 0)
		close(p->maps_fd);
	p->maps_fd = -1;
	if (p->owns_mods) {
		proc_modules_destroy(p->mods);
		p->mods = NULL;
	}
}

void procs_destroy(struct samp_proc *p)
{
	if (!p)
		return;
	procs_retire(p);
	free(p->walk_errs);
	free(p);
}

int procs_refresh(struct samp_proc *p, uint64_t now_ns)
{
	int ret;

	if (!p->mods)
		return -ESRCH;
	ret = proc_maps_read(p->pid, &p->maps);
	if (ret < 0)
		return ret;
	p->ready = true;
	p->maps_read_ns = now_ns;
	p->maps_gen++;
	ret = proc_modules_update(p->mods, &p->maps);
	return ret < 0 ? ret : 0;
}

void procs_exec(struct samp_proc *p, uint64_t now_ns)
{
	/* maps read at stops before the exec describe the old image */
	p->stop_maps_valid = false;
	p->round_maps_valid = false;
	proc_maps_free(&p->announced);
	p->drain_maps_valid = false;
	if (!p->mods)
		return;
	proc_modules_unmap_all(p->mods);
	/* An open maps file stays bound to the address space it was opened
	 * on, which exec just replaced. */
	if (p->maps_fd >= 0) {
		close(p->maps_fd);
		p->maps_fd = -1;
	}
	read_name(p);
	procs_refresh(p, now_ns);
	/* At the exec stop only the program and its interpreter are mapped:
	 * the libraries come next.  This read must not hold back the read
	 * that the first sample in them asks for (the sampler reads maps at
	 * most every few milliseconds): record's first sample, taken 3 ms
	 * after the exec, had main's caller in libc unnamed and was cut. */
	p->maps_read_ns = 0;
}

/* Exchanges two sets of maps: the one given up keeps its buffer for reuse. */
static void swap_maps(struct proc_maps *a, struct proc_maps *b)
{
	struct proc_maps tmp = *a;

	*a = *b;
	*b = tmp;
}

void procs_hold_stop_maps(struct samp_proc *p)
{
	if (!p->stop_maps_valid || !p->unwinder)
		return;
	swap_maps(&p->round_maps, &p->stop_maps);
	p->stop_maps_valid = false;
	p->round_maps_valid = true;
	p->stop_maps_taken = true;
}

void procs_use_maps(struct samp_proc *p, struct proc_maps *m)
{
	swap_maps(&p->maps, m);
	p->maps_gen++;
	proc_modules_update(p->mods, &p->maps);
}

void procs_take_round_maps(struct samp_proc *p)
{
	if (!p->round_maps_valid)
		return;
	swap_maps(&p->maps, &p->round_maps);
	p->round_maps_valid = false;
	p->maps_gen++;
	proc_modules_update(p->mods, &p->maps);
}

struct remote_unwinder *procs_unwinder(struct samp_proc *p)
{
	if (p->unwinder && p->flushed_gen != p->maps_gen) {
		remote_flush(p->unwinder);
		p->flushed_gen = p->maps_gen;
	}
	return p->unwinder;
}

const struct remote_client_error *procs_walk_errors(const struct samp_proc *p, size_t *n)
{
	if (p->client)
		return remote_client_errors(p->client, n);
	*n = p->n_walk_errs;
	return p->walk_errs;
}

struct remote_client *procs_client(struct samp_proc *p)
{
	if (p->client && p->client_gen != p->maps_gen) {
		remote_client_flush(p->client);
		p->client_gen = p->maps_gen;
	}
	return p->client;
}

/*
 * The maps at this stop, for the unwind after it.  Maps read at an earlier
 * stop of the same round and not taken yet are kept under them: the copy
 * made then needs them (a library its thread ran in may be gone by now).
 */
int procs_read_stop_maps(struct samp_proc *p, uint64_t now_ns)
{
	struct proc_maps now = { NULL, 0 };
	int ret;

	if (!p->stop_maps_valid) {
		ret = proc_maps_read(p->pid, &p->stop_maps);
	} else {
		ret = proc_maps_read(p->pid, &now);
		if (ret == 0)
			ret = proc_maps_merge_older(&now, &p->stop_maps);
		if (ret == 0) {
			proc_maps_free(&p->stop_maps);
			p->stop_maps = now;
		} else {
			proc_maps_free(&now);
		}
	}
	if (ret < 0)
		return ret;
	p->stop_maps_valid = true;
	p->maps_read_ns = now_ns;
	return 0;
}

void procs_round_begin(struct samp_proc *p)
{
	p->stop_maps_taken = false;
}

bool procs_may_reread(const struct samp_proc *p, uint64_t now_ns)
{
	return !p->stop_maps_taken && now_ns - p->maps_read_ns >= MAPS_MIN_NS;
}

bool procs_same_mapping(const struct proc_map *a, const struct proc_map *b)
{
	return a->start == b->start && a->end == b->end && a->inode == b->inode &&
	       a->offset == b->offset;
}

int procs_announce(struct samp_proc *p, const struct proc_map *m)
{
	/* Past ANNOUNCED_MAX the history starts again: the maps read at a
	 * drain know the mappings of the moment. */
	if (p->announced.n >= ANNOUNCED_MAX)
		proc_maps_free(&p->announced);
	return proc_maps_add(&p->announced, m);
}

/*
 * The kernel announces the mappings made after a thread's event is open;
 * the maps read at attach know those made before that read.  A library
 * mapped in between (a dlopen during the perf_event_open probe, which can
 * take 10 ms) and unmapped before the drain that reads its samples was
 * known to neither: attach-hostile's churned library had a sample without
 * a name.  A read of maps once every event is open gives the executable
 * mappings the first read did not see as if announced.
 */
int procs_announce_gap(struct samp_proc *p)
{
	struct proc_maps now = { 0 };
	size_t i;
	int r = 0;

	if (!p->ready || proc_maps_read(p->pid, &now) < 0)
		return 0;
	for (i = 0; i < now.n && r == 0; i++) {
		const struct proc_map *m = &now.v[i];
		const struct proc_map *c = proc_maps_find(&p->maps, m->start);

		if ((m->perms & PROC_MAP_X) && m->path[0] == '/' && !(c && procs_same_mapping(c, m)))
			r = proc_maps_add(&p->announced, m);
	}
	proc_maps_free(&now);
	return r;
}

const struct proc_maps *procs_drain_maps(struct samp_proc *p, uint64_t drain)
{
	if (!p->drain_maps_valid || p->drain_maps_at != drain) {
		if (proc_maps_read(p->pid, &p->drain_maps) < 0)
			return NULL;
		p->drain_maps_valid = true;
		p->drain_maps_at = drain;
	}
	return &p->drain_maps;
}

/*
 * Whether the cached maps are wrong about pc, judged while its thread is
 * stopped: pc in no module and not in a known JIT (anonymous executable)
 * mapping, or in memory they say is not executable, or — asked of the
 * kernel where it can answer in one ioctl — in a mapping that is not the
 * one they remember there (dlopen/dlclose and mmap churn reuse addresses:
 * without this a library's pcs were named after whatever was there before).
 *
 * A known JIT mapping is asked about too: a library loaded where anonymous
 * code was (attach-hostile's churned library, where its mapper thread had
 * an executable anonymous page a moment before) was taken for JIT code,
 * the maps never read again, and up to half of its samples had no name.
 * Only whether it is still anonymous and executable counts there: JIT
 * regions change their bounds all the time (W^X flips split them), and
 * that is no reason to read the maps.
 */
bool procs_pc_unknown(struct samp_proc *p, uint64_t pc)
{
	const struct proc_map *m = proc_maps_find(&p->maps, pc);
	struct proc_map v;
	bool jit = false;
	int r;

	if (!proc_modules_lookup(p->mods, pc)) {
		/* Code runs only from executable memory. */
		if (!m || !(m->perms & PROC_MAP_X) || m->path[0] == '/')
			return true;
		jit = true;
	}
	if (p->maps_fd == -ENOTTY)
		return false;
	if (p->maps_fd < 0) {
		char path[64];

		snprintf(path, sizeof(path), "/proc/%d/maps", (int)p->pid);
		p->maps_fd = open(path, O_RDONLY | O_CLOEXEC);
		if (p->maps_fd < 0) {
			p->maps_fd = -ENOTTY;
			return false;
		}
	}
	r = proc_maps_query(p->maps_fd, pc, &v);
	if (r == -ENOTTY) {
		close(p->maps_fd);
		p->maps_fd = -ENOTTY;	/* an older kernel: never ask again */
		return false;
	}
	if (r < 0 || !m)
		return true;
	if (jit)
		return v.inode != m->inode || v.dev_major != m->dev_major ||
		       v.dev_minor != m->dev_minor || !(v.perms & PROC_MAP_X);
	return v.start != m->start || v.end != m->end || v.inode != m->inode ||
	       v.offset != m->offset;
}
