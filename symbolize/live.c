/* SPDX-License-Identifier: MIT */
/* The watcher thread: polls the target's maps and perf map, notices exec. */
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

#include "process/maps.h"
#include "symbolize/live.h"

/* How often the maps and the perf map are looked at. */
#define POLL_NS 200000000ull

struct sym_live {
	struct sym_live_opts o;
	pthread_t thread;
	bool running;
	pthread_mutex_t lock;
	pthread_cond_t wake;
	bool stop;			/* under lock */
	int exec_fd;			/* /proc/PID/maps opened before the last exec check */
	struct proc_maps maps;
	struct sym_perfmap *perfmap;
};

/*
 * An open /proc/PID/maps stays bound to the address space it was opened on:
 * once the target execs (or exits), reading it gives nothing.  Returns true
 * when that happened since the last call (the first call opens it).
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

/* One look at the target.  Out of memory ends the watch (the caller says so). */
static int poll_once(struct sym_live *l)
{
	if (execed(l))
		sym_perfmap_reset(l->perfmap);
	if (proc_maps_read(l->o.pid, &l->maps) < 0)
		return 0;	/* gone: what was learned stays */
	return sym_perfmap_refresh(l->perfmap, &l->maps);
}

static void *live_main(void *arg)
{
	struct sym_live *l = arg;
	struct timespec until;
	bool stop = false;

	while (!stop) {
		if (poll_once(l) < 0)
			break;
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
	ret = sym_perfmap_create(&l->perfmap, o->pid);
	if (ret < 0)
		goto free_live;
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
	l->running = true;
	*out = l;
	return 0;

destroy_sync:
	pthread_cond_destroy(&l->wake);
	pthread_mutex_destroy(&l->lock);
	sym_perfmap_destroy(l->perfmap);
free_live:
	free(l);
	return ret;
}

void sym_live_stop(struct sym_live *l)
{
	if (!l || !l->running)
		return;
	pthread_mutex_lock(&l->lock);
	l->stop = true;
	pthread_cond_signal(&l->wake);
	pthread_mutex_unlock(&l->lock);
	pthread_join(l->thread, NULL);
	l->running = false;
	/* what the runtime wrote since the last poll */
	poll_once(l);
}

void sym_live_destroy(struct sym_live *l)
{
	if (!l)
		return;
	sym_live_stop(l);
	if (l->exec_fd >= 0)
		close(l->exec_fd);
	proc_maps_free(&l->maps);
	sym_perfmap_destroy(l->perfmap);
	pthread_cond_destroy(&l->wake);
	pthread_mutex_destroy(&l->lock);
	free(l);
}

struct sym_perfmap *sym_live_perfmap(struct sym_live *l)
{
	return l ? l->perfmap : NULL;
}
