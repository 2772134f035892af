/* SPDX-License-Identifier: MIT */
/* cprof attach: sample a running process, write a symbolized pprof profile. */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "cli/cli.h"

static void attach_usage(FILE *f)
{
	fprintf(f,
		"usage: cprof attach -p PID [-d DURATION] [-o FILE] [-f pprof|collapsed|svg]\n"
		"                    [-F HZ] [--mode cpu|wall] [--stop thread|process]\n"
		"                    [--source auto|perf|ptrace] [--kernel on|off]\n"
		"                    [--stack-size BYTES] [--sched auto|rt|normal]\n"
		"                    [--debuginfod-timeout D] [--no-debuginfod]\n"
		"                    [--write-timeout D] [--fsync] [-q] [--json]\n"
		"                    [--children] [--python auto|off] [--helper-user USER]\n"
		"\n"
		"Profiles the running process PID (all its threads) without restarting it and\n"
		"writes a gzipped pprof profile.\n"
		"\n"
		"  -p, --pid PID          process to profile\n"
		"      --children         its descendants too: those running now and those it\n"
		"                         starts while profiled\n"
		"  -d, --duration D       how long: 500ms, 30s, 2m, 1h (default: until Ctrl-C\n"
		"                         or the process exits)\n"
		"  -o, --output FILE      profile file (default cprof-PID.pb.gz; - for stdout)\n"
		"  -F, --frequency HZ     samples per second per thread, 1..1000 (default 100)\n"
		"      --mode cpu|wall    cpu (default): running threads, valued by the CPU time\n"
		"                         they used; wall: every thread, valued in wall time\n"
		"      --stop thread|process\n"
		"                         thread (default): one at a time; process: the sampled\n"
		"                         threads together (one instant)\n"
		"      --source auto|perf|ptrace\n"
		"                         who copies a cpu-mode sample: perf, the kernel at a\n"
		"                         timer interrupt (no thread stopped); ptrace, cprof at\n"
		"                         a stop; auto (default): perf where permitted, Go\n"
		"                         programs included\n"
		"      --kernel on|off    on (default): perf samples taken in the kernel carry\n"
		"                         its frames, under the user stack, where permitted\n"
		"      --python auto|off  auto (default): CPython's frames spliced into the\n"
		"                         native stacks, read at stops (3.8-3.13)\n"
		"      --stack-size N     bytes of stack copied per sample, 4k..8m (default 64k;\n"
		"                         perf samples: 16k, grown to 64k where a walk needs it;\n"
		"                         more than 65528 makes auto sample at stops)\n"
		"      --sched auto|rt|normal\n"
		"                         the sampling thread's scheduling: auto (default):\n"
		"                         real-time when permitted, else nice -10; rt: real-time\n"
		"                         or exit; normal: never real-time\n"
		"      --debuginfod-timeout D\n"
		"                         bound of one debuginfo download from DEBUGINFOD_URLS\n"
		"                         (default 5s; a run's downloads get six times that)\n"
		"      --no-debuginfod    download no debuginfo, even with DEBUGINFOD_URLS set\n"
		"      --helper-user USER the confined parser's user when root (default nobody)\n"
		"      --write-timeout D  bound of symbolizing and writing after sampling (default\n"
		"                         20s); past it frames keep addresses and build ids\n"
		"      --fsync            wait for the disk to hold the profile (no bound)\n"
		"  -f, --format FMT       pprof (default), collapsed (flamegraph.pl's folded\n"
		"                         stacks) or svg (an interactive flame graph)\n"
		"  -q, --quiet            no summary line or status line on stderr\n"
		"      --json             the summary as one JSON object on stdout\n"
		"  -h, --help             this help\n");
}

static const struct cli_command_line attach_line = {
	.name = "attach", .usage = attach_usage, .min_args = 0, .max_args = 0,
	.stop_at_operand = true,
};

int cmd_attach(int argc, char **argv)
{
	struct cli_session a;
	pid_t pid = 0;
	bool children = false;
	const struct cli_option opts[] = {
		CLI_OPTION_CALLBACK('p', "pid", &pid, cli_opt_pid),
		CLI_OPTION_BOOL(0, "children", &children),
		CLI_SESSION_OPTIONS(&a),
		CLI_OPTION_END,
	};
	enum cli_parse_result r;
	char why[256], what[64];
	int first, ret;

	cli_session_defaults(&a);
	r = cli_parse_pid_options(&attach_line, opts, argc, argv, &first, &pid);
	if (r != CLI_PARSE_OK)
		return cli_parse_exit_code(r);
	if (children)
		a.tracer_flags = TRACER_DESCENDANTS;
	if (cli_session_finish_args(&a, "attach", pid) != CLI_PARSE_OK)
		return CPROF_EXIT_USAGE;
	if (cli_attach_obstacle(pid, 0, why, sizeof(why))) {
		cli_error("cannot attach to pid %d: %s", (int)pid, why);
		return CPROF_EXIT_FATAL;
	}
	/* Before touching the target: a profile that cannot be written is
	 * not worth stopping anyone's threads for. */
	ret = cli_check_output(a.output);
	if (ret < 0) {
		cli_error("cannot write '%s': %s", a.output, strerror(-ret));
		return CPROF_EXIT_FATAL;
	}
	if (cli_session_check_sched(&a) != CPROF_EXIT_OK)
		return CPROF_EXIT_FATAL;
	snprintf(what, sizeof(what), "attach -p %d", (int)pid);
	return cli_session_run(&a, pid, what, NULL, NULL, NULL);
}
