/* SPDX-License-Identifier: MIT */
/*
 * A pprof profile read back: any profile.proto file, gzipped or not (cprof's,
 * Go's runtime/pprof, `go tool pprof -proto`), decoded into plain structs
 * with every id resolved to a pointer, for report, diff and flame graphs.
 */
#ifndef CPROF_PROFILE_READER_H
#define CPROF_PROFILE_READER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

struct prof_rd_value_type {
	const char *type;	/* "samples", "cpu", "wall", ... */
	const char *unit;	/* "count", "nanoseconds", ... */
};

struct prof_rd_function {
	const char *name;	/* "" when absent */
	const char *system_name;
	const char *filename;
	int64_t start_line;
};

struct prof_rd_line {
	const struct prof_rd_function *function;	/* never NULL */
	int64_t line;
};

struct prof_rd_mapping {
	uint64_t start, limit, offset;
	const char *filename;
	const char *build_id;	/* "" when absent, as filename */
};

struct prof_rd_location {
	uint64_t address;
	const struct prof_rd_mapping *mapping;	/* NULL when none */
	const struct prof_rd_line *lines;	/* innermost inlined first */
	size_t n_lines;				/* 0: address only */
};

/* The name of the kernel's mapping, as perf and cprof write it ("[k]" is
 * perf's mark of a kernel function in its reports). */
#define PROF_RD_KERNEL_MAPPING "[kernel.kallsyms]"
#define PROF_RD_KERNEL_MARK " [k]"

/* Whether loc is kernel code: its mapping is the kernel's. */
static inline bool prof_rd_location_kernel(const struct prof_rd_location *loc)
{
	return loc->mapping && strncmp(loc->mapping->filename, PROF_RD_KERNEL_MAPPING,
				       sizeof(PROF_RD_KERNEL_MAPPING) - 1) == 0;
}

struct prof_rd_label {
	const char *key;
	const char *str;	/* NULL for a numeric label */
	int64_t num;
	const char *num_unit;	/* NULL when absent */
};

struct prof_rd_sample {
	const struct prof_rd_location *const *locations;	/* leaf first */
	size_t n_locations;
	const int64_t *values;		/* one per sample type */
	const struct prof_rd_label *labels;
	size_t n_labels;
};

struct prof_rd_profile {
	const struct prof_rd_value_type *sample_types;
	size_t n_sample_types;
	size_t default_type;		/* index into sample_types: the one to show */
	struct prof_rd_value_type period_type;
	int64_t period;
	int64_t time_nanos, duration_nanos;
	const char *const *comments;
	size_t n_comments;
	const struct prof_rd_sample *samples;
	size_t n_samples;
};

/*
 * Reads and decodes the profile at path ("-": standard input).  Gzip is
 * detected by its magic; a plain protobuf is read as is.  Returns 0, -errno
 * (the file), -EBADMSG (not a valid profile: bad gzip, bad protobuf, or ids
 * that point nowhere) or -EFBIG (more than the reader takes, so that a few
 * KiB of gzip cannot claim gigabytes: a file over 257 MiB, over 256 MiB of
 * protobuf once decompressed, or a message whose decoded structs would need
 * over 1 GiB; memory use stays within a small multiple of these).  The
 * result is freed with prof_rd_free.
 */
int prof_rd_file(const char *path, struct prof_rd_profile **out);

/* The same from a buffer in memory. */
int prof_rd_buffer(const void *data, size_t len, struct prof_rd_profile **out);

void prof_rd_free(struct prof_rd_profile *p);

/*
 * prof_rd_file and prof_rd_buffer that also say, on -EBADMSG and -EFBIG,
 * what was wrong ("truncated gzip data", "protobuf decoding failed", ...):
 * *why is set to a static string, or NULL for other errors.  why may be NULL.
 */
int prof_rd_file_why(const char *path, struct prof_rd_profile **out, const char **why);
int prof_rd_buffer_why(const void *data, size_t len, struct prof_rd_profile **out,
		       const char **why);

/* Index of the sample type called type ("cpu"), or -1. */
int prof_rd_find_type(const struct prof_rd_profile *p, const char *type);

#endif
