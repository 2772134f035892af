/* SPDX-License-Identifier: MIT */
/* The pprof builder's model: functions, mappings, locations, merged samples. */

#include "config.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lib/arith.h"
#include "lib/grow.h"
#include "lib/hash.h"
#include "lib/htab.h"
#include "profile/builder-impl.h"
#include "profile/profile.h"

/* A sample being added, before it is known to be new. */
struct sample_key {
	const uint64_t *locs;
	size_t n_locs;
	const struct bld_label *labels;
	size_t n_labels;
};

/* ---- strings --------------------------------------------------------- */

/* Interns s (NULL is ""), storing its string_table index in *index. */
static int intern(struct prof_builder *b, const char *s, int64_t *index)
{
	return prof_strtab_intern(&b->strtab, s, index);
}

/* ---- builder --------------------------------------------------------- */

int prof_builder_create(struct prof_builder **out,
			const struct prof_value_type *sample_types, size_t n_types,
			struct prof_value_type period_type, int64_t period)
{
	struct prof_builder *b;
	size_t i;
	int err;

	*out = NULL;
	if (n_types && !sample_types)
		return -EINVAL;
	b = calloc(1, sizeof(*b));
	if (!b)
		return -ENOMEM;

	err = prof_strtab_init(&b->strtab);
	if (err)
		goto destroy_builder;

	if (n_types) {
		b->types = calloc(n_types, sizeof(*b->types));
		if (!b->types) {
			err = -ENOMEM;
			goto destroy_builder;
		}
	}
	b->n_types = n_types;
	for (i = 0; i < n_types; i++) {
		err = intern(b, sample_types[i].type, &b->types[i].type);
		if (!err)
			err = intern(b, sample_types[i].unit, &b->types[i].unit);
		if (err)
			goto destroy_builder;
	}
	err = intern(b, period_type.type, &b->period_type.type);
	if (!err)
		err = intern(b, period_type.unit, &b->period_type.unit);
	if (err)
		goto destroy_builder;
	b->period = period;

	*out = b;
	return 0;

destroy_builder:
	prof_builder_destroy(b);
	return err;
}

void prof_builder_destroy(struct prof_builder *b)
{
	if (!b)
		return;
	prof_strtab_free(&b->strtab);
	free(b->types);
	free(b->comments);
	free(b->mappings);
	free(b->functions);
	cprof_htab_free(&b->fn_tab);
	free(b->locations);
	free(b->lines);
	free(b->samples);
	cprof_htab_free(&b->sample_tab);
	free(b->sample_locs);
	free(b->labels);
	free(b->values);
	free(b->scratch);
	free(b);
}

void prof_set_time(struct prof_builder *b, int64_t time_nanos, int64_t duration_nanos)
{
	b->time_nanos = time_nanos;
	b->duration_nanos = duration_nanos;
}

int prof_add_comment(struct prof_builder *b, const char *text)
{
	int64_t index;
	int err;

	if (!text)
		return -EINVAL;
	err = cprof_grow(&b->comments, &b->cap_comments, b->n_comments + 1, sizeof(*b->comments), 16);
	if (err)
		return err;
	err = intern(b, text, &index);
	if (err)
		return err;
	b->comments[b->n_comments++] = index;
	return 0;
}

int prof_add_mapping(struct prof_builder *b, const struct prof_mapping *m, uint64_t *id)
{
	struct bld_mapping *dst;
	int64_t filename, build_id;
	int err;

	if (!m)
		return -EINVAL;
	err = cprof_grow(&b->mappings, &b->cap_mappings, b->n_mappings + 1, sizeof(*b->mappings), 16);
	if (err)
		return err;
	err = intern(b, m->filename, &filename);
	if (!err)
		err = intern(b, m->build_id, &build_id);
	if (err)
		return err;

	dst = &b->mappings[b->n_mappings++];
	dst->start = m->start;
	dst->limit = m->limit;
	dst->offset = m->offset;
	dst->filename = filename;
	dst->build_id = build_id;
	dst->has_functions = m->has_functions;
	dst->has_filenames = m->has_filenames;
	dst->has_line_numbers = m->has_line_numbers;
	dst->has_inline_frames = m->has_inline_frames;
	/* ids are 1..N in array order: consumers such as Parca reject gaps */
	if (id)
		*id = b->n_mappings;
	return 0;
}

/* ---- functions and locations ----------------------------------------- */

/* Functions are indexed by (name, system_name, filename); start lines chain. */
static uint32_t function_hash(const struct bld_function *f)
{
	uint64_t h = 0;

	h = cprof_hash_mix(h, (uint64_t)f->name);
	h = cprof_hash_mix(h, (uint64_t)f->system_name);
	h = cprof_hash_mix(h, (uint64_t)f->filename);
	return cprof_hash_finish(h);
}

static bool function_eq(const struct prof_builder *b, uint32_t index, const struct bld_function *k)
{
	const struct bld_function *f = &b->functions[index];

	return f->name == k->name && f->system_name == k->system_name &&
	       f->filename == k->filename;
}

#define HTAB_NAME fn_index
#define HTAB_CTX struct prof_builder
#define HTAB_KEY struct bld_function
#define HTAB_HASH(b, k) function_hash(k)
#define HTAB_COMPARE function_eq
#include "lib/htab-type.h"

/*
 * The id of the function key among those of its (name, system_name,
 * filename), starting at id first; 0 when it needs a record of its own
 * (*last: the chain's last id).  One function is one record whatever start
 * line it is met with, 0 ("unknown", as the symbolizer says for some of a
 * function's addresses) matching any and taking the first known one.  Only
 * two different known start lines make two records, as pprof's own merge
 * keeps them apart: two definitions of one name in one file.
 */
static uint64_t function_of(struct prof_builder *b, uint64_t first,
			    const struct bld_function *key, uint64_t *last)
{
	uint64_t id;

	for (id = first; id; id = b->functions[id - 1].next) {
		struct bld_function *f = &b->functions[id - 1];

		if (!key->start_line || f->start_line == key->start_line)
			return id;
		if (!f->start_line) {
			f->start_line = key->start_line;
			return id;
		}
		*last = id;
	}
	return 0;
}

/* Interns the function of line l, storing its id (1..N) in *id. */
static int intern_function(struct prof_builder *b, const struct prof_line *l, uint64_t *id)
{
	struct bld_function key = { .start_line = l->start_line };
	uint64_t last = 0;
	uint32_t hash, ref;
	int err;

	err = intern(b, l->function, &key.name);
	if (!err)
		err = intern(b, l->system_name ? l->system_name : l->function, &key.system_name);
	if (!err)
		err = intern(b, l->filename, &key.filename);
	if (err)
		return err;
	ref = fn_index_find(&b->fn_tab, b, &key, &hash);
	*id = function_of(b, ref, &key, &last);
	if (*id)
		return 0;
	err = cprof_grow(&b->functions, &b->cap_functions, b->n_functions + 1,
			 sizeof(*b->functions), 16);
	if (!err && !ref)
		err = cprof_htab_reserve(&b->fn_tab, 1);
	if (err)
		return err;
	b->functions[b->n_functions] = key;
	if (ref)
		b->functions[last - 1].next = b->n_functions + 1;
	else
		cprof_htab_add(&b->fn_tab, hash, b->n_functions);
	*id = ++b->n_functions;
	return 0;
}

int prof_add_location(struct prof_builder *b, uint64_t mapping_id, uint64_t address,
		      const struct prof_line *lines, size_t n_lines, uint64_t *id)
{
	struct bld_location *loc;
	size_t i, n_kept = 0;
	int err;

	if (n_lines && !lines)
		return -EINVAL;
	if (mapping_id > b->n_mappings)
		return -EINVAL;
	for (i = 0; i < n_lines; i++)
		if (lines[i].function)
			n_kept++;
	/* pprof cannot place such a location anywhere; callers drop the frame */
	if (!address && !n_kept)
		return -EINVAL;
	if (b->n_locations >= UINT32_MAX)
		return -ENOMEM;

	err = cprof_grow(&b->locations, &b->cap_locations, b->n_locations + 1, sizeof(*b->locations), 16);
	if (!err)
		err = cprof_grow(&b->lines, &b->cap_lines, b->n_lines + n_kept, sizeof(*b->lines), 16);
	if (err)
		return err;

	/*
	 * Functions interned here stay even if a later line fails: they are
	 * harmless unreferenced entries, and the location is only committed
	 * once every line is known.
	 */
	loc = &b->locations[b->n_locations];
	loc->mapping_id = mapping_id;
	loc->address = address;
	loc->line_off = b->n_lines;
	loc->n_lines = 0;
	for (i = 0; i < n_lines; i++) {
		struct bld_line *dst = &b->lines[loc->line_off + loc->n_lines];

		if (!lines[i].function)
			continue;
		err = intern_function(b, &lines[i], &dst->function_id);
		if (err)
			return err;
		dst->line = lines[i].line;
		loc->n_lines++;
	}
	b->n_lines += loc->n_lines;
	b->n_locations++;
	if (id)
		*id = b->n_locations;
	return 0;
}

/* ---- samples --------------------------------------------------------- */

static int label_cmp(const struct bld_label *a, const struct bld_label *c)
{
	if (a->key != c->key)
		return a->key < c->key ? -1 : 1;
	if (a->str != c->str)
		return a->str < c->str ? -1 : 1;
	if (a->num != c->num)
		return a->num < c->num ? -1 : 1;
	if (a->num_unit != c->num_unit)
		return a->num_unit < c->num_unit ? -1 : 1;
	return 0;
}

static bool sample_eq(const struct prof_builder *b, uint32_t index, const struct sample_key *k)
{
	const struct bld_sample *s = &b->samples[index];
	size_t i;

	if (s->n_locs != k->n_locs || s->n_labels != k->n_labels)
		return false;
	if (k->n_locs && memcmp(&b->sample_locs[s->loc_off], k->locs,
				k->n_locs * sizeof(*k->locs)))
		return false;
	for (i = 0; i < k->n_labels; i++)
		if (label_cmp(&b->labels[s->label_off + i], &k->labels[i]))
			return false;
	return true;
}

static uint32_t sample_hash(const struct sample_key *k)
{
	uint64_t h = cprof_hash_mix(0, k->n_locs);
	size_t i;

	for (i = 0; i < k->n_locs; i++)
		h = cprof_hash_mix(h, k->locs[i]);
	h = cprof_hash_mix(h, k->n_labels);
	for (i = 0; i < k->n_labels; i++) {
		h = cprof_hash_mix(h, (uint64_t)k->labels[i].key);
		h = cprof_hash_mix(h, (uint64_t)k->labels[i].str);
		h = cprof_hash_mix(h, (uint64_t)k->labels[i].num);
		h = cprof_hash_mix(h, (uint64_t)k->labels[i].num_unit);
	}
	return cprof_hash_finish(h);
}

#define HTAB_NAME sample_index
#define HTAB_CTX struct prof_builder
#define HTAB_KEY struct sample_key
#define HTAB_HASH(b, k) sample_hash(k)
#define HTAB_COMPARE sample_eq
#include "lib/htab-type.h"

/*
 * Interns labels into b->scratch in a canonical order, so that the same
 * label set given in another order still merges.
 */
static int scratch_labels(struct prof_builder *b, const struct prof_label *labels, size_t n)
{
	size_t i, j;
	int err;

	err = cprof_grow(&b->scratch, &b->cap_scratch, n, sizeof(*b->scratch), 16);
	if (err)
		return err;
	for (i = 0; i < n; i++) {
		struct bld_label l = { 0 };

		err = intern(b, labels[i].key, &l.key);
		if (err)
			return err;
		if (labels[i].str) {
			err = intern(b, labels[i].str, &l.str);
		} else {
			l.num = labels[i].num;
			err = intern(b, labels[i].num_unit, &l.num_unit);
		}
		if (err)
			return err;
		/* insertion sort: label sets are a handful of entries */
		for (j = i; j > 0 && label_cmp(&b->scratch[j - 1], &l) > 0; j--)
			b->scratch[j] = b->scratch[j - 1];
		b->scratch[j] = l;
	}
	return 0;
}

static int check_sample(const struct prof_builder *b, const uint64_t *location_ids,
			size_t n_locations, const int64_t *values, const struct prof_label *labels,
			size_t n_labels)
{
	size_t i;

	if ((n_locations && !location_ids) || (b->n_types && !values) ||
	    (n_labels && !labels))
		return -EINVAL;
	for (i = 0; i < n_locations; i++)
		if (!location_ids[i] || location_ids[i] > b->n_locations)
			return -EINVAL;
	for (i = 0; i < n_labels; i++)
		if (!labels[i].key || !*labels[i].key)
			return -EINVAL;
	return 0;
}

/* Appends key (its labels in b->scratch) as a new sample with values. */
static int append_sample(struct prof_builder *b, const struct sample_key *key, uint32_t hash,
			 const int64_t *values)
{
	struct bld_sample *s;
	int err;

	if (b->n_samples >= UINT32_MAX - 1)
		return -ENOMEM;
	if (b->n_types && b->n_samples + 1 > SIZE_MAX / b->n_types)
		return -ENOMEM;
	/* reserve everything first so that a failure leaves no partial sample */
	err = cprof_grow(&b->samples, &b->cap_samples, b->n_samples + 1, sizeof(*b->samples), 16);
	if (!err)
		err = cprof_grow(&b->sample_locs, &b->cap_sample_locs,
				 b->n_sample_locs + key->n_locs, sizeof(*b->sample_locs), 16);
	if (!err)
		err = cprof_grow(&b->labels, &b->cap_labels, b->n_labels + key->n_labels,
				 sizeof(*b->labels), 16);
	if (!err && b->n_types)
		err = cprof_grow(&b->values, &b->cap_values, (b->n_samples + 1) * b->n_types,
				 sizeof(*b->values), 16);
	if (!err)
		err = cprof_htab_reserve(&b->sample_tab, 1);
	if (err)
		return err;

	s = &b->samples[b->n_samples];
	s->loc_off = b->n_sample_locs;
	s->n_locs = key->n_locs;
	s->label_off = b->n_labels;
	s->n_labels = key->n_labels;
	if (key->n_locs)
		memcpy(&b->sample_locs[s->loc_off], key->locs, key->n_locs * sizeof(*key->locs));
	if (key->n_labels)
		memcpy(&b->labels[s->label_off], key->labels, key->n_labels * sizeof(*key->labels));
	if (b->n_types)
		memcpy(&b->values[b->n_samples * b->n_types], values, b->n_types * sizeof(*values));
	b->n_sample_locs += key->n_locs;
	b->n_labels += key->n_labels;
	cprof_htab_add(&b->sample_tab, hash, b->n_samples);
	b->n_samples++;
	return 0;
}

int prof_add_sample(struct prof_builder *b, const uint64_t *location_ids, size_t n_locations,
		    const int64_t *values, const struct prof_label *labels, size_t n_labels)
{
	struct sample_key key;
	uint32_t hash, ref;
	int64_t *dst;
	size_t i;
	int err;

	err = check_sample(b, location_ids, n_locations, values, labels, n_labels);
	if (!err)
		err = scratch_labels(b, labels, n_labels);
	if (err)
		return err;
	key.locs = location_ids;
	key.n_locs = n_locations;
	key.labels = b->scratch;
	key.n_labels = n_labels;
	ref = sample_index_find(&b->sample_tab, b, &key, &hash);
	if (!ref)
		return append_sample(b, &key, hash, values);
	dst = &b->values[(size_t)(ref - 1) * b->n_types];
	for (i = 0; i < b->n_types; i++)
		dst[i] = cprof_add_wrap(dst[i], values[i]);
	return 0;
}

size_t prof_sample_count(const struct prof_builder *b)
{
	return b->n_samples;
}

size_t prof_location_count(const struct prof_builder *b)
{
	return b->n_locations;
}
