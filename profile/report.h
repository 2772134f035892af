/* SPDX-License-Identifier: MIT */
/*
 * Flat and cumulative values of a read-back profile per function, per source
 * line or per file (as `go tool pprof -top`, `-lines`, `-files` count them),
 * and the difference of two such reports in shares of their totals.
 */
#ifndef CPROF_PROFILE_REPORT_H
#define CPROF_PROFILE_REPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "profile/reader.h"

enum prof_rpt_by {
	PROF_RPT_FUNCTION,	/* function name, as pprof -top: one row per name */
	PROF_RPT_LINE,		/* function name + file + line */
	PROF_RPT_FILE,		/* file */
};

/*
 * One row.  A frame without a function (an address only, or a function with
 * no name) is named after its mapping, "[libc.so.6]", or "<unknown>", as
 * pprof names it once addresses are aggregated away.
 */
struct prof_rpt_row {
	const char *name;	/* PROF_RPT_FILE: the file name; never NULL */
	/* "" when unknown; by function, the file of the first function record
	 * met with this name (the name alone makes the row) */
	const char *file;
	int64_t line;		/* PROF_RPT_LINE only, else 0 */
	int64_t flat;		/* value of the samples where this is the leaf */
	int64_t cum;		/* ... where it is on the stack, once per sample */
	/* As pprof's "(inline)" / "(partial-inline)": called inlined on every
	 * stack it is on / on some of them. */
	bool inlined, partly_inlined;
};

struct prof_rpt {
	enum prof_rpt_by by;
	size_t type;		/* index of the sample type aggregated */
	int64_t total;		/* sum of the type's value over all samples */
	struct prof_rpt_row *rows;	/* flat descending, then name */
	size_t n_rows;
};

/*
 * Aggregates the values of sample type `type` (< p->n_sample_types) of p
 * into rows as go tool pprof -top, -lines and -files make them.  Inline
 * frames count as functions of their own; a recursive function's cum
 * counts each sample once.  Rows point into p, which must outlive the report.
 * Returns 0 or -ENOMEM; free the result with prof_rpt_free.
 */
int prof_rpt_build(const struct prof_rd_profile *p, size_t type, enum prof_rpt_by by,
		   struct prof_rpt **out);
void prof_rpt_free(struct prof_rpt *r);

/* One function (or line) in either report; shares in percent of the total. */
struct prof_diff_row {
	const char *name, *file;
	int64_t line;
	bool in_base, in_new;	/* false: vanished / new */
	double base_flat, base_cum, new_flat, new_cum;
	double d_flat, d_cum;	/* new - base, in percentage points */
};

struct prof_diff {
	struct prof_diff_row *rows;	/* |d_cum| descending, then |d_flat|, name */
	size_t n_rows;
	double max_growth;	/* the largest d_cum (0 when nothing grew) */
};

/*
 * Matches the rows of two reports made with the same `by` by what makes a
 * row (the name by function; name, file and line by line; the file by
 * file), never by address, so that runs under ASLR compare, and computes
 * the change in each one's share of its report's total, so that profiles of
 * different lengths compare.  Rows point into the reports.  Returns 0, -EINVAL (the
 * reports aggregate differently) or -ENOMEM; free with prof_diff_free.
 */
int prof_diff_build(const struct prof_rpt *base, const struct prof_rpt *new_rpt,
		    struct prof_diff **out);
void prof_diff_free(struct prof_diff *d);

/*
 * Formats value v of unit `unit` as pprof does for one value: nanoseconds and
 * the other time units as "1.25s", "310ms", "0"; bytes as "1.50MB"; anything
 * else (count) as the plain number.  Returns buf.
 */
char *prof_rpt_format_value(char *buf, size_t size, int64_t v, const char *unit);

#endif
