/* SPDX-License-Identifier: MIT */
/*
 * A request of cprof serve, and the helpers that answer one, shared by
 * the files of its HTTP side: serve_http.c (the daemon, dispatch, the
 * index, /metrics and thread dumps) and serve_profile.c (profiles).
 * Called on libmicrohttpd's thread, except serve_req_text and
 * serve_req_resume, which a thread dump's worker and the hub's callbacks
 * also call (the request is suspended then: nothing else touches it).
 */
#ifndef CPROF_CLI_SERVE_REQ_H
#define CPROF_CLI_SERVE_REQ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <microhttpd.h>

#include "cli/serve.h"

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
	size_t modules_cut;	/* modules --write-timeout left unnamed */
};

/* Counts an answer in c->requests by its status class. */
void serve_count_status(struct serve_ctx *c, unsigned status);

/* Queues body (copied) with status and content type, plus an optional
 * extra header (hname may be NULL). */
enum MHD_Result serve_answer(struct MHD_Connection *conn, unsigned status, const char *ctype,
			     const char *body, size_t len, const char *hname, const char *hvalue);

/* An error as net/http/pprof writes one (plain text, X-Go-Pprof), counted. */
enum MHD_Result serve_answer_error(struct serve_ctx *c, struct MHD_Connection *conn,
				   unsigned status, const char *hname, const char *hvalue,
				   const char *fmt, ...) __attribute__((format(printf, 6, 7)));

/* Sets r's answer to a plain-text status and reason. */
void serve_req_text(struct req *r, unsigned status, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Hands a suspended request, its answer set, back to libmicrohttpd. */
void serve_req_resume(struct serve_ctx *c, struct req *r);

/* serve_profile.c: a profile's response headers, for its mode. */
void serve_profile_headers(struct MHD_Response *resp, enum sampler_mode mode);

/* serve_profile.c: GET or HEAD /debug/pprof/profile or /wall. */
enum MHD_Result serve_route_profile(struct serve_ctx *c, struct req *r, bool head,
				    enum sampler_mode mode);

#endif
