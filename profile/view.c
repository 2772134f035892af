/* SPDX-License-Identifier: MIT */
/*
 * A profile under construction seen through the reader's structs, without
 * encoding it: what flame graphs and reports of a live session read.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "profile/builder-impl.h"
#include "profile/profile.h"
#include "profile/reader-impl.h"

/* calloc of n (at least one, so that NULL means only out of memory). */
static void *alloc_n(size_t n, size_t size)
{
	return calloc(n ? n : 1, size);
}

static int view_alloc(struct prof_rd_owner *o, const struct prof_builder *b)
{
	o->types = alloc_n(b->n_types, sizeof(*o->types));
	o->functions = alloc_n(b->n_functions, sizeof(*o->functions));
	o->mappings = alloc_n(b->n_mappings, sizeof(*o->mappings));
	o->locations = alloc_n(b->n_locations, sizeof(*o->locations));
	o->lines = alloc_n(b->n_lines, sizeof(*o->lines));
	o->sample_locs = alloc_n(b->n_sample_locs, sizeof(*o->sample_locs));
	o->labels = alloc_n(b->n_labels, sizeof(*o->labels));
	o->samples = alloc_n(b->n_samples, sizeof(*o->samples));
	o->comments = alloc_n(b->n_comments, sizeof(*o->comments));
	if (!o->types || !o->functions || !o->mappings || !o->locations || !o->lines ||
	    !o->sample_locs || !o->labels || !o->samples || !o->comments)
		return -ENOMEM;
	return 0;
}

static const char *str(const struct prof_builder *b, int64_t i)
{
	return b->strtab.strs[i];
}

/* Value types, comments, functions and mappings: strings resolved. */
static void view_tables(struct prof_rd_owner *o, const struct prof_builder *b)
{
	size_t i;

	for (i = 0; i < b->n_types; i++)
		o->types[i] = (struct prof_rd_value_type){ str(b, b->types[i].type),
							   str(b, b->types[i].unit) };
	for (i = 0; i < b->n_comments; i++)
		o->comments[i] = str(b, b->comments[i]);
	for (i = 0; i < b->n_functions; i++) {
		const struct bld_function *f = &b->functions[i];

		o->functions[i] = (struct prof_rd_function){
			str(b, f->name), str(b, f->system_name), str(b, f->filename), f->start_line
		};
	}
	for (i = 0; i < b->n_mappings; i++) {
		const struct bld_mapping *m = &b->mappings[i];

		o->mappings[i] = (struct prof_rd_mapping){ m->start, m->limit, m->offset,
							   str(b, m->filename), str(b, m->build_id) };
	}
}

/* Locations and their lines: ids (1..N in array order) become pointers. */
static void view_locations(struct prof_rd_owner *o, const struct prof_builder *b)
{
	size_t i;

	for (i = 0; i < b->n_lines; i++) {
		o->lines[i].function = &o->functions[b->lines[i].function_id - 1];
		o->lines[i].line = b->lines[i].line;
	}
	for (i = 0; i < b->n_locations; i++) {
		const struct bld_location *l = &b->locations[i];

		o->locations[i].address = l->address;
		o->locations[i].mapping = l->mapping_id ? &o->mappings[l->mapping_id - 1] : NULL;
		o->locations[i].lines = &o->lines[l->line_off];
		o->locations[i].n_lines = l->n_lines;
	}
}

static void view_samples(struct prof_rd_owner *o, const struct prof_builder *b)
{
	size_t i;

	for (i = 0; i < b->n_sample_locs; i++)
		o->sample_locs[i] = &o->locations[b->sample_locs[i] - 1];
	for (i = 0; i < b->n_labels; i++) {
		const struct bld_label *l = &b->labels[i];

		/* as read back: a string label, or a number with maybe a unit */
		o->labels[i].key = str(b, l->key);
		o->labels[i].str = l->str ? str(b, l->str) : NULL;
		o->labels[i].num = l->num;
		o->labels[i].num_unit = l->num_unit ? str(b, l->num_unit) : NULL;
	}
	for (i = 0; i < b->n_samples; i++) {
		const struct bld_sample *s = &b->samples[i];

		o->samples[i].locations = &o->sample_locs[s->loc_off];
		o->samples[i].n_locations = s->n_locs;
		o->samples[i].values = &b->values[i * b->n_types];
		o->samples[i].labels = &o->labels[s->label_off];
		o->samples[i].n_labels = s->n_labels;
	}
}

int prof_builder_view(const struct prof_builder *b, struct prof_rd_profile **out)
{
	struct prof_rd_owner *o;
	struct prof_rd_profile *p;

	*out = NULL;
	if (!b->n_types)
		return -EINVAL;
	o = calloc(1, sizeof(*o));
	if (!o || view_alloc(o, b) < 0) {
		prof_rd_free(o ? &o->pub : NULL);
		return -ENOMEM;
	}
	view_tables(o, b);
	view_locations(o, b);
	view_samples(o, b);
	p = &o->pub;
	p->sample_types = o->types;
	p->n_sample_types = b->n_types;
	p->default_type = b->n_types - 1;	/* as pprof: the last one */
	p->period_type = (struct prof_rd_value_type){ str(b, b->period_type.type),
						      str(b, b->period_type.unit) };
	p->period = b->period;
	p->time_nanos = b->time_nanos;
	p->duration_nanos = b->duration_nanos;
	p->comments = o->comments;
	p->n_comments = b->n_comments;
	p->samples = o->samples;
	p->n_samples = b->n_samples;
	*out = p;
	return 0;
}
