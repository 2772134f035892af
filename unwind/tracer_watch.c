/* SPDX-License-Identifier: MIT */
/*
 * A tracer that watches instead of seizing (TRACER_WATCH): its threads
 * are listed from /proc and kept in the same table, their births, exits
 * and execs told by whoever learns them (the perf source, from the
 * kernel's records in its rings), so that nothing stops the target while
 * the kernel samples it: a seized thread stops at every signal it
 * receives until the tracer passes it on.  tracer_seize_all turns it into
 * a seizing tracer when stops are needed after all.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "process/procfs.h"
#include "unwind/tracer-impl.h"

bool tracer_watching(const struct tracer *t)
{
	return (t->flags & TRACER_WATCH) != 0;
}

/* Whether the process's memory may be read as a tracer's may (the
 * unwinder reads its code): 0, or -EPERM as a seize would answer. */
static int may_trace(pid_t pid)
{
	char path[64];
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/mem", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == EACCES || errno == EPERM ? -EPERM : -errno;
	close(fd);
	return 0;
}

/* The threads of process pid not watched yet, added; *added counts
 * them.  Returns 0 or -errno. */
static int watch_process(struct tracer *t, pid_t pid, int *added)
{
	pid_t *tids;
	size_t i, n;
	int ret;

	ret = procfs_list_tasks(pid, &tids, &n);
	if (ret < 0)
		return ret;
	for (i = 0; i < n; i++) {
		if (tracer_lookup(t, tids[i], NULL))
			continue;
		if (!tracer_add_thread(t, tids[i], pid, false)) {
			free(tids);
			return -ENOMEM;
		}
		(*added)++;
	}
	free(tids);
	return 0;
}

/* TRACER_DESCENDANTS: the children of every process watched, from
 * /proc/PID/task/TID/children, and theirs (the table is walked by index,
 * so the processes added here are searched too).  A child gone, or not
 * ours to read (a setuid program), is left alone, as a seize leaves it. */
static int watch_descendants(struct tracer *t, int *added)
{
	pid_t *kids;
	size_t i, k, n;
	int ret = 0;

	for (i = 0; i < t->n_threads && ret != -ENOMEM; i++) {
		const struct tracer_thread *th = t->threads[i];

		if (th->tid != th->tgid || procfs_list_children(th->tgid, &kids, &n) < 0)
			continue;
		for (k = 0; k < n && ret != -ENOMEM; k++) {
			if (tracer_lookup(t, kids[k], NULL) || may_trace(kids[k]) < 0)
				continue;
			ret = watch_process(t, kids[k], added);
		}
		free(kids);
	}
	return ret == -ENOMEM ? ret : 0;
}

int tracer_watch_rescan(struct tracer *t)
{
	int ret, added = 0;

	ret = watch_process(t, t->pid, &added);
	if (ret == 0 && (t->flags & TRACER_DESCENDANTS))
		ret = watch_descendants(t, &added);
	return ret < 0 ? ret : added;
}

int tracer_watch_start(struct tracer *t)
{
	long fd = syscall(SYS_pidfd_open, t->pid, 0);
	int ret;

	/* (without pidfds, the root's exit is known from its threads'
	 * exits alone) */
	if (fd < 0 && errno == ESRCH)
		return -ESRCH;
	t->pidfd = fd < 0 ? -1 : (int)fd;
	ret = may_trace(t->pid);
	if (ret < 0)
		return ret == -ENOENT ? -ESRCH : ret;
	ret = tracer_watch_rescan(t);
	if (ret == 0)
		return -ESRCH;
	return ret < 0 ? ret : 0;
}

void tracer_watch_exited(struct tracer *t)
{
	t->root_exited = true;
	close(t->pidfd);
	t->pidfd = -1;
}

int tracer_seize_all(struct tracer *t)
{
	size_t i = 0;
	int ret;

	if (!tracer_watching(t))
		return 0;
	t->flags &= ~(unsigned)TRACER_WATCH;
	/* The processes the rings told of are seized with the root's; those
	 * born since the rings were read are found as --children finds
	 * them, and from now on ptrace follows the tree. */
	if (t->flags & TRACER_FOLLOW)
		t->flags |= TRACER_DESCENDANTS;
	ret = tracer_seize_threads(t);
	if (ret < 0)
		return ret;
	/* A thread still only watched is gone (its exit will come from no
	 * ring now), or not ours to seize: forgotten. */
	while (i < t->n_threads) {
		if (t->threads[i]->seized)
			i++;
		else
			tracer_remove_thread(t, i);
	}
	return 0;
}

struct tracer_thread *tracer_watch_birth(struct tracer *t, pid_t tid, pid_t tgid)
{
	struct tracer_thread *th = tracer_lookup(t, tid, NULL);

	if (th || t->root_exited ||
	    (tgid != t->pid && !(t->flags & (TRACER_FOLLOW | TRACER_DESCENDANTS))))
		return th;
	return tracer_add_thread(t, tid, tgid, false);
}

void tracer_watch_exit(struct tracer *t, pid_t tid)
{
	tracer_forget_tid(t, tid);
}

void tracer_watch_exec(struct tracer *t, pid_t pid)
{
	struct tracer_thread *leader;
	size_t i = 0;

	/* The thread that called it took the leader's tid (execve(2)): known
	 * first, so that the process never is left without a thread (the
	 * session would take it for gone), since a thread of the new image
	 * may be known already (its sample read before the exec applied). */
	leader = tracer_watch_birth(t, pid, pid);
	/* The exec ended every other thread of the process. */
	while (i < t->n_threads) {
		struct tracer_thread *th = t->threads[i];

		if (th->tgid == pid && th->tid != pid)
			tracer_remove_thread(t, i);
		else
			i++;
	}
	if (!leader)
		return;
	t->stats.execs++;
	if (t->ops && t->ops->on_exec)
		t->ops->on_exec(t, pid, t->arg);
}
