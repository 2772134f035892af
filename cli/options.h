/* SPDX-License-Identifier: MIT */
/*
 * Option tables: each subcommand describes its options in one array of
 * struct cli_option and hands it to cli_parse_options(), which reports every
 * unknown option, missing value and stray argument the same way.  No
 * subcommand calls getopt itself.
 */
#ifndef CPROF_CLI_OPTIONS_H
#define CPROF_CLI_OPTIONS_H

#include <stdbool.h>
#include <stdio.h>

/* What a callback says about the value it was given. */
enum cli_opt_status {
	CLI_OPT_TAKEN,		/* stored */
	CLI_OPT_INVALID,	/* rejected; the callback has reported it (cli_error) */
};

enum cli_opt_kind {
	CLI_OPT_END,		/* terminates a table */
	CLI_OPT_BOOL,		/* no value; sets *(bool *)value */
	CLI_OPT_STRING,		/* stores the value in *(const char **)value */
	CLI_OPT_ULONG,		/* a decimal in [min, max] into *(unsigned long *)value */
	CLI_OPT_CALLBACK,	/* cb(value, arg): arg is NULL unless the option takes a value */
};

struct cli_option {
	enum cli_opt_kind kind;
	int short_name;		/* 0: long form only */
	const char *long_name;	/* NULL: short form only */
	void *value;
	/* CLI_OPT_CALLBACK only. */
	enum cli_opt_status (*cb)(void *value, const char *arg);
	bool takes_value;	/* CLI_OPT_CALLBACK only */
	/* CLI_OPT_ULONG only: the accepted range. */
	unsigned long min, max;
};

#define CLI_OPTION_BOOL(s, l, v) { CLI_OPT_BOOL, (s), (l), (v), NULL, false, 0, 0 }
#define CLI_OPTION_STRING(s, l, v) { CLI_OPT_STRING, (s), (l), (v), NULL, true, 0, 0 }
#define CLI_OPTION_ULONG(s, l, v, lo, hi) { CLI_OPT_ULONG, (s), (l), (v), NULL, true, (lo), (hi) }
#define CLI_OPTION_CALLBACK(s, l, v, fn) { CLI_OPT_CALLBACK, (s), (l), (v), (fn), true, 0, 0 }
#define CLI_OPTION_CALLBACK_FLAG(s, l, v, fn) { CLI_OPT_CALLBACK, (s), (l), (v), (fn), false, 0, 0 }
#define CLI_OPTION_END { CLI_OPT_END, 0, NULL, NULL, NULL, false, 0, 0 }

/* How a command's arguments are laid out. */
struct cli_command_line {
	const char *name;		/* "diff": the prefix of every message */
	void (*usage)(FILE *f);		/* --help prints it on stdout */
	/* The operands after the options: at least min_args, at most max_args
	 * (-1: any number).  stop_at_operand: the first operand ends the
	 * options (a command line to run follows), as getopt's "+". */
	int min_args, max_args;
	bool stop_at_operand;
	/* Said when fewer than min_args were given, e.g. "which profile? give
	 * its file"; NULL for a generic message. */
	const char *missing;
};

enum cli_parse_result {
	CLI_PARSE_OK,		/* go on: the operands start at *first_arg */
	CLI_PARSE_HELP,		/* usage was printed: exit 0 */
	CLI_PARSE_ERROR,	/* reported on stderr: exit 64 */
};

/*
 * Parses argv[1..argc-1] (argv[0] is the subcommand's name) against opts,
 * which -h/--help joins implicitly.  Values are stored as each option is met,
 * so a later option overrides an earlier one.  Not reentrant (getopt).
 */
enum cli_parse_result cli_parse_options(const struct cli_command_line *cl,
					const struct cli_option *opts, int argc, char **argv,
					int *first_arg);

/* The exit code for a result other than CLI_PARSE_OK. */
int cli_parse_exit_code(enum cli_parse_result r);

/* What a subcommand's own parsing function returns, beside an exit code,
 * for a command line that asked for the help: it was printed, nothing more
 * is to be done (exit 0). */
#define CLI_HELP_SHOWN (-1)

#endif
