/* SPDX-License-Identifier: MIT */
/*
 * Unit test of the tracer's helpers, the per-thread /proc file cache, the
 * remote unwinder's accessors on a synthetic snapshot of this process's own
 * stack, the all-threads capture of a forked child, and leaving a signal
 * handler's entry on synthetic signal frames, and a perf event's ring read
 * in place (samples viewed where the kernel wrote them) on a live thread.
 */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#include "process/maps.h"
#include "process/memory.h"
#include "process/modules.h"
#include "process/procfs.h"
#include "tests/tap.h"
#include "unwind/capture.h"
#include "unwind/perf_rings.h"
#include "unwind/perf_thread.h"
#include "unwind/remote.h"
#include "unwind/sigframe.h"
#include "unwind/snapshot.h"
#include "unwind/tracer.h"

#define NOINLINE __attribute__((noinline, noipa))
#define KEEP_FRAME() asm volatile("" ::: "memory")
/* Upper bound of a small noinline function's size, to tell which function
 * a return address is in. */
#define FN_SPAN 512

static bool in_fn(uint64_t addr, const void *fn)
{
	return addr > (uintptr_t)fn && addr < (uintptr_t)fn + FN_SPAN;
}

/* ---- stop-time histogram ------------------------------------------------ */

static void test_percentiles(void)
{
	struct tracer_stats st;
	uint64_t p50, p99, i;

	memset(&st, 0, sizeof(st));
	check(tracer_stop_percentile(&st, 50) == 0, "no stops: every percentile is 0");
	tracer_stats_add_stop(&st, 5);
	check(tracer_stop_percentile(&st, 50) == 5 && tracer_stop_percentile(&st, 100) == 5,
	      "below 8 ns buckets are exact (%llu)",
	      (unsigned long long)tracer_stop_percentile(&st, 50));

	memset(&st, 0, sizeof(st));
	/* 1..1000 us, one stop each */
	for (i = 1; i <= 1000; i++)
		tracer_stats_add_stop(&st, i * 1000);
	p50 = tracer_stop_percentile(&st, 50);
	p99 = tracer_stop_percentile(&st, 99);
	check(st.stops == 1000 && st.stop_ns_max == 1000000 && st.stop_ns_total == 500500000ull,
	      "count, max and total of 1000 stops (%llu, %llu, %llu)",
	      (unsigned long long)st.stops, (unsigned long long)st.stop_ns_max,
	      (unsigned long long)st.stop_ns_total);
	check(p50 <= 500000 && p50 >= 500000 * 7 / 8,
	      "p50 of 1..1000 us is the lower bound of 500 us's 12.5%% bucket (%llu ns)",
	      (unsigned long long)p50);
	check(p99 <= 990000 && p99 >= 990000 * 7 / 8,
	      "p99 of 1..1000 us is the lower bound of 990 us's bucket (%llu ns)",
	      (unsigned long long)p99);
	check(tracer_stop_percentile(&st, 10) <= p50 && p50 <= p99,
	      "percentiles do not decrease");

	memset(&st, 0, sizeof(st));
	tracer_stats_add_stop(&st, UINT64_MAX / 2);
	check(tracer_stop_percentile(&st, 50) <= UINT64_MAX / 2 &&
	      tracer_stop_percentile(&st, 50) >= UINT64_MAX / 2 / 8 * 7,
	      "a huge stop lands in the last buckets");
}

/* ---- helper threads and a forked child ---------------------------------- */

static volatile int stop_helpers;
static volatile unsigned long spin_sink;
/* The sleepers' nap: short in this process (they are joined), long in the
 * forked child, whose sleepers must not run while it is captured. */
static long nap_ns = 20000000L;

NOINLINE static void sleep_inner(void)
{
	struct timespec ts = { nap_ns / 1000000000L, nap_ns % 1000000000L };

	while (!stop_helpers)
		nanosleep(&ts, NULL);
	KEEP_FRAME();
}

NOINLINE static void *sleeper(void *arg)
{
	(void)arg;
	sleep_inner();
	KEEP_FRAME();
	return NULL;
}

NOINLINE static void spin_inner(void)
{
	while (!stop_helpers)
		spin_sink++;
	KEEP_FRAME();
}

NOINLINE static void *spinner(void *arg)
{
	(void)arg;
	spin_inner();
	KEEP_FRAME();
	return NULL;
}

/* A child with 2 sleeping threads and 1 spinning one; main sleeps.  Writes
 * one byte to the pipe when they run.  Returns its pid, or -1. */
static pid_t fork_child(void)
{
	int fds[2];
	pid_t pid;
	char c;

	if (pipe(fds) < 0)
		return -1;
	pid = fork();
	if (pid == 0) {
		pthread_t t;

		close(fds[0]);
		stop_helpers = 0;
		nap_ns = 1000 * 1000000000L;
		pthread_create(&t, NULL, sleeper, NULL);
		pthread_create(&t, NULL, sleeper, NULL);
		pthread_create(&t, NULL, spinner, NULL);
		pthread_setname_np(t, "spinner");
		if (write(fds[1], "r", 1) != 1)
			_exit(1);
		for (;;)
			pause();
	}
	close(fds[1]);
	if (pid < 0 || read(fds[0], &c, 1) != 1) {
		close(fds[0]);
		if (pid > 0) {
			kill(pid, SIGKILL);
			waitpid(pid, NULL, 0);
		}
		return -1;
	}
	close(fds[0]);
	usleep(50000);	/* let the threads reach their loops */
	return pid;
}

static void end_child(pid_t pid)
{
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

/* ---- per-thread /proc files under a tiny budget ----------------------- */

static void test_fdcache(void)
{
	struct procfs_fdcache c;
	struct procfs_task tasks[4];
	pthread_t th[4];
	pid_t *tids;
	size_t n = 0, i, round;
	bool all_read = true;
	int ret;

	stop_helpers = 0;
	for (i = 0; i < 4; i++)
		pthread_create(&th[i], NULL, sleeper, NULL);
	ret = procfs_list_tasks(getpid(), &tids, &n);
	check(ret == 0 && n >= 5, "procfs_list_tasks lists this process's threads (%zu)", n);
	procfs_fdcache_init(&c, getpid());
	check(c.budget >= 16, "a budget from RLIMIT_NOFILE (%zu)", c.budget);
	c.budget = 2;	/* far fewer files than threads x files */
	for (i = 0; i < 4 && i < n; i++)
		procfs_task_init(&tasks[i], tids[i]);
	for (round = 0; round < 3; round++) {
		for (i = 0; i < 4 && i < n; i++) {
			struct procfs_sched sc;
			struct procfs_stat st;

			all_read &= procfs_task_sched(&c, &tasks[i], &sc) == 0;
			all_read &= procfs_task_stat(&c, &tasks[i], &st) == 0 && st.state != 0;
			all_read &= c.open <= 2;
		}
	}
	check(all_read, "every read of 4 threads x 2 files works with 2 files open at most");
	check(c.evictions > 0 && c.opens > 2, "files were closed to open others (%llu opens, %llu closed)",
	      (unsigned long long)c.opens, (unsigned long long)c.evictions);
	for (i = 0; i < 4 && i < n; i++)
		procfs_task_close(&c, &tasks[i]);
	check(c.open == 0, "closing the tasks closes every file (%zu open)", c.open);
	{
		struct procfs_task gone;
		struct procfs_sched sc;

		procfs_task_init(&gone, 0x7ffffff0);
		check(procfs_task_sched(&c, &gone, &sc) == -ESRCH, "a thread that does not exist: -ESRCH");
	}
	stop_helpers = 1;
	for (i = 0; i < 4; i++)
		pthread_join(th[i], NULL);
	free(tids);
}

/* ---- procfs's parsers, on text of our own ------------------------------- */

/* An fd whose content is text, as a /proc file gives it to pread. */
static int text_fd(const char *text)
{
	int fd = memfd_create("procfs-text", MFD_CLOEXEC);

	if (fd >= 0 && write(fd, text, strlen(text)) != (ssize_t)strlen(text)) {
		close(fd);
		return -1;
	}
	return fd;
}

static void test_procfs_parse(void)
{
	struct procfs_stat st;
	struct procfs_sched sc;
	int fd, ret;

	/* comm may hold spaces and parentheses; tpgid may be -1. */
	fd = text_fd("4242 (a) b (c) S 1 4242 4242 0 -1 4194560 120 0 3 0 1234 56 0 0 20 0 "
		     "1 0 99 1000 100 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0\n");
	memset(&st, 0, sizeof(st));
	ret = fd >= 0 ? procfs_read_stat(fd, &st) : -EBADF;
	check(ret == 0 && st.state == 'S' && strcmp(st.comm, "a) b (c") == 0 && st.flags == 4194560 && st.utime == 1234 &&
	      st.stime == 56,
	      "stat: state, comm with ') (', flags, utime and stime (%c, '%s', %lu, %llu, %llu)",
	      st.state, st.comm, st.flags, (unsigned long long)st.utime, (unsigned long long)st.stime);
	if (fd >= 0)
		close(fd);
	fd = text_fd("4242 (x) R 1 2 3\n");
	check(fd >= 0 && procfs_read_stat(fd, &st) == -EINVAL, "stat cut short: -EINVAL");
	if (fd >= 0)
		close(fd);
	fd = text_fd("123456789012 3456 78\n");
	check(fd >= 0 && procfs_read_sched(fd, &sc) == 0 && sc.run_ns == 123456789012ull &&
	      sc.wait_ns == 3456 && sc.slices == 78, "schedstat: run, wait, slices");
	if (fd >= 0)
		close(fd);
	fd = text_fd("12 x 3\n");
	check(fd >= 0 && procfs_read_sched(fd, &sc) == -EINVAL, "schedstat with a bad field: -EINVAL");
	if (fd >= 0)
		close(fd);
	fd = text_fd("");
	check(fd >= 0 && procfs_read_sched(fd, &sc) == -ESRCH, "empty schedstat (a thread gone): -ESRCH");
	if (fd >= 0)
		close(fd);
}

/* ---- the tracer on a child ---------------------------------------------- */

struct trace_ctx {
	pid_t child;
	pid_t spin_tid;
	int stops;
	bool found_all, bogus_null, stopped_in_spin;
	int wait_events;
};

static bool trace_on_stop(struct tracer *t, struct tracer_thread *th, bool group, void *arg)
{
	struct trace_ctx *x = arg;

	(void)t;
	(void)group;
	x->stops++;
	if (th->tid == x->spin_tid)
		x->stopped_in_spin = in_fn(th->regs.rip, (const void *)spin_inner) ||
				     th->regs.rip == (uintptr_t)spin_inner;
	return false;
}

static const struct tracer_ops trace_ops = { .on_stop = trace_on_stop };

static int trace_fn(struct tracer *t, void *arg)
{
	struct trace_ctx *x = arg;
	struct tracer_thread *th;
	pid_t *tids;
	size_t n, i;

	x->found_all = procfs_list_tasks(x->child, &tids, &n) == 0 && n == 4 &&
		       tracer_thread_count(t) == 4;
	for (i = 0; x->found_all && i < n; i++) {
		th = tracer_find_thread(t, tids[i]);
		x->found_all &= th && th->tid == tids[i];
	}
	if (x->found_all)
		free(tids);
	x->bogus_null = !tracer_find_thread(t, 0x7ffffff0) && !tracer_find_thread(NULL, x->child);
	th = tracer_find_thread(t, x->spin_tid);
	if (th && tracer_interrupt(t, th) == 0)
		x->wait_events = tracer_wait_stops(t, 2000000000ull);
	return 42;
}

/* The child's thread named "spinner". */
static pid_t spinner_tid(pid_t pid)
{
	pid_t *tids, found = 0;
	size_t n, i;

	if (procfs_list_tasks(pid, &tids, &n) < 0)
		return 0;
	for (i = 0; i < n && !found; i++) {
		struct procfs_stat st;
		int fd = procfs_open_thread(tids[i], "stat");

		if (fd >= 0 && procfs_read_stat(fd, &st) == 0 && strcmp(st.comm, "spinner") == 0)
			found = tids[i];
		if (fd >= 0)
			close(fd);
	}
	free(tids);
	return found;
}

static void test_tracer(void)
{
	struct trace_ctx x;
	struct tracer_stats st;
	bool attached = false;
	long tracer_pid = -1;
	pid_t child = fork_child();
	int ret;

	if (child < 0) {
		check(false, "fork a child with threads");
		return;
	}
	memset(&x, 0, sizeof(x));
	x.child = child;
	x.spin_tid = spinner_tid(child);
	ret = tracer_run(child, &trace_ops, &x, trace_fn, &st, &attached);
	if (ret == -EPERM) {
		skip("tracer_run on a child", "ptrace is not permitted here");
		end_child(child);
		return;
	}
	check(ret == 42 && attached, "tracer_run returns fn's result after attaching (%d)", ret);
	check(x.found_all, "tracer_find_thread finds each of the child's 4 threads");
	check(x.bogus_null, "tracer_find_thread: NULL for an unknown tid and for no tracer");
	check(x.stops == 1 && x.stopped_in_spin,
	      "an interrupt of the spinner stops it in spin_inner (%d stops)", x.stops);
	check(x.wait_events >= 0 && !(x.wait_events & TRACER_EV_GONE),
	      "tracer_wait_stops returns once the stop is served (%d)", x.wait_events);
	check(st.stops == 1 && st.threads_seen == 4 && st.stop_ns_total > 0,
	      "final statistics: 1 stop, 4 threads (%llu, %llu)", (unsigned long long)st.stops,
	      (unsigned long long)st.threads_seen);
	ret = procfs_status_field(child, "TracerPid", &tracer_pid);
	check(ret == 0 && tracer_pid == 0, "after tracer_run the child is traced by nobody (TracerPid %ld)",
	      tracer_pid);
	check(kill(child, 0) == 0, "the child lives on");

	ret = tracer_run(0x7ffffff0, &trace_ops, &x, trace_fn, &st, &attached);
	check(ret == -ESRCH && !attached, "tracer_run on no process: -ESRCH, not attached (%d)", ret);
	end_child(child);
}

/* ---- the remote unwinder on this process's own stack ------------------ */

static struct snap own;
static int own_ret = -1;

/* A snapshot as the tracer would take it: the registers getcontext saves
 * (those a call preserves, SP and PC) and a copy of the stack from SP. */
NOINLINE static void take_snapshot(void)
{
	ucontext_t uc;
	const struct proc_map *m;
	struct proc_maps maps = { 0 };
	size_t len;

	if (getcontext(&uc) < 0 || proc_maps_read(getpid(), &maps) < 0)
		return;
	memset(&own.regs, 0, sizeof(own.regs));
	own.regs.rip = (uint64_t)uc.uc_mcontext.gregs[REG_RIP];
	own.regs.rsp = (uint64_t)uc.uc_mcontext.gregs[REG_RSP];
	own.regs.rbp = (uint64_t)uc.uc_mcontext.gregs[REG_RBP];
	own.regs.rbx = (uint64_t)uc.uc_mcontext.gregs[REG_RBX];
	own.regs.r12 = (uint64_t)uc.uc_mcontext.gregs[REG_R12];
	own.regs.r13 = (uint64_t)uc.uc_mcontext.gregs[REG_R13];
	own.regs.r14 = (uint64_t)uc.uc_mcontext.gregs[REG_R14];
	own.regs.r15 = (uint64_t)uc.uc_mcontext.gregs[REG_R15];
	m = proc_maps_find(&maps, own.regs.rsp);
	if (m) {
		len = (size_t)(m->end - own.regs.rsp);
		if (len > own.stack_cap)
			len = own.stack_cap;
		/* Copied here, in the frame being described: what lies below
		 * SP (this function's locals) is not part of the copy.  Copied
		 * as the tracer copies, by process_vm_readv: the bytes are raw
		 * stack, AddressSanitizer's redzones included, which a memcpy
		 * of the live stack would be reported for. */
		struct iovec local = { own.stack, len };
		struct iovec remote = { (void *)(uintptr_t)own.regs.rsp, len };

		if (process_vm_readv(getpid(), &local, 1, &remote, 1, 0) == (ssize_t)len) {
			own.stack_start = own.regs.rsp;
			own.stack_len = len;
			own.tid = gettid();
			own_ret = 0;
		}
	}
	proc_maps_free(&maps);
	KEEP_FRAME();
}

NOINLINE static void chain3(void)
{
	take_snapshot();
	KEEP_FRAME();
}

NOINLINE static void chain2(void)
{
	chain3();
	KEEP_FRAME();
}

NOINLINE static void chain1(void)
{
	chain2();
	KEEP_FRAME();
}

static void test_remote(void)
{
	struct proc_maps maps = { 0 };
	struct proc_modules *mods = NULL;
	struct remote_unwinder *u = NULL;
	struct prof_frame frames[64], frames2[64];
	enum remote_end end, end2;
	size_t n, n2, i, at = 0, used, full_len;
	uint64_t w;

	if (snap_init(&own, 256 << 10) < 0) {
		check(false, "snap_init");
		return;
	}
	chain1();
	check(own_ret == 0 && own.stack_len > 64, "a snapshot of this thread's stack (%zu bytes)",
	      own.stack_len);
	check(snap_word(&own, own.stack_start, &w) && !snap_word(&own, own.stack_start - 8, &w) &&
	      !snap_word(&own, own.stack_start + own.stack_len - 4, &w),
	      "snap_word reads inside the copy only");
	if (own_ret < 0 || proc_maps_read(getpid(), &maps) < 0 ||
	    proc_modules_create(&mods, getpid()) < 0 || proc_modules_update(mods, &maps) < 0 ||
	    remote_create(&u, getpid(), mods, &maps) < 0) {
		check(false, "set up maps, modules and an unwinder for this process");
		goto out;
	}
	n = remote_unwind(u, &own, frames, 64, &end);
	check(n >= 5, "the walk finds at least 5 frames (%zu, %s)", n, remote_end_str(end));
	{
		uint64_t from_file, from_memory;

		remote_take_pages(u, &from_file, &from_memory);
		check(from_file > 0 && from_memory == 0,
		      "code and unwind tables read from the files (%llu pages), none from memory "
		      "(%llu)", (unsigned long long)from_file, (unsigned long long)from_memory);
	}
	/* getcontext's return address is in take_snapshot; then its callers. */
	check(n >= 4 && in_fn(frames[0].addr, (const void *)take_snapshot) &&
	      in_fn(frames[1].addr, (const void *)chain3) && in_fn(frames[2].addr, (const void *)chain2) &&
	      in_fn(frames[3].addr, (const void *)chain1),
	      "frames 0-3: take_snapshot <- chain3 <- chain2 <- chain1");
	for (i = 0; i < n; i++)
		at += in_fn(frames[i].addr, (const void *)test_remote);
	check(at == 1, "test_remote is on the stack once (%zu)", at);
	check(remote_end_is_root(end), "the walk reaches the thread's root (%s)", remote_end_str(end));
	check(frames[0].module && proc_modules_get(mods, frames[0].module) &&
	      proc_modules_get(mods, frames[0].module)->is_main,
	      "the leaf is tagged with the main executable's module");

	/* The adaptive copy relies on this: a copy of only the bytes a walk
	 * read gives the same walk. */
	used = remote_stack_used(u);
	check(used > 0 && used <= own.stack_len, "the walk read %zu of the %zu bytes copied", used,
	      own.stack_len);
	full_len = own.stack_len;
	own.stack_len = used;
	n2 = remote_unwind(u, &own, frames2, 64, &end2);
	check(n2 == n && end2 == end && memcmp(frames, frames2, n * sizeof(*frames)) == 0,
	      "a copy of just those %zu bytes gives the same walk (%zu frames, %s)", used, n2,
	      remote_end_str(end2));
	check(remote_stack_used(u) <= used, "and reads no more of it (%zu)", remote_stack_used(u));
	own.stack_len = full_len;

	/* Remembered walks (unwind/walk_memo.h): the same copy again is
	 * answered from the memo, with the same frames. */
	remote_flush(u);
	n = remote_unwind(u, &own, frames, 64, &end);
	check(!remote_reused(u), "after a flush the copy is walked again");
	n2 = remote_unwind(u, &own, frames2, 64, &end2);
	check(remote_reused(u) && n2 == n && end2 == end &&
	      memcmp(frames, frames2, n * sizeof(*frames)) == 0,
	      "the same copy again: the remembered walk, the same %zu frames", n2);
	/* One return address the walk read, changed: walked again, and the
	 * new walk sees the change. */
	{
		size_t off = 0;
		uint64_t ra, fake = (uint64_t)(uintptr_t)test_remote + 1;

		for (off = 0; off + 8 <= used; off += 8) {
			memcpy(&ra, own.stack + off, 8);
			if (ra == frames[2].addr)
				break;
		}
		check(off + 8 <= used, "frame 2's return address lies in the bytes read");
		if (off + 8 <= used) {
			memcpy(own.stack + off, &fake, 8);
			n2 = remote_unwind(u, &own, frames2, 64, &end2);
			check(!remote_reused(u) && n2 >= 3 && frames2[2].addr == fake,
			      "a changed return address is walked again, not remembered (%s)",
			      remote_reused(u) ? "reused" : "walked");
			memcpy(own.stack + off, &ra, 8);
		}
	}
	n2 = remote_unwind(u, &own, frames2, 64, &end2);
	check(n2 == n && memcmp(frames, frames2, n * sizeof(*frames)) == 0,
	      "the copy restored: the first walk's frames again");
	n2 = remote_unwind(u, &own, frames2, 8, &end2);
	check(!remote_reused(u), "a walk with another frame limit is not the remembered one");

	/* The same copy cut short: the walk must say so, not invent frames. */
	own.stack_len = 32;
	n = remote_unwind(u, &own, frames, 64, &end);
	check(n >= 1 && !remote_end_is_root(end) && (frames[n - 1].flags & PROF_FRAME_TRUNCATED),
	      "a copy too short to unwind ends truncated (%zu frames, %s)", n, remote_end_str(end));
out:
	remote_destroy(u);
	if (mods)
		proc_modules_destroy(mods);
	proc_maps_free(&maps);
	snap_fini(&own);
}

/* The bytes the modules map, read from their files: the same as memory
 * where the file holds what is mapped, refused where the loader wrote. */
static void test_read_mapped(void)
{
	struct proc_maps maps = { 0 };
	struct proc_modules *mods = NULL;
	size_t i, same = 0, refused = 0, differ = 0;
	uint8_t page[4096], mem[4096];

	if (proc_maps_read(getpid(), &maps) < 0 || proc_modules_create(&mods, getpid()) < 0 ||
	    proc_modules_update(mods, &maps) < 0) {
		check(false, "set up maps and modules for this process");
		goto out;
	}
	for (i = 0; i < maps.n; i++) {
		const struct proc_map *m = &maps.v[i];
		const struct proc_module *mod = proc_modules_of_map(mods, m);
		int r;

		if (!mod || !(m->perms & PROC_MAP_R) || (m->perms & PROC_MAP_W))
			continue;
		r = proc_module_read_mapped(mod, m, m->start, page, sizeof(page));
		if (r == -ENODATA)
			refused++;
		/* memory read as the unwinder would, past the sanitizers' redzones */
		else if (r == 0 && proc_mem_read_all(getpid(), m->start, mem, sizeof(mem)) == 0 &&
			 memcmp(page, mem, sizeof(page)) == 0)
			same++;
		else
			differ++;
	}
	check(same >= 4, "read-only pages of the modules read from their files as mapped (%zu)",
	      same);
	check(refused >= 1, "relocated read-only pages (RELRO) refused (%zu)", refused);
	check(differ == 0, "no page read from a file differs from memory (%zu)", differ);
out:
	if (mods)
		proc_modules_destroy(mods);
	proc_maps_free(&maps);
}

/* ---- capture of a child ------------------------------------------------- */

static void test_capture(void)
{
	struct capture_opts o = { .stack_size = 64 << 10, .max_frames = 64 };
	struct capture c;
	pid_t child = fork_child(), spin_tid;
	size_t i, blocked = 0, stopped = 0, sleepers = 0;
	bool spin_ok = false;
	int ret;

	if (child < 0) {
		check(false, "fork a child with threads");
		return;
	}
	spin_tid = spinner_tid(child);
	ret = capture_process(child, &o, &c);
	if (ret == -EPERM) {
		skip("capture_process on a child", "ptrace is not permitted here");
		end_child(child);
		return;
	}
	check(ret == 0 && c.attached && c.n == 4, "capture_process captures the child's 4 threads (%d, %zu)",
	      ret, c.n);
	check(c.n > 0 && c.threads[0].tid == child, "the main thread first");
	for (i = 0; i < c.n; i++) {
		const struct capture_thread *ct = &c.threads[i];
		size_t k;

		blocked += ct->how == CAPTURE_BLOCKED;
		stopped += ct->how == CAPTURE_STOPPED;
		for (k = 0; k < ct->n_frames; k++) {
			if (in_fn(ct->frames[k].addr, (const void *)sleep_inner) &&
			    k + 1 < ct->n_frames && in_fn(ct->frames[k + 1].addr, (const void *)sleeper)) {
				sleepers++;
				break;
			}
		}
		if (ct->tid == spin_tid)
			spin_ok = ct->how == CAPTURE_STOPPED && ct->n_frames >= 2 &&
				  (in_fn(ct->frames[0].addr, (const void *)spin_inner) ||
				   ct->frames[0].addr == (uintptr_t)spin_inner);
	}
	check(sleepers == 2, "both sleepers unwound through sleep_inner <- sleeper (%zu)", sleepers);
	check(spin_ok, "the spinner was stopped and is in spin_inner");
	check(blocked >= 2 && blocked == c.n_blocked && c.n_stopped >= 1 && stopped >= 1,
	      "blocked threads read in place (%zu), the running one stopped (%zu)", blocked, stopped);
	check(kill(child, 0) == 0, "the child lives on");
	capture_free(&c);
	end_child(child);
}

/* ---- a sample at a signal handler's entry -------------------------------- */

/* A restorer's code (mov $15,%rax; syscall) as data: sigframe_leave_handler
 * reads it from this process with process_vm_readv. */
static const uint8_t fake_restorer[SIGFRAME_RESTORER_LEN] = {
	0x48, 0xc7, 0xc0, 0x0f, 0x00, 0x00, 0x00, 0x0f, 0x05,
};

/* uc_mcontext.gregs indices */
enum { GR_RDI = 8, GR_RSI = 9, GR_RDX = 12, GR_RAX = 13, GR_RSP = 15, GR_RIP = 16 };

static void put_word(struct snap *s, uint64_t addr, uint64_t v)
{
	memcpy(s->stack + (addr - s->stack_start), &v, 8);
}

/* The registers the kernel sets at the entry of the handler of sig, its
 * frame at sp. */
static void entry_regs(struct user_regs_struct *r, uint64_t sp, int sig)
{
	memset(r, 0, sizeof(*r));
	r->rsp = sp;
	r->rip = 0x1000;	/* the handler */
	r->rdi = (unsigned long long)sig;
	r->rdx = sp + 8;
	r->rsi = sp + 8 + SIGFRAME_UCONTEXT_SIZE;
}

/* The frame at sp: the restorer's address, then a ucontext holding the
 * interrupted code's registers r. */
static void put_sigframe(struct snap *s, uint64_t sp, uint64_t restorer,
			 const struct user_regs_struct *r)
{
	uint64_t g = sp + 8 + SIGFRAME_GREGS_OFFSET;

	put_word(s, sp, restorer);
	put_word(s, g + 8 * GR_RDI, r->rdi);
	put_word(s, g + 8 * GR_RSI, r->rsi);
	put_word(s, g + 8 * GR_RDX, r->rdx);
	put_word(s, g + 8 * GR_RAX, r->rax);
	put_word(s, g + 8 * GR_RSP, r->rsp);
	put_word(s, g + 8 * GR_RIP, r->rip);
}

static void test_leave_handler(void)
{
	const uint64_t base = 0x7f0000000000ull, restorer = (uintptr_t)fake_restorer;
	struct proc_maps none = { 0 };
	struct user_regs_struct code, outer;
	struct snap s;
	pid_t self = getpid();
	uint64_t v;
	bool left;

	if (snap_init(&s, 16384) < 0) {
		check(false, "snap_init");
		return;
	}
	/* The code a SIGSEGV interrupted: 4 KiB above the frame. */
	memset(&code, 0, sizeof(code));
	code.rsp = base + 4096;
	code.rip = 0x5555;
	s.stack_start = base;
	s.stack_len = 8192;
	memset(s.stack, 0, s.stack_len);
	put_sigframe(&s, base, restorer, &code);
	put_word(&s, base + 4096, 0xabcdef);
	entry_regs(&s.regs, base, SIGSEGV);
	check(!sigframe_leave_handler(&s, self, SIGUSR1, &none) && s.regs.rip == 0x1000 &&
	      s.stack_start == base, "at another signal's entry: left as it is");
	s.regs.rsi += 8;
	check(!sigframe_leave_handler(&s, self, SIGSEGV, &none) && s.regs.rip == 0x1000,
	      "%%rsi not the frame's siginfo: left as it is");
	s.regs.rsi -= 8;
	put_word(&s, base, restorer + 1);
	check(!sigframe_leave_handler(&s, self, SIGSEGV, &none) && s.regs.rip == 0x1000,
	      "no restorer at [%%rsp]: left as it is");
	put_word(&s, base, restorer);
	check(sigframe_leave_handler(&s, self, SIGSEGV, &none), "at the handler's entry: left");
	check(s.regs.rip == 0x5555 && s.regs.rsp == base + 4096 && s.stack_start == base + 4096 &&
	      s.stack_len == 4096 && snap_word(&s, base + 4096, &v) && v == 0xabcdef,
	      "the interrupted code's registers and stack (pc %#llx, %zu bytes from %#llx)",
	      (unsigned long long)s.regs.rip, s.stack_len, (unsigned long long)s.stack_start);

	/* Two signals delivered one after the other: the frame of the second
	 * interrupted the first handler's entry. */
	s.stack_start = base;
	s.stack_len = 8192;
	memset(s.stack, 0, s.stack_len);
	entry_regs(&outer, base + 2048, SIGUSR2);
	outer.rip = 0x2222;
	put_sigframe(&s, base, restorer, &outer);
	put_sigframe(&s, base + 2048, restorer, &code);
	entry_regs(&s.regs, base, SIGUSR1);
	left = sigframe_leave_handler(&s, self, SIGUSR1, &none);
	check(left && s.regs.rip == 0x5555 && s.stack_start == base + 4096,
	      "nested entries are all left (pc %#llx)", (unsigned long long)s.regs.rip);

	/* The interrupted SP in no copy and no mapping: nothing to go on with. */
	s.stack_start = base;
	s.stack_len = 8192;
	code.rsp = base + 65536;
	put_sigframe(&s, base, restorer, &code);
	entry_regs(&s.regs, base, SIGSEGV);
	check(!sigframe_leave_handler(&s, self, SIGSEGV, &none) && s.regs.rip == 0x1000 &&
	      s.stack_start == base && s.stack_len == 8192,
	      "the interrupted stack not copied: left as it is");
	snap_fini(&s);
}

/* ---- a perf ring read in place ------------------------------------------ */

#define MARK 0x6d61726b65647374ull	/* "markedst" */
#define MARK_WORDS 8

struct marked {
	volatile int stop;
	volatile pid_t tid;
};

static NOINLINE void spin_once(volatile uint64_t *mark)
{
	mark[0] = MARK;
	KEEP_FRAME();
}

/* Spins with MARK_WORDS known words in its frame, above its SP (it calls
 * a function, so they are not in the red zone below it): every sample of
 * it carries them in its stack copy. */
static NOINLINE void spin_marked(struct marked *m)
{
	volatile uint64_t mark[MARK_WORDS];
	unsigned i;

	for (i = 0; i < MARK_WORDS; i++)
		mark[i] = MARK ^ i;
	while (!m->stop)
		spin_once(mark);
	KEEP_FRAME();
}

static void *marked_main(void *arg)
{
	struct marked *m = arg;

	m->tid = (pid_t)syscall(SYS_gettid);
	spin_marked(m);
	return NULL;
}

/* Whether s's copy holds the marked words. */
static bool holds_mark(const struct snap *s)
{
	size_t off, i;
	uint64_t w;

	for (off = 0; off + 8 * MARK_WORDS <= s->stack_len; off += 8) {
		for (i = 0; i < MARK_WORDS; i++) {
			memcpy(&w, s->stack + off + 8 * i, 8);
			if (w != (MARK ^ i))
				break;
		}
		if (i == MARK_WORDS)
			return true;
	}
	return false;
}

static uint64_t sum_bytes(const struct snap *s)
{
	uint64_t h = 1469598103934665603ull;
	size_t i;

	for (i = 0; i < s->stack_len; i++)
		h = (h ^ s->stack[i]) * 1099511628211ull;
	return h;
}

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

/* The next sample of the rings (any CPU's) into sn: 1, or 0 when every
 * ring is empty. */
static int rings_next(struct perf_rings *rs, struct snap *sn)
{
	struct perf_thread *owner;
	unsigned i, slot;
	int r;

	for (i = 0; i < perf_rings_count(rs); i++) {
		while ((r = perf_rings_next(rs, i, sn, true, &owner, &slot)) != 0) {
			if (r == 1)
				return 1;
		}
	}
	return 0;
}

/*
 * Samples of a spinning thread, taken out of per-CPU rings of 8 KiB (6
 * records of 1 KiB of stack) in rounds, each round's samples held
 * (viewed) until the round is over: the views keep their bytes while the
 * kernel runs into the held records (it drops samples instead), the
 * records that wrap round the ring's end are copied, a kept view outlives
 * the rings, and released records are written again.
 */
static void test_perf_ring(void)
{
	enum { N = 32, STACK = 1024, RING = 8192, ROUNDS = 6 };
	struct snap sn[N];
	uint64_t sums[N];
	struct marked m = { 0, 0 };
	struct perf_rings *rs = NULL;
	struct perf_thread *pt = NULL;
	pthread_t th;
	size_t n_view = 0, n_copy = 0, n_all = 0, n_marked = 0, n_same = 0, i, n;
	int r, round;

	for (i = 0; i < N; i++) {
		if (snap_init(&sn[i], STACK) < 0) {
			check(false, "perf ring: snapshots allocated");
			return;
		}
	}
	if (pthread_create(&th, NULL, marked_main, &m) != 0) {
		check(false, "perf ring: spinning thread started");
		goto out;
	}
	while (!m.tid)
		sleep_ms(1);
	r = perf_rings_open(&rs, RING, RING, 0);
	if (r == 0)
		r = perf_thread_open(&pt, rs, m.tid, 1000000, STACK, false, false);
	if (r < 0) {
		skip("perf ring: samples read in place", "perf events not permitted here");
		perf_rings_close(rs);
		goto out_thread;
	}
	for (round = 0; round < ROUNDS; round++) {
		sleep_ms(40);	/* 40 samples: the ring fills */
		for (n = 0; n < N && rings_next(rs, &sn[n]);)
			n++;
		for (i = 0; i < n; i++) {
			sums[i] = sum_bytes(&sn[i]);
			n_marked += holds_mark(&sn[i]) && sn[i].tid == m.tid;
			if (snap_viewing(&sn[i]))
				n_view++;
			else
				n_copy++;
		}
		n_all += n;
		/* Held: the kernel must not write over them. */
		sleep_ms(20);
		for (i = 0; i < n; i++)
			n_same += sum_bytes(&sn[i]) == sums[i];
		if (round == ROUNDS - 1 && n && snap_viewing(&sn[0])) {
			snap_keep(&sn[0]);
			n_same -= !(sum_bytes(&sn[0]) == sums[0] && !snap_viewing(&sn[0]));
		}
		if (round < ROUNDS - 1)
			perf_rings_release(rs);
	}
	check(n_all >= 2 * ROUNDS, "perf ring: samples in every round (%zu)", n_all);
	check(n_marked == n_all, "perf ring: every sample's copy holds the thread's frame (%zu of %zu)",
	      n_marked, n_all);
	check(n_view > 0 && n_copy > 0,
	      "perf ring: samples viewed in place (%zu) and copied where they wrap (%zu)", n_view,
	      n_copy);
	check(n_same == n_all, "perf ring: held samples unchanged while the kernel samples on (%zu of %zu)",
	      n_same, n_all);
	check(perf_rings_lost(rs) > 0, "perf ring: the kernel dropped samples at held records (%llu)",
	      (unsigned long long)perf_rings_lost(rs));
	perf_thread_close(pt);
	perf_rings_close(rs);
	/* The kept copy outlives the rings. */
	check(holds_mark(&sn[0]) && sum_bytes(&sn[0]) == sums[0],
	      "perf ring: a kept sample outlives the ring");
out_thread:
	m.stop = 1;
	pthread_join(th, NULL);
out:
	for (i = 0; i < N; i++)
		snap_fini(&sn[i]);
}

int main(void)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	test_percentiles();
	test_fdcache();
	test_procfs_parse();
	test_tracer();
	test_remote();
	test_read_mapped();
	test_capture();
	test_leave_handler();
	test_perf_ring();
	return tap_done();
}
