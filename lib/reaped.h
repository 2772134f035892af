/* SPDX-License-Identifier: MIT */
/*
 * Exit statuses of cprof's own children that another part of cprof reaped.
 * The tracer drains with waitpid(-1, __WALL), which takes any child of the
 * process, not only tracees: the confined parser's exit among them.  What
 * it reaps that is not a tracee is kept here, so the parser's owner still
 * learns how it ended (killed by the seccomp filter, crashed, exited).
 */
#ifndef CPROF_LIB_REAPED_H
#define CPROF_LIB_REAPED_H

#include <stdbool.h>
#include <sys/types.h>

/* Keeps pid's wait status (the last few only: an owner takes it at once). */
void cprof_reaped_note(pid_t pid, int status);

/* pid's status, if someone reaped it and noted it; forgets it. */
bool cprof_reaped_take(pid_t pid, int *status);

#endif
