/* SPDX-License-Identifier: MIT */
/* A sorted table of CU address ranges for DWARF without .debug_aranges. */
#include "config.h"

#include <dwarf.h>
#include <errno.h>
#include <stdlib.h>

#include "lib/bsearch.h"
#include "lib/grow.h"
#include "symbolize/cu_index.h"

struct cu_range {
	Dwarf_Addr start, end;	/* [start, end) */
	Dwarf_Off cu;		/* offset of the CU's DIE */
};

struct cu_index {
	Dwarf *dbg;
	struct cu_range *r;
	size_t n, cap;
};

static int add(struct cu_index *ix, Dwarf_Addr start, Dwarf_Addr end, Dwarf_Off cu)
{
	if (cprof_grow(&ix->r, &ix->cap, ix->n + 1, sizeof(*ix->r), 64) < 0)
		return -ENOMEM;
	ix->r[ix->n++] = (struct cu_range){ start, end, cu };
	return 0;
}

static int cmp_range(const void *a, const void *b)
{
	const struct cu_range *x = a, *y = b;

	return (x->start > y->start) - (x->start < y->start);
}

int cu_index_build(struct cu_index **out, Dwarf *dbg)
{
	struct cu_index *ix = calloc(1, sizeof(*ix));
	Dwarf_CU *cu = NULL;
	Dwarf_Die cudie;
	uint8_t unit_type;
	int ret;

	if (!ix)
		return -ENOMEM;
	ix->dbg = dbg;
	while (dwarf_get_units(dbg, cu, &cu, NULL, &unit_type, &cudie, NULL) == 0) {
		Dwarf_Addr base, start, end;
		ptrdiff_t off = 0;

		if (dwarf_tag(&cudie) != DW_TAG_compile_unit)
			continue;
		/* dwarf_ranges covers DW_AT_ranges and low_pc/high_pc alike. */
		while ((off = dwarf_ranges(&cudie, off, &base, &start, &end)) > 0) {
			if (end <= start)
				continue;
			ret = add(ix, start, end, dwarf_dieoffset(&cudie));
			if (ret < 0)
				goto err;
		}
	}
	if (ix->n)
		qsort(ix->r, ix->n, sizeof(*ix->r), cmp_range);
	*out = ix;
	return 0;
err:
	cu_index_free(ix);
	return ret;
}

void cu_index_free(struct cu_index *ix)
{
	if (!ix)
		return;
	free(ix->r);
	free(ix);
}

Dwarf_Die *cu_index_find(const struct cu_index *ix, Dwarf_Addr da, Dwarf_Die *die)
{
	size_t lo, i;

	if (!ix || !ix->n)
		return NULL;
	/* The last range starting at or before da; ranges of different CUs
	 * do not overlap, but one CU's may nest in another's gap, so look
	 * back a little past ranges that end before da. */
	lo = cprof_count_le(ix->r, ix->n, sizeof(*ix->r), offsetof(struct cu_range, start), da);
	for (i = lo; i > 0 && lo - i < 8; i--) {
		const struct cu_range *r = &ix->r[i - 1];

		if (da >= r->start && da < r->end)
			return dwarf_offdie(ix->dbg, r->cu, die);
	}
	return NULL;
}
