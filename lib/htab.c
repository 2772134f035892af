/* SPDX-License-Identifier: MIT */
/* The open-addressing index: growth, insertion, clearing. */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "lib/htab.h"

int cprof_htab_reserve(struct cprof_htab *t, size_t n)
{
	struct cprof_htab nt = { 0 };
	size_t nsize, i;

	if (t->used > SIZE_MAX / 2 - n)
		return -ENOMEM;
	if (t->slots && (t->used + n) * 2 <= t->mask + 1)
		return 0;
	nsize = t->slots ? t->mask + 1 : 64;
	while ((t->used + n) * 2 > nsize) {
		if (nsize > (size_t)UINT32_MAX)
			return -ENOMEM;
		nsize *= 2;
	}
	if (nsize > (size_t)UINT32_MAX + 1 || nsize > SIZE_MAX / sizeof(*nt.slots))
		return -ENOMEM;
	nt.slots = calloc(nsize, sizeof(*nt.slots));
	if (!nt.slots)
		return -ENOMEM;
	nt.mask = nsize - 1;
	/* the stored hashes are enough: entries are not touched */
	for (i = 0; t->slots && i <= t->mask; i++)
		if (t->slots[i].ref)
			*cprof_htab_probe(&nt, t->slots[i].hash, NULL, NULL, NULL) = t->slots[i];
	nt.used = t->used;
	free(t->slots);
	*t = nt;
	return 0;
}

void cprof_htab_add(struct cprof_htab *t, uint32_t hash, size_t index)
{
	struct cprof_htab_slot *s = cprof_htab_probe(t, hash, NULL, NULL, NULL);

	s->hash = hash;
	s->ref = (uint32_t)(index + 1);
	t->used++;
}

void cprof_htab_clear(struct cprof_htab *t)
{
	if (t->slots)
		memset(t->slots, 0, (t->mask + 1) * sizeof(*t->slots));
	t->used = 0;
}

void cprof_htab_free(struct cprof_htab *t)
{
	free(t->slots);
	t->slots = NULL;
	t->mask = 0;
	t->used = 0;
}
