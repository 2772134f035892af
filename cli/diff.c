/* SPDX-License-Identifier: MIT */
/* cprof diff: how each function's share of two profiles changed; exit 3 past a threshold. */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "profile/reader.h"
#include "profile/report.h"

/*
 * diff's own status, distinct from 0/1/2/64: some function's cumulative
 * share grew by more than the threshold.  A CI job can tell "slower" from
 * "cprof failed".
 */
#define DIFF_EXIT_GREW 3

static void diff_usage(FILE *f)
{
	fprintf(f,
		"usage: cprof diff BASE NEW [--threshold PCT] [--by function|line] [--type TYPE]\n"
		"                  [--top N] [--json]\n"
		"\n"
		"Compares two pprof profiles function by function: the change of each one's\n"
		"share of its profile's total, cumulative and flat, in percentage points, so\n"
		"that runs of different lengths compare.  Functions are matched by name and\n"
		"file, never by address.  Sorted by the size of the change in cumulative share.\n"
		"\n"
		"      --threshold PCT    exit 3 when a cumulative share grew by more than PCT\n"
		"                         percentage points (default 5)\n"
		"      --by function|line per function (default) or per source line\n"
		"  -t, --type TYPE        sample type to compare (default: BASE's default)\n"
		"  -n, --top N            rows to show (default all)\n"
		"      --json             one JSON object on stdout\n"
		"  -h, --help             this help\n"
		"\n"
		"Exit status: 0 no share grew past the threshold, 3 one did, 1/2/64 as\n"
		"other commands (2: a profile cannot be read or compared, 64: usage).\n");
}

/* "5", "2.5", "10%": percentage points in [0, 100]. */
static int parse_threshold(const char *s, double *out)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (end == s || errno || !isfinite(v))
		return -EINVAL;
	if (*end == '%')
		end++;
	if (*end || v < 0 || v > 100)
		return -EINVAL;
	*out = v;
	return 0;
}

/* A change in points: "+12.34", "-0.50", "0.00" (never "-0.00"). */
static void fmt_change(char *buf, size_t size, double d)
{
	if (fabs(d) < 0.005)
		snprintf(buf, size, "0.00");
	else
		snprintf(buf, size, "%+.2f", d);
}

static void row_label(char *buf, size_t size, int by, const struct prof_diff_row *r)
{
	const char *mark = !r->in_base ? " (new)" : !r->in_new ? " (gone)" : "";

	if (by == PROF_RPT_LINE && *r->file)
		snprintf(buf, size, "%s %s:%" PRId64 "%s", r->name, r->file, r->line, mark);
	else
		snprintf(buf, size, "%s%s", r->name, mark);
}

struct side {
	const char *path;
	struct prof_rd_profile *p;
	struct prof_rpt *r;
};

static void print_side_text(const char *what, const struct side *s)
{
	const struct prof_rd_value_type *t = &s->p->sample_types[s->r->type];
	char v[64];

	prof_rpt_format_value(v, sizeof(v), s->r->total, t->unit);
	printf("%s %s: %s total %s in %zu records\n", what, s->path, t->type, v,
	       s->p->n_samples);
}

static void print_text(const struct side *base, const struct side *new_side,
		       const struct prof_diff *d, int by, double threshold, size_t top)
{
	char c1[32], c2[32], label[4096];
	size_t i, n = d->n_rows < top ? d->n_rows : top;

	print_side_text("Base:", base);
	print_side_text("New: ", new_side);
	printf("Changes of each %s's share of its profile's total, in percentage points\n",
	       by == PROF_RPT_LINE ? "line" : "function");
	printf("%8s %8s %8s %8s %9s %9s  %s\n", "cum", "flat", "base cum", "new cum",
	       "base flat", "new flat", by == PROF_RPT_LINE ? "line" : "function");
	for (i = 0; i < n; i++) {
		const struct prof_diff_row *r = &d->rows[i];

		fmt_change(c1, sizeof(c1), r->d_cum);
		fmt_change(c2, sizeof(c2), r->d_flat);
		row_label(label, sizeof(label), by, r);
		printf("%8s %8s %7.2f%% %7.2f%% %8.2f%% %8.2f%%  %s\n", c1, c2, r->base_cum,
		       r->new_cum, r->base_flat, r->new_flat, label);
	}
	if (n < d->n_rows)
		printf("(%zu more rows; --top to show them)\n", d->n_rows - n);
	if (d->max_growth > threshold)
		printf("Grew past the threshold of %.2f points: largest growth %+.2f points\n",
		       threshold, d->max_growth);
	else
		printf("Nothing grew past the threshold of %.2f points\n", threshold);
}

static void print_side_json(const struct side *s)
{
	const struct prof_rd_value_type *t = &s->p->sample_types[s->r->type];

	printf("{\"file\":");
	cli_json_string(stdout, s->path);
	printf(",\"type\":");
	cli_json_string(stdout, t->type);
	printf(",\"unit\":");
	cli_json_string(stdout, t->unit);
	printf(",\"total\":%" PRId64 ",\"records\":%zu,\"duration_nanos\":%" PRId64 "}",
	       s->r->total, s->p->n_samples, s->p->duration_nanos);
}

static void print_json(const struct side *base, const struct side *new_side,
		       const struct prof_diff *d, int by, double threshold, size_t top)
{
	size_t i, n = d->n_rows < top ? d->n_rows : top;

	printf("{\"base\":");
	print_side_json(base);
	printf(",\"new\":");
	print_side_json(new_side);
	printf(",\"by\":\"%s\",\"threshold\":%.4f,\"max_growth\":%.4f,\"grew\":%s,"
	       "\"n_rows\":%zu,\"rows\":[",
	       cli_by_name(by), threshold, d->max_growth,
	       d->max_growth > threshold ? "true" : "false", d->n_rows);
	for (i = 0; i < n; i++) {
		const struct prof_diff_row *r = &d->rows[i];

		printf("%s\n{\"name\":", i ? "," : "");
		cli_json_string(stdout, r->name);
		printf(",\"file\":");
		cli_json_string(stdout, r->file);
		if (by == PROF_RPT_LINE)
			printf(",\"line\":%" PRId64, r->line);
		printf(",\"status\":\"%s\",\"d_cum\":%.4f,\"d_flat\":%.4f,"
		       "\"base_cum\":%.4f,\"new_cum\":%.4f,\"base_flat\":%.4f,\"new_flat\":%.4f}",
		       !r->in_base ? "new" : !r->in_new ? "gone" : "both",
		       r->d_cum, r->d_flat, r->base_cum, r->new_cum, r->base_flat, r->new_flat);
	}
	printf("]}\n");
}

struct diff_args {
	double threshold;
	int by;
	const char *type;
	unsigned long top;
	bool json;
};

static enum cli_opt_status opt_threshold(void *value, const char *arg)
{
	if (parse_threshold(arg, value) == 0)
		return CLI_OPT_TAKEN;
	cli_error("diff: invalid --threshold '%s': expected percentage points, 0..100", arg);
	return CLI_OPT_INVALID;
}

static const struct cli_command_line diff_line = {
	.name = "diff", .usage = diff_usage, .min_args = 2, .max_args = 2,
	.missing = "give two profiles, BASE and NEW (see 'cprof diff --help')",
};

/* Reads both profiles and picks one sample type both have.  Returns 0, or
 * the exit code once the error is reported. */
static int load_sides(const struct diff_args *da, struct side *base, struct side *new_side,
		      size_t *base_idx, size_t *new_idx)
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

/* Builds both reports and their difference.  Returns 0, or the exit code
 * once the error is reported. */
static int compare(const struct diff_args *da, struct side *base, struct side *new_side,
		   struct prof_diff **d)
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
	if (ret < 0) {
		cli_error("cannot compare '%s' with '%s': %s", new_side->path, base->path,
			  strerror(-ret));
		return CPROF_EXIT_FATAL;
	}
	return 0;
}

int cmd_diff(int argc, char **argv)
{
	struct diff_args da = { .threshold = 5, .by = PROF_RPT_FUNCTION };
	const struct cli_option opts[] = {
		CLI_OPTION_CALLBACK(0, "threshold", &da.threshold, opt_threshold),
		CLI_OPTION_CALLBACK(0, "by", &da.by, cli_opt_by_no_file),
		CLI_OPTION_STRING('t', "type", &da.type),
		CLI_OPTION_ULONG('n', "top", &da.top, 1, (unsigned long)-1),
		CLI_OPTION_BOOL(0, "json", &da.json),
		CLI_OPTION_END,
	};
	struct side base = { NULL, NULL, NULL }, new_side = { NULL, NULL, NULL };
	struct prof_diff *d = NULL;
	enum cli_parse_result pr;
	size_t top;
	int code, first;

	pr = cli_parse_options(&diff_line, opts, argc, argv, &first);
	if (pr != CLI_PARSE_OK)
		return cli_parse_exit_code(pr);
	base.path = argv[first];
	new_side.path = argv[first + 1];
	code = compare(&da, &base, &new_side, &d);
	if (code)
		goto out;
	top = da.top ? da.top : (size_t)-1;
	if (da.json)
		print_json(&base, &new_side, d, da.by, da.threshold, top);
	else
		print_text(&base, &new_side, d, da.by, da.threshold, top);
	code = d->max_growth > da.threshold ? DIFF_EXIT_GREW : CPROF_EXIT_OK;
out:
	prof_diff_free(d);
	prof_rpt_free(new_side.r);
	prof_rpt_free(base.r);
	prof_rd_free(new_side.p);
	prof_rd_free(base.p);
	return code;
}
