/* SPDX-License-Identifier: MIT */
/* In-memory aggregation of raw samples: (thread, frames) -> summed values. */

#include "config.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "lib/arith.h"
#include "lib/grow.h"
#include "lib/hash.h"
#include "lib/htab.h"
#include "profile/stacks.h"

/*
 * Entries live in one array in insertion order, their frames and values in
 * two pools, found through a lib/htab.h index.  Adding to an existing entry
 * touches no allocator, which keeps the sampling loop allocation-free once
 * the workload's stacks have all been seen.
 */
struct entry {
	size_t frame_off;	/* into frames[] */
	size_t n_frames;
	uint32_t thread;
};

struct prof_stacks {
	size_t n_values;

	struct entry *entries;
	size_t n_entries, cap_entries;
	struct prof_frame *frames;
	size_t n_frames, cap_frames;
	int64_t *values;	/* n_values per entry */
	size_t cap_values;

	struct cprof_htab index;
};

/* A stack being added, before it is known to be new. */
struct stack_key {
	uint32_t thread;
	const struct prof_frame *frames;
	size_t n;
};

static uint32_t stack_hash(const struct stack_key *k)
{
	uint64_t h = cprof_hash_mix(k->thread, k->n);
	size_t i;

	for (i = 0; i < k->n; i++) {
		h = cprof_hash_mix(h, k->frames[i].addr);
		h = cprof_hash_mix(h, (uint64_t)k->frames[i].module << 32 | k->frames[i].flags);
	}
	return cprof_hash_finish(h);
}

static bool stack_eq(const struct prof_stacks *s, uint32_t index, const struct stack_key *k)
{
	const struct entry *e = &s->entries[index];
	const struct prof_frame *f = &s->frames[e->frame_off];
	size_t i;

	if (e->thread != k->thread || e->n_frames != k->n)
		return false;
	/* field by field: the struct's padding, if any, is not ours to compare */
	for (i = 0; i < k->n; i++)
		if (f[i].addr != k->frames[i].addr || f[i].module != k->frames[i].module ||
		    f[i].flags != k->frames[i].flags)
			return false;
	return true;
}

#define HTAB_NAME stack_index
#define HTAB_CTX struct prof_stacks
#define HTAB_KEY struct stack_key
#define HTAB_HASH(s, k) stack_hash(k)
#define HTAB_COMPARE stack_eq
#include "lib/htab-type.h"

int prof_stacks_create(struct prof_stacks **out, size_t n_values)
{
	struct prof_stacks *s;

	*out = NULL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->n_values = n_values;
	if (cprof_htab_reserve(&s->index, 128) < 0) {
		free(s);
		return -ENOMEM;
	}
	*out = s;
	return 0;
}

void prof_stacks_destroy(struct prof_stacks *s)
{
	if (!s)
		return;
	free(s->entries);
	free(s->frames);
	free(s->values);
	cprof_htab_free(&s->index);
	free(s);
}

/* Appends key as a new entry with zero values; *index receives its index. */
static int append_stack(struct prof_stacks *s, const struct stack_key *k, uint32_t hash,
			size_t *index)
{
	struct entry *e;
	int err;

	if (s->n_entries >= UINT32_MAX - 1)
		return -ENOMEM;
	if (s->n_values && s->n_entries + 1 > SIZE_MAX / s->n_values)
		return -ENOMEM;
	/* reserve everything first: a failure must not leave half an entry */
	err = cprof_grow(&s->entries, &s->cap_entries, s->n_entries + 1, sizeof(*s->entries), 64);
	if (!err)
		err = cprof_grow(&s->frames, &s->cap_frames, s->n_frames + k->n,
				 sizeof(*s->frames), 64);
	if (!err && s->n_values)
		err = cprof_grow(&s->values, &s->cap_values, (s->n_entries + 1) * s->n_values,
				 sizeof(*s->values), 64);
	if (!err)
		err = cprof_htab_reserve(&s->index, 1);
	if (err)
		return err;

	e = &s->entries[s->n_entries];
	e->frame_off = s->n_frames;
	e->n_frames = k->n;
	e->thread = k->thread;
	if (k->n)
		memcpy(&s->frames[e->frame_off], k->frames, k->n * sizeof(*k->frames));
	s->n_frames += k->n;
	if (s->n_values)
		memset(&s->values[s->n_entries * s->n_values], 0,
		       s->n_values * sizeof(*s->values));
	cprof_htab_add(&s->index, hash, s->n_entries);
	*index = s->n_entries++;
	return 0;
}

static void add_values(struct prof_stacks *s, size_t index, const int64_t *values)
{
	int64_t *dst = &s->values[index * s->n_values];
	size_t i;

	for (i = 0; i < s->n_values; i++)
		dst[i] = cprof_add_wrap(dst[i], values[i]);
}

int prof_stacks_add_ref(struct prof_stacks *s, uint32_t *entry, uint32_t thread,
			const struct prof_frame *frames, size_t n_frames, const int64_t *values)
{
	struct stack_key key = { .thread = thread, .frames = frames, .n = n_frames };
	uint32_t hash, ref;
	size_t index;
	int err;

	if ((n_frames && !frames) || (s->n_values && !values))
		return -EINVAL;
	ref = entry ? *entry : 0;
	/* The caller's word that the frames are those of that entry; its
	 * thread and depth are checked, cheaply. */
	if (!ref || ref > s->n_entries || s->entries[ref - 1].thread != thread ||
	    s->entries[ref - 1].n_frames != n_frames)
		ref = stack_index_find(&s->index, s, &key, &hash);
	if (ref) {
		index = ref - 1;
	} else {
		err = append_stack(s, &key, hash, &index);
		if (err)
			return err;
	}
	if (entry)
		*entry = (uint32_t)index + 1;
	if (s->n_values)
		add_values(s, index, values);
	return 0;
}

int prof_stacks_add(struct prof_stacks *s, uint32_t thread, const struct prof_frame *frames,
		    size_t n_frames, const int64_t *values)
{
	return prof_stacks_add_ref(s, NULL, thread, frames, n_frames, values);
}

size_t prof_stacks_count(const struct prof_stacks *s)
{
	return s->n_entries;
}

int prof_stacks_foreach(const struct prof_stacks *s, prof_stacks_fn fn, void *arg)
{
	size_t i;
	int ret;

	for (i = 0; i < s->n_entries; i++) {
		const struct entry *e = &s->entries[i];

		ret = fn(e->thread, e->n_frames ? &s->frames[e->frame_off] : NULL, e->n_frames,
			 s->n_values ? &s->values[i * s->n_values] : NULL, arg);
		if (ret)
			return ret;
	}
	return 0;
}
