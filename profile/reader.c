/* SPDX-License-Identifier: MIT */
/* Reading a pprof profile back: protobuf-c decode, ids resolved to pointers. */
#include "config.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <protobuf-c/protobuf-c.h>

#include "profile/profile.pb-c.h"
#include "profile/reader-impl.h"
#include "profile/reader.h"

/* What the reader accepts beside RD_MAX_PLAIN and RD_MAX_FILE
 * (reader-impl.h). */
#define RD_MAX_UNPACKED ((size_t)1 << 30)	/* memory of the decoded message */

/* protobuf-c's allocator with a budget: it refuses what would pass it. */
struct rd_alloc {
	ProtobufCAllocator base;	/* first: allocator_data points back here */
	size_t used;
	bool over;
};

static void *budget_alloc(void *data, size_t size)
{
	struct rd_alloc *a = data;

	if (size > RD_MAX_UNPACKED - a->used) {
		a->over = true;
		return NULL;
	}
	a->used += size;
	return malloc(size);
}

static void budget_free(void *data, void *pointer)
{
	(void)data;
	free(pointer);
}

/*
 * pprof allows any non-zero ids; writers (Go, cprof) use 1..N in array
 * order, so that case is a plain subscript and only others pay for a
 * sorted table and binary search.
 */
struct id_pair {
	uint64_t id;
	size_t index;
};

struct id_index {
	size_t n;
	struct id_pair *sorted;	/* NULL when ids are 1..n in order */
};

/* Line with function_id 0: the API promises a function, so an empty one. */
static const struct prof_rd_function no_function = { "", "", "", 0 };

static int cmp_pair(const void *a, const void *b)
{
	const struct id_pair *x = a, *y = b;

	return x->id < y->id ? -1 : x->id > y->id;
}

/* ids[i] of n objects; -EBADMSG on a zero or repeated id. */
static int index_build(struct id_index *ix, const uint64_t *ids, size_t n)
{
	size_t i;

	ix->n = n;
	ix->sorted = NULL;
	for (i = 0; i < n; i++)
		if (ids[i] != i + 1)
			break;
	if (i == n)
		return 0;
	ix->sorted = calloc(n, sizeof(*ix->sorted));
	if (!ix->sorted)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		if (ids[i] == 0)
			return -EBADMSG;
		ix->sorted[i].id = ids[i];
		ix->sorted[i].index = i;
	}
	qsort(ix->sorted, n, sizeof(*ix->sorted), cmp_pair);
	for (i = 1; i < n; i++)
		if (ix->sorted[i].id == ix->sorted[i - 1].id)
			return -EBADMSG;
	return 0;
}

/* Index of id, or -1 when no object has it. */
static ssize_t index_find(const struct id_index *ix, uint64_t id)
{
	size_t lo = 0, hi = ix->n;

	if (!ix->sorted)
		return id >= 1 && id <= ix->n ? (ssize_t)(id - 1) : -1;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (ix->sorted[mid].id == id)
			return (ssize_t)ix->sorted[mid].index;
		if (ix->sorted[mid].id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return -1;
}

/* String i of the table, or NULL when the index points outside it. */
static const char *str_at(const Perftools__Profiles__Profile *m, int64_t i)
{
	if (i < 0 || (uint64_t)i >= m->n_string_table)
		return NULL;
	return m->string_table[i];
}

/* Sets *why and returns -EBADMSG. */
static int bad(const char **why, const char *reason)
{
	*why = reason;
	return -EBADMSG;
}

/* calloc of n (at least one, so that NULL means only out of memory). */
static void *alloc_n(size_t n, size_t size)
{
	return calloc(n ? n : 1, size);
}

/* Sample types, the default one, the period, times and comments. */
static int resolve_header(struct prof_rd_owner *o, const char **why)
{
	const Perftools__Profiles__Profile *m = o->msg;
	struct prof_rd_profile *p = &o->pub;
	const char *s;
	size_t i;

	for (i = 0; i < m->n_sample_type; i++) {
		o->types[i].type = str_at(m, m->sample_type[i]->type);
		o->types[i].unit = str_at(m, m->sample_type[i]->unit);
		if (!o->types[i].type || !o->types[i].unit)
			return bad(why, "a sample type's string index is out of range");
	}
	p->sample_types = o->types;
	p->n_sample_types = m->n_sample_type;
	/* As pprof: the type named by default_sample_type, else the last. */
	p->default_type = m->n_sample_type - 1;
	if (m->default_sample_type) {
		s = str_at(m, m->default_sample_type);
		if (!s)
			return bad(why, "default_sample_type is out of the string table");
		for (i = 0; i < m->n_sample_type; i++)
			if (strcmp(o->types[i].type, s) == 0)
				p->default_type = i;
	}
	p->period_type.type = "";
	p->period_type.unit = "";
	if (m->period_type) {
		p->period_type.type = str_at(m, m->period_type->type);
		p->period_type.unit = str_at(m, m->period_type->unit);
		if (!p->period_type.type || !p->period_type.unit)
			return bad(why, "the period type's string index is out of range");
	}
	p->period = m->period;
	p->time_nanos = m->time_nanos;
	p->duration_nanos = m->duration_nanos;
	for (i = 0; i < m->n_comment; i++) {
		o->comments[i] = str_at(m, m->comment[i]);
		if (!o->comments[i])
			return bad(why, "a comment's string index is out of range");
	}
	p->comments = o->comments;
	p->n_comments = m->n_comment;
	return 0;
}

/* Builds ix over ids; what names the objects in the error. */
static int index_ids(struct id_index *ix, const uint64_t *ids, size_t n, const char **why,
		     const char *what)
{
	int ret = index_build(ix, ids, n);

	if (ret == -EBADMSG)
		*why = what;
	return ret;
}

static int resolve_functions(struct prof_rd_owner *o, uint64_t *ids, struct id_index *fx,
			     const char **why)
{
	const Perftools__Profiles__Profile *m = o->msg;
	size_t i;

	for (i = 0; i < m->n_function; i++) {
		const Perftools__Profiles__Function *f = m->function[i];
		struct prof_rd_function *rf = &o->functions[i];

		ids[i] = f->id;
		rf->name = str_at(m, f->name);
		rf->system_name = str_at(m, f->system_name);
		rf->filename = str_at(m, f->filename);
		rf->start_line = f->start_line;
		if (!rf->name || !rf->system_name || !rf->filename)
			return bad(why, "a function's string index is out of range");
	}
	return index_ids(fx, ids, m->n_function, why, "function ids are zero or repeated");
}

static int resolve_mappings(struct prof_rd_owner *o, uint64_t *ids, struct id_index *mx,
			    const char **why)
{
	const Perftools__Profiles__Profile *m = o->msg;
	size_t i;

	for (i = 0; i < m->n_mapping; i++) {
		const Perftools__Profiles__Mapping *mp = m->mapping[i];
		struct prof_rd_mapping *rm = &o->mappings[i];

		ids[i] = mp->id;
		rm->start = mp->memory_start;
		rm->limit = mp->memory_limit;
		rm->offset = mp->file_offset;
		rm->filename = str_at(m, mp->filename);
		rm->build_id = str_at(m, mp->build_id);
		if (!rm->filename || !rm->build_id)
			return bad(why, "a mapping's string index is out of range");
	}
	return index_ids(mx, ids, m->n_mapping, why, "mapping ids are zero or repeated");
}

/* The lines of location l into rl, from o->lines[*at] on. */
static int resolve_lines(struct prof_rd_owner *o, const Perftools__Profiles__Location *l,
			 struct prof_rd_location *rl, const struct id_index *fx, size_t *at,
			 const char **why)
{
	size_t j;
	ssize_t k;

	rl->lines = &o->lines[*at];
	rl->n_lines = l->n_line;
	for (j = 0; j < l->n_line; j++, (*at)++) {
		o->lines[*at].line = l->line[j]->line;
		o->lines[*at].function = &no_function;
		if (!l->line[j]->function_id)
			continue;
		k = index_find(fx, l->line[j]->function_id);
		if (k < 0)
			return bad(why, "a line's function id points nowhere");
		o->lines[*at].function = &o->functions[k];
	}
	return 0;
}

static int resolve_locations(struct prof_rd_owner *o, uint64_t *ids, const struct id_index *fx,
			     const struct id_index *mx, struct id_index *lx, const char **why)
{
	const Perftools__Profiles__Profile *m = o->msg;
	size_t i, n_lines = 0, at = 0;
	ssize_t k;
	int ret;

	for (i = 0; i < m->n_location; i++) {
		ids[i] = m->location[i]->id;
		n_lines += m->location[i]->n_line;
	}
	ret = index_ids(lx, ids, m->n_location, why, "location ids are zero or repeated");
	if (ret < 0)
		return ret;
	o->lines = alloc_n(n_lines, sizeof(*o->lines));
	if (!o->lines)
		return -ENOMEM;
	for (i = 0; i < m->n_location; i++) {
		const Perftools__Profiles__Location *l = m->location[i];
		struct prof_rd_location *rl = &o->locations[i];

		rl->address = l->address;
		rl->mapping = NULL;
		if (l->mapping_id) {
			k = index_find(mx, l->mapping_id);
			if (k < 0)
				return bad(why, "a location's mapping id points nowhere");
			rl->mapping = &o->mappings[k];
		}
		ret = resolve_lines(o, l, rl, fx, &at, why);
		if (ret < 0)
			return ret;
	}
	return 0;
}

/* The labels of sm into rs, from o->labels[*at] on. */
static int resolve_labels(struct prof_rd_owner *o, const Perftools__Profiles__Sample *sm,
			  struct prof_rd_sample *rs, size_t *at, const char **why)
{
	const Perftools__Profiles__Profile *m = o->msg;
	size_t j;

	rs->labels = &o->labels[*at];
	rs->n_labels = sm->n_label;
	for (j = 0; j < sm->n_label; j++, (*at)++) {
		const Perftools__Profiles__Label *lb = sm->label[j];
		struct prof_rd_label *rb = &o->labels[*at];

		rb->key = str_at(m, lb->key);
		rb->str = lb->str ? str_at(m, lb->str) : NULL;
		rb->num = lb->num;
		rb->num_unit = lb->num_unit ? str_at(m, lb->num_unit) : NULL;
		if (!rb->key || (lb->str && !rb->str) || (lb->num_unit && !rb->num_unit))
			return bad(why, "a label's string index is out of range");
	}
	return 0;
}

static int resolve_samples(struct prof_rd_owner *o, const struct id_index *lx, const char **why)
{
	const Perftools__Profiles__Profile *m = o->msg;
	size_t i, j, n_locs = 0, n_labels = 0, locs_at = 0, labels_at = 0;
	ssize_t k;
	int ret;

	for (i = 0; i < m->n_sample; i++) {
		n_locs += m->sample[i]->n_location_id;
		n_labels += m->sample[i]->n_label;
	}
	o->sample_locs = alloc_n(n_locs, sizeof(*o->sample_locs));
	o->labels = alloc_n(n_labels, sizeof(*o->labels));
	if (!o->sample_locs || !o->labels)
		return -ENOMEM;
	for (i = 0; i < m->n_sample; i++) {
		const Perftools__Profiles__Sample *sm = m->sample[i];
		struct prof_rd_sample *rs = &o->samples[i];

		if (sm->n_value != m->n_sample_type)
			return bad(why, "a sample's value count differs from the number of sample types");
		rs->values = sm->value;
		rs->locations = &o->sample_locs[locs_at];
		rs->n_locations = sm->n_location_id;
		for (j = 0; j < sm->n_location_id; j++) {
			k = index_find(lx, sm->location_id[j]);
			if (k < 0)
				return bad(why, "a sample's location id points nowhere");
			o->sample_locs[locs_at++] = &o->locations[k];
		}
		ret = resolve_labels(o, sm, rs, &labels_at, why);
		if (ret < 0)
			return ret;
	}
	o->pub.samples = o->samples;
	o->pub.n_samples = m->n_sample;
	return 0;
}

/* The arrays of o's public struct but lines, sample locations and labels. */
static int resolve_alloc(struct prof_rd_owner *o, uint64_t **ids)
{
	const Perftools__Profiles__Profile *m = o->msg;
	size_t n_ids = m->n_function;

	if (m->n_mapping > n_ids)
		n_ids = m->n_mapping;
	if (m->n_location > n_ids)
		n_ids = m->n_location;
	*ids = alloc_n(n_ids, sizeof(**ids));
	o->types = alloc_n(m->n_sample_type, sizeof(*o->types));
	o->functions = alloc_n(m->n_function, sizeof(*o->functions));
	o->mappings = alloc_n(m->n_mapping, sizeof(*o->mappings));
	o->locations = alloc_n(m->n_location, sizeof(*o->locations));
	o->samples = alloc_n(m->n_sample, sizeof(*o->samples));
	o->comments = alloc_n(m->n_comment, sizeof(*o->comments));
	if (!*ids || !o->types || !o->functions || !o->mappings || !o->locations ||
	    !o->samples || !o->comments)
		return -ENOMEM;
	return 0;
}

/* Fills the public struct from the decoded message o->msg, ids resolved. */
static int resolve(struct prof_rd_owner *o, const char **why)
{
	const Perftools__Profiles__Profile *m = o->msg;
	struct id_index fx = { 0, NULL }, mx = { 0, NULL }, lx = { 0, NULL };
	uint64_t *ids = NULL;
	int ret;

	if (m->n_string_table == 0 || m->string_table[0][0] != '\0')
		return bad(why, "the string table does not start with \"\"");
	if (m->n_sample_type == 0)
		return bad(why, "no sample types");
	ret = resolve_alloc(o, &ids);
	if (!ret)
		ret = resolve_header(o, why);
	if (!ret)
		ret = resolve_functions(o, ids, &fx, why);
	if (!ret)
		ret = resolve_mappings(o, ids, &mx, why);
	if (!ret)
		ret = resolve_locations(o, ids, &fx, &mx, &lx, why);
	if (!ret)
		ret = resolve_samples(o, &lx, why);
	free(fx.sorted);
	free(mx.sorted);
	free(lx.sorted);
	free(ids);
	return ret;
}

/* Decodes the protobuf message within the memory budget into o->msg. */
static int unpack(struct prof_rd_owner *o, const unsigned char *in, size_t len, const char **why)
{
	struct rd_alloc *a;

	if (len > RD_MAX_PLAIN) {
		*why = "it is more than 256 MiB of protobuf, the most cprof reads";
		return -EFBIG;
	}
	a = calloc(1, sizeof(*a));
	if (!a)
		return -ENOMEM;
	a->base.alloc = budget_alloc;
	a->base.free = budget_free;
	a->base.allocator_data = a;
	o->msg_alloc = &a->base;
	o->msg = perftools__profiles__profile__unpack(&a->base, len, in);
	if (o->msg)
		return 0;
	if (a->over) {
		*why = "its decoded message needs more than 1 GiB, the most cprof reads";
		return -EFBIG;
	}
	/* protobuf-c says nothing more: a failed malloc looks the same */
	return bad(why, "protobuf decoding failed");
}

static int rd_buffer(const void *data, size_t len, struct prof_rd_profile **out,
		     const char **why)
{
	const unsigned char *in = data;
	unsigned char *plain = NULL;
	struct prof_rd_owner *o = NULL;
	int ret = 0;

	if (len == 0)
		return bad(why, "empty file");
	if (len >= 2 && in[0] == 0x1f && in[1] == 0x8b) {
		size_t plain_len = 0;

		ret = prof_rd_gunzip(in, len, &plain, &plain_len, why);
		if (ret < 0)
			return ret;
		in = plain;
		len = plain_len;
	}
	o = calloc(1, sizeof(*o));
	if (!o) {
		ret = -ENOMEM;
		goto out;
	}
	ret = unpack(o, in, len, why);
	if (!ret)
		ret = resolve(o, why);
	if (ret < 0)
		goto out;
	*out = &o->pub;
	o = NULL;
out:
	prof_rd_free(o ? &o->pub : NULL);
	free(plain);
	return ret;
}

int prof_rd_buffer_why(const void *data, size_t len, struct prof_rd_profile **out,
		       const char **why)
{
	const char *ignored;

	*out = NULL;
	if (!why)
		why = &ignored;
	*why = NULL;
	return rd_buffer(data, len, out, why);
}

int prof_rd_buffer(const void *data, size_t len, struct prof_rd_profile **out)
{
	return prof_rd_buffer_why(data, len, out, NULL);
}

void prof_rd_free(struct prof_rd_profile *p)
{
	struct prof_rd_owner *o = (struct prof_rd_owner *)p;

	if (!o)
		return;
	if (o->msg)
		perftools__profiles__profile__free_unpacked(o->msg, o->msg_alloc);
	free(o->msg_alloc);
	free(o->types);
	free(o->functions);
	free(o->mappings);
	free(o->locations);
	free(o->lines);
	free(o->sample_locs);
	free(o->labels);
	free(o->samples);
	free(o->comments);
	free(o);
}

int prof_rd_find_type(const struct prof_rd_profile *p, const char *type)
{
	size_t i;

	for (i = 0; i < p->n_sample_types; i++)
		if (strcmp(p->sample_types[i].type, type) == 0)
			return (int)i;
	return -1;
}
