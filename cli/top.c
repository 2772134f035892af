/* SPDX-License-Identifier: MIT */
/* cprof top: a live view of the functions a running process spends its time in. */
#include "config.h"

#include <curses.h>
#include <dirent.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/signalfd.h>
#include <time.h>
#include <unistd.h>

#include "cli/top.h"
#include "lib/clock.h"

static void top_usage(FILE *f)
{
	fprintf(f,
		"usage: cprof top -p PID [-b] [--json] [-d DURATION] [-o FILE] [-F HZ]\n"
		"                 [--mode cpu|wall] [--children] [--stop thread|process]\n"
		"                 [--source auto|perf|ptrace] [--kernel on|off]\n"
		"                 [--python auto|off] [--stack-size BYTES]\n"
		"                 [--sched auto|rt|normal] [--debuginfod-timeout D]\n"
		"                 [--no-debuginfod] [--helper-user USER] [--write-timeout D]\n"
		"\n"
		"Shows, redrawn every second, the functions the running process PID spends its\n"
		"time in, as top shows processes; kernel functions are marked [k].  Keys: q\n"
		"quit, s sort (flat or cumulative), a last second or since the start, t\n"
		"threads, l lines, p pause (the process is let go until p again), r reset the\n"
		"totals.\n"
		"\n"
		"  -p, --pid PID          process to watch\n"
		"      --children         its descendants too\n"
		"  -b, --batch            no screen: a block of plain text a second on stdout\n"
		"      --json             no screen: one JSON object a second on stdout\n"
		"  -d, --duration D       end after D: 500ms, 30s, 2m (default: until q,\n"
		"                         Ctrl-C or the process exits)\n"
		"  -o, --output FILE      also write the whole session as a pprof profile\n"
		"      --write-timeout D  bound of symbolizing that profile at the end (default\n"
		"                         20s); past it frames keep addresses and build ids\n"
		CLI_SAMPLING_HELP
		"  -h, --help             this help\n");
}

static const struct cli_command_line top_line = {
	.name = "top", .usage = top_usage, .min_args = 0, .max_args = 0,
};

/* Everything one run of top holds. */
struct top {
	struct cli_session a;
	pid_t pid;
	bool batch, children;
	struct top_feed *feed;
	struct top_model *model;
	struct top_view_state v;
	struct top_header h;
	struct sampler_stats prev;	/* the session's at the last interval */
	unsigned prev_segment;
	uint64_t start_ns, deadline_ns;
	uint64_t cpu_ns, wall_ns;	/* cprof's CPU time and the clock at the last interval */
	int sigfd;
	bool screen;
	bool stopping;		/* the session was asked to end: quit when it has */
	bool pausing;		/* ... to pause */
	bool quit;
	bool ever_attached;
	int code;
	char message[256];	/* said on stderr once the screen is gone */
};

static uint64_t process_cpu_ns(void)
{
	struct timespec ts;

	if (clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts) < 0)
		return 0;
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The process's name and thread count, as /proc says now. */
static void read_process(struct top *t)
{
	char path[64];
	struct dirent *d;
	FILE *f;
	DIR *dir;
	size_t len;

	snprintf(path, sizeof(path), "/proc/%d/comm", (int)t->pid);
	f = fopen(path, "re");
	if (f) {
		if (fgets(t->h.comm, sizeof(t->h.comm), f)) {
			len = strlen(t->h.comm);
			if (len && t->h.comm[len - 1] == '\n')
				t->h.comm[len - 1] = 0;
		}
		fclose(f);
	}
	snprintf(path, sizeof(path), "/proc/%d/task", (int)t->pid);
	dir = opendir(path);
	if (!dir)
		return;
	t->h.threads = 0;
	while ((d = readdir(dir)))
		t->h.threads += d->d_name[0] != '.';
	closedir(dir);
}

static uint64_t fresh_walks(const struct sampler_stats *st)
{
	uint64_t n = 0;
	size_t i;

	for (i = 0; i <= REMOTE_END_ERROR; i++)
		n += st->ends[i];
	return n;
}

/* The header's figures over the interval that ended at st. */
static void update_header(struct top *t, const struct top_interval *iv)
{
	const struct sampler_stats *st = &iv->st, *p = &t->prev;
	uint64_t now = cprof_now_ns(), cpu = process_cpu_ns(), elapsed, fresh, complete;
	struct sampler_stats zero = { 0 };

	if (iv->segment != t->prev_segment)
		p = &zero;
	elapsed = st->elapsed_ns - p->elapsed_ns;
	read_process(t);
	t->h.samples = st->samples - p->samples;
	t->h.interval_ns = elapsed;
	t->h.cprof_cpu = now > t->wall_ns ? (double)(cpu - t->cpu_ns) / (double)(now - t->wall_ns) : 0;
	t->h.stopped = iv->stopped;
	fresh = fresh_walks(st) - fresh_walks(p);
	complete = st->ends[REMOTE_END_COMPLETE] + st->ends[REMOTE_END_GO_SWITCH] -
		   p->ends[REMOTE_END_COMPLETE] - p->ends[REMOTE_END_GO_SWITCH];
	t->h.complete = fresh ? (double)complete / (double)fresh : -1;
	t->h.source = st->source == SAMPLER_SOURCE_PERF ? "perf" : "ptrace";
	t->h.elapsed_ns = now - t->start_ns;
	t->cpu_ns = cpu;
	t->wall_ns = now;
	t->prev = *st;
	t->prev_segment = iv->segment;
}

static void show(struct top *t)
{
	t->h.paused = !top_feed_running(t->feed);
	t->h.total_samples = top_model_samples(t->model, TOP_TOTAL);
	t->h.elapsed_ns = cprof_now_ns() - t->start_ns;
	if (t->screen)
		top_screen_draw(t->model, &t->h, &t->v);
}

/* A session's last cut, much shorter than an interval (it ended
 * mid-second): its shares would be noise.  It counts in the totals only. */
static bool is_sliver(const struct top *t, const struct top_interval *iv)
{
	uint64_t from = iv->segment == t->prev_segment ? t->prev.elapsed_ns : 0;

	return iv->last && iv->st.elapsed_ns - from < TOP_INTERVAL_NS / 2;
}

/* The intervals that came: into the model, and each on stdout in batch mode. */
static void take_intervals(struct top *t, struct top_interval *iv)
{
	struct top_interval *next;
	bool any = false, sliver;

	for (; iv; iv = next) {
		next = iv->next;
		sliver = is_sliver(t, iv);
		if (top_model_add(t->model, iv, !sliver) < 0) {
			snprintf(t->message, sizeof(t->message), "cannot follow pid %d: %s",
				 (int)t->pid, strerror(ENOMEM));
			t->code = CPROF_EXIT_FATAL;
			t->quit = true;
		}
		if (!sliver) {
			update_header(t, iv);
			t->h.total_samples = top_model_samples(t->model, TOP_TOTAL);
			any = true;
		}
		top_interval_free(iv);
		if (!sliver && t->batch &&
		    top_batch_print(t->model, &t->h, &t->v, t->a.json) < 0) {
			/* main's finish says it, for every command alike */
			t->quit = true;
			t->code = CPROF_EXIT_FATAL;
		}
	}
	if (any)
		show(t);
}

/* A session ended: a pause, or the end of top. */
static void session_ended(struct top *t, const struct top_end *end)
{
	char why[200];

	t->ever_attached = t->ever_attached || end->st.attached;
	if (!end->st.attached) {
		if (!cli_attach_obstacle(t->pid, end->ret, why, sizeof(why)))
			snprintf(why, sizeof(why), "%s", strerror(-end->ret));
		snprintf(t->message, sizeof(t->message), "cannot attach to pid %d: %s", (int)t->pid,
			 why);
		t->code = t->ever_attached ? CPROF_EXIT_PARTIAL : CPROF_EXIT_FATAL;
		t->quit = true;
		return;
	}
	if (end->st.target_exited) {
		snprintf(t->message, sizeof(t->message), "pid %d exited after %.1f s; top ends",
			 (int)t->pid, (double)(cprof_now_ns() - t->start_ns) / 1e9);
		t->quit = true;
		return;
	}
	if (end->ret < 0) {
		snprintf(t->message, sizeof(t->message), "sampling pid %d stopped early: %s",
			 (int)t->pid, strerror(-end->ret));
		t->code = CPROF_EXIT_PARTIAL;
		t->quit = true;
		return;
	}
	if (t->pausing && !t->stopping) {
		t->pausing = false;
		show(t);
		return;
	}
	/* asked to stop, a stop signal, or the duration */
	t->quit = true;
}

static void request_quit(struct top *t)
{
	if (!top_feed_running(t->feed)) {
		t->quit = true;
		return;
	}
	t->stopping = true;
	top_feed_stop(t->feed);
}

static void toggle_pause(struct top *t)
{
	int ret;

	if (t->stopping)
		return;
	if (top_feed_running(t->feed)) {
		t->pausing = true;
		top_feed_stop(t->feed);
		return;
	}
	ret = top_feed_start(t->feed);
	if (ret < 0) {
		snprintf(t->message, sizeof(t->message), "cannot resume sampling pid %d: %s",
			 (int)t->pid, strerror(-ret));
		t->code = CPROF_EXIT_PARTIAL;
		t->quit = true;
		return;
	}
	/* cprof's CPU share is over the time sampled, not the pause */
	t->cpu_ns = process_cpu_ns();
	t->wall_ns = cprof_now_ns();
	show(t);
}

/* One key of the terminal view. */
static void on_key(struct top *t, int c)
{
	switch (c) {
	case 'q':
	case 'Q':
	case 3:		/* Ctrl-C, a key in raw mode */
		request_quit(t);
		return;
	case 's':
		t->v.sort = t->v.sort == TOP_SORT_FLAT ? TOP_SORT_CUM : TOP_SORT_FLAT;
		break;
	case 'a':
		t->v.scope = t->v.scope == TOP_LAST ? TOP_TOTAL : TOP_LAST;
		break;
	case 't':
		t->v.threads = !t->v.threads;
		break;
	case 'l':
		t->v.by = t->v.by == TOP_BY_LINE ? TOP_BY_FUNCTION : TOP_BY_LINE;
		break;
	case 'p':
		toggle_pause(t);
		break;
	case 'r':
		top_model_reset(t->model);
		break;
	case KEY_RESIZE:
		break;
	default:
		return;
	}
	show(t);
}

static void on_resize(struct top *t)
{
	struct winsize ws;

	/* batch mode has no screen to fit */
	if (!t->screen)
		return;
	if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_row && ws.ws_col)
		resizeterm(ws.ws_row, ws.ws_col);
	show(t);
}

static void on_signal(struct top *t)
{
	struct signalfd_siginfo si;

	while (read(t->sigfd, &si, sizeof(si)) == sizeof(si)) {
		if (si.ssi_signo == SIGWINCH)
			on_resize(t);
		else
			request_quit(t);
	}
}

static int poll_timeout(const struct top *t)
{
	uint64_t now = cprof_now_ns(), left;

	/* at least once a second: the clock, and a paused target's exit */
	left = 1000000000ull;
	if (t->deadline_ns && t->deadline_ns > now && t->deadline_ns - now < left)
		left = t->deadline_ns - now;
	if (t->deadline_ns && t->deadline_ns <= now)
		left = 0;
	return (int)((left + 999999) / 1000000);
}

static void on_tick(struct top *t)
{
	if (t->deadline_ns && cprof_now_ns() >= t->deadline_ns && !t->stopping) {
		request_quit(t);
		return;
	}
	if (!top_feed_running(t->feed) && cli_target_gone(t->pid)) {
		snprintf(t->message, sizeof(t->message), "pid %d exited while paused; top ends",
			 (int)t->pid);
		t->quit = true;
	}
}

static void loop(struct top *t)
{
	struct pollfd p[3];
	struct top_interval *iv;
	struct top_end end;
	bool ended;
	int c;

	while (!t->quit) {
		p[0] = (struct pollfd){ .fd = t->sigfd, .events = POLLIN };
		p[1] = (struct pollfd){ .fd = top_feed_fd(t->feed), .events = POLLIN };
		p[2] = (struct pollfd){ .fd = t->screen ? STDIN_FILENO : -1, .events = POLLIN };
		if (poll(p, 3, poll_timeout(t)) < 0 && errno != EINTR)
			break;
		if (p[0].revents & POLLIN)
			on_signal(t);
		if (p[1].revents & POLLIN) {
			uint64_t n;

			if (read(top_feed_fd(t->feed), &n, sizeof(n)) < 0) {
				/* drained already: take looks anyway */
			}
			iv = top_feed_take(t->feed, &end, &ended);
			take_intervals(t, iv);
			if (ended)
				session_ended(t, &end);
		}
		if (p[2].revents & (POLLHUP | POLLERR))
			request_quit(t);
		while (t->screen && !t->quit && (c = getch()) != ERR)
			on_key(t, c);
		if (!t->quit)
			on_tick(t);
	}
}

/* The signals are the main thread's (and the session's) to read: blocked in
 * every thread, from before the first one starts. */
static int block_signals(struct top *t)
{
	sigset_t mask, fdmask;

	sigemptyset(&mask);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGHUP);
	sigaddset(&mask, SIGQUIT);
	sigaddset(&mask, SIGWINCH);
	fdmask = mask;
	/* the tracer's: blocked here so that no other thread takes it */
	sigaddset(&mask, SIGCHLD);
	if (pthread_sigmask(SIG_BLOCK, &mask, NULL) != 0)
		return -EINVAL;
	t->sigfd = signalfd(-1, &fdmask, SFD_NONBLOCK | SFD_CLOEXEC);
	return t->sigfd < 0 ? -errno : 0;
}

/* The command line into t.  Returns CPROF_EXIT_OK, CLI_HELP_SHOWN or the exit
 * code. */
static int parse(struct top *t, int argc, char **argv)
{
	const struct cli_option opts[] = {
		CLI_OPTION_CALLBACK('p', "pid", &t->pid, cli_opt_pid),
		CLI_OPTION_BOOL(0, "children", &t->children),
		CLI_OPTION_BOOL('b', "batch", &t->batch),
		CLI_OPTION_BOOL(0, "json", &t->a.json),
		CLI_RUN_OPTIONS(&t->a),
		CLI_OPTION_CALLBACK(0, "write-timeout", &t->a, cli_session_opt_write_timeout),
		CLI_OPTION_END,
	};
	const char *output;
	enum cli_parse_result r;
	int first;

	cli_session_defaults(&t->a);
	r = cli_parse_pid_options(&top_line, opts, argc, argv, &first, &t->pid);
	if (r == CLI_PARSE_HELP)
		return CLI_HELP_SHOWN;
	if (r != CLI_PARSE_OK)
		return cli_parse_exit_code(r);
	if (t->a.output && strcmp(t->a.output, "-") == 0) {
		cli_error("top: the view is on standard output; give the profile a file name");
		return CPROF_EXIT_USAGE;
	}
	t->batch = t->batch || t->a.json;
	output = t->a.output;
	t->a.json = t->a.json && t->batch;
	if (cli_session_finish_args(&t->a, "top", t->pid) != CLI_PARSE_OK)
		return CPROF_EXIT_USAGE;
	t->a.output = output;
	return CPROF_EXIT_OK;
}

/* Checks what can be checked before touching the target. */
static int preflight(struct top *t)
{
	char why[256];
	int ret;

	if (cli_attach_obstacle(t->pid, 0, why, sizeof(why))) {
		cli_error("cannot attach to pid %d: %s", (int)t->pid, why);
		return CPROF_EXIT_FATAL;
	}
	if (t->a.output) {
		ret = cli_check_output(t->a.output);
		if (ret < 0) {
			cli_error("cannot write '%s': %s", t->a.output, strerror(-ret));
			return CPROF_EXIT_FATAL;
		}
	}
	return cli_session_check_sched(&t->a);
}

/* After the screen is gone: what happened, and the profile. */
static int finish(struct top *t)
{
	if (t->message[0])
		cli_error("%s", t->message);
	if (t->a.output && t->ever_attached) {
		size_t cut = 0;

		if (top_feed_write(t->feed, t->a.output, &cut) < 0)
			return CPROF_EXIT_FATAL;
		fprintf(stderr, "cprof: wrote %s: %llu samples\n", t->a.output,
			(unsigned long long)top_feed_whole_samples(t->feed));
		if (cut) {
			cli_error("symbolizing pid %d ran out of time (--write-timeout %.3g s): the "
				  "frames of %zu modules keep their addresses and build ids (pprof "
				  "can symbolize them; a longer --write-timeout names them now)",
				  (int)t->pid, (double)t->a.write_timeout_ns / 1e9, cut);
			if (t->code == CPROF_EXIT_OK)
				return CPROF_EXIT_PARTIAL;
		}
	}
	return t->code;
}

static int run(struct top *t)
{
	int ret;

	/* before the target is touched, while cprof has a single thread */
	if (cli_helper_start(t->a.helper_user, &t->a.helper) != CPROF_EXIT_OK)
		return CPROF_EXIT_FATAL;
	/* a line on stderr when the kernel hides its symbols: said before the screen */
	cli_kernel_setup(&t->a, t->a.mode, false);
	ret = top_model_create(&t->model, t->a.kallsyms);
	if (!ret)
		ret = top_feed_create(&t->feed, &t->a, t->pid,
				      t->children ? TRACER_DESCENDANTS : 0, t->a.output != NULL);
	if (!ret)
		ret = block_signals(t);
	if (ret < 0) {
		cli_error("cannot set up top for pid %d: %s", (int)t->pid, strerror(-ret));
		return CPROF_EXIT_FATAL;
	}
	if (!t->batch && top_screen_open() < 0)
		return CPROF_EXIT_FATAL;
	t->screen = !t->batch;
	t->start_ns = t->wall_ns = cprof_now_ns();
	t->cpu_ns = process_cpu_ns();
	t->deadline_ns = t->a.duration_ns ? t->start_ns + t->a.duration_ns : 0;
	t->h.pid = t->pid;
	t->h.wall = t->a.mode == SAMPLER_WALL;
	t->h.source = "-";
	read_process(t);
	ret = top_feed_start(t->feed);
	if (ret < 0) {
		top_screen_close();
		cli_error("cannot set up sampling of pid %d: %s", (int)t->pid, strerror(-ret));
		return CPROF_EXIT_FATAL;
	}
	show(t);
	loop(t);
	/* the session ends (the target let go) before the terminal comes back */
	top_feed_stop(t->feed);
	top_feed_wait(t->feed);
	top_screen_close();
	return finish(t);
}

int cmd_top(int argc, char **argv)
{
	struct top t = { .sigfd = -1 };
	int code;

	code = parse(&t, argc, argv);
	if (code == CLI_HELP_SHOWN)
		return CPROF_EXIT_OK;
	if (code == CPROF_EXIT_OK)
		code = preflight(&t);
	if (code == CPROF_EXIT_OK)
		code = run(&t);
	top_screen_close();
	top_feed_destroy(t.feed);
	top_model_destroy(t.model);
	cli_kernel_done(&t.a);
	if (t.sigfd >= 0)
		close(t.sigfd);
	/* a parser's death lost some names */
	if (cli_helper_end(t.a.helper) != CPROF_EXIT_OK && code == CPROF_EXIT_OK)
		code = CPROF_EXIT_PARTIAL;
	return code;
}
