/* SPDX-License-Identifier: MIT */
/* Strict UTF-8 validation and sanitizing. */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lib/utf8.h"

static bool is_cont(unsigned char c)
{
	return (c & 0xc0) == 0x80;
}

size_t cprof_utf8_seq_len(const unsigned char *s, size_t n)
{
	unsigned char c = s[0], lo = 0x80, hi = 0xbf;
	size_t len;

	if (c < 0x80)
		return 1;
	if (c < 0xc2)		/* a stray continuation byte, or an overlong C0/C1 form */
		return 0;
	if (c < 0xe0)
		len = 2;
	else if (c < 0xf0)
		len = 3;
	else if (c < 0xf5)
		len = 4;
	else
		return 0;
	if (len > n)
		return 0;
	/* The second byte's range rules out the other overlong forms (E0 80..9F,
	 * F0 80..8F), the surrogates (ED A0..BF) and what is past U+10FFFF
	 * (F4 90..BF). */
	if (c == 0xe0)
		lo = 0xa0;
	else if (c == 0xed)
		hi = 0x9f;
	else if (c == 0xf0)
		lo = 0x90;
	else if (c == 0xf4)
		hi = 0x8f;
	if (s[1] < lo || s[1] > hi)
		return 0;
	if (len > 2 && !is_cont(s[2]))
		return 0;
	if (len > 3 && !is_cont(s[3]))
		return 0;
	return len;
}

bool cprof_utf8_valid(const char *s, size_t len)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t i = 0, k;

	while (i < len) {
		k = cprof_utf8_seq_len(p + i, len - i);
		if (!k)
			return false;
		i += k;
	}
	return true;
}

char *cprof_utf8_sanitize(const char *s, size_t len, size_t *out_len)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t i = 0, k;
	char *out, *q;

	/* at worst every byte becomes the 3 bytes of U+FFFD */
	if (len > (SIZE_MAX - 1) / 3)
		return NULL;
	out = malloc(len * 3 + 1);
	if (!out)
		return NULL;
	q = out;
	while (i < len) {
		k = cprof_utf8_seq_len(p + i, len - i);
		if (k) {
			memcpy(q, p + i, k);
			q += k;
			i += k;
		} else {
			memcpy(q, "\xef\xbf\xbd", 3);
			q += 3;
			i++;
		}
	}
	*q = '\0';
	if (out_len)
		*out_len = (size_t)(q - out);
	return out;
}
