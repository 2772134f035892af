/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer harness: arbitrary text through proc_maps_parse, then
 * proc_maps_find.  Checks the contract of maps.h on what parses: sorted by
 * start, and a found mapping contains the address looked up.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "process/maps.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static volatile size_t sink;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct proc_maps m = { 0 };
	char *text;

	/* An exact-size copy: a read past the end is an ASan report. */
	text = malloc(size != 0 ? size : 1);
	if (text == NULL)
		return 0;
	memcpy(text, data, size);
	if (proc_maps_parse(text, size, &m) == 0) {
		for (size_t i = 0; i < m.n; i++) {
			const struct proc_map *e = &m.v[i];

			if (i > 0 && m.v[i - 1].start > e->start)
				abort();	/* not sorted */
			sink += strlen(e->path) + e->deleted + e->perms;
			const uint64_t probes[] = { e->start, e->end - 1, e->end,
						    e->start + (e->end - e->start) / 2 };

			for (size_t k = 0; k < sizeof(probes) / sizeof(probes[0]); k++) {
				const struct proc_map *f = proc_maps_find(&m, probes[k]);

				if (f != NULL && !(f->start <= probes[k] && probes[k] < f->end))
					abort();	/* found a mapping without the address */
			}
		}
	}
	proc_maps_free(&m);
	free(text);
	return 0;
}
