/* SPDX-License-Identifier: MIT */
/* Seizing every thread of a process (and its descendants) for a tracer. */
#include "config.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/ptrace.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "lib/clock.h"
#include "process/procfs.h"
#include "unwind/tracer-impl.h"

#define SEIZE_OPTIONS (PTRACE_O_TRACECLONE | PTRACE_O_TRACEEXEC)
/* Auto-attached children inherit these: a child of a followed process is
 * followed too, from its first instruction. */
#define FOLLOW_OPTIONS (SEIZE_OPTIONS | PTRACE_O_TRACEFORK | PTRACE_O_TRACEVFORK)


/* A thread is ours when /proc says its tracer is this thread (ptrace is
 * per thread, and cprof traces from a thread of its own): threads
 * auto-attached through PTRACE_O_TRACECLONE answer EPERM to a second seize. */
static bool traced_by_us(pid_t tid)
{
	long tracer;

	if (procfs_status_field(tid, "TracerPid", &tracer) < 0)
		return false;
	return tracer == (long)gettid();
}

/* A thread that is exiting answers EPERM too (it is a zombie until its
 * exit is reaped), and so does one that has gone. */
static bool exiting(pid_t tid)
{
	struct procfs_stat st;
	int fd = procfs_open_thread(tid, "stat"), ret;

	if (fd < 0)
		return true;
	ret = procfs_read_stat(fd, &st);
	close(fd);
	return ret < 0 || st.state == 'Z' || st.state == 'X';
}

/*
 * One pass over /proc/PID/task of process pid; *added counts newly seized
 * threads.  A descendant (not the root) that cannot be seized is left
 * alone: it is gone, or not ours to trace (a setuid program).
 */
static int seize_pass(struct tracer *t, pid_t pid, size_t *added)
{
	pid_t *tids;
	size_t n, i;
	int ret;

	ret = procfs_list_tasks(pid, &tids, &n);
	if (ret < 0)
		return pid == t->pid ? ret : 0;
	for (i = 0; i < n; i++) {
		pid_t tid = tids[i];
		struct tracer_thread *known = tracer_lookup(t, tid, NULL);

		if (known && known->seized)
			continue;
		if (ptrace(PTRACE_SEIZE, tid, NULL, (void *)t->options) < 0) {
			int e = errno;

			if (e == ESRCH)
				continue;	/* exiting: drop quietly */
			if (e == EPERM && traced_by_us(tid)) {
				/* Auto-attached by a clone we already trace. */
			} else if (e == EPERM && tid != t->pid && exiting(tid)) {
				continue;	/* drop quietly */
			} else if (pid != t->pid) {
				continue;	/* a descendant we may not trace */
			} else {
				free(tids);
				return -e;
			}
		}
		if (known)
			known->seized = true;
		else
			known = tracer_add_thread(t, tid, pid, true);
		if (!known) {
			free(tids);
			return -ENOMEM;
		}
		(*added)++;
	}
	free(tids);
	return 0;
}

/* Whether some traced thread belongs to process pid. */
static bool process_known(const struct tracer *t, pid_t pid)
{
	size_t i;

	for (i = 0; i < t->n_threads; i++) {
		if (t->threads[i]->tgid == pid)
			return true;
	}
	return false;
}

/* The children of every traced process not traced yet, seized (see
 * TRACER_DESCENDANTS); *added counts the new threads. */
static int seize_children(struct tracer *t, size_t *added)
{
	pid_t *kids;
	size_t i, k, n;
	int ret;

	/* By index: the processes seized here are searched as well. */
	for (i = 0; i < t->n_threads; i++) {
		const struct tracer_thread *th = t->threads[i];

		if (th->tid != th->tgid || procfs_list_children(th->tgid, &kids, &n) < 0)
			continue;
		for (k = 0; k < n; k++) {
			if (process_known(t, kids[k]))
				continue;
			ret = seize_pass(t, kids[k], added);
			if (ret < 0) {
				free(kids);
				return ret;
			}
		}
		free(kids);
	}
	return 0;
}

/* The processes of descendants the tracer watched (TRACER_WATCH), seized
 * with their threads not seized yet; *added counts them. */
static int seize_watched(struct tracer *t, size_t *added)
{
	size_t i;
	int ret;

	for (i = 0; i < t->n_threads; i++) {
		const struct tracer_thread *th = t->threads[i];

		if (th->seized || th->tgid == t->pid)
			continue;
		ret = seize_pass(t, th->tgid, added);
		if (ret < 0)
			return ret;
	}
	return 0;
}

int tracer_seize_thread(struct tracer *t, struct tracer_thread *th)
{
	if (th->seized)
		return 0;
	if (ptrace(PTRACE_SEIZE, th->tid, NULL, (void *)t->options) < 0)
		return -errno;
	th->seized = true;
	return 0;
}

int tracer_seize_threads(struct tracer *t)
{
	struct tracer_thread *leader = tracer_lookup(t, t->pid, NULL);
	size_t added;
	int ret, quiet_passes = 0;

	/* The leader first: its failure is the one to report. */
	if (!leader || !leader->seized) {
		if (ptrace(PTRACE_SEIZE, t->pid, NULL, (void *)t->options) < 0)
			return -errno;
		if (leader)
			leader->seized = true;
		else
			leader = tracer_add_thread(t, t->pid, t->pid, true);
		if (!leader)
			return -ENOMEM;
	}
	/* Rescan until two passes find nothing new, as gdb does: a thread may
	 * be created between reading the directory and seizing its parent. */
	while (quiet_passes < 2) {
		added = 0;
		ret = seize_pass(t, t->pid, &added);
		if (ret == 0 && (t->flags & TRACER_DESCENDANTS))
			ret = seize_watched(t, &added);
		if (ret == 0 && (t->flags & TRACER_DESCENDANTS))
			ret = seize_children(t, &added);
		if (ret < 0)
			return ret;
		quiet_passes = added ? 0 : quiet_passes + 1;
	}
	return 0;
}

/* Seizes every thread of pid (and its descendants'); see tracer_run_tree. */
int tracer_attach(struct tracer **out, pid_t pid, unsigned flags,
			 const struct tracer_ops *ops, void *arg)
{
	struct tracer *t;
	sigset_t mask;
	int ret;

	t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	t->pid = pid;
	t->self_sched_fd = -1;
	t->pidfd = -1;
	t->flags = flags;
	t->options = flags & (TRACER_FOLLOW | TRACER_DESCENDANTS) ? FOLLOW_OPTIONS : SEIZE_OPTIONS;
	procfs_fdcache_init(&t->fds, pid);
	t->ops = ops;
	t->arg = arg;
	t->look_ns = cprof_now_ns();

	sigemptyset(&mask);
	sigaddset(&mask, SIGCHLD);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGHUP);
	if (sigprocmask(SIG_BLOCK, &mask, NULL) < 0) {
		ret = -errno;
		goto err_free;
	}
	t->sigfd = signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
	if (t->sigfd < 0) {
		ret = -errno;
		goto err_free;
	}

	if (flags & TRACER_WATCH) {
		ret = tracer_watch_start(t);
		if (ret < 0)
			goto err_detach;
	} else {
		ret = tracer_seize_threads(t);
		if (ret < 0)
			goto err_detach;
	}
	/* Without it (no schedstat), stops count from a bound farther back. */
	t->self_sched_fd = procfs_open_thread(gettid(), "schedstat");
	if (t->self_sched_fd >= 0) {
		struct procfs_sched sc;

		if (procfs_read_sched(t->self_sched_fd, &sc) == 0) {
			t->self_wait_ns = sc.wait_ns;
		} else {
			close(t->self_sched_fd);
			t->self_sched_fd = -1;
		}
	}
	*out = t;
	return 0;

err_detach:
	/* The caller's thread exits after a failed attach, releasing these. */
	tracer_release(t, NULL);
	return ret;
err_free:
	free(t);
	return ret;
}
