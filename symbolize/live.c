/* SPDX-License-Identifier: MIT */
/* The watcher thread: polls the maps and perf maps of the target's processes, notices exec,
 * downloads debuginfo. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
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

/* One process of the tree, as the thread follows it. */
struct live_proc {
	pid_t pid;
	bool gone;		/* exited: nothing more to read, what was learned stays */
	bool before_exec;	/* still a copy of cprof (opts.from_exec): not read */
	int exec_fd;		/* /proc/PID/maps opened before the last exec check */
	struct proc_maps maps;
	struct sym_perfmap *perfmap;
	struct proc_modules *mods;	/* over l->store; NULL: downloads are off */
};

/*
 * Who touches what: the thread owns procs and dl and is their only writer;
 * others read them (JIT names, downloaded files) under names_lock, which
 * the thread takes to change them.  stop, added, generation and the
 * download's status are under lock.
 */
struct sym_live {
	struct sym_live_opts o;
	pthread_t thread;
	bool running;
	bool abandoned;			/* stop gave up waiting: l is the thread's */
	pthread_mutex_t lock;
	pthread_mutex_t names_lock;
	pthread_cond_t wake;
	bool stop;
	pid_t *added;			/* processes to follow from the next poll on */
	size_t n_added, cap_added;
	uint64_t generation;		/* bumped when names or files were learned */
	struct live_proc *procs;	/* procs[0] is o.pid */
	size_t n_procs, cap_procs;

	/* debuginfod */
	struct proc_modules *store;	/* the tree's modules; NULL: downloads are off */
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

static void bump_generation(struct sym_live *l)
{
	pthread_mutex_lock(&l->lock);
	l->generation++;
	pthread_mutex_unlock(&l->lock);
}

/*
 * An open /proc/PID/maps stays bound to the address space it was opened on:
 * once the process execs (or exits), reading it gives nothing.  Returns true
 * when a new address space replaced the one of the last call; a process
 * that is no more is marked gone.
 */
static bool execed(struct live_proc *p)
{
	char path[64], c;
	int fd;

	if (p->exec_fd >= 0 && pread(p->exec_fd, &c, 1, 0) == 1)
		return false;
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)p->pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 && (errno == ENOENT || errno == ESRCH))
		p->gone = true;
	/* an exited process (or a zombie) has no new address space: no exec */
	if (fd < 0 || pread(fd, &c, 1, 0) != 1) {
		if (fd >= 0)
			close(fd);
		return false;
	}
	if (p->exec_fd < 0) {
		p->exec_fd = fd;
		return false;
	}
	close(p->exec_fd);
	p->exec_fd = fd;
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

/* Appends a queued lookup of m's debuginfo (the caller holds names_lock). */
static int queue_module(struct sym_live *l, const struct proc_module *m)
{
	struct dl_entry *e;

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
	return 0;
}

/* Queues the modules found since the last call, in any process of the
 * tree, that have no debuginfo here. */
static int queue_new_modules(struct sym_live *l)
{
	const struct proc_module *m;
	size_t n = proc_modules_count(l->store);
	int ret;

	for (; l->mods_seen < n; l->mods_seen++) {
		m = proc_modules_get(l->store, (uint32_t)l->mods_seen + 1);
		if (!m || !m->build_id || m->fd < 0 || m->is_vdso || find_dl(l, m->build_id))
			continue;
		if (sym_debuginfo_local(m->file, m->open_path ? m->open_path : m->path, m->build_id))
			continue;
		pthread_mutex_lock(&l->names_lock);
		ret = queue_module(l, m);
		pthread_mutex_unlock(&l->names_lock);
		if (ret < 0)
			return ret;
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
	enum dl_state state;
	char *path = NULL;
	int ret;

	if (l->budget_left_ns < bound) {
		bound = l->budget_left_ns;
		by_budget = true;
	}
	pthread_mutex_lock(&l->lock);
	l->dl_module = e->module;
	l->dl_done = l->dl_total = 0;
	pthread_mutex_unlock(&l->lock);
	ret = sym_fetch_debuginfo(e->build_id, start + bound, &ops, &path);
	pthread_mutex_lock(&l->lock);
	l->dl_module = NULL;
	if (!ret)
		l->generation++;
	pthread_mutex_unlock(&l->lock);
	spent = now_ns() - start;
	l->budget_left_ns -= spent < l->budget_left_ns ? spent : l->budget_left_ns;
	e->err = ret;
	if (!ret)
		state = DL_FOUND;
	else if (ret == -ENOENT)
		state = DL_NOT_FOUND;
	else if (ret == -ETIME)
		state = by_budget ? DL_NO_BUDGET : DL_TIMED_OUT;
	else if (ret == -ECANCELED)
		state = DL_STOPPED;
	else
		state = DL_FAILED;
	pthread_mutex_lock(&l->names_lock);
	e->path = path;
	e->state = state;
	pthread_mutex_unlock(&l->names_lock);
}

/* The next queued lookup, if the run's budget allows one. */
static void download_next(struct sym_live *l)
{
	size_t i;

	for (i = 0; i < l->n_dl; i++) {
		if (l->dl[i].state != DL_QUEUED)
			continue;
		if (!l->budget_left_ns) {
			pthread_mutex_lock(&l->names_lock);
			l->dl[i].state = DL_NO_BUDGET;
			pthread_mutex_unlock(&l->names_lock);
			continue;
		}
		download(l, &l->dl[i]);
		return;
	}
}

/* Follows pid from now on (the caller holds names_lock). */
static int follow(struct sym_live *l, pid_t pid)
{
	struct live_proc *p;
	int ret;

	ret = cprof_grow(&l->procs, &l->cap_procs, l->n_procs + 1, sizeof(*l->procs), 8);
	if (ret < 0)
		return ret;
	p = &l->procs[l->n_procs];
	memset(p, 0, sizeof(*p));
	p->pid = pid;
	p->exec_fd = -1;
	ret = sym_perfmap_create(&p->perfmap, pid, l->o.helper);
	if (ret < 0)
		return ret;
	if (l->store && l->n_procs)
		ret = proc_modules_create_shared(&p->mods, pid, l->store);
	else
		p->mods = l->store;
	if (ret < 0) {
		sym_perfmap_destroy(p->perfmap);
		return ret;
	}
	l->n_procs++;
	return 0;
}

/* Whether pid is followed now (a pid reused after its process left is not). */
static bool followed(const struct sym_live *l, pid_t pid)
{
	size_t i;

	for (i = 0; i < l->n_procs; i++)
		if (l->procs[i].pid == pid && !l->procs[i].gone)
			return true;
	return false;
}

/* Whether pid still runs cprof's own executable: record's child until it
 * execs the command, whose modules are not the profile's. */
static bool runs_cprof(pid_t pid)
{
	struct stat a, b;
	char path[64];

	snprintf(path, sizeof(path), "/proc/%d/exe", (int)pid);
	return stat(path, &a) == 0 && stat("/proc/self/exe", &b) == 0 && a.st_dev == b.st_dev &&
	       a.st_ino == b.st_ino;
}

/* Starts following the processes sym_live_add_process named. */
static int follow_added(struct sym_live *l)
{
	pid_t pid;
	int ret = 0;

	pthread_mutex_lock(&l->lock);
	while (l->n_added && ret == 0) {
		pid = l->added[--l->n_added];
		pthread_mutex_unlock(&l->lock);
		if (!followed(l, pid)) {
			pthread_mutex_lock(&l->names_lock);
			ret = follow(l, pid);
			pthread_mutex_unlock(&l->names_lock);
		}
		pthread_mutex_lock(&l->lock);
	}
	pthread_mutex_unlock(&l->lock);
	return ret;
}

/* A process that left: what it holds open goes, what was learned stays. */
static void let_go(struct live_proc *p)
{
	if (p->exec_fd >= 0)
		close(p->exec_fd);
	p->exec_fd = -1;
	proc_maps_free(&p->maps);
}

/*
 * One look at process p: its perf map and, when discover, its modules
 * (whose local debuginfo check may read files: never on the way out).
 * Returns 1 when names were learned, 0, or -ENOMEM.
 */
static int poll_proc(struct sym_live *l, struct live_proc *p, bool discover)
{
	size_t before;
	int ret;

	if (execed(p)) {
		pthread_mutex_lock(&l->names_lock);
		sym_perfmap_reset(p->perfmap);
		pthread_mutex_unlock(&l->names_lock);
		if (p->mods)
			proc_modules_unmap_all(p->mods);
		p->before_exec = false;
	}
	if (p->gone) {
		let_go(p);
		return 0;
	}
	if (p->before_exec && runs_cprof(p->pid))
		return 0;
	p->before_exec = false;
	/* Without a perf map or downloads there is nothing to read the maps for. */
	if (!p->mods && !sym_perfmap_exists(p->perfmap))
		return 0;
	if (proc_maps_read(p->pid, &p->maps) < 0)
		return 0;	/* gone: what was learned stays */
	pthread_mutex_lock(&l->names_lock);
	before = sym_perfmap_entries(p->perfmap);
	ret = sym_perfmap_refresh(p->perfmap, &p->maps);
	if (ret == 0 && sym_perfmap_entries(p->perfmap) != before)
		ret = 1;
	pthread_mutex_unlock(&l->names_lock);
	if (ret < 0 || !p->mods || !discover)
		return ret;
	if (proc_modules_update(p->mods, &p->maps) < 0)
		return -ENOMEM;
	return queue_new_modules(l) < 0 ? -ENOMEM : ret;
}

/* One look at every process followed.  Out of memory ends the watch. */
static int poll_once(struct sym_live *l, bool discover)
{
	bool learned = false;
	size_t i;
	int ret;

	ret = follow_added(l);
	for (i = 0; i < l->n_procs && ret >= 0; i++) {
		if (l->procs[i].gone)
			continue;
		ret = poll_proc(l, &l->procs[i], discover);
		learned |= ret > 0;
	}
	if (learned)
		bump_generation(l);
	return ret < 0 ? ret : 0;
}

static void *live_main(void *arg)
{
	struct sym_live *l = arg;
	struct timespec until;
	bool stop = false;

#ifdef HAVE_PTHREAD_SETNAME_NP
	/* To tell its cost in top -H.  Named by itself: naming it from another
	 * thread writes /proc/self/task/TID/comm, an entry its exit would have
	 * to free (see procfs_open_thread). */
	pthread_setname_np(pthread_self(), "cprof-live");
#endif
	while (!stop) {
		if (poll_once(l, true) < 0)
			break;
		if (l->store && !stop_asked(l))
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

/* Frees what l holds but the thread's synchronization. */
static void free_state(struct sym_live *l)
{
	size_t i;

	for (i = 0; i < l->n_procs; i++) {
		let_go(&l->procs[i]);
		/* the shared tables go before the store they live in */
		if (i)
			proc_modules_destroy(l->procs[i].mods);
		sym_perfmap_destroy(l->procs[i].perfmap);
	}
	free(l->procs);
	proc_modules_destroy(l->store);
	for (i = 0; i < l->n_dl; i++) {
		free(l->dl[i].build_id);
		free(l->dl[i].module);
		free(l->dl[i].path);
	}
	free(l->dl);
	free(l->added);
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
	l->budget_left_ns = o->debuginfod_budget_ns;
	if (o->debuginfod && sym_fetch_configured()) {
		ret = proc_modules_create(&l->store, o->pid);
		if (ret < 0)
			goto free_live;
	}
	ret = follow(l, o->pid);
	if (ret < 0)
		goto free_live;
	l->procs[0].before_exec = o->from_exec;
	pthread_mutex_init(&l->lock, NULL);
	pthread_mutex_init(&l->names_lock, NULL);
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
	l->running = true;
	*out = l;
	return 0;

destroy_sync:
	pthread_cond_destroy(&l->wake);
	pthread_mutex_destroy(&l->names_lock);
	pthread_mutex_destroy(&l->lock);
free_live:
	free_state(l);
	free(l);
	return ret;
}

int sym_live_add_process(struct sym_live *l, pid_t pid)
{
	int ret = 0;

	if (!l)
		return 0;
	pthread_mutex_lock(&l->lock);
	if (l->running)
		ret = cprof_grow(&l->added, &l->cap_added, l->n_added + 1, sizeof(*l->added), 8);
	if (l->running && ret == 0)
		l->added[l->n_added++] = pid;
	pthread_mutex_unlock(&l->lock);
	return ret;
}

uint64_t sym_live_generation(struct sym_live *l)
{
	uint64_t g;

	if (!l)
		return 0;
	pthread_mutex_lock(&l->lock);
	g = l->generation;
	pthread_mutex_unlock(&l->lock);
	return g;
}

void sym_live_stop(struct sym_live *l)
{
	struct timespec until;
	size_t i;

	if (!l || !l->running)
		return;
	pthread_mutex_lock(&l->lock);
	l->stop = true;
	l->running = false;	/* no process is added from now on */
	pthread_cond_signal(&l->wake);
	pthread_mutex_unlock(&l->lock);
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += STOP_WAIT_S;
	if (pthread_timedjoin_np(l->thread, NULL, &until) != 0) {
		/* The profile is not to wait: what the thread holds stays its own. */
		pthread_detach(l->thread);
		l->abandoned = true;
		return;
	}
	/* what the runtimes wrote since the last poll; no new downloads */
	poll_once(l, false);
	for (i = 0; i < l->n_dl; i++)
		if (l->dl[i].state == DL_QUEUED)
			l->dl[i].state = l->budget_left_ns ? DL_STOPPED : DL_NO_BUDGET;
}

void sym_live_destroy(struct sym_live *l)
{
	if (!l)
		return;
	sym_live_stop(l);
	if (l->abandoned)
		return;		/* still in use by its thread, until the process exits */
	free_state(l);
	pthread_cond_destroy(&l->wake);
	pthread_mutex_destroy(&l->names_lock);
	pthread_mutex_destroy(&l->lock);
	free(l);
}

/* The name of JIT code at addr from the perf map of the process whose
 * anonymous code holds it. */
static bool jit_name(void *arg, uint64_t addr, char *buf, size_t len)
{
	struct sym_live *l = arg;
	bool found = false;
	size_t i;

	pthread_mutex_lock(&l->names_lock);
	for (i = 0; i < l->n_procs && !found; i++)
		found = sym_perfmap_name(l->procs[i].perfmap, addr, buf, len);
	pthread_mutex_unlock(&l->names_lock);
	return found;
}

/* A downloaded file's path: it stays until l is destroyed. */
static const char *downloaded(void *arg, const char *build_id)
{
	struct sym_live *l = arg;
	const struct dl_entry *e;
	const char *path;

	pthread_mutex_lock(&l->names_lock);
	e = find_dl(l, build_id);
	path = e && e->state == DL_FOUND ? e->path : NULL;
	pthread_mutex_unlock(&l->names_lock);
	return path;
}

void sym_live_apply(struct sym_live *l, struct sym_ctx *ctx)
{
	if (!l || l->abandoned)
		return;
	sym_use_jit_names(ctx, jit_name, l);
	if (l->store)
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
