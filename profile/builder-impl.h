/* SPDX-License-Identifier: MIT */
/*
 * The layout of a profile under construction, shared by the files of the
 * builder only (builder.c: the model; pack.c: protobuf encoding; view.c:
 * the reader's structs over it).  Everything else goes through profile.h.
 * Strings are indices into strtab; ids are 1..N in array order.
 */
#ifndef CPROF_PROFILE_BUILDER_IMPL_H
#define CPROF_PROFILE_BUILDER_IMPL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/htab.h"
#include "profile/strtab.h"

struct bld_value_type {
	int64_t type, unit;	/* string indices */
};

struct bld_mapping {
	uint64_t start, limit, offset;
	int64_t filename, build_id;
	bool has_functions, has_filenames, has_line_numbers, has_inline_frames;
};

struct bld_function {
	int64_t name, system_name, filename, start_line;
	/* id of the next function of the same (name, system_name, filename)
	 * with another start line, 0 if none (builder.c, intern_function) */
	uint64_t next;
};

struct bld_line {
	uint64_t function_id;
	int64_t line;
};

struct bld_location {
	uint64_t mapping_id, address;
	size_t line_off;	/* into lines[] */
	size_t n_lines;
};

struct bld_label {
	int64_t key, str, num, num_unit;	/* string indices except num */
};

struct bld_sample {
	size_t loc_off;		/* into sample_locs[] */
	size_t n_locs;
	size_t label_off;	/* into labels[] */
	size_t n_labels;
};

struct prof_builder {
	struct prof_strtab strtab;

	struct bld_value_type *types;
	size_t n_types;
	struct bld_value_type period_type;
	int64_t period;
	int64_t time_nanos, duration_nanos;

	int64_t *comments;
	size_t n_comments, cap_comments;

	struct bld_mapping *mappings;
	size_t n_mappings, cap_mappings;

	struct bld_function *functions;
	size_t n_functions, cap_functions;
	struct cprof_htab fn_tab;

	struct bld_location *locations;
	size_t n_locations, cap_locations;
	struct bld_line *lines;
	size_t n_lines, cap_lines;

	struct bld_sample *samples;
	size_t n_samples, cap_samples;
	struct cprof_htab sample_tab;
	uint64_t *sample_locs;
	size_t n_sample_locs, cap_sample_locs;
	struct bld_label *labels;
	size_t n_labels, cap_labels;
	int64_t *values;		/* n_types per sample */
	size_t cap_values;

	/* Labels of the sample being added, interned and sorted. */
	struct bld_label *scratch;
	size_t cap_scratch;
};

#endif
