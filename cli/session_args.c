/* SPDX-License-Identifier: MIT */
/* The sampling options attach and record share (and overhead in part). */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "unwind/priority.h"

#define MAX_HZ 1000
#define MIN_STACK (4u << 10)
#define MAX_STACK (8u << 20)

/* -f: the names, and the suffix of the default output file. */
static const struct {
	const char *name;
	const char *suffix;
} formats[] = {
	[CLI_FORMAT_PPROF] = { "pprof", ".pb.gz" },
	[CLI_FORMAT_COLLAPSED] = { "collapsed", ".collapsed" },
	[CLI_FORMAT_SVG] = { "svg", ".svg" },
};

void cli_session_defaults(struct cli_session *a)
{
	memset(a, 0, sizeof(*a));
	a->hz = 100;
	a->stack_size = 64u << 10;
	a->mode = SAMPLER_CPU;
	/* One thread at a time: each is stopped only while its own stack is
	 * copied (doc/cost.md gives the measurements). */
	a->stop = SAMPLER_STOP_THREAD;
	/* cpu mode: the kernel's samples when perf events are permitted (no
	 * stop at all), stops otherwise. */
	a->source = SAMPLER_SOURCE_AUTO;
	a->debuginfod_timeout_ns = 5000000000ull;
	/* Symbolizing a large program's DWARF takes seconds; a bound that a
	 * healthy run never meets, and a hung one never exceeds by much. */
	a->write_timeout_ns = 20000000000ull;
}

enum cli_opt_status cli_session_opt_write_timeout(void *value, const char *arg)
{
	struct cli_session *a = value;

	if (cli_parse_duration(arg, &a->write_timeout_ns) == 0 && a->write_timeout_ns)
		return CLI_OPT_TAKEN;
	cli_error("invalid write timeout '%s' (examples: 5s, 30s, 2m)", arg);
	return CLI_OPT_INVALID;
}

enum cli_opt_status cli_session_opt_debuginfod_timeout(void *value, const char *arg)
{
	struct cli_session *a = value;

	if (cli_parse_duration(arg, &a->debuginfod_timeout_ns) == 0 && a->debuginfod_timeout_ns)
		return CLI_OPT_TAKEN;
	cli_error("invalid debuginfod timeout '%s' (examples: 2s, 30s, 1m)", arg);
	return CLI_OPT_INVALID;
}

enum cli_opt_status cli_session_opt_duration(void *value, const char *arg)
{
	struct cli_session *a = value;

	if (cli_parse_duration(arg, &a->duration_ns) == 0)
		return CLI_OPT_TAKEN;
	cli_error("invalid duration '%s' (examples: 500ms, 30s, 2m, 1h)", arg);
	return CLI_OPT_INVALID;
}

enum cli_opt_status cli_session_opt_format(void *value, const char *arg)
{
	struct cli_session *a = value;
	size_t i;

	for (i = 0; i < sizeof(formats) / sizeof(formats[0]); i++) {
		if (strcmp(arg, formats[i].name) == 0) {
			a->format = (enum cli_format)i;
			return CLI_OPT_TAKEN;
		}
	}
	cli_error("invalid format '%s': pprof (gzipped profile.proto), collapsed "
		  "(folded stacks for flamegraph.pl) or svg (a flame graph)", arg);
	return CLI_OPT_INVALID;
}

enum cli_opt_status cli_session_opt_hz(void *value, const char *arg)
{
	struct cli_session *a = value;
	unsigned long v;

	if (cli_parse_ulong(arg, 1, MAX_HZ, &v) == 0) {
		a->hz = (unsigned)v;
		return CLI_OPT_TAKEN;
	}
	cli_error("invalid frequency '%s': must be 1..%d samples per second "
		  "(more would stop threads too often to be safe)", arg, MAX_HZ);
	return CLI_OPT_INVALID;
}

enum cli_opt_status cli_session_opt_stack_size(void *value, const char *arg)
{
	struct cli_session *a = value;

	a->stack_size_given = true;
	if (cli_parse_size(arg, &a->stack_size) == 0 && a->stack_size >= MIN_STACK &&
	    a->stack_size <= MAX_STACK)
		return CLI_OPT_TAKEN;
	cli_error("invalid stack size '%s': must be 4k..8m bytes", arg);
	return CLI_OPT_INVALID;
}

struct choice {
	const char *name;
	int value;
};

/*
 * The value (>= 0) named arg among the n choices.  When none is, says so
 * ("invalid <what> '<arg>': <hint>") and returns -1: one lookup and one
 * error for every option that takes a word.
 */
static int choose(const struct choice *c, size_t n, const char *arg, const char *what,
		  const char *hint)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (strcmp(arg, c[i].name) == 0)
			return c[i].value;
	cli_error("invalid %s '%s': %s", what, arg, hint);
	return -1;
}

#define CHOOSE(choices, arg, what, hint) \
	choose(choices, sizeof(choices) / sizeof(choices[0]), arg, what, hint)

enum cli_opt_status cli_session_opt_mode(void *value, const char *arg)
{
	static const struct choice modes[] = {
		{ "cpu", SAMPLER_CPU }, { "wall", SAMPLER_WALL },
	};
	int v = CHOOSE(modes, arg, "mode",
		       "cpu (running threads, CPU time) or wall (every thread, wall time)");

	if (v >= 0)
		((struct cli_session *)value)->mode = (enum sampler_mode)v;
	return v >= 0 ? CLI_OPT_TAKEN : CLI_OPT_INVALID;
}

enum cli_opt_status cli_session_opt_stop(void *value, const char *arg)
{
	static const struct choice policies[] = {
		{ "thread", SAMPLER_STOP_THREAD }, { "process", SAMPLER_STOP_PROCESS },
	};
	struct cli_session *a = value;
	int v = CHOOSE(policies, arg, "stop policy",
		       "thread (one at a time) or process (the sampled threads together)");

	a->stop_given = true;
	if (v >= 0)
		a->stop = (enum sampler_stop)v;
	return v >= 0 ? CLI_OPT_TAKEN : CLI_OPT_INVALID;
}

enum cli_opt_status cli_session_opt_source(void *value, const char *arg)
{
	static const struct choice sources[] = {
		{ "auto", SAMPLER_SOURCE_AUTO }, { "ptrace", SAMPLER_SOURCE_PTRACE },
		{ "perf", SAMPLER_SOURCE_PERF },
	};
	struct cli_session *a = value;
	int v = CHOOSE(sources, arg, "sample source",
		       "auto (perf events when permitted, else stops), "
		       "perf (the kernel copies each sample: no stop) or ptrace (stops)");

	a->source_given = true;
	if (v >= 0)
		a->source = (enum sampler_source)v;
	return v >= 0 ? CLI_OPT_TAKEN : CLI_OPT_INVALID;
}

enum cli_opt_status cli_session_opt_python(void *value, const char *arg)
{
	static const struct choice onoff[] = { { "auto", 0 }, { "off", 1 } };
	int v = CHOOSE(onoff, arg, "--python",
		       "auto (CPython's frames, sampled at stops, when the target runs it) or off");

	if (v >= 0)
		((struct cli_session *)value)->python_off = v;
	return v >= 0 ? CLI_OPT_TAKEN : CLI_OPT_INVALID;
}

enum cli_opt_status cli_session_opt_sched(void *value, const char *arg)
{
	static const struct choice policies[] = {
		{ "auto", CLI_SCHED_AUTO }, { "rt", CLI_SCHED_RT }, { "normal", CLI_SCHED_NORMAL },
	};
	int v = CHOOSE(policies, arg, "scheduling policy",
		       "auto (real-time when permitted), rt "
		       "(real-time or nothing) or normal (never real-time)");

	if (v >= 0)
		((struct cli_session *)value)->sched = (enum cli_sched)v;
	return v >= 0 ? CLI_OPT_TAKEN : CLI_OPT_INVALID;
}

int cli_session_check_sched(const struct cli_session *a)
{
	int ret;

	if (a->sched != CLI_SCHED_RT)
		return CPROF_EXIT_OK;
	ret = prio_rt_permitted();
	if (ret == 0)
		return CPROF_EXIT_OK;
	cli_error("cannot use real-time scheduling: %s (it needs root, CAP_SYS_NICE or an "
		  "RLIMIT_RTPRIO of at least 1; --sched auto falls back to nice -10)", strerror(-ret));
	return CPROF_EXIT_FATAL;
}

enum cli_parse_result cli_session_finish_args(struct cli_session *a, const char *cmd, pid_t pid)
{
	size_t len, plen = strlen(formats[CLI_FORMAT_PPROF].suffix);

	if (!a->output) {
		snprintf(a->default_output, sizeof(a->default_output), "cprof-%d%s", (int)pid,
			 formats[a->format].suffix);
		a->output = a->default_output;
	} else if (a->output == a->default_output && a->format != CLI_FORMAT_PPROF) {
		/* A caller's own default (record: cprof-COMMAND.pb.gz) takes the
		 * format's suffix. */
		len = strlen(a->default_output);
		if (len >= plen &&
		    strcmp(a->default_output + len - plen, formats[CLI_FORMAT_PPROF].suffix) == 0)
			snprintf(a->default_output + len - plen, sizeof(a->default_output) - (len - plen),
				 "%s", formats[a->format].suffix);
	}
	if (a->json && strcmp(a->output, "-") == 0) {
		cli_error("%s: --json and -o - would both write to standard output; "
			  "give the profile a file name", cmd);
		return CLI_PARSE_ERROR;
	}
	if (a->source == SAMPLER_SOURCE_PERF && a->mode == SAMPLER_WALL) {
		cli_error("%s: --source perf samples running threads only; wall mode needs "
			  "--source ptrace (or auto)", cmd);
		return CLI_PARSE_ERROR;
	}
	if (a->source == SAMPLER_SOURCE_PERF && a->stop == SAMPLER_STOP_PROCESS) {
		cli_error("%s: --source perf stops no thread; --stop process needs --source ptrace",
			  cmd);
		return CLI_PARSE_ERROR;
	}
	return CLI_PARSE_OK;
}
