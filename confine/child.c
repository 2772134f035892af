/* SPDX-License-Identifier: MIT */
/* The confined helper's side: set apart from cprof, confined, then a loop over requests. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <linux/futex.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "confine/confine-impl.h"

/*
 * Names the helper cprof-parser in its command line too, so that nothing
 * that looks for cprof by its command line (ps, pgrep -f, a script's pkill)
 * takes the helper for it: the argument area (fields 48 and 49 of
 * /proc/self/stat) is the child's own copy.
 */
static void rename_process(void)
{
	static const char name[] = CONF_EXEC_NAME;
	unsigned long start = 0, end = 0;
	char buf[1024], *p;
	ssize_t n;
	int fd, field;

	prctl(PR_SET_NAME, name, 0, 0, 0);
	fd = open("/proc/self/stat", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return;
	buf[n] = '\0';
	/* the name (field 2) may hold spaces and parentheses: count after it */
	p = strrchr(buf, ')');
	for (field = 2; p && field < 48; field++)
		p = strchr(p + 1, ' ');
	if (!p || sscanf(p, " %lu %lu", &start, &end) != 2 || end <= start + sizeof(name))
		return;
	memset((void *)start, 0, end - start);
	memcpy((void *)start, name, sizeof(name));
}

/* Puts fd at want (not close-on-exec), or exits. */
static void place(int fd, int want)
{
	if (fd != want && dup2(fd, want) < 0)
		_exit(127);
	if (fd == want)
		fcntl(fd, F_SETFD, 0);
}

/* In the child: the descriptors it keeps (its socket, the shared area's),
 * its signals. */
static void child_setup(int sock, int shm_fd)
{
	sigset_t none;
	int sig, null;

	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	for (sig = 1; sig < NSIG; sig++)
		signal(sig, SIG_DFL);
	/* a ^C to cprof's process group is for cprof, which ends the helper */
	signal(SIGINT, SIG_IGN);
	signal(SIGTERM, SIG_IGN);
	signal(SIGHUP, SIG_IGN);
	signal(SIGQUIT, SIG_IGN);
	signal(SIGPIPE, SIG_IGN);
	/* above both places first, so that neither overwrites the other */
	sock = fcntl(sock, F_DUPFD_CLOEXEC, 10);
	shm_fd = fcntl(shm_fd, F_DUPFD_CLOEXEC, 10);
	if (sock < 0 || shm_fd < 0)
		_exit(127);
	place(sock, CONF_SOCK_FD);
	place(shm_fd, CONF_SHM_FD);
	/* standard output may be the profile: the helper never writes it */
	null = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (null >= 0) {
		dup2(null, STDIN_FILENO);
		dup2(null, STDOUT_FILENO);
	}
	/* nothing of cprof's open files (the target's /proc, perf events) */
	close_range(CONF_SHM_FD + 1, ~0U, 0);
}

/* What CPROF_TEST_HELPER_FORBIDDEN (tests only) makes the helper do at its
 * first request: "1" a system call the filter forbids, as a parser taken
 * over would; "hang" wait forever, as a parser in an endless loop would;
 * "error" answer -EIO without serving, as a parser that fails on a file
 * (and lives on) would. */
enum test_trigger { TRIGGER_NONE, TRIGGER_FORBIDDEN, TRIGGER_HANG, TRIGGER_ERROR };

static enum test_trigger test_trigger(void)
{
	const char *test = getenv("CPROF_TEST_HELPER_FORBIDDEN");

	if (test && strcmp(test, "1") == 0)
		return TRIGGER_FORBIDDEN;
	if (test && strcmp(test, "hang") == 0)
		return TRIGGER_HANG;
	if (test && strcmp(test, "error") == 0)
		return TRIGGER_ERROR;
	return TRIGGER_NONE;
}

/* Never returns, asleep: a futex nobody wakes (the filter allows futex,
 * not pause), until the privileged side kills the helper for hanging. */
static void hang(void)
{
	static int never;

	for (;;)
		syscall(SYS_futex, &never, FUTEX_WAIT_PRIVATE, 0, NULL, NULL, 0);
}

static void close_fds(const int *fds, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		close(fds[i]);
}

/* Serves requests until the socket closes; trigger: test_trigger's. */
static void __attribute__((noreturn)) serve_loop(conf_serve_fn serve, void *shm,
						 enum test_trigger trigger)
{
	struct conf_wire w, a;
	void *state = NULL;
	int fds[CONF_MAX_FDS];
	size_t nfds, len;
	int r;

	for (;;) {
		r = conf_recv(CONF_SOCK_FD, &w, fds, &nfds);
		if (r < 0) {
			close_fds(fds, nfds);
			_exit(r == -EPIPE ? 0 : 1);
		}
		if (trigger == TRIGGER_FORBIDDEN)
			syscall(SYS_ptrace, PTRACE_TRACEME, 0, NULL, NULL);
		else if (trigger == TRIGGER_HANG)
			hang();
		memset(&a, 0, sizeof(a));
		len = 0;
		if (trigger == TRIGGER_ERROR) {
			close_fds(fds, nfds);
			a.result = -EIO;
			trigger = TRIGGER_NONE;
		} else {
			a.result = serve(&state, w.type, shm,
					 w.len < CONF_MSG_MAX ? w.len : CONF_MSG_MAX, fds, nfds,
					 (char *)shm + CONF_MSG_MAX, CONF_MSG_MAX, &len);
		}
		a.len = (uint32_t)len;
		a.seq = w.seq;
		if (conf_send(CONF_SOCK_FD, &a, NULL, 0) < 0)
			_exit(0);
	}
}

/* Confines the helper, says so, then serves. */
static void __attribute__((noreturn)) confined(uid_t uid, gid_t gid, conf_serve_fn serve, void *shm)
{
	struct conf_wire ready = { 0 };
	enum test_trigger trigger = test_trigger();

	ready.result = conf_drop_privileges(uid, gid);
	if (!ready.result)
		ready.result = conf_install_filter(CONF_SOCK_FD);
	conf_send(CONF_SOCK_FD, &ready, NULL, 0);
	if (ready.result < 0)
		_exit(1);
	serve_loop(serve, shm, trigger);
}

void conf_child(const struct conf_opts *o, int sock, int shm_fd, void *shm)
{
	char uid[24], gid[24];
	char *argv[] = { (char *)CONF_EXEC_NAME, uid, gid, NULL };

	child_setup(sock, shm_fd);
	if (o->exec_path) {
		/* a fresh image: nothing of cprof's memory (the copies of
		 * the target it took), nothing shared copy-on-write with it */
		snprintf(uid, sizeof(uid), "%lu", (unsigned long)o->uid);
		snprintf(gid, sizeof(gid), "%lu", (unsigned long)o->gid);
		execve(o->exec_path, argv, environ);
	}
	/* no exec (or it failed): the forked image serves */
	close(CONF_SHM_FD);
	rename_process();
	confined(o->uid, o->gid, o->serve, shm);
}

int conf_exec_main(int argc, char **argv, conf_serve_fn serve)
{
	unsigned long uid, gid;
	sigset_t none;
	void *shm;
	char *end;

	if (argc != 3)
		return 64;
	uid = strtoul(argv[1], &end, 10);
	gid = strtoul(argv[2], &end, 10);
	shm = mmap(NULL, CONF_SHM_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, CONF_SHM_FD, 0);
	if (shm == MAP_FAILED)
		_exit(1);
	close(CONF_SHM_FD);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	prctl(PR_SET_NAME, CONF_EXEC_NAME, 0, 0, 0);
	confined((uid_t)uid, (gid_t)gid, serve, shm);
}

