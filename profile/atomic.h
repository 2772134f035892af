/* SPDX-License-Identifier: MIT */
/* Writing a whole file or nothing: through a temporary file that is renamed into place. */
#ifndef CPROF_PROFILE_ATOMIC_H
#define CPROF_PROFILE_ATOMIC_H

#include <stdbool.h>
#include <stdint.h>

/*
 * Creates DIR/.BASE.XXXXXX next to path (mode 0644), lets fill write the
 * content to its fd, then closes and renames it to path: a reader sees the
 * old file or the whole new one, never part of it.  It does not wait for
 * the disk (no fsync), as perf does not: a crash of the machine may lose
 * the new file.  On any error, fill's included, the temporary file is
 * removed and path is left as it was.  path "-" is standard output: fill
 * writes to STDOUT_FILENO directly (no rename is possible).  fill returns
 * 0 or -errno.  Returns 0, fill's error, or -errno (-EINVAL: empty path,
 * -EISDIR: path ends in '/').
 */
int prof_atomic_write(const char *path, int (*fill)(int fd, void *arg), void *arg);

/* Durability, when a caller asks for it. */
struct prof_sync {
	bool fsync;	/* in: fsync the file before the rename, its directory after */
	uint64_t ns;	/* out: how long those fsyncs took (0 without) */
};

/* prof_atomic_write, made durable as sync asks (NULL: not). */
int prof_atomic_write_sync(const char *path, int (*fill)(int fd, void *arg), void *arg,
			   struct prof_sync *sync);

#endif
