/* SPDX-License-Identifier: MIT */
/* What the files of confine/ share: the wire header, the drop and the filter.  Not for other modules. */
#ifndef CPROF_CONFINE_CONFINE_IMPL_H
#define CPROF_CONFINE_CONFINE_IMPL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "confine/confine.h"

/* The helper's socket and shared area, where the child puts them before it
 * closes the rest (and execs). */
#define CONF_SOCK_FD 3
#define CONF_SHM_FD 4

/* The shared area: the request at 0, the answer at CONF_MSG_MAX. */
#define CONF_SHM_SIZE (2 * (size_t)CONF_MSG_MAX)

/* What goes through the socket, the payload being in the shared area. */
struct conf_wire {
	uint32_t type;		/* request: conf_call's type; answer: 0 */
	int32_t result;		/* answer: the handler's result */
	uint32_t len;		/* payload bytes in the shared area */
	uint32_t seq;		/* the answer repeats its request's */
};

/* One message, with up to CONF_MAX_FDS descriptors.  Returns 0 or -errno. */
int conf_send(int sock, const struct conf_wire *w, const int *fds, size_t nfds);

/* One message; *nfds descriptors received into fds (CONF_MAX_FDS room).
 * Returns 0, -EPIPE on end of file, or -errno. */
int conf_recv(int sock, struct conf_wire *w, int *fds, size_t *nfds);

/*
 * In the helper, before its filter: the user (when root), every
 * capability (and the bounding set when permitted), no_new_privs.
 * Returns 0 or -errno.
 */
int conf_drop_privileges(uid_t uid, gid_t gid);

/* In the helper, last: the seccomp filter (filter.c).  Returns 0 or -errno. */
int conf_install_filter(int sock);

/*
 * The helper, in the child just forked: sets itself apart (descriptors,
 * signals), execs o->exec_path as CONF_EXEC_NAME (conf_exec_main goes on
 * there) or, without it, confines itself, says so on sock (its result),
 * then serves requests until the socket closes.  Never returns.
 */
void conf_child(const struct conf_opts *o, int sock, int shm_fd, void *shm)
	__attribute__((noreturn));

#endif
