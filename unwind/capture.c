/* SPDX-License-Identifier: MIT */
/* A consistent all-threads capture with the fewest and shortest stops. */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "lib/clock.h"
#include "unwind/capture.h"
#include "unwind/remote_client.h"
#include "unwind/tracer.h"

/* Rounds of "did a blocked thread run meanwhile?" before giving up on it. */
#define VALIDATE_ROUNDS 3
/* How long stops may take to arrive (a thread in uninterruptible sleep). */
#define STOP_WAIT_NS 1000000000ull

struct cap_priv {
	struct procfs_task task;	/* its /proc files, through cap_ctx.fds */
	struct procfs_sched sched;	/* before the blocked capture */
	bool want_stop;
};

struct cap_ctx {
	struct capture *c;
	const struct capture_opts *o;
	struct cap_priv *p;
	struct tracer *t;
	struct remote_unwinder *u;	/* walks here, or */
	struct remote_client *rc;	/* ... in the confined parser */
	struct procfs_fdcache fds;
	size_t frames_cap;		/* room in each thread's frames */
	struct py_stacks pys;		/* Python frames, read while nothing runs */
	int pys_err;
};

static int cmp_tid(const void *a, const void *b)
{
	pid_t x = *(const pid_t *)a, y = *(const pid_t *)b;

	return (x > y) - (x < y);
}

static bool wanted(const struct capture_opts *o, pid_t tid)
{
	size_t i;

	if (!o->only)
		return true;
	for (i = 0; i < o->n_only; i++)
		if (o->only[i] == tid)
			return true;
	return false;
}

static struct capture_thread *thread_of(struct cap_ctx *x, pid_t tid, size_t *index)
{
	size_t i;

	for (i = 0; i < x->c->n; i++) {
		if (x->c->threads[i].tid == tid) {
			*index = i;
			return &x->c->threads[i];
		}
	}
	return NULL;
}

static bool on_stop(struct tracer *t, struct tracer_thread *th, bool group_stopped, void *arg)
{
	struct cap_ctx *x = arg;
	struct capture_thread *ct;
	size_t i;
	int ret;

	ct = thread_of(x, th->tid, &i);
	if (!ct)
		return false;
	ret = snap_capture(&ct->snap, x->c->pid, th->tid, &th->regs, &x->c->maps);
	if (ret < 0) {
		ct->how = CAPTURE_NONE;
		ct->err = ret;
		return false;
	}
	ct->how = CAPTURE_STOPPED;
	ct->n_frames = 0;
	/* Held: nobody runs until everyone is captured. */
	return true;
}

static const struct tracer_ops cap_ops = {
	.on_stop = on_stop,
};

/* Lists, sorts (main thread first, then by tid) and opens the threads. */
static int list_threads(struct cap_ctx *x)
{
	struct capture *c = x->c;
	struct procfs_stat st;
	pid_t *tids;
	size_t n, i, k = 0;
	int ret;

	ret = procfs_list_tasks(c->pid, &tids, &n);
	if (ret < 0)
		return ret;
	qsort(tids, n, sizeof(*tids), cmp_tid);
	/* stat, schedstat and syscall of each thread are read again after
	 * the seize: keep them open if the file limit can be made to allow. */
	procfs_fdcache_budget(&x->fds, n * PROCFS_NFILES);
	c->threads = calloc(n ? n : 1, sizeof(*c->threads));
	x->p = calloc(n ? n : 1, sizeof(*x->p));
	if (!c->threads || !x->p) {
		free(tids);
		return -ENOMEM;
	}
	/* The main thread first (when it still exists), then by tid. */
	for (i = 0; i < n + 1; i++) {
		pid_t tid;
		struct capture_thread *ct;
		struct cap_priv *p;

		if (i == 0)
			tid = c->pid;
		else if (tids[i - 1] == c->pid)
			continue;
		else
			tid = tids[i - 1];
		if (!wanted(x->o, tid))
			continue;
		if (i == 0) {
			bool present = false;
			size_t j;

			for (j = 0; j < n; j++)
				present |= tids[j] == c->pid;
			if (!present)
				continue;
		}
		ct = &c->threads[k];
		p = &x->p[k];
		ct->tid = tid;
		ct->syscall_nr = -1;
		ct->how = CAPTURE_NONE;
		ct->err = -ESRCH;
		ret = snap_init(&ct->snap, x->o->stack_size);
		if (ret < 0)
			break;
		ct->frames = calloc(x->frames_cap, sizeof(*ct->frames));
		if (!ct->frames) {
			ret = -ENOMEM;
			break;
		}
		procfs_task_init(&p->task, tid);
		/* State and name as they were before anything was seized: a
		 * job-control-stopped thread reads 't' once traced. */
		if (procfs_task_stat(&x->fds, &p->task, &st) == 0) {
			ct->state = st.state;
			snprintf(ct->name, sizeof(ct->name), "%s", st.comm);
		}
		k++;
		c->n = k;
	}
	free(tids);
	return ret < 0 ? ret : 0;
}

/* Unwinds the threads captured as how: in the parser, in one call for
 * them all (as few as the shared area allows), or here. */
static int unwind_captured(struct cap_ctx *x, enum capture_how how)
{
	struct capture *c = x->c;
	const struct snap **snaps = NULL;
	struct remote_walk *walks = NULL;
	size_t i, n = 0;
	int ret = 0;

	if (!x->rc) {
		for (i = 0; i < c->n; i++) {
			struct capture_thread *ct = &c->threads[i];

			if (ct->how == how)
				ct->n_frames = remote_unwind(x->u, &ct->snap, ct->frames,
							     x->o->max_frames, &ct->end);
		}
		return 0;
	}
	snaps = calloc(c->n ? c->n : 1, sizeof(*snaps));
	walks = calloc(c->n ? c->n : 1, sizeof(*walks));
	if (!snaps || !walks) {
		ret = -ENOMEM;
		goto out;
	}
	for (i = 0; i < c->n; i++) {
		if (c->threads[i].how != how)
			continue;
		snaps[n] = &c->threads[i].snap;
		walks[n++].frames = c->threads[i].frames;
	}
	if (n)
		ret = remote_client_unwind(x->rc, snaps, walks, n, x->o->max_frames);
	if (ret > 0)
		ret = 0;	/* (the count walked in the parser) */
	for (i = 0, n = 0; !ret && i < c->n; i++) {
		if (c->threads[i].how != how)
			continue;
		c->threads[i].n_frames = walks[n].n_frames;
		c->threads[i].end = walks[n++].end;
	}
out:
	free(snaps);
	free(walks);
	return ret;
}

/* Phase one, nothing stopped: facts from /proc, and the stacks of the
 * threads that are blocked, read and unwound in place. */
static void read_blocked(struct cap_ctx *x)
{
	size_t i;

	for (i = 0; i < x->c->n; i++) {
		struct capture_thread *ct = &x->c->threads[i];
		struct cap_priv *p = &x->p[i];
		struct procfs_stat st;

		int fd;

		if (procfs_task_stat(&x->fds, &p->task, &st) < 0)
			continue;	/* gone: stays CAPTURE_NONE, -ESRCH */
		if (!ct->state) {
			snprintf(ct->name, sizeof(ct->name), "%s", st.comm);
			ct->state = st.state;
		}
		if (procfs_task_sched(&x->fds, &p->task, &p->sched) < 0)
			continue;
		ct->cpu_ns = p->sched.run_ns;
		ct->err = 0;
		/* Running, or not in a system call (e.g. job-control
		 * stopped at an arbitrary instruction): every register
		 * matters, so it is stopped instead. */
		if (st.state == 'R' || (fd = procfs_task_fd(&x->fds, &p->task, PROCFS_SYSCALL)) < 0 ||
		    snap_capture_in_place(&ct->snap, x->c->pid, ct->tid, fd, &x->c->maps,
					  &ct->syscall_nr) < 0) {
			p->want_stop = true;
			continue;
		}
		ct->how = CAPTURE_BLOCKED;
	}
	/* A walk that needed more than SP and PC: stopped instead. */
	if (unwind_captured(x, CAPTURE_BLOCKED) < 0)
		return;
	for (i = 0; i < x->c->n; i++) {
		struct capture_thread *ct = &x->c->threads[i];

		if (ct->how == CAPTURE_BLOCKED && ct->end == REMOTE_END_NEED_REGS) {
			ct->how = CAPTURE_NONE;
			x->p[i].want_stop = true;
		}
	}
}

/* A stop that does not come in time leaves its thread uncaptured; the
 * others are not held for it past STOP_WAIT_NS. */
static void wait_stops(struct cap_ctx *x)
{
	tracer_wait_stops(x->t, STOP_WAIT_NS);
}

static void interrupt_thread(struct cap_ctx *x, size_t i)
{
	struct tracer_thread *th = tracer_find_thread(x->t, x->c->threads[i].tid);

	if (th && tracer_interrupt(x->t, th) == 0)
		x->c->n_stopped++;
}

/* Interrupts every thread marked want_stop and waits for their stops: they
 * are held (on_stop).  Returns when the first was interrupted, 0 if none. */
static uint64_t stop_wanted(struct cap_ctx *x)
{
	uint64_t t0 = 0;
	size_t i;

	for (i = 0; i < x->c->n; i++) {
		if (!x->p[i].want_stop)
			continue;
		if (!t0)
			t0 = cprof_now_ns();
		interrupt_thread(x, i);
	}
	if (t0)
		wait_stops(x);
	return t0;
}

/* The threads read in place that ran since: their copies may mix two
 * moments, so they are marked to be stopped instead.  Returns how many. */
static size_t recheck_blocked(struct cap_ctx *x)
{
	size_t i, n = 0;

	for (i = 0; i < x->c->n; i++) {
		struct procfs_sched now;

		if (x->c->threads[i].how != CAPTURE_BLOCKED)
			continue;
		if (procfs_task_sched(&x->fds, &x->p[i].task, &now) == 0 &&
		    procfs_sched_same(&now, &x->p[i].sched))
			continue;
		x->c->threads[i].how = CAPTURE_NONE;
		x->p[i].want_stop = true;
		n++;
	}
	return n;
}

/* The Python frames of every thread, read while the running threads are
 * held and the others are blocked (re-checked afterwards). */
static void read_python(struct cap_ctx *x)
{
	uint64_t t0 = cprof_now_ns();

	if (!x->c->py)
		return;
	x->pys_err = py_read_stacks(x->c->py, &x->pys);
	x->c->py_read_ns = cprof_now_ns() - t0;
}

/*
 * Phase two.  First the quick way: stop the running threads together, copy
 * them, resume them together, and only then re-check the threads read in
 * place.  One that did not run between its read and the re-check was in
 * the same place at the instant the running ones were stopped, so if none
 * ran, the picture is one instant and the freeze lasted only the copies
 * (not the re-check of dozens of threads).  If some ran, start over the
 * sure way: stop the running threads and those again, and hold them while
 * the others are re-checked, until a re-check finds nobody ran.
 */
static void stop_phase(struct cap_ctx *x)
{
	struct capture *c = x->c;
	uint64_t t0, freeze;
	int round;

	t0 = stop_wanted(x);
	read_python(x);
	tracer_resume_held(x->t);
	freeze = t0 ? cprof_now_ns() - t0 : 0;
	if (!recheck_blocked(x)) {
		c->freeze_ns = freeze;
		return;
	}
	t0 = stop_wanted(x);
	for (round = 0; round < VALIDATE_ROUNDS; round++) {
		size_t i;

		if (!recheck_blocked(x))
			break;
		for (i = 0; i < c->n; i++)
			if (x->p[i].want_stop && c->threads[i].how == CAPTURE_NONE)
				interrupt_thread(x, i);
		wait_stops(x);
	}
	read_python(x);
	tracer_resume_held(x->t);
	if (t0 && cprof_now_ns() - t0 > freeze)
		freeze = cprof_now_ns() - t0;
	c->freeze_ns = freeze;
}

/* On the tracing thread, every thread seized (tracer_run). */
static int capture_main(struct tracer *t, void *arg)
{
	struct cap_ctx *x = arg;

	x->t = t;
	x->c->attached = true;
	tracer_set_spin(t, 1000000);
	read_blocked(x);
	stop_phase(x);
	x->t = NULL;
	return 0;
}

/* Each captured thread's Python frames, into its native stack. */
static void splice_python(struct cap_ctx *x)
{
	struct capture *c = x->c;
	size_t i, before;

	for (i = 0; i < c->n; i++) {
		struct capture_thread *ct = &c->threads[i];

		if (ct->how == CAPTURE_NONE)
			continue;
		before = ct->n_frames;
		ct->n_frames = py_splice(c->py, &x->pys, ct->tid, ct->frames, ct->n_frames,
					 x->frames_cap);
		c->n_py_threads += ct->n_frames > before;
	}
}

int capture_process(pid_t pid, const struct capture_opts *o, struct capture *c)
{
	struct cap_ctx x = { .c = c, .o = o };
	uint64_t start = cprof_now_ns();
	struct tracer_stats ts;
	size_t i;
	int ret;

	memset(c, 0, sizeof(*c));
	c->pid = pid;
	procfs_fdcache_init(&x.fds, pid);
	x.frames_cap = o->python ? 2 * o->max_frames : o->max_frames;
	ret = list_threads(&x);
	if (ret < 0)
		goto out;
	ret = proc_maps_read(pid, &c->maps);
	if (ret < 0)
		goto out;
	ret = proc_modules_create(&c->mods, pid);
	if (ret < 0)
		goto out;
	ret = proc_modules_update(c->mods, &c->maps);
	if (ret < 0)
		goto out;
	ret = o->helper ? remote_client_create(&x.rc, o->helper, c->pid, c->mods, &c->maps) :
			  remote_create(&x.u, pid, c->mods, &c->maps);
	if (ret < 0)
		goto out;
	/* the modules and maps go to the parser before anything is read:
	 * between the read of the blocked threads and the stop of the running
	 * ones, only the walk itself */
	if (x.rc)
		remote_client_sync(x.rc);
	c->py_err = o->python ? py_proc_open(&c->py, pid, c->mods, c->py_why, sizeof(c->py_why)) :
				-ENOENT;

	ret = tracer_run(pid, &cap_ops, &x, capture_main, &ts, NULL);
	if (ret < 0)
		goto out;
	c->stopped_ns = ts.stop_ns_total;
	/* The stopped threads run again already; unwind their copies now. */
	ret = unwind_captured(&x, CAPTURE_STOPPED);
	if (ret < 0)
		goto out;
	for (i = 0; i < c->n; i++)
		if (c->threads[i].how == CAPTURE_NONE && !c->threads[i].err)
			c->threads[i].err = -ESRCH;
	c->n_blocked = 0;
	for (i = 0; i < c->n; i++)
		c->n_blocked += c->threads[i].how == CAPTURE_BLOCKED;
	if (c->py && !x.pys_err)
		splice_python(&x);
out:
	py_stacks_free(&x.pys);
	c->wall_ns = cprof_now_ns() - start;
	remote_destroy(x.u);
	if (x.rc) {
		const struct remote_client_error *errs = remote_client_errors(x.rc, &i);

		c->parser_errors = i ? malloc(i * sizeof(*errs)) : NULL;
		if (c->parser_errors) {
			memcpy(c->parser_errors, errs, i * sizeof(*errs));
			c->n_parser_errors = i;
		}
	}
	remote_client_destroy(x.rc);
	if (x.p) {
		for (i = 0; i < c->n; i++)
			procfs_task_close(&x.fds, &x.p[i].task);
		free(x.p);
	}
	return ret;
}

void capture_free(struct capture *c)
{
	size_t i;

	for (i = 0; i < c->n; i++) {
		snap_fini(&c->threads[i].snap);
		free(c->threads[i].frames);
	}
	free(c->threads);
	free(c->parser_errors);
	proc_maps_free(&c->maps);
	py_proc_close(c->py);
	if (c->mods)
		proc_modules_destroy(c->mods);
	memset(c, 0, sizeof(*c));
}
