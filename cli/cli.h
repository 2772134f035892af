/* SPDX-License-Identifier: MIT */
/* Shared by the subcommands: exit codes, error reporting, option parsing. */
#ifndef CPROF_CLI_CLI_H
#define CPROF_CLI_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdint.h>
#include <sys/types.h>

#include "cli/options.h"
#include "unwind/sampler.h"

enum {
	CPROF_EXIT_OK = 0,
	CPROF_EXIT_PARTIAL = 1,	/* a result was produced, but something was lost */
	CPROF_EXIT_FATAL = 2,
	CPROF_EXIT_USAGE = 64,
};

/* Prints "cprof: <message>\n" on stderr: the one way errors reach users. */
void cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* "500ms", "30s", "2m", "1h", "1.5s", a bare number = seconds.  > 0.
 * Returns 0 or -EINVAL. */
int cli_parse_duration(const char *s, uint64_t *ns);

/* A decimal integer in [min, max].  Returns 0, -EINVAL or -ERANGE. */
int cli_parse_ulong(const char *s, unsigned long min, unsigned long max, unsigned long *out);

/* Bytes with an optional k/m suffix (KiB, MiB).  Returns 0 or -EINVAL. */
int cli_parse_size(const char *s, size_t *out);

/* A process id: a positive decimal number.  Returns 0 or -EINVAL. */
int cli_parse_pid(const char *s, pid_t *pid);

/* Whether the process pid is gone: no longer there, or a zombie (serve and
 * top ask while no session would say it). */
bool cli_target_gone(pid_t pid);

/* The -p/--pid option's callback: value is a pid_t. */
enum cli_opt_status cli_opt_pid(void *value, const char *arg);

/*
 * cli_parse_options() for a subcommand that needs a target: past a clean
 * parse, a zero *pid is reported ("<name>: which process? ...") as a usage
 * error.  Returns what cli_parse_options() returns, or CLI_PARSE_ERROR.
 */
enum cli_parse_result cli_parse_pid_options(const struct cli_command_line *cl,
					    const struct cli_option *opts, int argc, char **argv,
					    int *first_arg, const pid_t *pid);

/*
 * Checks, before anything is attached, that path can be written: its
 * directory exists and accepts a new file, and path is not a directory.
 * "-" (stdout) always passes.  Returns 0 or -errno.
 */
int cli_check_output(const char *path);

/*
 * Says why pid cannot be traced, as "<cause> (<hint>)", into buf: the checks
 * that need no ptrace call (no such process, cprof itself, a thread of
 * another process, zombie, kernel thread, already traced), or the reason
 * behind err (from PTRACE_SEIZE) when err != 0.  Returns 0 when nothing
 * stands in the way (err == 0 and all checks pass), 1 when buf holds a cause.
 */
int cli_attach_obstacle(pid_t pid, int err, char *buf, size_t size);

/*
 * Keeps cprof's exit from waiting for the disk.  ext4 (auto_da_alloc) and
 * XFS mark a file truncated to size 0 -- a shell's "2>FILE" does it to an
 * existing FILE -- and when an open file of it is released, they start
 * writing back what it holds that has no disk blocks yet.  For cprof that
 * release is its exit, the summary just written, and submitting that
 * write-back waits in the block layer's throttle (wbt) behind whatever
 * else writes to the disk: tens of seconds past the summary on a busy
 * machine, in state D, where no signal ends it.  Called first thing: an
 * open and close of standard output and error (when they are regular
 * files) takes that flush while they hold nothing of cprof's, and clears
 * the mark; what cprof writes later goes to the disk in the kernel's own
 * time.
 */
void cli_settle_std_files(void);

/* The integer a /proc file (a sysctl) holds.  Returns false when it cannot
 * be read. */
bool cli_read_proc_int(const char *path, int *v);

/* Writes s as a JSON string literal (null when s is NULL). */
void cli_json_string(FILE *f, const char *s);

/* What attach and record write (-f). */
enum cli_format {
	CLI_FORMAT_PPROF,	/* gzipped profile.proto */
	CLI_FORMAT_COLLAPSED,	/* folded stacks, flamegraph.pl's input */
	CLI_FORMAT_SVG,		/* an interactive flame graph */
};

/* --sched: the sampling thread's scheduling policy. */
enum cli_sched {
	CLI_SCHED_AUTO,		/* real-time when permitted, else nice -10 */
	CLI_SCHED_RT,		/* real-time, or refuse to start */
	CLI_SCHED_NORMAL,	/* nice -10 when permitted, never real-time */
};

/* Sampling options shared by attach and record. */
struct sym_kallsyms;

struct cli_session {
	unsigned hz;
	uint64_t duration_ns;
	size_t stack_size;
	enum sampler_mode mode;
	enum sampler_stop stop;
	enum sampler_source source;
	enum cli_sched sched;
	enum cli_format format;
	const char *output;
	char default_output[64];
	bool quiet;
	bool json;
	bool stop_given;	/* --stop was on the command line */
	bool source_given;	/* --source was */
	bool stack_size_given;	/* --stack-size was */
	bool no_debuginfod;	/* --no-debuginfod */
	const char *helper_user;	/* --helper-user: the parser's user when root */
	struct conf_helper *helper;	/* top's confined parser, once started */
	uint64_t debuginfod_timeout_ns;	/* --debuginfod-timeout: bound of one lookup */
	/* --write-timeout: from the end of sampling, the bound of symbolizing
	 * and writing; past it the rest stays unsymbolized (exit 1) */
	uint64_t write_timeout_ns;
	bool fsync;		/* --fsync: wait for the disk to hold the profile */
	unsigned tracer_flags;	/* TRACER_FOLLOW, TRACER_DESCENDANTS: the tree too */
	bool kernel_off;	/* --kernel off */
	bool python_off;	/* --python off */
	/* Set by cli_kernel_setup: the kernel's symbols when kernel frames
	 * are taken (NULL: none), and otherwise why not. */
	struct sym_kallsyms *kallsyms;
	const char *kernel_why;
};

void cli_session_defaults(struct cli_session *a);

struct conf_helper;

/*
 * The confined parser (confine/confine.h) every command that reads a live
 * target symbolizes through, run as user (NULL: nobody) when cprof is root.
 * Started before anything of the target is opened.  Returns CPROF_EXIT_OK
 * with *out set, or CPROF_EXIT_FATAL once reported.
 */
int cli_helper_start(const char *user, struct conf_helper **out);

/* The parser's handler (a conf_serve_fn): symbolization, perf maps and
 * stack walks (symbolize/remote.h, unwind/remote_client.h). */
int cli_parser_serve(void **state, uint32_t type, const void *req, size_t len, int *fds,
		     size_t nfds, void *resp, size_t cap, size_t *resp_len);

/* How many times the parser has died so far (NULL: 0). */
size_t cli_helper_deaths(struct conf_helper *h);

struct proc_module;
struct proc_modules;
struct sym_ctx;

/* Reports, in one line, that the parser answered err (-errno) for m instead
 * of its names (sym_module_parser_error): its frames keep their addresses. */
void cli_helper_report_error(const struct proc_module *m, int err);

/* Reports so each module of mods the parser answered an error for in sym
 * (NULL: none).  Returns how many; call before sym is destroyed. */
size_t cli_helper_errors(struct sym_ctx *sym, const struct proc_modules *mods);

struct remote_client_error;
/* The same for the n modules of mods the parser failed on while walking
 * (errs), but those sym failed on too (cli_helper_errors reports them).
 * Returns how many it reported. */
size_t cli_helper_walk_errors(struct sym_ctx *sym, const struct proc_modules *mods,
			      const struct remote_client_error *errs, size_t n);

/* How many modules of mods the parser failed on, naming (sym, NULL: none)
 * or walking (the n errs), without a word. */
size_t cli_helper_failed_modules(struct sym_ctx *sym, const struct proc_modules *mods,
				 const struct remote_client_error *errs, size_t n);

/* Reports each death of the parser and ends it.  Returns CPROF_EXIT_OK, or
 * CPROF_EXIT_PARTIAL when it died (some frames lost their names). */
int cli_helper_end(struct conf_helper *h);

/* Option callbacks on a struct cli_session (value), one per shared option
 * that needs checking; each reports what it rejects. */
enum cli_opt_status cli_session_opt_duration(void *value, const char *arg);
enum cli_opt_status cli_session_opt_format(void *value, const char *arg);
enum cli_opt_status cli_session_opt_hz(void *value, const char *arg);
enum cli_opt_status cli_session_opt_stack_size(void *value, const char *arg);
enum cli_opt_status cli_session_opt_mode(void *value, const char *arg);
enum cli_opt_status cli_session_opt_stop(void *value, const char *arg);
enum cli_opt_status cli_session_opt_source(void *value, const char *arg);
enum cli_opt_status cli_session_opt_sched(void *value, const char *arg);
enum cli_opt_status cli_session_opt_debuginfod_timeout(void *value, const char *arg);
enum cli_opt_status cli_session_opt_write_timeout(void *value, const char *arg);
enum cli_opt_status cli_session_opt_kernel(void *value, const char *arg);
enum cli_opt_status cli_session_opt_python(void *value, const char *arg);

/*
 * Whether a session of a in mode takes kernel frames: not with --kernel
 * off, at stops, where perf events may not sample in the kernel, or where
 * /proc/kallsyms hides the kernel's addresses (said in one line on stderr
 * unless quiet).  Sets a->kallsyms (freed by cli_kernel_done) and
 * a->kernel_why.
 */
bool cli_kernel_setup(struct cli_session *a, enum sampler_mode mode, bool quiet);
void cli_kernel_done(struct cli_session *a);

/* The options of how samples are taken that every sampling command shares
 * (attach, record, serve, top), on the session *s. */
#define CLI_SAMPLING_OPTIONS(s) \
	CLI_OPTION_CALLBACK('F', "frequency", (s), cli_session_opt_hz), \
	CLI_OPTION_CALLBACK(0, "stop", (s), cli_session_opt_stop), \
	CLI_OPTION_CALLBACK(0, "source", (s), cli_session_opt_source), \
	CLI_OPTION_CALLBACK(0, "stack-size", (s), cli_session_opt_stack_size), \
	CLI_OPTION_CALLBACK(0, "kernel", (s), cli_session_opt_kernel), \
	CLI_OPTION_CALLBACK(0, "python", (s), cli_session_opt_python), \
	CLI_OPTION_CALLBACK(0, "debuginfod-timeout", (s), cli_session_opt_debuginfod_timeout), \
	CLI_OPTION_BOOL(0, "no-debuginfod", &(s)->no_debuginfod), \
	CLI_OPTION_STRING(0, "helper-user", &(s)->helper_user)

/* ... and those of a session that runs for a while and may write a profile
 * (attach, record, top). */
#define CLI_RUN_OPTIONS(s) \
	CLI_SAMPLING_OPTIONS(s), \
	CLI_OPTION_CALLBACK('d', "duration", (s), cli_session_opt_duration), \
	CLI_OPTION_STRING('o', "output", &(s)->output), \
	CLI_OPTION_CALLBACK(0, "mode", (s), cli_session_opt_mode), \
	CLI_OPTION_CALLBACK(0, "sched", (s), cli_session_opt_sched)

/* ... and those of attach and record, which end with the profile written. */
#define CLI_SESSION_OPTIONS(s) \
	CLI_RUN_OPTIONS(s), \
	CLI_OPTION_CALLBACK('f', "format", (s), cli_session_opt_format), \
	CLI_OPTION_CALLBACK(0, "write-timeout", (s), cli_session_opt_write_timeout), \
	CLI_OPTION_BOOL(0, "fsync", &(s)->fsync), \
	CLI_OPTION_BOOL('q', "quiet", &(s)->quiet), \
	CLI_OPTION_BOOL(0, "json", &(s)->json)

/* The help of -F, --mode, --sched and CLI_SAMPLING_OPTIONS, as attach and
 * top print it. */
#define CLI_SAMPLING_HELP \
	"  -F, --frequency HZ     samples per second per thread, 1..1000 (default 100)\n" \
	"      --mode cpu|wall    cpu (default): running threads, valued by the CPU time\n" \
	"                         they used; wall: every thread, valued in wall time\n" \
	"      --stop thread|process\n" \
	"                         thread (default): one at a time; process: the sampled\n" \
	"                         threads together (one instant)\n" \
	"      --source auto|perf|ptrace\n" \
	"                         who copies a cpu-mode sample: perf, the kernel at a\n" \
	"                         timer interrupt (no thread stopped); ptrace, cprof at\n" \
	"                         a stop; auto (default): perf where permitted, Go\n" \
	"                         programs included\n" \
	"      --kernel on|off    on (default): perf samples taken in the kernel carry\n" \
	"                         its frames, under the user stack, where permitted\n" \
	"      --python auto|off  auto (default): CPython's frames spliced into the\n" \
	"                         native stacks, read at stops (3.8-3.13)\n" \
	"      --stack-size N     bytes of stack copied per sample, 4k..8m (default 64k;\n" \
	"                         perf samples: 16k, grown to 64k where a walk needs it;\n" \
	"                         more than 65528 makes auto sample at stops)\n" \
	"      --sched auto|rt|normal\n" \
	"                         the sampling thread's scheduling: auto (default):\n" \
	"                         real-time when permitted, else nice -10; rt: real-time\n" \
	"                         or exit; normal: never real-time\n" \
	"      --debuginfod-timeout D\n" \
	"                         bound of one debuginfo download from DEBUGINFOD_URLS\n" \
	"                         (default 5s; a run's downloads get six times that)\n" \
	"      --no-debuginfod    download no debuginfo, even with DEBUGINFOD_URLS set\n" \
	"      --helper-user USER the confined parser's user when root (default nobody)\n"

/* With --sched rt, whether real-time scheduling is permitted: returns
 * CPROF_EXIT_OK, or CPROF_EXIT_FATAL once reported. */
int cli_session_check_sched(const struct cli_session *a);

/* Defaults that depend on the pid; checks option combinations.  Returns
 * CLI_PARSE_OK, or CLI_PARSE_ERROR once reported (exit 64). */
enum cli_parse_result cli_session_finish_args(struct cli_session *a, const char *cmd, pid_t pid);

/*
 * Samples pid (attach semantics: seize, sample, let go), writes the
 * profile and the summary (text on stderr unless quiet; JSON on stdout with
 * --json).  what describes the command in the profile's comments.
 * after_attach runs on the session thread once the target is seized.
 * *final receives the session's statistics.  Returns the exit code.
 */
int cli_session_run(const struct cli_session *a, pid_t pid, const char *what,
		    void (*after_attach)(void *), void *arg, struct sampler_stats *final);

struct prof_builder;
struct prof_stacks;
struct sym_ctx;

/* The export options of a profile of s's samples taken with the options
 * a: their values, labels, Python and kernel frames (no time, no deadline). */
struct prof_export_opts;
void cli_session_export(const struct cli_session *a, const struct sampler *s,
			struct prof_export_opts *o);

/*
 * The profile of stacks, sampled by s with the options a (a whole session,
 * or a window of one whose statistics st are), symbolized with sym (NULL:
 * addresses only), with the cost comments attach writes; what describes
 * the command.  Symbolizing has a->write_timeout_ns from now; *modules_cut
 * (may be NULL) says how many modules it left unnamed.  Prints nothing.
 * Returns 0 or -errno; *out is the caller's to destroy.
 */
int cli_session_profile(const struct cli_session *a, const char *what, const struct sampler *s,
			const struct prof_stacks *stacks, struct sym_ctx *sym,
			const struct sampler_stats *st, struct prof_builder **out,
			size_t *modules_cut);

#define CLI_INPROC_LIB "libcprof-inproc.so"

/* The in-process sampler library, beside the cprof binary or installed:
 * a malloc'd path, or NULL when neither exists. */
char *cli_inproc_library(void);

/* A command's exit status as a shell reports it: 128+N for signal N. */
int cli_exit_code_of(int status);

/* Where record's command reads and writes: -1 keeps cprof's own. */
struct cli_child_io {
	int stdin_fd, stdout_fd;
	bool default_signals;	/* SIGINT and SIGQUIT back to their default action */
};

/*
 * record's ptrace path: runs argv (io may be NULL), profiles it until it
 * exits or a's duration ends, writes the profile.  *stats (may be NULL)
 * receives the session's statistics, zeroed when it never attached.
 * Returns the exit code record would exit with (the command's status, or
 * cprof's own failure), everything already reported.
 */
int cli_record_ptrace(const struct cli_session *a, char **argv, const struct cli_child_io *io,
		      struct sampler_stats *stats);

int cmd_attach(int argc, char **argv);
int cmd_record(int argc, char **argv);
int cmd_dump_threads(int argc, char **argv);
int cmd_serve(int argc, char **argv);
int cmd_top(int argc, char **argv);

/*
 * dump-threads for cprof serve: captures pid's threads and prints them to f
 * as `cprof dump-threads -p PID [--json]` does, and nothing anywhere else.
 * Returns 0, or -errno with "<cause> (<hint>)" in why.
 */
int cli_dump_threads_write(FILE *f, pid_t pid, bool json, struct conf_helper *helper, char *why,
			   size_t size);

/* Shared by report and diff (cli/report.c). */
struct prof_rd_profile;
/* Reads a profile.  Returns 0, or -errno once "cprof: cannot read profile
 * 'F': ..." is reported (exit 2). */
int cli_read_profile(const char *path, struct prof_rd_profile **out);
/* --by function|line|file into an int holding an enum prof_rpt_by; the
 * _no_file variant refuses file (diff). */
enum cli_opt_status cli_opt_by(void *value, const char *arg);
enum cli_opt_status cli_opt_by_no_file(void *value, const char *arg);
const char *cli_by_name(int by);
/* The sample type called type, or the profile's default when type is NULL.
 * Returns 0, or -ENOENT once the error is reported (exit 64). */
int cli_pick_type(const char *cmd, const struct prof_rd_profile *p, const char *path,
		  const char *type, size_t *idx);
int cmd_report(int argc, char **argv);
int cmd_diff(int argc, char **argv);
int cmd_overhead(int argc, char **argv);

/* The reasons a walk is cut short, named as attach's notes, its JSON and
 * serve's /metrics name them, in the order they print them (cli/util.c).
 * Every end but these, complete and go_switch is counted as "other". */
#define CLI_N_CUT_ENDS 6
extern const struct cli_cut_end {
	enum remote_end end;
	const char *key;
} cli_cut_ends[CLI_N_CUT_ENDS];

#endif
