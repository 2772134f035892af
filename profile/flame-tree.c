/* SPDX-License-Identifier: MIT */
/* The merged call tree behind every flame graph: built from a profile's samples, walked in name order. */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/arith.h"
#include "lib/grow.h"
#include "lib/hash.h"
#include "lib/htab.h"
#include "profile/flame-tree.h"
#include "profile/flame.h"

/* A child being looked up: (parent node, name index). */
struct child_key {
	uint32_t parent, name;
};

static bool child_eq(const struct flame *fl, uint32_t i, const struct child_key *k)
{
	return fl->nodes[i].parent == k->parent && fl->nodes[i].name == k->name;
}

#define HTAB_NAME node_index
#define HTAB_CTX struct flame
#define HTAB_KEY struct child_key
#define HTAB_HASH(fl, k) cprof_hash_finish(cprof_hash_mix((k)->parent, (k)->name))
#define HTAB_COMPARE child_eq
#include "lib/htab-type.h"

/* ';' separates frames in collapsed stacks and control characters break
 * lines (and XML): neither may appear in a name. */
static bool bad_name_char(unsigned char c)
{
	return c == ';' || c < 0x20 || c == 0x7f;
}

/* A malloc'ed copy of the len bytes at name with the bad characters made '_'. */
static char *clean_name(const char *name, size_t len)
{
	char *copy = malloc(len + 1);
	size_t k;

	if (!copy)
		return NULL;
	for (k = 0; k < len; k++)
		copy[k] = bad_name_char((unsigned char)name[k]) ? '_' : name[k];
	copy[len] = '\0';
	return copy;
}

/* The index of name (len bytes, sanitized on the way in), added if new. */
static int intern(struct flame *fl, const char *name, size_t len, uint32_t *out)
{
	char *copy = NULL;
	int64_t index;
	size_t k;
	int ret;

	for (k = 0; k < len && !copy; k++) {
		if (bad_name_char((unsigned char)name[k])) {
			copy = clean_name(name, len);
			if (!copy)
				return -ENOMEM;
		}
	}
	ret = prof_strtab_intern_bytes(&fl->names, copy ? copy : name, len, &index);
	free(copy);
	*out = (uint32_t)index;
	return ret;
}

/* The child of parent called name, added if new. */
static int child_of(struct flame *fl, uint32_t parent, uint32_t name, uint32_t *out)
{
	struct child_key key = { parent, name };
	struct flame_node *n;
	uint32_t hash, ref;

	ref = node_index_find(&fl->node_index, fl, &key, &hash);
	if (ref) {
		*out = ref - 1;
		return 0;
	}
	if (fl->n_nodes >= UINT32_MAX - 1 ||
	    cprof_grow(&fl->nodes, &fl->cap_nodes, fl->n_nodes + 1, sizeof(*fl->nodes), 1024) < 0 ||
	    cprof_htab_reserve(&fl->node_index, 1) < 0)
		return -ENOMEM;
	n = &fl->nodes[fl->n_nodes];
	memset(n, 0, sizeof(*n));
	n->name = name;
	n->parent = parent;
	n->depth = fl->nodes[parent].depth + 1;
	if (n->depth > fl->max_depth)
		fl->max_depth = n->depth;
	cprof_htab_add(&fl->node_index, hash, fl->n_nodes);
	*out = (uint32_t)fl->n_nodes++;
	return 0;
}

static int push_name(struct flame *fl, uint32_t *cur, const char *name, size_t len)
{
	uint32_t id;
	int ret;

	ret = intern(fl, name, len, &id);
	if (ret < 0)
		return ret;
	return child_of(fl, *cur, id, cur);
}

/* A location without lines: MODULE+0xOFFSET (the file offset, stable across
 * runs), or the bare address when no mapping says where it belongs. */
static int push_address(struct flame *fl, uint32_t *cur, const struct prof_rd_location *loc)
{
	const struct prof_rd_mapping *m = loc->mapping;
	const char *base;
	char buf[320];
	int n;

	if (m && m->filename && *m->filename && loc->address >= m->start) {
		base = strrchr(m->filename, '/');
		base = base ? base + 1 : m->filename;
		n = snprintf(buf, sizeof(buf), "%.256s+0x%" PRIx64, base,
			     loc->address - m->start + m->offset);
	} else {
		n = snprintf(buf, sizeof(buf), "0x%" PRIx64, loc->address);
	}
	return push_name(fl, cur, buf, (size_t)n);
}

/* A kernel function, marked as perf marks it ("read_zero [k]"). */
static int push_kernel(struct flame *fl, uint32_t *cur, const char *name)
{
	char buf[320];
	int n = snprintf(buf, sizeof(buf), "%.300s" PROF_RD_KERNEL_MARK, name);

	return push_name(fl, cur, buf, (size_t)n);
}

static const char *thread_name_of(const struct prof_rd_sample *s)
{
	size_t i;

	for (i = 0; i < s->n_labels; i++)
		if (s->labels[i].str && strcmp(s->labels[i].key, "thread_name") == 0)
			return s->labels[i].str;
	return NULL;
}

static int add_sample(struct flame *fl, const struct prof_rd_sample *s, int64_t v, unsigned flags)
{
	const struct prof_rd_location *loc;
	const struct prof_rd_function *fn;
	const char *name;
	uint32_t cur = 0;
	size_t i, j;
	int ret;

	if (flags & PROF_FLAME_THREADS) {
		name = thread_name_of(s);
		if (name && *name) {
			ret = push_name(fl, &cur, name, strlen(name));
			if (ret < 0)
				return ret;
		}
	}
	for (i = s->n_locations; i-- > 0;) {
		loc = s->locations[i];
		if (!loc->n_lines) {
			ret = push_address(fl, &cur, loc);
			if (ret < 0)
				return ret;
			continue;
		}
		/* lines are innermost first: the physical function is the last */
		for (j = loc->n_lines; j-- > 0;) {
			fn = loc->lines[j].function;
			name = fn->name && *fn->name ? fn->name :
			       fn->system_name && *fn->system_name ? fn->system_name : NULL;
			ret = !name ? push_address(fl, &cur, loc) :
			      prof_rd_location_kernel(loc) ? push_kernel(fl, &cur, name) :
							       push_name(fl, &cur, name, strlen(name));
			if (ret < 0)
				return ret;
		}
	}
	fl->nodes[cur].self = cprof_add_wrap(fl->nodes[cur].self, v);
	return 0;
}

struct sort_key {
	uint32_t parent;
	uint32_t node;
	const char *name;
};

static int cmp_key(const void *a, const void *b)
{
	const struct sort_key *x = a, *y = b;

	if (x->parent != y->parent)
		return x->parent < y->parent ? -1 : 1;
	return strcmp(x->name, y->name);
}

/* Totals and name-ordered child lists, once every sample is in. */
static int finish_tree(struct flame *fl)
{
	struct sort_key *keys;
	uint32_t i, n = (uint32_t)fl->n_nodes - 1;

	/* children always come after their parent in the array */
	for (i = 0; i < fl->n_nodes; i++)
		fl->nodes[i].total = fl->nodes[i].self;
	for (i = fl->n_nodes; i-- > 1;)
		fl->nodes[fl->nodes[i].parent].total =
			cprof_add_wrap(fl->nodes[fl->nodes[i].parent].total, fl->nodes[i].total);
	if (!n)
		return 0;
	keys = malloc(n * sizeof(*keys));
	if (!keys)
		return -ENOMEM;
	for (i = 0; i < n; i++)
		keys[i] = (struct sort_key){ fl->nodes[i + 1].parent, i + 1,
					     fl->names.strs[fl->nodes[i + 1].name] };
	qsort(keys, n, sizeof(*keys), cmp_key);
	/* pushing in reverse leaves each list in ascending order */
	for (i = n; i-- > 0;) {
		struct flame_node *c = &fl->nodes[keys[i].node];

		c->sibling = fl->nodes[c->parent].child;
		fl->nodes[c->parent].child = keys[i].node;
	}
	free(keys);
	return 0;
}

void prof_flame_tree_free(struct flame *fl)
{
	prof_strtab_free(&fl->names);
	free(fl->nodes);
	cprof_htab_free(&fl->node_index);
}

int prof_flame_tree_build(struct flame *fl, const struct prof_rd_profile *p, size_t type,
		       unsigned flags)
{
	size_t i;
	int64_t v;
	int ret;

	memset(fl, 0, sizeof(*fl));
	if (type >= p->n_sample_types)
		return -EINVAL;
	if (prof_strtab_init(&fl->names) < 0 ||
	    cprof_grow(&fl->nodes, &fl->cap_nodes, 1, sizeof(*fl->nodes), 1024) < 0) {
		prof_flame_tree_free(fl);
		return -ENOMEM;
	}
	memset(&fl->nodes[0], 0, sizeof(fl->nodes[0]));
	fl->n_nodes = 1;	/* the root */
	for (i = 0; i < p->n_samples; i++) {
		v = p->samples[i].values[type];
		if (!v)
			continue;
		ret = add_sample(fl, &p->samples[i], v, flags);
		if (ret < 0)
			goto fail;
	}
	ret = finish_tree(fl);
	if (ret < 0)
		goto fail;
	return 0;
fail:
	prof_flame_tree_free(fl);
	return ret;
}

uint32_t prof_flame_walk_next(const struct flame *fl, uint32_t n, bool descend)
{
	if (descend && fl->nodes[n].child)
		return fl->nodes[n].child;
	while (n && !fl->nodes[n].sibling)
		n = fl->nodes[n].parent;
	return n ? fl->nodes[n].sibling : FLAME_NONE;
}
