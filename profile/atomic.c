/* SPDX-License-Identifier: MIT */
/* Writing a whole file or nothing: through a temporary file that is renamed into place. */

#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "profile/atomic.h"

/*
 * Makes the rename itself durable.  Best effort: by now the new file is
 * complete and in place, and reporting a failure here would claim that
 * nothing was written.
 */
static void sync_parent(const char *path, size_t dirlen)
{
	char *dir;
	int fd;

	if (!dirlen) {
		fd = open(".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	} else {
		dir = strndup(path, dirlen);
		if (!dir)
			return;
		fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		free(dir);
	}
	if (fd < 0)
		return;
	(void)fsync(fd);
	(void)close(fd);
}

/* "DIR/.BASE.XXXXXX" for path "DIR/BASE" (dirlen bytes of DIR/), malloc'ed. */
static char *temp_name(const char *path, size_t dirlen, const char *base)
{
	size_t baselen = strlen(base);
	char *tmp = malloc(dirlen + 1 + baselen + sizeof(".XXXXXX"));

	if (!tmp)
		return NULL;
	memcpy(tmp, path, dirlen);
	tmp[dirlen] = '.';
	memcpy(tmp + dirlen + 1, base, baselen);
	memcpy(tmp + dirlen + 1 + baselen, ".XXXXXX", sizeof(".XXXXXX"));
	return tmp;
}

/* fill's content into the new file fd, made durable; fd is closed in all cases. */
static int fill_and_close(int fd, int (*fill)(int fd, void *arg), void *arg)
{
	int err = 0;

	/* mkstemp creates 0600; the output is meant for other tools and users */
	if (fchmod(fd, 0644) < 0)
		err = -errno;
	if (!err)
		err = fill(fd, arg);
	/* without fsync, a crash after rename can leave an empty file under the final name */
	if (!err && fsync(fd) < 0)
		err = -errno;
	/* close reports delayed write errors (NFS, quotas): do not rename a bad file */
	if (close(fd) < 0 && !err)
		err = -errno;
	return err;
}

int prof_atomic_write(const char *path, int (*fill)(int fd, void *arg), void *arg)
{
	const char *slash, *base;
	size_t dirlen;
	char *tmp;
	int fd, err;

	if (!path || !*path)
		return -EINVAL;
	if (strcmp(path, "-") == 0)
		return fill(STDOUT_FILENO, arg);
	slash = strrchr(path, '/');
	base = slash ? slash + 1 : path;
	if (!*base)
		return -EISDIR;
	dirlen = slash ? (size_t)(slash - path) + 1 : 0;

	/* Same directory, hence same file system, so that rename is atomic;
	 * hidden, so that nobody picks up a partial file. */
	tmp = temp_name(path, dirlen, base);
	if (!tmp)
		return -ENOMEM;
	fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0) {
		err = -errno;
		goto free_tmp;
	}
	err = fill_and_close(fd, fill, arg);
	if (!err && rename(tmp, path) < 0)
		err = -errno;
	if (err)
		(void)unlink(tmp);
	else
		sync_parent(path, dirlen);
free_tmp:
	free(tmp);
	return err;
}
