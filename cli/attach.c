/* SPDX-License-Identifier: MIT */
/* cprof attach: sample a running process, write a symbolized pprof profile. */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "profile/export.h"
#include "profile/profile.h"
#include "symbolize/symbolize.h"
#include "unwind/sampler.h"

#define DEFAULT_HZ 100
#define MAX_HZ 1000
#define DEFAULT_STACK (64u << 10)
#define MIN_STACK (4u << 10)
#define MAX_STACK (8u << 20)

struct attach_args {
	pid_t pid;
	bool have_pid;
	uint64_t duration_ns;
	unsigned hz;
	size_t stack_size;
	const char *output;
	char default_output[64];
	bool quiet;
};

static void attach_usage(FILE *f)
{
	fprintf(f,
		"usage: cprof attach -p PID [-d DURATION] [-o FILE] [-F HZ] [--stack-size BYTES] [-q]\n"
		"\n"
		"Profiles the running process PID (all its threads) without restarting it and\n"
		"writes a gzipped pprof CPU profile.\n"
		"\n"
		"  -p, --pid PID          process to profile\n"
		"  -d, --duration D       how long: 500ms, 30s, 2m, 1h (default: until Ctrl-C\n"
		"                         or the process exits)\n"
		"  -o, --output FILE      profile file (default cprof-PID.pb.gz; - for stdout)\n"
		"  -F, --frequency HZ     samples per second per running thread, 1..%d (default %d)\n"
		"      --stack-size N     bytes of stack copied per sample, 4k..8m (default 64k)\n"
		"  -q, --quiet            no summary line\n"
		"  -h, --help             this help\n",
		MAX_HZ, DEFAULT_HZ);
}

/* Parses the command line; returns -1 to go on, or an exit code. */
static int parse_args(int argc, char **argv, struct attach_args *a)
{
	static const struct option opts[] = {
		{ "pid", required_argument, NULL, 'p' },
		{ "duration", required_argument, NULL, 'd' },
		{ "output", required_argument, NULL, 'o' },
		{ "frequency", required_argument, NULL, 'F' },
		{ "stack-size", required_argument, NULL, 'S' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	unsigned long v;
	int c;

	a->hz = DEFAULT_HZ;
	a->stack_size = DEFAULT_STACK;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+p:d:o:F:qh", opts, NULL)) != -1) {
		switch (c) {
		case 'p':
			if (cli_parse_pid(optarg, &a->pid) < 0) {
				cli_error("invalid pid '%s': expected a positive process id", optarg);
				return CPROF_EXIT_USAGE;
			}
			a->have_pid = true;
			break;
		case 'd':
			if (cli_parse_duration(optarg, &a->duration_ns) < 0) {
				cli_error("invalid duration '%s' (examples: 500ms, 30s, 2m, 1h)", optarg);
				return CPROF_EXIT_USAGE;
			}
			break;
		case 'o':
			a->output = optarg;
			break;
		case 'F':
			if (cli_parse_ulong(optarg, 1, MAX_HZ, &v) < 0) {
				cli_error("invalid frequency '%s': must be 1..%d samples per second "
					  "(more would stop threads too often to be safe)",
					  optarg, MAX_HZ);
				return CPROF_EXIT_USAGE;
			}
			a->hz = (unsigned)v;
			break;
		case 'S':
			if (cli_parse_size(optarg, &a->stack_size) < 0 || a->stack_size < MIN_STACK ||
			    a->stack_size > MAX_STACK) {
				cli_error("invalid stack size '%s': must be 4k..8m bytes", optarg);
				return CPROF_EXIT_USAGE;
			}
			break;
		case 'q':
			a->quiet = true;
			break;
		case 'h':
			attach_usage(stdout);
			return CPROF_EXIT_OK;
		default:
			if (optopt && strchr("pdoF", optopt))
				cli_error("attach: option -%c needs a value (see 'cprof attach --help')",
					  optopt);
			else
				cli_error("attach: unknown option '%s' (see 'cprof attach --help')",
					  argv[optind - 1]);
			return CPROF_EXIT_USAGE;
		}
	}
	if (optind < argc) {
		cli_error("attach: unexpected argument '%s' (see 'cprof attach --help')", argv[optind]);
		return CPROF_EXIT_USAGE;
	}
	if (!a->have_pid) {
		cli_error("attach: which process? give its pid with -p PID");
		return CPROF_EXIT_USAGE;
	}
	if (!a->output) {
		snprintf(a->default_output, sizeof(a->default_output), "cprof-%d.pb.gz", (int)a->pid);
		a->output = a->default_output;
	}
	return -1;
}

static int label_of(uint32_t key, pid_t *tid, const char **name, void *arg)
{
	return sampler_thread_label(arg, key, tid, name);
}

static void add_comments(struct prof_builder *b, const struct attach_args *a,
			 const struct sampler_stats *st)
{
	char line[256];
	uint64_t complete = st->ends[REMOTE_END_COMPLETE];

	snprintf(line, sizeof(line), "cprof %s attach -p %d -F %u", PACKAGE_VERSION, (int)a->pid,
		 a->hz);
	prof_add_comment(b, line);
	snprintf(line, sizeof(line),
		 "samples=%llu ticks=%llu missed_ticks=%llu threads_seen=%llu",
		 (unsigned long long)st->samples, (unsigned long long)st->ticks,
		 (unsigned long long)st->ticks_missed, (unsigned long long)st->threads_seen);
	prof_add_comment(b, line);
	snprintf(line, sizeof(line), "stops=%llu stop_ns_mean=%llu stop_ns_max=%llu",
		 (unsigned long long)st->stops,
		 (unsigned long long)(st->stops ? st->stop_ns_total / st->stops : 0),
		 (unsigned long long)st->stop_ns_max);
	prof_add_comment(b, line);
	snprintf(line, sizeof(line), "unwind complete=%llu truncated=%llu no_info=%llu other=%llu",
		 (unsigned long long)complete,
		 (unsigned long long)st->ends[REMOTE_END_TRUNCATED],
		 (unsigned long long)st->ends[REMOTE_END_NO_INFO],
		 (unsigned long long)(st->samples - complete - st->ends[REMOTE_END_TRUNCATED] -
				      st->ends[REMOTE_END_NO_INFO]));
	prof_add_comment(b, line);
}

static int write_profile(struct sampler *s, const struct attach_args *a)
{
	const struct sampler_stats *st = sampler_get_stats(s);
	struct prof_export_opts eo = {
		.hz = a->hz,
		.time_nanos = (int64_t)st->start_realtime_ns,
		.duration_nanos = (int64_t)st->elapsed_ns,
		.thread_label = label_of,
		.arg = s,
	};
	struct prof_builder *b = NULL;
	struct sym_ctx *sym = NULL;
	int ret;

	ret = sym_create(&sym, sampler_modules(s), 0);
	if (ret < 0) {
		/* Addresses alone still make a profile: write it. */
		cli_error("cannot load symbols for pid %d: %s (the profile keeps raw addresses)",
			  (int)a->pid, strerror(-ret));
		sym = NULL;
	}
	ret = prof_export_cpu(sampler_stacks(s), sampler_modules(s), sym, &eo, &b);
	if (ret < 0) {
		cli_error("cannot build the profile of pid %d: %s", (int)a->pid, strerror(-ret));
		goto out;
	}
	add_comments(b, a, st);
	ret = prof_write_file(b, a->output);
	if (ret < 0)
		cli_error("cannot write '%s': %s", a->output, strerror(-ret));
out:
	if (b)
		prof_builder_destroy(b);
	if (sym)
		sym_destroy(sym);
	return ret;
}

static void print_summary(const struct attach_args *a, const struct sampler_stats *st)
{
	fprintf(stderr,
		"cprof: wrote %s: %llu samples (%llu truncated) from %llu threads in %.2f s%s\n",
		strcmp(a->output, "-") == 0 ? "standard output" : a->output,
		(unsigned long long)st->samples,
		(unsigned long long)st->ends[REMOTE_END_TRUNCATED],
		(unsigned long long)st->threads_seen, (double)st->elapsed_ns / 1e9,
		st->target_exited ? " (the process exited)" : "");
}

int cmd_attach(int argc, char **argv)
{
	struct attach_args a = { 0 };
	struct sampler_opts so;
	struct sampler *s = NULL;
	char why[256];
	int code, ret;

	code = parse_args(argc, argv, &a);
	if (code >= 0)
		return code;
	if (cli_attach_obstacle(a.pid, 0, why, sizeof(why))) {
		cli_error("cannot attach to pid %d: %s", (int)a.pid, why);
		return CPROF_EXIT_FATAL;
	}
	/* Before touching the target: a profile that cannot be written is
	 * not worth stopping anyone's threads for. */
	ret = cli_check_output(a.output);
	if (ret < 0) {
		cli_error("cannot write '%s': %s", a.output, strerror(-ret));
		return CPROF_EXIT_FATAL;
	}

	so = (struct sampler_opts){
		.pid = a.pid,
		.hz = a.hz,
		.duration_ns = a.duration_ns,
		.stack_size = a.stack_size,
	};
	ret = sampler_create(&s, &so);
	if (ret < 0) {
		cli_error("cannot set up sampling of pid %d: %s", (int)a.pid, strerror(-ret));
		return CPROF_EXIT_FATAL;
	}
	code = CPROF_EXIT_OK;
	ret = sampler_session(s);
	if (ret < 0 && !sampler_get_stats(s)->attached) {
		if (!cli_attach_obstacle(a.pid, ret, why, sizeof(why)))
			snprintf(why, sizeof(why), "%s", strerror(-ret));
		cli_error("cannot attach to pid %d: %s", (int)a.pid, why);
		sampler_destroy(s);
		return CPROF_EXIT_FATAL;
	}
	if (ret < 0) {
		/* What was collected is still written below. */
		cli_error("sampling pid %d stopped early: %s", (int)a.pid, strerror(-ret));
		code = CPROF_EXIT_PARTIAL;
	}
	ret = write_profile(s, &a);
	if (ret < 0) {
		code = CPROF_EXIT_FATAL;
	} else if (!a.quiet) {
		print_summary(&a, sampler_get_stats(s));
	}
	sampler_destroy(s);
	return code;
}
