/* SPDX-License-Identifier: MIT */
/*
 * Unit test of profile/report.c on hand-made profiles: flat and cumulative
 * values with recursion and inlining, rows by function, line and file,
 * frames without a function, pprof's order, diffs, and value formatting.
 */

#include "config.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "profile/reader.h"
#include "profile/report.h"
#include "tests/tap.h"

enum { F_MAIN, F_REC, F_INL, F_WORK_A, F_WORK_B, F_N };

static const struct prof_rd_function funcs[F_N] = {
	[F_MAIN] = { "main", "main", "m.c", 1 },
	[F_REC] = { "rec", "rec", "./lib/r.c", 10 },
	[F_INL] = { "inl", "inl", "lib/r.c", 20 },
	[F_WORK_A] = { "work", "work", "a.c", 30 },
	[F_WORK_B] = { "work", "work", "b.c", 40 },
};

static const struct prof_rd_mapping libc = { 0x7f00, 0x8f00, 0, "/lib/libc.so.6", "" };

static const struct prof_rd_line lines[] = {
	{ &funcs[F_MAIN], 5 },		/* 0: main */
	{ &funcs[F_REC], 11 },		/* 1: rec */
	{ &funcs[F_INL], 21 },		/* 2: inl inlined into ... */
	{ &funcs[F_REC], 12 },		/* 3: ... rec */
	{ &funcs[F_WORK_A], 31 },	/* 4 */
	{ &funcs[F_WORK_B], 41 },	/* 5 */
};

static const struct prof_rd_location locs[] = {
	{ 0x100, NULL, &lines[0], 1 },	/* 0 main */
	{ 0x200, NULL, &lines[1], 1 },	/* 1 rec */
	{ 0x300, NULL, &lines[2], 2 },	/* 2 inl in rec */
	{ 0x400, NULL, &lines[4], 1 },	/* 3 work a.c */
	{ 0x500, NULL, &lines[5], 1 },	/* 4 work b.c */
	{ 0x7f10, &libc, NULL, 0 },	/* 5 address in libc */
	{ 0x9999, NULL, NULL, 0 },	/* 6 address nowhere */
};

static const struct prof_rd_location *const s0[] = { &locs[1], &locs[1], &locs[0] };
static const struct prof_rd_location *const s1[] = { &locs[2], &locs[1], &locs[0] };
static const struct prof_rd_location *const s2[] = { &locs[3], &locs[0] };
static const struct prof_rd_location *const s3[] = { &locs[4], &locs[0] };
static const struct prof_rd_location *const s4[] = { &locs[5], &locs[0] };
static const struct prof_rd_location *const s5[] = { &locs[6] };
static const int64_t v0[] = { 10 }, v1[] = { 20 }, v2[] = { 30 }, v3[] = { 15 }, v4[] = { 5 },
		     v5[] = { 1 };

static const struct prof_rd_sample samples[] = {
	{ s0, 3, v0, NULL, 0 },	/* rec <- rec <- main: recursion */
	{ s1, 3, v1, NULL, 0 },	/* inl (inlined in rec) <- rec <- main */
	{ s2, 2, v2, NULL, 0 },
	{ s3, 2, v3, NULL, 0 },
	{ s4, 2, v4, NULL, 0 },
	{ s5, 1, v5, NULL, 0 },
};

static const struct prof_rd_value_type cpu = { "cpu", "nanoseconds" };

static const struct prof_rd_profile profile = {
	.sample_types = &cpu, .n_sample_types = 1, .samples = samples,
	.n_samples = sizeof(samples) / sizeof(samples[0]),
};

static const struct prof_rpt_row *row(const struct prof_rpt *r, const char *name,
				      const char *file, int64_t line)
{
	size_t i;

	for (i = 0; i < r->n_rows; i++)
		if (strcmp(r->rows[i].name, name) == 0 && (!file || strcmp(r->rows[i].file, file) == 0) &&
		    r->rows[i].line == line)
			return &r->rows[i];
	return NULL;
}

static void test_by_function(void)
{
	const struct prof_rpt_row *x;
	struct prof_rpt *r = NULL;
	size_t i;
	bool sorted = true;
	int ret;

	ret = prof_rpt_build(&profile, 0, PROF_RPT_FUNCTION, &r);
	check(ret == 0 && r->total == 81, "function: built, total 81 (%lld)",
	      ret ? 0LL : (long long)r->total);
	if (ret)
		return;
	x = row(r, "work", NULL, 0);
	check(x && x->flat == 45 && x->cum == 45 && strcmp(x->file, "a.c") == 0 &&
	      !row(r, "work", "b.c", 0), "function: work of a.c and b.c is one row, flat 45");
	x = row(r, "rec", NULL, 0);
	check(x && x->flat == 10 && x->cum == 30,
	      "function: recursion counts a sample once in cum (rec flat 10, cum 30)");
	x = row(r, "inl", NULL, 0);
	check(x && x->flat == 20 && x->inlined && !x->partly_inlined, "function: inl is inlined");
	x = row(r, "main", NULL, 0);
	check(x && x->flat == 0 && x->cum == 80 && !x->inlined, "function: main cum 80");
	check(row(r, "[libc.so.6]", NULL, 0) && row(r, "[libc.so.6]", NULL, 0)->flat == 5,
	      "function: an address in a mapping is [libc.so.6]");
	check(row(r, "<unknown>", NULL, 0) && row(r, "<unknown>", NULL, 0)->flat == 1,
	      "function: an address nowhere is <unknown>");
	for (i = 1; i < r->n_rows; i++)
		if (r->rows[i - 1].flat < r->rows[i].flat ||
		    (r->rows[i - 1].flat == r->rows[i].flat &&
		     strcmp(r->rows[i - 1].name, r->rows[i].name) > 0))
			sorted = false;
	check(sorted && strcmp(r->rows[0].name, "work") == 0,
	      "function: rows by flat, then name, as pprof -top");
	prof_rpt_free(r);
}

static void test_by_line_and_file(void)
{
	struct prof_rpt *r = NULL;
	int ret;

	ret = prof_rpt_build(&profile, 0, PROF_RPT_LINE, &r);
	check(ret == 0 && row(r, "rec", "lib/r.c", 11) && row(r, "rec", "lib/r.c", 12) &&
	      row(r, "work", "a.c", 31) && row(r, "work", "b.c", 41),
	      "line: rows by name, file and line; ./lib/r.c cleaned to lib/r.c");
	prof_rpt_free(r);
	r = NULL;
	ret = prof_rpt_build(&profile, 0, PROF_RPT_FILE, &r);
	check(ret == 0 && row(r, "lib/r.c", NULL, 0) && row(r, "lib/r.c", NULL, 0)->cum == 30 &&
	      row(r, "a.c", NULL, 0) && row(r, "b.c", NULL, 0),
	      "file: ./lib/r.c and lib/r.c are one file, cum 30");
	prof_rpt_free(r);
	check(prof_rpt_build(&profile, 1, PROF_RPT_FUNCTION, &r) == -EINVAL,
	      "a sample type out of range is -EINVAL");
}

static const struct prof_rd_location *const t0[] = { &locs[4], &locs[0] };
static const struct prof_rd_location *const t1[] = { &locs[1], &locs[0] };
static const int64_t w0[] = { 60 }, w1[] = { 40 };
static const struct prof_rd_sample new_samples[] = {
	{ t0, 2, w0, NULL, 0 },	/* work, of b.c only */
	{ t1, 2, w1, NULL, 0 },	/* rec */
};
static const struct prof_rd_profile new_profile = {
	.sample_types = &cpu, .n_sample_types = 1, .samples = new_samples, .n_samples = 2,
};

static const struct prof_diff_row *drow(const struct prof_diff *d, const char *name)
{
	size_t i;

	for (i = 0; i < d->n_rows; i++)
		if (strcmp(d->rows[i].name, name) == 0)
			return &d->rows[i];
	return NULL;
}

static bool near(double a, double b)
{
	return fabs(a - b) < 1e-9;
}

static void test_diff(void)
{
	struct prof_rpt *a = NULL, *b = NULL, *l = NULL;
	struct prof_diff *d = NULL;
	const struct prof_diff_row *x;
	int ret;

	ret = prof_rpt_build(&profile, 0, PROF_RPT_FUNCTION, &a);
	if (!ret)
		ret = prof_rpt_build(&new_profile, 0, PROF_RPT_FUNCTION, &b);
	if (!ret)
		ret = prof_diff_build(a, b, &d);
	check(ret == 0, "diff: built (%d)", ret);
	if (ret)
		goto out;
	x = drow(d, "work");
	/* base: 45 of 81; new: 60 of 100, though of b.c only: matched by name */
	check(x && x->in_base && x->in_new && near(x->base_flat, 100.0 * 45 / 81) &&
	      near(x->new_flat, 60.0) && near(x->d_flat, 60.0 - 100.0 * 45 / 81),
	      "diff: work matched by name across files, flat share %.2f -> %.2f", x ? x->base_flat : 0,
	      x ? x->new_flat : 0);
	x = drow(d, "inl");
	check(x && x->in_base && !x->in_new && near(x->d_cum, -100.0 * 20 / 81),
	      "diff: a function gone shows in base only");
	/* work +4.44, rec +2.96, main +1.23 points of cumulative share */
	check(near(d->max_growth, 60.0 - 100.0 * 45 / 81) && drow(d, "rec")->d_cum > 0,
	      "diff: max_growth is the largest growth of a cumulative share (work's)");
	check(fabs(d->rows[0].d_cum) >= fabs(d->rows[d->n_rows - 1].d_cum),
	      "diff: rows by the size of the change");
	ret = prof_rpt_build(&profile, 0, PROF_RPT_LINE, &l);
	prof_diff_free(d);
	d = NULL;
	check(ret == 0 && prof_diff_build(a, l, &d) == -EINVAL,
	      "diff: reports aggregated differently are -EINVAL");
out:
	prof_diff_free(d);
	prof_rpt_free(a);
	prof_rpt_free(b);
	prof_rpt_free(l);
}

static void test_format(void)
{
	static const struct {
		int64_t v;
		const char *unit, *want;
	} cases[] = {
		{ 1500000000, "nanoseconds", "1.50s" },
		{ 310000000, "nanoseconds", "310ms" },
		{ 0, "nanoseconds", "0" },
		{ -2000, "nanoseconds", "-2us" },
		{ 1572864, "bytes", "1.50MB" },
		{ 42, "count", "42" },
	};
	char buf[64];
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		prof_rpt_format_value(buf, sizeof(buf), cases[i].v, cases[i].unit);
		check(strcmp(buf, cases[i].want) == 0, "format: %lld %s is %s (%s)",
		      (long long)cases[i].v, cases[i].unit, cases[i].want, buf);
	}
}

int main(void)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	test_by_function();
	test_by_line_and_file();
	test_diff();
	test_format();
	return tap_done();
}
