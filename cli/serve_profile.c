/* SPDX-License-Identifier: MIT */
/*
 * cprof serve's profiles (/debug/pprof/profile and /wall): a request opens
 * a window of the shared session (serve/hub.c) and is suspended; the hub
 * builds its profile into a memfd and hands it back, which resumes it.
 */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <microhttpd.h>

#include "cli/serve_req.h"
#include "lib/grow.h"
#include "symbolize/symbolize.h"
#include "profile/profile.h"

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
		return serve_answer_error(c, r->conn, MHD_HTTP_BAD_REQUEST, NULL, NULL,
					"seconds is empty: give a whole number of seconds, 1..%u",
					c->max_seconds);
	for (i = 0; i < len; i++) {
		if (v[i] < '0' || v[i] > '9' || n > c->max_seconds)
			break;
		n = n * 10 + (unsigned long)(v[i] - '0');
	}
	if (i < len && (v[i] < '0' || v[i] > '9'))
		return serve_answer_error(c, r->conn, MHD_HTTP_BAD_REQUEST, NULL, NULL,
					"invalid seconds '%.*s': give a whole number of seconds, 1..%u",
					(int)(len > 40 ? 40 : len), v, c->max_seconds);
	if (n == 0)
		return serve_answer_error(c, r->conn, MHD_HTTP_BAD_REQUEST, NULL, NULL,
					"invalid seconds '%.*s': a profile lasts at least 1 second",
					(int)(len > 40 ? 40 : len), v);
	if (i < len || n > c->max_seconds)
		return serve_answer_error(c, r->conn, MHD_HTTP_BAD_REQUEST, NULL, NULL,
					"seconds %.*s is over this server's maximum of %u "
					"(cprof serve --max-seconds)",
					(int)(len > 40 ? 40 : len), v, c->max_seconds);
	*bad = false;
	r->seconds = n;
	return MHD_YES;
}

void serve_profile_headers(struct MHD_Response *resp, enum sampler_mode mode)
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

enum MHD_Result serve_route_profile(struct serve_ctx *c, struct req *r, bool head,
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
		serve_profile_headers(resp, mode);
		serve_count_status(c, MHD_HTTP_OK);
		ret = MHD_queue_response(r->conn, MHD_HTTP_OK, resp);
		MHD_destroy_response(resp);
		return ret;
	}
	err = hub_window_init(&r->w);
	if (err < 0)
		return serve_answer_error(c, r->conn, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL, NULL,
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
		return serve_answer_error(c, r->conn, MHD_HTTP_SERVICE_UNAVAILABLE,
					MHD_HTTP_HEADER_RETRY_AFTER, retry,
					"cannot take a %s profile now: %s, and cprof traces a process "
					"in one mode at a time (retry after %s s)",
					mode_name(mode),
					mode == SAMPLER_WALL ? "a CPU profile is being taken" :
					"a wall-clock profile or a thread dump is being taken",
					retry);
	if (err == -ESHUTDOWN)
		return serve_answer_error(c, r->conn, MHD_HTTP_SERVICE_UNAVAILABLE, NULL, NULL,
					"cprof serve is shutting down");
	return serve_answer_error(c, r->conn, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL, NULL,
				 "cannot start a profile: %s", strerror(-err));
}

/* Whether key is in c's list of modules the parser failed on; adds it if
 * not.  Under c->mu.  A list that cannot grow reports again: no error. */
static bool parser_failed_seen(struct serve_ctx *c, const char *key)
{
	char *copy;
	size_t i;

	for (i = 0; i < c->n_parser_failed; i++)
		if (strcmp(c->parser_failed[i], key) == 0)
			return true;
	copy = strdup(key);
	if (!copy || cprof_grow(&c->parser_failed, &c->cap_parser_failed,
				c->n_parser_failed + 1, sizeof(*c->parser_failed), 4) < 0) {
		free(copy);
		return false;
	}
	c->parser_failed[c->n_parser_failed++] = copy;
	return false;
}

/*
 * Reports each module of p the parser answered an error for (its frames
 * were left as addresses), once per module in serve's life although every
 * window of the session asks the same symbolizer, as attach reports it
 * once after its profile.
 */
static void report_parser_errors(struct serve_ctx *c, const struct hub_profile *p)
{
	const struct proc_module *m;
	char key[PATH_MAX + 128];
	size_t i, n = proc_modules_count(p->mods);
	bool seen;
	int err;

	for (i = 1; i <= n; i++) {
		m = proc_modules_get(p->mods, (uint32_t)i);
		if (!m)
			continue;
		/* named, or walked (the window is built on the session thread) */
		err = p->sym ? sym_module_parser_error(p->sym, m) : 0;
		if (!err && p->sampler)
			err = sampler_walk_error(p->sampler, m->id);
		if (!err)
			continue;
		snprintf(key, sizeof(key), "%s\t%s", m->path, m->build_id ? m->build_id : "");
		pthread_mutex_lock(&c->mu);
		seen = parser_failed_seen(c, key);
		pthread_mutex_unlock(&c->mu);
		if (!seen)
			cli_helper_report_error(m, err);
	}
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
	ret = cli_session_profile(&a, what, p->sampler, p->stacks, p->sym, p->stats, &b,
				  &r->modules_cut);
	if (ret < 0)
		return ret;
	report_parser_errors(c, p);
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
		serve_req_text(r, MHD_HTTP_SERVICE_UNAVAILABLE, "cprof serve is shutting down\n");
	} else if (w->attach_failed) {
		if (!cli_attach_obstacle(c->pid, w->err, why, sizeof(why)))
			snprintf(why, sizeof(why), "%s", strerror(-w->err));
		serve_req_text(r, MHD_HTTP_INTERNAL_SERVER_ERROR, "cannot attach to pid %d: %s\n",
			     (int)c->pid, why);
	} else {
		serve_req_text(r, MHD_HTTP_INTERNAL_SERVER_ERROR, "cannot profile pid %d: %s\n",
			     (int)c->pid, strerror(-w->err));
	}
}

/* Hands a finished request back to libmicrohttpd. */
void serve_req_resume(struct serve_ctx *c, struct req *r)
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
		char cut[128] = "";

		r->status = MHD_HTTP_OK;
		if (r->modules_cut)
			snprintf(cut, sizeof(cut), "; symbolizing ran out of time (--write-timeout): "
				 "%zu module%s keep%s addresses and build ids", r->modules_cut,
				 r->modules_cut == 1 ? "" : "s", r->modules_cut == 1 ? "s" : "");
		if (!c->quiet)
			fprintf(stderr,
				"cprof: GET /debug/pprof/%s?seconds=%lu: 200, %llu samples in %.2f s%s%s\n",
				w->mode == SAMPLER_WALL ? "wall" : "profile", r->seconds,
				(unsigned long long)r->samples, (double)r->elapsed_ns / 1e9,
				w->target_exited ? " (the process exited)" : "", cut);
	}
	serve_req_resume(c, r);
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
