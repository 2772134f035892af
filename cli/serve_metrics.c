/* SPDX-License-Identifier: MIT */
/* cprof serve's /metrics: what serving and sampling have cost, in Prometheus text format. */
#include "config.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "cli/serve.h"
#include "unwind/tracer.h"

static void metric(FILE *f, const char *name, const char *type, const char *help)
{
	fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* A summary of durations in seconds: its median, p99, sum and count. */
static void summary_seconds(FILE *f, const char *name, const char *help, uint64_t p50_ns,
			    uint64_t p99_ns, uint64_t sum_ns, uint64_t count)
{
	metric(f, name, "summary", help);
	fprintf(f, "%s{quantile=\"0.5\"} %.9f\n", name, (double)p50_ns / 1e9);
	fprintf(f, "%s{quantile=\"0.99\"} %.9f\n", name, (double)p99_ns / 1e9);
	fprintf(f, "%s_sum %.9f\n", name, (double)sum_ns / 1e9);
	fprintf(f, "%s_count %" PRIu64 "\n", name, count);
}

/* The server's own activity: the target, its sessions, requests and
 * answers. */
static void metrics_server(struct serve_ctx *c, FILE *f, const struct hub_totals *t)
{
	uint64_t req[4];

	pthread_mutex_lock(&c->mu);
	memcpy(req, c->requests, sizeof(req));
	pthread_mutex_unlock(&c->mu);
	metric(f, "cprof_target_info", "gauge", "The process cprof serves (always 1).");
	fprintf(f, "cprof_target_info{pid=\"%d\",version=\"%s\"} 1\n", (int)c->pid, PACKAGE_VERSION);
	metric(f, "cprof_sampling", "gauge",
	       "1 while a sampling session traces the target, 0 while it is not traced.");
	fprintf(f, "cprof_sampling{mode=\"cpu\"} %d\n", t->sampling && t->mode == SAMPLER_CPU);
	fprintf(f, "cprof_sampling{mode=\"wall\"} %d\n", t->sampling && t->mode == SAMPLER_WALL);
	metric(f, "cprof_open_profiles", "gauge", "Profile requests waiting for their window to end.");
	fprintf(f, "cprof_open_profiles %u\n", t->open_windows);
	metric(f, "cprof_sessions_total", "counter",
	       "Sampling sessions (attach to detach); overlapping requests share one.");
	fprintf(f, "cprof_sessions_total %" PRIu64 "\n", t->sessions);
	metric(f, "cprof_profiles_total", "counter", "Profiles served, by mode.");
	fprintf(f, "cprof_profiles_total{mode=\"cpu\"} %" PRIu64 "\n", t->windows[SAMPLER_CPU]);
	fprintf(f, "cprof_profiles_total{mode=\"wall\"} %" PRIu64 "\n", t->windows[SAMPLER_WALL]);
	metric(f, "cprof_profiles_failed_total", "counter",
	       "Profile requests that got no profile because sampling failed.");
	fprintf(f, "cprof_profiles_failed_total %" PRIu64 "\n", t->windows_failed);
	metric(f, "cprof_thread_dumps_total", "counter", "Thread dumps taken.");
	fprintf(f, "cprof_thread_dumps_total %" PRIu64 "\n", t->dumps);
	metric(f, "cprof_http_responses_total", "counter", "HTTP responses, by status class.");
	fprintf(f, "cprof_http_responses_total{code=\"2xx\"} %" PRIu64 "\n", req[0]);
	fprintf(f, "cprof_http_responses_total{code=\"3xx\"} %" PRIu64 "\n", req[1]);
	fprintf(f, "cprof_http_responses_total{code=\"4xx\"} %" PRIu64 "\n", req[2]);
	fprintf(f, "cprof_http_responses_total{code=\"5xx\"} %" PRIu64 "\n", req[3]);
	metric(f, "cprof_http_clients_gone_total", "counter",
	       "Profile requests whose client hung up before the profile was ready.");
	fprintf(f, "cprof_http_clients_gone_total %" PRIu64 "\n", t->clients_gone);
}

/* What the sessions sampled: ticks, samples, and how their walks ended. */
static void metrics_samples(FILE *f, const struct sampler_stats *s)
{
	uint64_t fresh = 0, other = 0;
	size_t i;

	for (i = 0; i <= REMOTE_END_ERROR; i++)
		fresh += s->ends[i];
	metric(f, "cprof_traced_seconds_total", "counter", "Time the target was traced.");
	fprintf(f, "cprof_traced_seconds_total %.9f\n", (double)s->elapsed_ns / 1e9);
	metric(f, "cprof_ticks_total", "counter", "Sampling ticks.");
	fprintf(f, "cprof_ticks_total %" PRIu64 "\n", s->ticks);
	metric(f, "cprof_ticks_missed_total", "counter",
	       "Ticks skipped because cprof fell behind.");
	fprintf(f, "cprof_ticks_missed_total %" PRIu64 "\n", s->ticks_missed);
	metric(f, "cprof_samples_total", "counter",
	       "Samples taken, by how: copied from a stopped thread, read in place from a "
	       "blocked one, or reused from a thread that had not run (wall mode).");
	fprintf(f, "cprof_samples_total{how=\"stopped\"} %" PRIu64 "\n",
		fresh - s->samples_unstopped);
	fprintf(f, "cprof_samples_total{how=\"unstopped\"} %" PRIu64 "\n", s->samples_unstopped);
	fprintf(f, "cprof_samples_total{how=\"reused\"} %" PRIu64 "\n", s->samples_reused);
	metric(f, "cprof_unwinds_total", "counter", "Fresh samples by how their unwind ended.");
	fprintf(f, "cprof_unwinds_total{end=\"complete\"} %" PRIu64 "\n",
		s->ends[REMOTE_END_COMPLETE]);
	fprintf(f, "cprof_unwinds_total{end=\"go_switch\"} %" PRIu64 "\n",
		s->ends[REMOTE_END_GO_SWITCH]);
	/* Every end not named is "other", as in attach's notes. */
	other = fresh - s->ends[REMOTE_END_COMPLETE] - s->ends[REMOTE_END_GO_SWITCH];
	for (i = 0; i < CLI_N_CUT_ENDS; i++) {
		fprintf(f, "cprof_unwinds_total{end=\"%s\"} %" PRIu64 "\n", cli_cut_ends[i].key,
			s->ends[cli_cut_ends[i].end]);
		other -= s->ends[cli_cut_ends[i].end];
	}
	fprintf(f, "cprof_unwinds_total{end=\"other\"} %" PRIu64 "\n", other);
}

/* What the target paid: its threads' stops and its signals' delays. */
static void metrics_stops(FILE *f, const struct sampler_stats *s)
{
	summary_seconds(f, "cprof_stop_seconds",
			"Time a target thread spent in a stop cprof asked for (interrupt to resume).",
			tracer_stop_percentile(&s->tracer, 50), tracer_stop_percentile(&s->tracer, 99),
			s->tracer.stop_ns_total, s->tracer.stops);
	summary_seconds(f, "cprof_stopped_seconds",
			"Time a target thread spent in a stop cprof asked for, from the moment it "
			"reached the stop to its resume (what cprof itself takes).",
			tracer_at_stop_percentile(&s->tracer, 50),
			tracer_at_stop_percentile(&s->tracer, 99), s->tracer.at_stop_ns_total,
			s->tracer.stops);
	metric(f, "cprof_stop_max_seconds", "gauge", "The longest stop so far.");
	fprintf(f, "cprof_stop_max_seconds %.9f\n", (double)s->tracer.stop_ns_max / 1e9);
	metric(f, "cprof_stopped_fraction_max", "gauge",
	       "The largest share of a thread's traced time spent stopped, over all sessions.");
	fprintf(f, "cprof_stopped_fraction_max %.6f\n", s->tracer.stopped_fraction_max);
	metric(f, "cprof_cpu_seconds_total", "counter", "CPU time of cprof's sampling thread.");
	fprintf(f, "cprof_cpu_seconds_total %.9f\n", (double)s->cprof_cpu_ns / 1e9);
	metric(f, "cprof_signals_reinjected_total", "counter",
	       "Signals that reached the target while traced, passed on by cprof.");
	fprintf(f, "cprof_signals_reinjected_total %" PRIu64 "\n", s->tracer.signals_reinjected);
	summary_seconds(f, "cprof_signal_seconds",
			"Time from a signal's stop to its re-injection (a traced target's signal "
			"waits that long for cprof).",
			tracer_signal_percentile(&s->tracer, 50),
			tracer_signal_percentile(&s->tracer, 99), s->tracer.signal_ns_total,
			s->tracer.signals_reinjected);
}

/* How the samples were taken: stack copies, perf events, reused walks,
 * polling, the tracing thread's priority. */
static void metrics_work(FILE *f, const struct sampler_stats *s)
{
	metric(f, "cprof_stack_copies_total", "counter",
	       "Stacks copied at a stop, by size: the whole stack (full), only what the "
	       "thread's earlier walks needed (short), or that and too short for the walk "
	       "(short_ran_out: the sample is cut, the thread's next copy is full).");
	fprintf(f, "cprof_stack_copies_total{copy=\"full\"} %" PRIu64 "\n", s->copies_full);
	fprintf(f, "cprof_stack_copies_total{copy=\"short\"} %" PRIu64 "\n", s->copies_short);
	fprintf(f, "cprof_stack_copies_total{copy=\"short_ran_out\"} %" PRIu64 "\n",
		s->copies_short_ran_out);
	metric(f, "cprof_perf_threads_total", "counter",
	       "Threads sampled by perf events (the kernel copies each sample; no stop), and "
	       "those whose event could not be opened (fallback: sampled at stops).");
	fprintf(f, "cprof_perf_threads_total{event=\"opened\"} %" PRIu64 "\n", s->perf_threads);
	fprintf(f, "cprof_perf_threads_total{event=\"refused\"} %" PRIu64 "\n", s->perf_fallbacks);
	metric(f, "cprof_perf_samples_lost_total", "counter",
	       "perf samples the kernel dropped, a ring being full (their CPU time goes to "
	       "the thread's next sample).");
	fprintf(f, "cprof_perf_samples_lost_total %" PRIu64 "\n", s->perf_lost);
	metric(f, "cprof_unwinds_reused_total", "counter",
	       "Walks answered by a remembered one: every register and stack word it read "
	       "was unchanged.");
	fprintf(f, "cprof_unwinds_reused_total %" PRIu64 "\n", s->unwinds_reused);
	metric(f, "cprof_stop_polls_total", "counter",
	       "Waits for a stop that polled instead of sleeping, by whether the stop came "
	       "while polling.");
	fprintf(f, "cprof_stop_polls_total{paid=\"yes\"} %" PRIu64 "\n", s->tracer.spins_paid);
	fprintf(f, "cprof_stop_polls_total{paid=\"no\"} %" PRIu64 "\n",
		s->tracer.spins - s->tracer.spins_paid);
	metric(f, "cprof_realtime_seconds_total", "counter",
	       "Time the sampling thread ran at a real-time priority (--sched).");
	fprintf(f, "cprof_realtime_seconds_total %.9f\n", (double)s->tracer.sched_rt_ns / 1e9);
	metric(f, "cprof_threads_seen_total", "counter", "Threads traced, summed over sessions.");
	fprintf(f, "cprof_threads_seen_total %" PRIu64 "\n", s->tracer.threads_seen);
}

void serve_metrics_write(struct serve_ctx *c, FILE *f)
{
	struct hub_totals t;

	hub_totals(c->hub, &t);
	metrics_server(c, f, &t);
	metrics_samples(f, &t.sum);
	metrics_stops(f, &t.sum);
	metrics_work(f, &t.sum);
}
