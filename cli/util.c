/* SPDX-License-Identifier: MIT */
/* Error reporting, option value parsing, attach diagnostics, the standard
 * files' settling and the names of walk ends for cli/. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli/cli.h"
#include "process/procfs.h"

void cli_error(const char *fmt, ...)
{
	va_list ap;

	fflush(stdout);
	fputs("cprof: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static const struct {
	const char *suffix;
	double ns;
} duration_units[] = {
	{ "ns", 1 }, { "us", 1e3 }, { "ms", 1e6 }, { "s", 1e9 }, { "", 1e9 },
	{ "m", 60e9 }, { "min", 60e9 }, { "h", 3600e9 },
};

int cli_parse_duration(const char *s, uint64_t *ns)
{
	char *end;
	double v;
	size_t i;

	if (!s || !*s || *s == '-' || *s == '+')
		return -EINVAL;
	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || v <= 0)
		return -EINVAL;
	for (i = 0; i < sizeof(duration_units) / sizeof(duration_units[0]); i++) {
		if (strcmp(end, duration_units[i].suffix) == 0) {
			double r = v * duration_units[i].ns;

			if (r < 1 || r > 1e18)
				return -EINVAL;
			*ns = (uint64_t)r;
			return 0;
		}
	}
	return -EINVAL;
}

int cli_parse_ulong(const char *s, unsigned long min, unsigned long max, unsigned long *out)
{
	unsigned long v;
	char *end;

	if (!s || *s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	v = strtoul(s, &end, 10);
	if (*end)
		return -EINVAL;
	if (errno == ERANGE || v < min || v > max)
		return -ERANGE;
	*out = v;
	return 0;
}

int cli_parse_size(const char *s, size_t *out)
{
	unsigned long long v;
	char *end;

	if (!s || *s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno)
		return -EINVAL;
	if (strcasecmp(end, "k") == 0 || strcasecmp(end, "kib") == 0)
		v <<= 10;
	else if (strcasecmp(end, "m") == 0 || strcasecmp(end, "mib") == 0)
		v <<= 20;
	else if (*end)
		return -EINVAL;
	*out = (size_t)v;
	return 0;
}

int cli_parse_pid(const char *s, pid_t *pid)
{
	unsigned long v;

	if (cli_parse_ulong(s, 1, INT_MAX, &v) < 0)
		return -EINVAL;
	*pid = (pid_t)v;
	return 0;
}

bool cli_target_gone(pid_t pid)
{
	struct procfs_stat st;

	return procfs_stat_pid(pid, &st) < 0 || st.state == 'Z' || st.state == 'X';
}

/* One callback and one check serve attach, top, serve and dump-threads, so
 * their -p errors read the same. */
enum cli_opt_status cli_opt_pid(void *value, const char *arg)
{
	if (cli_parse_pid(arg, value) == 0)
		return CLI_OPT_TAKEN;
	cli_error("invalid pid '%s': expected a positive process id", arg);
	return CLI_OPT_INVALID;
}

enum cli_parse_result cli_parse_pid_options(const struct cli_command_line *cl,
					    const struct cli_option *opts, int argc, char **argv,
					    int *first_arg, const pid_t *pid)
{
	enum cli_parse_result r;

	r = cli_parse_options(cl, opts, argc, argv, first_arg);
	if (r == CLI_PARSE_OK && !*pid) {
		cli_error("%s: which process? give its pid with -p PID", cl->name);
		return CLI_PARSE_ERROR;
	}
	return r;
}

int cli_check_output(const char *path)
{
	char *copy, *dir, *probe = NULL;
	struct stat st;
	int fd, ret = 0;

	if (strcmp(path, "-") == 0)
		return 0;
	if (!*path)
		return -ENOENT;
	if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
		return -EISDIR;
	copy = strdup(path);
	if (!copy)
		return -ENOMEM;
	dir = dirname(copy);
	/* Creating a file is the only honest test: permissions, read-only
	 * file systems, ACLs and root's exemptions all come into play. */
	if (asprintf(&probe, "%s/.cprof-probe.XXXXXX", dir) < 0) {
		probe = NULL;
		ret = -ENOMEM;
		goto out;
	}
	fd = mkstemp(probe);
	if (fd < 0) {
		ret = -errno;
		goto out;
	}
	close(fd);
	unlink(probe);
out:
	free(probe);
	free(copy);
	return ret;
}

void cli_settle_std_files(void)
{
	static const int fds[] = { STDOUT_FILENO, STDERR_FILENO };
	char path[32];
	struct stat st;
	size_t i;
	int fd;

	for (i = 0; i < sizeof(fds) / sizeof(fds[0]); i++) {
		if (fstat(fds[i], &st) < 0 || !S_ISREG(st.st_mode))
			continue;
		snprintf(path, sizeof(path), "/proc/self/fd/%d", fds[i]);
		/* Opened for writing without O_TRUNC: XFS marks only a writer's
		 * release; ext4 any.  Nothing is written. */
		fd = open(path, O_WRONLY | O_APPEND | O_NOCTTY | O_CLOEXEC);
		if (fd < 0)
			fd = open(path, O_RDONLY | O_NOCTTY | O_CLOEXEC);
		if (fd >= 0)
			close(fd);
	}
}

bool cli_read_proc_int(const char *path, int *v)
{
	FILE *f = fopen(path, "re");
	bool ok;

	if (!f)
		return false;
	ok = fscanf(f, "%d", v) == 1;
	fclose(f);
	return ok;
}

static void comm_of(pid_t pid, char *buf, size_t size)
{
	struct procfs_stat st;

	if (procfs_stat_pid(pid, &st) == 0)
		snprintf(buf, size, "%s", st.comm);
	else
		snprintf(buf, size, "?");
}

int cli_attach_obstacle(pid_t pid, int err, char *buf, size_t size)
{
	struct procfs_stat st;
	long tgid, tracer, uid;
	char comm[64];
	int scope;

	if (procfs_stat_pid(pid, &st) < 0 || err == -ESRCH) {
		snprintf(buf, size, "no such process");
		return 1;
	}
	if (procfs_status_field(pid, "Tgid", &tgid) == 0) {
		if (tgid == (long)getpid()) {
			snprintf(buf, size, "it is cprof itself");
			return 1;
		}
		if (tgid != (long)pid) {
			snprintf(buf, size, "it is a thread of process %ld (use -p %ld)", tgid, tgid);
			return 1;
		}
	}
	if (st.state == 'Z' || st.state == 'X') {
		snprintf(buf, size, "the process is a zombie (it has exited)");
		return 1;
	}
	if (st.flags & 0x00200000) {	/* PF_KTHREAD */
		snprintf(buf, size, "it is a kernel thread (it has no user-space stack to profile)");
		return 1;
	}
	if (procfs_status_field(pid, "TracerPid", &tracer) == 0 && tracer != 0) {
		/* The tracer may be one thread of a debugger: name its process. */
		if (procfs_status_field((pid_t)tracer, "Tgid", &tgid) == 0)
			tracer = tgid;
		comm_of((pid_t)tracer, comm, sizeof(comm));
		snprintf(buf, size, "already traced by pid %ld (%s; a process has one tracer at a time)",
			 tracer, comm);
		return 1;
	}
	if (!err)
		return 0;
	if (err == -EPERM) {
		if (!cli_read_proc_int("/proc/sys/kernel/yama/ptrace_scope", &scope))
			scope = -1;
		if (procfs_status_field(pid, "Uid", &uid) == 0 && uid != (long)geteuid() &&
		    geteuid() != 0)
			snprintf(buf, size, "%s (it belongs to uid %ld; run as root or with CAP_SYS_PTRACE)",
				 strerror(EPERM), uid);
		else if (scope > 0)
			snprintf(buf, size, "%s (ptrace_scope=%d; run as root or see /proc/sys/kernel/yama/ptrace_scope)",
				 strerror(EPERM), scope);
		else
			snprintf(buf, size, "%s (run as root or with CAP_SYS_PTRACE)", strerror(EPERM));
		return 1;
	}
	snprintf(buf, size, "%s", strerror(-err));
	return 1;
}

void cli_json_string(FILE *f, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;

	if (!s) {
		fputs("null", f);
		return;
	}
	fputc('"', f);
	for (; *p; p++) {
		if (*p == '"' || *p == '\\')
			fprintf(f, "\\%c", *p);
		else if (*p < 0x20)
			fprintf(f, "\\u%04x", *p);
		else
			fputc(*p, f);
	}
	fputc('"', f);
}

char *cli_inproc_library(void)
{
	char exe[PATH_MAX], *path = NULL;
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);

	/* Beside the cprof binary first (a build tree), then where make
	 * install puts it. */
	if (n > 0) {
		exe[n] = '\0';
		if (asprintf(&path, "%s/%s", dirname(exe), CLI_INPROC_LIB) >= 0 &&
		    access(path, R_OK) == 0)
			return path;
		free(path);
		path = NULL;
	}
	if (asprintf(&path, "%s/%s", PKGLIBDIR, CLI_INPROC_LIB) >= 0 && access(path, R_OK) == 0)
		return path;
	free(path);
	return NULL;
}

int cli_exit_code_of(int status)
{
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return CPROF_EXIT_FATAL;
}

const struct cli_cut_end cli_cut_ends[CLI_N_CUT_ENDS] = {
	{ REMOTE_END_TRUNCATED, "truncated" },
	{ REMOTE_END_NO_INFO, "no_info" },
	{ REMOTE_END_BAD_MEMORY, "bad_memory" },
	{ REMOTE_END_BAD_FRAME, "bad_frame" },
	{ REMOTE_END_MAX_FRAMES, "max_frames" },
	{ REMOTE_END_PARSER, "parser" },
};
