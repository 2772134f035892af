/* SPDX-License-Identifier: MIT */
/*
 * The confined helper: a child process that parses what the target
 * controls (ELF, DWARF, unwind tables) without cprof's privileges.  It is
 * forked by the privileged side, drops to an unprivileged user (when cprof
 * is root), drops every capability, sets no_new_privs and installs a
 * seccomp filter (filter.c) that lets it compute, allocate, and read and
 * write only the descriptors it is given.  Requests and answers go through
 * a socket pair (a small header, and descriptors by SCM_RIGHTS) and a
 * shared memory area made before the fork (the bulk of both).
 *
 * What the helper does with a request is its caller's: conf_serve_fn runs
 * in the helper.  Whoever calls (the privileged side) gets an answer, or
 * learns that the helper died (crashed, was killed by the seccomp filter,
 * hung past the bound) and is restarted, a bounded number of times; each
 * death is kept for the command to report.
 *
 * Threads: conf_call may be called from any thread (calls are serialized).
 */
#ifndef CPROF_CONFINE_CONFINE_H
#define CPROF_CONFINE_CONFINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Most descriptors one request carries. */
#define CONF_MAX_FDS 4
/* Largest request and largest answer. */
#define CONF_MSG_MAX (2u << 20)

/*
 * Runs in the helper, once per request: req (len bytes, type as the caller
 * chose) and fds (nfds descriptors, the handler's to close or keep) ->
 * the answer in resp (at most cap bytes, *resp_len set).  *state is the
 * handler's, NULL at first.  Returns >= 0 (passed back as conf_call's
 * result) or -errno.
 */
typedef int (*conf_serve_fn)(void **state, uint32_t type, const void *req, size_t len,
			     int *fds, size_t nfds, void *resp, size_t cap, size_t *resp_len);

struct conf_opts {
	conf_serve_fn serve;
	/* The program the helper execs, whose main calls conf_exec_main when
	 * its argv[0] is CONF_EXEC_NAME ("/proc/self/exe" for cprof itself);
	 * NULL, or an exec that fails: the forked image serves. */
	const char *exec_path;
	/* The user the helper runs as, when cprof is root (conf_user_lookup);
	 * ignored otherwise: the helper keeps the caller's user. */
	uid_t uid;
	gid_t gid;
	unsigned max_restarts;		/* helpers started after the first one dies */
	uint64_t call_timeout_ns;	/* an answer later than this: the helper hung */
};

/* argv[0] of the helper's program after exec. */
#define CONF_EXEC_NAME "cprof-parser"

/*
 * main() of the helper's program after exec (argv[0] CONF_EXEC_NAME):
 * confines itself and serves with serve until its socket closes, never
 * returning; returns 64 when argv is not the helper's.
 */
int conf_exec_main(int argc, char **argv, conf_serve_fn serve);

/* The uid and gid of user name.  Returns 0, or -ENOENT (no such user). */
int conf_user_lookup(const char *name, uid_t *uid, gid_t *gid);

struct conf_helper;

/* Forks and confines the helper.  Returns 0 or -errno. */
int conf_start(struct conf_helper **out, const struct conf_opts *o);

/*
 * Ends the helper (it exits when its socket closes) and frees h; a helper
 * found dead by then is recorded as a death first (conf_death).  NULL is
 * fine.
 */
void conf_stop(struct conf_helper *h);

/* Whether the helper has died since the last call, recorded then. */
void conf_check(struct conf_helper *h);

/*
 * Sends a request and waits for its answer, copied into resp (cap bytes,
 * *resp_len set).  subject and subject_id (NULL: none) name what the
 * request makes the helper parse, for the death record if it dies on it.
 * A helper found dead before the request is restarted and the request
 * sent again.  Returns the handler's result, or -EPIPE (the helper died on
 * this request; a new one starts at the next call), -ECHILD (no helper:
 * every restart is used up), -EMSGSIZE, or another -errno.
 */
int conf_call(struct conf_helper *h, uint32_t type, const void *req, size_t len,
	      const int *fds, size_t nfds, void *resp, size_t cap, size_t *resp_len,
	      const char *subject, const char *subject_id);

/* The helper as one moment saw it: read together, under the lock calls hold. */
struct conf_status {
	/* Counts the helpers started: a request's state (what was sent to the
	 * helper before) is gone whenever this changed since it was sent. */
	uint64_t generation;
	pid_t pid;		/* the helper running now, or -1 */
	bool exhausted;		/* no helper left: the last one died, every restart used */
};

/* The helper's generation, process and whether any is left, in one snapshot. */
struct conf_status conf_status(struct conf_helper *h);

enum conf_death_kind {
	CONF_DIED,	/* died between requests (killed, or crashed idle) */
	CONF_CRASHED,	/* died on a request (a crash or the seccomp filter) */
	CONF_HUNG,	/* gave no answer within call_timeout_ns: killed */
};

struct conf_death {
	enum conf_death_kind kind;
	int signal;		/* the signal that ended it, 0 when unknown */
	int exit_status;	/* its exit status when it exited, else -1 */
	const char *subject;	/* what it was parsing (conf_call's), or NULL */
	const char *subject_id;
};

/*
 * The i-th death (0..) copied into out; false past the last.  Its strings
 * are h's, valid until conf_stop.
 */
bool conf_death(struct conf_helper *h, size_t i, struct conf_death *out);

#endif
