/* SPDX-License-Identifier: MIT */
/* cprof diff's model, shared by its command (diff.c) and printers (diff_print.c). */
#ifndef CPROF_CLI_DIFF_H
#define CPROF_CLI_DIFF_H

#include <regex.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "profile/reader.h"
#include "profile/report.h"
#include "profile/significance.h"

/*
 * diff's own status, distinct from 0/1/2/64: some function's share grew by
 * more than the threshold, and by more than sampling noise explains.  A CI
 * job can tell "slower" from "cprof failed".
 */
#define DIFF_EXIT_GREW 3

enum diff_format { DIFF_TEXT, DIFF_JSON, DIFF_MARKDOWN, DIFF_SVG };

struct diff_args {
	double threshold;	/* percentage points */
	double confidence;	/* a fraction, e.g. 0.99 */
	int by;			/* enum prof_rpt_by */
	const char *type;
	unsigned long top;	/* 0: all rows */
	enum diff_format format;
	bool flat;		/* gate on flat shares instead of cumulative ones */
	const char *output;	/* -o: where the SVG goes; NULL: standard output */
	const char *focus, *ignore;	/* the patterns as given, or NULL */
	regex_t focus_re, ignore_re;
};

struct diff_side {
	const char *path;
	struct prof_rd_profile *p;
	struct prof_rpt *r;	/* the compared type */
	/* The squared sample weights (the compared type's values, scaled) per
	 * row, and the sum of the scaled weights: the variance of each share. */
	struct prof_rpt *sq;
	double w_sum;
	int64_t samples;	/* samples in the profile (its samples type), else records */
	double n_eff;		/* the samples' worth of independent equal trials */
};

/* One compared function (or line), after --focus / --ignore. */
struct diff_entry {
	const struct prof_diff_row *row;
	double change;		/* the gated change: d_cum, or d_flat with --flat */
	struct prof_sig sig;	/* the noise test of change; valid when tested */
	bool tested;		/* the variances of both shares are known */
	bool significant;	/* |change| > threshold, beyond the noise */
	bool regression;	/* significant, and a growth */
};

struct diff_result {
	struct diff_entry *entries;	/* |change| descending */
	size_t n;
	size_t n_significant, n_regressions;
	bool tested;		/* every entry could be tested */
	double needed;		/* samples each profile needs to detect a threshold-sized growth */
	double needed_share;	/* ... of a function near this share (percent) */
	bool underpowered;	/* some profile has fewer than needed */
};

void diff_print_text(const struct diff_args *da, const struct diff_side *base,
		     const struct diff_side *new_side, const struct diff_result *res);
void diff_print_json(const struct diff_args *da, const struct diff_side *base,
		     const struct diff_side *new_side, const struct prof_diff *d,
		     const struct diff_result *res);
void diff_print_markdown(const struct diff_args *da, const struct diff_side *base,
			 const struct diff_side *new_side, const struct diff_result *res);

#endif
