/* SPDX-License-Identifier: MIT */
/*
 * Is a change of a share between two profiles more than sampling noise?  Each
 * sample either has a function on its stack or not, so the function's share
 * of n samples is a binomial proportion; two profiles' shares compare with a
 * two-proportion z-test (pooled variance).  The samples are assumed
 * independent: true when the program's phases are short against the
 * sampling period, optimistic when a run is a few long phases.
 */
#ifndef CPROF_PROFILE_SIGNIFICANCE_H
#define CPROF_PROFILE_SIGNIFICANCE_H

#include <stdbool.h>

struct prof_sig {
	double change;		/* new share - base share, in percentage points */
	double margin;		/* points: a change beyond +-margin is significant */
	double p_value;		/* one-sided, in the direction of the change */
	bool significant;	/* |change| > margin, i.e. p_value < 1 - confidence */
};

/*
 * Compares share base (a fraction, 0..1, of n_base samples) with share
 * new_share of n_new samples, one-sided in the direction of the change, at
 * confidence (0.5..1 exclusive, e.g. 0.99).  n_base, n_new > 0.
 */
void prof_sig_compare(double base, double n_base, double new_share, double n_new,
		      double confidence, struct prof_sig *out);

/*
 * The same for shares estimated with variances var_base and var_new (in
 * squared fractions; see the weighted-share variance in cli/diff.c), with
 * the unpooled standard error sqrt(var_base + var_new).
 */
void prof_sig_compare_var(double base, double var_base, double new_share, double var_new,
			  double confidence, struct prof_sig *out);

/* The standard normal quantile: x with P(Z <= x) = p, for 0 < p < 1. */
double prof_sig_normal_quantile(double p);

/*
 * How many samples each profile needs so that a growth of delta (a
 * fraction) of a share near `share` is found significant at confidence in a
 * fraction `power` of runs (e.g. 0.8).  Rounded up.
 */
double prof_sig_samples_needed(double share, double delta, double confidence, double power);

#endif
