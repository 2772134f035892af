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

#include "lib/clock.h"
#include "profile/atomic.h"

/*
 * Makes the rename itself durable (--fsync).  Best effort: by now the new
 * file is complete and in place, and reporting a failure here would claim
 * that nothing was written.
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

/*
 * Puts tmp in path's place.  rename(2) over an existing file makes ext4
 * (auto_da_alloc) start writing tmp's data back within the call, and the
 * submission waits in the block layer's throttle behind whatever else
 * writes to the disk: seconds, on a busy machine.  Exchanging the two names
 * does not; the old file, now under tmp's name, is unlinked.  Where the
 * exchange is not possible (no file at path yet, a file system or kernel
 * without it), a plain rename.
 */
static int replace(const char *tmp, const char *path)
{
	struct stat st;

	/* Anything but a file at path (a directory) gets rename's answer. */
	if (lstat(path, &st) == 0 && S_ISREG(st.st_mode) &&
	    renameat2(AT_FDCWD, tmp, AT_FDCWD, path, RENAME_EXCHANGE) == 0) {
		if (unlink(tmp) == 0 || errno == ENOENT)
			return 0;
		/* Not a file after all (replaced meanwhile): put it back. */
		(void)renameat2(AT_FDCWD, tmp, AT_FDCWD, path, RENAME_EXCHANGE);
	}
	return rename(tmp, path) < 0 ? -errno : 0;
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

/* fill's content into the new file fd, made durable when sync asks; fd is
 * closed in all cases. */
static int fill_and_close(int fd, int (*fill)(int fd, void *arg), void *arg,
			  struct prof_sync *sync)
{
	uint64_t t0;
	int err = 0;

	/* mkstemp creates 0600; the output is meant for other tools and users */
	if (fchmod(fd, 0644) < 0)
		err = -errno;
	if (!err)
		err = fill(fd, arg);
	/* Only when asked: fsync waits for the disk without a bound (seconds,
	 * minutes behind a congested device).  Without it the rename still
	 * never shows a partial file; a crash of the machine may lose the new
	 * one, and ext4 (auto_da_alloc) flushes a file replaced by rename. */
	if (!err && sync && sync->fsync) {
		t0 = cprof_now_ns();
		if (fsync(fd) < 0)
			err = -errno;
		sync->ns += cprof_now_ns() - t0;
	}
	/* close reports delayed write errors (NFS, quotas): do not rename a bad file */
	if (close(fd) < 0 && !err)
		err = -errno;
	return err;
}

int prof_atomic_write(const char *path, int (*fill)(int fd, void *arg), void *arg)
{
	return prof_atomic_write_sync(path, fill, arg, NULL);
}

int prof_atomic_write_sync(const char *path, int (*fill)(int fd, void *arg), void *arg,
			   struct prof_sync *sync)
{
	const char *slash, *base;
	size_t dirlen;
	uint64_t t0;
	char *tmp;
	int fd, err;

	if (!path || !*path)
		return -EINVAL;
	if (sync)
		sync->ns = 0;
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
	err = fill_and_close(fd, fill, arg, sync);
	if (!err)
		err = replace(tmp, path);
	if (err) {
		(void)unlink(tmp);
	} else if (sync && sync->fsync) {
		t0 = cprof_now_ns();
		sync_parent(path, dirlen);
		sync->ns += cprof_now_ns() - t0;
	}
free_tmp:
	free(tmp);
	return err;
}
