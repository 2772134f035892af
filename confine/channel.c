/* SPDX-License-Identifier: MIT */
/* One message each way over the helper's socket: a header and descriptors (SCM_RIGHTS). */
#include "config.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "confine/confine-impl.h"

int conf_send(int sock, const struct conf_wire *w, const int *fds, size_t nfds)
{
	union {
		char buf[CMSG_SPACE(CONF_MAX_FDS * sizeof(int))];
		struct cmsghdr align;
	} u;
	struct iovec iov = { .iov_base = (void *)w, .iov_len = sizeof(*w) };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1 };
	struct cmsghdr *c;
	ssize_t r;

	if (nfds > CONF_MAX_FDS)
		return -EINVAL;
	if (nfds) {
		memset(&u, 0, sizeof(u));
		m.msg_control = u.buf;
		m.msg_controllen = CMSG_SPACE(nfds * sizeof(int));
		c = CMSG_FIRSTHDR(&m);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(nfds * sizeof(int));
		memcpy(CMSG_DATA(c), fds, nfds * sizeof(int));
	}
	do
		r = sendmsg(sock, &m, MSG_NOSIGNAL);
	while (r < 0 && errno == EINTR);
	if (r < 0)
		return errno == ECONNRESET ? -EPIPE : -errno;
	return r == (ssize_t)sizeof(*w) ? 0 : -EPROTO;
}

/* Takes the descriptors of m into fds; any beyond room are closed. */
static size_t take_fds(struct msghdr *m, int *fds)
{
	struct cmsghdr *c;
	size_t n = 0, i, k;
	int fd;

	for (c = CMSG_FIRSTHDR(m); c; c = CMSG_NXTHDR(m, c)) {
		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (i = 0; i < k; i++) {
			memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
			if (n < CONF_MAX_FDS)
				fds[n++] = fd;
			else
				close(fd);
		}
	}
	return n;
}

int conf_recv(int sock, struct conf_wire *w, int *fds, size_t *nfds)
{
	union {
		char buf[CMSG_SPACE(CONF_MAX_FDS * sizeof(int))];
		struct cmsghdr align;
	} u;
	struct iovec iov = { .iov_base = w, .iov_len = sizeof(*w) };
	struct msghdr m = {
		.msg_iov = &iov, .msg_iovlen = 1,
		.msg_control = u.buf, .msg_controllen = sizeof(u.buf),
	};
	ssize_t r;

	*nfds = 0;
	do
		r = recvmsg(sock, &m, MSG_CMSG_CLOEXEC);
	while (r < 0 && errno == EINTR);
	if (r < 0)
		return errno == ECONNRESET ? -EPIPE : -errno;
	*nfds = take_fds(&m, fds);
	if (r == 0)
		return -EPIPE;
	if (r != (ssize_t)sizeof(*w) || (m.msg_flags & (MSG_TRUNC | MSG_CTRUNC)))
		return -EPROTO;
	return 0;
}
