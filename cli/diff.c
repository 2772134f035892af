/* SPDX-License-Identifier: MIT */
/* cprof diff: how each function's share of two profiles changed, and whether beyond noise. */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/diff.h"
#include "profile/flame.h"

#define DEFAULT_POWER 0.8	/* "detect": find it significant 4 runs in 5 */

static void diff_usage(FILE *f)
{
	fprintf(f,
		"usage: cprof diff BASE NEW [--threshold PCT] [--confidence PCT] [--flat]\n"
		"                  [--focus REGEX] [--ignore REGEX] [--by function|line]\n"
		"                  [--type TYPE] [--top N] [-f text|json|markdown|svg] [-o FILE]\n"
		"\n"
		"Compares two pprof profiles function by function: the change of each one's\n"
		"share of its profile's total, cumulative and flat, in percentage points, so\n"
		"that runs of different lengths compare.  Functions are matched by name and\n"
		"file, never by address.  Each change is tested against sampling noise (a\n"
		"two-sample z-test on the shares, their variances from the samples'\n"
		"weights): the margin column is the change that noise alone stays under\n"
		"at the confidence.\n"
		"\n"
		"      --threshold PCT    exit 3 when a share grew by more than PCT points\n"
		"                         (default 5) and by more than its noise margin\n"
		"      --confidence PCT   confidence of the noise test, 50..99.9999 (default 99)\n"
		"      --flat             gate on flat shares (self time), not cumulative ones\n"
		"      --focus REGEX      only functions whose name matches (POSIX extended)\n"
		"      --ignore REGEX     leave out functions whose name matches\n"
		"      --by function|line per function (default) or per source line\n"
		"  -t, --type TYPE        sample type to compare (default: BASE's default)\n"
		"  -n, --top N            rows to show (default all)\n"
		"  -f, --format FMT       text (default), json, markdown (a table of the\n"
		"                         significant changes, for CI job summaries), or svg\n"
		"                         (NEW's flame graph, red where shares grew against\n"
		"                         BASE, blue where they shrank)\n"
		"  -o, --output FILE      where -f svg writes (default standard output)\n"
		"      --json             the same as -f json\n"
		"  -h, --help             this help\n"
		"\n"
		"Exit status: 0 no share grew significantly past the threshold, 3 one did,\n"
		"1/2/64 as other commands (2: a profile cannot be read or compared, 64: usage).\n");
}

/* "5", "2.5", "10%": a number in [lo, hi]. */
static int parse_percent(const char *s, double lo, double hi, double *out)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (end == s || errno || !isfinite(v))
		return -EINVAL;
	if (*end == '%')
		end++;
	if (*end || v < lo || v > hi)
		return -EINVAL;
	*out = v;
	return 0;
}

static enum cli_opt_status opt_threshold(void *value, const char *arg)
{
	if (parse_percent(arg, 0, 100, value) == 0)
		return CLI_OPT_TAKEN;
	cli_error("diff: invalid --threshold '%s': expected percentage points, 0..100", arg);
	return CLI_OPT_INVALID;
}

static enum cli_opt_status opt_confidence(void *value, const char *arg)
{
	double v;

	if (parse_percent(arg, 50, 99.9999, &v) == 0) {
		*(double *)value = v / 100;
		return CLI_OPT_TAKEN;
	}
	cli_error("diff: invalid --confidence '%s': expected a percentage, 50..99.9999", arg);
	return CLI_OPT_INVALID;
}

static enum cli_opt_status opt_format(void *value, const char *arg)
{
	static const char *const names[] = {
		[DIFF_TEXT] = "text", [DIFF_JSON] = "json", [DIFF_MARKDOWN] = "markdown",
		[DIFF_SVG] = "svg",
	};
	size_t i;

	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if (strcmp(arg, names[i]) == 0) {
			*(enum diff_format *)value = (enum diff_format)i;
			return CLI_OPT_TAKEN;
		}
	}
	cli_error("diff: invalid format '%s': text, json, markdown or svg", arg);
	return CLI_OPT_INVALID;
}

static enum cli_opt_status opt_json(void *value, const char *arg)
{
	(void)arg;
	*(enum diff_format *)value = DIFF_JSON;
	return CLI_OPT_TAKEN;
}

static const struct cli_command_line diff_line = {
	.name = "diff", .usage = diff_usage, .min_args = 2, .max_args = 2,
	.missing = "give two profiles, BASE and NEW (see 'cprof diff --help')",
};

/* Compiles --focus and --ignore.  Returns 0, or -EINVAL once reported. */
static int compile_patterns(struct diff_args *da)
{
	const char *what[2] = { "--focus", "--ignore" }, *pat[2] = { da->focus, da->ignore };
	regex_t *re[2] = { &da->focus_re, &da->ignore_re };
	char why[256];
	int i, ret;

	for (i = 0; i < 2; i++) {
		if (!pat[i])
			continue;
		ret = regcomp(re[i], pat[i], REG_EXTENDED | REG_NOSUB);
		if (ret) {
			regerror(ret, re[i], why, sizeof(why));
			cli_error("diff: invalid %s '%s': %s (a POSIX extended regular expression)",
				  what[i], pat[i], why);
			if (i == 1 && da->focus)
				regfree(&da->focus_re);
			return -EINVAL;
		}
	}
	return 0;
}

static void free_patterns(struct diff_args *da)
{
	if (da->focus)
		regfree(&da->focus_re);
	if (da->ignore)
		regfree(&da->ignore_re);
}

/* Reads both profiles and picks one sample type both have.  Returns 0, or
 * the exit code once the error is reported. */
static int load_sides(const struct diff_args *da, struct diff_side *base,
		      struct diff_side *new_side, size_t *base_idx, size_t *new_idx)
{
	const char *type;
	int k;

	if (cli_read_profile(base->path, &base->p) < 0 ||
	    cli_read_profile(new_side->path, &new_side->p) < 0)
		return CPROF_EXIT_FATAL;
	if (cli_pick_type("diff", base->p, base->path, da->type, base_idx) < 0)
		return CPROF_EXIT_USAGE;
	/* The same type in both: a share of CPU time is no share of wall time. */
	type = base->p->sample_types[*base_idx].type;
	k = prof_rd_find_type(new_side->p, type);
	if (k < 0) {
		cli_error("cannot compare '%s' with '%s': it has no sample type '%s' (choose one both have with --type)",
			  new_side->path, base->path, type);
		return CPROF_EXIT_FATAL;
	}
	*new_idx = (size_t)k;
	return 0;
}

/* The "samples" count of record i of p, 1 when p has no such type. */
static int64_t record_count(const struct prof_rd_profile *p, int k, size_t i)
{
	return k >= 0 && p->samples[i].values[k] > 0 ? p->samples[i].values[k] : 1;
}

/*
 * The weights behind the variance of each share.  A share is a ratio of
 * sums of sample weights (the compared type's values), and its variance
 * from run to run is, by the delta method,
 *	(A (1 - 2S) + S^2 W2) / W^2
 * with S the share, W the sum of weights, W2 the sum of their squares and A
 * that of the squares of the samples the function is on: S(1 - S)/n when
 * all weights are equal, more when a few heavy samples carry the share.
 * The squares per row come from a report of a copy of the profile whose
 * values are the squares; a record merges `samples` samples of one stack,
 * taken as equal weights (value^2 / count).  Weights are scaled so that the
 * sums of squares fit.  Returns 0 or -ENOMEM.
 */
static int build_squares(const struct diff_args *da, struct diff_side *s, size_t type)
{
	const struct prof_rd_profile *p = s->p;
	struct prof_rd_profile sq = *p;
	struct prof_rd_sample *samples;
	int64_t *values, n = 0;
	int k = prof_rd_find_type(p, "samples");
	double max = 0, scale, w;
	size_t i, nt = p->n_sample_types;
	int ret;

	samples = calloc(p->n_samples ? p->n_samples : 1, sizeof(*samples));
	values = calloc(p->n_samples ? p->n_samples * nt : 1, sizeof(*values));
	if (!samples || !values) {
		ret = -ENOMEM;
		goto out;
	}
	for (i = 0; i < p->n_samples; i++)
		max = fmax(max, (double)p->samples[i].values[type]);
	scale = max > (1 << 20) ? max / (1 << 20) : 1;
	s->w_sum = 0;
	for (i = 0; i < p->n_samples; i++) {
		samples[i] = p->samples[i];
		memcpy(values + i * nt, p->samples[i].values, nt * sizeof(*values));
		w = fmax((double)p->samples[i].values[type], 0) / scale;
		values[i * nt + type] = llround(w * w / (double)record_count(p, k, i));
		samples[i].values = values + i * nt;
		s->w_sum += w;
		n += record_count(p, k, i);
	}
	sq.samples = samples;
	ret = prof_rpt_build(&sq, type, (enum prof_rpt_by)da->by, &s->sq);
	s->samples = n;
	if (ret == 0)
		s->n_eff = s->sq->total > 0 ? s->w_sum * s->w_sum / (double)s->sq->total : 0;
out:
	free(values);
	free(samples);
	return ret;
}

static void free_side(struct diff_side *s)
{
	prof_rpt_free(s->sq);
	prof_rpt_free(s->r);
	prof_rd_free(s->p);
}

/* Builds both reports and their difference.  Returns 0, or the exit code
 * once the error is reported. */
static int compare(const struct diff_args *da, struct diff_side *base,
		   struct diff_side *new_side, struct prof_diff **d, struct prof_diff **sqd)
{
	size_t base_idx, new_idx;
	const char *type;
	int ret;

	ret = load_sides(da, base, new_side, &base_idx, &new_idx);
	if (ret)
		return ret;
	type = base->p->sample_types[base_idx].type;
	ret = prof_rpt_build(base->p, base_idx, (enum prof_rpt_by)da->by, &base->r);
	if (ret == 0)
		ret = prof_rpt_build(new_side->p, new_idx, (enum prof_rpt_by)da->by, &new_side->r);
	if (ret == 0 && (base->r->total == 0 || new_side->r->total == 0)) {
		/* Shares of nothing are no shares: every function would look
		 * new (+100 points) and a CI job would report a regression. */
		cli_error("cannot compare '%s' with '%s': '%s' has no samples of type '%s'",
			  new_side->path, base->path,
			  base->r->total == 0 ? base->path : new_side->path, type);
		return CPROF_EXIT_FATAL;
	}
	if (ret == 0)
		ret = prof_diff_build(base->r, new_side->r, d);
	if (ret == 0)
		ret = build_squares(da, base, base_idx);
	if (ret == 0)
		ret = build_squares(da, new_side, new_idx);
	if (ret == 0)
		ret = prof_diff_build(base->sq, new_side->sq, sqd);
	if (ret < 0) {
		cli_error("cannot compare '%s' with '%s': %s", new_side->path, base->path,
			  strerror(-ret));
		return CPROF_EXIT_FATAL;
	}
	return 0;
}

static int cmp_entry(const void *a, const void *b)
{
	const struct diff_entry *x = a, *y = b;

	return (fabs(x->change) < fabs(y->change)) - (fabs(x->change) > fabs(y->change));
}

static bool selected(const struct diff_args *da, const char *name)
{
	if (da->focus && regexec(&da->focus_re, name, 0, NULL, 0) != 0)
		return false;
	return !(da->ignore && regexec(&da->ignore_re, name, 0, NULL, 0) == 0);
}

static int cmp_str(const char *a, const char *b)
{
	return strcmp(a ? a : "", b ? b : "");
}

/* Diff rows by name, file, line: to find a row's squared weights. */
static int cmp_key(const void *a, const void *b)
{
	const struct prof_diff_row *x = *(const struct prof_diff_row *const *)a;
	const struct prof_diff_row *y = *(const struct prof_diff_row *const *)b;
	int c = cmp_str(x->name, y->name);

	if (!c)
		c = cmp_str(x->file, y->file);
	return c ? c : (x->line > y->line) - (x->line < y->line);
}

/* The variance of share (a fraction) of side s, whose row holds the share
 * sq_pct (percent) of the squared weights.  See build_squares. */
static double share_variance(const struct diff_side *s, double share, double sq_pct)
{
	double w2 = (double)s->sq->total, a = sq_pct / 100 * w2;

	if (s->w_sum <= 0)
		return 0;
	return fmax((a * (1 - 2 * share) + share * share * w2) / (s->w_sum * s->w_sum), 0);
}

/* Tests one entry against the noise, sq being its row of squared weights:
 * the margin shown is that of the change shown. */
static void test_entry(const struct diff_args *da, const struct diff_side *base,
		       const struct diff_side *new_side, struct diff_entry *e,
		       const struct prof_diff_row *sq)
{
	const struct prof_diff_row *r = e->row;
	double b = (da->flat ? r->base_flat : r->base_cum) / 100;
	double a = (da->flat ? r->new_flat : r->new_cum) / 100;
	double vb = share_variance(base, b, da->flat ? sq->base_flat : sq->base_cum);
	double va = share_variance(new_side, a, da->flat ? sq->new_flat : sq->new_cum);

	prof_sig_compare_var(b, vb, a, va, da->confidence, &e->sig);
	e->tested = true;
}

/* How many samples a threshold-sized growth needs, over the entries. */
static void check_power(const struct diff_args *da, const struct diff_side *base,
			const struct diff_side *new_side, struct diff_result *res)
{
	double delta = da->threshold / 100, need;
	size_t i;

	if (!res->tested || delta <= 0)
		return;
	for (i = 0; i < res->n; i++) {
		const struct prof_diff_row *r = res->entries[i].row;
		double share = (da->flat ? r->base_flat : r->base_cum) / 100;

		need = prof_sig_samples_needed(share, delta, da->confidence, DEFAULT_POWER);
		if (need > res->needed) {
			res->needed = need;
			res->needed_share = 100 * share;
		}
	}
	/* needed counts equal, independent samples; heavy samples make each
	 * worth less (n_eff < samples), so more of them are needed */
	res->underpowered = base->n_eff < res->needed || new_side->n_eff < res->needed;
	if (base->n_eff > 0 && new_side->n_eff > 0)
		res->needed *= fmax(fmax((double)base->samples / base->n_eff,
					 (double)new_side->samples / new_side->n_eff), 1);
	res->needed = ceil(res->needed);
}

/* The rows of sqd sorted by key, for bsearch with cmp_key; NULL on ENOMEM. */
static const struct prof_diff_row **sorted_keys(const struct prof_diff *sqd)
{
	const struct prof_diff_row **keys = calloc(sqd->n_rows ? sqd->n_rows : 1, sizeof(*keys));
	size_t i;

	if (!keys)
		return NULL;
	for (i = 0; i < sqd->n_rows; i++)
		keys[i] = &sqd->rows[i];
	qsort(keys, sqd->n_rows, sizeof(*keys), cmp_key);
	return keys;
}

/* Selects, tests and sorts the rows of d; sqd holds the same rows' squared
 * weights.  Returns 0 or -ENOMEM. */
static int evaluate(const struct diff_args *da, const struct diff_side *base,
		    const struct diff_side *new_side, const struct prof_diff *d,
		    const struct prof_diff *sqd, struct diff_result *res)
{
	const struct prof_diff_row **keys = sorted_keys(sqd), *const *k;
	size_t i;

	res->entries = calloc(d->n_rows ? d->n_rows : 1, sizeof(*res->entries));
	if (!keys || !res->entries) {
		free(keys);
		return -ENOMEM;
	}
	res->tested = true;
	for (i = 0; i < d->n_rows; i++) {
		const struct prof_diff_row *r = &d->rows[i];
		struct diff_entry *e = &res->entries[res->n];

		if (!selected(da, r->name))
			continue;
		res->n++;
		e->row = r;
		e->change = da->flat ? r->d_flat : r->d_cum;
		k = bsearch(&r, keys, sqd->n_rows, sizeof(*keys), cmp_key);
		if (k)
			test_entry(da, base, new_side, e, *k);
		res->tested &= e->tested;
		/* Untested (it cannot happen: both reports have the same rows),
		 * the threshold alone decides. */
		e->significant = fabs(e->change) > da->threshold && (!e->tested || e->sig.significant);
		e->regression = e->significant && e->change > 0;
		res->n_significant += e->significant;
		res->n_regressions += e->regression;
	}
	free(keys);
	qsort(res->entries, res->n, sizeof(*res->entries), cmp_entry);
	check_power(da, base, new_side, res);
	return 0;
}

/* The differential flame graph.  Returns 0, or the exit code once reported. */
static int write_svg(const struct diff_args *da, const struct diff_side *base,
		     const struct diff_side *new_side)
{
	const char *out = da->output ? da->output : "-";
	char title[512];
	int ret;

	snprintf(title, sizeof(title), "cprof diff: %s against %s", new_side->path, base->path);
	ret = prof_flame_diff_svg_file(base->p, base->r->type, new_side->p, new_side->r->type,
				       out, title);
	if (ret < 0) {
		cli_error("cannot write '%s': %s", strcmp(out, "-") ? out : "standard output",
			  strerror(-ret));
		return CPROF_EXIT_FATAL;
	}
	return 0;
}

/* Returns 0, or the exit code once an error is reported. */
static int print(const struct diff_args *da, const struct diff_side *base,
		 const struct diff_side *new_side, const struct prof_diff *d,
		 const struct diff_result *res)
{
	switch (da->format) {
	case DIFF_SVG:
		return write_svg(da, base, new_side);
	case DIFF_TEXT:
		diff_print_text(da, base, new_side, res);
		break;
	case DIFF_JSON:
		diff_print_json(da, base, new_side, d, res);
		break;
	case DIFF_MARKDOWN:
		diff_print_markdown(da, base, new_side, res);
		break;
	}
	return 0;
}

/* What the table cannot check: -o and the patterns.  Returns 0, or the exit
 * code once reported. */
static int check_args(struct diff_args *da)
{
	int ret;

	if (da->output && da->format != DIFF_SVG) {
		cli_error("diff: -o is for -f svg; the other formats go to standard output");
		return CPROF_EXIT_USAGE;
	}
	if (da->output) {
		ret = cli_check_output(da->output);
		if (ret < 0) {
			cli_error("cannot write '%s': %s", da->output, strerror(-ret));
			return CPROF_EXIT_FATAL;
		}
	}
	return compile_patterns(da) < 0 ? CPROF_EXIT_USAGE : 0;
}

int cmd_diff(int argc, char **argv)
{
	struct diff_args da = { .threshold = 5, .confidence = 0.99, .by = PROF_RPT_FUNCTION };
	const struct cli_option opts[] = {
		CLI_OPTION_CALLBACK(0, "threshold", &da.threshold, opt_threshold),
		CLI_OPTION_CALLBACK(0, "confidence", &da.confidence, opt_confidence),
		CLI_OPTION_BOOL(0, "flat", &da.flat),
		CLI_OPTION_STRING(0, "focus", &da.focus),
		CLI_OPTION_STRING(0, "ignore", &da.ignore),
		CLI_OPTION_CALLBACK(0, "by", &da.by, cli_opt_by_no_file),
		CLI_OPTION_STRING('t', "type", &da.type),
		CLI_OPTION_ULONG('n', "top", &da.top, 1, (unsigned long)-1),
		CLI_OPTION_CALLBACK('f', "format", &da.format, opt_format),
		CLI_OPTION_CALLBACK_FLAG(0, "json", &da.format, opt_json),
		CLI_OPTION_STRING('o', "output", &da.output),
		CLI_OPTION_END,
	};
	struct diff_side base = { 0 }, new_side = { 0 };
	struct prof_diff *d = NULL, *sqd = NULL;
	struct diff_result res = { 0 };
	enum cli_parse_result pr;
	int code, first;

	pr = cli_parse_options(&diff_line, opts, argc, argv, &first);
	if (pr != CLI_PARSE_OK)
		return cli_parse_exit_code(pr);
	code = check_args(&da);
	if (code)
		return code;
	base.path = argv[first];
	new_side.path = argv[first + 1];
	code = compare(&da, &base, &new_side, &d, &sqd);
	if (code)
		goto out;
	if (evaluate(&da, &base, &new_side, d, sqd, &res) < 0) {
		cli_error("cannot compare '%s' with '%s': %s", new_side.path, base.path,
			  strerror(ENOMEM));
		code = CPROF_EXIT_FATAL;
		goto out;
	}
	code = print(&da, &base, &new_side, d, &res);
	if (!code)
		code = res.n_regressions ? DIFF_EXIT_GREW : CPROF_EXIT_OK;
out:
	free(res.entries);
	prof_diff_free(sqd);
	prof_diff_free(d);
	free_side(&new_side);
	free_side(&base);
	free_patterns(&da);
	return code;
}
