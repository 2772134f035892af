/* SPDX-License-Identifier: MIT */
/* The one option parser of cli/: tables of struct cli_option over getopt_long. */
#include "config.h"

#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/options.h"

#define MAX_OPTIONS 64
#define LONG_ONLY_BASE 256	/* getopt_long values of long-only options: base + index */
#define HELP_INDEX (MAX_OPTIONS - 1)

struct getopt_tables {
	char shorts[2 * MAX_OPTIONS * 2 + 4];
	struct option longs[MAX_OPTIONS + 1];
};

static bool option_takes_value(const struct cli_option *o)
{
	return o->kind != CLI_OPT_BOOL && (o->kind != CLI_OPT_CALLBACK || o->takes_value);
}

/* Builds getopt_long's strings and array from the table.  Returns the number
 * of options, or -1 when the table is too long (a programming error). */
static int build_tables(const struct cli_command_line *cl, const struct cli_option *opts,
			struct getopt_tables *t)
{
	size_t s = 0, l = 0;
	int i;

	/* '+': stop at the first operand; ':': report a missing value as ':'. */
	if (cl->stop_at_operand)
		t->shorts[s++] = '+';
	t->shorts[s++] = ':';
	t->shorts[s++] = 'h';
	for (i = 0; opts[i].kind != CLI_OPT_END; i++) {
		const struct cli_option *o = &opts[i];

		if (i >= HELP_INDEX)
			return -1;
		if (o->short_name) {
			t->shorts[s++] = (char)o->short_name;
			if (option_takes_value(o))
				t->shorts[s++] = ':';
		}
		if (o->long_name)
			t->longs[l++] = (struct option){
				o->long_name, option_takes_value(o) ? required_argument : no_argument,
				NULL, o->short_name ? o->short_name : LONG_ONLY_BASE + i,
			};
	}
	t->shorts[s] = '\0';
	t->longs[l++] = (struct option){ "help", no_argument, NULL, 'h' };
	t->longs[l] = (struct option){ NULL, 0, NULL, 0 };
	return i;
}

static const struct cli_option *option_of(const struct cli_option *opts, int n, int c)
{
	int i;

	if (c >= LONG_ONLY_BASE && c < LONG_ONLY_BASE + n)
		return &opts[c - LONG_ONLY_BASE];
	for (i = 0; i < n; i++)
		if (opts[i].short_name == c)
			return &opts[i];
	return NULL;
}

/* The option as the user wrote it, for messages. */
static void spelled(char *buf, size_t size, const struct cli_option *o)
{
	if (o->long_name)
		snprintf(buf, size, "--%s", o->long_name);
	else
		snprintf(buf, size, "-%c", o->short_name);
}

static enum cli_parse_result store(const struct cli_command_line *cl, const struct cli_option *o,
				   const char *arg)
{
	char name[64];

	switch (o->kind) {
	case CLI_OPT_BOOL:
		*(bool *)o->value = true;
		return CLI_PARSE_OK;
	case CLI_OPT_STRING:
		*(const char **)o->value = arg;
		return CLI_PARSE_OK;
	case CLI_OPT_ULONG:
		if (cli_parse_ulong(arg, o->min, o->max, o->value) == 0)
			return CLI_PARSE_OK;
		spelled(name, sizeof(name), o);
		if (o->max == (unsigned long)-1)
			cli_error("%s: invalid %s '%s': expected a whole number, at least %lu",
				  cl->name, name, arg, o->min);
		else
			cli_error("%s: invalid %s '%s': must be %lu..%lu", cl->name, name, arg,
				  o->min, o->max);
		return CLI_PARSE_ERROR;
	case CLI_OPT_CALLBACK:
		return o->cb(o->value, arg) == CLI_OPT_TAKEN ? CLI_PARSE_OK : CLI_PARSE_ERROR;
	case CLI_OPT_END:
		break;
	}
	return CLI_PARSE_ERROR;
}

static enum cli_parse_result bad_option(const struct cli_command_line *cl, int c, char **argv)
{
	const char *given = argv[optind - 1];
	char shortbuf[3] = { '-', (char)optopt, '\0' };

	/* For a cluster such as -qx, argv[optind - 1] is the whole cluster:
	 * name the letter. */
	if (optopt && !(given[0] == '-' && given[1] == '-'))
		given = shortbuf;
	if (c == ':')
		cli_error("%s: option '%s' needs a value (see 'cprof %s --help')", cl->name, given,
			  cl->name);
	else if (optopt && given[0] == '-' && given[1] == '-' && strchr(given, '='))
		cli_error("%s: option '%.*s' takes no value (see 'cprof %s --help')", cl->name,
			  (int)(strchr(given, '=') - given), given, cl->name);
	else
		cli_error("%s: unknown option '%s' (see 'cprof %s --help')", cl->name, given,
			  cl->name);
	return CLI_PARSE_ERROR;
}

static enum cli_parse_result check_operands(const struct cli_command_line *cl, int argc,
					    char **argv)
{
	int n = argc - optind;

	if (n < cl->min_args) {
		if (cl->missing)
			cli_error("%s: %s", cl->name, cl->missing);
		else
			cli_error("%s: missing argument (see 'cprof %s --help')", cl->name, cl->name);
		return CLI_PARSE_ERROR;
	}
	if (cl->max_args >= 0 && n > cl->max_args) {
		cli_error("%s: unexpected argument '%s' (see 'cprof %s --help')", cl->name,
			  argv[optind + cl->max_args], cl->name);
		return CLI_PARSE_ERROR;
	}
	return CLI_PARSE_OK;
}

enum cli_parse_result cli_parse_options(const struct cli_command_line *cl,
					const struct cli_option *opts, int argc, char **argv,
					int *first_arg)
{
	struct getopt_tables t;
	enum cli_parse_result r;
	int n, c;

	n = build_tables(cl, opts, &t);
	if (n < 0) {
		cli_error("%s: too many options in the table", cl->name);
		return CLI_PARSE_ERROR;
	}
	opterr = 0;
	optind = 0;	/* a full reset: a second parse in one process works too */
	while ((c = getopt_long(argc, argv, t.shorts, t.longs, NULL)) != -1) {
		const struct cli_option *o;

		if (c == 'h') {
			cl->usage(stdout);
			return CLI_PARSE_HELP;
		}
		o = c == '?' || c == ':' ? NULL : option_of(opts, n, c);
		if (!o)
			return bad_option(cl, c, argv);
		r = store(cl, o, option_takes_value(o) ? optarg : NULL);
		if (r != CLI_PARSE_OK)
			return r;
	}
	r = check_operands(cl, argc, argv);
	*first_arg = optind;
	return r;
}

int cli_parse_exit_code(enum cli_parse_result r)
{
	return r == CLI_PARSE_HELP ? CPROF_EXIT_OK : CPROF_EXIT_USAGE;
}
