/* SPDX-License-Identifier: MIT */
/*
 * The stack walk run in the confined parser (confine/confine.h): the
 * privileged side sends a process's modules once (their open files as
 * descriptors), its maps when they change, and snapshots in batches (one
 * call for many); the parser walks them with the same code as
 * unwind/remote.h, over the files and the copies only, never the target's
 * memory.  A walk that needed the target's memory (code no file holds, a
 * parked goroutine's stack under a cgo call) says at which address
 * (remote_needed): the privileged side reads raw bytes there, of process
 * pid (at most a few pages, within a readable mapping of maps,
 * REMOTE_WIRE_LIVE_BYTES a copy in all) and has the parser walk the copy
 * again with them, a few rounds at most; it never parses them.  A parser
 * that dies or fails on a batch leaves each of its snapshots its leaf
 * (pc and module) and REMOTE_END_PARSER; the death is the helper's to
 * report (conf_death), named by the module being sent, or for a walk by
 * the leaf module of the batch's first snapshot.  A module the parser
 * fails on without dying is kept (remote_client_errors) and sent again
 * without its files: its frames end the walks that reach them; one that
 * a parser died on as it was sent goes to the next parsers without its
 * files too.
 */
#ifndef CPROF_UNWIND_REMOTE_CLIENT_H
#define CPROF_UNWIND_REMOTE_CLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "confine/confine.h"
#include "profile/stacks.h"
#include "process/maps.h"
#include "process/modules.h"
#include "unwind/remote.h"
#include "unwind/snapshot.h"

struct remote_client;

/*
 * A walker of process pid in helper h.  mods and maps are the caller's,
 * read (never changed) here; they must outlive the client.  Returns 0 or
 * -errno.
 */
int remote_client_create(struct remote_client **out, struct conf_helper *h, pid_t pid,
			 const struct proc_modules *mods, const struct proc_maps *maps);
/* Ends the walker (in the parser too).  NULL is fine. */
void remote_client_destroy(struct remote_client *c);

/*
 * Sends what the parser lacks (modules, maps) now rather than at the next
 * walk, and has it read the modules' unwind tables and thread roots
 * (remote_warm), so that the walk is one call, and a warm one, when it
 * counts (a capture's blocked threads, read before the running ones are
 * stopped).  Returns 0 or -errno (the next walk tries again).
 */
int remote_client_sync(struct remote_client *c);

/* mods or maps changed: sent again before the next walk (as remote_flush). */
void remote_client_flush(struct remote_client *c);

/* One snapshot's walk, as remote_unwind and its accessors give it. */
struct remote_walk {
	struct prof_frame *frames;	/* the caller's, max_frames of room */
	size_t n_frames;
	enum remote_end end;
	size_t stack_used;		/* remote_stack_used */
	bool ran_off;			/* remote_ran_off_copy */
	bool reused;			/* remote_reused */
	bool from_chain;		/* remote_from_chain */
	uint64_t needed;		/* the parser's remote_needed, for this walk */
	bool continued;			/* walked again with live memory read here */
};

/*
 * Walks snaps[0..n), each into out[i] (frames given by the caller): those
 * that a walk the parser made before answers (the walks it sent back with
 * what they read, remembered here as unwind/walk_memo.h says; out[i].reused
 * set) without a call, the others in the parser, in as few calls as the
 * shared area allows, those that needed the target's memory walked again
 * with it (out[i].continued).  Returns the count walked in the parser (every
 * out[i] set, REMOTE_END_PARSER for those the parser could not walk), or
 * -ENOMEM.
 */
int remote_client_unwind(struct remote_client *c, const struct snap *const *snaps,
			 struct remote_walk *out, size_t n, size_t max_frames);

/* A module the parser answered an error for (it did not die): its frames
 * keep their addresses.  Each module once. */
struct remote_client_error {
	uint32_t module;
	int err;		/* -errno */
};

/* The errors so far: *n of them, c's (valid until the next call on c). */
const struct remote_client_error *remote_client_errors(const struct remote_client *c, size_t *n);

/* The pages the parser read since the last call (remote_take_pages). */
void remote_client_take_pages(struct remote_client *c, uint64_t *from_file,
			      uint64_t *from_memory);

/* Parser side: whether type is one of the walk's requests, and their
 * handler (a conf_serve_fn). */
bool remote_serves(uint32_t type);
int remote_serve(void **state, uint32_t type, const void *req, size_t len, int *fds,
		 size_t nfds, void *resp, size_t cap, size_t *resp_len);

#endif
