/* SPDX-License-Identifier: MIT */
/* What attach, record and serve say about CPython: the interpreter found,
 * the samples that got its frames, or why its layout was refused. */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/session.h"

void session_print_python(const struct cli_session *a, const struct sampler *s)
{
	const struct sampler_stats *st = sampler_get_stats(s);
	uint64_t fresh = st->samples - st->samples_reused;
	struct sampler_python py;

	if (a->python_off)
		return;
	sampler_python_info(s, &py);
	if (py.refused) {
		fprintf(stderr, "cprof: %s\n", py.refused);
		return;
	}
	if (!py.version)
		return;
	fprintf(stderr, "cprof: python %s (%s): Python frames in %llu of %llu samples; reading "
		"them took %.1f us a sample, within its stop or read%s\n", py.version, py.module,
		(unsigned long long)st->python_samples, (unsigned long long)st->samples,
		fresh ? (double)st->python_read_ns / 1e3 / (double)fresh : 0,
		st->source == SAMPLER_SOURCE_PERF && !st->python_samples ?
		" (--source perf: no stop, no Python frame)" : "");
}

void session_json_python(const struct cli_session *a, const struct sampler *s)
{
	const struct sampler_stats *st = sampler_get_stats(s);
	struct sampler_python py;

	memset(&py, 0, sizeof(py));
	if (!a->python_off)
		sampler_python_info(s, &py);
	fputs(", \"python\": ", stdout);
	if (py.version) {
		fputs("{\"version\": ", stdout);
		cli_json_string(stdout, py.version);
		fputs(", \"module\": ", stdout);
		cli_json_string(stdout, py.module);
		printf(", \"samples\": %llu, \"read_ns\": %llu}, \"python_error\": null",
		       (unsigned long long)st->python_samples,
		       (unsigned long long)st->python_read_ns);
		return;
	}
	fputs("null, \"python_error\": ", stdout);
	cli_json_string(stdout, py.refused);
}
