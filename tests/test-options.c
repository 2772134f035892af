/* SPDX-License-Identifier: MIT */
/* Unit tests of cli/options.c, the option-table parser every subcommand uses. */
#include "config.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/options.h"
#include "tests/tap.h"

static int usage_calls;

static void usage(FILE *f)
{
	(void)f;
	usage_calls++;
}

struct values {
	bool flag;
	const char *str;
	unsigned long num;
	int cb_calls;
	const char *cb_arg;
	bool cb_flag;
};

static enum cli_opt_status cb_value(void *value, const char *arg)
{
	struct values *v = value;

	v->cb_calls++;
	v->cb_arg = arg;
	return strcmp(arg, "bad") == 0 ? CLI_OPT_INVALID : CLI_OPT_TAKEN;
}

static enum cli_opt_status cb_flag(void *value, const char *arg)
{
	struct values *v = value;

	v->cb_flag = arg == NULL;
	return CLI_OPT_TAKEN;
}

/* Parses the NULL-terminated words (the subcommand's name first). */
static enum cli_parse_result parse(const struct cli_command_line *cl, struct values *v,
				   int *first, const char *const *words)
{
	const struct cli_option opts[] = {
		CLI_OPTION_BOOL('b', "flag", &v->flag),
		CLI_OPTION_STRING('s', "str", &v->str),
		CLI_OPTION_ULONG(0, "num", &v->num, 1, 10),
		CLI_OPTION_CALLBACK('c', "call", v, cb_value),
		CLI_OPTION_CALLBACK_FLAG(0, "toggle", v, cb_flag),
		CLI_OPTION_END,
	};
	char *argv[32];
	int argc = 0;

	memset(v, 0, sizeof(*v));
	while (words[argc]) {
		argv[argc] = (char *)words[argc];
		argc++;
	}
	argv[argc] = NULL;
	*first = -1;
	return cli_parse_options(cl, opts, argc, argv, first);
}

static const struct cli_command_line two_args = {
	.name = "t", .usage = usage, .min_args = 2, .max_args = 2,
};
static const struct cli_command_line command_line = {
	.name = "t", .usage = usage, .min_args = 1, .max_args = -1, .stop_at_operand = true,
	.missing = "which command?",
};

static void test_values(void)
{
	const char *w1[] = { "t", "--flag", "-s", "x", "--num", "7", "-c", "v", "--toggle",
			     "a", "b", NULL };
	const char *w2[] = { "t", "a", "-b", "b", "--str=y", NULL };
	struct values v;
	int first;

	check(parse(&two_args, &v, &first, w1) == CLI_PARSE_OK && v.flag && v.str &&
	      strcmp(v.str, "x") == 0 && v.num == 7 && v.cb_calls == 1 &&
	      strcmp(v.cb_arg, "v") == 0 && v.cb_flag && first == 9,
	      "every kind of option is stored, the operands start after them");
	/* Without stop_at_operand, options may follow operands (getopt permutes). */
	check(parse(&two_args, &v, &first, w2) == CLI_PARSE_OK && v.flag && v.str &&
	      strcmp(v.str, "y") == 0 && first == 3,
	      "options after operands, and --long=value");
}

static void test_operands(void)
{
	const char *cmd[] = { "t", "-b", "prog", "-s", "x", NULL };
	const char *none[] = { "t", "-b", NULL };
	const char *three[] = { "t", "a", "b", "c", NULL };
	const char *dashdash[] = { "t", "--", "-b", NULL };
	struct values v;
	int first;

	check(parse(&command_line, &v, &first, cmd) == CLI_PARSE_OK && v.flag && !v.str &&
	      first == 2, "stop_at_operand: the command's own options are left to it");
	check(parse(&command_line, &v, &first, none) == CLI_PARSE_ERROR,
	      "too few operands is a usage error");
	check(parse(&two_args, &v, &first, three) == CLI_PARSE_ERROR,
	      "too many operands is a usage error");
	check(parse(&command_line, &v, &first, dashdash) == CLI_PARSE_OK && !v.flag && first == 2,
	      "-- ends the options");
}

static void test_errors(void)
{
	static const struct {
		const char *words[6];
		const char *what;
	} bad[] = {
		{ { "t", "--nope", "a", "b", NULL }, "an unknown long option" },
		{ { "t", "-x", "a", "b", NULL }, "an unknown short option" },
		{ { "t", "-bx", "a", "b", NULL }, "an unknown letter in a cluster" },
		{ { "t", "a", "b", "-s", NULL }, "a missing value" },
		{ { "t", "--num", "11", "a", "b", NULL }, "a number out of range" },
		{ { "t", "--num", "3x", "a", "b", NULL }, "a number with junk" },
		{ { "t", "-c", "bad", "a", "b", NULL }, "a value the callback rejects" },
		{ { "t", "--flag=1", "a", "b", NULL }, "a value given to a flag" },
	};
	struct values v;
	size_t i;
	int first;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		check(parse(&two_args, &v, &first, bad[i].words) == CLI_PARSE_ERROR,
		      "%s is a usage error", bad[i].what);
	check(cli_parse_exit_code(CLI_PARSE_ERROR) == CPROF_EXIT_USAGE &&
	      cli_parse_exit_code(CLI_PARSE_HELP) == CPROF_EXIT_OK,
	      "usage errors exit 64, --help exits 0");
}

static void test_help(void)
{
	const char *h1[] = { "t", "--help", NULL };
	const char *h2[] = { "t", "a", "-h", NULL };
	struct values v;
	int first;

	usage_calls = 0;
	check(parse(&two_args, &v, &first, h1) == CLI_PARSE_HELP && usage_calls == 1,
	      "--help prints the usage, whatever else is missing");
	check(parse(&two_args, &v, &first, h2) == CLI_PARSE_HELP && usage_calls == 2,
	      "-h anywhere prints the usage");
}

int main(void)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	test_values();
	test_operands();
	test_errors();
	test_help();
	return tap_done();
}
