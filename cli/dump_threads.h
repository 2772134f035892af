/* SPDX-License-Identifier: MIT */
/* cprof dump-threads' parts: its options and the printing of a capture
 * (dump_threads_print.c). */
#ifndef CPROF_CLI_DUMP_THREADS_H
#define CPROF_CLI_DUMP_THREADS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "unwind/capture.h"

#define MAX_ONLY 4096

struct dump_args {
	pid_t pid;
	bool json;
	bool no_source;
	bool quiet;
	bool children;		/* --children: the descendants of pid too */
	bool no_python;		/* --python off */
	unsigned long max_frames;
	size_t stack_size;
	pid_t only[MAX_ONLY];
	size_t n_only;
	uint64_t write_timeout_ns;	/* symbolizing's bound, from the capture */
	const char *helper_user;	/* --helper-user */
	struct conf_helper *helper;	/* the confined parser */
};

/* A capture being printed. */
struct printer {
	const struct dump_args *a;
	const struct capture *c;
	struct sym_ctx *sym;
	FILE *f;
	uint64_t deadline_ns;	/* past it, frames are printed unnamed */
	size_t late;		/* frames printed unnamed for it */
};

/* The capture as text, one block a thread, or as one JSON document. */
void dump_print_text(struct printer *pr);
void dump_print_json(struct printer *pr);

/* A thread's stack ended somewhere other than its start. */
bool dump_thread_partial(const struct capture_thread *ct);

/* The last part of path ("" for NULL). */
const char *dump_base_name(const char *path);

#endif
