/* SPDX-License-Identifier: MIT */
/* Flame graph output: a stream over a duplicate of an fd, and write errors reported, not lost. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

#include "profile/flame-tree.h"

int prof_flame_stream_status(FILE *f)
{
	if (fflush(f) != 0 || ferror(f))
		return errno ? -errno : -EIO;
	return 0;
}

int prof_flame_to_fd(int fd, int (*draw)(FILE *f, void *arg), void *arg)
{
	FILE *f;
	int dfd, ret;

	dfd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
	if (dfd < 0)
		return -errno;
	f = fdopen(dfd, "w");
	if (!f) {
		ret = -errno;
		close(dfd);
		return ret;
	}
	ret = draw(f, arg);
	errno = 0;
	if (fclose(f) != 0 && !ret)
		ret = errno ? -errno : -EIO;
	return ret;
}
