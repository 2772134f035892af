/* SPDX-License-Identifier: MIT */
/* Array growth by doubling. */
#include "config.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lib/grow.h"

int cprof_grow(void *arrayp, size_t *cap, size_t need, size_t size, size_t first)
{
	void *old, *p;
	size_t ncap;

	if (need <= *cap)
		return 0;
	if (!size)
		return -EINVAL;
	ncap = *cap ? *cap : (first ? first : 1);
	while (ncap < need) {
		if (ncap > SIZE_MAX / 2)
			return -ENOMEM;
		ncap *= 2;
	}
	if (ncap > SIZE_MAX / size)
		return -ENOMEM;
	memcpy(&old, arrayp, sizeof(old));
	p = realloc(old, ncap * size);
	if (!p)
		return -ENOMEM;
	memcpy(arrayp, &p, sizeof(p));
	*cap = ncap;
	return 0;
}

int cprof_grow_zeroed(void *arrayp, size_t *cap, size_t need, size_t size, size_t first)
{
	size_t old = *cap;
	char *p;
	int ret;

	ret = cprof_grow(arrayp, cap, need, size, first);
	if (ret < 0 || *cap == old)
		return ret;
	memcpy(&p, arrayp, sizeof(p));
	memset(p + old * size, 0, (*cap - old) * size);
	return 0;
}
