/* SPDX-License-Identifier: MIT */
/* Shared by the subcommands: exit codes, error reporting, option parsing. */
#ifndef CPROF_CLI_CLI_H
#define CPROF_CLI_CLI_H

#include <stddef.h>
#include <stdio.h>
#include <stdint.h>
#include <sys/types.h>

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

/* Writes s as a JSON string literal (null when s is NULL). */
void cli_json_string(FILE *f, const char *s);

int cmd_attach(int argc, char **argv);
int cmd_dump_threads(int argc, char **argv);

#endif
