/* SPDX-License-Identifier: MIT */
/* Walks in the parser that need the target's memory: cprof reads windows
 * of it, the parser walks on with them (it parses, cprof only copies). */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "process/memory.h"
#include "unwind/remote_client-impl.h"

/*
 * The window to read for a walk that needed the target's memory at addr,
 * into c->live: from addr's page on, within the readable mapping that
 * holds addr (the parser is not trusted: it names an address, cprof
 * decides what is read), LIVE_WINDOW at most and what is left of
 * REMOTE_WIRE_LIVE_BYTES.  Returns 0, or -1 for nothing to read.
 */
static int read_window(struct remote_client *c, uint64_t addr, size_t *used)
{
	const struct proc_map *m = proc_maps_find(c->maps, addr);
	uint64_t start = addr & ~(uint64_t)4095, end;
	ssize_t got;
	size_t i;

	if (!m || !(m->perms & PROC_MAP_R) || addr > UINT64_MAX - 8 || addr + 8 > m->end ||
	    c->n_live == REMOTE_WIRE_LIVE_MAX || *used >= REMOTE_WIRE_LIVE_BYTES)
		return -1;
	/* a span already read that holds it: the parser asks again for what
	 * it was given */
	for (i = 0; i < c->n_live; i++)
		if (addr >= c->live[i].start && addr - c->live[i].start < c->live[i].len)
			return -1;
	if (start < m->start)
		start = m->start;
	end = m->end - start > LIVE_WINDOW ? start + LIVE_WINDOW : m->end;
	if (end - start > REMOTE_WIRE_LIVE_BYTES - *used)
		end = start + (REMOTE_WIRE_LIVE_BYTES - *used);
	if (end < addr + 8)
		return -1;
	got = proc_mem_read(c->pid, start, c->live_bytes + *used, (size_t)(end - start));
	if (got < 0 || (uint64_t)got < addr + 8 - start)
		return -1;
	c->live[c->n_live++] = (struct remote_wire_live){ .start = start, .len = (uint64_t)got };
	*used += (size_t)got;
	return 0;
}

/*
 * Walk o of s needed the target's memory (o->needed): the walk is made
 * again in the parser with a window of it read here, as long as each walk
 * names a new address to read, LIVE_ROUNDS times at most.  o keeps the
 * last walk the parser answered; o->continued when there was one.
 */
void remote_client_continue(struct remote_client *c, const struct snap *s, struct remote_walk *o,
			    size_t max_frames)
{
	struct remote_walk w;
	size_t used = 0, round;

	if (c->pid <= 0 || !o->needed || remote_client_snap_size(s) + REMOTE_WIRE_LIVE_BYTES +
	    REMOTE_WIRE_LIVE_MAX * (sizeof(struct remote_wire_live) + 8) +
	    sizeof(struct remote_wire_walk) > CONF_MSG_MAX)
		return;
	if (!c->live_bytes && !(c->live_bytes = malloc(REMOTE_WIRE_LIVE_BYTES)))
		return;
	if (c->cap_live_frames < max_frames) {
		free(c->live_frames);
		c->cap_live_frames = 0;
		c->live_frames = malloc(max_frames * sizeof(*c->live_frames));
		if (!c->live_frames)
			return;
		c->cap_live_frames = max_frames;
	}
	c->n_live = 0;
	for (round = 0; round < LIVE_ROUNDS && o->needed; round++) {
		if (read_window(c, o->needed, &used) < 0)
			break;
		w = (struct remote_walk){ .frames = c->live_frames };
		remote_client_walk_batch(c, &s, &w, 1, max_frames, c->n_live);
		if (w.end == REMOTE_END_PARSER)
			break;	/* what the parser gave before stays */
		memcpy(o->frames, w.frames, w.n_frames * sizeof(*o->frames));
		w.frames = o->frames;
		w.continued = true;
		*o = w;
	}
	c->n_live = 0;
}
