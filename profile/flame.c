/* SPDX-License-Identifier: MIT */
/* Flame graphs: collapsed stacks, and writing either kind (collapsed, SVG) to fds and files. */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/grow.h"
#include "profile/atomic.h"
#include "profile/flame-tree.h"
#include "profile/flame.h"

/* ---- collapsed stacks ------------------------------------------------- */

static int write_collapsed(const struct flame *fl, FILE *f)
{
	size_t *ends, cap = 0, len, nlen;
	char *path = NULL;
	uint32_t n;
	int ret = 0;

	ends = calloc((size_t)fl->max_depth + 1, sizeof(*ends));
	if (!ends || cprof_grow(&path, &cap, 1, 1, 256) < 0) {
		ret = -ENOMEM;
		goto free_bufs;
	}
	errno = 0;
	for (n = fl->nodes[0].child; n; n = prof_flame_walk_next(fl, n, true)) {
		const struct flame_node *d = &fl->nodes[n];

		/* ends[depth - 1] is where the parent's path ends */
		len = d->depth > 1 ? ends[d->depth - 1] : 0;
		nlen = strlen(fl->names.strs[d->name]);
		if (cprof_grow(&path, &cap, len + nlen + 2, 1, 256) < 0) {
			ret = -ENOMEM;
			goto free_bufs;
		}
		if (d->depth > 1)
			path[len++] = ';';
		memcpy(path + len, fl->names.strs[d->name], nlen);
		len += nlen;
		ends[d->depth] = len;
		if (d->self) {
			fwrite(path, 1, len, f);
			fprintf(f, " %" PRId64 "\n", d->self);
		}
	}
	ret = prof_flame_stream_status(f);
free_bufs:
	free(path);
	free(ends);
	return ret;
}

int prof_flame_collapsed(const struct prof_rd_profile *p, size_t type, unsigned flags, FILE *f)
{
	struct flame fl;
	int ret;

	ret = prof_flame_tree_build(&fl, p, type, flags);
	if (ret < 0)
		return ret;
	ret = write_collapsed(&fl, f);
	prof_flame_tree_free(&fl);
	return ret;
}

/* ---- fds and files ---------------------------------------------------- */

struct flame_job {
	const struct prof_rd_profile *p;
	size_t type;
	const char *title;
	unsigned flags;
	bool svg;
};

static int draw_job(FILE *f, void *arg)
{
	const struct flame_job *j = arg;

	return j->svg ? prof_flame_svg(j->p, j->type, j->title, j->flags, f) :
			prof_flame_collapsed(j->p, j->type, j->flags, f);
}

static int run_job(int fd, void *arg)
{
	return prof_flame_to_fd(fd, draw_job, arg);
}

int prof_flame_collapsed_fd(const struct prof_rd_profile *p, size_t type, unsigned flags, int fd)
{
	struct flame_job j = { .p = p, .type = type, .flags = flags };

	return run_job(fd, &j);
}

int prof_flame_svg_fd(const struct prof_rd_profile *p, size_t type, const char *title,
		      unsigned flags, int fd)
{
	struct flame_job j = { .p = p, .type = type, .title = title, .flags = flags, .svg = true };

	return run_job(fd, &j);
}

int prof_flame_collapsed_file(const struct prof_rd_profile *p, size_t type, const char *path,
			      unsigned flags)
{
	struct flame_job j = { .p = p, .type = type, .flags = flags };

	/* checked first: an atomic write would otherwise create and remove a file for nothing */
	if (type >= p->n_sample_types)
		return -EINVAL;
	return prof_atomic_write(path, run_job, &j);
}

int prof_flame_svg_file(const struct prof_rd_profile *p, size_t type, const char *path,
			const char *title)
{
	struct flame_job j = { .p = p, .type = type, .title = title, .svg = true };

	if (type >= p->n_sample_types)
		return -EINVAL;
	return prof_atomic_write(path, run_job, &j);
}
