/* SPDX-License-Identifier: MIT */
/* cprof serve: a running process's /debug/pprof endpoints, from outside it. */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "cli/serve.h"

#define DEFAULT_LISTEN "127.0.0.1:6060"
#define DEFAULT_MAX_SECONDS 300
#define MAX_MAX_SECONDS 86400
#define DEFAULT_CONNECTIONS 64
#define DEFAULT_TIMEOUT 10
/* How long answers already due may take to go out when serve ends. */
#define DRAIN_NS 5000000000ull

static void serve_usage(FILE *f)
{
	fprintf(f,
		"usage: cprof serve -p PID [--listen ADDR:PORT] [--max-seconds N] [-F HZ]\n"
		"                   [--stop thread|process] [--source auto|perf|ptrace]\n"
		"                   [--stack-size BYTES] [--kernel on|off] [--python auto|off]\n"
		"                   [--debuginfod-timeout D] [--no-debuginfod]\n"
		"                   [--max-connections N] [--timeout SECONDS] [-q]\n"
		"                   [--helper-user USER] [--write-timeout D]\n"
		"\n"
		"Serves the running process PID's profiles over HTTP at the paths of Go's\n"
		"net/http/pprof, for go tool pprof, Parca and Grafana Alloy.  The process is\n"
		"traced only while a profile is being taken.\n"
		"\n"
		"  -p, --pid PID          process to serve\n"
		"      --listen ADDR:PORT where to listen (default " DEFAULT_LISTEN "; port 0: any\n"
		"                         free port); an address other than loopback lets every\n"
		"                         host that reaches it profile the process\n"
		"      --max-seconds N    longest profile a request may ask for (default %d)\n"
		"  -F, --frequency HZ     samples per second per thread, 1..1000 (default 100)\n"
		"      --stop thread|process\n"
		"                         thread (default): one at a time; process: the sampled\n"
		"                         threads together (one instant)\n"
		"      --source auto|perf|ptrace\n"
		"                         who copies a CPU profile's samples: perf, the kernel\n"
		"                         (no stop); ptrace, cprof at a stop; auto (default):\n"
		"                         perf when permitted.  Wall profiles use stops\n"
		"      --kernel on|off    on (default): perf samples taken in the kernel carry\n"
		"                         its frames, where permitted\n"
		"      --python auto|off  auto (default): CPython's frames in the profiles,\n"
		"                         read at stops (3.8-3.13)\n"
		"      --stack-size N     bytes of stack copied per sample, 4k..8m (default 64k;\n"
		"                         16k for perf samples unless given, at most 65528)\n"
		"      --debuginfod-timeout D\n"
		"                         bound of one debuginfo download from DEBUGINFOD_URLS\n"
		"                         (default 5s; a session's downloads get six times that)\n"
		"      --no-debuginfod    download no debuginfo, even with DEBUGINFOD_URLS set\n"
		"      --helper-user USER the confined parser's user when root (default nobody)\n"
		"      --write-timeout D  bound of symbolizing a profile after its window ends\n"
		"                         (default 20s); past it, frames keep their addresses\n"
		"      --max-connections N\n"
		"                         connections served at once (default %d)\n"
		"      --timeout SECONDS  close connections idle that long, slow request headers\n"
		"                         included (default %d)\n"
		"  -q, --quiet            no line per profile on stderr\n"
		"  -h, --help             this help\n",
		DEFAULT_MAX_SECONDS, DEFAULT_CONNECTIONS, DEFAULT_TIMEOUT);
}

/* "HOST:PORT" or "[V6]:PORT" into a listening socket.  Returns the socket
 * or -errno (-EINVAL: not an address; *gai the getaddrinfo error then). */
static int listen_on(const char *spec, bool *loopback, char *shown, size_t size, int *gai)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICSERV };
	struct addrinfo *res = NULL;
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	char host[256], port[16], addr[INET6_ADDRSTRLEN];
	const char *colon;
	size_t hlen;
	int fd = -EINVAL, one = 1;

	*gai = 0;
	colon = strrchr(spec, ':');
	if (!colon || colon == spec || !colon[1] || strlen(colon + 1) >= sizeof(port))
		return -EINVAL;
	hlen = (size_t)(colon - spec);
	if (spec[0] == '[') {
		if (hlen < 3 || spec[hlen - 1] != ']')
			return -EINVAL;
		spec++;
		hlen -= 2;
	}
	if (hlen >= sizeof(host))
		return -EINVAL;
	memcpy(host, spec, hlen);
	host[hlen] = 0;
	snprintf(port, sizeof(port), "%s", colon + 1);
	*gai = getaddrinfo(host, port, &hints, &res);
	if (*gai)
		return -EINVAL;
	fd = socket(res->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		fd = -errno;
		goto out;
	}
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, res->ai_addr, res->ai_addrlen) < 0 || listen(fd, 128) < 0 ||
	    getsockname(fd, (struct sockaddr *)&ss, &sl) < 0) {
		int err = -errno;

		close(fd);
		fd = err;
		goto out;
	}
	if (ss.ss_family == AF_INET6) {
		const struct sockaddr_in6 *a6 = (const struct sockaddr_in6 *)&ss;

		*loopback = IN6_IS_ADDR_LOOPBACK(&a6->sin6_addr) ||
			    (IN6_IS_ADDR_V4MAPPED(&a6->sin6_addr) && a6->sin6_addr.s6_addr[12] == 127);
		inet_ntop(AF_INET6, &a6->sin6_addr, addr, sizeof(addr));
		snprintf(shown, size, "[%s]:%u", addr, ntohs(a6->sin6_port));
	} else {
		const struct sockaddr_in *a4 = (const struct sockaddr_in *)&ss;

		*loopback = (ntohl(a4->sin_addr.s_addr) >> 24) == 127;
		inet_ntop(AF_INET, &a4->sin_addr, addr, sizeof(addr));
		snprintf(shown, size, "%s:%u", addr, ntohs(a4->sin_port));
	}
out:
	freeaddrinfo(res);
	return fd;
}

static const struct cli_command_line serve_line = {
	.name = "serve", .usage = serve_usage, .min_args = 0, .max_args = 0,
};

/* pidfd_open(2): readable once the process has exited.  -1 if the kernel
 * has none (before 5.3): then the main loop looks every second. */
static int open_pidfd(pid_t pid)
{
#ifdef SYS_pidfd_open
	return (int)syscall(SYS_pidfd_open, pid, 0);
#else
	(void)pid;
	errno = ENOSYS;
	return -1;
#endif
}

enum end_reason {
	END_SIGNAL,
	END_TARGET,
	END_ERROR,
};

/* Waits until a stop signal arrives or the target exits. */
static enum end_reason wait_for_end(struct serve_ctx *c, int sfd, int pidfd, int *sig)
{
	struct pollfd p[3] = {
		{ .fd = sfd, .events = POLLIN },
		{ .fd = c->wake_fd, .events = POLLIN },
		{ .fd = pidfd, .events = POLLIN },
	};
	struct signalfd_siginfo si;
	uint64_t n;

	for (;;) {
		int r = poll(p, pidfd >= 0 ? 3 : 2, pidfd >= 0 ? -1 : 1000);

		if (r < 0 && errno != EINTR)
			return END_ERROR;
		if (r > 0 && (p[0].revents & POLLIN) && read(sfd, &si, sizeof(si)) == sizeof(si)) {
			*sig = (int)si.ssi_signo;
			return END_SIGNAL;
		}
		if (r > 0 && (p[1].revents & POLLIN)) {
			if (read(c->wake_fd, &n, sizeof(n)) < 0) {
				/* drained by an earlier read: nothing to do */
			}
			bool exited;

			pthread_mutex_lock(&c->mu);
			*sig = c->stop_signal;
			exited = c->target_exited;
			pthread_mutex_unlock(&c->mu);
			if (*sig)
				return END_SIGNAL;
			if (exited)
				return END_TARGET;
		}
		if (r > 0 && pidfd >= 0 && (p[2].revents & POLLIN))
			return END_TARGET;
		if (pidfd < 0 && cli_target_gone(c->pid))
			return END_TARGET;
	}
}

/* The command line into c.  Returns CPROF_EXIT_OK, CLI_HELP_SHOWN or the exit
 * code. */
static int parse_serve_args(struct serve_ctx *c, int argc, char **argv, const char **listen_spec)
{
	unsigned long max_seconds = DEFAULT_MAX_SECONDS, max_conn = DEFAULT_CONNECTIONS;
	unsigned long timeout_s = DEFAULT_TIMEOUT;
	const struct cli_option opts[] = {
		CLI_OPTION_CALLBACK('p', "pid", &c->pid, cli_opt_pid),
		CLI_OPTION_STRING(0, "listen", listen_spec),
		CLI_OPTION_ULONG(0, "max-seconds", &max_seconds, 1, MAX_MAX_SECONDS),
		CLI_OPTION_ULONG(0, "max-connections", &max_conn, 1, 100000),
		CLI_OPTION_ULONG(0, "timeout", &timeout_s, 1, 3600),
		CLI_SAMPLING_OPTIONS(&c->a),
		CLI_OPTION_CALLBACK(0, "write-timeout", &c->a, cli_session_opt_write_timeout),
		CLI_OPTION_BOOL('q', "quiet", &c->quiet),
		CLI_OPTION_END,
	};
	enum cli_parse_result r;
	char why[256];
	int first;

	cli_session_defaults(&c->a);
	r = cli_parse_pid_options(&serve_line, opts, argc, argv, &first, &c->pid);
	if (r == CLI_PARSE_HELP)
		return CLI_HELP_SHOWN;
	if (r != CLI_PARSE_OK)
		return cli_parse_exit_code(r);
	if (c->a.source == SAMPLER_SOURCE_PERF && c->a.stop == SAMPLER_STOP_PROCESS) {
		cli_error("serve: --source perf stops no thread; --stop process needs --source ptrace");
		return CPROF_EXIT_USAGE;
	}
	c->max_seconds = (unsigned)max_seconds;
	c->max_connections = (unsigned)max_conn;
	c->timeout_s = (unsigned)timeout_s;
	if (cli_attach_obstacle(c->pid, 0, why, sizeof(why))) {
		cli_error("cannot serve pid %d: %s", (int)c->pid, why);
		return CPROF_EXIT_FATAL;
	}
	return CPROF_EXIT_OK;
}

/* Binds c->listen_fd, warning when it is not loopback.  Returns an exit code. */
static int open_listener(struct serve_ctx *c, const char *listen_spec, char *shown, size_t size)
{
	bool loopback = true;
	int ret, gai;

	ret = listen_on(listen_spec, &loopback, shown, size, &gai);
	if (ret == -EINVAL) {
		cli_error("cannot listen on '%s': %s (give ADDR:PORT, e.g. 127.0.0.1:6060)",
			  listen_spec, gai ? gai_strerror(gai) : "not an address and port");
		return CPROF_EXIT_USAGE;
	}
	if (ret < 0) {
		cli_error("cannot listen on '%s': %s%s", listen_spec, strerror(-ret),
			  ret == -EADDRINUSE ? " (another server has that port: pick another with --listen)" :
			  ret == -EACCES ? " (ports below 1024 need privileges)" : "");
		return CPROF_EXIT_FATAL;
	}
	c->listen_fd = ret;
	if (!loopback)
		cli_error("warning: listening on %s, not loopback: every host that can reach it "
			  "can profile pid %d, read its function names and stacks, and make cprof "
			  "stop its threads; there is no authentication", shown, (int)c->pid);
	return CPROF_EXIT_OK;
}

/*
 * Blocks the stop signals before any thread exists, so that every thread
 * inherits the mask: the signals are read here (the returned signalfd) or,
 * while a session runs, by the session, which then says so through
 * c->wake_fd.  A client that hangs up is an EPIPE on its socket, never a
 * SIGPIPE.  Returns the signalfd, or -1 with errno set.
 */
static int block_stop_signals(struct serve_ctx *c)
{
	sigset_t mask;

	signal(SIGPIPE, SIG_IGN);
	sigemptyset(&mask);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGHUP);
	sigaddset(&mask, SIGCHLD);
	pthread_sigmask(SIG_BLOCK, &mask, NULL);
	sigdelset(&mask, SIGCHLD);
	c->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (c->wake_fd < 0)
		return -1;
	/* Non-blocking: a running session's signalfd may take the signal
	 * this one was woken for. */
	return signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
}

/* Says why serve ended.  Returns the exit code. */
static int report_end(struct serve_ctx *c, enum end_reason end, int sig)
{
	struct hub_totals t;
	unsigned long long served;

	hub_totals(c->hub, &t);
	served = t.windows[SAMPLER_CPU] + t.windows[SAMPLER_WALL];
	if (end == END_TARGET)
		fprintf(stderr, "cprof: pid %d exited; serve ends (profiles served: %llu)\n",
			(int)c->pid, served);
	else if (end == END_SIGNAL)
		fprintf(stderr, "cprof: %s received; serve ends (profiles served: %llu)\n",
			sig == SIGINT ? "SIGINT" : sig == SIGTERM ? "SIGTERM" :
			sig == SIGHUP ? "SIGHUP" : "a stop signal", served);
	else {
		cli_error("cannot wait for the end of serve: %s", strerror(errno));
		return CPROF_EXIT_FATAL;
	}
	/* some frames of some answers stayed addresses: a partial result */
	return c->sampling_failed || c->n_parser_failed ? CPROF_EXIT_PARTIAL : CPROF_EXIT_OK;
}

/* The hub of serve's sessions, as c's options ask (the kernel's symbols
 * set up here: a notice on stderr when they are hidden). */
static struct hub_opts hub_opts_of(struct serve_ctx *c)
{
	return (struct hub_opts){
		.pid = c->pid,
		.hz = c->a.hz,
		.stack_size = c->a.stack_size,
		.perf_stack_size = c->a.stack_size_given ? c->a.stack_size : 0,
		.stop = c->a.stop,
		.source = c->a.source,
		.kernel_frames = cli_kernel_setup(&c->a, SAMPLER_CPU, c->quiet),
		.python = !c->a.python_off,
		.debuginfod = !c->a.no_debuginfod,
		.debuginfod_timeout_ns = c->a.debuginfod_timeout_ns,
		.helper = c->helper,
		.build = serve_http_build,
		.done = serve_http_done,
		.session_end = serve_http_session_end,
		.arg = c,
	};
}

int cmd_serve(int argc, char **argv)
{
	struct serve_ctx c = { .listen_fd = -1, .wake_fd = -1 };
	const char *listen_spec = DEFAULT_LISTEN;
	struct hub_opts ho;
	char shown[128];
	int code, ret, sfd = -1, pidfd = -1, sig = 0;
	enum end_reason end;

	code = parse_serve_args(&c, argc, argv, &listen_spec);
	if (code == CLI_HELP_SHOWN)
		return CPROF_EXIT_OK;
	if (code == CPROF_EXIT_OK)
		code = open_listener(&c, listen_spec, shown, sizeof(shown));
	if (code != CPROF_EXIT_OK)
		return code;
	sfd = block_stop_signals(&c);
	if (sfd < 0) {
		cli_error("cannot set up serve: %s", strerror(errno));
		code = CPROF_EXIT_FATAL;
		goto close_fds;
	}
	pidfd = open_pidfd(c.pid);
	/* before the HTTP server's and the sessions' threads */
	code = cli_helper_start(c.a.helper_user, &c.helper);
	if (code != CPROF_EXIT_OK)
		goto close_fds;

	ho = hub_opts_of(&c);
	ret = hub_create(&c.hub, &ho);
	if (ret == 0)
		ret = serve_http_start(&c);
	if (ret < 0) {
		cli_error("cannot start the HTTP server on %s: %s", shown, strerror(-ret));
		code = CPROF_EXIT_FATAL;
		goto destroy_hub;
	}
	c.listen_fd = -1;	/* the daemon's now: MHD_stop_daemon closes it */
	/* The address line is what scripts wait for (port 0 picks one). */
	fprintf(stderr, "cprof: serving pid %d on http://%s/debug/pprof/\n", (int)c.pid, shown);
	fflush(stderr);

	end = wait_for_end(&c, sfd, pidfd, &sig);
	hub_shutdown(c.hub);
	serve_http_stop(&c, DRAIN_NS);
	code = report_end(&c, end, sig);
destroy_hub:
	if (c.daemon)
		serve_http_stop(&c, 0);
	hub_destroy(c.hub);
	cli_kernel_done(&c.a);
	/* a parser's death lost names in some answers */
	if (cli_helper_end(c.helper) != CPROF_EXIT_OK && code == CPROF_EXIT_OK)
		code = CPROF_EXIT_PARTIAL;
close_fds:
	if (pidfd >= 0)
		close(pidfd);
	if (sfd >= 0)
		close(sfd);
	if (c.wake_fd >= 0)
		close(c.wake_fd);
	if (c.listen_fd >= 0)
		close(c.listen_fd);
	while (c.n_parser_failed)
		free(c.parser_failed[--c.n_parser_failed]);
	free(c.parser_failed);
	return code;
}
