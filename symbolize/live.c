/* SPDX-License-Identifier: MIT */
/* The watcher thread: polls the target's maps and perf map, notices exec, downloads debuginfo. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "lib/grow.h"
#include "process/maps.h"
#include "process/modules.h"
#include "symbolize/debuginfo.h"
#include "symbolize/fetch.h"
#include "symbolize/live.h"

/* How often the maps and the perf map are looked at. */
#define POLL_NS 200000000ull

/*
 * How long stopping waits for the thread: a download notices within about a
 * second.  Past this (libdebuginfod cleaning a huge cache, a hung file
 * system) the thread is left behind with everything it touches.
 */
#define STOP_WAIT_S 3

enum dl_state {
	DL_QUEUED,	/* no local debuginfo; not asked yet */
	DL_FOUND,
	DL_NOT_FOUND,	/* no server has it */
	DL_TIMED_OUT,	/* the lookup's bound ran out */
	DL_NO_BUDGET,	/* the run's bound ran out before it was asked */
	DL_FAILED,	/* another error: err */
	DL_STOPPED,	/* the session ended first */
};

struct dl_entry {
	char *build_id;
	char *module;		/* path as the target sees it */
	char *path;		/* the downloaded file (DL_FOUND) */
	enum dl_state state;
	int err;
	char why[160];
};

struct sym_live {
	struct sym_live_opts o;
	pthread_t thread;
	bool running;
	bool abandoned;			/* stop gave up waiting: l is the thread's */
	pthread_mutex_t lock;
	pthread_cond_t wake;
	bool stop;			/* under lock */
	int exec_fd;			/* /proc/PID/maps opened before the last exec check */
	struct proc_maps maps;
	struct sym_perfmap *perfmap;

	/* debuginfod */
	struct proc_modules *mods;	/* NULL: downloads are off */
	size_t mods_seen;		/* modules already checked */
	struct dl_entry *dl;
	size_t n_dl, cap_dl;
	uint64_t budget_left_ns;
	/* the download under way, for the status line (under lock) */
	const char *dl_module;
	long dl_done, dl_total;
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static bool stop_asked(struct sym_live *l)
{
	bool stop;

	pthread_mutex_lock(&l->lock);
	stop = l->stop;
	pthread_mutex_unlock(&l->lock);
	return stop;
}

/*
 * An open /proc/PID/maps stays bound to the address space it was opened on:
 * once the target execs (or exits), reading it gives nothing.  Returns true
 * when a new address space replaced the one of the last call.
 */
static bool execed(struct sym_live *l)
{
	char path[64], c;
	int fd;

	if (l->exec_fd >= 0 && pread(l->exec_fd, &c, 1, 0) == 1)
		return false;
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)l->o.pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	/* an exited target (or a zombie) has no new address space: no exec */
	if (fd < 0 || pread(fd, &c, 1, 0) != 1) {
		if (fd >= 0)
			close(fd);
		return false;
	}
	if (l->exec_fd < 0) {
		l->exec_fd = fd;
		return false;
	}
	close(l->exec_fd);
	l->exec_fd = fd;
	return true;
}

static struct dl_entry *find_dl(const struct sym_live *l, const char *build_id)
{
	size_t i;

	for (i = 0; i < l->n_dl; i++)
		if (strcmp(l->dl[i].build_id, build_id) == 0)
			return &l->dl[i];
	return NULL;
}

/* Queues the modules found since the last call that have no debuginfo here. */
static int queue_new_modules(struct sym_live *l)
{
	const struct proc_module *m;
	struct dl_entry *e;
	size_t n = proc_modules_count(l->mods);

	for (; l->mods_seen < n; l->mods_seen++) {
		m = proc_modules_get(l->mods, (uint32_t)l->mods_seen + 1);
		if (!m || !m->build_id || m->fd < 0 || m->is_vdso || find_dl(l, m->build_id))
			continue;
		if (sym_debuginfo_local(m->file, m->open_path ? m->open_path : m->path, m->build_id))
			continue;
		if (cprof_grow(&l->dl, &l->cap_dl, l->n_dl + 1, sizeof(*l->dl), 8) < 0)
			return -ENOMEM;
		e = &l->dl[l->n_dl];
		memset(e, 0, sizeof(*e));
		e->build_id = strdup(m->build_id);
		e->module = strdup(m->path);
		if (!e->build_id || !e->module) {
			free(e->build_id);
			free(e->module);
			return -ENOMEM;
		}
		e->state = DL_QUEUED;
		l->n_dl++;
	}
	return 0;
}

static bool on_progress(void *arg, long done, long total)
{
	struct sym_live *l = arg;
	bool stop;

	pthread_mutex_lock(&l->lock);
	l->dl_done = done;
	l->dl_total = total;
	stop = l->stop;
	pthread_mutex_unlock(&l->lock);
	return stop;
}

/* Looks up one queued module, within its bound and what is left of the run's. */
static void download(struct sym_live *l, struct dl_entry *e)
{
	struct sym_fetch_ops ops = { .progress = on_progress, .arg = l };
	uint64_t start = now_ns(), bound = l->o.debuginfod_timeout_ns, spent;
	bool by_budget = false;
	int ret;

	if (l->budget_left_ns < bound) {
		bound = l->budget_left_ns;
		by_budget = true;
	}
	pthread_mutex_lock(&l->lock);
	l->dl_module = e->module;
	l->dl_done = l->dl_total = 0;
	pthread_mutex_unlock(&l->lock);
	ret = sym_fetch_debuginfo(e->build_id, start + bound, &ops, &e->path);
	pthread_mutex_lock(&l->lock);
	l->dl_module = NULL;
	pthread_mutex_unlock(&l->lock);
	spent = now_ns() - start;
	l->budget_left_ns -= spent < l->budget_left_ns ? spent : l->budget_left_ns;
	e->err = ret;
	if (!ret)
		e->state = DL_FOUND;
	else if (ret == -ENOENT)
		e->state = DL_NOT_FOUND;
	else if (ret == -ETIME)
		e->state = by_budget ? DL_NO_BUDGET : DL_TIMED_OUT;
	else if (ret == -ECANCELED)
		e->state = DL_STOPPED;
	else
		e->state = DL_FAILED;
}

/* The next queued lookup, if the run's budget allows one. */
static void download_next(struct sym_live *l)
{
	size_t i;

	for (i = 0; i < l->n_dl; i++) {
		if (l->dl[i].state != DL_QUEUED)
			continue;
		if (!l->budget_left_ns) {
			l->dl[i].state = DL_NO_BUDGET;
			continue;
		}
		download(l, &l->dl[i]);
		return;
	}
}

/*
 * One look at the target: its perf map and, when discover, its modules
 * (whose local debuginfo check may read files: never on the way out).
 * Out of memory ends the watch.
 */
static int poll_once(struct sym_live *l, bool discover)
{
	int ret;

	if (execed(l)) {
		sym_perfmap_reset(l->perfmap);
		if (l->mods)
			proc_modules_unmap_all(l->mods);
	}
	/* Without a perf map or downloads there is nothing to read the maps for. */
	if (!l->mods && !sym_perfmap_exists(l->perfmap))
		return 0;
	if (proc_maps_read(l->o.pid, &l->maps) < 0)
		return 0;	/* gone: what was learned stays */
	ret = sym_perfmap_refresh(l->perfmap, &l->maps);
	if (ret < 0 || !l->mods || !discover)
		return ret;
	ret = proc_modules_update(l->mods, &l->maps);
	return ret < 0 ? ret : queue_new_modules(l);
}

static void *live_main(void *arg)
{
	struct sym_live *l = arg;
	struct timespec until;
	bool stop = false;

	while (!stop) {
		if (poll_once(l, true) < 0)
			break;
		if (l->mods && !stop_asked(l))
			download_next(l);
		clock_gettime(CLOCK_MONOTONIC, &until);
		until.tv_nsec += (long)POLL_NS;
		if (until.tv_nsec >= 1000000000L) {
			until.tv_sec++;
			until.tv_nsec -= 1000000000L;
		}
		pthread_mutex_lock(&l->lock);
		while (!l->stop && pthread_cond_timedwait(&l->wake, &l->lock, &until) != ETIMEDOUT)
			;
		stop = l->stop;
		pthread_mutex_unlock(&l->lock);
	}
	return NULL;
}

int sym_live_start(struct sym_live **out, const struct sym_live_opts *o)
{
	pthread_condattr_t ca;
	struct sym_live *l;
	sigset_t all, old;
	int ret;

	l = calloc(1, sizeof(*l));
	if (!l)
		return -ENOMEM;
	l->o = *o;
	l->exec_fd = -1;
	l->budget_left_ns = o->debuginfod_budget_ns;
	ret = sym_perfmap_create(&l->perfmap, o->pid);
	if (ret < 0)
		goto free_live;
	if (o->debuginfod && sym_fetch_configured()) {
		ret = proc_modules_create(&l->mods, o->pid);
		if (ret < 0)
			goto free_perfmap;
	}
	pthread_mutex_init(&l->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&l->wake, &ca);
	pthread_condattr_destroy(&ca);
	/* Signals are the session's business, not this thread's. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	ret = -pthread_create(&l->thread, NULL, live_main, l);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (ret < 0)
		goto destroy_sync;
#ifdef HAVE_PTHREAD_SETNAME_NP
	pthread_setname_np(l->thread, "cprof-live");	/* to tell its cost in top -H */
#endif
	l->running = true;
	*out = l;
	return 0;

destroy_sync:
	pthread_cond_destroy(&l->wake);
	pthread_mutex_destroy(&l->lock);
	proc_modules_destroy(l->mods);
free_perfmap:
	sym_perfmap_destroy(l->perfmap);
free_live:
	free(l);
	return ret;
}

void sym_live_stop(struct sym_live *l)
{
	struct timespec until;
	size_t i;

	if (!l || !l->running)
		return;
	pthread_mutex_lock(&l->lock);
	l->stop = true;
	pthread_cond_signal(&l->wake);
	pthread_mutex_unlock(&l->lock);
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += STOP_WAIT_S;
	l->running = false;
	if (pthread_timedjoin_np(l->thread, NULL, &until) != 0) {
		/* The profile is not to wait: what the thread holds stays its own. */
		pthread_detach(l->thread);
		l->abandoned = true;
		return;
	}
	/* what the runtime wrote since the last poll; no new downloads */
	poll_once(l, false);
	for (i = 0; i < l->n_dl; i++)
		if (l->dl[i].state == DL_QUEUED)
			l->dl[i].state = l->budget_left_ns ? DL_STOPPED : DL_NO_BUDGET;
}

void sym_live_destroy(struct sym_live *l)
{
	size_t i;

	if (!l)
		return;
	sym_live_stop(l);
	if (l->abandoned)
		return;		/* still in use by its thread, until the process exits */
	if (l->exec_fd >= 0)
		close(l->exec_fd);
	for (i = 0; i < l->n_dl; i++) {
		free(l->dl[i].build_id);
		free(l->dl[i].module);
		free(l->dl[i].path);
	}
	free(l->dl);
	proc_modules_destroy(l->mods);
	proc_maps_free(&l->maps);
	sym_perfmap_destroy(l->perfmap);
	pthread_cond_destroy(&l->wake);
	pthread_mutex_destroy(&l->lock);
	free(l);
}

static const char *downloaded(void *arg, const char *build_id)
{
	const struct dl_entry *e = find_dl(arg, build_id);

	return e && e->state == DL_FOUND ? e->path : NULL;
}

void sym_live_apply(struct sym_live *l, struct sym_ctx *ctx)
{
	if (!l || l->abandoned)
		return;
	sym_use_perfmap(ctx, l->perfmap);
	if (l->n_dl)
		sym_use_debuginfo(ctx, downloaded, l);
}

bool sym_live_download_status(struct sym_live *l, char *buf, size_t len)
{
	const char *base;
	bool on;

	if (!l)
		return false;
	pthread_mutex_lock(&l->lock);
	on = l->dl_module;
	if (on) {
		base = strrchr(l->dl_module, '/');
		base = base ? base + 1 : l->dl_module;
		if (l->dl_total > 0)
			snprintf(buf, len, "debuginfo of %s: %.1f of %.1f MB", base,
				 (double)l->dl_done / 1e6, (double)l->dl_total / 1e6);
		else
			snprintf(buf, len, "debuginfo of %s: waiting for the server", base);
	}
	pthread_mutex_unlock(&l->lock);
	return on;
}

static void describe(const struct sym_live *l, struct dl_entry *e)
{
	switch (e->state) {
	case DL_NOT_FOUND:
		snprintf(e->why, sizeof(e->why), "the debuginfod servers do not have it");
		break;
	case DL_TIMED_OUT:
		snprintf(e->why, sizeof(e->why), "no answer from the debuginfod servers within %.0f s",
			 (double)l->o.debuginfod_timeout_ns / 1e9);
		break;
	case DL_NO_BUDGET:
		snprintf(e->why, sizeof(e->why), "the %.0f s debuginfod budget of the run was spent",
			 (double)l->o.debuginfod_budget_ns / 1e9);
		break;
	case DL_STOPPED:
		snprintf(e->why, sizeof(e->why), "sampling ended before its download did");
		break;
	default:
		snprintf(e->why, sizeof(e->why), "debuginfod: %s", strerror(-e->err));
		break;
	}
}

bool sym_live_missing(const struct sym_live *l, size_t i, const char **module,
		      const char **build_id, const char **why)
{
	size_t k;

	if (!l || l->abandoned)
		return false;
	for (k = 0; k < l->n_dl; k++) {
		if (l->dl[k].state == DL_FOUND)
			continue;
		if (i--)
			continue;
		describe(l, &l->dl[k]);
		*module = l->dl[k].module;
		*build_id = l->dl[k].build_id;
		*why = l->dl[k].why;
		return true;
	}
	return false;
}
