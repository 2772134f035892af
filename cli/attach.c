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
		CLI_SAMPLING_HELP
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
