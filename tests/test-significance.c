/* SPDX-License-Identifier: MIT */
/* Unit tests of profile/significance.c: the noise test behind cprof diff's gate. */
#include "config.h"

#include <math.h>
#include <stdio.h>

#include "profile/significance.h"
#include "tests/tap.h"

static bool near(double a, double b, double eps)
{
	return fabs(a - b) <= eps;
}

static void test_quantile(void)
{
	check(near(prof_sig_normal_quantile(0.5), 0, 1e-9), "quantile: 50%% is 0");
	check(near(prof_sig_normal_quantile(0.975), 1.959964, 1e-5), "quantile: 97.5%% is 1.95996");
	check(near(prof_sig_normal_quantile(0.99), 2.326348, 1e-5), "quantile: 99%% is 2.32635");
	check(near(prof_sig_normal_quantile(0.01), -2.326348, 1e-5), "quantile: 1%% is -2.32635");
	check(near(prof_sig_normal_quantile(0.999999), 4.753424, 1e-4),
	      "quantile: 99.9999%% is 4.7534");
}

static void test_compare(void)
{
	struct prof_sig s;

	/* 30% of 100 samples against 40% of 100: pooled 35%, SE 6.745 points,
	 * z = 1.4826, one-sided p = 0.0691. */
	prof_sig_compare(0.30, 100, 0.40, 100, 0.99, &s);
	check(near(s.change, 10, 1e-9) && near(s.margin, 2.326348 * 6.745369, 1e-3) &&
	      near(s.p_value, 0.06909, 1e-4) && !s.significant,
	      "30%% -> 40%% of 100 samples: +10 points, margin %.2f, p %.4f: noise at 99%%",
	      s.margin, s.p_value);
	prof_sig_compare(0.30, 100, 0.40, 100, 0.90, &s);
	check(s.significant, "... but significant at 90%% (p %.4f < 0.10)", s.p_value);
	/* The same shares with 10x the samples: SE / sqrt(10). */
	prof_sig_compare(0.30, 1000, 0.40, 1000, 0.99, &s);
	check(s.significant && s.p_value < 1e-5 && near(s.margin, 2.326348 * 2.133073, 1e-3),
	      "30%% -> 40%% of 1000 samples is significant (margin %.2f)", s.margin);
	/* Shrinkage is tested one-sided downwards, the same way. */
	prof_sig_compare(0.40, 1000, 0.30, 1000, 0.99, &s);
	check(near(s.change, -10, 1e-9) && s.significant, "40%% -> 30%% is a significant shrink");
	prof_sig_compare(1, 50, 1, 80, 0.99, &s);
	check(s.change == 0 && s.margin == 0 && s.p_value == 1 && !s.significant,
	      "100%% in both: no change, nothing to test");
	prof_sig_compare(0, 100, 0.10, 100, 0.99, &s);
	check(s.significant && s.change > s.margin, "a new function at 10%% of 100 samples stands out");
}

static void test_compare_var(void)
{
	struct prof_sig s;

	/* The binomial variances of 30% and 40% of 1000: SE = 2.1213 points. */
	prof_sig_compare_var(0.30, 0.3 * 0.7 / 1000, 0.40, 0.4 * 0.6 / 1000, 0.99, &s);
	check(near(s.margin, 2.326348 * 2.121320, 1e-3) && s.significant && s.p_value < 1e-5,
	      "compare_var: 30%% -> 40%%, binomial variances of 1000 (margin %.3f)", s.margin);
	/* One heavy sample carrying the share: a large variance, no verdict. */
	prof_sig_compare_var(0.10, 0.01, 0.40, 0.04, 0.99, &s);
	check(!s.significant && s.p_value > 0.05, "compare_var: +30 points with SE 22 is noise");
	prof_sig_compare_var(0.5, 0, 0.5, 0, 0.99, &s);
	check(!s.significant && s.p_value == 1, "compare_var: no variance, no change");
	prof_sig_compare_var(0, 0, 1, 0, 0.99, &s);
	check(s.significant && s.p_value == 0, "compare_var: no variance, a complete change");
}

static void test_needed(void)
{
	double n = prof_sig_samples_needed(0.275, 0.05, 0.99, 0.8);

	/* p = 0.3: (2.3263 + 0.8416)^2 * 2 * 0.21 / 0.0025 = 1686.6 */
	check(n == 1687, "a 5-point growth near 30%% needs 1687 samples at 99%%, 80%% power (%.0f)", n);
	check(prof_sig_samples_needed(0.475, 0.05, 0.99, 0.8) >
	      prof_sig_samples_needed(0.05, 0.05, 0.99, 0.8),
	      "shares near one half need the most samples");
	check(prof_sig_samples_needed(0.99, 0.05, 0.99, 0.8) > 0,
	      "a growth towards 100%% still needs samples");
}

int main(void)
{
	test_quantile();
	test_compare();
	test_compare_var();
	test_needed();
	return tap_done();
}
