/* SPDX-License-Identifier: MIT */
/* The hash functions every table of cprof uses: FNV-1a over bytes, a word mixer, a finalizer. */
#ifndef CPROF_LIB_HASH_H
#define CPROF_LIB_HASH_H

#include <stddef.h>
#include <stdint.h>

/* The FNV-1a offset basis: the h to start cprof_hash_bytes with. */
#define CPROF_HASH_SEED 0xcbf29ce484222325ULL

/*
 * Continues the FNV-1a hash h over len bytes at p.  The result is stable
 * across runs and machines (flame graph colors rely on it); run it through
 * cprof_hash_finish before masking it to a table size.
 */
static inline uint64_t cprof_hash_bytes(uint64_t h, const void *p, size_t len)
{
	const unsigned char *s = p;
	size_t i;

	for (i = 0; i < len; i++) {
		h ^= s[i];
		h *= 0x100000001b3ULL;
	}
	return h;
}

/* Mixes the word v into h: rotate, xor, multiply by the golden ratio. */
static inline uint64_t cprof_hash_mix(uint64_t h, uint64_t v)
{
	return ((h << 5 | h >> 59) ^ v) * 0x9e3779b97f4a7c15ULL;
}

/*
 * Spreads every bit of h over the low 32 bits (MurmurHash3's 64-bit
 * finalizer), so that masking the result keeps the entropy of the whole key.
 */
static inline uint32_t cprof_hash_finish(uint64_t h)
{
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdULL;
	h ^= h >> 33;
	h *= 0xc4ceb9fe1a85ec53ULL;
	h ^= h >> 33;
	return (uint32_t)h;
}


#endif
