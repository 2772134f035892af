/* SPDX-License-Identifier: MIT */
/*
 * cprof serve's HTTP daemon, on libmicrohttpd, with net/http/pprof's paths,
 * parameters and content types so that go tool pprof, Parca and Grafana
 * Alloy fetch from it unchanged: dispatch, answers, the index, /metrics
 * and thread dumps (profiles are serve_profile.c).  A request that takes
 * time is suspended and resumed with its answer; libmicrohttpd's own
 * thread keeps serving everyone else.
 */
#include "config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <microhttpd.h>

#include "cli/serve_req.h"

void serve_count_status(struct serve_ctx *c, unsigned status)
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
enum MHD_Result serve_answer(struct MHD_Connection *conn, unsigned status, const char *ctype,
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
enum MHD_Result serve_answer_error(struct serve_ctx *c, struct MHD_Connection *conn,
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
	serve_count_status(c, status);
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
void serve_req_text(struct req *r, unsigned status, const char *fmt, ...)
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
	serve_count_status(c, MHD_HTTP_OK);
	ret = serve_answer(r->conn, MHD_HTTP_OK, "text/html; charset=utf-8", body, (size_t)n, NULL, NULL);
	free(body);
	return ret;
}

static enum MHD_Result route_metrics(struct serve_ctx *c, struct req *r, bool head)
{
	char *body = NULL;
	size_t len = 0;
	enum MHD_Result ret;
	FILE *f;

	f = open_memstream(&body, &len);
	if (!f)
		return serve_answer_error(c, r->conn, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL, NULL,
					"cannot make the metrics: %s", strerror(errno));
	serve_metrics_write(c, f);
	if (fclose(f) != 0) {
		free(body);
		return serve_answer_error(c, r->conn, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL, NULL,
					"cannot make the metrics: %s", strerror(errno));
	}
	serve_count_status(c, MHD_HTTP_OK);
	ret = serve_answer(r->conn, MHD_HTTP_OK, "text/plain; version=0.0.4; charset=utf-8", body, len,
			  NULL, NULL);
	free(body);
	return ret;
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
		serve_req_text(r, MHD_HTTP_SERVICE_UNAVAILABLE,
			     "cannot dump the threads now: a profile is being taken (retry after %llu s)\n",
			     (unsigned long long)((retry_ns + NS - 1) / NS));
		goto out;
	}
	if (err < 0) {
		serve_req_text(r, MHD_HTTP_SERVICE_UNAVAILABLE, "cprof serve is shutting down\n");
		goto out;
	}
	f = open_memstream(&r->text, &len);
	if (!f) {
		err = -errno;
		snprintf(why, sizeof(why), "%s", strerror(errno));
	} else {
		err = cli_dump_threads_write(f, c->pid, r->json, c->helper, why,
					     sizeof(why));
		if (fclose(f) != 0 && err == 0) {
			err = -errno;
			snprintf(why, sizeof(why), "%s", strerror(errno));
		}
	}
	hub_dump_end(c->hub);
	if (err < 0) {
		serve_req_text(r, MHD_HTTP_INTERNAL_SERVER_ERROR, "cannot dump the threads of pid %d: %s\n",
			     (int)c->pid, why);
	} else {
		r->status = MHD_HTTP_OK;
		r->text_len = len;
		r->ctype = r->json ? "application/json" : CT_TEXT;
	}
out:
	serve_req_resume(c, r);
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
		return serve_answer_error(c, r->conn, MHD_HTTP_BAD_REQUEST, NULL, NULL,
					"invalid format '%.40s': text (the default) or json", fmt);
	if (head) {
		serve_count_status(c, MHD_HTTP_OK);
		return serve_answer(r->conn, MHD_HTTP_OK, r->json ? "application/json" : CT_TEXT, "", 0,
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
		return serve_answer_error(c, r->conn, MHD_HTTP_SERVICE_UNAVAILABLE, NULL, NULL,
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
		return serve_answer(r->conn, MHD_HTTP_SERVICE_UNAVAILABLE, CT_TEXT, "", 0, NULL, NULL);
	}
	serve_count_status(c, r->status);
	if (r->fd >= 0) {
		resp = MHD_create_response_from_fd(r->size, r->fd);
		if (!resp)
			return MHD_NO;
		r->fd = -1;	/* the response closes it */
		serve_profile_headers(resp, r->w.mode);
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
	return serve_answer(r->conn, r->status, r->ctype, r->text ? r->text : "", r->text_len, NULL, NULL);
}

static enum MHD_Result route_profile(struct serve_ctx *c, struct req *r, bool head)
{
	return serve_route_profile(c, r, head, SAMPLER_CPU);
}

static enum MHD_Result route_wall(struct serve_ctx *c, struct req *r, bool head)
{
	return serve_route_profile(c, r, head, SAMPLER_WALL);
}

/* /debug/pprof without its slash: where the index is. */
static enum MHD_Result route_redirect(struct serve_ctx *c, struct req *r, bool head)
{
	serve_count_status(c, MHD_HTTP_MOVED_PERMANENTLY);
	return serve_answer(r->conn, MHD_HTTP_MOVED_PERMANENTLY, CT_TEXT, "", 0,
			    MHD_HTTP_HEADER_LOCATION, "/debug/pprof/");
}

/* Every path served, with what answers it (GET or HEAD). */
static const struct {
	const char *path;
	enum MHD_Result (*answer)(struct serve_ctx *c, struct req *r, bool head);
} routes[] = {
	{ "/debug/pprof/profile", route_profile },
	{ "/debug/pprof/wall", route_wall },
	{ "/debug/pprof/threads", route_threads },
	{ "/debug/pprof/", route_index },
	{ "/debug/pprof", route_redirect },
	{ "/metrics", route_metrics },
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
		return serve_answer_error(c, conn, MHD_HTTP_NOT_FOUND, NULL, NULL,
					"unknown path '%.100s': cprof serves /debug/pprof/profile, "
					"/debug/pprof/wall, /debug/pprof/threads, /debug/pprof/ and /metrics",
					url);
	head = strcmp(method, MHD_HTTP_METHOD_HEAD) == 0;
	if (!head && strcmp(method, MHD_HTTP_METHOD_GET) != 0)
		return serve_answer_error(c, conn, MHD_HTTP_METHOD_NOT_ALLOWED, MHD_HTTP_HEADER_ALLOW,
					"GET, HEAD", "method %.20s not allowed: use GET (or HEAD)",
					method);
	return routes[i].answer(c, r, head);
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
