/* SPDX-License-Identifier: MIT */
/* The string table of a profile under construction. */
#include "config.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "lib/grow.h"
#include "lib/hash.h"
#include "lib/utf8.h"
#include "profile/strtab.h"

struct str_key {
	const char *s;
	size_t len;
};

static bool str_eq(const struct prof_strtab *t, uint32_t index, const struct str_key *k)
{
	const char *s = t->strs[index];

	return strncmp(s, k->s, k->len) == 0 && s[k->len] == '\0';
}

#define HTAB_NAME str_index
#define HTAB_CTX struct prof_strtab
#define HTAB_KEY struct str_key
#define HTAB_HASH(t, k) cprof_hash_finish(cprof_hash_bytes(CPROF_HASH_SEED, (k)->s, (k)->len))
#define HTAB_COMPARE str_eq
#include "lib/htab-type.h"

int prof_strtab_init(struct prof_strtab *t)
{
	memset(t, 0, sizeof(*t));
	/* string_table[0] must be "": pprof treats index 0 as "no string" */
	if (cprof_grow(&t->strs, &t->cap, 1, sizeof(*t->strs), 16) < 0)
		return -ENOMEM;
	t->strs[0] = strdup("");
	if (!t->strs[0])
		return -ENOMEM;
	/* "" is never looked up (intern short-cuts it), so it is not indexed */
	t->n = 1;
	return 0;
}

void prof_strtab_free(struct prof_strtab *t)
{
	size_t i;

	for (i = 0; i < t->n; i++)
		free(t->strs[i]);
	free(t->strs);
	cprof_htab_free(&t->index);
	memset(t, 0, sizeof(*t));
}

/*
 * The index of key, added when new: owned (NULL, or a malloc'ed copy of
 * key's bytes) is taken over by the table or freed.
 */
static int intern_key(struct prof_strtab *t, const struct str_key *key, char *owned,
		      int64_t *index)
{
	uint32_t hash, ref;

	ref = str_index_find(&t->index, t, key, &hash);
	if (ref) {
		*index = ref - 1;
		free(owned);
		return 0;
	}
	if (!owned)
		owned = strndup(key->s, key->len);
	if (!owned || t->n >= UINT32_MAX - 1 ||
	    cprof_grow(&t->strs, &t->cap, t->n + 1, sizeof(*t->strs), 16) < 0 ||
	    cprof_htab_reserve(&t->index, 1) < 0) {
		free(owned);
		return -ENOMEM;
	}
	t->strs[t->n] = owned;
	cprof_htab_add(&t->index, hash, t->n);
	*index = (int64_t)t->n++;
	return 0;
}

int prof_strtab_intern(struct prof_strtab *t, const char *s, int64_t *index)
{
	struct str_key key;
	char *copy = NULL;

	if (!s || !*s) {
		*index = 0;
		return 0;
	}
	key.s = s;
	key.len = strlen(s);
	if (!cprof_utf8_valid(s, key.len)) {
		copy = cprof_utf8_sanitize(s, key.len, &key.len);
		if (!copy)
			return -ENOMEM;
		key.s = copy;
	}
	return intern_key(t, &key, copy, index);
}

int prof_strtab_intern_bytes(struct prof_strtab *t, const char *s, size_t len, int64_t *index)
{
	const struct str_key key = { s, len };

	if (!len) {
		*index = 0;
		return 0;
	}
	return intern_key(t, &key, NULL, index);
}
