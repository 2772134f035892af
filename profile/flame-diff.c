/* SPDX-License-Identifier: MIT */
/* Differential flame graphs: NEW's flame graph, coloured by each frame's change against BASE. */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profile/atomic.h"
#include "profile/flame-tree.h"
#include "profile/flame.h"

#define NOTE_NAMES 5		/* frames only in BASE named in the note */
#define NOTE_MAX 600
#define NO_MATCH UINT32_MAX	/* FLAME_NONE is 0, the root's own index */

/*
 * The two trees and, for each node of NEW's, the node at the same path
 * (the same names from the root) in BASE's, NO_MATCH when there is none.
 * Shares are fractions of each tree's root total, so that profiles of
 * different lengths compare.
 */
struct diff_paint {
	const struct flame *base, *cur;
	uint32_t *base_of;	/* cur->n_nodes */
	double max_change;	/* the largest |change| of a share, for the colour scale */
};

static double share(const struct flame *fl, uint32_t n)
{
	return fl->nodes[0].total > 0 ? (double)fl->nodes[n].total / (double)fl->nodes[0].total : 0;
}

static double change_of(const struct diff_paint *d, uint32_t n)
{
	uint32_t b = d->base_of[n];

	return share(d->cur, n) - (b == NO_MATCH ? 0 : share(d->base, b));
}

/* The child of BASE's node b named like NEW's node n, or NO_MATCH. */
static uint32_t base_child(const struct diff_paint *d, uint32_t b, uint32_t n)
{
	const char *name = d->cur->names.strs[d->cur->nodes[n].name];
	uint32_t c;

	if (b == NO_MATCH)
		return NO_MATCH;
	for (c = d->base->nodes[b].child; c; c = d->base->nodes[c].sibling)
		if (strcmp(d->base->names.strs[d->base->nodes[c].name], name) == 0)
			return c;
	return NO_MATCH;
}

/* Matches every node of NEW's tree with BASE's; parents come before children. */
static void match(struct diff_paint *d)
{
	uint32_t n;
	double c;

	d->base_of[0] = 0;
	for (n = d->cur->nodes[0].child; n; n = prof_flame_walk_next(d->cur, n, true)) {
		d->base_of[n] = base_child(d, d->base_of[d->cur->nodes[n].parent], n);
		c = fabs(change_of(d, n));
		if (c > d->max_change)
			d->max_change = c;
	}
}

/* Red for growth, blue for shrinkage, saturated at the largest change;
 * near white for frames whose share stayed. */
static void diff_fill(FILE *f, const struct flame *fl, uint32_t n, void *arg)
{
	const struct diff_paint *d = arg;
	double c = change_of(d, n), k = d->max_change > 0 ? fabs(c) / d->max_change : 0;
	unsigned fade = 235 - (unsigned)(k * 190);

	(void)fl;
	if (c >= 0)
		fprintf(f, "rgb(250,%u,%u)", fade, fade);
	else
		fprintf(f, "rgb(%u,%u,250)", fade, fade);
}

static void diff_tip(FILE *f, const struct flame *fl, uint32_t n, int64_t total, void *arg)
{
	const struct diff_paint *d = arg;
	uint32_t b = d->base_of[n];

	(void)total;
	fprintf(f, " (new %" PRId64 ", %.2f%%; base %" PRId64 ", %.2f%%; %+.2f points)",
		fl->nodes[n].total, 100 * share(fl, n),
		b == NO_MATCH ? (int64_t)0 : d->base->nodes[b].total,
		b == NO_MATCH ? 0.0 : 100 * share(d->base, b), 100 * change_of(d, n));
}

struct gone {
	const char *name;
	double share;
};

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int cmp_gone_name(const void *a, const void *b)
{
	const struct gone *x = a, *y = b;
	int c = strcmp(x->name, y->name);

	return c ? c : (x->share < y->share) - (x->share > y->share);
}

static int cmp_gone_share(const void *a, const void *b)
{
	const struct gone *x = a, *y = b;

	return (x->share < y->share) - (x->share > y->share);
}

/*
 * The functions BASE has and NEW has nowhere, each once with its largest
 * share, largest first: they cannot be drawn in a graph of NEW.  Returns
 * how many (at most base->n_nodes) into *out (free it), or -ENOMEM.
 */
static long gone_functions(const struct diff_paint *d, struct gone **out)
{
	char **names = malloc((d->cur->names.n ? d->cur->names.n : 1) * sizeof(*names));
	struct gone *g = calloc(d->base->n_nodes ? d->base->n_nodes : 1, sizeof(*g));
	size_t i, n = 0, k = 0;

	if (!names || !g) {
		free(names);
		free(g);
		return -ENOMEM;
	}
	memcpy(names, d->cur->names.strs, d->cur->names.n * sizeof(*names));
	qsort(names, d->cur->names.n, sizeof(*names), cmp_str);
	for (i = 1; i < d->base->n_nodes; i++) {
		const char *name = d->base->names.strs[d->base->nodes[i].name];

		if (!bsearch(&name, names, d->cur->names.n, sizeof(*names), cmp_str))
			g[n++] = (struct gone){ name, share(d->base, (uint32_t)i) };
	}
	free(names);
	/* one entry per name, its largest share first after the sort */
	qsort(g, n, sizeof(*g), cmp_gone_name);
	for (i = 0; i < n; i++)
		if (!k || strcmp(g[k - 1].name, g[i].name) != 0)
			g[k++] = g[i];
	qsort(g, k, sizeof(*g), cmp_gone_share);
	*out = g;
	return (long)k;
}

/* The note under the subtitle: what the colours mean, and the largest
 * functions only BASE has. */
static void make_note(const struct diff_paint *d, char *buf, size_t size)
{
	struct gone *g = NULL;
	long n, i;
	size_t len;

	len = (size_t)snprintf(buf, size, "red: share grew against BASE, blue: shrank (largest "
			       "change %.2f points)", 100 * d->max_change);
	n = gone_functions(d, &g);
	for (i = 0; i < n && i < NOTE_NAMES && len < size; i++)
		len += (size_t)snprintf(buf + len, size - len, "%s %s (%.2f%%)",
					i ? "," : "; only in BASE:", g[i].name, 100 * g[i].share);
	if (n > NOTE_NAMES && len < size)
		snprintf(buf + len, size - len, " and %ld more", n - NOTE_NAMES);
	free(g);
}

int prof_flame_diff_svg(const struct prof_rd_profile *base, size_t base_type,
			const struct prof_rd_profile *cur, size_t cur_type, const char *title,
			unsigned flags, FILE *f)
{
	struct flame fb, fc;
	struct diff_paint d = { .base = &fb, .cur = &fc };
	struct flame_paint paint = { diff_fill, diff_tip, &d };
	char note[NOTE_MAX];
	int ret;

	ret = prof_flame_tree_build(&fb, base, base_type, flags);
	if (ret < 0)
		return ret;
	ret = prof_flame_tree_build(&fc, cur, cur_type, flags);
	if (ret < 0)
		goto free_base;
	d.base_of = calloc(fc.n_nodes ? fc.n_nodes : 1, sizeof(*d.base_of));
	if (!d.base_of) {
		ret = -ENOMEM;
		goto free_cur;
	}
	match(&d);
	make_note(&d, note, sizeof(note));
	ret = prof_flame_svg_write(&fc, &cur->sample_types[cur_type],
				   title ? title : "Differential Flame Graph", note, &paint, f);
	free(d.base_of);
free_cur:
	prof_flame_tree_free(&fc);
free_base:
	prof_flame_tree_free(&fb);
	return ret;
}

struct diff_job {
	const struct prof_rd_profile *base, *cur;
	size_t base_type, cur_type;
	const char *title;
};

static int draw(FILE *f, void *arg)
{
	const struct diff_job *j = arg;

	return prof_flame_diff_svg(j->base, j->base_type, j->cur, j->cur_type, j->title, 0, f);
}

static int fill(int fd, void *arg)
{
	return prof_flame_to_fd(fd, draw, arg);
}

int prof_flame_diff_svg_file(const struct prof_rd_profile *base, size_t base_type,
			     const struct prof_rd_profile *cur, size_t cur_type, const char *path,
			     const char *title)
{
	struct diff_job j = { base, cur, base_type, cur_type, title };

	if (base_type >= base->n_sample_types || cur_type >= cur->n_sample_types)
		return -EINVAL;
	return prof_atomic_write(path, fill, &j);
}
