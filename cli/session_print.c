/* SPDX-License-Identifier: MIT */
/* The session's printing: the profile's comments, the status line, the
 * summary and the --json object. */
#include "config.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/session.h"
#include "symbolize/fetch.h"
#include "symbolize/live.h"

/* Walks that reached a root; every other one is counted by its reason. */
static uint64_t complete_count(const struct sampler_stats *st)
{
	return st->ends[REMOTE_END_COMPLETE] + st->ends[REMOTE_END_GO_SWITCH];
}

static uint64_t other_count(const struct sampler_stats *st, uint64_t fresh)
{
	uint64_t n = fresh - complete_count(st);
	size_t i;

	for (i = 0; i < CLI_N_CUT_ENDS; i++)
		n -= st->ends[cli_cut_ends[i].end];
	return n;
}

/* "complete=N go_switch=N truncated=N ... other=N" (sep "=", " ") or the
 * JSON members (sep "\": ", ", \""), into buf. */
static void format_ends(char *buf, size_t len, const struct sampler_stats *st, uint64_t fresh,
			bool json)
{
	const char *eq = json ? "\": " : "=", *sp = json ? ", \"" : " ";
	size_t i, k;

	k = (size_t)snprintf(buf, len, "%scomplete%s%llu%sgo_switch%s%llu", json ? "\"" : "", eq,
			     (unsigned long long)complete_count(st), sp, eq,
			     (unsigned long long)st->ends[REMOTE_END_GO_SWITCH]);
	for (i = 0; i < CLI_N_CUT_ENDS && k < len; i++)
		k += (size_t)snprintf(buf + k, len - k, "%s%s%s%llu", sp, cli_cut_ends[i].key, eq,
				      (unsigned long long)st->ends[cli_cut_ends[i].end]);
	if (k < len)
		snprintf(buf + k, len - k, "%sother%s%llu", sp, eq,
			 (unsigned long long)other_count(st, fresh));
}

static uint64_t fresh_count(const struct sampler_stats *st)
{
	uint64_t n = 0;
	size_t i;

	for (i = 0; i <= REMOTE_END_ERROR; i++)
		n += st->ends[i];
	return n;
}

static double mean_fraction(const struct tracer_stats *t)
{
	return t->stopped_fraction_threads ?
		t->stopped_fraction_sum / (double)t->stopped_fraction_threads : 0;
}

/* The profile's comments: how it was made and what it cost. */
void session_format_comments(char line[SESSION_N_COMMENTS][SESSION_COMMENT_MAX],
			     const struct cli_session *a, const char *what,
			     const struct sampler_stats *st)
{
	const struct tracer_stats *t = &st->tracer;
	uint64_t fresh = fresh_count(st);

	snprintf(line[0], SESSION_COMMENT_MAX, "cprof %s %s -F %u --mode %s --stop %s --source %s",
		 PACKAGE_VERSION, what, a->hz, a->mode == SAMPLER_WALL ? "wall" : "cpu",
		 a->stop == SAMPLER_STOP_PROCESS ? "process" : "thread",
		 st->source == SAMPLER_SOURCE_PERF ? "perf" : "ptrace");
	snprintf(line[1], SESSION_COMMENT_MAX,
		 "samples=%llu (stopped=%llu unstopped=%llu reused=%llu) ticks=%llu missed_ticks=%llu threads_seen=%llu",
		 (unsigned long long)st->samples,
		 (unsigned long long)(fresh - st->samples_unstopped),
		 (unsigned long long)st->samples_unstopped,
		 (unsigned long long)st->samples_reused, (unsigned long long)st->ticks,
		 (unsigned long long)st->ticks_missed, (unsigned long long)t->threads_seen);
	snprintf(line[2], SESSION_COMMENT_MAX,
		 "stops=%llu stop_ns p50=%llu p99=%llu max=%llu; from the stop reached p50=%llu p99=%llu "
		 "max=%llu; stopped fraction of a thread's time max=%.5f mean=%.5f",
		 (unsigned long long)t->stops,
		 (unsigned long long)tracer_stop_percentile(t, 50),
		 (unsigned long long)tracer_stop_percentile(t, 99),
		 (unsigned long long)t->stop_ns_max,
		 (unsigned long long)tracer_at_stop_percentile(t, 50),
		 (unsigned long long)tracer_at_stop_percentile(t, 99),
		 (unsigned long long)t->at_stop_ns_max, t->stopped_fraction_max, mean_fraction(t));
	snprintf(line[3], SESSION_COMMENT_MAX,
		 "cprof_cpu_ns=%llu (%.2f%% of one CPU) sched=%s rt_ns=%llu switches=%u%s%s",
		 (unsigned long long)st->cprof_cpu_ns,
		 st->elapsed_ns ? 100.0 * (double)st->cprof_cpu_ns / (double)st->elapsed_ns : 0,
		 prio_policy_name(t->sched_policy), (unsigned long long)t->sched_rt_ns,
		 t->sched_switches, t->sched_drop ? " dropped=" : "",
		 t->sched_drop ? prio_drop_name(t->sched_drop) : "");
	memcpy(line[4], "unwind ", 7);
	format_ends(line[4] + 7, SESSION_COMMENT_MAX - 7, st, fresh, false);
}


void session_progress_show(struct progress *pr, const char *text)
{
	char line[400];
	int n;

	n = snprintf(line, sizeof(line), "\r%s%*s", text,
		     pr->shown > strlen(text) ? (int)(pr->shown - strlen(text)) : 0, "");
	if (n < 0)
		return;
	/* one write, so that the line never shows half updated */
	fputs(line, stderr);
	pr->shown = strlen(text);
}

/* Erases the line, before anything else goes to stderr. */
void session_progress_clear(struct progress *pr)
{
	if (!pr || !pr->shown)
		return;
	fprintf(stderr, "\r%*s\r", (int)pr->shown, "");
	pr->shown = 0;
}

void session_progress_update(const struct sampler_stats *st, void *arg)
{
	const struct tracer_stats *t = &st->tracer;
	struct progress *pr = arg;
	struct pollfd pfd = { .fd = STDERR_FILENO, .events = POLLOUT };
	char text[320], when[48], p99[32], dl[100];

	/* This runs on the session thread, which a thread stopped for a
	 * sample may be waiting for: a terminal that does not take output
	 * (Ctrl-S) skips an update rather than blocking it. */
	if (poll(&pfd, 1, 0) != 1 || !(pfd.revents & POLLOUT))
		return;

	if (pr->duration_ns)
		snprintf(when, sizeof(when), "%.1f s of %.1f s", (double)st->elapsed_ns / 1e9,
			 (double)pr->duration_ns / 1e9);
	else
		snprintf(when, sizeof(when), "%.1f s", (double)st->elapsed_ns / 1e9);
	if (t->stops)
		snprintf(p99, sizeof(p99), "%.1f us", (double)tracer_stop_percentile(t, 99) / 1e3);
	else
		snprintf(p99, sizeof(p99), "-");
	snprintf(text, sizeof(text),
		 "cprof: %s, %llu samples, %llu threads, stop p99 %s, cprof %.1f%% of a CPU", when,
		 (unsigned long long)st->samples, (unsigned long long)t->threads_seen, p99,
		 st->elapsed_ns ? 100.0 * (double)st->cprof_cpu_ns / (double)st->elapsed_ns : 0);
	/* a download runs on its own thread; say what it is waiting for */
	if (sym_live_download_status(pr->live, dl, sizeof(dl)))
		snprintf(text + strlen(text), sizeof(text) - strlen(text), "; %s", dl);
	session_progress_show(pr, text);
}

/*
 * One line for the i-th module left without debuginfo; false when there is
 * none.  Its samples keep addresses and the build id, which a symbolizing
 * reader (pprof, Parca) can use later.
 */
static bool print_missing(const struct sym_live *live, size_t i)
{
	const char *module, *build_id, *why;

	if (!sym_live_missing(live, i, &module, &build_id, &why))
		return false;
	fprintf(stderr,
		"cprof: no debuginfo for %s (build id %s): %s; its samples keep addresses and "
		"the build id (get it with 'debuginfod-find debuginfo %s', or install its "
		"debug package, then run cprof again)\n",
		module, build_id, why, build_id);
	return true;
}

/* Whether live already listed build_id as missing its debuginfo. */
static bool listed_missing(const struct sym_live *live, const char *build_id)
{
	const char *module, *id, *why;
	size_t i;

	for (i = 0; sym_live_missing(live, i, &module, &id, &why); i++)
		if (strcmp(id, build_id) == 0)
			return true;
	return false;
}

/*
 * One line for each module nothing could be named in, unless the
 * debuginfod lines said it already: how to get its symbols.
 */
static void print_unnamed(const struct cli_session *a, const struct sym_note *note)
{
	const struct proc_module *m;
	const char *hint;
	size_t i;

	hint = a->no_debuginfod && sym_fetch_configured() ?
		       "install its debug package, or run cprof without --no-debuginfod" :
		       "install its debug package, or set DEBUGINFOD_URLS (for example "
		       "https://debuginfod.debian.net) for cprof to download it";
	for (i = 0; i < note->n_unnamed; i++) {
		m = note->unnamed[i];
		if (!m->build_id)
			fprintf(stderr,
				"cprof: no symbols for %s: it is stripped, has no build id to find "
				"its debuginfo by, and no debug file is here; install its debug "
				"package, or profile an unstripped build\n", m->path);
		else if (!listed_missing(note->live, m->build_id))
			fprintf(stderr,
				"cprof: no symbols for %s (build id %s): it is stripped and no debug "
				"file for it is on this machine; its samples keep addresses and the "
				"build id (%s)\n", m->path, m->build_id, hint);
	}
}

/* "N incomplete", then ": K reason, ..." for the reasons that occurred. */
static void format_incomplete(char *buf, size_t len, const struct sampler_stats *st)
{
	uint64_t fresh = fresh_count(st), other = other_count(st, fresh);
	size_t i, k;
	bool first = true;

	k = (size_t)snprintf(buf, len, "%llu incomplete",
			     (unsigned long long)(fresh - complete_count(st)));
	for (i = 0; i <= CLI_N_CUT_ENDS && k < len; i++) {
		bool last = i == CLI_N_CUT_ENDS;
		uint64_t v = last ? other : st->ends[cli_cut_ends[i].end];

		if (!v)
			continue;
		k += (size_t)snprintf(buf + k, len - k, "%s%llu %s", first ? ": " : ", ",
				      (unsigned long long)v, last ? "other" : cli_cut_ends[i].key);
		first = false;
	}
}

/* Per process, when the session followed a tree, under the summary line:
 * the processes with the most samples, their share of the samples and
 * their time.  Processes never sampled (a script's short helpers) are only
 * counted, and there is no list for one process. */
#define MAX_PROCESS_LINES 10

static void print_processes(const struct sampler *s, const struct sampler_stats *st)
{
	struct sampler_process p, top[MAX_PROCESS_LINES];
	size_t i, k, n_top = 0, sampled = 0, n = sampler_process_count(s);

	if (n < 2)
		return;
	for (i = 0; sampler_process_at(s, i, &p) == 0; i++) {
		if (!p.samples)
			continue;
		sampled++;
		/* Insertion into the short list, most samples first. */
		for (k = n_top; k > 0 && top[k - 1].samples < p.samples; k--) {
			if (k < MAX_PROCESS_LINES)
				top[k] = top[k - 1];
		}
		if (k < MAX_PROCESS_LINES) {
			top[k] = p;
			if (n_top < MAX_PROCESS_LINES)
				n_top++;
		}
	}
	for (k = 0; k < n_top; k++)
		fprintf(stderr, "  pid %d (%s): %llu samples (%.1f%%), %.3f s\n", (int)top[k].pid,
			top[k].name, (unsigned long long)top[k].samples,
			st->samples ? 100.0 * (double)top[k].samples / (double)st->samples : 0,
			(double)top[k].value_ns / 1e9);
	fprintf(stderr, "  %zu processes, %zu with samples%s\n", n, sampled,
		sampled > n_top ? " (the others: --json)" : "");
}

/* The sampling thread's scheduling policy, as the summary line says it;
 * buf holds it when it is made up. */
static const char *sched_text(const struct tracer_stats *t, char *buf, size_t size)
{
	const char *drop = NULL;

	switch (t->sched_drop) {
	case PRIO_DROP_RTTIME:
		drop = "until it ran too long without a pause";
		break;
	case PRIO_DROP_SHARE:
		drop = "until it used too much of a CPU";
		break;
	case PRIO_KEPT:
		break;
	}
	if (t->sched_policy == PRIO_RT_ADAPT && !t->sched_rt_ns)
		return "at nice -10 (real-time only while the CPUs are contended)";
	if (t->sched_policy == PRIO_RT_ADAPT) {
		snprintf(buf, size, "real-time %.1f s (while the CPUs were contended%s%s), else at nice -10",
			 (double)t->sched_rt_ns / 1e9, drop ? ", " : "", drop ? drop : "");
		return buf;
	}
	if (t->sched_policy == PRIO_RT) {
		snprintf(buf, size, "real-time%s%s", drop ? " " : "", drop ? drop : "");
		return buf;
	}
	return t->sched_policy == PRIO_NICE ? "at nice -10" : "at normal priority";
}

/* Why perf events were not used, for the summary and --json. */
const char *session_perf_refusal(const struct sampler_stats *st, char *buf, size_t size)
{
	int err = st->perf_errno, paranoid;

	switch (st->perf_refused) {
	case SAMPLER_PERF_USED:
		return NULL;
	case SAMPLER_PERF_THREADS:
		return "more threads than descriptors for their events (one a thread a CPU; "
		       "ulimit -n)";
	case SAMPLER_PERF_RINGS:
		snprintf(buf, size, "the kernel's budget of locked memory has no room for the "
			 "rings (%s; perf_event_mlock_kb, ulimit -l)", strerror(-err));
		return buf;
	case SAMPLER_PERF_STACK:
		return "--stack-size is more than a perf sample carries (65528 bytes)";
	case SAMPLER_PERF_PYTHON:
		return "CPython's frames are in the heap, which a perf sample does not hold";
	case SAMPLER_PERF_ERRNO:
		break;
	}
	if (err == -EACCES || err == -EPERM) {
		char level[16] = "?";

		if (cli_read_proc_int("/proc/sys/kernel/perf_event_paranoid", &paranoid))
			snprintf(level, sizeof(level), "%d", paranoid);
		snprintf(buf, size, "not permitted (perf_event_paranoid=%s; run as root or with "
			 "CAP_PERFMON)", level);
	} else if (err == -ENOSYS || err == -ENOENT || err == -EOPNOTSUPP) {
		snprintf(buf, size, "not available in this kernel (%s)", strerror(-err));
	} else {
		snprintf(buf, size, "%s", strerror(-err));
	}
	return buf;
}

/* How the samples were taken, as the summary says it. */
static const char *source_text(const struct sampler_stats *st, char *buf, size_t size)
{
	char why[128];
	const char *no = session_perf_refusal(st, why, sizeof(why));

	if (st->source == SAMPLER_SOURCE_PERF) {
		char fell[128] = "";

		if (st->perf_fallbacks)
			snprintf(fell, sizeof(fell), ", but %llu threads that could have no event (%s)",
				 (unsigned long long)st->perf_fallbacks,
				 strerror(-st->perf_fallback_errno));
		snprintf(buf, size, "samples taken by perf events (the kernel copied %zu KiB of "
			 "stack each into %zu KiB of rings, no thread stopped for a sample%s%s%s)",
			 st->perf_stack >> 10, st->perf_ring_bytes >> 10, fell,
			 no ? ", then at stops: " : "", no ? no : "");
		return buf;
	}
	if (!no)
		return "samples taken at stops";
	snprintf(buf, size, "samples taken at stops (perf events: %s)", no);
	return buf;
}

/* The summary's last words: how long the way out took. */
static void format_finish(char *buf, size_t size, const struct session_end *end)
{
	char sync[64] = "";

	if (end->fsync)
		snprintf(sync, sizeof(sync), ", of which fsync %.2f s", (double)end->sync_ns / 1e9);
	snprintf(buf, size, "; written %.2f s after sampling ended%s%s",
		 (double)end->finish_ns / 1e9, sync,
		 end->modules_cut ? " (--write-timeout cut symbolizing short)" : "");
}

/* Why the samples carry no kernel frame, or NULL when they do: asked for
 * and permitted, they still need the perf source (auto may use stops). */
static const char *kernel_refusal(const struct cli_session *a, const struct sampler_stats *st)
{
	if (a->kallsyms && !st->perf_threads)
		return "the samples were taken at stops, where no kernel stack can be read";
	return a->kallsyms ? NULL : a->kernel_why;
}

static void print_summary(const struct cli_session *a, const struct sampler_stats *st,
			  const struct session_end *end)
{
	const struct tracer_stats *t = &st->tracer;
	char finish[160];
	char incomplete[200];
	char rotated[96] = "";
	char signals[128] = "";
	char sched[128];
	char source[192];
	char kernel[64] = "";

	/* Wall mode with more threads than a tick can read: say at what rate
	 * each was really sampled (the values stay unbiased). */
	if (st->ticks_rotated)
		snprintf(rotated, sizeof(rotated), "; each thread sampled at %.1f Hz of %u",
			 st->effective_hz, a->hz);
	/* A signal to a traced thread waits in its delivery-stop until cprof
	 * passes it on: say how long that took. */
	if (t->signals_reinjected)
		snprintf(signals, sizeof(signals),
			 "; %llu signals passed on, turnaround p50 %.1f us, p99 %.1f us",
			 (unsigned long long)t->signals_reinjected,
			 (double)tracer_signal_percentile(t, 50) / 1e3,
			 (double)tracer_signal_percentile(t, 99) / 1e3);

	if (!kernel_refusal(a, st))
		snprintf(kernel, sizeof(kernel), " (%.1f%% of the time in the kernel)",
			 st->value_ns ? 100.0 * (double)st->kernel_ns / (double)st->value_ns : 0);
	format_incomplete(incomplete, sizeof(incomplete), st);
	format_finish(finish, sizeof(finish), end);
	fprintf(stderr,
		"cprof: wrote %s: %llu samples (%s) from %llu threads in %.2f s%s; "
		"stops p50 %.1f us, p99 %.1f us, max %.1f us (from reaching the stop: p50 %.1f us, "
		"p99 %.1f us); a thread spent at most %.3f%% of "
		"its time stopped (mean %.3f%%)%s; stack copies %llu full, %llu short, %llu short "
		"that ran out; %s%s; cprof used %.1f%% of a CPU, its sampling thread %s%s%s\n",
		strcmp(a->output, "-") == 0 ? "standard output" : a->output,
		(unsigned long long)st->samples, incomplete,
		(unsigned long long)t->threads_seen, (double)st->elapsed_ns / 1e9,
		st->target_exited ? " (the process exited)" : "",
		(double)tracer_stop_percentile(t, 50) / 1e3,
		(double)tracer_stop_percentile(t, 99) / 1e3, (double)t->stop_ns_max / 1e3,
		(double)tracer_at_stop_percentile(t, 50) / 1e3,
		(double)tracer_at_stop_percentile(t, 99) / 1e3,
		100 * t->stopped_fraction_max, 100 * mean_fraction(t), signals,
		(unsigned long long)st->copies_full, (unsigned long long)st->copies_short,
		(unsigned long long)st->copies_short_ran_out, source_text(st, source, sizeof(source)),
		kernel, st->elapsed_ns ? 100.0 * (double)st->cprof_cpu_ns / (double)st->elapsed_ns : 0,
		sched_text(t, sched, sizeof(sched)), rotated, finish);
}

/* The modules left without debuginfo, as a JSON array of objects. */
static void print_json_missing(const struct sym_live *live)
{
	const char *module, *build_id, *why;
	size_t i;

	fputs("[", stdout);
	for (i = 0; sym_live_missing(live, i, &module, &build_id, &why); i++) {
		fputs(i ? ", {\"module\": " : "{\"module\": ", stdout);
		cli_json_string(stdout, module);
		fputs(", \"build_id\": ", stdout);
		cli_json_string(stdout, build_id);
		fputs(", \"why\": ", stdout);
		cli_json_string(stdout, why);
		fputs("}", stdout);
	}
	fputs("]", stdout);
}

/* Every process of the session as a JSON array, the root first. */
static void print_json_processes(const struct sampler *s)
{
	struct sampler_process p;
	size_t i;

	fputs("[", stdout);
	for (i = 0; sampler_process_at(s, i, &p) == 0; i++) {
		printf("%s{\"pid\": %d, \"name\": ", i ? ", " : "", (int)p.pid);
		cli_json_string(stdout, p.name);
		printf(", \"samples\": %llu, \"value_ns\": %llu}", (unsigned long long)p.samples,
		       (unsigned long long)p.value_ns);
	}
	fputs("]", stdout);
}

/* "finish": from the end of sampling to the profile written. */
static void print_json_finish(const struct session_end *end)
{
	printf(", \"finish\": {\"ns\": %llu, \"timeout_ns\": %llu, \"modules_cut\": %zu, "
	       "\"parser_deaths\": %zu, \"parser_errors\": %zu, \"fsync_ns\": ",
	       (unsigned long long)end->finish_ns, (unsigned long long)end->timeout_ns,
	       end->modules_cut, end->parser_deaths, end->parser_errors);
	if (end->fsync)
		printf("%llu}", (unsigned long long)end->sync_ns);
	else
		fputs("null}", stdout);
}

/* "kernel": whether samples carry kernel frames, and the time in the kernel. */
static void print_json_kernel(const struct cli_session *a, const struct sampler_stats *st)
{
	const char *no = kernel_refusal(a, st);

	printf(", \"kernel\": {\"frames\": %s, \"samples\": %llu, \"value_ns\": %llu, "
	       "\"share\": ", no ? "false" : "true",
	       (unsigned long long)st->kernel_samples, (unsigned long long)st->kernel_ns);
	if (!no)
		printf("%.4f", st->value_ns ? (double)st->kernel_ns / (double)st->value_ns : 0);
	else
		fputs("null", stdout);
	fputs(", \"refused\": ", stdout);
	cli_json_string(stdout, no);	/* null when nothing was refused */
	fputs("}", stdout);
}

/* "source" and "perf": how the samples were taken. */
static void print_json_source(const struct sampler_stats *st)
{
	char buf[128];
	const char *no = session_perf_refusal(st, buf, sizeof(buf));

	printf(", \"source\": \"%s\", \"perf\": {\"threads\": %llu, \"fallbacks\": %llu, "
	       "\"lost\": %llu, \"throttled\": %llu, \"drains\": %llu, \"stack_bytes\": %zu, "
	       "\"ring_bytes\": %zu, \"fallback_cause\": ",
	       st->source == SAMPLER_SOURCE_PERF ? "perf" : "ptrace",
	       (unsigned long long)st->perf_threads, (unsigned long long)st->perf_fallbacks,
	       (unsigned long long)st->perf_lost, (unsigned long long)st->perf_throttled,
	       (unsigned long long)st->perf_drains, st->perf_stack, st->perf_ring_bytes);
	cli_json_string(stdout, st->perf_fallbacks ? strerror(-st->perf_fallback_errno) : NULL);
	fputs(", \"refused\": ", stdout);
	cli_json_string(stdout, no);	/* null when nothing was refused */
	fputs("}", stdout);
}

static void print_json(const struct cli_session *a, pid_t pid, const struct sampler *s,
		       const struct sym_live *live, const struct session_end *end)
{
	const struct sampler_stats *st = sampler_get_stats(s);
	const struct tracer_stats *t = &st->tracer;
	uint64_t fresh = fresh_count(st);
	char ends[256];

	format_ends(ends, sizeof(ends), st, fresh, true);
	printf("{\"pid\": %d, \"mode\": \"%s\", \"stop\": \"%s\", \"hz\": %u, \"output\": ",
	       (int)pid, a->mode == SAMPLER_WALL ? "wall" : "cpu",
	       a->stop == SAMPLER_STOP_PROCESS ? "process" : "thread", a->hz);
	cli_json_string(stdout, a->output);
	printf(", \"elapsed_ns\": %llu, \"samples\": %llu, \"samples_stopped\": %llu, "
	       "\"samples_unstopped\": %llu, \"samples_reused\": %llu, \"value_ns\": %llu, "
	       "\"ticks\": %llu, \"ticks_missed\": %llu, \"threads_seen\": %llu, "
	       "\"sched_reads\": %llu, \"full_reads\": %llu, \"ticks_rotated\": %llu, "
	       "\"effective_hz\": %.2f, "
	       "\"stops\": %llu, \"stop_ns\": {\"p50\": %llu, \"p99\": %llu, \"max\": %llu, "
	       "\"total\": %llu}, \"stopped_ns\": {\"p50\": %llu, \"p99\": %llu, \"max\": %llu, "
	       "\"total\": %llu}, \"stopped_fraction\": {\"max\": %.6f, \"mean\": %.6f}, "
	       "\"cprof_cpu_ns\": %llu, \"unwind\": {%s}, \"stack_copies\": {\"full\": %llu, "
	       "\"short\": %llu, \"short_ran_out\": %llu}, \"unwinds_reused\": %llu, "
	       "\"unwinds_kernel_chain\": %llu, "
	       "\"unwind_pages\": {\"file\": %llu, \"memory\": %llu}, "
	       "\"walks\": {\"parser\": %llu, \"continued\": %llu, \"here\": %llu}, "
	       "\"spins\": {\"polled\": %llu, \"paid\": %llu}, \"signals_reinjected\": %llu, "
	       "\"signal_ns\": {\"p50\": %llu, \"p99\": %llu, \"max\": %llu, \"total\": %llu}, "
	       "\"samples_signal_entry\": %llu, \"samples_signal_deferred\": %llu, "
	       "\"boosted\": %s, \"sched\": \"%s\", \"sched_dropped\": %s%s%s, "
	       "\"sched_rt_ns\": %llu, \"sched_switches\": %u, "
	       "\"target_exited\": %s, \"debuginfo_missing\": ",
	       (unsigned long long)st->elapsed_ns, (unsigned long long)st->samples,
	       (unsigned long long)(fresh - st->samples_unstopped),
	       (unsigned long long)st->samples_unstopped, (unsigned long long)st->samples_reused,
	       (unsigned long long)st->value_ns, (unsigned long long)st->ticks,
	       (unsigned long long)st->ticks_missed, (unsigned long long)t->threads_seen,
	       (unsigned long long)st->sched_reads, (unsigned long long)st->full_reads,
	       (unsigned long long)st->ticks_rotated,
	       a->mode == SAMPLER_WALL ? st->effective_hz : (double)a->hz,
	       (unsigned long long)t->stops, (unsigned long long)tracer_stop_percentile(t, 50),
	       (unsigned long long)tracer_stop_percentile(t, 99),
	       (unsigned long long)t->stop_ns_max, (unsigned long long)t->stop_ns_total,
	       (unsigned long long)tracer_at_stop_percentile(t, 50),
	       (unsigned long long)tracer_at_stop_percentile(t, 99),
	       (unsigned long long)t->at_stop_ns_max, (unsigned long long)t->at_stop_ns_total,
	       t->stopped_fraction_max, mean_fraction(t), (unsigned long long)st->cprof_cpu_ns,
	       ends, (unsigned long long)st->copies_full, (unsigned long long)st->copies_short,
	       (unsigned long long)st->copies_short_ran_out, (unsigned long long)st->unwinds_reused,
	       (unsigned long long)st->unwinds_kernel_chain,
	       (unsigned long long)st->pages_file, (unsigned long long)st->pages_memory,
	       (unsigned long long)st->walks_parser, (unsigned long long)st->walks_continued,
	       (unsigned long long)st->walks_here,
	       (unsigned long long)t->spins, (unsigned long long)t->spins_paid,
	       (unsigned long long)t->signals_reinjected,
	       (unsigned long long)tracer_signal_percentile(t, 50),
	       (unsigned long long)tracer_signal_percentile(t, 99),
	       (unsigned long long)t->signal_ns_max, (unsigned long long)t->signal_ns_total,
	       (unsigned long long)st->samples_signal_entry,
	       (unsigned long long)st->samples_signal_deferred, st->boosted ? "true" : "false",
	       prio_policy_name(t->sched_policy), prio_drop_name(t->sched_drop) ? "\"" : "",
	       prio_drop_name(t->sched_drop) ? prio_drop_name(t->sched_drop) : "null",
	       prio_drop_name(t->sched_drop) ? "\"" : "",
	       (unsigned long long)t->sched_rt_ns, t->sched_switches,
	       st->target_exited ? "true" : "false");
	print_json_missing(live);
	print_json_source(st);
	print_json_finish(end);
	print_json_kernel(a, st);
	session_json_python(a, s);
	fputs(", \"processes\": ", stdout);
	print_json_processes(s);
	fputs("}\n", stdout);
}

/* After the profile is written: the summary and what debuginfo was missing
 * (unless -q), and the JSON object with --json. */
void session_report(const struct cli_session *a, pid_t pid, const struct sampler *s,
		    const struct sym_note *note, const struct session_end *end)
{
	size_t i;

	if (!a->quiet) {
		print_summary(a, sampler_get_stats(s), end);
		session_print_python(a, s);
		print_processes(s, sampler_get_stats(s));
		for (i = 0; print_missing(note->live, i); i++)
			;
		print_unnamed(a, note);
	}
	if (a->json)
		print_json(a, pid, s, note->live, end);
}
