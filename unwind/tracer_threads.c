/* SPDX-License-Identifier: MIT */
/* The table of threads a tracer traces, indexed by tid. */
#include "config.h"

#include <stdlib.h>

#include "lib/clock.h"
#include "lib/grow.h"
#include "lib/hash.h"
#include "lib/htab.h"
#include "process/procfs.h"
#include "unwind/tracer-impl.h"

static uint32_t tid_hash(const struct tracer *t, const pid_t *tid)
{
	(void)t;
	return cprof_hash_finish((uint64_t)(uint32_t)*tid);
}

#define HTAB_NAME tid_index
#define HTAB_CTX struct tracer
#define HTAB_KEY pid_t
#define HTAB_HASH(t, key) tid_hash(t, key)
#define HTAB_COMPARE(t, i, key) ((t)->threads[i]->tid == *(key))
#include "lib/htab-type.h"

/* The index has no deletion: a removal marks it stale, and it is rebuilt
 * before its next use (once for any number of removals in a row). */
static void reindex(struct tracer *t)
{
	size_t i;

	t->by_tid_stale = false;
	cprof_htab_clear(&t->by_tid);
	for (i = 0; i < t->n_threads; i++)
		cprof_htab_add(&t->by_tid, tid_hash(t, &t->threads[i]->tid), i);
}

/* By tid, through the index: every event and every sample looks a thread
 * up, and a process may have thousands. */
struct tracer_thread *tracer_lookup(struct tracer *t, pid_t tid, size_t *index)
{
	uint32_t ref;

	if (!t)
		return NULL;
	if (t->by_tid_stale)
		reindex(t);
	ref = tid_index_find(&t->by_tid, t, &tid, NULL);
	if (!ref)
		return NULL;
	if (index)
		*index = ref - 1;
	return t->threads[ref - 1];
}


struct tracer_thread *tracer_add_thread(struct tracer *t, pid_t tid, pid_t tgid, bool seized)
{
	struct tracer_thread *th;

	if (cprof_grow(&t->threads, &t->cap_threads, t->n_threads + 1, sizeof(*t->threads), 64) < 0)
		return NULL;
	if (t->by_tid_stale)
		reindex(t);
	if (cprof_htab_reserve(&t->by_tid, 1) < 0)
		return NULL;
	th = calloc(1, sizeof(*th));
	if (!th)
		return NULL;
	th->tid = tid;
	th->tgid = tgid;
	th->seized = seized;
	th->appeared_ns = cprof_now_ns();
	procfs_task_init(&th->task, tid);
	th->task.pid = tgid;
	cprof_htab_add(&t->by_tid, tid_hash(t, &tid), t->n_threads);
	t->threads[t->n_threads++] = th;
	if (tgid == t->pid)
		t->n_root_threads++;
	/* Two files a thread are what sampling re-reads (schedstat, and the
	 * syscall file of one that ran): raise the soft file limit if that
	 * helps keep them open. */
	procfs_fdcache_budget(&t->fds, t->n_threads * 2);
	t->stats.threads_seen++;
	if (t->ops && t->ops->on_thread)
		t->ops->on_thread(t, th, true, t->arg);
	return th;
}

static void fold_fraction(struct tracer *t, const struct tracer_thread *th)
{
	tracer_fold_fraction(&t->stats, t->fraction_floor_ns, th, cprof_now_ns());
}

void tracer_remove_thread(struct tracer *t, size_t i)
{
	struct tracer_thread *th = t->threads[i];

	fold_fraction(t, th);
	if (t->ops && t->ops->on_thread)
		t->ops->on_thread(t, th, false, t->arg);
	if (th->pending)
		t->n_pending--;
	if (th->tgid == t->pid)
		t->n_root_threads--;
	procfs_task_close(&t->fds, &th->task);
	free(th);
	t->threads[i] = t->threads[--t->n_threads];
	t->by_tid_stale = true;
}

void tracer_forget_tid(struct tracer *t, pid_t tid)
{
	size_t i;

	if (tracer_lookup(t, tid, &i))
		tracer_remove_thread(t, i);
}

size_t tracer_thread_count(const struct tracer *t)
{
	return t->n_threads;
}

struct tracer_thread *tracer_thread_at(struct tracer *t, size_t i)
{
	return i < t->n_threads ? t->threads[i] : NULL;
}

struct tracer_thread *tracer_find_thread(struct tracer *t, pid_t tid)
{
	return tracer_lookup(t, tid, NULL);
}
