/* SPDX-License-Identifier: MIT */
/* libcprof-inproc.so's drain thread: the ring into prof_stacks, and the profile written from them. */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#include "lib/clock.h"
#include "profile/output.h"
#include "profile/stacks.h"
#include "process/maps.h"
#include "process/modules.h"
#include "inproc/inproc.h"

#define INPROC_DRAIN_MS 50

/* Aggregation: owned by the drain thread, then by inproc_finish after the
 * drain thread is joined. */
struct prof_stacks *inproc_stacks;
struct proc_modules *inproc_mods;
struct proc_maps inproc_maps;
static uint64_t inproc_samples;
static uint64_t inproc_lost;		/* could not be aggregated (ENOMEM) */

pthread_mutex_t inproc_drain_lock = PTHREAD_MUTEX_INITIALIZER;
pthread_cond_t inproc_drain_cond;
bool inproc_drain_stop;		/* under inproc_drain_lock */

/* Module ids for a sample's pcs; re-reads the maps once per drain when a pc
 * is in no known module (a library dlopen'ed since the last read). */
static void inproc_frames_of(const struct inproc_record *r, struct prof_frame *f,
			     bool *maps_fresh)
{
	uint32_t i;

	for (i = 0; i < r->n; i++) {
		const struct proc_module *m = proc_modules_lookup(inproc_mods, r->pcs[i]);

		if (!m && !*maps_fresh) {
			*maps_fresh = true;
			if (proc_maps_read(getpid(), &inproc_maps) == 0)
				proc_modules_update(inproc_mods, &inproc_maps);
			m = proc_modules_lookup(inproc_mods, r->pcs[i]);
		}
		f[i] = (struct prof_frame){
			.addr = r->pcs[i],
			.module = m ? m->id : 0,
			.flags = (r->exact[i / 64] >> (i % 64)) & 1 ? PROF_FRAME_EXACT : 0,
		};
	}
}

void inproc_drain(void)
{
	struct prof_frame frames[INPROC_MAX_FRAMES];
	uint64_t tail = __atomic_load_n(&inproc_tail, __ATOMIC_RELAXED);
	bool maps_fresh = false;

	for (;;) {
		struct inproc_record *r = &inproc_ring[tail % INPROC_RING_SLOTS];
		int64_t values[2];
		uint32_t key;

		/* A slot reserved but not yet complete (its handler is still
		 * unwinding) ends this round; the next one takes it. */
		if (__atomic_load_n(&r->seq, __ATOMIC_ACQUIRE) != tail + 1)
			break;
		inproc_frames_of(r, frames, &maps_fresh);
		/* Thread key 0 is reserved by prof_stacks users for "none";
		 * samples of unregistered threads get the tid's high bit. */
		key = r->key ? r->key : (r->tid | 0x80000000u);
		values[0] = 1;
		values[1] = (int64_t)r->value_ns;
		if (prof_stacks_add(inproc_stacks, key, frames, r->n, values) < 0)
			inproc_lost++;
		else
			inproc_samples++;
		tail++;
		__atomic_store_n(&inproc_tail, tail, __ATOMIC_RELEASE);
	}
}

void *inproc_drain_main(void *unused)
{
	struct timespec until;
	sigset_t all;

	/* Never sampled and never interrupted by the target's signals. */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);
	prctl(PR_SET_NAME, "cprof-inproc", 0, 0, 0);
	pthread_mutex_lock(&inproc_drain_lock);
	while (!inproc_drain_stop) {
		pthread_mutex_unlock(&inproc_drain_lock);
		inproc_drain();
		pthread_mutex_lock(&inproc_drain_lock);
		clock_gettime(CLOCK_MONOTONIC, &until);
		until.tv_nsec += INPROC_DRAIN_MS * 1000000L;
		if (until.tv_nsec >= 1000000000L) {
			until.tv_sec++;
			until.tv_nsec -= 1000000000L;
		}
		if (!inproc_drain_stop)
			pthread_cond_timedwait(&inproc_drain_cond, &inproc_drain_lock, &until);
	}
	pthread_mutex_unlock(&inproc_drain_lock);
	return NULL;
}

static int inproc_label(uint32_t key, pid_t *tid, const char **name, void *arg)
{
	/* A thread that ends meanwhile renames its entry: copy under the lock;
	 * the builder interns the name before the next call. */
	static char copy[16];
	int ret = 0;

	if (key & 0x80000000u) {
		*tid = (pid_t)(key & 0x7fffffffu);
		*name = NULL;
		return 0;
	}
	pthread_mutex_lock(&inproc_threads_lock);
	if (!key || key > inproc_n_threads) {
		ret = -ENOENT;
		goto out;
	}
	*tid = inproc_threads[key - 1].tid;
	memcpy(copy, inproc_threads[key - 1].name, sizeof(copy));
	*name = copy;
out:
	pthread_mutex_unlock(&inproc_threads_lock);
	return ret;
}

int inproc_write(void)
{
	char lines[2][160];
	const char *comments[2] = { lines[0], lines[1] };
	struct prof_session ps = {
		.stacks = inproc_stacks,
		.mods = inproc_mods,
		.export = {
			.value = inproc_mode == INPROC_WALL ? PROF_VALUE_WALL : PROF_VALUE_CPU,
			.hz = inproc_hz,
			.time_nanos = inproc_start_realtime_ns,
			.duration_nanos = (int64_t)(cprof_now_ns() - inproc_start_mono_ns),
			.thread_label = inproc_label,
		},
		.comments = comments,
		.n_comments = 2,
		.format = PROF_FORMAT_PPROF,
		.path = inproc_output,
		.fsync = inproc_fsync,
	};

	if (proc_maps_read(getpid(), &inproc_maps) == 0)
		proc_modules_update(inproc_mods, &inproc_maps);
	snprintf(lines[0], sizeof(lines[0]), "cprof inproc HZ=%u mode=%s", inproc_hz,
		 inproc_mode == INPROC_WALL ? "wall" : "cpu");
	snprintf(lines[1], sizeof(lines[1]), "samples=%llu dropped=%llu",
		 (unsigned long long)inproc_samples,
		 (unsigned long long)(__atomic_load_n(&inproc_dropped, __ATOMIC_RELAXED) +
				      inproc_lost));
	/* Without symbols the addresses still make a profile. */
	return prof_write_session(&ps, NULL);
}
