/* SPDX-License-Identifier: MIT */
/* Two-proportion z-tests on sample counts, for cprof diff's gate. */
#include "config.h"

#include <math.h>

#include "profile/significance.h"

/* P(Z > x) for a standard normal Z. */
static double normal_upper_tail(double x)
{
	return 0.5 * erfc(x / M_SQRT2);
}

double prof_sig_normal_quantile(double p)
{
	double lo = -40, hi = 40, mid;
	int i;

	/* Bisection on the tail: 100 halvings of [-40, 40] are exact to the
	 * last bit, and the function is monotonic, so nothing can go astray. */
	for (i = 0; i < 100; i++) {
		mid = (lo + hi) / 2;
		if (1 - normal_upper_tail(mid) < p)
			lo = mid;
		else
			hi = mid;
	}
	return (lo + hi) / 2;
}

void prof_sig_compare(double base, double n_base, double new_share, double n_new,
		      double confidence, struct prof_sig *out)
{
	double pooled = (base * n_base + new_share * n_new) / (n_base + n_new);
	double se = sqrt(pooled * (1 - pooled) * (1 / n_base + 1 / n_new));
	double z = prof_sig_normal_quantile(confidence);
	double d = new_share - base;

	out->change = 100 * d;
	out->margin = 100 * z * se;
	if (se <= 0) {
		/* Both shares 0 or both 1: nothing changed, nothing to test. */
		out->p_value = 1;
		out->significant = false;
		return;
	}
	out->p_value = normal_upper_tail(fabs(d) / se);
	out->significant = fabs(d) > z * se;
}

void prof_sig_compare_var(double base, double var_base, double new_share, double var_new,
			  double confidence, struct prof_sig *out)
{
	double se = sqrt(fmax(var_base, 0) + fmax(var_new, 0));
	double z = prof_sig_normal_quantile(confidence);
	double d = new_share - base;

	out->change = 100 * d;
	out->margin = 100 * z * se;
	if (se <= 0) {
		/* No variance: every sample agrees, in both profiles. */
		out->p_value = d == 0 ? 1 : 0;
		out->significant = d != 0;
		return;
	}
	out->p_value = normal_upper_tail(fabs(d) / se);
	out->significant = fabs(d) > z * se;
}

double prof_sig_samples_needed(double share, double delta, double confidence, double power)
{
	double p = share + delta / 2, z;

	/* The variance at the middle of the change; a growth to 100% still
	 * varies on its way there. */
	if (p >= 1)
		p = 1 - delta / 2;
	z = prof_sig_normal_quantile(confidence) + prof_sig_normal_quantile(power);
	return ceil(z * z * 2 * p * (1 - p) / (delta * delta));
}
