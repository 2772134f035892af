/* SPDX-License-Identifier: MIT */
/* cprof top's model: intervals of raw stacks folded into function, line and thread tables. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/top.h"
#include "lib/grow.h"
#include "lib/hash.h"
#include "lib/htab.h"
#include "session/session.h"
#include "profile/reader.h"
#include "symbolize/kallsyms.h"
#include "symbolize/symbolize.h"

/* A function, or a function's line (is_line), with its values: [0] flat,
 * [1] cumulative, over the last interval and since the start. */
struct entity {
	char *name;
	char *file;
	int line;
	bool is_line;
	int64_t last[2], total[2];
	uint32_t stamp;		/* the stack that last counted it cumulatively */
};

struct thread_ent {
	pid_t tid;
	char name[32];
	int64_t last, total;
};

/* A thread's flat time in one function: its hottest function is the top pair. */
struct pair {
	uint32_t thread, func;
	int64_t last, total;
};

struct entity_key {
	const char *name, *file;
	int line;
	bool is_line;
};

/* Symbolization runs here, on the main thread, with a symbolizer per
 * session (module ids are a session's own); sym_lookup caches by address,
 * so an interval costs a hash lookup per frame once its addresses are known. */
struct top_model {
	struct entity *ents;
	size_t n_ents, cap_ents;
	struct cprof_htab ent_index;
	struct thread_ent *threads;
	size_t n_threads, cap_threads;
	struct cprof_htab thread_index;
	struct pair *pairs;
	size_t n_pairs, cap_pairs;
	struct cprof_htab pair_index;
	struct sym_ctx *sym;
	const struct sym_kallsyms *kernel;	/* NULL: no kernel frame taken */
	unsigned sym_segment;
	uint64_t sym_generation;	/* the session's live generation at sym's making */
	bool sym_tried;
	int64_t value_last, value_total;
	uint64_t samples_last, samples_total;
	uint32_t stamp;
	const struct top_interval *iv;	/* being folded in */
	int64_t to_last;		/* 1: it counts in the last interval too; 0: totals only */
	uint32_t *order;		/* scratch for sorting */
	size_t cap_order;
	int64_t *hot_value;		/* scratch: per thread */
	uint32_t *hot;
	size_t cap_hot, cap_hot_value;
	char scratch[320];
	struct sym_frame made;		/* resolve's made-up frame */
};

static uint32_t entity_hash(const struct entity_key *k)
{
	uint64_t h = cprof_hash_bytes(0, k->name, strlen(k->name));

	if (k->file)
		h = cprof_hash_bytes(h, k->file, strlen(k->file));
	return cprof_hash_finish(cprof_hash_mix(h, (uint64_t)k->line << 1 | k->is_line));
}

static bool same_str(const char *a, const char *b)
{
	return a == b || (a && b && strcmp(a, b) == 0);
}

static bool entity_eq(const struct top_model *m, uint32_t i, const struct entity_key *k)
{
	const struct entity *e = &m->ents[i];

	return e->is_line == k->is_line && e->line == k->line && strcmp(e->name, k->name) == 0 &&
	       same_str(e->file, k->file);
}

#define HTAB_NAME ent_index
#define HTAB_CTX struct top_model
#define HTAB_KEY struct entity_key
#define HTAB_HASH(m, k) entity_hash(k)
#define HTAB_COMPARE entity_eq
#include "lib/htab-type.h"

static uint32_t tid_hash(const pid_t *tid)
{
	return cprof_hash_finish(cprof_hash_mix(0, (uint64_t)*tid));
}

static bool thread_eq(const struct top_model *m, uint32_t i, const pid_t *tid)
{
	return m->threads[i].tid == *tid;
}

#define HTAB_NAME thread_index
#define HTAB_CTX struct top_model
#define HTAB_KEY pid_t
#define HTAB_HASH(m, k) tid_hash(k)
#define HTAB_COMPARE thread_eq
#include "lib/htab-type.h"

/* A (thread, function) pair: the key is the pair itself. */
#define HTAB_NAME pair_index
#define HTAB_CTX struct top_model
#define HTAB_KEY struct pair
#define HTAB_HASH(m, k) cprof_hash_finish(cprof_hash_mix((k)->thread, (k)->func))
#define HTAB_COMPARE(m, i, k) ((m)->pairs[i].thread == (k)->thread && (m)->pairs[i].func == (k)->func)
#include "lib/htab-type.h"

int top_model_create(struct top_model **out, const struct sym_kallsyms *kernel)
{
	*out = calloc(1, sizeof(**out));
	if (!*out)
		return -ENOMEM;
	(*out)->kernel = kernel;
	return 0;
}

void top_model_destroy(struct top_model *m)
{
	size_t i;

	if (!m)
		return;
	for (i = 0; i < m->n_ents; i++) {
		free(m->ents[i].name);
		free(m->ents[i].file);
	}
	free(m->ents);
	free(m->threads);
	free(m->pairs);
	cprof_htab_free(&m->ent_index);
	cprof_htab_free(&m->thread_index);
	cprof_htab_free(&m->pair_index);
	sym_destroy(m->sym);
	free(m->order);
	free(m->hot_value);
	free(m->hot);
	free(m);
}

/* The entity of k, made on first use.  Returns its index or -ENOMEM. */
static long entity_of(struct top_model *m, const struct entity_key *k)
{
	struct entity *e;
	uint32_t hash, ref = ent_index_find(&m->ent_index, m, k, &hash);

	if (ref)
		return (long)ref - 1;
	if (cprof_grow(&m->ents, &m->cap_ents, m->n_ents + 1, sizeof(*m->ents), 256) < 0 ||
	    cprof_htab_reserve(&m->ent_index, 1) < 0)
		return -ENOMEM;
	e = &m->ents[m->n_ents];
	memset(e, 0, sizeof(*e));
	e->name = strdup(k->name);
	e->file = k->file ? strdup(k->file) : NULL;
	if (!e->name || (k->file && !e->file)) {
		free(e->name);
		free(e->file);
		return -ENOMEM;
	}
	e->line = k->line;
	e->is_line = k->is_line;
	cprof_htab_add(&m->ent_index, hash, m->n_ents);
	return (long)m->n_ents++;
}

static long thread_of(struct top_model *m, uint32_t key)
{
	const struct top_interval *iv = m->iv;
	const struct top_label *l = key && key <= iv->n_labels ? &iv->labels[key - 1] : NULL;
	pid_t tid = l ? l->tid : 0;
	uint32_t hash, ref = thread_index_find(&m->thread_index, m, &tid, &hash);
	struct thread_ent *t;

	if (ref) {
		t = &m->threads[ref - 1];
	} else {
		if (cprof_grow(&m->threads, &m->cap_threads, m->n_threads + 1,
			       sizeof(*m->threads), 64) < 0 ||
		    cprof_htab_reserve(&m->thread_index, 1) < 0)
			return -ENOMEM;
		t = &m->threads[m->n_threads];
		memset(t, 0, sizeof(*t));
		t->tid = tid;
		cprof_htab_add(&m->thread_index, hash, m->n_threads++);
	}
	/* a thread may rename itself: the latest name */
	if (l)
		memcpy(t->name, l->name, sizeof(t->name));
	return t - m->threads;
}

static int pair_add(struct top_model *m, uint32_t thread, uint32_t func, int64_t v)
{
	struct pair k = { .thread = thread, .func = func };
	uint32_t hash, ref = pair_index_find(&m->pair_index, m, &k, &hash);

	if (!ref) {
		if (cprof_grow(&m->pairs, &m->cap_pairs, m->n_pairs + 1, sizeof(*m->pairs), 256) < 0 ||
		    cprof_htab_reserve(&m->pair_index, 1) < 0)
			return -ENOMEM;
		m->pairs[m->n_pairs] = k;
		cprof_htab_add(&m->pair_index, hash, m->n_pairs++);
		ref = (uint32_t)m->n_pairs;
	}
	m->pairs[ref - 1].last += v * m->to_last;
	m->pairs[ref - 1].total += v;
	return 0;
}

/* Counts v to entity k: flat when it is the leaf, cumulative once a stack. */
static long count(struct top_model *m, const struct entity_key *k, bool leaf, int64_t v)
{
	long i = entity_of(m, k);
	struct entity *e;

	if (i < 0)
		return i;
	e = &m->ents[i];
	if (leaf) {
		e->last[0] += v * m->to_last;
		e->total[0] += v;
	}
	if (e->stamp != m->stamp) {
		e->stamp = m->stamp;
		e->last[1] += v * m->to_last;
		e->total[1] += v;
	}
	return i;
}

static int cmp_pyloc(const void *key, const void *elem)
{
	uint64_t id = *(const uint64_t *)key, other = ((const struct top_pyloc *)elem)->id;

	return id < other ? -1 : id > other;
}

/* A kernel frame, named as report names it (perf's mark), or a Python
 * frame, named as the profile names it: into m->made.  False: f is
 * neither. */
static bool resolve_special(struct top_model *m, const struct prof_frame *f)
{
	const struct top_interval *iv = m->iv;
	const struct top_pyloc *py;
	const char *name;

	if (f->flags & PROF_FRAME_KERNEL) {
		name = m->kernel ? sym_kallsyms_lookup(m->kernel, f->flags & PROF_FRAME_EXACT ?
						       f->addr : f->addr - 1, NULL) : NULL;
		snprintf(m->scratch, sizeof(m->scratch), "%s" PROF_RD_KERNEL_MARK,
			 name ? name : "[kernel.kallsyms]");
		return true;
	}
	if (!(f->flags & PROF_FRAME_PYTHON))
		return false;
	py = bsearch(&f->addr, iv->pylocs, iv->n_pylocs, sizeof(*iv->pylocs), cmp_pyloc);
	if (py)
		m->made = (struct sym_frame){ .function = py->function, .file = py->file,
					      .line = py->line };
	else
		snprintf(m->scratch, sizeof(m->scratch), "[python]");
	return true;
}

/* The frames f stands for: its inline chain, or one made-up frame. */
static void resolve(struct top_model *m, const struct prof_frame *f, const struct sym_frame **sf,
		    size_t *n)
{
	const struct top_interval *iv = m->iv;
	const struct proc_module *mod = NULL;
	const char *base;

	*n = 0;
	m->made = (struct sym_frame){ .function = m->scratch };
	if (f->flags & PROF_FRAME_TRUNCATED) {
		snprintf(m->scratch, sizeof(m->scratch), "[truncated]");
		goto made_up;
	}
	if (resolve_special(m, f))
		goto made_up;
	if (f->module && f->module <= iv->n_mods)
		mod = iv->mods[f->module - 1];
	if (m->sym && sym_lookup(m->sym, mod, f->addr, !(f->flags & PROF_FRAME_EXACT), sf, n) == 0 &&
	    *n)
		return;
	/* Unnamed: the module's share, which says where to look. */
	base = mod ? strrchr(mod->path, '/') : NULL;
	snprintf(m->scratch, sizeof(m->scratch), "[%s]",
		 base ? base + 1 : mod ? mod->path : "unknown");
made_up:
	*sf = &m->made;
	*n = 1;
}

static int fold_stack(uint32_t thread, const struct prof_frame *frames, size_t n_frames,
		      const int64_t *values, void *arg)
{
	struct top_model *m = arg;
	const struct sym_frame *sf;
	struct entity_key k;
	bool leaf = true;
	long t, fe, le;
	size_t i, j, nf;
	int64_t v = values[1];

	m->value_last += v * m->to_last;
	m->value_total += v;
	m->samples_last += (uint64_t)(values[0] * m->to_last);
	m->samples_total += (uint64_t)values[0];
	t = thread_of(m, thread);
	if (t < 0)
		return (int)t;
	m->threads[t].last += v * m->to_last;
	m->threads[t].total += v;
	m->stamp++;
	for (i = 0; i < n_frames; i++) {
		resolve(m, &frames[i], &sf, &nf);
		for (j = 0; j < nf; j++) {
			k = (struct entity_key){
				.name = sf[j].function ? sf[j].function :
					sf[j].system_name ? sf[j].system_name : "[unknown]",
			};
			fe = count(m, &k, leaf, v);
			k.file = sf[j].file;
			k.line = sf[j].line;
			k.is_line = true;
			le = count(m, &k, leaf, v);
			if (fe < 0 || le < 0)
				return -ENOMEM;
			if (leaf && pair_add(m, (uint32_t)t, (uint32_t)fe, v) < 0)
				return -ENOMEM;
			leaf = false;
		}
	}
	return 0;
}

/* Zeroes one scope's tallies: the last interval's before a new one is
 * folded, the totals on a reset; both hold the same counters. */
static void clear_scope(struct top_model *m, enum top_scope scope)
{
	bool last = scope == TOP_LAST;
	size_t i;

	for (i = 0; i < m->n_ents; i++) {
		int64_t *v = last ? m->ents[i].last : m->ents[i].total;

		v[0] = v[1] = 0;
	}
	for (i = 0; i < m->n_threads; i++)
		*(last ? &m->threads[i].last : &m->threads[i].total) = 0;
	for (i = 0; i < m->n_pairs; i++)
		*(last ? &m->pairs[i].last : &m->pairs[i].total) = 0;
	*(last ? &m->value_last : &m->value_total) = 0;
	*(last ? &m->samples_last : &m->samples_total) = 0;
}

int top_model_add(struct top_model *m, const struct top_interval *iv, bool as_last)
{
	uint64_t generation;
	int ret;

	generation = sym_live_generation(sess_live(iv->sess));
	if (!m->sym_tried || m->sym_segment != iv->segment || m->sym_generation != generation) {
		/* A new session numbers its modules anew; a symbolizer made
		 * before the session learned JIT names or a download has
		 * cached their absence. */
		sym_destroy(m->sym);
		m->sym = NULL;
		/* the table pointer is only kept by the symbolizer, never read */
		if (sym_create(&m->sym, NULL, 0) < 0)
			m->sym = NULL;
		else
			sess_apply_symbols(iv->sess, m->sym);
		m->sym_tried = true;
		m->sym_segment = iv->segment;
		m->sym_generation = generation;
	}
	if (as_last)
		clear_scope(m, TOP_LAST);
	m->to_last = as_last;
	m->iv = iv;
	ret = prof_stacks_foreach(iv->stacks, fold_stack, m);
	m->iv = NULL;
	return ret;
}

void top_model_reset(struct top_model *m)
{
	clear_scope(m, TOP_TOTAL);
}

int64_t top_model_value(const struct top_model *m, enum top_scope scope)
{
	return scope == TOP_LAST ? m->value_last : m->value_total;
}

uint64_t top_model_samples(const struct top_model *m, enum top_scope scope)
{
	return scope == TOP_LAST ? m->samples_last : m->samples_total;
}

/* ---- rows ------------------------------------------------------------------- */

struct order_ctx {
	const struct top_model *m;
	enum top_scope scope;
	int col;
};

static int64_t ent_value(const struct entity *e, enum top_scope scope, int col)
{
	return scope == TOP_LAST ? e->last[col] : e->total[col];
}

static int by_value(const void *pa, const void *pb, void *arg)
{
	const struct order_ctx *c = arg;
	const struct entity *a = &c->m->ents[*(const uint32_t *)pa];
	const struct entity *b = &c->m->ents[*(const uint32_t *)pb];
	int64_t va = ent_value(a, c->scope, c->col), vb = ent_value(b, c->scope, c->col);

	if (va != vb)
		return va > vb ? -1 : 1;
	va = ent_value(a, c->scope, !c->col);
	vb = ent_value(b, c->scope, !c->col);
	if (va != vb)
		return va > vb ? -1 : 1;
	return strcmp(a->name, b->name);
}

size_t top_model_rows(struct top_model *m, enum top_by by, enum top_scope scope,
		      enum top_sort sort, struct top_row *out, size_t max)
{
	struct order_ctx c = { m, scope, sort == TOP_SORT_CUM };
	const struct entity *e;
	size_t i, n = 0;

	if (cprof_grow(&m->order, &m->cap_order, m->n_ents, sizeof(*m->order), 256) < 0)
		return 0;
	for (i = 0; i < m->n_ents; i++) {
		e = &m->ents[i];
		/* by flat, the callers (no flat time) follow the leaves */
		if (e->is_line == (by == TOP_BY_LINE) &&
		    (ent_value(e, scope, 0) > 0 || ent_value(e, scope, 1) > 0))
			m->order[n++] = (uint32_t)i;
	}
	if (n)	/* (order is NULL before the first entity) */
		qsort_r(m->order, n, sizeof(*m->order), by_value, &c);
	for (i = 0; i < n && i < max; i++) {
		e = &m->ents[m->order[i]];
		out[i] = (struct top_row){
			.name = e->name,
			.file = e->file,
			.line = e->line,
			.flat = ent_value(e, scope, 0),
			.cum = ent_value(e, scope, 1),
		};
	}
	return i;
}

static int by_thread_value(const void *pa, const void *pb, void *arg)
{
	const struct order_ctx *c = arg;
	const struct thread_ent *a = &c->m->threads[*(const uint32_t *)pa];
	const struct thread_ent *b = &c->m->threads[*(const uint32_t *)pb];
	int64_t va = c->scope == TOP_LAST ? a->last : a->total;
	int64_t vb = c->scope == TOP_LAST ? b->last : b->total;

	if (va != vb)
		return va > vb ? -1 : 1;
	return a->tid < b->tid ? -1 : a->tid > b->tid;
}

/* Each thread's hottest function in the scope, into m->hot (UINT32_MAX: none). */
static int find_hot(struct top_model *m, enum top_scope scope)
{
	const struct pair *p;
	int64_t v;
	size_t i;

	if (cprof_grow(&m->hot, &m->cap_hot, m->n_threads, sizeof(*m->hot), 64) < 0 ||
	    cprof_grow(&m->hot_value, &m->cap_hot_value, m->n_threads, sizeof(*m->hot_value),
		       64) < 0)
		return -ENOMEM;
	for (i = 0; i < m->n_threads; i++) {
		m->hot[i] = UINT32_MAX;
		m->hot_value[i] = 0;
	}
	for (i = 0; i < m->n_pairs; i++) {
		p = &m->pairs[i];
		v = scope == TOP_LAST ? p->last : p->total;
		if (v > m->hot_value[p->thread]) {
			m->hot_value[p->thread] = v;
			m->hot[p->thread] = p->func;
		}
	}
	return 0;
}

size_t top_model_threads(struct top_model *m, enum top_scope scope, struct top_thread_row *out,
			 size_t max)
{
	struct order_ctx c = { m, scope, 0 };
	const struct thread_ent *t;
	size_t i, k, n = 0;

	if (cprof_grow(&m->order, &m->cap_order, m->n_threads, sizeof(*m->order), 256) < 0 ||
	    find_hot(m, scope) < 0)
		return 0;
	for (i = 0; i < m->n_threads; i++)
		if ((scope == TOP_LAST ? m->threads[i].last : m->threads[i].total) > 0)
			m->order[n++] = (uint32_t)i;
	if (n)
		qsort_r(m->order, n, sizeof(*m->order), by_thread_value, &c);
	for (i = 0; i < n && i < max; i++) {
		k = m->order[i];
		t = &m->threads[k];
		out[i] = (struct top_thread_row){
			.tid = t->tid,
			.name = t->name,
			.value = scope == TOP_LAST ? t->last : t->total,
			.hot = m->hot[k] != UINT32_MAX ? m->ents[m->hot[k]].name : NULL,
			.hot_value = m->hot_value[k],
		};
	}
	return i;
}
