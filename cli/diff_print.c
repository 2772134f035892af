/* SPDX-License-Identifier: MIT */
/* cprof diff's output: a text table, one JSON object, or a markdown summary. */
#include "config.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/diff.h"

/* A change in points: "+12.34", "-0.50", "0.00" (never "-0.00"). */
static void fmt_change(char *buf, size_t size, double d)
{
	if (fabs(d) < 0.005)
		snprintf(buf, size, "0.00");
	else
		snprintf(buf, size, "%+.2f", d);
}

static void fmt_p(char *buf, size_t size, const struct diff_entry *e)
{
	if (!e->tested)
		snprintf(buf, size, "-");
	else if (e->sig.p_value < 1e-4)
		snprintf(buf, size, "<0.0001");
	else
		snprintf(buf, size, "%.4f", e->sig.p_value);
}

static void fmt_margin(char *buf, size_t size, const struct diff_entry *e)
{
	if (e->tested)
		snprintf(buf, size, "%.2f", e->sig.margin);
	else
		snprintf(buf, size, "-");
}

static const char *verdict(const struct diff_args *da, const struct diff_entry *e)
{
	if (e->regression)
		return "GREW";
	if (e->significant)
		return "shrank";
	if (fabs(e->change) > da->threshold)
		return "noise";
	return "-";
}

static void row_label(char *buf, size_t size, int by, const struct prof_diff_row *r)
{
	const char *mark = !r->in_base ? " (new)" : !r->in_new ? " (gone)" : "";

	if (by == PROF_RPT_LINE && *r->file)
		snprintf(buf, size, "%s %s:%" PRId64 "%s", r->name, r->file, r->line, mark);
	else
		snprintf(buf, size, "%s%s", r->name, mark);
}

static const char *shares_name(const struct diff_args *da)
{
	return da->flat ? "flat" : "cumulative";
}

static void print_side_text(const char *what, const struct diff_side *s)
{
	const struct prof_rd_value_type *t = &s->p->sample_types[s->r->type];
	char v[64];

	prof_rpt_format_value(v, sizeof(v), s->r->total, t->unit);
	printf("%s %s: %s total %s in %zu records", what, s->path, t->type, v, s->p->n_samples);
	if (s->samples)
		printf(", %" PRId64 " samples", s->samples);
	putchar('\n');
}

static void print_rows_text(const struct diff_args *da, const struct diff_result *res)
{
	char c1[32], c2[32], m[32], p[32], label[4096];
	size_t i, n = da->top && da->top < res->n ? da->top : res->n;

	printf("%8s %8s %8s %8s %9s %9s %7s %8s %-6s  %s\n", "cum", "flat", "base cum",
	       "new cum", "base flat", "new flat", "margin", "p-value", "",
	       da->by == PROF_RPT_LINE ? "line" : "function");
	for (i = 0; i < n; i++) {
		const struct diff_entry *e = &res->entries[i];
		const struct prof_diff_row *r = e->row;

		fmt_change(c1, sizeof(c1), r->d_cum);
		fmt_change(c2, sizeof(c2), r->d_flat);
		fmt_margin(m, sizeof(m), e);
		fmt_p(p, sizeof(p), e);
		row_label(label, sizeof(label), da->by, r);
		printf("%8s %8s %7.2f%% %7.2f%% %8.2f%% %8.2f%% %7s %8s %-6s  %s\n", c1, c2,
		       r->base_cum, r->new_cum, r->base_flat, r->new_flat, m, p, verdict(da, e),
		       label);
	}
	if (n < res->n)
		printf("(%zu more rows; --top to show them)\n", res->n - n);
}

/* The growths past the threshold that the noise test let through. */
static void print_noise_text(const struct diff_args *da, const struct diff_result *res)
{
	size_t i;

	for (i = 0; i < res->n; i++) {
		const struct diff_entry *e = &res->entries[i];

		if (e->change > da->threshold && !e->significant)
			printf("Within the noise: %s grew %+.2f points, under its margin of %.2f "
			       "(p = %.4f)\n", e->row->name, e->change, e->sig.margin,
			       e->sig.p_value);
	}
}

static void print_power_text(const struct diff_args *da, const struct diff_side *base,
			     const struct diff_side *new_side, const struct diff_result *res)
{
	if (!res->tested) {
		printf("Some rows could not be tested for noise: the threshold alone judged "
		       "them\n");
		return;
	}
	if (res->underpowered)
		printf("Too few samples to detect a growth of %.2f points at %g%% confidence: "
		       "BASE has %" PRId64 ", NEW %" PRId64 "; a function near %.0f%% needs about "
		       "%.0f in each (to be found 4 runs in 5): record longer or at a higher -F\n",
		       da->threshold, 100 * da->confidence, base->samples, new_side->samples,
		       res->needed_share, res->needed);
}

void diff_print_text(const struct diff_args *da, const struct diff_side *base,
		     const struct diff_side *new_side, const struct diff_result *res)
{
	size_t i;

	print_side_text("Base:", base);
	print_side_text("New: ", new_side);
	printf("Changes of each %s's share of its profile's total, in percentage points; "
	       "margin: the change of the %s share that sampling noise stays under at %g%% "
	       "confidence\n", da->by == PROF_RPT_LINE ? "line" : "function", shares_name(da),
	       100 * da->confidence);
	print_rows_text(da, res);
	if (res->n_regressions) {
		printf("Grew past the threshold of %.2f points beyond the noise (%s shares, %g%% "
		       "confidence):", da->threshold, shares_name(da), 100 * da->confidence);
		for (i = 0; i < res->n; i++)
			if (res->entries[i].regression)
				printf(" %s %+.2f", res->entries[i].row->name,
				       res->entries[i].change);
		putchar('\n');
	} else {
		printf("Nothing grew past the threshold of %.2f points beyond the noise (%s "
		       "shares, %g%% confidence)\n", da->threshold, shares_name(da),
		       100 * da->confidence);
	}
	print_noise_text(da, res);
	print_power_text(da, base, new_side, res);
}

static void print_side_json(const struct diff_side *s)
{
	const struct prof_rd_value_type *t = &s->p->sample_types[s->r->type];

	printf("{\"file\":");
	cli_json_string(stdout, s->path);
	printf(",\"type\":");
	cli_json_string(stdout, t->type);
	printf(",\"unit\":");
	cli_json_string(stdout, t->unit);
	printf(",\"total\":%" PRId64 ",\"records\":%zu,\"samples\":%" PRId64
	       ",\"duration_nanos\":%" PRId64 "}",
	       s->r->total, s->p->n_samples, s->samples, s->p->duration_nanos);
}

static void print_entry_json(const struct diff_args *da, const struct diff_entry *e)
{
	const struct prof_diff_row *r = e->row;

	printf("{\"name\":");
	cli_json_string(stdout, r->name);
	printf(",\"file\":");
	cli_json_string(stdout, r->file);
	if (da->by == PROF_RPT_LINE)
		printf(",\"line\":%" PRId64, r->line);
	printf(",\"status\":\"%s\",\"d_cum\":%.4f,\"d_flat\":%.4f,"
	       "\"base_cum\":%.4f,\"new_cum\":%.4f,\"base_flat\":%.4f,\"new_flat\":%.4f",
	       !r->in_base ? "new" : !r->in_new ? "gone" : "both",
	       r->d_cum, r->d_flat, r->base_cum, r->new_cum, r->base_flat, r->new_flat);
	if (e->tested)
		printf(",\"margin\":%.4f,\"p_value\":%.6g", e->sig.margin, e->sig.p_value);
	else
		printf(",\"margin\":null,\"p_value\":null");
	printf(",\"significant\":%s,\"regression\":%s}", e->significant ? "true" : "false",
	       e->regression ? "true" : "false");
}

static double max_growth(const struct diff_result *res)
{
	double m = 0;
	size_t i;

	for (i = 0; i < res->n; i++)
		if (res->entries[i].change > m)
			m = res->entries[i].change;
	return m;
}

void diff_print_json(const struct diff_args *da, const struct diff_side *base,
		     const struct diff_side *new_side, const struct prof_diff *d,
		     const struct diff_result *res)
{
	size_t i, n = da->top && da->top < res->n ? da->top : res->n;

	(void)d;
	printf("{\"base\":");
	print_side_json(base);
	printf(",\"new\":");
	print_side_json(new_side);
	printf(",\"by\":\"%s\",\"shares\":\"%s\",\"threshold\":%.4f,\"confidence\":%.6g,"
	       "\"focus\":", cli_by_name(da->by), da->flat ? "flat" : "cum", da->threshold,
	       da->confidence);
	cli_json_string(stdout, da->focus);
	printf(",\"ignore\":");
	cli_json_string(stdout, da->ignore);
	printf(",\"tested\":%s,\"samples_needed\":%.0f,\"underpowered\":%s,"
	       "\"max_growth\":%.4f,\"significant\":%zu,\"regressions\":%zu,\"grew\":%s,"
	       "\"n_rows\":%zu,\"rows\":[",
	       res->tested ? "true" : "false", res->needed, res->underpowered ? "true" : "false",
	       max_growth(res), res->n_significant, res->n_regressions,
	       res->n_regressions ? "true" : "false", res->n);
	for (i = 0; i < n; i++) {
		printf("%s\n", i ? "," : "");
		print_entry_json(da, &res->entries[i]);
	}
	printf("]}\n");
}

/* A table cell: '|' would end it, and a backquote the code span. */
static void md_code(const char *s)
{
	putchar('`');
	for (; *s; s++) {
		if (*s == '|')
			fputs("\\|", stdout);
		else if (*s == '`')
			putchar('\'');
		else if (*s != '\n' && *s != '\r')
			putchar(*s);
	}
	putchar('`');
}

static void print_md_row(const struct diff_args *da, const struct diff_entry *e)
{
	const struct prof_diff_row *r = e->row;
	char c[32], m[32], p[32];

	fmt_change(c, sizeof(c), e->change);
	fmt_margin(m, sizeof(m), e);
	fmt_p(p, sizeof(p), e);
	printf("| %s | ", e->regression ? "grew" : "shrank");
	md_code(r->name);
	if (da->by == PROF_RPT_LINE && *r->file)
		printf(" %s:%" PRId64, r->file, r->line);
	printf(" | %.2f%% | %.2f%% | %s | %s%s | %s |\n", da->flat ? r->base_flat : r->base_cum,
	       da->flat ? r->new_flat : r->new_cum, c, e->tested ? "±" : "", m, p);
}

void diff_print_markdown(const struct diff_args *da, const struct diff_side *base,
			 const struct diff_side *new_side, const struct diff_result *res)
{
	size_t i, n = 0;

	printf("### cprof diff: `%s` → `%s`\n\n", base->path, new_side->path);
	printf("%zu significant change%s, %zu of them growth (threshold %.2f points of the %s "
	       "share, %g%% confidence; %" PRId64 " and %" PRId64 " samples)\n\n",
	       res->n_significant, res->n_significant == 1 ? "" : "s", res->n_regressions,
	       da->threshold, shares_name(da), 100 * da->confidence, base->samples,
	       new_side->samples);
	if (res->n_significant) {
		printf("| | %s | base | new | change (points) | noise margin | p-value |\n",
		       da->by == PROF_RPT_LINE ? "line" : "function");
		printf("|---|---|---:|---:|---:|---:|---:|\n");
		for (i = 0; i < res->n && (!da->top || n < da->top); i++) {
			if (!res->entries[i].significant)
				continue;
			print_md_row(da, &res->entries[i]);
			n++;
		}
		putchar('\n');
	}
	if (!res->tested)
		printf("> Some rows could not be tested for noise: the threshold alone judged them.\n");
	else if (res->underpowered)
		printf("> Too few samples to detect a growth of %.2f points: a function near %.0f%% "
		       "needs about %.0f samples in each profile.\n", da->threshold,
		       res->needed_share, res->needed);
}
