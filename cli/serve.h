/* SPDX-License-Identifier: MIT */
/* cprof serve's two halves: the command (serve.c) and its HTTP endpoints (serve_http.c,
 * serve_profile.c, serve_metrics.c). */
#ifndef CPROF_CLI_SERVE_H
#define CPROF_CLI_SERVE_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "cli/cli.h"
#include "serve/hub.h"

struct MHD_Daemon;

struct serve_ctx {
	/* Set by serve.c before serve_http_start. */
	pid_t pid;
	struct cli_session a;	/* hz, stack_size, stop; the mode is per request */
	unsigned max_seconds;
	unsigned max_connections;
	unsigned timeout_s;	/* idle connections and slow headers */
	bool quiet;
	int listen_fd;
	int wake_fd;		/* eventfd: written when a session ends on its own */
	struct hub *hub;
	struct conf_helper *helper;	/* the confined parser (cli_helper_start) */

	/* serve_http.c's. */
	struct MHD_Daemon *daemon;
	pthread_mutex_t mu;	/* orders suspend before resume; the fields below */
	pthread_cond_t cond;
	unsigned suspended;	/* requests waiting for a profile or a dump */
	unsigned answering;	/* resumed, response not sent yet */
	uint64_t requests[4];	/* responses by class: 2xx, 3xx, 4xx, 5xx */
	bool sampling_failed;	/* a session could not sample: exit status 1 */
	bool target_exited;	/* a session ended because the target exited */
	int stop_signal;	/* a session ended on this signal (-1: unnamed), 0 if none */
	/* modules the parser answered an error for, "path\tbuild id", each
	 * reported once in serve's life: exit status 1 */
	char **parser_failed;
	size_t n_parser_failed, cap_parser_failed;
};

/* Starts the HTTP daemon on c->listen_fd.  Returns 0 or -errno. */
int serve_http_start(struct serve_ctx *c);

/*
 * After hub_shutdown: waits (up to timeout_ns) for the answers already
 * resumed to be sent, then stops the daemon.
 */
void serve_http_stop(struct serve_ctx *c, uint64_t timeout_ns);

/* The hub's callbacks (serve_http.c): build a window's profile, answer
 * its request, note a session's end. */
int serve_http_build(struct hub_window *w, const struct hub_profile *p, void *arg);
void serve_http_done(struct hub_window *w, void *arg);
void serve_http_session_end(const struct sampler_stats *st, int err, void *arg);

/* serve_metrics.c: the /metrics text of c's sessions and requests, into f. */
void serve_metrics_write(struct serve_ctx *c, FILE *f);

#endif
