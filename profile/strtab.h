/* SPDX-License-Identifier: MIT */
/*
 * A string table (internal to profile/): each string once, index 0 the
 * empty string.  A profile's: every string valid UTF-8 (ill-formed bytes
 * become U+FFFD on the way in); a flame graph's names too.
 */
#ifndef CPROF_PROFILE_STRTAB_H
#define CPROF_PROFILE_STRTAB_H

#include <stddef.h>
#include <stdint.h>

#include "lib/htab.h"

struct prof_strtab {
	char **strs;		/* strs[0] == "" once initialized; owned */
	size_t n, cap;
	struct cprof_htab index;
};

/* Initializes t with "" at index 0.  Returns 0 or -ENOMEM. */
int prof_strtab_init(struct prof_strtab *t);

/* Frees everything t owns; t may be zeroed or partly initialized. */
void prof_strtab_free(struct prof_strtab *t);

/*
 * Stores the index of s in *index, adding a (sanitized) copy when new.
 * NULL and "" are index 0.  Returns 0 or -ENOMEM (also past 2^32 strings).
 */
int prof_strtab_intern(struct prof_strtab *t, const char *s, int64_t *index);

/*
 * The same for the len bytes at s taken as they are, without the UTF-8
 * check: for tables that are not a profile's and whose caller made its
 * strings safe already (flame graphs).  s must hold no NUL.
 */
int prof_strtab_intern_bytes(struct prof_strtab *t, const char *s, size_t len, int64_t *index);

#endif
