/* SPDX-License-Identifier: MIT */
/*
 * A pprof profile under construction and its encoder (protobuf-c + gzip).
 * string_table[0] == "", strings interned once and valid UTF-8,
 * mapping/location/function ids 1..N in array order, gzip framing,
 * identical (stack, labels) samples merged: doc/pprof.md says why.
 */
#ifndef CPROF_PROFILE_PROFILE_H
#define CPROF_PROFILE_PROFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct prof_value_type {
	const char *type;	/* "samples", "cpu", "wall" */
	const char *unit;	/* "count", "nanoseconds" */
};

struct prof_mapping {
	uint64_t start, limit, offset;
	const char *filename;	/* NULL or "" allowed */
	const char *build_id;	/* lowercase hex, NULL if none */
	bool has_functions, has_filenames, has_line_numbers, has_inline_frames;
};

struct prof_line {
	const char *function;	 /* NULL: no function (the line is skipped) */
	const char *system_name; /* NULL: same as function */
	const char *filename;	 /* NULL allowed */
	int64_t start_line;
	int64_t line;
};

struct prof_label {
	const char *key;
	const char *str;	/* string label when non-NULL */
	int64_t num;		/* numeric label otherwise */
	const char *num_unit;	/* NULL allowed */
};

struct prof_builder;

/*
 * sample_types: n_types value types, in the order values are passed to
 * prof_add_sample.  period_type/period as pprof defines them.
 * Returns 0 or -ENOMEM.
 */
int prof_builder_create(struct prof_builder **out,
			const struct prof_value_type *sample_types, size_t n_types,
			struct prof_value_type period_type, int64_t period);
void prof_builder_destroy(struct prof_builder *b);

void prof_set_time(struct prof_builder *b, int64_t time_nanos, int64_t duration_nanos);
int prof_add_comment(struct prof_builder *b, const char *text);

/* Adds a mapping; the main binary must be added first.  *id is 1..N. */
int prof_add_mapping(struct prof_builder *b, const struct prof_mapping *m, uint64_t *id);

/*
 * Adds a location (mapping_id 0 = none) with its lines, innermost inlined
 * callee first, the physical function last.  Functions are interned by
 * (function, system_name, filename): one record each, whose start_line is
 * the first non-zero one given; only another non-zero start_line makes a
 * second record of the same three (pprof keeps such functions apart too).
 * A location with address 0
 * and no lines is refused (-EINVAL).  Locations are not deduplicated here:
 * callers add each (mapping, address) once.
 */
int prof_add_location(struct prof_builder *b, uint64_t mapping_id, uint64_t address,
		      const struct prof_line *lines, size_t n_lines, uint64_t *id);

/*
 * Adds a sample: location ids leaf first, one value per sample type.
 * A sample with the same locations and the same labels as an earlier one is
 * merged into it (values summed).  Returns 0, -EINVAL or -ENOMEM.
 */
int prof_add_sample(struct prof_builder *b, const uint64_t *location_ids, size_t n_locations,
		    const int64_t *values, const struct prof_label *labels, size_t n_labels);

/* How many samples and locations the profile holds so far. */
size_t prof_sample_count(const struct prof_builder *b);
size_t prof_location_count(const struct prof_builder *b);

struct ProtobufCBuffer;

/*
 * Internal to profile/ (builder.c for write.c): encodes the profile as an
 * uncompressed perftools.profiles.Profile message into out, which receives
 * it in pieces.  The builder's layout stays private to builder.c.
 * Returns 0 or -ENOMEM; out reports its own errors.
 */
int prof_builder_pack(struct prof_builder *b, struct ProtobufCBuffer *out);

struct prof_rd_profile;

/*
 * The profile under construction as the reader's structs (reader.h), for
 * flame graphs and reports of a live session without encoding and decoding
 * it.  The view points into b: b must outlive it and not change meanwhile.
 * Free it with prof_rd_free.  Returns 0, -EINVAL (no sample types) or
 * -ENOMEM.
 */
int prof_builder_view(const struct prof_builder *b, struct prof_rd_profile **out);

/* Serializes and gzips the profile to fd.  Returns 0 or -errno. */
int prof_write_fd(struct prof_builder *b, int fd);

/*
 * Writes the profile to path ("-" = stdout): to a temporary file in the same
 * directory, renamed into place (atomic.h; no fsync); on any error nothing
 * is left behind.
 * Returns 0 or -errno.
 */
int prof_write_file(struct prof_builder *b, const char *path);

#endif
