/* SPDX-License-Identifier: MIT */
/* Encoding a profile under construction as a perftools.profiles.Profile message. */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "profile/builder-impl.h"
#include "profile/profile.h"
#include "profile/profile.pb-c.h"

/*
 * The message tree for one pack: the message structs point into these
 * arrays, and into the builder's own arrays where the layouts coincide
 * (string table, sample location ids and values, comments).
 */
struct msg_parts {
	Perftools__Profiles__ValueType *types, **type_ptrs, period_type;
	Perftools__Profiles__Mapping *mappings, **mapping_ptrs;
	Perftools__Profiles__Function *functions, **function_ptrs;
	Perftools__Profiles__Line *lines, **line_ptrs;
	Perftools__Profiles__Location *locations, **location_ptrs;
	Perftools__Profiles__Label *labels, **label_ptrs;
	Perftools__Profiles__Sample *samples, **sample_ptrs;
};

static void msg_parts_free(struct msg_parts *p)
{
	free(p->types);
	free(p->type_ptrs);
	free(p->mappings);
	free(p->mapping_ptrs);
	free(p->functions);
	free(p->function_ptrs);
	free(p->lines);
	free(p->line_ptrs);
	free(p->locations);
	free(p->location_ptrs);
	free(p->labels);
	free(p->label_ptrs);
	free(p->samples);
	free(p->sample_ptrs);
}

/* Allocates n structs of size bytes and n pointers to them (none when n == 0). */
static int alloc_parts(void *structsp, void *ptrsp, size_t n, size_t size)
{
	unsigned char *structs;
	void **ptrs;
	size_t i;

	if (!n)
		return 0;
	structs = calloc(n, size);
	ptrs = calloc(n, sizeof(*ptrs));
	if (!structs || !ptrs) {
		free(structs);
		free(ptrs);
		return -ENOMEM;
	}
	for (i = 0; i < n; i++)
		ptrs[i] = structs + i * size;
	memcpy(structsp, &structs, sizeof(structs));
	memcpy(ptrsp, &ptrs, sizeof(ptrs));
	return 0;
}

static int alloc_all(struct msg_parts *p, const struct prof_builder *b)
{
	int err;

	err = alloc_parts(&p->types, &p->type_ptrs, b->n_types, sizeof(*p->types));
	if (!err)
		err = alloc_parts(&p->mappings, &p->mapping_ptrs, b->n_mappings,
				  sizeof(*p->mappings));
	if (!err)
		err = alloc_parts(&p->functions, &p->function_ptrs, b->n_functions,
				  sizeof(*p->functions));
	if (!err)
		err = alloc_parts(&p->lines, &p->line_ptrs, b->n_lines, sizeof(*p->lines));
	if (!err)
		err = alloc_parts(&p->locations, &p->location_ptrs, b->n_locations,
				  sizeof(*p->locations));
	if (!err)
		err = alloc_parts(&p->labels, &p->label_ptrs, b->n_labels, sizeof(*p->labels));
	if (!err)
		err = alloc_parts(&p->samples, &p->sample_ptrs, b->n_samples, sizeof(*p->samples));
	return err;
}

static void fill_types(struct msg_parts *p, const struct prof_builder *b)
{
	size_t i;

	for (i = 0; i < b->n_types; i++) {
		perftools__profiles__value_type__init(&p->types[i]);
		p->types[i].type = b->types[i].type;
		p->types[i].unit = b->types[i].unit;
	}
	perftools__profiles__value_type__init(&p->period_type);
	p->period_type.type = b->period_type.type;
	p->period_type.unit = b->period_type.unit;
}

static void fill_mappings(struct msg_parts *p, const struct prof_builder *b)
{
	size_t i;

	for (i = 0; i < b->n_mappings; i++) {
		const struct bld_mapping *m = &b->mappings[i];
		Perftools__Profiles__Mapping *pm = &p->mappings[i];

		perftools__profiles__mapping__init(pm);
		pm->id = i + 1;
		pm->memory_start = m->start;
		pm->memory_limit = m->limit;
		pm->file_offset = m->offset;
		pm->filename = m->filename;
		pm->build_id = m->build_id;
		pm->has_functions = m->has_functions;
		pm->has_filenames = m->has_filenames;
		pm->has_line_numbers = m->has_line_numbers;
		pm->has_inline_frames = m->has_inline_frames;
	}
}

static void fill_functions(struct msg_parts *p, const struct prof_builder *b)
{
	size_t i;

	for (i = 0; i < b->n_functions; i++) {
		const struct bld_function *f = &b->functions[i];
		Perftools__Profiles__Function *pf = &p->functions[i];

		perftools__profiles__function__init(pf);
		pf->id = i + 1;
		pf->name = f->name;
		pf->system_name = f->system_name;
		pf->filename = f->filename;
		pf->start_line = f->start_line;
	}
}

static void fill_locations(struct msg_parts *p, const struct prof_builder *b)
{
	size_t i;

	for (i = 0; i < b->n_lines; i++) {
		perftools__profiles__line__init(&p->lines[i]);
		p->lines[i].function_id = b->lines[i].function_id;
		p->lines[i].line = b->lines[i].line;
	}
	for (i = 0; i < b->n_locations; i++) {
		const struct bld_location *l = &b->locations[i];
		Perftools__Profiles__Location *pl = &p->locations[i];

		perftools__profiles__location__init(pl);
		pl->id = i + 1;
		pl->mapping_id = l->mapping_id;
		pl->address = l->address;
		pl->n_line = l->n_lines;
		pl->line = l->n_lines ? &p->line_ptrs[l->line_off] : NULL;
	}
}

/* Sample location ids and values point into the builder: same layout. */
static void fill_samples(struct msg_parts *p, const struct prof_builder *b)
{
	size_t i;

	for (i = 0; i < b->n_labels; i++) {
		perftools__profiles__label__init(&p->labels[i]);
		p->labels[i].key = b->labels[i].key;
		p->labels[i].str = b->labels[i].str;
		p->labels[i].num = b->labels[i].num;
		p->labels[i].num_unit = b->labels[i].num_unit;
	}
	for (i = 0; i < b->n_samples; i++) {
		const struct bld_sample *s = &b->samples[i];
		Perftools__Profiles__Sample *ps = &p->samples[i];

		perftools__profiles__sample__init(ps);
		ps->n_location_id = s->n_locs;
		ps->location_id = s->n_locs ? &b->sample_locs[s->loc_off] : NULL;
		ps->n_value = b->n_types;
		ps->value = b->n_types ? &b->values[i * b->n_types] : NULL;
		ps->n_label = s->n_labels;
		ps->label = s->n_labels ? &p->label_ptrs[s->label_off] : NULL;
	}
}

int prof_builder_pack(struct prof_builder *b, struct ProtobufCBuffer *out)
{
	Perftools__Profiles__Profile msg = PERFTOOLS__PROFILES__PROFILE__INIT;
	struct msg_parts p = { 0 };
	int err;

	err = alloc_all(&p, b);
	if (err)
		goto free_parts;
	fill_types(&p, b);
	fill_mappings(&p, b);
	fill_functions(&p, b);
	fill_locations(&p, b);
	fill_samples(&p, b);

	msg.n_sample_type = b->n_types;
	msg.sample_type = p.type_ptrs;
	msg.n_sample = b->n_samples;
	msg.sample = p.sample_ptrs;
	msg.n_mapping = b->n_mappings;
	msg.mapping = p.mapping_ptrs;
	msg.n_location = b->n_locations;
	msg.location = p.location_ptrs;
	msg.n_function = b->n_functions;
	msg.function = p.function_ptrs;
	msg.n_string_table = b->strtab.n;
	msg.string_table = b->strtab.strs;
	msg.time_nanos = b->time_nanos;
	msg.duration_nanos = b->duration_nanos;
	msg.period_type = &p.period_type;
	msg.period = b->period;
	msg.n_comment = b->n_comments;
	msg.comment = b->comments;
	perftools__profiles__profile__pack_to_buffer(&msg, out);

free_parts:
	msg_parts_free(&p);
	return err;
}
