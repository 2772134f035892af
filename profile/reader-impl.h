/* SPDX-License-Identifier: MIT */
/*
 * What a struct prof_rd_profile points into, shared by the two files that
 * make one (reader.c from a file, view.c from a builder) and freed by
 * prof_rd_free.
 */
#ifndef CPROF_PROFILE_READER_IMPL_H
#define CPROF_PROFILE_READER_IMPL_H

#include "profile/reader.h"

/*
 * What the reader accepts (reader.h): profiles come from anywhere (CI jobs,
 * downloads), and a few KiB of gzip can claim gigabytes.  The largest real
 * profiles (hours of many threads) stay well below both.
 */
#define RD_MAX_PLAIN ((size_t)256 << 20)	/* protobuf bytes, decompressed */
#define RD_MAX_FILE (RD_MAX_PLAIN + ((size_t)1 << 20))	/* bytes read (gzip adds a little) */

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

/*
 * reader-input.c: inflates the len bytes of gzip at in (members one after
 * another) into a malloc'ed *out of exactly the decompressed size, at most
 * RD_MAX_PLAIN.  0, -ENOMEM, -EFBIG or -EBADMSG, with *why saying why.
 */
int prof_rd_gunzip(const unsigned char *in, size_t len, unsigned char **out, size_t *out_len,
		   const char **why);

#endif
