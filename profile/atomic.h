/* SPDX-License-Identifier: MIT */
/* Writing a whole file or nothing: through a temporary file that is renamed into place. */
#ifndef CPROF_PROFILE_ATOMIC_H
#define CPROF_PROFILE_ATOMIC_H

/*
 * Creates DIR/.BASE.XXXXXX next to path (mode 0644), lets fill write the
 * content to its fd, then fsyncs, closes and renames it to path.  On any
 * error, fill's included, the temporary file is removed and path is left as
 * it was.  path "-" is standard output: fill writes to STDOUT_FILENO
 * directly (no rename is possible).  fill returns 0 or -errno.
 * Returns 0, fill's error, or -errno (-EINVAL: empty path, -EISDIR: path
 * ends in '/').
 */
int prof_atomic_write(const char *path, int (*fill)(int fd, void *arg), void *arg);

#endif
