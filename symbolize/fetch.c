/* SPDX-License-Identifier: MIT */
/* A debuginfod lookup bounded by a deadline, through libdebuginfod's progress hook. */
#include "config.h"

#include <elfutils/debuginfod.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "symbolize/fetch.h"

struct lookup {
	const struct sym_fetch_ops *ops;
	uint64_t deadline_ns;
	bool timed_out, cancelled;
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

bool sym_fetch_configured(void)
{
	const char *urls = getenv("DEBUGINFOD_URLS");

	return urls && *urls;
}

/* libdebuginfod calls this about once a second; non-zero aborts the lookup. */
static int on_progress(debuginfod_client *c, long a, long b)
{
	struct lookup *lk = debuginfod_get_user_data(c);

	if (now_ns() >= lk->deadline_ns) {
		lk->timed_out = true;
		return 1;
	}
	if (lk->ops && lk->ops->progress && lk->ops->progress(lk->ops->arg, a, b)) {
		lk->cancelled = true;
		return 1;
	}
	return 0;
}

static int hex_to_bytes(const char *hex, unsigned char *out, size_t max)
{
	size_t n = strlen(hex), i;
	unsigned v;

	if (!n || n % 2 || n / 2 > max)
		return -EINVAL;
	for (i = 0; i < n / 2; i++) {
		if (sscanf(hex + 2 * i, "%2x", &v) != 1)
			return -EINVAL;
		out[i] = (unsigned char)v;
	}
	return (int)(n / 2);
}

/*
 * libdebuginfod 0.188 records a lookup its progress hook aborted as a miss
 * (an empty file where the download would go), and then answers "not
 * found" without asking again for cache_miss_s (10 minutes).  A lookup cut
 * short by cprof's deadline is not a miss: remove that mark, if this
 * lookup made it.
 */
static void forget_abort_mark(const char *build_id, time_t started)
{
	const char *env = getenv("DEBUGINFOD_CACHE_PATH"), *home = getenv("HOME");
	const char *xdg = getenv("XDG_CACHE_HOME");
	char dir[4096], path[4200];
	struct stat st;

	if (env && *env)
		snprintf(dir, sizeof(dir), "%s", env);
	else if (home && snprintf(dir, sizeof(dir), "%s/.debuginfod_client_cache", home) > 0 &&
		 stat(dir, &st) == 0)
		;	/* the legacy location, used when it exists */
	else if (xdg && *xdg)
		snprintf(dir, sizeof(dir), "%s/debuginfod_client", xdg);
	else
		snprintf(dir, sizeof(dir), "%s/.cache/debuginfod_client", home ? home : "/");
	snprintf(path, sizeof(path), "%s/%s/debuginfo", dir, build_id);
	if (lstat(path, &st) == 0 && S_ISREG(st.st_mode) && st.st_size == 0 &&
	    st.st_mtime >= started)
		unlink(path);
}

int sym_fetch_debuginfo(const char *build_id, uint64_t deadline_ns,
			const struct sym_fetch_ops *ops, char **path)
{
	struct lookup lk = { .ops = ops, .deadline_ns = deadline_ns };
	unsigned char id[64];
	debuginfod_client *c;
	time_t started;
	int len, fd;

	*path = NULL;
	if (!sym_fetch_configured())
		return -ENOSYS;
	len = hex_to_bytes(build_id, id, sizeof(id));
	if (len < 0)
		return len;
	started = time(NULL);
	c = debuginfod_begin();
	if (!c)
		return -ENOMEM;
	debuginfod_set_user_data(c, &lk);
	debuginfod_set_progressfn(c, on_progress);
	fd = debuginfod_find_debuginfo(c, id, len, path);
	debuginfod_end(c);
	if (fd >= 0) {
		close(fd);
		if (*path)
			return 0;
		return -ENOMEM;
	}
	free(*path);
	*path = NULL;
	if (lk.timed_out || lk.cancelled)
		forget_abort_mark(build_id, started);
	if (lk.timed_out)
		return -ETIME;
	if (lk.cancelled)
		return -ECANCELED;
	return fd;
}
