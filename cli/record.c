/* SPDX-License-Identifier: MIT */
/* cprof record: run a command and profile it from its first instruction. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli/cli.h"


struct child {
	pid_t pid;
	int go_fd;	/* writing one byte lets the child exec */
	int err_fd;	/* the child's exec errno, or EOF once it exec'd */
};

static void record_usage(FILE *f)
{
	fprintf(f,
		"usage: cprof record [-d DURATION] [-o FILE] [-f pprof|collapsed|svg]\n"
		"                    [-F HZ] [--mode cpu|wall] [--stop thread|process]\n"
		"                    [--source auto|perf|ptrace] [--kernel on|off]\n"
		"                    [--python auto|off]\n"
		"                    [--stack-size BYTES] [--sched auto|rt|normal]\n"
		"                    [--debuginfod-timeout D] [--no-debuginfod]\n"
		"                    [--write-timeout D] [--fsync] [-q] [--json]\n"
		"                    [--helper-user USER]\n"
		"                    [--no-children] [--inproc] -- COMMAND [ARG...]\n"
		"\n"
		"Runs COMMAND, profiles it (every thread of it and of every process it starts,\n"
		"from their first instruction) until it exits or the duration ends, writes the\n"
		"profile, and exits with COMMAND's exit status (128+N when a signal N killed it).\n"
		"\n"
		"  -d, --duration D       stop profiling after D; COMMAND runs on to its end\n"
		"  -o, --output FILE      profile file (default cprof-COMMAND.pb.gz; - for stdout)\n"
		"  -F, --frequency HZ     samples per second per thread, 1..1000 (default 100)\n"
		"      --mode, --stop, --source, --kernel, --python, --stack-size, --sched,\n"
		"      --debuginfod-timeout, --no-debuginfod, --helper-user, --write-timeout,\n"
		"      --fsync            as for cprof attach (see cprof-attach(1))\n"
		"      --no-children      COMMAND alone, not the processes it starts (needed for\n"
		"                         a setuid program it runs: traced, it runs unprivileged)\n"
		"      --inproc           sample inside COMMAND instead (LD_PRELOAD of %s,\n"
		"                         SIGPROF timers): the classic way, for comparison\n"
		"  -f, --format FMT       pprof (default), collapsed (flamegraph.pl's folded\n"
		"                         stacks) or svg (an interactive flame graph)\n"
		"  -q, --quiet            no summary line or status line on stderr\n"
		"      --json             the summary as one JSON object on stdout\n"
		"  -h, --help             this help\n",
		CLI_INPROC_LIB);
}

/* The child side: wait for the go, exec, or report why not. */
static void __attribute__((noreturn)) child_main(int go_fd, int err_fd, char **argv,
						 const struct cli_child_io *io)
{
	sigset_t none;
	char c;
	int e;

	/* What cprof changed for itself must not leak into the command. */
	signal(SIGPIPE, SIG_DFL);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	if (io && io->default_signals) {
		signal(SIGINT, SIG_DFL);
		signal(SIGQUIT, SIG_DFL);
	}
	if (io && ((io->stdin_fd >= 0 && dup2(io->stdin_fd, STDIN_FILENO) < 0) ||
		   (io->stdout_fd >= 0 && dup2(io->stdout_fd, STDOUT_FILENO) < 0))) {
		e = errno;
		if (write(err_fd, &e, sizeof(e)) < 0)
			_exit(127);
		_exit(127);
	}
	if (read(go_fd, &c, 1) != 1)
		_exit(127);	/* cprof gave up (could not attach) */
	execvp(argv[0], argv);
	e = errno;
	if (write(err_fd, &e, sizeof(e)) < 0)
		_exit(127);
	_exit(127);
}

static int spawn(struct child *ch, char **argv, const struct cli_child_io *io)
{
	int go[2], err[2];

	if (pipe2(go, O_CLOEXEC) < 0)
		return -errno;
	if (pipe2(err, O_CLOEXEC) < 0) {
		close(go[0]);
		close(go[1]);
		return -errno;
	}
	ch->pid = fork();
	if (ch->pid < 0) {
		int e = errno;

		close(go[0]);
		close(go[1]);
		close(err[0]);
		close(err[1]);
		return -e;
	}
	if (ch->pid == 0) {
		close(go[1]);
		close(err[0]);
		child_main(go[0], err[1], argv, io);
	}
	close(go[0]);
	close(err[1]);
	ch->go_fd = go[1];
	ch->err_fd = err[0];
	return 0;
}

static void let_go(void *arg)
{
	struct child *ch = arg;

	if (write(ch->go_fd, "g", 1) != 1) {
		/* The child is gone already; its exit ends the session. */
	}
	close(ch->go_fd);
	ch->go_fd = -1;
}

/* 0 when the command was exec'd, its errno otherwise. */
static int exec_error(struct child *ch)
{
	int e = 0;

	if (read(ch->err_fd, &e, sizeof(e)) != (ssize_t)sizeof(e))
		e = 0;
	close(ch->err_fd);
	ch->err_fd = -1;
	return e;
}

static int wait_child(pid_t pid, int *status)
{
	while (waitpid(pid, status, 0) < 0) {
		if (errno != EINTR)
			return -errno;
	}
	return 0;
}

/*
 * The environment that makes the command sample itself: LD_PRELOAD of the
 * in-process library, and its settings.  Returns 0, or the exit code once
 * the error is reported.
 */
static int inproc_environment(const struct cli_session *a)
{
	char *lib, *preload = NULL, *cwd, hz[16];
	const char *old = getenv("LD_PRELOAD");
	int ret;

	if (strcmp(a->output, "-") == 0) {
		cli_error("record --inproc: the command writes the profile itself; give it a file "
			  "name with -o");
		return CPROF_EXIT_USAGE;
	}
	lib = cli_inproc_library();
	if (!lib) {
		cli_error("cannot find %s beside cprof or in %s (build or install it)", CLI_INPROC_LIB,
			  PKGLIBDIR);
		return CPROF_EXIT_FATAL;
	}
	/* The command may change directory: give it an absolute path. */
	cwd = realpath(".", NULL);
	if (!cwd || (a->output[0] != '/' && asprintf(&preload, "%s/%s", cwd, a->output) < 0)) {
		cli_error("cannot resolve '%s': %s", a->output, strerror(errno));
		ret = CPROF_EXIT_FATAL;
		goto out;
	}
	setenv("CPROF_INPROC_OUTPUT", a->output[0] == '/' ? a->output : preload, 1);
	free(preload);
	snprintf(hz, sizeof(hz), "%u", a->hz);
	setenv("CPROF_INPROC_HZ", hz, 1);
	setenv("CPROF_INPROC_MODE", a->mode == SAMPLER_WALL ? "wall" : "cpu", 1);
	if (a->fsync)
		setenv("CPROF_INPROC_FSYNC", "1", 1);
	if (old && *old ? asprintf(&preload, "%s:%s", lib, old) < 0 :
			  (preload = strdup(lib)) == NULL) {
		cli_error("cannot set LD_PRELOAD: %s", strerror(ENOMEM));
		ret = CPROF_EXIT_FATAL;
		goto out;
	}
	setenv("LD_PRELOAD", preload, 1);
	free(preload);
	ret = 0;
out:
	free(cwd);
	free(lib);
	return ret;
}

static int record_inproc(const struct cli_session *a, char **argv)
{
	struct stat st;
	struct child ch;
	int status, code, ret, e;

	code = inproc_environment(a);
	if (code)
		return code;
	/* The profile is the command's to write; remove a stale one so its
	 * absence afterwards means something. */
	unlink(a->output);
	ret = spawn(&ch, argv, NULL);
	if (ret < 0) {
		cli_error("cannot run '%s': %s", argv[0], strerror(-ret));
		return CPROF_EXIT_FATAL;
	}
	/* Ctrl-C reaches the command through the terminal; cprof waits for it
	 * like a shell does. */
	signal(SIGINT, SIG_IGN);
	signal(SIGQUIT, SIG_IGN);
	let_go(&ch);
	e = exec_error(&ch);
	if (wait_child(ch.pid, &status) < 0) {
		cli_error("cannot wait for '%s': %s", argv[0], strerror(errno));
		return CPROF_EXIT_FATAL;
	}
	if (e) {
		cli_error("cannot run '%s': %s", argv[0], strerror(e));
		return 127;
	}
	code = cli_exit_code_of(status);
	if (stat(a->output, &st) < 0) {
		cli_error("'%s' ended (status %d) without writing its in-process profile '%s' "
			  "(killed by a signal, or it called _exit)", argv[0], code, a->output);
		return code ? code : CPROF_EXIT_FATAL;
	}
	if (!a->quiet)
		fprintf(stderr, "cprof: wrote %s (in-process sampler, %u Hz, %s mode); '%s' exited "
			"with status %d\n", a->output, a->hz, a->mode == SAMPLER_WALL ? "wall" : "cpu",
			argv[0], code);
	return code;
}

/*
 * Whether execvp would find cmd: checked before anything starts, so that a
 * typo costs no profile of cprof's own child.  Returns 0 or -errno.
 */
static int command_runnable(const char *cmd)
{
	const char *path = getenv("PATH"), *p, *end;
	char buf[PATH_MAX];
	int err = -ENOENT;

	if (strchr(cmd, '/'))
		return access(cmd, X_OK) == 0 ? 0 : -errno;
	if (!path)
		path = "/usr/local/bin:/usr/bin:/bin";
	for (p = path; ; p = end + 1) {
		size_t len;

		end = strchr(p, ':');
		len = end ? (size_t)(end - p) : strlen(p);
		if (len + strlen(cmd) + 2 <= sizeof(buf)) {
			snprintf(buf, sizeof(buf), "%.*s/%s", (int)len, len ? p : ".", cmd);
			if (access(buf, X_OK) == 0)
				return 0;
			if (errno == EACCES)
				err = -EACCES;
		}
		if (!end)
			break;
	}
	return err;
}

int cli_record_ptrace(const struct cli_session *a, char **argv, const struct cli_child_io *io,
		      struct sampler_stats *stats)
{
	struct sampler_stats final;
	char what[128];
	struct child ch;
	int status = 0, code, ret, e;

	if (stats)
		memset(stats, 0, sizeof(*stats));
	ret = spawn(&ch, argv, io);
	if (ret < 0) {
		cli_error("cannot run '%s': %s", argv[0], strerror(-ret));
		return CPROF_EXIT_FATAL;
	}
	snprintf(what, sizeof(what), "record -- %s", argv[0]);
	memset(&final, 0, sizeof(final));
	code = cli_session_run(a, ch.pid, what, let_go, &ch, &final);
	if (stats)
		*stats = final;
	if (ch.go_fd >= 0) {
		/* Never attached: the child reads EOF and exits 127. */
		close(ch.go_fd);
	}
	e = exec_error(&ch);
	if (final.tracer.leader_exited) {
		status = final.tracer.leader_status;
	} else {
		/* Profiling ended first (-d, or a signal to cprof).  A signal
		 * sent to cprof alone by kill(1) goes on to the command, as
		 * timeout(1) does; one from the terminal reached it already. */
		if (final.stop_requested && final.tracer.stop_signal_from_user)
			kill(ch.pid, final.tracer.stop_signal);
		if (wait_child(ch.pid, &status) < 0) {
			cli_error("cannot wait for '%s': %s", argv[0], strerror(errno));
			return CPROF_EXIT_FATAL;
		}
	}
	if (e) {
		/* What was profiled is cprof's own child failing to exec. */
		if (strcmp(a->output, "-") != 0)
			unlink(a->output);
		cli_error("cannot run '%s': %s", argv[0], strerror(e));
		return 127;
	}
	if (!final.attached)
		return code;
	/* The command's status is what scripts rely on; a profile that could
	 * not be written only shows when the command itself succeeded. */
	return cli_exit_code_of(status) || code == CPROF_EXIT_OK ? cli_exit_code_of(status) : code;
}

static const struct cli_command_line record_line = {
	.name = "record", .usage = record_usage, .min_args = 1, .max_args = -1,
	.stop_at_operand = true,
	.missing = "which command? give it after --, e.g. cprof record -- ./bench",
};

/* Options that --inproc (the command samples itself) cannot honour.
 * Returns CLI_PARSE_OK or CLI_PARSE_ERROR once reported. */
static enum cli_parse_result check_inproc(const struct cli_session *a)
{
	if (a->duration_ns) {
		cli_error("record: --inproc profiles until the command exits; -d does not apply");
		return CLI_PARSE_ERROR;
	}
	if (a->format != CLI_FORMAT_PPROF) {
		cli_error("record: --inproc writes pprof only (the command writes it); -f does not apply");
		return CLI_PARSE_ERROR;
	}
	if (a->stop_given) {
		cli_error("record: --inproc stops nothing; --stop does not apply");
		return CLI_PARSE_ERROR;
	}
	if (a->source_given) {
		cli_error("record: --inproc samples in the command itself; --source does not apply");
		return CLI_PARSE_ERROR;
	}
	return CLI_PARSE_OK;
}

int cmd_record(int argc, char **argv)
{
	struct cli_session a;
	bool inproc = false, no_children = false;
	const struct cli_option opts[] = {
		CLI_OPTION_BOOL(0, "inproc", &inproc),
		CLI_OPTION_BOOL(0, "no-children", &no_children),
		CLI_SESSION_OPTIONS(&a),
		CLI_OPTION_END,
	};
	enum cli_parse_result r;
	int first, ret;

	cli_session_defaults(&a);
	r = cli_parse_options(&record_line, opts, argc, argv, &first);
	if (r == CLI_PARSE_OK && inproc)
		r = check_inproc(&a);
	if (r != CLI_PARSE_OK)
		return cli_parse_exit_code(r);
	a.tracer_flags = no_children ? 0 : TRACER_FOLLOW;
	if (!a.output) {
		snprintf(a.default_output, sizeof(a.default_output), "cprof-%.40s.pb.gz",
			 basename(argv[first]));
		a.output = a.default_output;
	}
	if (cli_session_finish_args(&a, "record", 0) != CLI_PARSE_OK)
		return CPROF_EXIT_USAGE;
	ret = command_runnable(argv[first]);
	if (ret < 0) {
		cli_error("cannot run '%s': %s", argv[first], strerror(-ret));
		return 127;
	}
	ret = cli_check_output(a.output);
	if (ret < 0) {
		cli_error("cannot write '%s': %s", a.output, strerror(-ret));
		return CPROF_EXIT_FATAL;
	}
	if (!inproc && cli_session_check_sched(&a) != CPROF_EXIT_OK)
		return CPROF_EXIT_FATAL;
	return inproc ? record_inproc(&a, argv + first) :
			cli_record_ptrace(&a, argv + first, NULL, NULL);
}
