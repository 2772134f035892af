/* SPDX-License-Identifier: MIT */
/*
 * cprof serve's endpoints, on libmicrohttpd, with net/http/pprof's paths,
 * parameters and content types so that go tool pprof, Parca and Grafana
 * Alloy fetch from it unchanged.  A profile request is suspended while its
 * window of the shared session runs (serve/hub.c) and resumed with the
 * profile; libmicrohttpd's own thread keeps serving everyone else.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <microhttpd.h>

#include "cli/serve.h"
#include "profile/profile.h"
#include "unwind/tracer.h"

#define NS 1000000000ull

#define CT_TEXT "text/plain; charset=utf-8"

enum req_kind {
	REQ_PROFILE,
	REQ_THREADS,
};

/* One request; libmicrohttpd keeps it as the request's context. */
struct req {
	struct serve_ctx *c;
	struct MHD_Connection *conn;
	enum req_kind kind;
	bool started;		/* suspended, waiting for its answer */
	bool ready;		/* the answer below is ready */
	bool json;
	bool window_init;
	unsigned long seconds;
	struct hub_window w;
	/* the answer */
	unsigned status;
	int fd;			/* a profile in a memfd, or -1 */
	size_t size;
	char *text;		/* or a text body (malloc'd) */
	size_t text_len;
	const char *ctype;
	uint64_t samples;
	uint64_t threads;
	uint64_t elapsed_ns;
};

static void count_status(struct serve_ctx *c, unsigned status)
{
	size_t k = status / 100 - 2;

	if (status < 200 || status >= 600)
		return;
	pthread_mutex_lock(&c->mu);
	c->requests[k]++;
	pthread_mutex_unlock(&c->mu);
}

/* Queues body (copied) with status and content type, plus an optional
 * extra header. */
static enum MHD_Result answer(struct MHD_Connection *conn, unsigned status, const char *ctype,
			      const char *body, size_t len, const char *hname, const char *hvalue)
{
	struct MHD_Response *resp;
	enum MHD_Result ret;

	resp = MHD_create_response_from_buffer(len, (void *)body, MHD_RESPMEM_MUST_COPY);
	if (!resp)
		return MHD_NO;
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, ctype);
	MHD_add_response_header(resp, "X-Content-Type-Options", "nosniff");
	if (hname)
		MHD_add_response_header(resp, hname, hvalue);
	ret = MHD_queue_response(conn, status, resp);
	MHD_destroy_response(resp);
	return ret;
}

/*
 * An error as net/http/pprof writes one: plain text and the X-Go-Pprof
 * header, from which go tool pprof knows to print the body as the reason.
 */
static enum MHD_Result answer_error(struct serve_ctx *c, struct MHD_Connection *conn,
				    unsigned status, const char *hname, const char *hvalue,
				    const char *fmt, ...) __attribute__((format(printf, 6, 7)));

static enum MHD_Result answer_error(struct serve_ctx *c, struct MHD_Connection *conn,
				    unsigned status, const char *hname, const char *hvalue,
				    const char *fmt, ...)
{
	struct MHD_Response *resp;
	enum MHD_Result ret;
	char body[512];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(body, sizeof(body) - 1, fmt, ap);
	va_end(ap);
	if (n < 0)
		n = 0;
	if ((size_t)n > sizeof(body) - 2)
		n = sizeof(body) - 2;
	body[n++] = '\n';
	body[n] = 0;
	count_status(c, status);
	resp = MHD_create_response_from_buffer((size_t)n, body, MHD_RESPMEM_MUST_COPY);
	if (!resp)
		return MHD_NO;
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, CT_TEXT);
	MHD_add_response_header(resp, "X-Content-Type-Options", "nosniff");
	MHD_add_response_header(resp, "X-Go-Pprof", "1");
	if (hname)
		MHD_add_response_header(resp, hname, hvalue);
	ret = MHD_queue_response(conn, status, resp);
	MHD_destroy_response(resp);
	return ret;
}

/* Sets r's answer to a plain-text status and reason. */
static void req_text(struct req *r, unsigned status, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void req_text(struct req *r, unsigned status, const char *fmt, ...)
{
	va_list ap;
	int n;

	free(r->text);
	r->text = NULL;
	va_start(ap, fmt);
	n = vasprintf(&r->text, fmt, ap);
	va_end(ap);
	if (n < 0) {
		r->text = NULL;
		n = 0;
	}
	r->status = status;
	r->text_len = (size_t)n;
	r->ctype = CT_TEXT;
}

/* ---- /debug/pprof/ and /metrics --------------------------------------- */

static const char index_html[] =
	"<!DOCTYPE html>\n"
	"<html><head><title>cprof serve: /debug/pprof/</title></head>\n"
	"<body>\n"
	"<h1>/debug/pprof/</h1>\n"
	"<p>Profiles of process %d, taken from outside it by cprof " PACKAGE_VERSION
	" (ptrace sampling; nothing is traced between requests).</p>\n"
	"<table>\n"
	"<tr><td><a href=\"profile?seconds=30\">profile</a></td><td>CPU profile over the next "
	"<code>seconds</code> (default 30, at most %u): gzipped pprof, for "
	"<code>go tool pprof</code></td></tr>\n"
	"<tr><td><a href=\"wall?seconds=30\">wall</a></td><td>wall-clock profile: every thread, "
	"running or waiting</td></tr>\n"
	"<tr><td><a href=\"threads\">threads</a></td><td>every thread's stack now, as "
	"<code>cprof dump-threads</code> prints it (<a href=\"threads?format=json\">JSON</a>)"
	"</td></tr>\n"
	"<tr><td><a href=\"/metrics\">/metrics</a></td><td>what profiling has cost the process, "
	"in Prometheus text format</td></tr>\n"
	"</table>\n"
	"<p><code>go tool pprof http://HOST:PORT/debug/pprof/profile?seconds=30</code></p>\n"
	"</body></html>\n";

static enum MHD_Result route_index(struct serve_ctx *c, struct req *r, bool head)
{
	char *body = NULL;
	enum MHD_Result ret;
	int n;

	n = asprintf(&body, index_html, (int)c->pid, c->max_seconds);
	if (n < 0)
		return MHD_NO;
	count_status(c, MHD_HTTP_OK);
	ret = answer(r->conn, MHD_HTTP_OK, "text/html; charset=utf-8", body, (size_t)n, NULL, NULL);
	free(body);
	return ret;
}

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

/* cprof_unwinds_total{end=...}: every way a walk ends, once; the names of
 * attach's comments, with what they leave out as "other". */
static const struct {
	enum remote_end end;
	const char *name;
} end_names[] = {
	{ REMOTE_END_COMPLETE, "complete" },
	{ REMOTE_END_GO_SWITCH, "go_switch" },
	{ REMOTE_END_TRUNCATED, "truncated" },
	{ REMOTE_END_NO_INFO, "no_info" },
	{ REMOTE_END_BAD_MEMORY, "bad_memory" },
	{ REMOTE_END_BAD_FRAME, "bad_frame" },
	{ REMOTE_END_MAX_FRAMES, "max_frames" },
	{ REMOTE_END_NEED_REGS, "other" },
	{ REMOTE_END_ERROR, "other" },
};
_Static_assert(sizeof(end_names) / sizeof(end_names[0]) == REMOTE_END_ERROR + 1,
	       "every enum remote_end has a name in /metrics");

static void metrics_text(struct serve_ctx *c, FILE *f)
{
	struct hub_totals t;
	const struct sampler_stats *s = &t.sum;
	uint64_t req[4], fresh = 0, other = 0;
	size_t i;

	hub_totals(c->hub, &t);
	pthread_mutex_lock(&c->mu);
	memcpy(req, c->requests, sizeof(req));
	pthread_mutex_unlock(&c->mu);
	for (i = 0; i <= REMOTE_END_ERROR; i++)
		fresh += s->ends[i];

	metric(f, "cprof_target_info", "gauge", "The process cprof serves (always 1).");
	fprintf(f, "cprof_target_info{pid=\"%d\",version=\"%s\"} 1\n", (int)c->pid, PACKAGE_VERSION);
	metric(f, "cprof_sampling", "gauge",
	       "1 while a sampling session traces the target, 0 while it is not traced.");
	fprintf(f, "cprof_sampling{mode=\"cpu\"} %d\n", t.sampling && t.mode == SAMPLER_CPU);
	fprintf(f, "cprof_sampling{mode=\"wall\"} %d\n", t.sampling && t.mode == SAMPLER_WALL);
	metric(f, "cprof_open_profiles", "gauge", "Profile requests waiting for their window to end.");
	fprintf(f, "cprof_open_profiles %u\n", t.open_windows);
	metric(f, "cprof_sessions_total", "counter",
	       "Sampling sessions (attach to detach); overlapping requests share one.");
	fprintf(f, "cprof_sessions_total %" PRIu64 "\n", t.sessions);
	metric(f, "cprof_profiles_total", "counter", "Profiles served, by mode.");
	fprintf(f, "cprof_profiles_total{mode=\"cpu\"} %" PRIu64 "\n", t.windows[SAMPLER_CPU]);
	fprintf(f, "cprof_profiles_total{mode=\"wall\"} %" PRIu64 "\n", t.windows[SAMPLER_WALL]);
	metric(f, "cprof_profiles_failed_total", "counter",
	       "Profile requests that got no profile because sampling failed.");
	fprintf(f, "cprof_profiles_failed_total %" PRIu64 "\n", t.windows_failed);
	metric(f, "cprof_thread_dumps_total", "counter", "Thread dumps taken.");
	fprintf(f, "cprof_thread_dumps_total %" PRIu64 "\n", t.dumps);
	metric(f, "cprof_http_responses_total", "counter", "HTTP responses, by status class.");
	fprintf(f, "cprof_http_responses_total{code=\"2xx\"} %" PRIu64 "\n", req[0]);
	fprintf(f, "cprof_http_responses_total{code=\"3xx\"} %" PRIu64 "\n", req[1]);
	fprintf(f, "cprof_http_responses_total{code=\"4xx\"} %" PRIu64 "\n", req[2]);
	fprintf(f, "cprof_http_responses_total{code=\"5xx\"} %" PRIu64 "\n", req[3]);
	metric(f, "cprof_http_clients_gone_total", "counter",
	       "Profile requests whose client hung up before the profile was ready.");
	fprintf(f, "cprof_http_clients_gone_total %" PRIu64 "\n", t.clients_gone);
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
	for (i = 0; i < sizeof(end_names) / sizeof(end_names[0]); i++) {
		if (strcmp(end_names[i].name, "other") == 0)
			other += s->ends[end_names[i].end];
		else
			fprintf(f, "cprof_unwinds_total{end=\"%s\"} %" PRIu64 "\n", end_names[i].name,
				s->ends[end_names[i].end]);
	}
	fprintf(f, "cprof_unwinds_total{end=\"other\"} %" PRIu64 "\n", other);
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

static enum MHD_Result route_metrics(struct serve_ctx *c, struct req *r, bool head)
{
	char *body = NULL;
	size_t len = 0;
	enum MHD_Result ret;
	FILE *f;

	f = open_memstream(&body, &len);
	if (!f)
		return answer_error(c, r->conn, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL, NULL,
				    "cannot make the metrics: %s", strerror(errno));
	metrics_text(c, f);
	if (fclose(f) != 0) {
		free(body);
		return answer_error(c, r->conn, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL, NULL,
				    "cannot make the metrics: %s", strerror(errno));
	}
	count_status(c, MHD_HTTP_OK);
	ret = answer(r->conn, MHD_HTTP_OK, "text/plain; version=0.0.4; charset=utf-8", body, len,
		     NULL, NULL);
	free(body);
	return ret;
}

/* ---- profiles ----------------------------------------------------------- */

/* ?seconds=N: absent means 30, like net/http/pprof; anything but a
 * positive decimal integer up to --max-seconds is refused. */
static enum MHD_Result parse_seconds(struct serve_ctx *c, struct req *r, bool *bad)
{
	const char *v = NULL;
	size_t len = 0, i;
	unsigned long n = 0;

	*bad = false;
	r->seconds = 30;
	if (MHD_lookup_connection_value_n(r->conn, MHD_GET_ARGUMENT_KIND, "seconds", 7, &v, &len) !=
	    MHD_YES)
		return MHD_YES;
	*bad = true;
	if (!v || !len)
		return answer_error(c, r->conn, MHD_HTTP_BAD_REQUEST, NULL, NULL,
				    "seconds is empty: give a whole number of seconds, 1..%u",
				    c->max_seconds);
	for (i = 0; i < len; i++) {
		if (v[i] < '0' || v[i] > '9' || n > c->max_seconds)
			break;
		n = n * 10 + (unsigned long)(v[i] - '0');
	}
	if (i < len && (v[i] < '0' || v[i] > '9'))
		return answer_error(c, r->conn, MHD_HTTP_BAD_REQUEST, NULL, NULL,
				    "invalid seconds '%.*s': give a whole number of seconds, 1..%u",
				    (int)(len > 40 ? 40 : len), v, c->max_seconds);
	if (n == 0)
		return answer_error(c, r->conn, MHD_HTTP_BAD_REQUEST, NULL, NULL,
				    "invalid seconds '%.*s': a profile lasts at least 1 second",
				    (int)(len > 40 ? 40 : len), v);
	if (i < len || n > c->max_seconds)
		return answer_error(c, r->conn, MHD_HTTP_BAD_REQUEST, NULL, NULL,
				    "seconds %.*s is over this server's maximum of %u "
				    "(cprof serve --max-seconds)",
				    (int)(len > 40 ? 40 : len), v, c->max_seconds);
	*bad = false;
	r->seconds = n;
	return MHD_YES;
}

static void profile_headers(struct MHD_Response *resp, enum sampler_mode mode)
{
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "application/octet-stream");
	MHD_add_response_header(resp, "X-Content-Type-Options", "nosniff");
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_DISPOSITION,
				mode == SAMPLER_WALL ? "attachment; filename=\"wall\"" :
						       "attachment; filename=\"profile\"");
}

static const char *mode_name(enum sampler_mode m)
{
	return m == SAMPLER_WALL ? "wall" : "cpu";
}

static enum MHD_Result route_profile(struct serve_ctx *c, struct req *r, bool head,
				     enum sampler_mode mode)
{
	const union MHD_ConnectionInfo *ci;
	struct MHD_Response *resp;
	enum MHD_Result ret;
	uint64_t retry_ns = 0;
	char retry[32];
	bool bad;
	int err;

	ret = parse_seconds(c, r, &bad);
	if (bad)
		return ret;
	if (head) {
		/* What a GET would answer, without sampling anything. */
		resp = MHD_create_response_from_buffer(0, NULL, MHD_RESPMEM_PERSISTENT);
		if (!resp)
			return MHD_NO;
		profile_headers(resp, mode);
		count_status(c, MHD_HTTP_OK);
		ret = MHD_queue_response(r->conn, MHD_HTTP_OK, resp);
		MHD_destroy_response(resp);
		return ret;
	}
	err = hub_window_init(&r->w);
	if (err < 0)
		return answer_error(c, r->conn, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL, NULL,
				    "cannot start a profile: %s", strerror(-err));
	r->window_init = true;
	r->kind = REQ_PROFILE;
	r->w.mode = mode;
	r->w.duration_ns = (uint64_t)r->seconds * NS;
	r->w.user = r;
	ci = MHD_get_connection_info(r->conn, MHD_CONNECTION_INFO_CONNECTION_FD);
	r->w.client_fd = ci ? ci->connect_fd : -1;

	/* Suspended under c->mu, which done takes before resuming: the
	 * answer can never be resumed before it was suspended. */
	pthread_mutex_lock(&c->mu);
	err = hub_open(c->hub, &r->w, &retry_ns);
	if (err == 0) {
		MHD_suspend_connection(r->conn);
		r->started = true;
		c->suspended++;
	}
	pthread_mutex_unlock(&c->mu);
	if (err == 0)
		return MHD_YES;
	snprintf(retry, sizeof(retry), "%llu", (unsigned long long)((retry_ns + NS - 1) / NS));
	if (err == -EBUSY)
		return answer_error(c, r->conn, MHD_HTTP_SERVICE_UNAVAILABLE,
				    MHD_HTTP_HEADER_RETRY_AFTER, retry,
				    "cannot take a %s profile now: %s, and cprof traces a process "
				    "in one mode at a time (retry after %s s)",
				    mode_name(mode),
				    mode == SAMPLER_WALL ? "a CPU profile is being taken" :
							   "a wall-clock profile or a thread dump is being taken",
				    retry);
	if (err == -ESHUTDOWN)
		return answer_error(c, r->conn, MHD_HTTP_SERVICE_UNAVAILABLE, NULL, NULL,
				    "cprof serve is shutting down");
	return answer_error(c, r->conn, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL, NULL,
			    "cannot start a profile: %s", strerror(-err));
}

int serve_http_build(struct hub_window *w, const struct hub_profile *p, void *arg)
{
	struct serve_ctx *c = arg;
	struct req *r = w->user;
	struct cli_session a = c->a;
	struct prof_builder *b = NULL;
	char what[96];
	off_t end = 0;
	int fd, ret;

	a.mode = p->mode;
	snprintf(what, sizeof(what), "serve -p %d GET /debug/pprof/%s?seconds=%lu", (int)c->pid,
		 p->mode == SAMPLER_WALL ? "wall" : "profile", r->seconds);
	ret = cli_session_profile(&a, what, p->sampler, p->stacks, p->sym, p->stats, &b);
	if (ret < 0)
		return ret;
	/* The one write path (gzip streamed to an fd), into memory that
	 * libmicrohttpd then sends from. */
	fd = memfd_create("cprof-profile", MFD_CLOEXEC);
	if (fd < 0) {
		ret = -errno;
		goto out;
	}
	ret = prof_write_fd(b, fd);
	if (ret == 0) {
		end = lseek(fd, 0, SEEK_END);
		if (end < 0)
			ret = -errno;
	}
	if (ret < 0) {
		close(fd);
		goto out;
	}
	r->fd = fd;
	r->size = (size_t)end;
	r->samples = p->stats->samples;
	r->threads = p->stats->tracer.threads_seen;
	r->elapsed_ns = p->stats->elapsed_ns;
out:
	prof_builder_destroy(b);
	return ret;
}

/* A text answer for a finished window that has no profile. */
static void window_failure(struct serve_ctx *c, struct req *r)
{
	const struct hub_window *w = &r->w;
	char why[256];

	if (w->err == -ECANCELED || w->err == -ESHUTDOWN) {
		req_text(r, MHD_HTTP_SERVICE_UNAVAILABLE, "cprof serve is shutting down\n");
	} else if (w->attach_failed) {
		if (!cli_attach_obstacle(c->pid, w->err, why, sizeof(why)))
			snprintf(why, sizeof(why), "%s", strerror(-w->err));
		req_text(r, MHD_HTTP_INTERNAL_SERVER_ERROR, "cannot attach to pid %d: %s\n",
			 (int)c->pid, why);
	} else {
		req_text(r, MHD_HTTP_INTERNAL_SERVER_ERROR, "cannot profile pid %d: %s\n",
			 (int)c->pid, strerror(-w->err));
	}
}

/* Hands a finished request back to libmicrohttpd. */
static void resume(struct serve_ctx *c, struct req *r)
{
	pthread_mutex_lock(&c->mu);
	r->ready = true;
	c->suspended--;
	c->answering++;
	MHD_resume_connection(r->conn);
	pthread_cond_broadcast(&c->cond);
	pthread_mutex_unlock(&c->mu);
}

void serve_http_done(struct hub_window *w, void *arg)
{
	struct serve_ctx *c = arg;
	struct req *r = w->user;

	if (w->client_gone) {
		r->status = 0;	/* nobody to answer */
		if (!c->quiet)
			fprintf(stderr, "cprof: GET /debug/pprof/%s?seconds=%lu: the client hung up; "
				"its share of the sampling ended\n",
				w->mode == SAMPLER_WALL ? "wall" : "profile", r->seconds);
	} else if (w->err) {
		window_failure(c, r);
		if (w->err != -ECANCELED) {
			pthread_mutex_lock(&c->mu);
			c->sampling_failed = true;
			pthread_mutex_unlock(&c->mu);
		}
		if (!c->quiet)
			cli_error("GET /debug/pprof/%s?seconds=%lu: %u %.*s",
				  w->mode == SAMPLER_WALL ? "wall" : "profile", r->seconds, r->status,
				  r->text_len ? (int)r->text_len - 1 : 0, r->text ? r->text : "");
	} else {
		r->status = MHD_HTTP_OK;
		if (!c->quiet)
			fprintf(stderr,
				"cprof: GET /debug/pprof/%s?seconds=%lu: 200, %llu samples in %.2f s%s\n",
				w->mode == SAMPLER_WALL ? "wall" : "profile", r->seconds,
				(unsigned long long)r->samples, (double)r->elapsed_ns / 1e9,
				w->target_exited ? " (the process exited)" : "");
	}
	resume(c, r);
}

void serve_http_session_end(const struct sampler_stats *st, int err, void *arg)
{
	struct serve_ctx *c = arg;
	uint64_t one = 1;

	if (!c->quiet && st->attached)
		fprintf(stderr, "cprof: released pid %d after %.2f s of sampling (%llu samples)\n",
			(int)c->pid, (double)st->elapsed_ns / 1e9, (unsigned long long)st->samples);
	if (!st->target_exited && !st->stop_requested)
		return;
	pthread_mutex_lock(&c->mu);
	c->target_exited = c->target_exited || st->target_exited;
	/* -1: a stop signal the tracer did not name */
	if (st->stop_requested)
		c->stop_signal = st->tracer.stop_signal ? st->tracer.stop_signal : -1;
	pthread_mutex_unlock(&c->mu);
	if (write(c->wake_fd, &one, sizeof(one)) < 0) {
		/* an eventfd only fails when its counter is full: awake already */
	}
}

/* ---- /debug/pprof/threads --------------------------------------------- */

static void *dump_main(void *arg)
{
	struct req *r = arg;
	struct serve_ctx *c = r->c;
	uint64_t retry_ns = 0;
	char why[256];
	size_t len = 0;
	FILE *f;
	int err;

	err = hub_dump_begin(c->hub, &retry_ns);
	if (err == -EBUSY) {
		req_text(r, MHD_HTTP_SERVICE_UNAVAILABLE,
			 "cannot dump the threads now: a profile is being taken (retry after %llu s)\n",
			 (unsigned long long)((retry_ns + NS - 1) / NS));
		goto out;
	}
	if (err < 0) {
		req_text(r, MHD_HTTP_SERVICE_UNAVAILABLE, "cprof serve is shutting down\n");
		goto out;
	}
	f = open_memstream(&r->text, &len);
	if (!f) {
		err = -errno;
		snprintf(why, sizeof(why), "%s", strerror(errno));
	} else {
		err = cli_dump_threads_write(f, c->pid, r->json, why, sizeof(why));
		if (fclose(f) != 0 && err == 0) {
			err = -errno;
			snprintf(why, sizeof(why), "%s", strerror(errno));
		}
	}
	hub_dump_end(c->hub);
	if (err < 0) {
		req_text(r, MHD_HTTP_INTERNAL_SERVER_ERROR, "cannot dump the threads of pid %d: %s\n",
			 (int)c->pid, why);
	} else {
		r->status = MHD_HTTP_OK;
		r->text_len = len;
		r->ctype = r->json ? "application/json" : CT_TEXT;
	}
out:
	resume(c, r);
	return NULL;
}

static enum MHD_Result route_threads(struct serve_ctx *c, struct req *r, bool head)
{
	const char *fmt;
	pthread_attr_t attr;
	pthread_t th;
	int err;

	fmt = MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, "format");
	if (fmt && strcmp(fmt, "json") == 0)
		r->json = true;
	else if (fmt && strcmp(fmt, "text") != 0)
		return answer_error(c, r->conn, MHD_HTTP_BAD_REQUEST, NULL, NULL,
				    "invalid format '%.40s': text (the default) or json", fmt);
	if (head) {
		count_status(c, MHD_HTTP_OK);
		return answer(r->conn, MHD_HTTP_OK, r->json ? "application/json" : CT_TEXT, "", 0,
			      NULL, NULL);
	}
	r->kind = REQ_THREADS;
	/* The capture takes a moment (symbols load): a thread of its own,
	 * so that libmicrohttpd's thread serves everyone else meanwhile. */
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_mutex_lock(&c->mu);
	err = pthread_create(&th, &attr, dump_main, r);
	if (err == 0) {
		MHD_suspend_connection(r->conn);
		r->started = true;
		c->suspended++;
	}
	pthread_mutex_unlock(&c->mu);
	pthread_attr_destroy(&attr);
	if (err)
		return answer_error(c, r->conn, MHD_HTTP_SERVICE_UNAVAILABLE, NULL, NULL,
				    "cannot dump the threads now: %s", strerror(err));
	return MHD_YES;
}

/* ---- dispatch ----------------------------------------------------------- */

/* A suspended request's answer, now that it is ready. */
static enum MHD_Result answer_ready(struct serve_ctx *c, struct req *r)
{
	struct MHD_Response *resp;
	enum MHD_Result ret;

	if (!r->status) {
		/* The client left: this answer goes nowhere, and refusing the
		 * request instead would be logged as an application error. */
		return answer(r->conn, MHD_HTTP_SERVICE_UNAVAILABLE, CT_TEXT, "", 0, NULL, NULL);
	}
	count_status(c, r->status);
	if (r->fd >= 0) {
		resp = MHD_create_response_from_fd(r->size, r->fd);
		if (!resp)
			return MHD_NO;
		r->fd = -1;	/* the response closes it */
		profile_headers(resp, r->w.mode);
		ret = MHD_queue_response(r->conn, r->status, resp);
		MHD_destroy_response(resp);
		return ret;
	}
	if (r->status != MHD_HTTP_OK) {
		resp = MHD_create_response_from_buffer(r->text_len, r->text ? r->text : (char *)"",
						       MHD_RESPMEM_MUST_COPY);
		if (!resp)
			return MHD_NO;
		MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, CT_TEXT);
		MHD_add_response_header(resp, "X-Content-Type-Options", "nosniff");
		MHD_add_response_header(resp, "X-Go-Pprof", "1");
		ret = MHD_queue_response(r->conn, r->status, resp);
		MHD_destroy_response(resp);
		return ret;
	}
	return answer(r->conn, r->status, r->ctype, r->text ? r->text : "", r->text_len, NULL, NULL);
}

enum route {
	ROUTE_PROFILE,
	ROUTE_WALL,
	ROUTE_THREADS,
	ROUTE_INDEX,
	ROUTE_METRICS,
	ROUTE_REDIRECT,
};

static const struct {
	const char *path;
	enum route route;
} routes[] = {
	{ "/debug/pprof/profile", ROUTE_PROFILE },
	{ "/debug/pprof/wall", ROUTE_WALL },
	{ "/debug/pprof/threads", ROUTE_THREADS },
	{ "/debug/pprof/", ROUTE_INDEX },
	{ "/debug/pprof", ROUTE_REDIRECT },
	{ "/metrics", ROUTE_METRICS },
};

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
				  const char *method, const char *version, const char *upload,
				  size_t *upload_size, void **req_cls)
{
	struct serve_ctx *c = cls;
	struct req *r = *req_cls;
	bool head;
	size_t i;

	if (!r) {
		/* First call: headers only.  Answer once the request is whole. */
		r = calloc(1, sizeof(*r));
		if (!r)
			return MHD_NO;
		r->c = c;
		r->conn = conn;
		r->fd = -1;
		*req_cls = r;
		return MHD_YES;
	}
	if (*upload_size) {
		*upload_size = 0;	/* no endpoint takes a body */
		return MHD_YES;
	}
	if (r->ready)
		return answer_ready(c, r);
	if (r->started)
		return MHD_YES;

	for (i = 0; i < sizeof(routes) / sizeof(routes[0]); i++)
		if (strcmp(url, routes[i].path) == 0)
			break;
	if (i == sizeof(routes) / sizeof(routes[0]))
		return answer_error(c, conn, MHD_HTTP_NOT_FOUND, NULL, NULL,
				    "unknown path '%.100s': cprof serves /debug/pprof/profile, "
				    "/debug/pprof/wall, /debug/pprof/threads, /debug/pprof/ and /metrics",
				    url);
	head = strcmp(method, MHD_HTTP_METHOD_HEAD) == 0;
	if (!head && strcmp(method, MHD_HTTP_METHOD_GET) != 0)
		return answer_error(c, conn, MHD_HTTP_METHOD_NOT_ALLOWED, MHD_HTTP_HEADER_ALLOW,
				    "GET, HEAD", "method %.20s not allowed: use GET (or HEAD)",
				    method);
	switch (routes[i].route) {
	case ROUTE_PROFILE:
		return route_profile(c, r, head, SAMPLER_CPU);
	case ROUTE_WALL:
		return route_profile(c, r, head, SAMPLER_WALL);
	case ROUTE_THREADS:
		return route_threads(c, r, head);
	case ROUTE_INDEX:
		return route_index(c, r, head);
	case ROUTE_METRICS:
		return route_metrics(c, r, head);
	case ROUTE_REDIRECT:
		count_status(c, MHD_HTTP_MOVED_PERMANENTLY);
		return answer(conn, MHD_HTTP_MOVED_PERMANENTLY, CT_TEXT, "", 0,
			      MHD_HTTP_HEADER_LOCATION, "/debug/pprof/");
	}
	return MHD_NO;
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **req_cls,
			 enum MHD_RequestTerminationCode toe)
{
	struct serve_ctx *c = cls;
	struct req *r = *req_cls;

	if (!r)
		return;
	if (r->ready) {
		pthread_mutex_lock(&c->mu);
		c->answering--;
		pthread_cond_broadcast(&c->cond);
		pthread_mutex_unlock(&c->mu);
	}
	if (r->window_init)
		hub_window_fini(&r->w);
	if (r->fd >= 0)
		close(r->fd);
	free(r->text);
	free(r);
	*req_cls = NULL;
}

static void on_log(void *cls, const char *fmt, va_list ap)
{
	struct serve_ctx *c = cls;
	char msg[512];
	size_t n;

	if (c->quiet)
		return;
	vsnprintf(msg, sizeof(msg), fmt, ap);
	n = strlen(msg);
	while (n && msg[n - 1] == '\n')
		msg[--n] = 0;
	cli_error("http: %s", msg);
}

int serve_http_start(struct serve_ctx *c)
{
	pthread_mutex_init(&c->mu, NULL);
	pthread_cond_init(&c->cond, NULL);
	/*
	 * One internal thread (epoll where available) serves every
	 * connection; a profile request is suspended meanwhile, so idle and
	 * slow clients cost a slot of the connection limit, not a thread.
	 * The timeout closes connections idle for that long, slow headers
	 * included.
	 */
	c->daemon = MHD_start_daemon(
		MHD_USE_AUTO_INTERNAL_THREAD | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ERROR_LOG, 0, NULL,
		NULL, on_request, c,
		MHD_OPTION_EXTERNAL_LOGGER, on_log, c,	/* first, or MHD logs before it */
		MHD_OPTION_LISTEN_SOCKET, c->listen_fd,
		MHD_OPTION_CONNECTION_LIMIT, c->max_connections,
		MHD_OPTION_CONNECTION_TIMEOUT, c->timeout_s,
		MHD_OPTION_NOTIFY_COMPLETED, on_completed, c,
		MHD_OPTION_END);
	if (!c->daemon)
		return errno ? -errno : -EIO;
	return 0;
}

void serve_http_stop(struct serve_ctx *c, uint64_t timeout_ns)
{
	uint64_t deadline = hub_now_ns() + timeout_ns;
	struct timespec ts;

	pthread_mutex_lock(&c->mu);
	/* Thread dumps still running end on their own (the hub refuses new
	 * captures once shut down); then the answers go out. */
	while ((c->suspended || c->answering) && hub_now_ns() < deadline) {
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += 100000000;
		if (ts.tv_nsec >= 1000000000) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000;
		}
		pthread_cond_timedwait(&c->cond, &c->mu, &ts);
	}
	pthread_mutex_unlock(&c->mu);
	/* libmicrohttpd must not be stopped with a connection suspended; a
	 * dump that outlived the wait is still one, and then the process
	 * ends without stopping the daemon. */
	if (c->daemon && !c->suspended) {
		MHD_stop_daemon(c->daemon);
		c->daemon = NULL;
	}
}
