/* SPDX-License-Identifier: MIT */
/* cprof dump-threads: every thread's stack at one instant, text or JSON. */
#include "config.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "lib/clock.h"
#include "lib/grow.h"
#include "symbolize/perfmap.h"
#include "symbolize/symbolize.h"
#include "unwind/capture.h"

#define DEFAULT_FRAMES 256
#define MAX_FRAMES 4096
/* --write-timeout's default, as attach's */
#define DEFAULT_WRITE_TIMEOUT_NS 20000000000ull

#include "cli/dump_threads.h"

static void dump_usage(FILE *f)
{
	fprintf(f,
		"usage: cprof dump-threads -p PID [--json] [--no-source] [--threads TID,...]\n"
		"                          [-n MAXFRAMES] [--stack-size BYTES] [--write-timeout D]\n"
		"                          [-q] [--children] [--python auto|off]\n"
		"                          [--helper-user USER]\n"
		"\n"
		"Prints the stack of every thread of the running process PID, all captured at\n"
		"one instant: blocked threads are read without being stopped, running ones are\n"
		"stopped together only while their registers and stack are copied.\n"
		"\n"
		"  -p, --pid PID          process to inspect\n"
		"      --json             one JSON document on stdout, for scripts\n"
		"      --no-source        no file:line (faster: no line tables loaded)\n"
		"      --threads LIST     only these thread ids (comma separated)\n"
		"      --children         the descendants of PID too, one process after another\n"
		"      --python auto|off  CPython's frames spliced into the native stacks where\n"
		"                         the interpreter runs them (default auto: when PID runs\n"
		"                         CPython 3.8-3.13)\n"
		"  -n, --max-frames N     frames per thread, 1..%d (default %d)\n"
		"      --stack-size N     bytes of stack copied per thread, 4k..8m (default 256k)\n"
		"      --write-timeout D  bound of symbolizing after the capture (default 20s);\n"
		"                         past it frames are printed as addresses\n"
		"  -q, --quiet            no summary line on stderr\n"
		"      --helper-user USER the confined parser's user when root (default nobody)\n"
		"  -h, --help             this help\n",
		MAX_FRAMES, DEFAULT_FRAMES);
}

static int parse_threads(const char *s, struct dump_args *a)
{
	char *copy = strdup(s), *tok, *save = NULL;
	int ret = 0;

	if (!copy)
		return -ENOMEM;
	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (a->n_only == MAX_ONLY || cli_parse_pid(tok, &a->only[a->n_only]) < 0) {
			ret = -EINVAL;
			break;
		}
		a->n_only++;
	}
	if (!a->n_only)
		ret = -EINVAL;
	free(copy);
	return ret;
}

static enum cli_opt_status opt_threads(void *value, const char *arg)
{
	if (parse_threads(arg, value) == 0)
		return CLI_OPT_TAKEN;
	cli_error("invalid thread list '%s': expected thread ids separated by commas", arg);
	return CLI_OPT_INVALID;
}

static enum cli_opt_status opt_frames(void *value, const char *arg)
{
	struct dump_args *a = value;

	if (cli_parse_ulong(arg, 1, MAX_FRAMES, &a->max_frames) == 0)
		return CLI_OPT_TAKEN;
	cli_error("invalid frame count '%s': must be 1..%d", arg, MAX_FRAMES);
	return CLI_OPT_INVALID;
}

static enum cli_opt_status opt_stack(void *value, const char *arg)
{
	struct dump_args *a = value;

	if (cli_parse_size(arg, &a->stack_size) == 0 && a->stack_size >= (4u << 10) &&
	    a->stack_size <= (8u << 20))
		return CLI_OPT_TAKEN;
	cli_error("invalid stack size '%s': must be 4k..8m bytes", arg);
	return CLI_OPT_INVALID;
}

static enum cli_opt_status opt_python(void *value, const char *arg)
{
	struct dump_args *a = value;

	if (!strcmp(arg, "auto") || !strcmp(arg, "off")) {
		a->no_python = !strcmp(arg, "off");
		return CLI_OPT_TAKEN;
	}
	cli_error("invalid --python '%s': expected auto or off", arg);
	return CLI_OPT_INVALID;
}

static const struct cli_command_line dump_line = {
	.name = "dump-threads", .usage = dump_usage, .min_args = 0, .max_args = 0,
	.stop_at_operand = true,
};

/* Returns CLI_PARSE_OK, or what ends the command (reported). */
static enum cli_opt_status opt_write_timeout(void *value, const char *arg)
{
	struct dump_args *a = value;

	if (cli_parse_duration(arg, &a->write_timeout_ns) == 0 && a->write_timeout_ns)
		return CLI_OPT_TAKEN;
	cli_error("invalid write timeout '%s' (examples: 5s, 30s, 2m)", arg);
	return CLI_OPT_INVALID;
}

static enum cli_parse_result parse_args(int argc, char **argv, struct dump_args *a)
{
	const struct cli_option opts[] = {
		CLI_OPTION_CALLBACK('p', "pid", &a->pid, cli_opt_pid),
		CLI_OPTION_BOOL(0, "json", &a->json),
		CLI_OPTION_BOOL(0, "no-source", &a->no_source),
		CLI_OPTION_CALLBACK(0, "threads", a, opt_threads),
		CLI_OPTION_CALLBACK('n', "max-frames", a, opt_frames),
		CLI_OPTION_CALLBACK(0, "stack-size", a, opt_stack),
		CLI_OPTION_CALLBACK(0, "write-timeout", a, opt_write_timeout),
		CLI_OPTION_BOOL('q', "quiet", &a->quiet),
		CLI_OPTION_BOOL(0, "children", &a->children),
		CLI_OPTION_CALLBACK(0, "python", a, opt_python),
		CLI_OPTION_STRING(0, "helper-user", &a->helper_user),
		CLI_OPTION_END,
	};
	enum cli_parse_result r;
	int first;

	a->max_frames = DEFAULT_FRAMES;
	/* Deeper than attach's default: a dump is taken once, and a
	 * truncated stack is what people notice in a dump. */
	a->stack_size = 256u << 10;
	a->write_timeout_ns = DEFAULT_WRITE_TIMEOUT_NS;
	r = cli_parse_pid_options(&dump_line, opts, argc, argv, &first, &a->pid);
	if (r != CLI_PARSE_OK)
		return r;
	if (a->children && a->n_only) {
		cli_error("dump-threads: --threads picks threads of one process; it does not go "
			  "with --children");
		return CLI_PARSE_ERROR;
	}
	return CLI_PARSE_OK;
}

int cli_dump_threads_write(FILE *f, pid_t pid, bool json, struct conf_helper *helper, char *why,
			   size_t size)
{
	/* dump-threads' defaults: see parse_args */
	struct dump_args a = { .pid = pid, .json = json, .max_frames = DEFAULT_FRAMES,
			       .stack_size = 256u << 10,
			       .write_timeout_ns = DEFAULT_WRITE_TIMEOUT_NS, .helper = helper };
	struct capture_opts co = { .stack_size = a.stack_size, .max_frames = a.max_frames,
				   .python = true, .helper = helper };
	struct capture c;
	struct printer pr = { .a = &a, .c = &c, .f = f };
	int ret;

	ret = capture_process(pid, &co, &c);
	if (ret < 0) {
		if (c.attached || !cli_attach_obstacle(pid, ret, why, size))
			snprintf(why, size, "%s", strerror(-ret));
		capture_free(&c);
		return ret;
	}
	pr.deadline_ns = cprof_now_ns() + a.write_timeout_ns;
	if (sym_create(&pr.sym, c.mods, 0) < 0)
		pr.sym = NULL;	/* addresses only, as dump-threads prints them */
	else
		sym_use_helper(pr.sym, helper);
	if (json)
		dump_print_json(&pr);
	else
		dump_print_text(&pr);
	if (pr.sym)
		sym_destroy(pr.sym);
	capture_free(&c);
	return 0;
}

/* Captures the threads.  Returns 0, or the exit code once reported (c is
 * then freed); -1 (nothing reported) when a descendant (descendant true)
 * is gone already. */
static int capture(const struct dump_args *a, struct capture *c, bool descendant)
{
	struct capture_opts co = {
		.stack_size = a->stack_size,
		.max_frames = a->max_frames,
		.only = a->n_only ? a->only : NULL,
		.n_only = a->n_only,
		.python = !a->no_python,
		.helper = a->helper,
	};
	char why[256];
	int ret;

	if (cli_attach_obstacle(a->pid, 0, why, sizeof(why))) {
		if (descendant && kill(a->pid, 0) < 0 && errno == ESRCH)
			return -1;
		cli_error("cannot attach to pid %d: %s", (int)a->pid, why);
		return CPROF_EXIT_FATAL;
	}
	ret = capture_process(a->pid, &co, c);
	if (ret == -ESRCH && descendant) {
		capture_free(c);
		return -1;
	}
	if (ret < 0) {
		if (!c->attached && cli_attach_obstacle(a->pid, ret, why, sizeof(why)))
			cli_error("cannot attach to pid %d: %s", (int)a->pid, why);
		else
			cli_error("cannot capture the threads of pid %d: %s", (int)a->pid,
				  strerror(-ret));
		capture_free(c);
		return CPROF_EXIT_FATAL;
	}
	if (a->n_only && !c->n) {
		cli_error("cannot dump pid %d: none of the threads given with --threads is in it",
			  (int)a->pid);
		capture_free(c);
		return CPROF_EXIT_FATAL;
	}
	return 0;
}

/* " (2 truncated, 1 not captured)": why the partial stacks are partial. */
static void format_reasons(char *buf, size_t len, const struct capture *c)
{
	size_t counts[REMOTE_END_ERROR + 2] = { 0 }, i, k = 0;
	bool first = true;

	buf[0] = '\0';
	for (i = 0; i < c->n; i++) {
		const struct capture_thread *ct = &c->threads[i];

		if (dump_thread_partial(ct))
			counts[ct->how == CAPTURE_NONE ? REMOTE_END_ERROR + 1 : ct->end]++;
	}
	for (i = 0; i < sizeof(counts) / sizeof(counts[0]) && k < len; i++) {
		if (!counts[i])
			continue;
		k += (size_t)snprintf(buf + k, len - k, "%s%zu %s", first ? " (" : ", ", counts[i],
				      i == REMOTE_END_ERROR + 1 ? "not captured" :
				      remote_end_key((enum remote_end)i));
		first = false;
	}
	if (!first && k < len)
		snprintf(buf + k, len - k, ")");
}

/* The exit status of a dump, and its summary line unless -q; late: the
 * frames --write-timeout left unnamed; sym: the modules the parser failed on. */
static int finish(const struct dump_args *a, const struct capture *c, size_t late,
		  struct sym_ctx *sym)
{
	size_t i, partial = 0, failed;
	char reasons[200];
	int code;

	for (i = 0; i < c->n; i++)
		partial += dump_thread_partial(&c->threads[i]);
	format_reasons(reasons, sizeof(reasons), c);
	/* the symbolizer's failures, then the walk's (each reported) */
	failed = cli_helper_errors(sym, c->mods);
	failed += cli_helper_walk_errors(sym, c->mods, c->parser_errors, c->n_parser_errors);
	code = failed || partial ? CPROF_EXIT_PARTIAL : CPROF_EXIT_OK;
	if (a->n_only && c->n < a->n_only) {
		cli_error("only %zu of the %zu threads given with --threads are in pid %d", c->n,
			  a->n_only, (int)a->pid);
		code = CPROF_EXIT_PARTIAL;
	}
	if (c->py_err == -EPROTO)
		fprintf(stderr, "cprof: %s\n", c->py_why);
	if (!a->quiet && c->py)
		fprintf(stderr, "cprof: python %s (%s): Python frames in %zu threads\n",
			py_proc_version(c->py), dump_base_name(py_proc_module(c->py)), c->n_py_threads);
	if (late) {
		cli_error("symbolizing pid %d ran out of time (--write-timeout %.3g s): %zu frames "
			  "are printed as addresses (a longer --write-timeout names them)",
			  (int)a->pid, (double)a->write_timeout_ns / 1e9, late);
		code = CPROF_EXIT_PARTIAL;
	}
	if (!a->quiet)
		fprintf(stderr,
			"cprof: dumped %zu threads of pid %d: %zu stopped for a freeze of %.3f ms "
			"(%.3f ms stopped in all), %zu read without stopping; %zu incomplete%s; "
			"%.1f ms in all\n",
			c->n, (int)a->pid, c->n_stopped, (double)c->freeze_ns / 1e6,
			(double)c->stopped_ns / 1e6, c->n_blocked, partial, reasons,
			(double)c->wall_ns / 1e6);
	return code;
}

/*
 * Dumps process a->pid (text, or one JSON object), after the text before
 * (may be NULL) once it is captured.  descendant: found under --children,
 * so one that is gone by now is skipped without a word.  Returns the exit
 * code; -1 for a descendant gone.
 */
static int dump_one(const struct dump_args *a, bool descendant, const char *before)
{
	struct capture c;
	struct printer pr = { .a = a, .c = &c, .f = stdout };
	struct sym_perfmap *pm = NULL;
	int code, ret;

	code = capture(a, &c, descendant);
	if (code)
		return code;
	pr.deadline_ns = cprof_now_ns() + a->write_timeout_ns;
	ret = sym_create(&pr.sym, c.mods, a->no_source ? SYM_NO_SOURCE : 0);
	if (ret < 0) {
		cli_error("cannot load symbols for pid %d: %s (printing addresses only)", (int)a->pid,
			  strerror(-ret));
		pr.sym = NULL;
	}
	if (pr.sym)
		sym_use_helper(pr.sym, a->helper);
	/* JIT code is named from the runtime's perf map, read once (by the parser). */
	if (pr.sym && sym_perfmap_create(&pm, a->pid, a->helper) == 0 &&
	    sym_perfmap_refresh(pm, &c.maps) == 0)
		sym_use_perfmap(pr.sym, pm);
	if (before)
		fputs(before, stdout);
	if (a->json)
		dump_print_json(&pr);
	else
		dump_print_text(&pr);
	code = finish(a, &c, pr.late, pr.sym);
	if (pr.sym)
		sym_destroy(pr.sym);
	sym_perfmap_destroy(pm);
	capture_free(&c);
	return code;
}

/*
 * pid and its descendants, parents before their children, into a malloc'd
 * array.  Returns 0 or -errno.
 */
static int list_tree(pid_t pid, pid_t **out, size_t *n)
{
	pid_t *v = NULL, *kids;
	size_t cnt = 1, cap = 0, i, k, nk;

	if (cprof_grow(&v, &cap, 1, sizeof(*v), 16) < 0)
		return -ENOMEM;
	v[0] = pid;
	/* Breadth first: v grows while it is walked. */
	for (i = 0; i < cnt; i++) {
		if (procfs_list_children(v[i], &kids, &nk) < 0)
			continue;	/* gone meanwhile */
		if (cprof_grow(&v, &cap, cnt + nk, sizeof(*v), 16) < 0) {
			free(kids);
			free(v);
			return -ENOMEM;
		}
		for (k = 0; k < nk; k++)
			v[cnt++] = kids[k];
		free(kids);
	}
	*out = v;
	*n = cnt;
	return 0;
}

/* The worse of two exit codes: fatal over partial over ok. */
static int worse(int a, int b)
{
	if (a == CPROF_EXIT_FATAL || b == CPROF_EXIT_FATAL)
		return CPROF_EXIT_FATAL;
	return a > b ? a : b;
}

/*
 * --children: each process of the tree in turn, each captured at an
 * instant of its own.  Text: each process's threads under a "Process PID"
 * line; JSON: {"pid": PID, "processes": [the object of each process]}.
 * The exit code is the worst of the processes' (one that ended before its
 * turn, or is a zombie, is skipped); the root's failure to attach is
 * fatal, a descendant's makes the dump partial.
 */
static int dump_tree(const struct dump_args *a)
{
	struct dump_args one = *a;
	struct procfs_stat st;
	char before[128];
	pid_t *pids;
	size_t n, i, shown = 0;
	int code = CPROF_EXIT_OK, c, ret;

	ret = list_tree(a->pid, &pids, &n);
	if (ret < 0) {
		cli_error("cannot list the descendants of pid %d: %s", (int)a->pid, strerror(-ret));
		return CPROF_EXIT_FATAL;
	}
	if (a->json)
		printf("{\"pid\": %d, \"processes\": [\n", (int)a->pid);
	for (i = 0; i < n; i++) {
		one.pid = pids[i];
		/* A child that exited and is not reaped yet has no threads. */
		if (i > 0 && procfs_stat_pid(pids[i], &st) == 0 && (st.state == 'Z' || st.state == 'X'))
			continue;
		if (a->json)
			snprintf(before, sizeof(before), "%s", shown ? ",\n" : "");
		else
			snprintf(before, sizeof(before), "%sProcess %d \"%s\"\n\n", shown ? "\n" : "",
				 (int)pids[i], procfs_stat_pid(pids[i], &st) == 0 ? st.comm : "?");
		c = dump_one(&one, i > 0, before);
		if (c < 0)
			continue;	/* ended before its turn */
		/* Without the root there is no tree to speak of; a descendant
		 * that could not be dumped makes the dump partial. */
		if (i == 0 && c == CPROF_EXIT_FATAL) {
			code = c;
			break;
		}
		if (c == CPROF_EXIT_FATAL)
			c = CPROF_EXIT_PARTIAL;
		else
			shown++;
		code = worse(code, c);
	}
	if (a->json)
		fputs("]}\n", stdout);
	free(pids);
	return code;
}

int cmd_dump_threads(int argc, char **argv)
{
	struct dump_args a = { 0 };
	enum cli_parse_result r;
	int code;

	r = parse_args(argc, argv, &a);
	if (r != CLI_PARSE_OK)
		return cli_parse_exit_code(r);
	/* before the target is touched */
	code = cli_helper_start(a.helper_user, &a.helper);
	if (code != CPROF_EXIT_OK)
		return code;
	code = a.children ? dump_tree(&a) : dump_one(&a, false, NULL);
	return worse(code, cli_helper_end(a.helper));
}
