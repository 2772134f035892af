/* SPDX-License-Identifier: MIT */
/* In-memory aggregation of raw samples: (thread, frames) -> summed values. */

#include "config.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "profile/internal.h"
#include "profile/stacks.h"

/*
 * Entries live in one array in insertion order, their frames and values in
 * two pools; an open-addressing index (entry index + 1 and 32 bits of hash
 * per slot) finds them.  Adding to an existing entry touches no allocator,
 * which keeps the sampling loop allocation-free once the workload's stacks
 * have all been seen.
 */
struct entry {
	size_t frame_off;	/* into frames[] */
	size_t n_frames;
	uint32_t thread;
};

struct slot {
	uint32_t hash;
	uint32_t ref;		/* entry index + 1; 0 = empty */
};

struct prof_stacks {
	size_t n_values;

	struct entry *entries;
	size_t n_entries, cap_entries;
	struct prof_frame *frames;
	size_t n_frames, cap_frames;
	int64_t *values;	/* n_values per entry */
	size_t cap_values;

	struct slot *slots;
	size_t mask;		/* number of slots - 1 */
};

static uint32_t stack_hash(uint32_t thread, const struct prof_frame *frames, size_t n)
{
	uint64_t h = prof_hash_mix(thread, n);
	size_t i;

	for (i = 0; i < n; i++) {
		h = prof_hash_mix(h, frames[i].addr);
		h = prof_hash_mix(h, (uint64_t)frames[i].module << 32 | frames[i].flags);
	}
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdULL;
	h ^= h >> 33;
	h *= 0xc4ceb9fe1a85ec53ULL;
	h ^= h >> 33;
	return (uint32_t)h;
}

static bool stack_eq(const struct prof_stacks *s, const struct entry *e, uint32_t thread,
		     const struct prof_frame *frames, size_t n)
{
	const struct prof_frame *f = &s->frames[e->frame_off];
	size_t i;

	if (e->thread != thread || e->n_frames != n)
		return false;
	/* field by field: the struct's padding, if any, is not ours to compare */
	for (i = 0; i < n; i++)
		if (f[i].addr != frames[i].addr || f[i].module != frames[i].module ||
		    f[i].flags != frames[i].flags)
			return false;
	return true;
}

static struct slot *probe(const struct prof_stacks *s, uint32_t hash, uint32_t thread,
			  const struct prof_frame *frames, size_t n)
{
	size_t i = hash & s->mask;

	for (;;) {
		struct slot *sl = &s->slots[i];

		if (!sl->ref)
			return sl;
		if (sl->hash == hash &&
		    stack_eq(s, &s->entries[sl->ref - 1], thread, frames, n))
			return sl;
		i = (i + 1) & s->mask;
	}
}

/* Makes room in the index for one more entry (load factor at most 1/2). */
static int reserve_slot(struct prof_stacks *s)
{
	struct slot *nslots;
	size_t nsize, i;

	if ((s->n_entries + 1) * 2 <= s->mask + 1)
		return 0;
	nsize = (s->mask + 1) * 2;
	if (nsize > (size_t)UINT32_MAX || nsize > SIZE_MAX / sizeof(*nslots))
		return -ENOMEM;
	nslots = calloc(nsize, sizeof(*nslots));
	if (!nslots)
		return -ENOMEM;
	for (i = 0; i <= s->mask; i++) {
		size_t j;

		if (!s->slots[i].ref)
			continue;
		j = s->slots[i].hash & (nsize - 1);
		while (nslots[j].ref)
			j = (j + 1) & (nsize - 1);
		nslots[j] = s->slots[i];
	}
	free(s->slots);
	s->slots = nslots;
	s->mask = nsize - 1;
	return 0;
}

int prof_stacks_create(struct prof_stacks **out, size_t n_values)
{
	struct prof_stacks *s;

	*out = NULL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->n_values = n_values;
	s->mask = 255;
	s->slots = calloc(s->mask + 1, sizeof(*s->slots));
	if (!s->slots) {
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
	free(s->slots);
	free(s);
}

int prof_stacks_add(struct prof_stacks *s, uint32_t thread, const struct prof_frame *frames,
		    size_t n_frames, const int64_t *values)
{
	struct entry *e;
	struct slot *sl;
	uint32_t hash;
	int64_t *dst;
	size_t i;
	int err;

	if ((n_frames && !frames) || (s->n_values && !values))
		return -EINVAL;

	hash = stack_hash(thread, frames, n_frames);
	sl = probe(s, hash, thread, frames, n_frames);
	if (!sl->ref) {
		if (s->n_entries >= UINT32_MAX - 1)
			return -ENOMEM;
		if (s->n_values && s->n_entries + 1 > SIZE_MAX / s->n_values)
			return -ENOMEM;
		/* reserve everything first: a failure must not leave half an entry */
		err = prof_grow(&s->entries, &s->cap_entries, s->n_entries + 1, sizeof(*s->entries), 64);
		if (!err)
			err = prof_grow(&s->frames, &s->cap_frames, s->n_frames + n_frames,
				   sizeof(*s->frames), 64);
		if (!err && s->n_values)
			err = prof_grow(&s->values, &s->cap_values, (s->n_entries + 1) * s->n_values,
				   sizeof(*s->values), 64);
		if (!err)
			err = reserve_slot(s);
		if (err)
			return err;
		sl = probe(s, hash, thread, frames, n_frames);

		e = &s->entries[s->n_entries];
		e->frame_off = s->n_frames;
		e->n_frames = n_frames;
		e->thread = thread;
		if (n_frames)
			memcpy(&s->frames[e->frame_off], frames, n_frames * sizeof(*frames));
		s->n_frames += n_frames;
		if (s->n_values)
			memset(&s->values[s->n_entries * s->n_values], 0,
			       s->n_values * sizeof(*s->values));
		sl->hash = hash;
		sl->ref = (uint32_t)++s->n_entries;
	}

	if (!s->n_values)
		return 0;
	dst = &s->values[(size_t)(sl->ref - 1) * s->n_values];
	for (i = 0; i < s->n_values; i++)
		/* wrap instead of the undefined signed overflow */
		dst[i] = (int64_t)((uint64_t)dst[i] + (uint64_t)values[i]);
	return 0;
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
