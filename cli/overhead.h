/* SPDX-License-Identifier: MIT */
/* cprof overhead's measurements, shared by its runner (overhead.c) and printers (overhead_print.c). */
#ifndef CPROF_CLI_OVERHEAD_H
#define CPROF_CLI_OVERHEAD_H

#include <limits.h>
#include <stdbool.h>

#include "cli/cli.h"

#define MAX_RUNS 100
#define N_VARIANTS 5

/* What one run yields; the record figures only for the ptrace variants. */
enum metric {
	M_WALL,		/* fork to reap (ptrace: to the profile written) */
	M_CPU,		/* the command's user + system time */
	M_CPU_TOTAL,	/* the command's and the profiler's */
	M_CPROF_CPU,	/* cprof's sampling thread */
	M_SAMPLES,
	M_STOPS,
	M_STOP_P50,
	M_STOP_P99,
	M_STOP_MAX,
	M_STOPPED_FRACTION,
	M_SESSION,	/* attach to the command's exit, as record saw it */
	M_COUNT,
};

enum sampler_kind { KIND_NONE, KIND_PTRACE, KIND_INPROC };

struct overhead_variant {
	const char *name;
	enum sampler_kind kind;
	enum sampler_stop stop;		/* KIND_PTRACE */
	enum sampler_source source;	/* KIND_PTRACE */
};

/* In the order they run in every round. */
extern const struct overhead_variant overhead_variants[N_VARIANTS];

struct result {
	unsigned runs;		/* completed with status 0 */
	const char *skipped;	/* not measured at all: why ("no libcprof-inproc.so") */
	double v[M_COUNT][MAX_RUNS];
};

struct overhead {
	struct cli_session s;	/* hz, mode, quiet, json */
	unsigned long runs;
	char **cmd;
	char dir[PATH_MAX];	/* temporary profiles and captured output */
	char profile[PATH_MAX + 16];
	char out_path[PATH_MAX + 16];
	char hz[16];
	int null_fd;		/* /dev/null: the command's standard input */
	struct result res[N_VARIANTS];
	bool complete;
};

/* One line on stderr after each round. */
void overhead_print_progress(const struct overhead *o, unsigned round);
/* The results as one JSON object, or as a table, on stdout. */
void overhead_print_json(const struct overhead *o);
void overhead_print_table(const struct overhead *o);
/* Whether any variant has a run to print. */
bool overhead_measured_any(const struct overhead *o);

#endif
