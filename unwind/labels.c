/* SPDX-License-Identifier: MIT */
/* The sampler's thread labels and the processes of its session. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "lib/grow.h"
#include "unwind/sampler_impl.h"

uint32_t samp_add_label(struct sampler *s, pid_t tid, const char *name, struct samp_proc *p)
{
	struct samp_label *l;

	if (cprof_grow(&s->labels, &s->cap_labels, s->n_labels + 1, sizeof(*s->labels), 64) < 0) {
		s->error = -ENOMEM;
		return 0;
	}
	l = &s->labels[s->n_labels];
	l->tid = tid;
	snprintf(l->name, sizeof(l->name), "%s", name);
	l->proc = p;
	snprintf(l->proc_name, sizeof(l->proc_name), "%s", p ? p->name : "");
	return (uint32_t)++s->n_labels;
}

void samp_update_label(struct sampler *s, struct tracer_thread *th, const char *comm)
{
	struct samp_thread *st = th->user;

	if (!st->label || strcmp(s->labels[st->label - 1].name, comm) != 0 ||
	    strcmp(s->labels[st->label - 1].proc_name, st->proc->name) != 0)
		st->label = samp_add_label(s, th->tid, comm, st->proc);
}

/*
 * After p's exec its threads' labels name the new program.  The kernel's
 * exec record renames the thread (samp_update_label) before the exec is
 * applied, while the process still has the old image's name, and a label
 * is looked at again only when its thread is renamed: without this, every
 * later sample of a shell that exec'd a program was labelled with the
 * shell's process name (record-tree.test, now and then).
 */
void samp_relabel(struct sampler *s, const struct samp_proc *p)
{
	size_t i, n = tracer_thread_count(s->tracer);
	char comm[sizeof(s->labels[0].name)];

	for (i = 0; i < n; i++) {
		struct tracer_thread *th = tracer_thread_at(s->tracer, i);
		struct samp_thread *st = th->user;

		if (!st || st->proc != p)
			continue;
		if (procfs_task_comm(tracer_fds(s->tracer), &th->task, comm, sizeof(comm)) < 0) {
			if (!st->label)
				continue;
			snprintf(comm, sizeof(comm), "%s", s->labels[st->label - 1].name);
		}
		samp_update_label(s, th, comm);
	}
}

struct samp_proc *samp_proc_of(struct sampler *s, pid_t pid)
{
	struct samp_proc *p;
	size_t i;

	/* Newest first: a thread's process is usually one seen lately. */
	for (i = s->n_procs; i-- > 0;) {
		if (s->procs[i]->pid == pid && !s->procs[i]->gone)
			return s->procs[i];
	}
	if (cprof_grow(&s->procs, &s->cap_procs, s->n_procs + 1, sizeof(*s->procs), 8) < 0 ||
	    procs_create(&p, pid, s->mods, NULL, s->o.helper) < 0) {
		s->error = -ENOMEM;
		return NULL;
	}
	s->procs[s->n_procs++] = p;
	return p;
}

bool samp_before_exec(const struct sampler *s, const struct samp_proc *p)
{
	return s->o.from_exec && !s->root_execed && p == s->procs[0];
}

int sampler_thread_label(const struct sampler *s, uint32_t key, pid_t *tid, const char **name)
{
	if (key == 0 || key > s->n_labels)
		return -ENOENT;
	*tid = s->labels[key - 1].tid;
	*name = s->labels[key - 1].name;
	return 0;
}

int sampler_process_label(const struct sampler *s, uint32_t key, pid_t *pid, const char **name)
{
	if (key == 0 || key > s->n_labels || !s->labels[key - 1].proc)
		return -ENOENT;
	*pid = s->labels[key - 1].proc->pid;
	*name = s->labels[key - 1].proc_name;
	return 0;
}

size_t sampler_process_count(const struct sampler *s)
{
	return s->n_procs;
}

int sampler_process_at(const struct sampler *s, size_t i, struct sampler_process *out)
{
	if (i >= s->n_procs)
		return -ENOENT;
	out->pid = s->procs[i]->pid;
	out->name = s->procs[i]->name;
	out->samples = s->procs[i]->samples;
	out->value_ns = s->procs[i]->value_ns;
	return 0;
}

int sampler_thread_stopped(const struct sampler *s, size_t i, struct sampler_thread_stop *out)
{
	const struct samp_thread *st;
	struct tracer_thread *th;

	if (!s->tracer || i >= tracer_thread_count(s->tracer))
		return -ENOENT;
	th = tracer_thread_at(s->tracer, i);
	st = th->user;
	out->tid = th->tid;
	out->name = st && st->label ? s->labels[st->label - 1].name : "";
	out->appeared_ns = th->appeared_ns;
	out->stopped_ns = th->stopped_ns;
	return 0;
}
