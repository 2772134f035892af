/* SPDX-License-Identifier: MIT */
/* forker: a fork-per-request server, the shape attach --children is for.
 *
 * forker [-k KEEP] [-n REQUESTS] [-i INTERVAL_MS] [-w WORK_MS] [-c MAXLIVE]
 *        [-s SECONDS] [-r READYFILE] [-l LOG]
 *
 * First starts KEEP (default 1) long-lived children that spin in
 * keeper_spin until SECONDS pass (or SIGUSR2), and prints "keeper: PID"
 * for each.  Then, every INTERVAL_MS (default 100) until SECONDS pass or
 * REQUESTS (0, the default: no limit) were forked, forks a "request" child that spins in handle_request for
 * WORK_MS (default 150) of its own CPU time and exits 0.  At most MAXLIVE
 * (default 4) request children run at once: like a server's worker limit,
 * it waits for one to end before forking the next, so that on a slow or
 * loaded machine the requests queue instead of piling up by the hundred
 * (10 forks a second of 150 ms of CPU each is more than 2 CPUs give).  Each request
 * child, before anything else, reads the TracerPid of its /proc/self/status,
 * reads it again once its work is done, and appends one line
 * "SEQ PID TRACERPID_AT_BIRTH TRACERPID_AT_END CPU_NS" to LOG (one
 * write(2), O_APPEND; SEQ counts the forks from 1, the birth order even
 * when pids wrap): a tracer that follows forks traces a child from its
 * first instruction.  When its run ends, the parent passes the end on to
 * the keepers (SIGUSR2), reaps every child, writes "ready\n" to
 * READYFILE once the keepers run, and prints "result: OK" when every child
 * exited 0. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "target.h"

#define NOINLINE __attribute__((noinline, noipa))

static volatile uint64_t sink;

static uint64_t cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

NOINLINE static void keeper_spin(void)
{
	while (!target_past_deadline()) {
		unsigned i;

		for (i = 0; i < 100000; i++)
			sink += i;
	}
}

NOINLINE static void handle_request(uint64_t work_ns)
{
	uint64_t until = cpu_ns() + work_ns;

	while (cpu_ns() < until) {
		unsigned i;

		for (i = 0; i < 10000; i++)
			sink += i;
	}
}

static long tracer_pid(void)
{
	char buf[4096], *p;
	ssize_t n;
	int fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	p = strstr(buf, "\nTracerPid:");
	return p ? strtol(p + 11, NULL, 10) : -1;
}

NOINLINE static void request_child(unsigned seq, uint64_t work_ns, int log_fd)
{
	long tracer = tracer_pid();
	char line[96];
	int n;

	handle_request(work_ns);
	n = snprintf(line, sizeof(line), "%u %d %ld %ld %llu\n", seq, (int)getpid(), tracer,
		     tracer_pid(), (unsigned long long)cpu_ns());
	if (log_fd >= 0 && write(log_fd, line, (size_t)n) != n)
		_exit(3);
	_exit(0);
}

static int reap(int flags, int *bad)
{
	int status, n = 0;
	pid_t p;

	while ((p = waitpid(-1, &status, flags)) > 0) {
		if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
			(*bad)++;
		n++;
	}
	return n;
}

/* Waits for one child to end: a request, which ends once its work is done. */
static int reap_one(int *bad)
{
	int status;

	if (waitpid(-1, &status, 0) <= 0)
		return 0;
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		(*bad)++;
	return 1;
}

int main(int argc, char **argv)
{
	int keep = 1, interval_ms = 100, work_ms = 150, max_live = 4, live = 0;
	int opt, i, bad = 0, log_fd = -1;
	unsigned seq = 0, requests = 0;
	double seconds = 10;
	const char *ready = NULL;
	struct timespec pause;
	pid_t keepers[64];

	while ((opt = getopt(argc, argv, "k:n:i:w:c:s:r:l:")) != -1) {
		switch (opt) {
		case 'k': keep = atoi(optarg); break;
		case 'n': requests = (unsigned)atoi(optarg); break;
		case 'i': interval_ms = atoi(optarg); break;
		case 'w': work_ms = atoi(optarg); break;
		case 'c': max_live = atoi(optarg) > 0 ? atoi(optarg) : 1; break;
		case 's': seconds = atof(optarg); break;
		case 'r': ready = optarg; break;
		case 'l':
			log_fd = open(optarg, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
			if (log_fd < 0) {
				perror(optarg);
				return 2;
			}
			break;
		default:
			fprintf(stderr, "usage: forker [-k KEEP] [-n REQUESTS] [-i INTERVAL_MS] "
					"[-w WORK_MS] [-c MAXLIVE] [-s SECONDS] [-r READYFILE] [-l LOG]\n");
			return 2;
		}
	}
	if (keep < 0 || keep > 64)
		keep = 64;
	target_start_deadline(seconds);
	for (i = 0; i < keep; i++) {
		pid_t p = fork();

		if (p < 0) {
			perror("fork");
			return 1;
		}
		if (p == 0) {
			keeper_spin();
			_exit(0);
		}
		keepers[i] = p;
		printf("keeper: %d\n", (int)p);
	}
	fflush(stdout);
	if (ready && target_write_ready(ready) < 0) {
		perror(ready);
		return 1;
	}
	pause.tv_sec = interval_ms / 1000;
	pause.tv_nsec = (long)(interval_ms % 1000) * 1000000L;
	while (!target_past_deadline() && (!requests || seq < requests)) {
		pid_t p;

		/* The requests that ended during the pause, reaped only now: a
		 * request that ends at once stays a zombie for the pause
		 * (dump-threads-children counts on one).  The keepers end only
		 * after the loop: what exits here is a request. */
		live -= reap(WNOHANG, &bad);
		while (live >= max_live && !target_past_deadline())
			live -= reap_one(&bad);
		seq++;
		p = fork();
		if (p < 0) {
			perror("fork");
			return 1;
		}
		if (p == 0)
			request_child(seq, (uint64_t)work_ms * 1000000u, log_fd);
		live++;
		nanosleep(&pause, NULL);
	}
	for (i = 0; i < keep; i++)
		kill(keepers[i], SIGUSR2);
	while (reap(0, &bad) > 0 || errno == EINTR)
		;
	printf("result: %s\n", bad ? "FAILED" : "OK");
	return bad ? 1 : 0;
}
