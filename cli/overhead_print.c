/* SPDX-License-Identifier: MIT */
/* cprof overhead's results: medians, slowdowns, as a table or one JSON object. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/overhead.h"

struct summary {
	double median, min, max;
};

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* Median (mean of the middle two for an even count), min and max; n >= 1. */
static struct summary summarize(const double *v, unsigned n)
{
	double sorted[MAX_RUNS];
	struct summary s;

	memcpy(sorted, v, n * sizeof(*v));
	qsort(sorted, n, sizeof(*sorted), cmp_double);
	s.min = sorted[0];
	s.max = sorted[n - 1];
	s.median = n % 2 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
	return s;
}

static double median_of(const struct result *r, enum metric m)
{
	return summarize(r->v[m], r->runs).median;
}

/* The wall-time ratio to the unprofiled median; 0 when there is none. */
static double slowdown(const struct overhead *o, const struct result *r)
{
	const struct result *base = &o->res[0];
	double b;

	if (!r->runs || !base->runs)
		return 0;
	if (r == base)
		return 1.0;
	b = median_of(base, M_WALL);
	return b > 0 ? median_of(r, M_WALL) / b : 0;
}

void overhead_print_progress(const struct overhead *o, unsigned round)
{
	const char *sep = "";
	size_t i;

	fprintf(stderr, "cprof: overhead: round %u/%lu:", round + 1, o->runs);
	for (i = 0; i < N_VARIANTS; i++) {
		const struct result *r = &o->res[i];

		if (r->runs == round + 1) {
			fprintf(stderr, "%s %s %.3f s", sep, overhead_variants[i].name,
				r->v[M_WALL][round] / 1e9);
			sep = ",";
		}
	}
	fputc('\n', stderr);
}

static void json_summary(const char *key, const struct result *r, enum metric m)
{
	struct summary s = summarize(r->v[m], r->runs);

	printf(", \"%s\": {\"median\": %.0f, \"min\": %.0f, \"max\": %.0f}", key, s.median, s.min,
	       s.max);
}

void overhead_print_json(const struct overhead *o)
{
	size_t i;

	printf("{\"cmd\": [");
	for (i = 0; o->cmd[i]; i++) {
		if (i)
			printf(", ");
		cli_json_string(stdout, o->cmd[i]);
	}
	printf("], \"hz\": %u, \"mode\": \"%s\", \"runs\": %lu, \"nproc\": %ld, "
	       "\"complete\": %s, \"variants\": [",
	       o->s.hz, o->s.mode == SAMPLER_WALL ? "wall" : "cpu", o->runs,
	       sysconf(_SC_NPROCESSORS_ONLN), o->complete ? "true" : "false");
	for (i = 0; i < N_VARIANTS; i++) {
		const struct result *r = &o->res[i];

		printf("%s{\"name\": \"%s\", \"runs\": %u", i ? ", " : "", overhead_variants[i].name,
		       r->runs);
		if (!r->runs) {
			printf(", \"wall_ns\": null, \"cpu_ns\": null, \"slowdown\": null}");
			continue;
		}
		json_summary("wall_ns", r, M_WALL);
		json_summary("cpu_ns", r, M_CPU);
		json_summary("cpu_total_ns", r, M_CPU_TOTAL);
		if (o->res[0].runs)
			printf(", \"slowdown\": %.6f", slowdown(o, r));
		else
			printf(", \"slowdown\": null");
		if (overhead_variants[i].kind == KIND_PTRACE)
			printf(", \"samples\": %.0f, \"stops\": %.0f, \"stop_ns\": {\"p50\": %.0f, "
			       "\"p99\": %.0f, \"max\": %.0f}, \"stopped_fraction_max\": %.6f, "
			       "\"cprof_cpu_ns\": %.0f, \"session_ns\": %.0f",
			       median_of(r, M_SAMPLES), median_of(r, M_STOPS),
			       median_of(r, M_STOP_P50), median_of(r, M_STOP_P99),
			       median_of(r, M_STOP_MAX), median_of(r, M_STOPPED_FRACTION),
			       median_of(r, M_CPROF_CPU), median_of(r, M_SESSION));
		printf("}");
	}
	printf("]}\n");
}

/* "median (min..max)" in seconds. */
static void seconds_cell(char *buf, size_t size, const struct result *r, enum metric m)
{
	struct summary s = summarize(r->v[m], r->runs);

	snprintf(buf, size, "%.3f (%.3f..%.3f)", s.median / 1e9, s.min / 1e9, s.max / 1e9);
}

void overhead_print_table(const struct overhead *o)
{
	char wall[64], cpu[64], slow[32], stop[64], frac[16];
	size_t i;

	printf("cprof overhead:");
	for (i = 0; o->cmd[i]; i++)
		printf(" %s", o->cmd[i]);
	printf("; -F %u, %s mode, %lu runs, %ld CPUs\n", o->s.hz,
	       o->s.mode == SAMPLER_WALL ? "wall" : "cpu", o->runs, sysconf(_SC_NPROCESSORS_ONLN));
	printf("%-15s %4s  %-24s  %-24s  %-14s  %-20s  %s\n", "variant", "runs",
	       "wall s median (min..max)", "CPU s median (min..max)", "slowdown",
	       "stop us p50/p99/max", "stopped max");
	for (i = 0; i < N_VARIANTS; i++) {
		const struct result *r = &o->res[i];
		double x = slowdown(o, r);

		if (!r->runs) {
			printf("%-15s %4u  not measured%s%s%s\n", overhead_variants[i].name, 0u,
			       r->skipped ? " (" : "", r->skipped ? r->skipped : "", r->skipped ? ")" : "");
			continue;
		}
		seconds_cell(wall, sizeof(wall), r, M_WALL);
		seconds_cell(cpu, sizeof(cpu), r, M_CPU);
		if (x > 0)
			snprintf(slow, sizeof(slow), "x%.3f %+.1f%%", x, (x - 1) * 100);
		else
			snprintf(slow, sizeof(slow), "-");
		snprintf(stop, sizeof(stop), "-");
		snprintf(frac, sizeof(frac), "-");
		if (overhead_variants[i].kind == KIND_PTRACE) {
			snprintf(stop, sizeof(stop), "%.0f/%.0f/%.0f", median_of(r, M_STOP_P50) / 1e3,
				 median_of(r, M_STOP_P99) / 1e3, median_of(r, M_STOP_MAX) / 1e3);
			snprintf(frac, sizeof(frac), "%.2f%%", 100 * median_of(r, M_STOPPED_FRACTION));
		}
		printf("%-15s %4u  %-24s  %-24s  %-14s  %-20s  %s\n", overhead_variants[i].name, r->runs,
		       wall, cpu, slow, stop, frac);
	}
	printf("CPU is the command's user+system time (inproc: the sampler included); stop "
	       "figures are medians over runs.\n");
}

bool overhead_measured_any(const struct overhead *o)
{
	size_t i;

	for (i = 0; i < N_VARIANTS; i++)
		if (o->res[i].runs)
			return true;
	return false;
}

