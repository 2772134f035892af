/* SPDX-License-Identifier: MIT */
/*
 * The one open-addressing hash index of cprof.  It indexes entries that
 * live elsewhere (usually an array in insertion order): a slot holds the
 * entry's index + 1 (0: empty) and 32 bits of its hash, so growing the
 * index never rehashes an entry and most mismatches are rejected without
 * touching one.  Linear probing, load factor at most 1/2, no deletion
 * (tables are emptied whole with cprof_htab_clear).
 *
 * Each key type gets a typed lookup from lib/htab-type.h, in the manner of
 * elfutils' dynamicsizehash: the probing loop itself is written once, here.
 */
#ifndef CPROF_LIB_HTAB_H
#define CPROF_LIB_HTAB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct cprof_htab_slot {
	uint32_t hash;
	uint32_t ref;		/* entry index + 1; 0 = empty */
};

/* Zero-initialized is an empty index that allocates on first reserve. */
struct cprof_htab {
	struct cprof_htab_slot *slots;
	size_t mask;		/* number of slots - 1; slots == NULL until first reserve */
	size_t used;
};

/* True when entry index of ctx is the key: supplied by lib/htab-type.h. */
typedef bool (*cprof_htab_eq_fn)(const void *ctx, uint32_t index, const void *key);

/*
 * The slot of the entry equal to key (eq says which), or the empty slot
 * where it would go.  eq NULL: the first empty slot on hash's probe path.
 * The index must have slots (cprof_htab_reserve once).
 */
static inline struct cprof_htab_slot *cprof_htab_probe(const struct cprof_htab *t, uint32_t hash,
						       cprof_htab_eq_fn eq, const void *ctx,
						       const void *key)
{
	size_t i = hash & t->mask;

	for (;;) {
		struct cprof_htab_slot *s = &t->slots[i];

		if (!s->ref)
			return s;
		if (eq && s->hash == hash && eq(ctx, s->ref - 1, key))
			return s;
		i = (i + 1) & t->mask;
	}
}

/*
 * Makes room for n more entries, so that that many cprof_htab_add calls
 * cannot fail.  The first reserve allocates at least 64 slots.  On failure
 * the index is unchanged.  Returns 0 or -ENOMEM (more than 2^31 entries are
 * out of reach: refs are 32-bit).
 */
int cprof_htab_reserve(struct cprof_htab *t, size_t n);

/*
 * Records entry index under hash, which the caller has looked up and not
 * found.  Requires a reserve for it.
 */
void cprof_htab_add(struct cprof_htab *t, uint32_t hash, size_t index);

/* Forgets every entry, keeping the slots. */
void cprof_htab_clear(struct cprof_htab *t);

/* Frees the slots; the index is empty (and reusable) afterwards. */
void cprof_htab_free(struct cprof_htab *t);

#endif
