/* SPDX-License-Identifier: MIT */
/* Flat/cumulative aggregation of a read-back profile, and diffs of two such reports. */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "lib/arith.h"
#include "lib/grow.h"
#include "lib/hash.h"
#include "lib/htab.h"
#include "profile/report.h"

struct rpt_node {
	struct prof_rpt_row row;
	size_t stamp;		/* last sample (index + 1) counted in cum */
	bool inline_in, call_in;	/* reached by an inline / a real call */
};

/* Location -> its nodes: loc_nodes[start .. start + count). */
struct loc_slot {
	const struct prof_rd_location *loc;
	size_t start, count;
};

struct rpt_owner {
	struct prof_rpt pub;	/* first: prof_rpt_free casts back */
	char **pool;		/* names made up here: "[libc.so.6]" */
	size_t n_pool, cap_pool;
};

struct builder {
	struct rpt_owner *o;
	enum prof_rpt_by by;
	struct rpt_node *nodes;
	size_t n_nodes, cap_nodes;
	struct cprof_htab node_index;	/* (name, file, line) -> node */
	struct loc_slot *locs;
	size_t n_locs, cap_locs;
	struct cprof_htab loc_index;	/* location -> locs[] */
	size_t *loc_nodes;
	size_t n_loc_nodes, cap_loc_nodes;
};

/* A node being looked up. */
struct node_key {
	const char *name, *file;
	int64_t line;
};

static uint32_t node_hash(const struct node_key *k)
{
	uint64_t h = CPROF_HASH_SEED;

	/* the names' terminating NULs keep ("ab", "c") apart from ("a", "bc") */
	h = cprof_hash_bytes(h, k->name, strlen(k->name) + 1);
	h = cprof_hash_bytes(h, k->file, strlen(k->file) + 1);
	return cprof_hash_finish(cprof_hash_mix(h, (uint64_t)k->line));
}

static bool node_eq(const struct builder *b, uint32_t i, const struct node_key *k)
{
	const struct prof_rpt_row *r = &b->nodes[i].row;

	/* by function the row's file is for display only (node_get) */
	return r->line == k->line && strcmp(r->name, k->name) == 0 &&
	       (b->by == PROF_RPT_FUNCTION || strcmp(r->file, k->file) == 0);
}

#define HTAB_NAME node_index
#define HTAB_CTX struct builder
#define HTAB_KEY struct node_key
#define HTAB_HASH(b, k) node_hash(k)
#define HTAB_COMPARE node_eq
#include "lib/htab-type.h"

static bool loc_eq(const struct builder *b, uint32_t i, const struct prof_rd_location *loc)
{
	return b->locs[i].loc == loc;
}

#define HTAB_NAME loc_index
#define HTAB_CTX struct builder
#define HTAB_KEY struct prof_rd_location
#define HTAB_HASH(b, loc) cprof_hash_finish((uint64_t)(uintptr_t)(loc))
#define HTAB_COMPARE loc_eq
#include "lib/htab-type.h"

/* Keeps a made-up name for the report's lifetime. */
static const char *pool_keep(struct rpt_owner *o, const char *s)
{
	char *copy;

	if (cprof_grow(&o->pool, &o->cap_pool, o->n_pool + 1, sizeof(*o->pool), 16) < 0)
		return NULL;
	copy = strdup(s);
	if (copy)
		o->pool[o->n_pool++] = copy;
	return copy;
}

/* node_get's flags: which strings are temporaries, copied on creation. */
enum { TEMP_NAME = 1, TEMP_FILE = 2 };

/* Copies the temporaries among *name and *file (temp says which) into the pool. */
static int keep_temps(struct builder *b, const char **name, const char **file, int temp)
{
	if (temp & TEMP_NAME) {
		*name = pool_keep(b->o, *name);
		if (!*name)
			return -ENOMEM;
	}
	if (temp & TEMP_FILE) {
		*file = pool_keep(b->o, *file);
		if (!*file)
			return -ENOMEM;
	}
	return 0;
}

/*
 * The node of (name, file, line), created when new; *idx receives its index.
 * By function, as pprof -top, the key is the name alone: records of one name
 * in several files (C statics, C++ anonymous namespaces, Rust generics) are
 * one row, showing the file of the first one met.
 */
static int node_get(struct builder *b, const char *name, const char *file, int64_t line,
		    int temp, size_t *idx)
{
	struct node_key key = { name, b->by == PROF_RPT_FUNCTION ? "" : file, line };
	struct rpt_node *n;
	uint32_t hash, ref;

	ref = node_index_find(&b->node_index, b, &key, &hash);
	if (ref) {
		*idx = ref - 1;
		return 0;
	}
	if (b->n_nodes >= UINT32_MAX - 1 ||
	    cprof_grow(&b->nodes, &b->cap_nodes, b->n_nodes + 1, sizeof(*b->nodes), 64) < 0 ||
	    cprof_htab_reserve(&b->node_index, 1) < 0 || keep_temps(b, &name, &file, temp) < 0)
		return -ENOMEM;
	n = &b->nodes[b->n_nodes];
	memset(n, 0, sizeof(*n));
	n->row.name = name;
	n->row.file = file;
	n->row.line = line;
	cprof_htab_add(&b->node_index, hash, b->n_nodes);
	*idx = b->n_nodes++;
	return 0;
}

/* A frame with no function: "[mapping base name]" or "<unknown>". */
static int node_unknown(struct builder *b, const struct prof_rd_location *loc, size_t *idx)
{
	const char *f = loc->mapping ? loc->mapping->filename : "", *base;
	char buf[512];

	if (!*f)
		return node_get(b, "<unknown>", "", 0, 0, idx);
	base = strrchr(f, '/');
	base = base ? base + 1 : f;
	snprintf(buf, sizeof(buf), "[%s]", base);
	return node_get(b, buf, "", 0, TEMP_NAME, idx);
}

static int push_loc_node(struct builder *b, size_t idx)
{
	if (cprof_grow(&b->loc_nodes, &b->cap_loc_nodes, b->n_loc_nodes + 1, sizeof(*b->loc_nodes), 64) < 0)
		return -ENOMEM;
	b->loc_nodes[b->n_loc_nodes++] = idx;
	return 0;
}

/*
 * Go's filepath.Clean, which pprof applies to file names: no "." elements,
 * no repeated '/', ".." resolved where it can be.  Returns true (with the
 * result in buf) when that changes path.
 */
static bool clean_path(const char *path, char *buf, size_t size)
{
	size_t starts[256], depth = 0, n = 0, len;
	bool rooted = path[0] == '/';
	const char *p = path, *e;

	if (!*path || strlen(path) >= size)
		return false;
	if (rooted)
		buf[n++] = '/';
	while (*p) {
		while (*p == '/')
			p++;
		if (!*p)
			break;
		e = strchr(p, '/');
		len = e ? (size_t)(e - p) : strlen(p);
		if (len == 1 && p[0] == '.') {
			/* nothing */
		} else if (len == 2 && p[0] == '.' && p[1] == '.') {
			if (depth && !(n - starts[depth - 1] == 2 &&
				       memcmp(buf + starts[depth - 1], "..", 2) == 0)) {
				n = starts[--depth];
				if (n > (rooted ? 1u : 0u))
					n--;	/* the '/' before it */
			} else if (!rooted) {
				goto push;
			}
		} else {
push:
			if (depth == sizeof(starts) / sizeof(starts[0]))
				return false;
			if (n > (rooted ? 1u : 0u))
				buf[n++] = '/';
			starts[depth++] = n;
			memcpy(buf + n, p, len);
			n += len;
		}
		p += len;
	}
	if (n == 0)
		buf[n++] = '.';
	buf[n] = '\0';
	return strcmp(buf, path) != 0;
}

/* The node of line i of loc (its function, file, maybe line). */
static int line_node(struct builder *b, const struct prof_rd_location *loc, size_t i,
		     size_t *idx)
{
	const struct prof_rd_function *f = loc->lines[i].function;
	const char *file = f->filename;
	char clean[4096];
	int temp = 0;

	/* pprof shows "./nptl/x.c" as "nptl/x.c": the same key here. */
	if (clean_path(file, clean, sizeof(clean))) {
		file = clean;
		temp = TEMP_FILE;
	}
	if (b->by == PROF_RPT_FILE) {
		if (!*file)
			return node_unknown(b, loc, idx);
		return node_get(b, file, file, 0, temp ? TEMP_NAME | TEMP_FILE : 0, idx);
	}
	if (!*f->name)
		return node_unknown(b, loc, idx);
	if (prof_rd_location_kernel(loc)) {
		/* perf's mark: a kernel function apart from a user one of
		 * the same name, and easy to --ignore */
		char name[512];

		snprintf(name, sizeof(name), "%s" PROF_RD_KERNEL_MARK, f->name);
		return node_get(b, name, file, b->by == PROF_RPT_LINE ? loc->lines[i].line : 0,
				temp | TEMP_NAME, idx);
	}
	return node_get(b, f->name, file, b->by == PROF_RPT_LINE ? loc->lines[i].line : 0, temp,
			idx);
}

/*
 * The nodes of loc's frames, innermost first, computed once per location.
 * *out stays valid until the next call.
 */
static int loc_nodes_of(struct builder *b, const struct prof_rd_location *loc,
			const struct loc_slot **out)
{
	struct loc_slot *s;
	uint32_t hash, ref;
	size_t i, idx;
	int ret;

	ref = loc_index_find(&b->loc_index, b, loc, &hash);
	if (ref) {
		*out = &b->locs[ref - 1];
		return 0;
	}
	if (cprof_grow(&b->locs, &b->cap_locs, b->n_locs + 1, sizeof(*b->locs), 1024) < 0 ||
	    cprof_htab_reserve(&b->loc_index, 1) < 0)
		return -ENOMEM;
	s = &b->locs[b->n_locs];
	s->start = b->n_loc_nodes;
	for (i = 0; i < loc->n_lines; i++) {
		ret = line_node(b, loc, i, &idx);
		if (ret < 0 || (ret = push_loc_node(b, idx)) < 0)
			return ret;
	}
	if (loc->n_lines == 0) {
		ret = node_unknown(b, loc, &idx);
		if (ret < 0 || (ret = push_loc_node(b, idx)) < 0)
			return ret;
	}
	s->loc = loc;
	s->count = b->n_loc_nodes - s->start;
	cprof_htab_add(&b->loc_index, hash, b->n_locs++);
	*out = s;
	return 0;
}

static int cmp_str(const char *a, const char *b)
{
	int c = strcmp(a, b);

	return c < 0 ? -1 : c > 0;
}

static int cmp_key(const struct prof_rpt_row *x, const struct prof_rpt_row *y)
{
	int c = cmp_str(x->name, y->name);

	if (c)
		return c;
	c = cmp_str(x->file, y->file);
	if (c)
		return c;
	return x->line < y->line ? -1 : x->line > y->line;
}

/* pprof's order for -top: flat, then name, then cum. */
static int cmp_row(const void *a, const void *b)
{
	const struct prof_rpt_row *x = a, *y = b;

	if (cprof_abs64(x->flat) != cprof_abs64(y->flat))
		return cprof_abs64(x->flat) > cprof_abs64(y->flat) ? -1 : 1;
	if (strcmp(x->name, y->name))
		return cmp_str(x->name, y->name);
	if (cprof_abs64(x->cum) != cprof_abs64(y->cum))
		return cprof_abs64(x->cum) > cprof_abs64(y->cum) ? -1 : 1;
	return cmp_key(x, y);
}

/* Counts sample s (index i, value v) into the nodes of its frames. */
static int add_sample(struct builder *b, const struct prof_rd_sample *s, size_t i, int64_t v)
{
	const struct loc_slot *ls;
	struct rpt_node *n;
	size_t j, k;
	int ret;

	for (j = 0; j < s->n_locations; j++) {
		ret = loc_nodes_of(b, s->locations[j], &ls);
		if (ret < 0)
			return ret;
		/* The leaf's innermost frame is where the time went. */
		if (j == 0 && ls->count) {
			n = &b->nodes[b->loc_nodes[ls->start]];
			n->row.flat = cprof_add_wrap(n->row.flat, v);
		}
		for (k = 0; k < ls->count; k++) {
			n = &b->nodes[b->loc_nodes[ls->start + k]];
			/* How it was called: inlined into the next frame of
			 * its location, or from the next location. */
			if (k + 1 < ls->count)
				n->inline_in = true;
			else if (j + 1 < s->n_locations)
				n->call_in = true;
			/* Recursion and inlining put a node on a stack more
			 * than once; its cum counts the sample once. */
			if (n->stamp != i + 1) {
				n->stamp = i + 1;
				n->row.cum = cprof_add_wrap(n->row.cum, v);
			}
		}
	}
	return 0;
}

/* The nodes as the report's rows, in pprof's order. */
static int make_rows(struct builder *b)
{
	struct prof_rpt *r = &b->o->pub;
	size_t i;

	r->rows = calloc(b->n_nodes ? b->n_nodes : 1, sizeof(*r->rows));
	if (!r->rows)
		return -ENOMEM;
	for (i = 0; i < b->n_nodes; i++) {
		r->rows[i] = b->nodes[i].row;
		r->rows[i].inlined = b->nodes[i].inline_in && !b->nodes[i].call_in;
		r->rows[i].partly_inlined = b->nodes[i].inline_in && b->nodes[i].call_in;
	}
	r->n_rows = b->n_nodes;
	qsort(r->rows, r->n_rows, sizeof(*r->rows), cmp_row);
	return 0;
}

int prof_rpt_build(const struct prof_rd_profile *p, size_t type, enum prof_rpt_by by,
		   struct prof_rpt **out)
{
	struct builder b;
	size_t i;
	int ret = 0;

	*out = NULL;
	if (type >= p->n_sample_types)
		return -EINVAL;
	memset(&b, 0, sizeof(b));
	b.by = by;
	b.o = calloc(1, sizeof(*b.o));
	if (!b.o)
		return -ENOMEM;
	b.o->pub.by = by;
	b.o->pub.type = type;
	for (i = 0; !ret && i < p->n_samples; i++) {
		int64_t v = p->samples[i].values[type];

		b.o->pub.total = cprof_add_wrap(b.o->pub.total, v);
		ret = add_sample(&b, &p->samples[i], i, v);
	}
	if (!ret)
		ret = make_rows(&b);
	if (!ret) {
		*out = &b.o->pub;
		b.o = NULL;
	}
	prof_rpt_free(b.o ? &b.o->pub : NULL);
	free(b.nodes);
	cprof_htab_free(&b.node_index);
	free(b.locs);
	cprof_htab_free(&b.loc_index);
	free(b.loc_nodes);
	return ret;
}

void prof_rpt_free(struct prof_rpt *r)
{
	struct rpt_owner *o = (struct rpt_owner *)r;
	size_t i;

	if (!o)
		return;
	for (i = 0; i < o->n_pool; i++)
		free(o->pool[i]);
	free(o->pool);
	free(o->pub.rows);
	free(o);
}

/* ---- diff ---------------------------------------------------------------- */

/* By function a row is its name (node_get): the file may differ between runs. */
static int cmp_name(const struct prof_rpt_row *x, const struct prof_rpt_row *y)
{
	return cmp_str(x->name, y->name);
}

typedef int (*row_cmp_fn)(const struct prof_rpt_row *x, const struct prof_rpt_row *y);

/* What identifies a row of a report aggregated by `by`. */
static row_cmp_fn key_cmp(enum prof_rpt_by by)
{
	return by == PROF_RPT_FUNCTION ? cmp_name : cmp_key;
}

static int cmp_row_key(const void *a, const void *b)
{
	return cmp_key(*(const struct prof_rpt_row *const *)a, *(const struct prof_rpt_row *const *)b);
}

static int cmp_row_name(const void *a, const void *b)
{
	return cmp_name(*(const struct prof_rpt_row *const *)a, *(const struct prof_rpt_row *const *)b);
}

static double share(int64_t v, int64_t total)
{
	return total ? 100.0 * (double)v / (double)total : 0.0;
}

static int cmp_diff_row(const void *a, const void *b)
{
	const struct prof_diff_row *x = a, *y = b;
	int c;

	if (fabs(x->d_cum) != fabs(y->d_cum))
		return fabs(x->d_cum) > fabs(y->d_cum) ? -1 : 1;
	if (fabs(x->d_flat) != fabs(y->d_flat))
		return fabs(x->d_flat) > fabs(y->d_flat) ? -1 : 1;
	/* Unchanged rows: the bigger ones first, as in a report. */
	if (x->new_cum != y->new_cum)
		return x->new_cum > y->new_cum ? -1 : 1;
	c = cmp_str(x->name, y->name);
	if (c)
		return c;
	c = cmp_str(x->file, y->file);
	if (c)
		return c;
	return x->line < y->line ? -1 : x->line > y->line;
}

/* Report rows by key, for the merge. */
static const struct prof_rpt_row **sorted_by_key(const struct prof_rpt *r)
{
	const struct prof_rpt_row **v = calloc(r->n_rows ? r->n_rows : 1, sizeof(*v));
	size_t i;

	if (!v)
		return NULL;
	for (i = 0; i < r->n_rows; i++)
		v[i] = &r->rows[i];
	qsort(v, r->n_rows, sizeof(*v), r->by == PROF_RPT_FUNCTION ? cmp_row_name : cmp_row_key);
	return v;
}

/* Row r of the diff from x in base and y in new (either NULL when absent). */
static void diff_row(struct prof_diff_row *r, const struct prof_rpt_row *x,
		     const struct prof_rpt *base, const struct prof_rpt_row *y,
		     const struct prof_rpt *new_rpt)
{
	r->name = (x ? x : y)->name;
	r->file = (x ? x : y)->file;
	r->line = (x ? x : y)->line;
	r->in_base = x != NULL;
	r->in_new = y != NULL;
	if (x) {
		r->base_flat = share(x->flat, base->total);
		r->base_cum = share(x->cum, base->total);
	}
	if (y) {
		r->new_flat = share(y->flat, new_rpt->total);
		r->new_cum = share(y->cum, new_rpt->total);
	}
	r->d_flat = r->new_flat - r->base_flat;
	r->d_cum = r->new_cum - r->base_cum;
}

int prof_diff_build(const struct prof_rpt *base, const struct prof_rpt *new_rpt,
		    struct prof_diff **out)
{
	const struct prof_rpt_row **a = NULL, **b = NULL;
	row_cmp_fn cmp = key_cmp(base->by);
	struct prof_diff *d = NULL;
	size_t i = 0, j = 0;
	int ret = 0, c;

	*out = NULL;
	if (base->by != new_rpt->by)
		return -EINVAL;
	d = calloc(1, sizeof(*d));
	a = sorted_by_key(base);
	b = sorted_by_key(new_rpt);
	if (d)
		d->rows = calloc(base->n_rows + new_rpt->n_rows + 1, sizeof(*d->rows));
	if (!d || !a || !b || !d->rows) {
		ret = -ENOMEM;
		goto out;
	}
	/* a merge of the two reports' rows, both sorted by key */
	while (i < base->n_rows || j < new_rpt->n_rows) {
		struct prof_diff_row *r = &d->rows[d->n_rows++];

		c = i == base->n_rows ? 1 : j == new_rpt->n_rows ? -1 : cmp(a[i], b[j]);
		diff_row(r, c <= 0 ? a[i] : NULL, base, c >= 0 ? b[j] : NULL, new_rpt);
		i += c <= 0;
		j += c >= 0;
		if (r->d_cum > d->max_growth)
			d->max_growth = r->d_cum;
	}
	qsort(d->rows, d->n_rows, sizeof(*d->rows), cmp_diff_row);
	*out = d;
	d = NULL;
out:
	prof_diff_free(d);
	free(a);
	free(b);
	return ret;
}

void prof_diff_free(struct prof_diff *d)
{
	if (!d)
		return;
	free(d->rows);
	free(d);
}

/* ---- values with units ------------------------------------------------------ */

/* Units a profile may state, and the family and factor each belongs to. */
static const struct {
	const char *name;
	int family;		/* 1: time (ns), 2: memory (bytes) */
	double factor;
} in_units[] = {
	{ "nanoseconds", 1, 1 }, { "nanosecond", 1, 1 }, { "ns", 1, 1 },
	{ "microseconds", 1, 1e3 }, { "microsecond", 1, 1e3 }, { "us", 1, 1e3 },
	{ "milliseconds", 1, 1e6 }, { "millisecond", 1, 1e6 }, { "ms", 1, 1e6 },
	{ "seconds", 1, 1e9 }, { "second", 1, 1e9 }, { "s", 1, 1e9 },
	{ "bytes", 2, 1 }, { "byte", 2, 1 }, { "b", 2, 1 },
	{ "kilobytes", 2, 1024 }, { "kb", 2, 1024 },
	{ "megabytes", 2, 1024.0 * 1024 }, { "mb", 2, 1024.0 * 1024 },
};

/* What pprof scales to: the largest unit the value reaches. */
static const struct {
	const char *name;
	int family;
	double factor;
} out_units[] = {
	{ "ns", 1, 1 }, { "us", 1, 1e3 }, { "ms", 1, 1e6 }, { "s", 1, 1e9 },
	{ "hrs", 1, 3600e9 },
	{ "B", 2, 1 }, { "kB", 2, 1024.0 }, { "MB", 2, 1024.0 * 1024 },
	{ "GB", 2, 1024.0 * 1024 * 1024 }, { "TB", 2, 1024.0 * 1024 * 1024 * 1024 },
	{ "PB", 2, 1024.0 * 1024 * 1024 * 1024 * 1024 },
};

char *prof_rpt_format_value(char *buf, size_t size, int64_t v, const char *unit)
{
	const char *to = NULL, *neg = v < 0 ? "-" : "";
	double x = 0, best = 0;
	size_t i, n;
	int family = 0;

	for (i = 0; unit && i < sizeof(in_units) / sizeof(in_units[0]); i++) {
		if (strcasecmp(unit, in_units[i].name) == 0) {
			family = in_units[i].family;
			x = fabs((double)v) * in_units[i].factor;
			break;
		}
	}
	if (!family) {
		snprintf(buf, size, "%" PRId64, v);
		return buf;
	}
	for (i = 0; i < sizeof(out_units) / sizeof(out_units[0]); i++) {
		if (out_units[i].family == family && x / out_units[i].factor >= 1.0 &&
		    out_units[i].factor >= best) {
			best = out_units[i].factor;
			to = out_units[i].name;
		}
	}
	if (!to) {
		snprintf(buf, size, "0");
		return buf;
	}
	snprintf(buf, size, "%s%.2f", neg, x / best);
	n = strlen(buf);
	if (n > 3 && strcmp(buf + n - 3, ".00") == 0)
		buf[n - 3] = '\0';
	n = strlen(buf);
	snprintf(buf + n, size > n ? size - n : 0, "%s", to);
	return buf;
}
