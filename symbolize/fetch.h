/* SPDX-License-Identifier: MIT */
/*
 * One bounded download of a separate debug file from the debuginfod servers
 * of DEBUGINFOD_URLS (libdebuginfod, which also keeps the downloads in its
 * cache, DEBUGINFOD_CACHE_PATH).  The bound is cprof's: libdebuginfod's own
 * DEBUGINFOD_TIMEOUT (90 s without 100 KiB) can hold a lookup far longer.
 */
#ifndef CPROF_SYMBOLIZE_FETCH_H
#define CPROF_SYMBOLIZE_FETCH_H

#include <stdbool.h>
#include <stdint.h>

/* Whether any server is configured: DEBUGINFOD_URLS is set and not empty. */
bool sym_fetch_configured(void);

struct sym_fetch_ops {
	/* Called about once a second while a lookup runs: bytes received and
	 * expected (0: not known yet).  Returns true to give up now. */
	bool (*progress)(void *arg, long done, long total);
	void *arg;
};

/*
 * Downloads the debuginfo of build_id (lowercase hex) unless it is cached,
 * giving up at deadline_ns (CLOCK_MONOTONIC) or when ops->progress says so.
 * On success *path is the cached file (malloc'd).  Returns 0, -ENOENT (no
 * server has it), -ETIME (deadline), -ECANCELED (progress gave up),
 * -ENOSYS (no server configured) or another -errno.
 */
int sym_fetch_debuginfo(const char *build_id, uint64_t deadline_ns,
			const struct sym_fetch_ops *ops, char **path);

#endif
