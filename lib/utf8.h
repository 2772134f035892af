/* SPDX-License-Identifier: MIT */
/*
 * Strict UTF-8: what a well-formed sequence is (RFC 3629, as Unicode
 * defines it): no overlong forms, no surrogates (U+D800..U+DFFF), nothing
 * beyond U+10FFFF.  Names in a profile come from the target (symbols,
 * thread names, paths) and may be any bytes; consumers such as Pyroscope
 * reject a whole profile over one ill-formed string.
 */
#ifndef CPROF_LIB_UTF8_H
#define CPROF_LIB_UTF8_H

#include <stdbool.h>
#include <stddef.h>

/* Length (1..4) of the well-formed sequence at s, which has n >= 1 bytes;
 * 0 when ill-formed or cut short by n. */
size_t cprof_utf8_seq_len(const unsigned char *s, size_t n);

/* True when the len bytes at s are well-formed UTF-8 throughout. */
bool cprof_utf8_valid(const char *s, size_t len);

/*
 * A malloc'ed, NUL-terminated copy of the len bytes at s with every byte
 * that is not part of a well-formed sequence replaced by U+FFFD; *out_len
 * (may be NULL) receives its length.  Returns NULL when out of memory.
 */
char *cprof_utf8_sanitize(const char *s, size_t len, size_t *out_len);

#endif
