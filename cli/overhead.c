/* SPDX-License-Identifier: MIT */
/* cprof overhead: time a command unprofiled and under each sampler, interleaved. */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/overhead.h"
#include "lib/clock.h"

#define DEFAULT_RUNS 5
#define RECORD_ARGC 10		/* cprof record ... --, before the command */

/* Run in this order in every round, so that machine noise hits all alike. */
const struct overhead_variant overhead_variants[N_VARIANTS] = {
	{ "unprofiled", KIND_NONE, SAMPLER_STOP_THREAD, SAMPLER_SOURCE_PTRACE },
	{ "ptrace-thread", KIND_PTRACE, SAMPLER_STOP_THREAD, SAMPLER_SOURCE_PTRACE },
	{ "ptrace-process", KIND_PTRACE, SAMPLER_STOP_PROCESS, SAMPLER_SOURCE_PTRACE },
	/* the kernel's samples, no stop: cpu mode, where perf events are permitted */
	{ "perf", KIND_PTRACE, SAMPLER_STOP_THREAD, SAMPLER_SOURCE_PERF },
	{ "inproc", KIND_INPROC, SAMPLER_STOP_THREAD, SAMPLER_SOURCE_PTRACE },
};

static void overhead_usage(FILE *f)
{
	fprintf(f,
		"usage: cprof overhead [-F HZ] [-n RUNS] [--mode cpu|wall] [--json] [-q]\n"
		"                      -- COMMAND [ARG...]\n"
		"\n"
		"Runs COMMAND RUNS times each unprofiled, under ptrace sampling (--stop thread\n"
		"and --stop process), under perf events (--source perf, cpu mode) and under the\n"
		"in-process sampler, interleaved round by round, and prints per variant the\n"
		"median wall and CPU time (min..max), the slowdown against the unprofiled\n"
		"median and the stop-time statistics.\n"
		"COMMAND must exit with status 0 every time; its output is discarded.\n"
		"\n"
		"  -F, --frequency HZ     samples per second per thread, 1..1000 (default 100)\n"
		"  -n, --runs N           rounds, 1..%d (default %d)\n"
		"      --mode cpu|wall    as for record\n"
		"      --json             the results as one JSON object on stdout\n"
		"  -q, --quiet            no progress lines on stderr\n"
		"  -h, --help             this help\n",
		MAX_RUNS, DEFAULT_RUNS);
}

static double timeval_ns(const struct timeval *tv)
{
	return (double)tv->tv_sec * 1e9 + (double)tv->tv_usec * 1e3;
}

static bool have_inproc_library(void)
{
	char *path = cli_inproc_library();
	bool found = path != NULL;

	free(path);
	return found;
}

/* The child side: stdin from /dev/null, stdout to out_fd, exec or report why not. */
static void __attribute__((noreturn)) child_main(const char *file, char **argv, int out_fd,
						 int err_fd)
{
	sigset_t none;
	int null_fd, e;

	/* cprof ignores the terminal's signals while it waits; the command
	 * (and cprof record, which passes them on) must not inherit that. */
	signal(SIGINT, SIG_DFL);
	signal(SIGQUIT, SIG_DFL);
	signal(SIGPIPE, SIG_DFL);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	null_fd = open("/dev/null", O_RDONLY);
	if (null_fd < 0 || dup2(null_fd, STDIN_FILENO) < 0 || dup2(out_fd, STDOUT_FILENO) < 0) {
		e = errno;
		goto fail;
	}
	execvp(file, argv);
	e = errno;
fail:
	if (write(err_fd, &e, sizeof(e)) < 0)
		_exit(127);
	_exit(127);
}

/*
 * Runs file with argv to its end, its stdout into out_fd.  Sets *wall_ns (fork
 * to reap), *cpu_ns (user + system of the child and everything it reaped,
 * from wait4) and *status.  Returns 0, or -errno when it could not be run.
 */
static int run_child(const char *file, char **argv, int out_fd, double *wall_ns, double *cpu_ns,
		     int *status)
{
	struct rusage ru;
	uint64_t t0;
	int err[2], e = 0;
	pid_t pid;

	if (pipe2(err, O_CLOEXEC) < 0)
		return -errno;
	t0 = cprof_now_ns();
	pid = fork();
	if (pid < 0) {
		e = errno;
		close(err[0]);
		close(err[1]);
		return -e;
	}
	if (pid == 0) {
		close(err[0]);
		child_main(file, argv, out_fd, err[1]);
	}
	close(err[1]);
	/* EOF once the exec succeeded (the pipe is close-on-exec). */
	if (read(err[0], &e, sizeof(e)) != (ssize_t)sizeof(e))
		e = 0;
	close(err[0]);
	while (wait4(pid, status, 0, &ru) < 0) {
		if (errno != EINTR)
			return -errno;
	}
	*wall_ns = (double)(cprof_now_ns() - t0);
	*cpu_ns = timeval_ns(&ru.ru_utime) + timeval_ns(&ru.ru_stime);
	return e ? -e : 0;
}

/* Fills argv (RECORD_ARGC + the command + NULL) for cprof record --inproc. */
static void inproc_argv(struct overhead *o, char **argv)
{
	size_t n = 0, i;

	argv[n++] = "cprof";
	argv[n++] = "record";
	argv[n++] = "--inproc";
	argv[n++] = "-q";
	argv[n++] = "-o";
	argv[n++] = o->profile;
	argv[n++] = "-F";
	argv[n++] = o->hz;
	argv[n++] = "--mode";
	argv[n++] = o->s.mode == SAMPLER_WALL ? "wall" : "cpu";
	argv[n++] = "--";
	for (i = 0; o->cmd[i]; i++)
		argv[n++] = o->cmd[i];
	argv[n] = NULL;
}

static double rusage_ns(const struct rusage *ru)
{
	return timeval_ns(&ru->ru_utime) + timeval_ns(&ru->ru_stime);
}

/*
 * A ptrace variant, run in this process by record's own code, so that its
 * statistics arrive as data.  The command's CPU is that of the children
 * reaped meanwhile (the tracing thread reaps it); cprof's is this
 * process's, sampling, symbols and writing the profile included.  Sets
 * *code to the status record would exit with.  Returns 0, or -errno when
 * the time could not be read.
 */
static int run_ptrace(struct overhead *o, const struct overhead_variant *v, int out_fd, int *code)
{
	struct result *r = &o->res[v - overhead_variants];
	struct cli_session a = o->s;
	struct cli_child_io io = { .stdin_fd = o->null_fd, .stdout_fd = out_fd,
				   .default_signals = true };
	struct rusage c0, c1, s0, s1;
	struct sampler_stats st;
	uint64_t t0 = cprof_now_ns();

	a.stop = v->stop;
	a.source = v->source;
	a.quiet = true;
	a.json = false;
	a.output = o->profile;
	if (getrusage(RUSAGE_CHILDREN, &c0) < 0 || getrusage(RUSAGE_SELF, &s0) < 0)
		return -errno;
	*code = cli_record_ptrace(&a, o->cmd, &io, &st);
	if (getrusage(RUSAGE_CHILDREN, &c1) < 0 || getrusage(RUSAGE_SELF, &s1) < 0)
		return -errno;
	r->v[M_WALL][r->runs] = (double)(cprof_now_ns() - t0);
	r->v[M_CPU][r->runs] = rusage_ns(&c1) - rusage_ns(&c0);
	r->v[M_CPU_TOTAL][r->runs] = r->v[M_CPU][r->runs] + rusage_ns(&s1) - rusage_ns(&s0);
	r->v[M_CPROF_CPU][r->runs] = (double)st.cprof_cpu_ns;
	r->v[M_SAMPLES][r->runs] = (double)st.samples;
	r->v[M_STOPS][r->runs] = (double)st.tracer.stops;
	r->v[M_STOP_P50][r->runs] = (double)tracer_stop_percentile(&st.tracer, 50);
	r->v[M_STOP_P99][r->runs] = (double)tracer_stop_percentile(&st.tracer, 99);
	r->v[M_STOP_MAX][r->runs] = (double)st.tracer.stop_ns_max;
	r->v[M_STOPPED_FRACTION][r->runs] = st.tracer.stopped_fraction_max;
	r->v[M_SESSION][r->runs] = (double)st.elapsed_ns;
	return 0;
}

/* Unprofiled, or under cprof record --inproc: a child process, timed by wait4.
 * Sets *code to its exit status.  Returns 0 or -errno (it could not run). */
static int run_process(struct overhead *o, const struct overhead_variant *v, char **argv_buf, int out_fd,
		       int *code)
{
	struct result *r = &o->res[v - overhead_variants];
	const char *file = o->cmd[0];
	char **argv = o->cmd;
	int status, ret;

	if (v->kind == KIND_INPROC) {
		inproc_argv(o, argv_buf);
		/* This very binary, even if a rebuild replaced the file meanwhile. */
		file = "/proc/self/exe";
		argv = argv_buf;
	}
	ret = run_child(file, argv, out_fd, &r->v[M_WALL][r->runs], &r->v[M_CPU][r->runs],
			&status);
	if (ret < 0) {
		cli_error("cannot run '%s': %s", file, strerror(-ret));
		return ret;
	}
	r->v[M_CPU_TOTAL][r->runs] = r->v[M_CPU][r->runs];
	*code = cli_exit_code_of(status);
	return 0;
}

/*
 * One run of one variant.  Returns 0 when it was measured, or an exit code:
 * CPROF_EXIT_PARTIAL when the command failed, CPROF_EXIT_FATAL when it could
 * not be run at all (both reported).
 */
static int run_variant(struct overhead *o, size_t vi, char **argv_buf, unsigned round)
{
	const struct overhead_variant *v = &overhead_variants[vi];
	int out_fd, ret, code = 0;

	/* The same sink for every variant: writing costs the same in all. */
	out_fd = open(o->out_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (out_fd < 0) {
		cli_error("cannot create '%s': %s", o->out_path, strerror(errno));
		return CPROF_EXIT_FATAL;
	}
	if (v->kind == KIND_PTRACE) {
		ret = run_ptrace(o, v, out_fd, &code);
		if (ret < 0)
			cli_error("cannot read the resource usage of cprof: %s", strerror(-ret));
	} else {
		ret = run_process(o, v, argv_buf, out_fd, &code);
	}
	close(out_fd);
	unlink(o->profile);
	if (ret < 0)
		return CPROF_EXIT_FATAL;
	if (code != 0) {
		/* Under a profiler, its own errors (already on stderr) show
		 * here as its exit status too. */
		cli_error("overhead: '%s' exited with status %d under %s (run %u)", o->cmd[0], code,
			  v->name, round + 1);
		return CPROF_EXIT_PARTIAL;
	}
	o->res[vi].runs++;
	return 0;
}

/* Empties and removes the temporary directory (a killed writer may have left
 * its hidden temporary file there). */
static void remove_dir(const char *dir)
{
	struct dirent *de;
	char path[PATH_MAX + 256];
	DIR *d = opendir(dir);

	if (d) {
		while ((de = readdir(d)) != NULL) {
			if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
				continue;
			snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
			unlink(path);
		}
		closedir(d);
	}
	if (rmdir(dir) < 0)
		cli_error("cannot remove '%s': %s (remove it by hand)", dir, strerror(errno));
}

static enum cli_opt_status opt_runs(void *value, const char *arg)
{
	if (cli_parse_ulong(arg, 1, MAX_RUNS, value) == 0)
		return CLI_OPT_TAKEN;
	cli_error("overhead: invalid run count '%s': must be 1..%d", arg, MAX_RUNS);
	return CLI_OPT_INVALID;
}

static const struct cli_command_line overhead_line = {
	.name = "overhead", .usage = overhead_usage, .min_args = 1, .max_args = -1,
	.stop_at_operand = true,
	.missing = "which command? give it after --, e.g. cprof overhead -- ./bench",
};

/* Returns CLI_PARSE_OK, or what ends the command (reported). */
static enum cli_parse_result parse_args(int argc, char **argv, struct overhead *o)
{
	/* -F and --mode are record's, and checked the same way. */
	const struct cli_option opts[] = {
		CLI_OPTION_CALLBACK('F', "frequency", &o->s, cli_session_opt_hz),
		CLI_OPTION_CALLBACK('n', "runs", &o->runs, opt_runs),
		CLI_OPTION_CALLBACK(0, "mode", &o->s, cli_session_opt_mode),
		CLI_OPTION_BOOL(0, "json", &o->s.json),
		CLI_OPTION_BOOL('q', "quiet", &o->s.quiet),
		CLI_OPTION_END,
	};
	enum cli_parse_result r;
	int first;

	r = cli_parse_options(&overhead_line, opts, argc, argv, &first);
	if (r != CLI_PARSE_OK)
		return r;
	o->cmd = argv + first;
	snprintf(o->hz, sizeof(o->hz), "%u", o->s.hz);
	return CLI_PARSE_OK;
}

/* The temporary directory for profiles and captured output, and /dev/null
 * for the command's input.  Returns 0, or -1 once reported. */
static int make_scratch(struct overhead *o)
{
	const char *tmp = getenv("TMPDIR");

	if (!tmp || !*tmp)
		tmp = "/tmp";
	o->null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (o->null_fd < 0) {
		cli_error("cannot open '/dev/null': %s", strerror(errno));
		return -1;
	}
	if ((size_t)snprintf(o->dir, sizeof(o->dir), "%s/cprof-overhead.XXXXXX", tmp) >=
	    sizeof(o->dir) || !mkdtemp(o->dir)) {
		cli_error("cannot create a directory in '%s': %s (set TMPDIR to a writable "
			  "directory)", tmp, strerror(errno));
		close(o->null_fd);
		return -1;
	}
	snprintf(o->profile, sizeof(o->profile), "%s/profile.pb.gz", o->dir);
	snprintf(o->out_path, sizeof(o->out_path), "%s/stdout", o->dir);
	return 0;
}

static void drop_scratch(struct overhead *o)
{
	close(o->null_fd);
	remove_dir(o->dir);
}

/* The rounds.  Returns the exit code: that of the first failed run, else ok. */
static int measure(struct overhead *o, char **argv_buf)
{
	unsigned round;
	size_t vi;
	int code;

	/* Ctrl-C reaches the command through the terminal and ends the run
	 * with a status that stops the measurement; cprof stays to clean up. */
	signal(SIGINT, SIG_IGN);
	signal(SIGQUIT, SIG_IGN);
	o->complete = true;
	for (round = 0; round < o->runs; round++) {
		for (vi = 0; vi < N_VARIANTS; vi++) {
			if (o->res[vi].skipped)
				continue;
			code = run_variant(o, vi, argv_buf, round);
			if (code != 0) {
				/* One failed run spoils the comparison: stop,
				 * and show what was measured. */
				o->complete = false;
				goto out;
			}
		}
		if (!o->s.quiet)
			overhead_print_progress(o, round);
	}
	code = CPROF_EXIT_OK;
out:
	signal(SIGINT, SIG_DFL);
	signal(SIGQUIT, SIG_DFL);
	return code;
}

/* Finds the in-process library, makes room.  Returns CPROF_EXIT_OK or
 * _PARTIAL (no inproc library) to go on, else _FATAL once reported. */
static int prepare(struct overhead *o, char ***argv_buf)
{
	int ret = CPROF_EXIT_OK;
	size_t n;

	for (n = 0; o->cmd[n]; n++)
		;
	*argv_buf = calloc(RECORD_ARGC + n + 1, sizeof(**argv_buf));
	if (!*argv_buf) {
		cli_error("cannot allocate memory for the command line");
		return CPROF_EXIT_FATAL;
	}
	if (!have_inproc_library()) {
		cli_error("cannot find '%s' beside cprof or in %s: the inproc variant is not "
			  "measured (build or install it)", CLI_INPROC_LIB, PKGLIBDIR);
		o->res[N_VARIANTS - 1].skipped = "no " CLI_INPROC_LIB;
		ret = CPROF_EXIT_PARTIAL;
	}
	/* perf samples take no stop, in cpu mode only; where perf events
	 * are refused the row says so and the others are measured. */
	if (o->s.mode == SAMPLER_WALL)
		o->res[N_VARIANTS - 2].skipped = "wall mode samples at stops";
	else if (sampler_perf_probe() < 0)
		o->res[N_VARIANTS - 2].skipped = "perf events not permitted here";
	if (make_scratch(o) < 0)
		return CPROF_EXIT_FATAL;
	return ret;
}

int cmd_overhead(int argc, char **argv)
{
	struct overhead *o;
	enum cli_parse_result pr;
	char **argv_buf = NULL;
	int code, ret;

	o = calloc(1, sizeof(*o));
	if (!o) {
		cli_error("cannot allocate memory for the results");
		return CPROF_EXIT_FATAL;
	}
	cli_session_defaults(&o->s);
	o->runs = DEFAULT_RUNS;
	pr = parse_args(argc, argv, o);
	if (pr != CLI_PARSE_OK) {
		ret = cli_parse_exit_code(pr);
		goto out;
	}
	ret = prepare(o, &argv_buf);
	if (ret == CPROF_EXIT_FATAL)
		goto out;
	code = measure(o, argv_buf);
	if (code != CPROF_EXIT_OK)
		ret = code;
	drop_scratch(o);
	if (ret != CPROF_EXIT_FATAL) {
		if (o->s.json)
			overhead_print_json(o);
		else if (overhead_measured_any(o))
			overhead_print_table(o);
	}
out:
	free(argv_buf);
	free(o);
	return ret;
}
