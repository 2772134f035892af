/* SPDX-License-Identifier: MIT */
/* cprof top's view: the terminal screen (ncurses), batch text and JSON lines. */
#include "config.h"

#include <curses.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>

#include "cli/top.h"

/* Rows a batch block lists: enough for a log, short enough to read. */
#define BATCH_ROWS 20
#define BATCH_THREADS 10
#define MAX_ROWS 512

static SCREEN *screen;

/*
 * A crash (a bug of cprof's) must not leave the terminal raw and on the
 * alternate screen: the handler puts back the settings cprof found and
 * writes terminfo's strings that leave the view, both async-signal-safe
 * (endwin is not), then ends cprof as the signal would have.  The target
 * needs nothing: a tracer's death detaches its tracees, resumed.
 */
static const int crash_signals[] = { SIGSEGV, SIGBUS, SIGABRT, SIGFPE, SIGILL };
static struct termios shell_termios;
static char leave_view[256];
static size_t leave_len;

static void on_crash(int sig)
{
	int saved = errno;

	if (leave_len && write(STDOUT_FILENO, leave_view, leave_len) < 0) {
		/* nothing more can be done for the screen */
	}
	tcsetattr(STDIN_FILENO, TCSANOW, &shell_termios);
	/* SA_RESETHAND put the default action back: raised again, it is
	 * delivered (the core dump, the exit status) once this returns */
	raise(sig);
	errno = saved;
}

/* Appends terminfo's capability cap to the strings on_crash writes. */
static void add_leave(const char *cap)
{
	const char *seq = tigetstr(cap);
	size_t n;

	if (!seq || seq == (const char *)-1)
		return;
	n = strlen(seq);
	if (leave_len + n <= sizeof(leave_view)) {
		memcpy(leave_view + leave_len, seq, n);
		leave_len += n;
	}
}

static void crash_handlers(bool on)
{
	struct sigaction sa = { .sa_handler = on ? on_crash : SIG_DFL,
				.sa_flags = on ? SA_RESETHAND : 0 };
	size_t i;

	sigemptyset(&sa.sa_mask);
	for (i = 0; i < sizeof(crash_signals) / sizeof(crash_signals[0]); i++)
		sigaction(crash_signals[i], &sa, NULL);
}

int top_screen_open(void)
{
	if (!isatty(STDIN_FILENO) || !isatty(STDOUT_FILENO)) {
		cli_error("cannot start the terminal view: standard input and output are not a "
			  "terminal (-b prints plain text, --json JSON lines)");
		return -ENOTTY;
	}
	if (tcgetattr(STDIN_FILENO, &shell_termios) < 0) {
		cli_error("cannot start the terminal view: %s", strerror(errno));
		return -errno;
	}
	/* newterm, not initscr: a terminal type it does not know is an error
	 * to report, not an exit from inside the library. */
	screen = newterm(NULL, stdout, stdin);
	if (!screen) {
		cli_error("cannot start the terminal view: terminal type '%s' is unknown "
			  "(set TERM, or use -b)", getenv("TERM") ? getenv("TERM") : "");
		return -ENOTTY;
	}
	/* raw: Ctrl-C and Ctrl-Z are keys, so cprof is never suspended
	 * while it traces the target; Ctrl-C quits as q does. */
	raw();
	noecho();
	nonl();
	keypad(stdscr, TRUE);
	nodelay(stdscr, TRUE);
	curs_set(0);
	leave_len = 0;
	add_leave("sgr0");
	add_leave("cnorm");
	add_leave("rmkx");
	add_leave("rmcup");
	crash_handlers(true);
	return 0;
}

void top_screen_close(void)
{
	if (!screen)
		return;
	crash_handlers(false);
	endwin();
	delscreen(screen);
	screen = NULL;
	fflush(stdout);
}

static double pct(int64_t v, int64_t of)
{
	return of > 0 ? 100.0 * (double)v / (double)of : 0;
}

static const char *scope_name(enum top_scope s)
{
	return s == TOP_LAST ? "last interval" : "since start";
}

/* The two header lines, as the screen and batch mode show them. */
static void header_lines(const struct top_header *h, char *l1, size_t n1, char *l2, size_t n2)
{
	char complete[32], worst[64] = "";

	if (h->complete < 0)
		snprintf(complete, sizeof(complete), "-");
	else
		snprintf(complete, sizeof(complete), "%.1f%%", 100 * h->complete);
	if (h->stopped.tid)
		snprintf(worst, sizeof(worst), " (thread %d %s)", (int)h->stopped.tid, h->stopped.name);
	/* first, where a narrow terminal cannot cut it off */
	snprintf(l1, n1, "%scprof top - pid %d (%s), %u thread%s, %s mode, %s",
		 h->paused ? "PAUSED, not traced (p resumes) - " : "", (int)h->pid, h->comm,
		 h->threads, h->threads == 1 ? "" : "s", h->wall ? "wall" : "cpu", h->source);
	snprintf(l2, n2,
		 "samples %llu in %.1f s (%llu since start), cprof %.1f%% of a CPU, target "
		 "stopped %.3f%%%s, unwind %s complete", (unsigned long long)h->samples,
		 (double)h->interval_ns / 1e9, (unsigned long long)h->total_samples,
		 100 * h->cprof_cpu, 100 * h->stopped.share, worst, complete);
}

/* A row's text: the shares and the function (with its file:line). */
static void row_text(char *buf, size_t n, const struct top_row *r, int64_t of, bool lines)
{
	if (lines)
		snprintf(buf, n, "%6.1f %6.1f  %s  %s:%d", pct(r->flat, of), pct(r->cum, of),
			 r->name, r->file ? r->file : "??", r->line);
	else
		snprintf(buf, n, "%6.1f %6.1f  %s", pct(r->flat, of), pct(r->cum, of), r->name);
}

static void thread_text(char *buf, size_t n, const struct top_thread_row *t, uint64_t wall_ns)
{
	snprintf(buf, n, "%8d  %-16.16s %6.1f  %s", (int)t->tid, t->name,
		 pct(t->value, (int64_t)wall_ns), t->hot ? t->hot : "-");
}

/* The wall time the scope covers: a thread's share is of that. */
static uint64_t scope_wall(const struct top_header *h, enum top_scope s)
{
	return s == TOP_LAST ? h->interval_ns : h->elapsed_ns;
}

static void put(int y, const char *text)
{
	mvaddnstr(y, 0, text, COLS);
}

static void draw_rows(struct top_model *m, const struct top_header *h,
		      const struct top_view_state *v, int y)
{
	static struct top_row rows[MAX_ROWS];
	static struct top_thread_row threads[MAX_ROWS];
	size_t i, n, max = LINES > y ? (size_t)(LINES - y) : 0;
	char buf[512];

	if (max > MAX_ROWS)
		max = MAX_ROWS;
	if (v->threads) {
		n = top_model_threads(m, v->scope, threads, max);
		for (i = 0; i < n; i++) {
			thread_text(buf, sizeof(buf), &threads[i], scope_wall(h, v->scope));
			put(y + (int)i, buf);
		}
		return;
	}
	n = top_model_rows(m, v->by, v->scope, v->sort, rows, max);
	for (i = 0; i < n; i++) {
		row_text(buf, sizeof(buf), &rows[i], top_model_value(m, v->scope),
			 v->by == TOP_BY_LINE);
		put(y + (int)i, buf);
	}
}

void top_screen_draw(struct top_model *m, const struct top_header *h,
		     const struct top_view_state *v)
{
	char l1[256], l2[256], l3[256], when[32];
	int w;

	if (!screen)
		return;
	erase();
	header_lines(h, l1, sizeof(l1), l2, sizeof(l2));
	put(0, l1);
	/* the clock at the right edge: the header spans the terminal */
	w = snprintf(when, sizeof(when), "%.0f s", (double)h->elapsed_ns / 1e9);
	if (COLS > w + (int)strlen(l1) + 1)
		mvaddstr(0, COLS - w, when);
	put(1, l2);
	snprintf(l3, sizeof(l3), "%s, %s, sorted by %s  (q quit, s sort, a last/total, "
		 "t threads, l lines, p pause, r reset)",
		 v->threads ? "threads" : v->by == TOP_BY_LINE ? "lines" : "functions",
		 scope_name(v->scope), v->threads ? "cpu" : v->sort == TOP_SORT_FLAT ? "flat" : "cum");
	put(2, l3);
	attron(A_REVERSE);
	if (v->threads)
		snprintf(l3, sizeof(l3), "%8s  %-16s %6s  %s", "TID", "NAME",
			 h->wall ? "WALL%" : "CPU%", "HOTTEST");
	else
		snprintf(l3, sizeof(l3), "%6s %6s  %s", "FLAT%", "CUM%",
			 v->by == TOP_BY_LINE ? "FUNCTION  FILE:LINE" : "FUNCTION");
	mvprintw(4, 0, "%-*.*s", COLS, COLS, l3);
	attroff(A_REVERSE);
	draw_rows(m, h, v, 5);
	refresh();
}

/* ---- batch ------------------------------------------------------------------ */

static void print_text(struct top_model *m, const struct top_header *h,
		       const struct top_view_state *v, const struct top_row *rows, size_t n,
		       const struct top_thread_row *threads, size_t nt)
{
	char l1[256], l2[256], buf[512];
	size_t i;

	header_lines(h, l1, sizeof(l1), l2, sizeof(l2));
	printf("%s, %.1f s\n%s\n%6s %6s  %s (%s)\n", l1, (double)h->elapsed_ns / 1e9, l2, "FLAT%",
	       "CUM%", v->by == TOP_BY_LINE ? "FUNCTION  FILE:LINE" : "FUNCTION",
	       scope_name(v->scope));
	for (i = 0; i < n; i++) {
		row_text(buf, sizeof(buf), &rows[i], top_model_value(m, v->scope),
			 v->by == TOP_BY_LINE);
		printf("%s\n", buf);
	}
	printf("%8s  %-16s %6s  %s\n", "TID", "NAME", h->wall ? "WALL%" : "CPU%", "HOTTEST");
	for (i = 0; i < nt; i++) {
		thread_text(buf, sizeof(buf), &threads[i], scope_wall(h, v->scope));
		printf("%s\n", buf);
	}
	printf("\n");
}

static void print_json_rows(struct top_model *m, const struct top_view_state *v,
			    const struct top_row *rows, size_t n)
{
	int64_t of = top_model_value(m, v->scope);
	size_t i;

	for (i = 0; i < n; i++) {
		fputs(i ? ", {\"name\": " : "{\"name\": ", stdout);
		cli_json_string(stdout, rows[i].name);
		if (v->by == TOP_BY_LINE) {
			fputs(", \"file\": ", stdout);
			cli_json_string(stdout, rows[i].file);
			printf(", \"line\": %d", rows[i].line);
		}
		printf(", \"flat\": %.2f, \"cum\": %.2f, \"flat_ns\": %lld, \"cum_ns\": %lld}",
		       pct(rows[i].flat, of), pct(rows[i].cum, of), (long long)rows[i].flat,
		       (long long)rows[i].cum);
	}
}

static void print_json(struct top_model *m, const struct top_header *h,
		       const struct top_view_state *v, const struct top_row *rows, size_t n,
		       const struct top_thread_row *threads, size_t nt)
{
	size_t i;

	printf("{\"elapsed_ns\": %llu, \"pid\": %d, \"process\": ",
	       (unsigned long long)h->elapsed_ns, (int)h->pid);
	cli_json_string(stdout, h->comm);
	printf(", \"mode\": \"%s\", \"source\": \"%s\", \"threads\": %u, \"samples\": %llu, "
	       "\"total_samples\": %llu, \"interval_ns\": %llu, \"cprof_cpu\": %.4f, "
	       "\"stopped\": %.6f, \"stopped_thread\": ",
	       h->wall ? "wall" : "cpu", h->source, h->threads, (unsigned long long)h->samples,
	       (unsigned long long)h->total_samples, (unsigned long long)h->interval_ns,
	       h->cprof_cpu, h->stopped.share);
	if (h->stopped.tid) {
		printf("{\"tid\": %d, \"name\": ", (int)h->stopped.tid);
		cli_json_string(stdout, h->stopped.name);
		fputs("}", stdout);
	} else {
		fputs("null", stdout);
	}
	fputs(", \"complete\": ", stdout);
	if (h->complete < 0)
		fputs("null", stdout);
	else
		printf("%.4f", h->complete);
	printf(", \"scope\": \"%s\", \"by\": \"%s\", \"rows\": [",
	       v->scope == TOP_LAST ? "last" : "total", v->by == TOP_BY_LINE ? "line" : "function");
	print_json_rows(m, v, rows, n);
	fputs("], \"thread_rows\": [", stdout);
	for (i = 0; i < nt; i++) {
		printf("%s{\"tid\": %d, \"name\": ", i ? ", " : "", (int)threads[i].tid);
		cli_json_string(stdout, threads[i].name);
		printf(", \"share\": %.2f, \"hot\": ",
		       pct(threads[i].value, (int64_t)scope_wall(h, v->scope)));
		cli_json_string(stdout, threads[i].hot);
		fputs("}", stdout);
	}
	fputs("]}\n", stdout);
}

int top_batch_print(struct top_model *m, const struct top_header *h,
		    const struct top_view_state *v, bool json)
{
	struct top_row rows[BATCH_ROWS];
	struct top_thread_row threads[BATCH_THREADS];
	size_t n, nt;

	n = top_model_rows(m, v->by, v->scope, v->sort, rows, BATCH_ROWS);
	/* the rows point into the model: copied out before the next query */
	nt = top_model_threads(m, v->scope, threads, BATCH_THREADS);
	if (json)
		print_json(m, h, v, rows, n, threads, nt);
	else
		print_text(m, h, v, rows, n, threads, nt);
	/* a log reader sees each block as it comes */
	if (fflush(stdout) != 0 || ferror(stdout))
		return -EIO;
	return 0;
}
