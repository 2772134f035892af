/* SPDX-License-Identifier: MIT */
/* The privileged side of the walk in the parser, shared by its files
 * (remote_client.c: modules, maps and batches; remote_client_live.c: walks
 * continued with the target's memory). */
#ifndef CPROF_UNWIND_REMOTE_CLIENT_IMPL_H
#define CPROF_UNWIND_REMOTE_CLIENT_IMPL_H

#include "unwind/remote_client.h"
#include "unwind/remote_wire.h"
#include "unwind/walk_memo.h"

/* A walk that needed the target's memory is walked again with it at most
 * this many times; each time a window of at most LIVE_WINDOW bytes from
 * the page the walk needed is read (clipped to its mapping and to
 * REMOTE_WIRE_LIVE_BYTES a copy in all). */
#define LIVE_ROUNDS REMOTE_WIRE_LIVE_MAX
#define LIVE_WINDOW (16u << 10)

struct remote_client {
	struct conf_helper *h;
	pid_t pid;
	const struct proc_modules *mods;
	const struct proc_maps *maps;
	uint32_t id;
	uint64_t parser_gen;	/* the helper generation what is below was sent to */
	size_t sent_mods;	/* modules 1..sent_mods are the parser's */
	uint64_t space_gen;	/* moves on with every flush and new parser: the
				 * generation memo entries are made under */
	uint64_t space_sent;	/* the one the parser has; 0 none */
	char *req, *answer;	/* CONF_MSG_MAX each */
	uint64_t pages_file, pages_memory;
	struct remote_client_error *errs;
	size_t n_errs, cap_errs;
	uint32_t *deadly;	/* modules a parser died on as they were sent */
	size_t n_deadly, cap_deadly;
	/* The parser's walks remembered here, with what they read: a copy
	 * that reads the same is answered without a call.  NULL: none. */
	struct walk_memo *memo;
	/* The copies of a call the memo did not answer (remote_client_unwind):
	 * their index in the caller's arrays, the copy, its walk. */
	size_t *miss_idx;
	const struct snap **miss_snaps;
	struct remote_walk *miss_out;
	size_t cap_miss;
	struct walk_log log;	/* one answer's, read back */
	/* A walk continued with the target's memory (remote_client_continue): the
	 * spans read and their bytes (REMOTE_WIRE_LIVE_BYTES), the walk's
	 * frames in the parser's answer until it is kept. */
	struct remote_wire_live live[REMOTE_WIRE_LIVE_MAX];
	size_t n_live;
	uint8_t *live_bytes;
	struct prof_frame *live_frames;
	size_t cap_live_frames;
};

/* The bytes s takes in a request, without live memory. */
size_t remote_client_snap_size(const struct snap *s);

/* Walks snaps[0..n), which fit one request and one answer, with the live
 * memory read for them (c->live: n_live spans, 0 for none).  Returns 0. */
int remote_client_walk_batch(struct remote_client *c, const struct snap *const *snaps,
			     struct remote_walk *out, size_t n, size_t max_frames, size_t n_live);

/* Walk o of s needed the target's memory (o->needed): made again in the
 * parser with windows of it read here (remote_client_live.c). */
void remote_client_continue(struct remote_client *c, const struct snap *s, struct remote_walk *o,
			    size_t max_frames);

#endif
