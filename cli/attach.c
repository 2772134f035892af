/* SPDX-License-Identifier: MIT */
/* cprof attach: sample a running process, write a symbolized pprof profile. */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "cli/cli.h"

static void attach_usage(FILE *f)
{
	fprintf(f,
		"usage: cprof attach -p PID [-d DURATION] [-o FILE] [-F HZ] [--mode cpu|wall]\n"
		"                    [--stop thread|process] [--stack-size BYTES] [-q] [--json]\n"
		"\n"
		"Profiles the running process PID (all its threads) without restarting it and\n"
		"writes a gzipped pprof profile.\n"
		"\n"
		"  -p, --pid PID          process to profile\n"
		"  -d, --duration D       how long: 500ms, 30s, 2m, 1h (default: until Ctrl-C\n"
		"                         or the process exits)\n"
		"  -o, --output FILE      profile file (default cprof-PID.pb.gz; - for stdout)\n"
		"  -F, --frequency HZ     samples per second per thread, 1..1000 (default 100)\n"
		"      --mode cpu|wall    cpu (default): running threads, valued by the CPU time\n"
		"                         they used; wall: every thread, valued in wall time\n"
		"      --stop thread|process\n"
		"                         thread (default): one at a time; process: the sampled\n"
		"                         threads together (one instant)\n"
		"      --stack-size N     bytes of stack copied per sample, 4k..8m (default 64k)\n"
		"  -f, --format FMT       pprof (default), collapsed (flamegraph.pl's folded\n"
		"                         stacks) or svg (an interactive flame graph)\n"
		"  -q, --quiet            no summary line or status line on stderr\n"
		"      --json             the summary as one JSON object on stdout\n"
		"  -h, --help             this help\n");
}

int cmd_attach(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "pid", required_argument, NULL, 'p' },
		{ "help", no_argument, NULL, 'h' },
		CLI_SESSION_LONG_OPTIONS,
		{ NULL, 0, NULL, 0 },
	};
	struct cli_session a;
	char why[256], what[64];
	bool have_pid = false;
	pid_t pid = 0;
	int c, code, ret;

	cli_session_defaults(&a);
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+p:h" CLI_SESSION_SHORT_OPTIONS, opts, NULL)) != -1) {
		code = cli_session_option(&a, c, optarg);
		if (code >= 0)
			return code;
		if (code == -1)
			continue;
		switch (c) {
		case 'p':
			if (cli_parse_pid(optarg, &pid) < 0) {
				cli_error("invalid pid '%s': expected a positive process id", optarg);
				return CPROF_EXIT_USAGE;
			}
			have_pid = true;
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
	if (!have_pid) {
		cli_error("attach: which process? give its pid with -p PID");
		return CPROF_EXIT_USAGE;
	}
	code = cli_session_finish_args(&a, "attach", pid);
	if (code >= 0)
		return code;
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
	snprintf(what, sizeof(what), "attach -p %d", (int)pid);
	return cli_session_run(&a, pid, what, NULL, NULL, NULL);
}
