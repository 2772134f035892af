/* SPDX-License-Identifier: MIT */
/*
 * What a struct prof_rd_profile points into, shared by the two files that
 * make one (reader.c from a file, view.c from a builder) and freed by
 * prof_rd_free.
 */
#ifndef CPROF_PROFILE_READER_IMPL_H
#define CPROF_PROFILE_READER_IMPL_H

#include "profile/reader.h"

struct Perftools__Profiles__Profile;
struct ProtobufCAllocator;

struct prof_rd_owner {
	struct prof_rd_profile pub;	/* first: prof_rd_free casts back */
	/* the decoded message, which owns the strings and values; NULL in a
	 * view, whose strings and values belong to the builder */
	struct Perftools__Profiles__Profile *msg;
	struct ProtobufCAllocator *msg_alloc;	/* msg's allocator, malloc'ed */
	struct prof_rd_value_type *types;
	struct prof_rd_function *functions;
	struct prof_rd_mapping *mappings;
	struct prof_rd_location *locations;
	struct prof_rd_line *lines;
	const struct prof_rd_location **sample_locs;
	struct prof_rd_label *labels;
	struct prof_rd_sample *samples;
	const char **comments;
};

#endif
