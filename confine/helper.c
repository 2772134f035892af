/* SPDX-License-Identifier: MIT */
/* The confined helper's life seen from the privileged side: start, calls, deaths, restarts. */
#include "config.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/pidfd.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "confine/confine-impl.h"
#include "lib/grow.h"
#include "lib/reaped.h"

#ifndef P_PIDFD
#define P_PIDFD 3
#endif

/* How long a helper that was told to go, or that hung up, may take to exit. */
#define EXIT_GRACE_MS 1000
/* How long a new helper may take to say it is confined: it is cprof
 * executed afresh, whose pages a disk busy with writes may take seconds to
 * read back (10 s was too short under exit-tail.test's fsync writer on a
 * loaded machine); as long as a call may take. */
#define READY_MS 30000

struct conf_helper {
	struct conf_opts o;
	pthread_mutex_t lock;
	pid_t pid;		/* -1: none running */
	int pidfd;
	int sock;
	void *shm;		/* CONF_SHM_SIZE bytes shared with the helper */
	unsigned restarts;
	uint64_t generation;
	uint32_t seq;
	struct conf_death *deaths;
	size_t ndeaths, cap_deaths;
};

/*
 * The wait status of pid, which the tracer's waitpid(-1) reaped before us
 * (ECHILD): it notes what it reaps that is not a tracee, right after its
 * waitpid returns, so give it a moment.
 */
static bool reaped_elsewhere(pid_t pid, int *status)
{
	int i;

	for (i = 0; i < 100; i++) {
		if (cprof_reaped_take(pid, status))
			return true;
		usleep(1000);
	}
	return false;
}

/* Waits for pidfd's process (pid) to exit, at most ms (then kills it); its end into d. */
static void reap(pid_t pid, int pidfd, int ms, struct conf_death *d)
{
	struct pollfd p = { .fd = pidfd, .events = POLLIN };
	siginfo_t si;
	int status;

	if (poll(&p, 1, ms) <= 0)
		syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, NULL, 0);
	memset(&si, 0, sizeof(si));
	if (waitid(P_PIDFD, (id_t)pidfd, &si, WEXITED) < 0) {
		if (errno != ECHILD || !d || !reaped_elsewhere(pid, &status))
			return;
		if (WIFEXITED(status))
			d->exit_status = WEXITSTATUS(status);
		else if (WIFSIGNALED(status))
			d->signal = WTERMSIG(status);
		return;
	}
	if (!d)
		return;
	if (si.si_code == CLD_EXITED)
		d->exit_status = si.si_status;
	else if (si.si_code == CLD_KILLED || si.si_code == CLD_DUMPED)
		d->signal = si.si_status;
}

/* Lets the running helper go (it exits when its socket closes). */
static void release(struct conf_helper *h, int grace_ms, struct conf_death *d)
{
	if (h->pid < 0)
		return;
	close(h->sock);
	reap(h->pid, h->pidfd, grace_ms, d);
	close(h->pidfd);
	munmap(h->shm, CONF_SHM_SIZE);
	h->pid = -1;
	h->sock = h->pidfd = -1;
	h->shm = NULL;
}

/* Records the helper's death (its cause read as it is reaped). */
static void died(struct conf_helper *h, enum conf_death_kind kind, const char *subject,
		 const char *subject_id)
{
	struct conf_death d = { .kind = kind, .exit_status = -1 };

	if (subject)
		d.subject = strdup(subject);
	if (subject_id)
		d.subject_id = strdup(subject_id);
	release(h, kind == CONF_HUNG ? 0 : EXIT_GRACE_MS, &d);
	if (cprof_grow(&h->deaths, &h->cap_deaths, h->ndeaths + 1, sizeof(*h->deaths), 4) < 0) {
		free((char *)d.subject);
		free((char *)d.subject_id);
		return;
	}
	h->deaths[h->ndeaths++] = d;
}

/* Waits at most ms for an answer on h's socket.  Returns 0 or -errno
 * (-ETIMEDOUT, -EPIPE: the helper is gone). */
static int wait_answer(struct conf_helper *h, int ms, struct conf_wire *w)
{
	struct pollfd p = { .fd = h->sock, .events = POLLIN };
	int fds[CONF_MAX_FDS];
	size_t nfds, i;
	int r;

	do
		r = poll(&p, 1, ms);
	while (r < 0 && errno == EINTR);
	if (r < 0)
		return -errno;
	if (r == 0)
		return -ETIMEDOUT;
	r = conf_recv(h->sock, w, fds, &nfds);
	/* the helper gives the privileged side no descriptor */
	for (i = 0; i < nfds; i++)
		close(fds[i]);
	return r;
}

/* A new helper, confined before it answers.  Returns 0 or -errno. */
/* The shared area: a memfd, so that an exec'd helper maps it too.
 * Returns its descriptor (h->shm mapped) or -errno. */
static int make_area(struct conf_helper *h)
{
	int fd = memfd_create("cprof-parser", MFD_CLOEXEC), r;

	if (fd < 0)
		return -errno;
	if (ftruncate(fd, (off_t)CONF_SHM_SIZE) < 0) {
		r = -errno;
		close(fd);
		return r;
	}
	h->shm = mmap(NULL, CONF_SHM_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (h->shm == MAP_FAILED) {
		h->shm = NULL;
		close(fd);
		return -ENOMEM;
	}
	return fd;
}

static int start_one(struct conf_helper *h)
{
	struct conf_wire ready;
	int sv[2], r, area;
	pid_t pid;

	area = make_area(h);
	if (area < 0)
		return area;
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0) {
		r = -errno;
		goto unmap;
	}
	pid = fork();
	if (pid < 0) {
		r = -errno;
		goto close_pair;
	}
	if (pid == 0)
		conf_child(&h->o, sv[1], area, h->shm);
	close(area);
	close(sv[1]);
	h->sock = sv[0];
	h->pid = pid;
	h->pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	h->generation++;
	r = h->pidfd < 0 ? -errno : wait_answer(h, READY_MS, &ready);
	if (r == 0 && ready.result < 0)
		r = ready.result;
	if (r < 0)
		release(h, 0, NULL);
	return r;

close_pair:
	close(sv[0]);
	close(sv[1]);
unmap:
	close(area);
	munmap(h->shm, CONF_SHM_SIZE);
	h->shm = NULL;
	return r;
}

int conf_start(struct conf_helper **out, const struct conf_opts *o)
{
	struct conf_helper *h;
	int r;

	h = calloc(1, sizeof(*h));
	if (!h)
		return -ENOMEM;
	h->o = *o;
	h->pid = h->sock = h->pidfd = -1;
	pthread_mutex_init(&h->lock, NULL);
	r = start_one(h);
	if (r < 0) {
		pthread_mutex_destroy(&h->lock);
		free(h);
		return r;
	}
	*out = h;
	return 0;
}

/* Whether the helper exited (pidfd readable) without being asked to. */
static bool gone(const struct conf_helper *h)
{
	struct pollfd p = { .fd = h->pidfd, .events = POLLIN };

	return h->pid >= 0 && poll(&p, 1, 0) > 0;
}

void conf_check(struct conf_helper *h)
{
	pthread_mutex_lock(&h->lock);
	if (gone(h))
		died(h, CONF_DIED, NULL, NULL);
	pthread_mutex_unlock(&h->lock);
}

void conf_stop(struct conf_helper *h)
{
	size_t i;

	if (!h)
		return;
	conf_check(h);
	release(h, EXIT_GRACE_MS, NULL);
	for (i = 0; i < h->ndeaths; i++) {
		free((char *)h->deaths[i].subject);
		free((char *)h->deaths[i].subject_id);
	}
	free(h->deaths);
	pthread_mutex_destroy(&h->lock);
	free(h);
}

/* A helper to send to: the one running, or a new one while restarts last. */
static int ensure_running(struct conf_helper *h)
{
	if (gone(h))
		died(h, CONF_DIED, NULL, NULL);
	while (h->pid < 0) {
		if (h->restarts >= h->o.max_restarts)
			return -ECHILD;
		h->restarts++;
		if (start_one(h) < 0)
			continue;
	}
	return 0;
}

/* Sends one request to a running helper, restarting one found dead. */
static int send_request(struct conf_helper *h, const struct conf_wire *w, const void *req,
			const int *fds, size_t nfds)
{
	int r;

	for (;;) {
		r = ensure_running(h);
		if (r < 0)
			return r;
		memcpy(h->shm, req, w->len);
		r = conf_send(h->sock, w, fds, nfds);
		if (r != -EPIPE)
			return r;
		/* it died between requests: this one is not what killed it */
		died(h, CONF_DIED, NULL, NULL);
	}
}

static int call_locked(struct conf_helper *h, uint32_t type, const void *req, size_t len,
		       const int *fds, size_t nfds, void *resp, size_t cap, size_t *resp_len,
		       const char *subject, const char *subject_id)
{
	struct conf_wire w = { .type = type, .len = (uint32_t)len }, a;
	int r, ms;

	*resp_len = 0;
	if (len > CONF_MSG_MAX)
		return -EMSGSIZE;
	w.seq = ++h->seq;
	r = send_request(h, &w, req, fds, nfds);
	if (r < 0)
		return r;
	ms = (int)(h->o.call_timeout_ns / 1000000);
	r = wait_answer(h, ms > 0 ? ms : -1, &a);
	if (r == -ETIMEDOUT || r == -EPIPE || (r == 0 && (a.seq != w.seq || a.len > CONF_MSG_MAX))) {
		died(h, r == -ETIMEDOUT ? CONF_HUNG : CONF_CRASHED, subject, subject_id);
		return -EPIPE;
	}
	if (r < 0)
		return r;
	if (a.len > cap)
		return -EMSGSIZE;
	/* copied out first: the helper could change the area while it is read */
	memcpy(resp, (char *)h->shm + CONF_MSG_MAX, a.len);
	*resp_len = a.len;
	return a.result;
}

int conf_call(struct conf_helper *h, uint32_t type, const void *req, size_t len,
	      const int *fds, size_t nfds, void *resp, size_t cap, size_t *resp_len,
	      const char *subject, const char *subject_id)
{
	int r;

	pthread_mutex_lock(&h->lock);
	r = call_locked(h, type, req, len, fds, nfds, resp, cap, resp_len, subject, subject_id);
	pthread_mutex_unlock(&h->lock);
	return r;
}

struct conf_status conf_status(struct conf_helper *h)
{
	struct conf_status st;

	pthread_mutex_lock(&h->lock);
	st.generation = h->generation;
	st.pid = h->pid;
	st.exhausted = h->pid < 0 && h->restarts >= h->o.max_restarts;
	pthread_mutex_unlock(&h->lock);
	return st;
}

bool conf_death(struct conf_helper *h, size_t i, struct conf_death *out)
{
	bool found;

	/* a copy, under the lock: a call on another thread may record a
	 * death and move the array meanwhile (the strings never move) */
	pthread_mutex_lock(&h->lock);
	found = i < h->ndeaths;
	if (found)
		*out = h->deaths[i];
	pthread_mutex_unlock(&h->lock);
	return found;
}
