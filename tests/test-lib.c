/* SPDX-License-Identifier: MIT */
/* Unit test of lib/: strict UTF-8, the hash index, array growth, the clocks. */

#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/bsearch.h"
#include "lib/clock.h"
#include "lib/grow.h"
#include "lib/hash.h"
#include "lib/htab.h"
#include "lib/unaligned.h"
#include "lib/utf8.h"
#include "tests/tap.h"


/* ---- UTF-8 ---------------------------------------------------------- */

static const struct {
	const char *bytes;
	bool valid;
	const char *what;
} utf8_cases[] = {
	{ "", true, "the empty string" },
	{ "plain ascii", true, "ASCII" },
	{ "\xc3\xa9t\xc3\xa9", true, "two-byte sequences (U+00E9)" },
	{ "\xe2\x82\xac", true, "a three-byte sequence (U+20AC)" },
	{ "\xf0\x9f\x94\xa5", true, "a four-byte sequence (U+1F525)" },
	{ "\xef\xbf\xbd", true, "U+FFFD itself" },
	{ "\xed\x9f\xbf", true, "U+D7FF, just below the surrogates" },
	{ "\xee\x80\x80", true, "U+E000, just above the surrogates" },
	{ "\xf4\x8f\xbf\xbf", true, "U+10FFFF, the last code point" },
	{ "\xc0\xaf", false, "overlong '/' in two bytes (C0 AF)" },
	{ "\xc1\xbf", false, "overlong in two bytes (C1 BF)" },
	{ "\xe0\x80\xaf", false, "overlong '/' in three bytes" },
	{ "\xe0\x9f\xbf", false, "overlong U+07FF in three bytes" },
	{ "\xf0\x80\x80\xaf", false, "overlong '/' in four bytes" },
	{ "\xf0\x8f\xbf\xbf", false, "overlong U+FFFF in four bytes" },
	{ "\xed\xa0\x80", false, "the surrogate U+D800" },
	{ "\xed\xbf\xbf", false, "the surrogate U+DFFF" },
	{ "\xf4\x90\x80\x80", false, "U+110000, past the last code point" },
	{ "\xf5\x80\x80\x80", false, "lead byte F5" },
	{ "\xff", false, "byte FF" },
	{ "\x80", false, "a stray continuation byte" },
	{ "\xc3", false, "a two-byte sequence cut short" },
	{ "\xe2\x82", false, "a three-byte sequence cut short" },
	{ "\xf0\x9f\x94", false, "a four-byte sequence cut short" },
	{ "\xe2\x28\xa1", false, "a bad second byte" },
	{ "\xf0\x9f\x28\xa5", false, "a bad third byte" },
};

static void test_utf8(void)
{
	size_t i, n;
	char *out;

	for (i = 0; i < sizeof(utf8_cases) / sizeof(utf8_cases[0]); i++) {
		const char *b = utf8_cases[i].bytes;

		check(cprof_utf8_valid(b, strlen(b)) == utf8_cases[i].valid, "utf8: %s is %s",
		      utf8_cases[i].what, utf8_cases[i].valid ? "valid" : "rejected");
	}
	/* the length bounds the read: a valid sequence cut by len is not valid */
	check(!cprof_utf8_valid("\xe2\x82\xac", 2), "utf8: len cuts a sequence short");
	check(cprof_utf8_seq_len((const unsigned char *)"\xf0\x9f\x94\xa5", 4) == 4 &&
	      cprof_utf8_seq_len((const unsigned char *)"\xf0\x9f\x94\xa5", 3) == 0,
	      "utf8: cprof_utf8_seq_len reads at most n bytes");

	out = cprof_utf8_sanitize("a\xffz", 3, &n);
	check(out && n == 5 && strcmp(out, "a\xef\xbf\xbdz") == 0,
	      "utf8: a bad byte becomes U+FFFD");
	free(out);
	out = cprof_utf8_sanitize("\xed\xa0\x80", 3, &n);
	check(out && n == 9 && cprof_utf8_valid(out, n),
	      "utf8: each byte of a surrogate becomes U+FFFD (%zu bytes)", n);
	free(out);
	out = cprof_utf8_sanitize("\xc3\xa9\xc3", 3, NULL);
	check(out && strcmp(out, "\xc3\xa9\xef\xbf\xbd") == 0,
	      "utf8: a valid sequence is kept, a truncated one replaced");
	free(out);
	out = cprof_utf8_sanitize("ok", 2, &n);
	check(out && n == 2 && strcmp(out, "ok") == 0, "utf8: valid input is copied as is");
	free(out);
}

/* ---- the hash index ------------------------------------------------- */

struct numbers {
	uint64_t *v;
	size_t n, cap;
	struct cprof_htab index;
};

static bool number_eq(const struct numbers *t, uint32_t i, const uint64_t *k)
{
	return t->v[i] == *k;
}

/* A deliberately bad hash for odd keys: long collision chains must still work. */
static uint32_t number_hash(const uint64_t *k)
{
	return *k & 1 ? 7 : cprof_hash_finish(cprof_hash_mix(0, *k));
}

#define HTAB_NAME number_index
#define HTAB_CTX struct numbers
#define HTAB_KEY uint64_t
#define HTAB_HASH(t, k) number_hash(k)
#define HTAB_COMPARE number_eq
#include "lib/htab-type.h"

static int number_add(struct numbers *t, uint64_t k)
{
	uint32_t hash;

	if (number_index_find(&t->index, t, &k, &hash))
		return 1;
	if (cprof_grow(&t->v, &t->cap, t->n + 1, sizeof(*t->v), 4) < 0 ||
	    cprof_htab_reserve(&t->index, 1) < 0)
		return -ENOMEM;
	t->v[t->n] = k;
	cprof_htab_add(&t->index, hash, t->n++);
	return 0;
}

static void test_htab(void)
{
	struct numbers t = { 0 };
	uint64_t k, missing = 0;
	size_t i, bad = 0;
	int dup = 0;

	k = 42;
	check(number_index_find(&t.index, &t, &k, NULL) == 0,
	      "htab: an index never reserved finds nothing");
	for (i = 0; i < 5000; i++)
		if (number_add(&t, i * 3) != 0)
			bad++;
	for (i = 0; i < 5000; i++)
		dup += number_add(&t, i * 3) == 1;
	check(bad == 0 && dup == 5000 && t.n == 5000,
	      "htab: 5000 keys added once, found when added again (%zu bad, %d found)", bad, dup);
	for (i = 0; i < 5000; i++) {
		k = i * 3;
		if (number_index_find(&t.index, &t, &k, NULL) != i + 1)
			bad++;
		k = i * 3 + 1;
		if (k % 3 && number_index_find(&t.index, &t, &k, NULL))
			missing++;
	}
	check(bad == 0 && missing == 0,
	      "htab: every key maps to its own entry, absent keys to none (%zu, %" PRIu64 ")",
	      bad, missing);
	check(t.index.used == 5000 && (t.index.mask + 1) >= 2 * t.index.used,
	      "htab: the load factor stays at most 1/2 (%zu of %zu slots)", t.index.used,
	      t.index.mask + 1);
	cprof_htab_clear(&t.index);
	k = 3;
	check(t.index.used == 0 && number_index_find(&t.index, &t, &k, NULL) == 0,
	      "htab: a cleared index finds nothing");
	cprof_htab_free(&t.index);
	free(t.v);
}

/* ---- growth, hashing, clocks ---------------------------------------- */

static void test_grow(void)
{
	int *a = NULL;
	size_t cap = 0;
	int ret;

	ret = cprof_grow(&a, &cap, 5, sizeof(*a), 4);
	check(ret == 0 && a && cap == 8, "grow: 5 from nothing with first 4 gives 8 (%zu)", cap);
	ret = cprof_grow(&a, &cap, 3, sizeof(*a), 4);
	check(ret == 0 && cap == 8, "grow: a smaller need changes nothing");
	ret = cprof_grow(&a, &cap, SIZE_MAX / 2, sizeof(*a), 4);
	check(ret == -ENOMEM && cap == 8 && a, "grow: a size overflow is -ENOMEM, the array kept");
	free(a);
}

/* ---- the address-table search, unaligned loads ------------------------ */

struct rec {
	uint32_t tag;		/* the key is not at offset 0 */
	uint64_t start, end;
};

static void test_bsearch(void)
{
	static const struct rec v[] = {
		{ 1, 10, 15 }, { 2, 20, 25 }, { 3, 20, 28 }, { 4, 30, 40 },
	};
	static const uint64_t keys[] = { 0, 9, 10, 19, 20, 29, 30, UINT64_MAX };
	static const size_t want[] = { 0, 0, 1, 1, 3, 3, 4, 4 };
	unsigned char buf[17];
	uint64_t u64 = 0x0123456789abcdefULL;
	uint32_t u32 = 0x89abcdefU;
	size_t i, bad = 0;

	for (i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		bad += cprof_count_le(v, 4, sizeof(*v), offsetof(struct rec, start), keys[i]) !=
		       want[i];
	check(!bad, "bsearch: records at or below each key counted, ties included (%zu bad)", bad);
	check(cprof_count_le(NULL, 0, sizeof(*v), offsetof(struct rec, start), 5) == 0,
	      "bsearch: an empty table has none");
	check(cprof_count_le(v, 4, sizeof(*v), offsetof(struct rec, end), 25) == 2,
	      "bsearch: another key field of the same records (end <= 25: 2)");
	memset(buf, 0, sizeof(buf));
	memcpy(buf + 1, &u64, sizeof(u64));
	memcpy(buf + 11, &u32, sizeof(u32));
	check(cprof_load_u64(buf + 1) == u64 && cprof_load_u32(buf + 11) == u32,
	      "unaligned: loads at odd addresses read the bytes stored there");
}

static void test_hash_clock(void)
{
	uint64_t t0, t1;

	/* FNV-1a's published value for "a": colors of flame graphs depend on it */
	check(cprof_hash_bytes(CPROF_HASH_SEED, "a", 1) == 0xaf63dc4c8601ec8cULL,
	      "hash: FNV-1a of \"a\" is the published 0xaf63dc4c8601ec8c");
	t0 = cprof_now_ns();
	t1 = cprof_now_ns();
	check(t0 > 0 && t1 >= t0, "clock: cprof_now_ns is monotonic");
	check(cprof_realtime_ns() > (int64_t)1600000000 * 1000000000,
	      "clock: cprof_realtime_ns is after 2020");
}

int main(void)
{
	test_utf8();
	test_htab();
	test_grow();
	test_bsearch();
	test_hash_clock();
	return tap_done();
}
