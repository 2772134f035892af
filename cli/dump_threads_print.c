/* SPDX-License-Identifier: MIT */
/* cprof dump-threads' output: a capture's threads as text or JSON. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/dump_threads.h"
#include "lib/clock.h"
#include "symbolize/symbolize.h"

static const char *state_name(char s)
{
	switch (s) {
	case 'R': return "running";
	case 'S': return "sleeping";
	case 'D': return "disk sleep";
	case 'T': return "stopped";
	case 't': return "tracing stop";
	case 'Z': return "zombie";
	case 'X': return "dead";
	case 'I': return "idle";
	default: return "unknown";
	}
}

const char *dump_base_name(const char *path)
{
	const char *s = path ? strrchr(path, '/') : NULL;

	return s ? s + 1 : path ? path : "";
}

/* A thread's stack ended somewhere other than its start. */
bool dump_thread_partial(const struct capture_thread *ct)
{
	if (ct->how == CAPTURE_NONE)
		return ct->err != -ESRCH;
	/* -n is the user's own limit, not a cut. */
	return !remote_end_is_root(ct->end) && ct->end != REMOTE_END_MAX_FRAMES;
}


/* Whether a frame may still be looked up; one that may not is counted. */
static bool in_time(struct printer *pr)
{
	if (!pr->late && cprof_now_ns() < pr->deadline_ns)
		return true;
	pr->late++;
	return false;
}

/* Calls fn for each symbolic frame of ct, inline frames expanded. */
typedef void (*frame_fn)(struct printer *pr, size_t index, const struct prof_frame *pf,
			 const struct proc_module *mod, const struct sym_frame *sf, void *arg);

/* A Python frame (PROF_FRAME_PYTHON) as a symbolic frame. */
static bool python_frame(struct printer *pr, const struct prof_frame *pf, struct sym_frame *out)
{
	struct py_location loc;

	if (!pr->c->py || py_location(pr->c->py, pf->addr, &loc) < 0)
		return false;
	*out = (struct sym_frame){ .function = loc.function, .file = loc.file, .line = loc.line };
	return true;
}

static void for_each_frame(struct printer *pr, const struct capture_thread *ct, frame_fn fn,
			   void *arg)
{
	size_t i, j, index = 0;

	for (i = 0; i < ct->n_frames; i++) {
		const struct prof_frame *pf = &ct->frames[i];
		struct sym_frame py;
		const struct proc_module *mod =
			pf->module ? proc_modules_get(pr->c->mods, pf->module) : NULL;
		const struct sym_frame *sf = NULL;
		size_t n = 0;

		/* The [truncated] mark: the text says why the stack ends. */
		if (pf->flags & PROF_FRAME_TRUNCATED)
			continue;
		if (pf->flags & PROF_FRAME_PYTHON) {
			if (index < pr->a->max_frames && python_frame(pr, pf, &py))
				fn(pr, index++, pf, NULL, &py, arg);
			continue;
		}
		/* mod NULL: JIT code, which the perf map may name */
		if (pr->sym && in_time(pr) &&
		    sym_lookup(pr->sym, mod, pf->addr, !(pf->flags & PROF_FRAME_EXACT), &sf, &n) < 0)
			n = 0;
		/* -n counts frames as printed, inlined ones included. */
		if (!n) {
			if (index < pr->a->max_frames)
				fn(pr, index++, pf, mod, NULL, arg);
			continue;
		}
		for (j = 0; j < n && index < pr->a->max_frames; j++)
			fn(pr, index++, pf, mod, &sf[j], arg);
	}
}

static void text_frame(struct printer *pr, size_t index, const struct prof_frame *pf,
		       const struct proc_module *mod, const struct sym_frame *sf, void *arg)
{
	FILE *f = pr->f;

	if (pf->flags & PROF_FRAME_PYTHON)
		fprintf(f, "  #%-3zu %-18s %s", index, "(python)", sf->function);
	else
		fprintf(f, "  #%-3zu 0x%016llx %s", index, (unsigned long long)pf->addr,
			sf && sf->function ? sf->function : "??");
	if (sf && sf->inlined)
		fputs(" [inlined]", f);
	if (sf && sf->file && !pr->a->no_source) {
		fprintf(f, " at %s", sf->file);
		if (sf->line)
			fprintf(f, ":%d", sf->line);
	}
	if (mod)
		fprintf(f, " (%s)", dump_base_name(mod->path));
	fputc('\n', f);
}

void dump_print_text(struct printer *pr)
{
	size_t i;

	for (i = 0; i < pr->c->n; i++) {
		const struct capture_thread *ct = &pr->c->threads[i];
		const char *sc = procfs_syscall_name(ct->syscall_nr);

		if (i)
			fputc('\n', pr->f);
		fprintf(pr->f, "Thread %d \"%s\" %c (%s) cpu=%.3fs", (int)ct->tid, ct->name,
			ct->state ? ct->state : '?', state_name(ct->state), (double)ct->cpu_ns / 1e9);
		if (ct->syscall_nr >= 0)
			fprintf(pr->f, " syscall=%s", sc ? sc : "?");
		fputc('\n', pr->f);
		if (ct->how == CAPTURE_NONE) {
			fprintf(pr->f, "  -- not captured: %s\n",
				ct->err == -ESRCH ? "the thread exited" : strerror(-ct->err));
			continue;
		}
		for_each_frame(pr, ct, text_frame, NULL);
		if (dump_thread_partial(ct))
			fprintf(pr->f, "  -- stack ends here: %s\n", remote_end_str(ct->end));
	}
}

static void json_frame(struct printer *pr, size_t index, const struct prof_frame *pf,
		       const struct proc_module *mod, const struct sym_frame *sf, void *arg)
{
	FILE *f = pr->f;

	if (pf->flags & PROF_FRAME_PYTHON)
		fprintf(f, "%s\n      {\"index\": %zu, \"python\": true, \"address\": null, "
			   "\"function\": ", index ? "," : "", index);
	else
		fprintf(f, "%s\n      {\"index\": %zu, \"address\": \"0x%llx\", \"function\": ",
			index ? "," : "", index, (unsigned long long)pf->addr);
	cli_json_string(f, sf ? sf->function : NULL);
	fprintf(f, ", \"inlined\": %s, \"file\": ", sf && sf->inlined ? "true" : "false");
	cli_json_string(f, sf && !pr->a->no_source ? sf->file : NULL);
	fprintf(f, ", \"line\": %d, \"module\": ", sf && !pr->a->no_source ? sf->line : 0);
	cli_json_string(f, mod ? mod->path : NULL);
	fputc('}', f);
}

/* "python": the interpreter found, or null with the reason. */
static void json_python(const struct capture *c, FILE *f)
{
	fputs("  \"python\": ", f);
	if (c->py) {
		fputs("{\"version\": ", f);
		cli_json_string(f, py_proc_version(c->py));
		fputs(", \"module\": ", f);
		cli_json_string(f, py_proc_module(c->py));
		fprintf(f, ", \"threads_with_frames\": %zu, \"read_ns\": %llu},\n", c->n_py_threads,
			(unsigned long long)c->py_read_ns);
	} else {
		fputs("null, \"python_error\": ", f);
		cli_json_string(f, c->py_err == -EPROTO ? c->py_why : NULL);
		fputs(",\n", f);
	}
}

void dump_print_json(struct printer *pr)
{
	const struct capture *c = pr->c;
	FILE *f = pr->f;
	size_t i;

	fprintf(f, "{\n  \"pid\": %d,\n  \"freeze_ns\": %llu,\n  \"stopped_ns\": %llu,\n"
		   "  \"threads_stopped\": %zu,\n  \"threads_unstopped\": %zu,",
		(int)c->pid, (unsigned long long)c->freeze_ns, (unsigned long long)c->stopped_ns,
		c->n_stopped, c->n_blocked);
	fputs("\n", f);
	json_python(c, f);
	fputs("  \"threads\": [", f);
	for (i = 0; i < c->n; i++) {
		const struct capture_thread *ct = &c->threads[i];
		char state[2] = { ct->state ? ct->state : '?', 0 };

		fprintf(f, "%s\n    {\"tid\": %d, \"name\": ", i ? "," : "", (int)ct->tid);
		cli_json_string(f, ct->name);
		fputs(", \"state\": ", f);
		cli_json_string(f, state);
		fprintf(f, ", \"cpu_ns\": %llu, \"syscall\": ", (unsigned long long)ct->cpu_ns);
		cli_json_string(f, ct->syscall_nr >= 0 ? procfs_syscall_name(ct->syscall_nr) : NULL);
		fprintf(f, ", \"syscall_nr\": %ld, \"captured\": \"%s\", \"complete\": %s, \"end\": ",
			ct->syscall_nr,
			ct->how == CAPTURE_STOPPED ? "stopped" : ct->how == CAPTURE_BLOCKED ? "blocked" : "no",
			dump_thread_partial(ct) ? "false" : "true");
		cli_json_string(f, ct->how == CAPTURE_NONE ?
				(ct->err == -ESRCH ? "the thread exited" : strerror(-ct->err)) :
				remote_end_str(ct->end));
		fputs(", \"frames\": [", f);
		if (ct->how != CAPTURE_NONE)
			for_each_frame(pr, ct, json_frame, NULL);
		fputs("]}", f);
	}
	/* after the frames: naming them is what may fail in the parser */
	fprintf(f, "\n  ],\n  \"parser_deaths\": %zu,\n  \"parser_errors\": %zu\n}\n",
		cli_helper_deaths(pr->a->helper),
		cli_helper_failed_modules(pr->sym, c->mods, c->parser_errors, c->n_parser_errors));
}
