/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer harness: arbitrary bytes as a pprof file, through the reader
 * (gzip or plain protobuf, ids resolved), then what cprof does with a
 * profile it read: reports of every sample type by function, line and
 * file, a diff of each report with itself, and both flame graphs.  Checks
 * the contracts of reader.h and report.h on what reads: every id resolved
 * to an object, and a report compared with itself shows no change.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profile/flame.h"
#include "profile/reader.h"
#include "profile/report.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static FILE *devnull;

/* Every pointer the reader promises is there. */
static void check_resolved(const struct prof_rd_profile *p)
{
	size_t i, j, k;

	if (p->default_type >= p->n_sample_types)
		abort();
	for (i = 0; i < p->n_samples; i++) {
		const struct prof_rd_sample *s = &p->samples[i];

		for (j = 0; j < s->n_locations; j++) {
			const struct prof_rd_location *l = s->locations[j];

			for (k = 0; k < l->n_lines; k++)
				if (!l->lines[k].function || !l->lines[k].function->name)
					abort();
		}
		for (j = 0; j < s->n_labels; j++)
			if (!s->labels[j].key)
				abort();
	}
}

static void report_and_diff(const struct prof_rd_profile *p, size_t type, enum prof_rpt_by by)
{
	struct prof_rpt *r = NULL;
	struct prof_diff *d = NULL;
	size_t i;

	if (prof_rpt_build(p, type, by, &r) < 0)
		return;
	if (prof_diff_build(r, r, &d) == 0) {
		for (i = 0; i < d->n_rows; i++)
			if (d->rows[i].d_flat != 0 || d->rows[i].d_cum != 0)
				abort();	/* a report differs from itself */
		prof_diff_free(d);
	}
	prof_rpt_free(r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct prof_rd_profile *p = NULL;
	size_t t;

	if (!devnull)
		devnull = fopen("/dev/null", "w");
	if (prof_rd_buffer(data, size, &p) < 0)
		return 0;
	check_resolved(p);
	for (t = 0; t < p->n_sample_types && t < 4; t++) {
		report_and_diff(p, t, PROF_RPT_FUNCTION);
		report_and_diff(p, t, PROF_RPT_LINE);
		report_and_diff(p, t, PROF_RPT_FILE);
		if (devnull) {
			prof_flame_collapsed(p, t, PROF_FLAME_THREADS, devnull);
			prof_flame_svg(p, t, NULL, 0, devnull);
		}
	}
	prof_rd_free(p);
	return 0;
}
