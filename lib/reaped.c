/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <pthread.h>

#include "lib/reaped.h"

/* A handful: the parser is the only child that is not a tracee, and its
 * owner takes its status right after it dies. */
#define REAPED_KEEP 8

static pthread_mutex_t reaped_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
	pid_t pid;
	int status;
} reaped[REAPED_KEEP];
static unsigned reaped_next;

void cprof_reaped_note(pid_t pid, int status)
{
	pthread_mutex_lock(&reaped_lock);
	reaped[reaped_next % REAPED_KEEP].pid = pid;
	reaped[reaped_next % REAPED_KEEP].status = status;
	reaped_next++;
	pthread_mutex_unlock(&reaped_lock);
}

bool cprof_reaped_take(pid_t pid, int *status)
{
	bool found = false;
	unsigned i;

	pthread_mutex_lock(&reaped_lock);
	for (i = 0; i < REAPED_KEEP && !found; i++) {
		if (reaped[i].pid != pid || pid <= 0)
			continue;
		*status = reaped[i].status;
		reaped[i].pid = 0;
		found = true;
	}
	pthread_mutex_unlock(&reaped_lock);
	return found;
}
