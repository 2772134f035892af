/* SPDX-License-Identifier: MIT */
/*
 * What the files of libcprof-inproc.so share (see inproc.c for its
 * contract): the settings (settings.c fixes them in the constructor), the
 * ring the signal handler fills (inproc.c) and the drain thread empties
 * (drain.c), the thread table (inproc.c; drain.c names threads from it)
 * and the aggregation (drain.c's).  Each variable says who writes it and
 * under which lock.  Everything here is hidden from the target (the
 * library is built -fvisibility=hidden).
 */
#ifndef CPROF_INPROC_INPROC_H
#define CPROF_INPROC_INPROC_H

#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>
#include <sys/types.h>

#include "process/maps.h"

#define INPROC_MAX_FRAMES 128
/* The drain thread empties the ring every INPROC_DRAIN_MS; the ring holds
 * about a second of 8 threads at 1000 Hz, so only a drain thread starved
 * for that long (or far more threads) drops samples. */
#define INPROC_RING_SLOTS 8192u

enum inproc_mode { INPROC_CPU, INPROC_WALL };

/* One sample, written by the signal handler of exactly one thread. */
struct inproc_record {
	uint64_t seq;		/* ring index + 1 once complete (release/acquire) */
	uint32_t key;		/* thread table key; 0 = a thread we did not register */
	uint32_t tid;
	uint64_t value_ns;	/* the CPU (wall) time it stands for */
	uint32_t n;
	uint64_t exact[INPROC_MAX_FRAMES / 64];	/* bit i: pcs[i] is an exact pc */
	uint64_t pcs[INPROC_MAX_FRAMES];
};

struct inproc_thread {
	pid_t tid;
	bool alive;
	bool has_timer;
	timer_t timer;
	char name[16];
};

/* ---- settings.c: fixed by the constructor ---------------------------- */
extern enum inproc_mode inproc_mode;
extern unsigned inproc_hz;
extern int64_t inproc_interval_ns;
extern char inproc_output[PATH_MAX];
extern bool inproc_fsync;	/* CPROF_INPROC_FSYNC: fsync the profile */

/* Removes this library from LD_PRELOAD (a list separated by ':' or ' '),
 * recognised by path or by the file it names. */
void inproc_unpreload(void);
/* Reads the settings (output is CPROF_INPROC_OUTPUT's value); returns
 * false, with a message, when they are unusable. */
bool inproc_configure(const char *output);

/* ---- inproc.c: the ring and the thread table ------------------------- */
/* The ring, shared with the signal handler: atomics only. */
extern struct inproc_record *inproc_ring;
extern uint64_t inproc_tail;		/* next index to drain */
extern uint64_t inproc_dropped;		/* ring full */
/* Thread table: key - 1 indexes it.  Never touched by the handler. */
extern pthread_mutex_t inproc_threads_lock;
extern struct inproc_thread *inproc_threads;
extern size_t inproc_n_threads;		/* under inproc_threads_lock */
/* When sampling started. */
extern int64_t inproc_start_realtime_ns;
extern uint64_t inproc_start_mono_ns;

/* ---- drain.c: the aggregation ----------------------------------------- */
/* Owned by the drain thread, then by inproc_finish after the drain thread
 * is joined. */
extern struct prof_stacks *inproc_stacks;
extern struct proc_modules *inproc_mods;
extern struct proc_maps inproc_maps;
/* The drain thread's wake-up and end. */
extern pthread_mutex_t inproc_drain_lock;
extern pthread_cond_t inproc_drain_cond;
extern bool inproc_drain_stop;		/* under inproc_drain_lock */

/* Moves the complete records of the ring into inproc_stacks.  Single
 * consumer: the drain thread, or inproc_finish once it is joined. */
void inproc_drain(void);
/* The drain thread: inproc_drain every INPROC_DRAIN_MS until
 * inproc_drain_stop. */
void *inproc_drain_main(void *unused);
/* Writes the profile of inproc_stacks to inproc_output.  0 or -errno. */
int inproc_write(void);

#endif
