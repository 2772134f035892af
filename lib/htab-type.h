/* SPDX-License-Identifier: MIT */
/*
 * A typed lookup over lib/htab.h, included once per key type (no include
 * guard, on purpose).  Define before including:
 *
 *   HTAB_NAME               prefix of the generated functions, e.g. str_index
 *   HTAB_CTX                the type holding the entries, e.g. struct prof_builder
 *   HTAB_KEY                the type looked up, e.g. struct str_key
 *   HTAB_HASH(ctx, key)     uint32_t hash of *key (const HTAB_KEY *)
 *   HTAB_COMPARE(ctx, i, key)  true when entry i of ctx (const HTAB_CTX *) is *key
 *
 * Generates, static to the including file:
 *
 *   uint32_t NAME_find(const struct cprof_htab *t, const HTAB_CTX *ctx,
 *                      const HTAB_KEY *key, uint32_t *hash)
 *       the index + 1 of the entry equal to key, 0 if none; *hash (when not
 *       NULL) receives key's hash for cprof_htab_add.
 *
 * The macros are undefined again at the end, ready for the next instance.
 */
#include "lib/htab.h"

#if !defined(HTAB_NAME) || !defined(HTAB_CTX) || !defined(HTAB_KEY) || \
	!defined(HTAB_HASH) || !defined(HTAB_COMPARE)
#error "define HTAB_NAME, HTAB_CTX, HTAB_KEY, HTAB_HASH and HTAB_COMPARE first"
#endif

#define HTAB_CAT_(a, b) a##b
#define HTAB_CAT(a, b) HTAB_CAT_(a, b)
#define HTAB_FN(suffix) HTAB_CAT(HTAB_NAME, suffix)

static bool HTAB_FN(_eq)(const void *ctx, uint32_t index, const void *key)
{
	return HTAB_COMPARE((const HTAB_CTX *)ctx, index, (const HTAB_KEY *)key);
}

static inline __attribute__((unused)) uint32_t
HTAB_FN(_find)(const struct cprof_htab *t, const HTAB_CTX *ctx, const HTAB_KEY *key,
	       uint32_t *hashp)
{
	uint32_t hash = HTAB_HASH(ctx, key);

	if (hashp)
		*hashp = hash;
	if (!t->slots)
		return 0;
	return cprof_htab_probe(t, hash, HTAB_FN(_eq), ctx, key)->ref;
}

#undef HTAB_FN
#undef HTAB_CAT
#undef HTAB_CAT_
#undef HTAB_NAME
#undef HTAB_CTX
#undef HTAB_KEY
#undef HTAB_HASH
#undef HTAB_COMPARE
