/* SPDX-License-Identifier: MIT */
/* cprof: the subcommand table and the top-level options. */
#include "config.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "confine/confine.h"
#include "symbolize/remote.h"

static const struct cmd {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *summary;
} commands[] = {
	{ "attach", cmd_attach, "profile a running process into a pprof CPU profile" },
	{ "record", cmd_record, "run a command and profile it until it exits" },
	{ "dump-threads", cmd_dump_threads, "print every thread's stack, captured at one instant" },
	{ "top", cmd_top, "watch a running process's top functions live, as top watches processes" },
	{ "serve", cmd_serve, "serve a running process's profiles over HTTP, like Go's /debug/pprof" },
	{ "report", cmd_report, "print the top functions, lines or files of a pprof profile" },
	{ "diff", cmd_diff, "compare two profiles: which functions' shares grew or shrank" },
	{ "overhead", cmd_overhead, "time a command unprofiled and under each sampler" },
};

static void usage(FILE *f)
{
	size_t i;

	fprintf(f, "usage: cprof <command> [options]\n"
		   "       cprof --help | --version\n\ncommands:\n");
	for (i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		fprintf(f, "  %-14s %s\n", commands[i].name, commands[i].summary);
	fprintf(f, "\nRun 'cprof <command> --help' for the options of a command; see cprof(1).\n");
}

static int finish(int code)
{
	/* A full disk or closed pipe on stdout is an error, not silence. */
	if (fflush(stdout) != 0 || ferror(stdout)) {
		cli_error("cannot write standard output");
		return code ? code : CPROF_EXIT_FATAL;
	}
	return code;
}

int main(int argc, char **argv)
{
	size_t i;

	/* cprof exec'd as its own confined parser (cli/helper.c) */
	if (argc >= 1 && strcmp(argv[0], CONF_EXEC_NAME) == 0)
		return conf_exec_main(argc, argv, cli_parser_serve);

	/* Writing a profile to a closed pipe must report EPIPE, not kill us. */
	signal(SIGPIPE, SIG_IGN);
	cli_settle_std_files();
	if (argc < 2) {
		usage(stderr);
		return CPROF_EXIT_USAGE;
	}
	if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
	    strcmp(argv[1], "help") == 0) {
		usage(stdout);
		return finish(CPROF_EXIT_OK);
	}
	if (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "-V") == 0) {
		printf("cprof %s\n", PACKAGE_VERSION);
		return finish(CPROF_EXIT_OK);
	}
	for (i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (strcmp(argv[1], commands[i].name) == 0)
			return finish(commands[i].fn(argc - 1, argv + 1));
	cli_error("unknown command '%s' (see 'cprof --help')", argv[1]);
	return CPROF_EXIT_USAGE;
}
