/* SPDX-License-Identifier: MIT */
/* The perf source's sizes: the stack each sample copies, the rings that
 * hold the samples, and the descriptors the events may take. */
#include "config.h"

#include <stdint.h>
#include <sys/resource.h>
#include <unistd.h>

#include "unwind/perf_rings.h"
#include "unwind/perf_thread.h"
#include "unwind/python_sample.h"
#include "unwind/sampler_impl.h"
#include "unwind/source_perf.h"

/* The ring for records samples of stack bytes. */
size_t perf_src_ring_for(size_t stack, unsigned records)
{
	size_t want = perf_thread_record_size(stack) * records, ring = 4096;

	while (ring < want)
		ring *= 2;
	return ring;
}

/* Memory and stack sizes. */
void perf_src_sizes(struct sampler *s, struct perf_state *ps)
{
	size_t stack = s->o.perf_stack_size ? s->o.perf_stack_size : s->o.stack_size;

	if (stack > PERF_THREAD_STACK_MAX)
		stack = PERF_THREAD_STACK_MAX;
	ps->stack_max = stack & ~(size_t)7;
	/* First the small copy, unless a size was asked for. */
	ps->stack = s->o.perf_stack_size || ps->stack_max < STACK_DEFAULT ?
		    ps->stack_max : STACK_DEFAULT;
	s->stats.perf_stack = ps->stack;
}

/*
 * The descriptors the events may take: a quarter of the soft limit, raised
 * to the hard one first (as the stop source's file cache does).  The rest
 * is for the threads' /proc files (two a thread while they are sampled by
 * perf events: comm and schedstat, cached up to three quarters of the
 * limit), modules and the output.
 */
size_t perf_src_fd_budget(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
		return 0;
	if (rl.rlim_cur < rl.rlim_max) {
		rlim_t cur = rl.rlim_cur;

		rl.rlim_cur = rl.rlim_max;
		if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
			rl.rlim_cur = cur;
	}
	if (rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur > (rlim_t)1 << 20)
		rl.rlim_cur = (rlim_t)1 << 20;
	return (size_t)rl.rlim_cur / 4;
}

/* Why SAMPLER_SOURCE_AUTO samples at stops from the start, or
 * SAMPLER_PERF_USED. */
enum sampler_perf_refusal perf_src_auto_refusal(struct sampler *s, const struct perf_state *ps)
{
	size_t n = tracer_thread_count(s->tracer);
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);

	if (s->o.perf_stack_size > PERF_THREAD_STACK_MAX)
		return SAMPLER_PERF_STACK;
	/* An event per thread per CPU (the threads born later that find
	 * none left are sampled at stops, perf_fallbacks). */
	if ((uint64_t)n * (uint64_t)(cpus > 0 ? cpus : 1) > ps->fd_budget)
		return SAMPLER_PERF_THREADS;
	if (samp_py_runs(s, s->procs[0]))
		return SAMPLER_PERF_PYTHON;
	return SAMPLER_PERF_USED;
}

/* The rings: RING_RECORDS samples of the deepest copy, less where the
 * kernel's budget of locked memory (perf_event_mlock_kb, RLIMIT_MEMLOCK)
 * refuses, but RING_RECORDS_MIN of the first copy at least.  Returns 0
 * or -errno. */
int perf_src_open_rings(struct sampler *s, struct perf_state *ps)
{
	size_t want = perf_src_ring_for(ps->stack, RING_RECORDS);
	size_t deep = perf_src_ring_for(ps->stack_max, RING_RECORDS_DEEP);
	int r;

	r = perf_rings_open(&ps->rings, deep > want ? deep : want,
			    perf_src_ring_for(ps->stack, RING_RECORDS_MIN),
			    s->o.kernel_frames ? PERF_RINGS_KERNEL : 0);
	if (r == 0)
		s->stats.perf_ring_bytes = perf_rings_size(ps->rings) * perf_rings_count(ps->rings);
	return r;
}
