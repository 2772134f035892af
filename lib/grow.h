/* SPDX-License-Identifier: MIT */
/* Growing a dynamic array by doubling: the one helper every array of cprof grows with. */
#ifndef CPROF_LIB_GROW_H
#define CPROF_LIB_GROW_H

#include <stddef.h>

/*
 * Grows the array *arrayp (elements of size bytes, capacity *cap elements)
 * to hold at least need elements: capacity first when it was 0, then
 * doubling.  arrayp is the address of any object pointer (it is accessed
 * through memcpy, so one helper serves every element type).  On failure the
 * array and *cap are unchanged.  Returns 0 or -ENOMEM (also on size overflow).
 */
int cprof_grow(void *arrayp, size_t *cap, size_t need, size_t size, size_t first);

/* cprof_grow for arrays used up to their capacity (slots by id): the
 * elements it adds are zeroed. */
int cprof_grow_zeroed(void *arrayp, size_t *cap, size_t need, size_t size, size_t first);

#endif
