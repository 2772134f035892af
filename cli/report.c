/* SPDX-License-Identifier: MIT */
/* cprof report: the flat/cumulative table of any pprof profile, per function, line or file. */
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

static void report_usage(FILE *f)
{
	fprintf(f,
		"usage: cprof report FILE [--top N] [--by function|line|file] [--type TYPE] [--json]\n"
		"\n"
		"Prints the flat and cumulative value per function (as 'go tool pprof -top')\n"
		"of a pprof profile: cprof's, Go's, or any other; gzipped or not; - for stdin.\n"
		"\n"
		"  -n, --top N            rows to show (default 20; all with --json)\n"
		"      --by function|line|file\n"
		"                         aggregate per function (default), per source line\n"
		"                         (function file:line) or per source file\n"
		"  -t, --type TYPE        sample type to show, e.g. cpu, samples, wall\n"
		"                         (default: the profile's default, else its last)\n"
		"      --json             one JSON object on stdout\n"
		"  -h, --help             this help\n");
}

static const struct {
	const char *name;
	enum prof_rpt_by by;
} by_names[] = {
	{ "function", PROF_RPT_FUNCTION },
	{ "line", PROF_RPT_LINE },
	{ "file", PROF_RPT_FILE },
};

static enum cli_opt_status parse_by(const char *arg, bool allow_file, int *by)
{
	size_t i;

	for (i = 0; i < sizeof(by_names) / sizeof(by_names[0]); i++) {
		if (strcmp(arg, by_names[i].name) == 0 &&
		    (allow_file || by_names[i].by != PROF_RPT_FILE)) {
			*by = by_names[i].by;
			return CLI_OPT_TAKEN;
		}
	}
	cli_error("invalid --by '%s': expected function, line%s", arg,
		  allow_file ? " or file" : "");
	return CLI_OPT_INVALID;
}

enum cli_opt_status cli_opt_by(void *value, const char *arg)
{
	return parse_by(arg, true, value);
}

enum cli_opt_status cli_opt_by_no_file(void *value, const char *arg)
{
	return parse_by(arg, false, value);
}

const char *cli_by_name(int by)
{
	size_t i;

	for (i = 0; i < sizeof(by_names) / sizeof(by_names[0]); i++)
		if ((int)by_names[i].by == by)
			return by_names[i].name;
	return "?";
}

int cli_read_profile(const char *path, struct prof_rd_profile **out)
{
	const char *why = NULL;
	int ret;

	ret = prof_rd_file_why(path, out, &why);
	if (ret == -EBADMSG) {
		cli_error("cannot read profile '%s': not a pprof profile (%s)", path,
			  why ? why : "bad data");
		return ret;
	}
	if (ret == -EFBIG) {
		cli_error("cannot read profile '%s': too large (%s)", path,
			  why ? why : strerror(-ret));
		return ret;
	}
	if (ret == -EISDIR) {
		cli_error("cannot read profile '%s': %s (give a profile file)", path,
			  strerror(-ret));
		return ret;
	}
	if (ret < 0)
		cli_error("cannot read profile '%s': %s", path, strerror(-ret));
	return ret;
}

int cli_pick_type(const char *cmd, const struct prof_rd_profile *p, const char *path,
		  const char *type, size_t *idx)
{
	char have[256];
	size_t i, n = 0;
	int k;

	if (!type) {
		*idx = p->default_type;
		return 0;
	}
	k = prof_rd_find_type(p, type);
	if (k >= 0) {
		*idx = (size_t)k;
		return 0;
	}
	have[0] = '\0';
	for (i = 0; i < p->n_sample_types && n < sizeof(have); i++)
		n += (size_t)snprintf(have + n, sizeof(have) - n, "%s%s", i ? ", " : "",
				      p->sample_types[i].type);
	cli_error("%s: no sample type '%s' in '%s' (it has: %s)", cmd, type, path, have);
	return -ENOENT;
}

/* pprof's percentages: "  100%" near 100, two decimals from 1%, else %.2g. */
static void fmt_pct(char *buf, size_t size, int64_t v, int64_t total)
{
	double r = total ? fabs((double)v / (double)total) * 100 : 0;

	if (r >= 99.95 && r <= 100.05)
		snprintf(buf, size, "100%%");
	else if (r >= 1.0)
		snprintf(buf, size, "%.2f%%", r);
	else
		snprintf(buf, size, "%.2g%%", r);
}

/* What a row is called in the table: pprof's "name file:line" for lines. */
static void row_label(char *buf, size_t size, const struct prof_rpt *r,
		      const struct prof_rpt_row *row)
{
	const char *inl = row->inlined ? " (inline)" : row->partly_inlined ? " (partial-inline)" : "";

	if (r->by == PROF_RPT_LINE && *row->file)
		snprintf(buf, size, "%s %s:%" PRId64 "%s", row->name, row->file, row->line, inl);
	else
		snprintf(buf, size, "%s%s", row->name, inl);
}

/* Sum of the "samples" count type when there is one, else the records. */
static int64_t sample_count(const struct prof_rd_profile *p)
{
	int k = prof_rd_find_type(p, "samples");
	int64_t n = 0;
	size_t i;

	if (k < 0)
		return (int64_t)p->n_samples;
	for (i = 0; i < p->n_samples; i++)
		n += p->samples[i].values[k];
	return n;
}

static void print_text(const char *path, const struct prof_rd_profile *p,
		       const struct prof_rpt *r, size_t top)
{
	const struct prof_rd_value_type *t = &p->sample_types[r->type];
	char v1[64], v2[64], p1[32], p2[32], p3[32], label[4096];
	const char *c, *nl;
	int64_t sum = 0, shown_flat = 0;
	size_t i, n = r->n_rows < top ? r->n_rows : top;

	printf("File: %s\n", path);
	printf("Sample types:");
	for (i = 0; i < p->n_sample_types; i++)
		printf(" %s/%s", p->sample_types[i].type, p->sample_types[i].unit);
	printf("\nType: %s (%s)\n", t->type, t->unit);
	if (p->duration_nanos > 0) {
		prof_rpt_format_value(v1, sizeof(v1), p->duration_nanos, "nanoseconds");
		printf("Duration: %s, ", v1);
	}
	prof_rpt_format_value(v2, sizeof(v2), r->total, t->unit);
	printf("Total: %s", v2);
	/* As pprof: how many CPUs' worth of the duration the total is. */
	if (p->duration_nanos > 0 && strcmp(t->unit, "nanoseconds") == 0)
		printf(" (%.2f%% of the duration)",
		       100.0 * (double)r->total / (double)p->duration_nanos);
	printf(", Samples: %" PRId64 " in %zu records\n", sample_count(p), p->n_samples);
	for (i = 0; i < p->n_comments; i++) {
		printf(i ? "         " : "Comments:");
		/* A comment may span lines (cprof's cost report does). */
		for (c = p->comments[i]; ; c = nl + 1) {
			nl = strchr(c, '\n');
			if (c != p->comments[i])
				printf("         ");
			printf(" %.*s\n", nl ? (int)(nl - c) : (int)strlen(c), c);
			if (!nl || !nl[1])
				break;
		}
	}
	for (i = 0; i < n; i++)
		shown_flat += r->rows[i].flat;
	prof_rpt_format_value(v1, sizeof(v1), shown_flat, t->unit);
	fmt_pct(p1, sizeof(p1), shown_flat, r->total);
	printf("Showing %zu of %zu %s%s, %s (%s) of %s total\n", n, r->n_rows,
	       cli_by_name((int)r->by), r->n_rows == 1 ? "" : "s", v1, p1, v2);
	printf("%10s %6s %6s %10s %6s\n", "flat", "flat%", "sum%", "cum", "cum%");
	for (i = 0; i < n; i++) {
		const struct prof_rpt_row *row = &r->rows[i];

		sum += row->flat;
		prof_rpt_format_value(v1, sizeof(v1), row->flat, t->unit);
		prof_rpt_format_value(v2, sizeof(v2), row->cum, t->unit);
		fmt_pct(p1, sizeof(p1), row->flat, r->total);
		fmt_pct(p2, sizeof(p2), sum, r->total);
		fmt_pct(p3, sizeof(p3), row->cum, r->total);
		row_label(label, sizeof(label), r, row);
		printf("%10s %6s %6s %10s %6s  %s\n", v1, p1, p2, v2, p3, label);
	}
}

static void print_json(const char *path, const struct prof_rd_profile *p,
		       const struct prof_rpt *r, size_t top)
{
	const struct prof_rd_value_type *t = &p->sample_types[r->type];
	size_t i, n = r->n_rows < top ? r->n_rows : top;

	printf("{\"file\":");
	cli_json_string(stdout, path);
	printf(",\"sample_types\":[");
	for (i = 0; i < p->n_sample_types; i++) {
		printf("%s{\"type\":", i ? "," : "");
		cli_json_string(stdout, p->sample_types[i].type);
		printf(",\"unit\":");
		cli_json_string(stdout, p->sample_types[i].unit);
		printf("}");
	}
	printf("],\"type\":");
	cli_json_string(stdout, t->type);
	printf(",\"unit\":");
	cli_json_string(stdout, t->unit);
	printf(",\"by\":\"%s\",\"time_nanos\":%" PRId64 ",\"duration_nanos\":%" PRId64
	       ",\"total\":%" PRId64 ",\"samples\":%" PRId64 ",\"records\":%zu,\"comments\":[",
	       cli_by_name((int)r->by), p->time_nanos, p->duration_nanos, r->total,
	       sample_count(p), p->n_samples);
	for (i = 0; i < p->n_comments; i++) {
		if (i)
			putchar(',');
		cli_json_string(stdout, p->comments[i]);
	}
	printf("],\"n_rows\":%zu,\"rows\":[", r->n_rows);
	for (i = 0; i < n; i++) {
		const struct prof_rpt_row *row = &r->rows[i];

		printf("%s\n{\"name\":", i ? "," : "");
		cli_json_string(stdout, row->name);
		printf(",\"file\":");
		cli_json_string(stdout, row->file);
		if (r->by == PROF_RPT_LINE)
			printf(",\"line\":%" PRId64, row->line);
		if (row->inlined || row->partly_inlined)
			printf(",\"inline\":\"%s\"", row->inlined ? "inline" : "partial-inline");
		printf(",\"flat\":%" PRId64 ",\"cum\":%" PRId64
		       ",\"flat_pct\":%.4f,\"cum_pct\":%.4f}",
		       row->flat, row->cum,
		       r->total ? 100.0 * (double)row->flat / (double)r->total : 0.0,
		       r->total ? 100.0 * (double)row->cum / (double)r->total : 0.0);
	}
	printf("]}\n");
}

static const struct cli_command_line report_line = {
	.name = "report", .usage = report_usage, .min_args = 1, .max_args = 1,
	.missing = "which profile? give its file (see 'cprof report --help')",
};

int cmd_report(int argc, char **argv)
{
	struct prof_rd_profile *p = NULL;
	struct prof_rpt *r = NULL;
	const char *type = NULL, *path;
	unsigned long top = 0;
	bool json = false;
	int by = PROF_RPT_FUNCTION;
	const struct cli_option opts[] = {
		CLI_OPTION_ULONG('n', "top", &top, 1, (unsigned long)-1),
		CLI_OPTION_CALLBACK(0, "by", &by, cli_opt_by),
		CLI_OPTION_STRING('t', "type", &type),
		CLI_OPTION_BOOL(0, "json", &json),
		CLI_OPTION_END,
	};
	enum cli_parse_result pr;
	int code, first, ret;
	size_t idx;

	pr = cli_parse_options(&report_line, opts, argc, argv, &first);
	if (pr != CLI_PARSE_OK)
		return cli_parse_exit_code(pr);
	path = argv[first];
	if (cli_read_profile(path, &p) < 0)
		return CPROF_EXIT_FATAL;
	if (cli_pick_type("report", p, path, type, &idx) < 0) {
		code = CPROF_EXIT_USAGE;
		goto out_profile;
	}
	ret = prof_rpt_build(p, idx, (enum prof_rpt_by)by, &r);
	if (ret < 0) {
		cli_error("cannot report on '%s': %s", path, strerror(-ret));
		code = CPROF_EXIT_FATAL;
		goto out_profile;
	}
	if (json)
		print_json(path, p, r, top ? top : (size_t)-1);
	else
		print_text(path, p, r, top ? top : 20);
	code = CPROF_EXIT_OK;
	prof_rpt_free(r);
out_profile:
	prof_rd_free(p);
	return code;
}
